package onnx

import (
	"math"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Pooling operators. A pooling whose windows the tensor package's 2-D
// pooling covers directly (no dilation, equal padding on both sides of at
// most half the window, the ONNX output size) runs as one kernel; any
// other (asymmetric padding, ceil_mode, dilations) pads the input
// explicitly first, with -∞ for MaxPool and zeros for AveragePool, whose
// divisor is then applied per output position.

func init() {
	register("MaxPool", 1, true, opMaxPool)
	register("AveragePool", 1, true, opAvgPool)
	register("GlobalAveragePool", 1, true, opGlobalAvgPool)
	register("GlobalMaxPool", 1, true, opGlobalMaxPool)
}

// pool is the geometry of one pooling, always in two spatial axes (a 1-D
// pooling gets a unit height).
type pool struct {
	oneD bool
	in   [2]int // input height and width
	win  window
	out  [2]int
}

// poolSetup reads the window attributes of a MaxPool or AveragePool over
// x and computes the output size, floor or (ceil_mode) ceiling; with
// ceil_mode the last window must still start inside the input or its
// leading padding, as in PyTorch.
func poolSetup(c *nodeCtx, x *autograd.Var) (pool, error) {
	var p pool
	n, err := spatialRank(c, x, "X")
	if err != nil {
		return p, err
	}
	xs := x.Shape()
	kernel, err := kernelAttr(c, n, nil)
	if err != nil {
		return p, err
	}
	win, err := windowAttrs(c, xs, kernel)
	if err != nil {
		return p, err
	}
	ceil := c.AttrInt("ceil_mode", 0) != 0
	out := make([]int, n)
	for i := range n {
		ext := (kernel[i]-1)*win.dil[i] + 1
		total := xs[2+i] + win.padBegin[i] + win.padEnd[i]
		if total < ext {
			return p, c.Errorf("kernel_shape %v (dilations %v) does not fit input X %v with pads %v/%v", kernel, win.dil, xs, win.padBegin, win.padEnd)
		}
		if ceil {
			out[i] = (total-ext+win.stride[i]-1)/win.stride[i] + 1
			if (out[i]-1)*win.stride[i] >= xs[2+i]+win.padBegin[i] {
				out[i]--
			}
		} else {
			out[i] = (total-ext)/win.stride[i] + 1
		}
	}
	p.oneD = n == 1
	p.win = window{
		kernel: to2D(kernel, 1), stride: to2D(win.stride, 1), dil: to2D(win.dil, 1),
		padBegin: to2D(win.padBegin, 0), padEnd: to2D(win.padEnd, 0),
	}
	p.in = [2]int(to2D(xs[2:], 1))
	p.out = [2]int(to2D(out, 1))
	return p, nil
}

// direct returns the options under which tensor pooling computes p
// exactly, and whether there are any.
func (p pool) direct() (tensor.PoolOptions, bool) {
	w := p.win
	for i := range 2 {
		if w.dil[i] != 1 || w.padBegin[i] != w.padEnd[i] || 2*w.padBegin[i] > w.kernel[i] ||
			(p.in[i]+2*w.padBegin[i]-w.kernel[i])/w.stride[i]+1 != p.out[i] {
			return tensor.PoolOptions{}, false
		}
	}
	return tensor.PoolOptions{
		KH: w.kernel[0], KW: w.kernel[1], StrideH: w.stride[0], StrideW: w.stride[1],
		PadH: w.padBegin[0], PadW: w.padBegin[1],
	}, true
}

// padded returns x padded (or cropped) with v so that it holds exactly
// the windows of p, the first starting at 0.
func (p pool) padded(c *nodeCtx, x *autograd.Var, v float64) *autograd.Var {
	w := p.win
	for i := range 2 {
		extent := (p.out[i]-1)*w.stride[i] + (w.kernel[i]-1)*w.dil[i] + 1
		x = padAxis(c, x, 2+i, w.padBegin[i], extent-p.in[i]-w.padBegin[i], v)
	}
	return x
}

// windows reduces the windows of the padded input xp (see padded) with
// max or sum: one pooling kernel without dilation; with dilation, the
// elementwise maximum or sum of the kernel's strided taps.
func (p pool) windows(c *nodeCtx, xp *autograd.Var, isMax bool) *autograd.Var {
	w := p.win
	if w.dil[0] == 1 && w.dil[1] == 1 {
		o := tensor.PoolOptions{KH: w.kernel[0], KW: w.kernel[1], StrideH: w.stride[0], StrideW: w.stride[1]}
		if isMax {
			return autograd.MaxPool2D(xp, o)
		}
		return autograd.MulScalar(autograd.AvgPool2D(xp, o), float64(w.kernel[0]*w.kernel[1]))
	}
	taps := func(axis, k int) *tensor.Tensor {
		idx := make([]int64, p.out[axis])
		for o := range idx {
			idx[o] = int64(o*w.stride[axis] + k*w.dil[axis])
		}
		return c.ConstInts(idx).Value
	}
	var acc *autograd.Var
	for i := range w.kernel[0] {
		rows := autograd.IndexSelect(xp, 2, taps(0, i))
		for j := range w.kernel[1] {
			t := autograd.IndexSelect(rows, 3, taps(1, j))
			switch {
			case acc == nil:
				acc = t
			case isMax:
				acc = autograd.Maximum(acc, t)
			default:
				acc = autograd.Add(acc, t)
			}
		}
	}
	return acc
}

// to4D gives a 1-D pooling input its unit height.
func (p pool) to4D(x *autograd.Var) *autograd.Var {
	if p.oneD {
		return autograd.Unsqueeze(x, 2)
	}
	return x
}

// from4D removes the unit height to4D added.
func (p pool) from4D(y *autograd.Var) *autograd.Var {
	if p.oneD {
		return autograd.Squeeze(y, 2)
	}
	return y
}

// opMaxPool is MaxPool, 1-D or 2-D, with the optional Indices output:
// the position of each maximum in the flattened input (row-major, or with
// storage_order = 1 column-major within each plane), computed on the host.
// Integer inputs (opset 12+) pool in float64, without gradient.
func opMaxPool(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("X")
	if err != nil {
		return nil, err
	}
	if x.Value.Rank() == 5 {
		return run3D(c, maxPool3D, x, nil, nil)
	}
	p, err := poolSetup(c, x)
	if err != nil {
		return nil, err
	}
	order := c.AttrInt("storage_order", 0)
	if order != 0 && order != 1 {
		return nil, c.Errorf("attribute storage_order = %d, expected 0 or 1", order)
	}
	dt := x.Value.DType()
	xf := x
	if !dt.IsFloat() {
		xf = autograd.Constant(x.Value.Cast(device.Float64))
	}
	x4 := p.to4D(xf)
	var y *autograd.Var
	if o, ok := p.direct(); ok {
		y = autograd.MaxPool2D(x4, o)
	} else {
		y = p.windows(c, p.padded(c, x4, math.Inf(-1)), true)
	}
	y = p.from4D(y)
	if !dt.IsFloat() {
		y = autograd.Constant(y.Value.Cast(dt))
	}
	outs := []*autograd.Var{y}
	if c.NumOutputs() > 1 && c.OutputUsed(1) {
		idx := p.indices(x4.Value, order == 1)
		if p.oneD {
			idx = idx.Squeeze(2)
		}
		outs = append(outs, c.Const(idx))
	}
	return outs, nil
}

// indices computes MaxPool's Indices output for the 4-D input x on the
// host: the first maximum of each window in row-major window order (a
// NaN wins), as a flat index into x, column-major within each plane when
// colMajor; -1 for a window entirely in the padding.
func (p pool) indices(x *tensor.Tensor, colMajor bool) *tensor.Tensor {
	s := x.Shape()
	planes, h, wd := s[0]*s[1], s[2], s[3]
	vals := x.Values()
	w := p.win
	oh, ow := p.out[0], p.out[1]
	idx := make([]int64, planes*oh*ow)
	for pl := range planes {
		base := pl * h * wd
		for i := range oh {
			for j := range ow {
				best, where := 0.0, -1
				for a := range w.kernel[0] {
					r := i*w.stride[0] - w.padBegin[0] + a*w.dil[0]
					if r < 0 || r >= h {
						continue
					}
					for b := range w.kernel[1] {
						col := j*w.stride[1] - w.padBegin[1] + b*w.dil[1]
						if col < 0 || col >= wd {
							continue
						}
						v := vals[base+r*wd+col]
						if where < 0 || v > best || (v != v && best == best) {
							best = v
							if colMajor {
								where = col*h + r
							} else {
								where = r*wd + col
							}
						}
					}
				}
				if where >= 0 {
					where += base
				}
				idx[(pl*oh+i)*ow+j] = int64(where)
			}
		}
	}
	return tensor.FromInt64(idx, s[0], s[1], oh, ow)
}

// opAvgPool is AveragePool, 1-D or 2-D. The divisor of each window counts
// the input elements it covers, plus with count_include_pad the explicit
// padding (never the extra positions ceil_mode adds past it).
func opAvgPool(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("X")
	if err != nil {
		return nil, err
	}
	if x.Value.Rank() == 5 {
		return run3D(c, avgPool3D, x, nil, nil)
	}
	if err := nnFloat(c, x, "X"); err != nil {
		return nil, err
	}
	p, err := poolSetup(c, x)
	if err != nil {
		return nil, err
	}
	countPad := c.AttrInt("count_include_pad", 0) != 0
	x4 := p.to4D(x)
	if o, ok := p.direct(); ok {
		o.CountPad = countPad
		return []*autograd.Var{p.from4D(autograd.AvgPool2D(x4, o))}, nil
	}
	sum := p.windows(c, p.padded(c, x4, 0), false)
	// The divisor per output position: the product of the counts along
	// each axis.
	w := p.win
	counts := [2][]float64{}
	for ax := range 2 {
		lo, hi := 0, p.in[ax]
		if countPad {
			lo, hi = -w.padBegin[ax], p.in[ax]+w.padEnd[ax]
		}
		counts[ax] = make([]float64, p.out[ax])
		for o := range counts[ax] {
			for k := range w.kernel[ax] {
				if pos := o*w.stride[ax] - w.padBegin[ax] + k*w.dil[ax]; pos >= lo && pos < hi {
					counts[ax][o]++
				}
			}
		}
	}
	inv := make([]float64, p.out[0]*p.out[1])
	for i, ch := range counts[0] {
		for j, cw := range counts[1] {
			inv[i*p.out[1]+j] = 1 / (ch * cw)
		}
	}
	scale := c.Const(tensor.FromFloat64(inv, p.out[0], p.out[1]).Cast(x.Value.DType()))
	return []*autograd.Var{p.from4D(autograd.Mul(sum, scale))}, nil
}

// globalInput reads and checks the input X of GlobalAveragePool or
// GlobalMaxPool (N×C×…) and returns it as N×C×(product of the rest), with
// the output shape N×C×1×…×1.
func globalInput(c *nodeCtx) (*autograd.Var, []int, error) {
	x, err := c.input("X")
	if err != nil {
		return nil, nil, err
	}
	if err := nnFloat(c, x, "X"); err != nil {
		return nil, nil, err
	}
	xs := x.Shape()
	if len(xs) < 3 {
		return nil, nil, c.Errorf("input X has shape %v, expected N×C×D1×…", xs)
	}
	inner := 1
	out := make([]int, len(xs))
	for i, d := range xs {
		out[i] = 1
		if i >= 2 {
			inner *= d
		}
	}
	out[0], out[1] = xs[0], xs[1]
	if inner == 0 {
		return nil, nil, c.Errorf("input X %v has no elements to pool", xs)
	}
	return autograd.Reshape(x, xs[0], xs[1], inner), out, nil
}

// opGlobalAvgPool is GlobalAveragePool: the mean over every spatial axis.
// The output of a Conv that writes channels-last order (planChannelsLast,
// in an inference run) is averaged as it lies.
func opGlobalAvgPool(c *nodeCtx) ([]*autograd.Var, error) {
	if x, err := c.input("X"); err == nil && !x.RequiresGrad() {
		if y := tensor.GlobalAvgPoolChannelsLast(x.Value); y != nil {
			return []*autograd.Var{autograd.Constant(y)}, nil
		}
	}
	x, out, err := globalInput(c)
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{autograd.Reshape(autograd.Mean(x, 2, false), out...)}, nil
}

// opGlobalMaxPool is GlobalMaxPool: the maximum over every spatial axis.
func opGlobalMaxPool(c *nodeCtx) ([]*autograd.Var, error) {
	x, out, err := globalInput(c)
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{autograd.Reshape(autograd.Max(x, 2, false), out...)}, nil
}
