package onnx

import (
	"math"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// 3-D Conv, MaxPool and AveragePool run as their 2-D versions over depth
// slices. For each depth tap kd of the kernel, the input slices that tap
// reads (one per output depth) are gathered and folded into the batch,
// the 2-D operation runs on them with the kernel's kd-th plane, and the
// taps are combined: summed for Conv, the maximum for MaxPool, averaged
// for AveragePool. Everything is built from autograd operations, so
// gradients flow as for the 2-D operators.

// kind3D selects how run3D combines the depth taps.
type kind3D int

const (
	conv3D kind3D = iota
	maxPool3D
	avgPool3D
)

// run3D evaluates a 3-D Conv, MaxPool or AveragePool node of the 5-D
// (N×C×D×H×W) input x; a Conv's weight is w and its optional bias b.
func run3D(c *nodeCtx, kind kind3D, x, w, b *autograd.Var) ([]*autograd.Var, error) {
	xs := x.Shape()
	var wantKernel []int
	if kind == conv3D {
		if ws := w.Shape(); len(ws) != 5 {
			return nil, c.Errorf("input W has shape %v, expected rank 5 like X %v", ws, xs)
		}
		wantKernel = w.Shape()[2:]
	} else if c.NumOutputs() > 1 && c.OutputUsed(1) {
		return nil, c.Unsupported("the Indices output of a 3-D MaxPool")
	}
	if c.AttrInt("ceil_mode", 0) != 0 {
		return nil, c.Unsupported("ceil_mode in a 3-D %s", c.Op())
	}
	kernel, err := kernelAttr(c, 3, wantKernel)
	if err != nil {
		return nil, err
	}
	win, err := windowAttrs(c, xs, kernel)
	if err != nil {
		return nil, err
	}
	kd, sd, dd := kernel[0], win.stride[0], win.dil[0]
	depth := xs[2] + win.padBegin[0] + win.padEnd[0]
	outD := (depth-((kd-1)*dd+1))/sd + 1
	if outD < 1 {
		return nil, c.Errorf("kernel_shape %v (dilations %v) does not fit input X %v with pads %v/%v", kernel, win.dil, xs, win.padBegin, win.padEnd)
	}
	fill := 0.0
	if kind == maxPool3D {
		fill = math.Inf(-1)
	}
	xp := padAxis(c, x, 2, win.padBegin[0], win.padEnd[0], fill)
	sub := c.sub2D(kernel[1:], win)

	var y *autograd.Var
	for k := range kd {
		// The input slices tap k reads, one per output depth, folded into
		// the batch: [N·OD, C, H, W].
		idx := make([]int64, outD)
		for od := range idx {
			idx[od] = int64(od*sd + k*dd)
		}
		xk := autograd.IndexSelect(xp, 2, c.ConstInts(idx).Value)
		xk = autograd.Reshape(autograd.Permute(xk, 0, 2, 1, 3, 4), xs[0]*outD, xs[1], xs[3], xs[4])
		var outs []*autograd.Var
		switch kind {
		case conv3D:
			args := []*autograd.Var{xk, autograd.Squeeze(autograd.Slice(w, 2, k, k+1), 2)}
			if k == 0 && b != nil {
				args = append(args, b) // the bias, once
			}
			outs, err = opConv(sub.withInputs(args...))
		case maxPool3D:
			outs, err = opMaxPool(sub.withInputs(xk))
		default:
			outs, err = opAvgPool(sub.withInputs(xk))
		}
		if err != nil {
			return nil, err
		}
		switch {
		case y == nil:
			y = outs[0]
		case kind == maxPool3D:
			y = autograd.Maximum(y, outs[0])
		default:
			y = autograd.Add(y, outs[0])
		}
	}
	if kind == avgPool3D {
		y = autograd.Mul(y, c.depthDivisor(y, xs[2], outD, kd, sd, dd, win.padBegin[0]))
	}
	ys := y.Shape()
	y = autograd.Permute(autograd.Reshape(y, xs[0], outD, ys[1], ys[2], ys[3]), 0, 2, 1, 3, 4)
	if kind == conv3D {
		y = applyAct(y, c.FusedActivation())
	}
	return []*autograd.Var{y}, nil
}

// sub2D returns a context for the 2-D version of c's operator: the same
// attributes, but kernel_shape, strides, dilations and pads of the last two
// axes (auto_pad resolved into pads) and no fused activation.
func (c *nodeCtx) sub2D(kernel []int, win window) *nodeCtx {
	n := &onnxpb.NodeProto{OpType: c.node.OpType, Name: c.node.Name, Input: c.node.Input, Output: c.node.Output[:1]}
	for _, a := range c.node.GetAttribute() {
		switch a.GetName() {
		case "kernel_shape", "strides", "dilations", "pads", "auto_pad":
		default:
			n.Attribute = append(n.Attribute, a)
		}
	}
	ints := func(name string, v ...int) {
		vals := make([]int64, len(v))
		for i, x := range v {
			vals[i] = int64(x)
		}
		n.Attribute = append(n.Attribute, &onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_INTS.Enum(), Ints: vals})
	}
	ints("kernel_shape", kernel...)
	ints("strides", win.stride[1:]...)
	ints("dilations", win.dil[1:]...)
	ints("pads", win.padBegin[1], win.padBegin[2], win.padEnd[1], win.padEnd[2])
	return &nodeCtx{node: n, name: c.name, opset: c.opset, dev: c.dev, training: c.training,
		attrs: attrMap(n), rng: c.rng, declared: c.declared}
}

// depthDivisor returns, for a 3-D AveragePool, the factor that turns the
// sum of the taps' 2-D averages into the 3-D average: 1/kd when padding
// counts (count_include_pad), else 1 over the number of taps of each
// output depth that fall inside the input. It has shape [N·OD, 1, 1, 1]
// for y's layout (output depths folded into the batch).
func (c *nodeCtx) depthDivisor(y *autograd.Var, inD, outD, kd, sd, dd, padBegin int) *autograd.Var {
	include := c.AttrInt("count_include_pad", 0) != 0
	n := y.Value.Dim(0) / outD
	f := make([]float64, n*outD)
	for od := range outD {
		count := kd
		if !include {
			count = 0
			for k := range kd {
				if d := od*sd + k*dd - padBegin; d >= 0 && d < inD {
					count++
				}
			}
		}
		for b := range n {
			f[b*outD+od] = 1 / float64(max(count, 1))
		}
	}
	t := tensor.FromFloat64(f, n*outD, 1, 1, 1)
	if dt := y.Value.DType(); dt != device.Float64 {
		t = t.Cast(dt)
	}
	return c.Const(t)
}
