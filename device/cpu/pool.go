package cpu

import (
	"fmt"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/maxpool"
)

// MaxPool2D takes the maximum of each window, remembering where it was.
func (k kernels) MaxPool2D(p device.PoolParams, y, argmax, x device.Buffer) {
	noHalf("MaxPool2D", y, argmax, x)
	switch buf(y).dt {
	case device.Float32:
		maxPool(k.d, p, buf(y).f32, buf(argmax).i64, buf(x).f32)
	case device.Float64:
		maxPool(k.d, p, buf(y).f64, buf(argmax).i64, buf(x).f64)
	default:
		panic(dtypeMsg("MaxPool2D", buf(y).dt))
	}
}

func maxPool[T float](dev *Device, p device.PoolParams, y []T, arg []int64, x []T) {
	if is2x2(p) {
		launch(dev, p.N*p.C, p.OutH()*p.OutW()*p.KH*p.KW, poolArgs[T]{p: p, y: y, x: x, arg: arg})
		return
	}
	// Output rows in parallel (a batch of one has few planes).
	launch(dev, p.N*p.C*p.OutH(), p.OutW()*p.KH*p.KW, maxPoolRowArgs[T]{poolArgs[T]{p: p, y: y, x: x, arg: arg}})
}

// is2x2 reports whether p is the common 2×2 window with stride 2 and no
// padding, which maxPool2x2 handles.
func is2x2(p device.PoolParams) bool {
	return p.KH == 2 && p.KW == 2 && p.StrideH == 2 && p.StrideW == 2 && p.PadH == 0 && p.PadW == 0
}

// maxPoolRowArgs are the arguments of MaxPool2D by output rows.
type maxPoolRowArgs[T float] struct{ poolArgs[T] }

func (a *maxPoolRowArgs[T]) run(lo, hi int) {
	maxPoolRows(a.p, a.y, a.arg, a.x, lo, hi)
}

// innerCols returns the output columns [j0, j1) whose windows lie inside
// the image's width (ow output columns).
func innerCols(p device.PoolParams, ow int) (j0, j1 int) {
	j0 = min((p.PadW+p.StrideW-1)/p.StrideW, ow)
	j1 = j0
	if r := p.W + p.PadW - p.KW; r >= 0 {
		j1 = max(j0, min(r/p.StrideW+1, ow))
	}
	return j0, j1
}

// maxPoolRows pools output rows [lo, hi) of the N·C·OH rows of y (and
// arg): rows whose windows lie inside the image take a branch-light loop
// (the maximum, then the first position holding it, then the value there,
// so a -0 before a +0 wins as in the reference loop of maxPoolPlane);
// windows over the padding, and those holding a NaN, take the reference
// loop.
func maxPoolRows[T float](p device.PoolParams, y []T, arg []int64, x []T, lo, hi int) {
	oh, ow, il := p.OutH(), p.OutW(), p.H*p.W
	j0, j1 := innerCols(p, ow)
	for r := lo; r < hi; r++ {
		i := r % oh
		xp := x[r/oh*il : (r/oh+1)*il]
		yr, ar := y[r*ow:(r+1)*ow], arg[r*ow:(r+1)*ow]
		h0 := i*p.StrideH - p.PadH
		inside := h0 >= 0 && h0+p.KH <= p.H
		for j := range yr {
			if inside && j == j0 && j1 > j0 {
				if p.KH == 3 && p.KW == 3 {
					maxPool3x3Run(yr[j0:j1], ar[j0:j1], xp, h0*p.W+j0*p.StrideW-p.PadW, p.W, p.StrideW)
				} else {
					maxPoolRun(p, yr[j0:j1], ar[j0:j1], xp, h0*p.W+j0*p.StrideW-p.PadW)
				}
			}
			if inside && j >= j0 && j < j1 {
				if yr[j] == yr[j] {
					continue
				}
			}
			yr[j], ar[j] = maxPoolWindow(&p, xp, i, j)
		}
	}
}

// maxPoolWindow is the reference loop of MaxPool2D for the window of
// output (i, j) of plane x: the first maximum in row-major window order
// wins, and so does every NaN (the last NaN is kept). p is a pointer: a
// copy of the PoolParams per window cost more than the window (see
// windowMax).
func maxPoolWindow[T float](p *device.PoolParams, x []T, i, j int) (T, int64) {
	best, where := T(0), int64(-1)
	for kh := 0; kh < p.KH; kh++ {
		h := i*p.StrideH - p.PadH + kh
		if h < 0 || h >= p.H {
			continue
		}
		for kw := 0; kw < p.KW; kw++ {
			w := j*p.StrideW - p.PadW + kw
			if w < 0 || w >= p.W {
				continue
			}
			v := x[h*p.W+w]
			if where < 0 || v > best || v != v {
				best, where = v, int64(h*p.W+w)
			}
		}
	}
	return best, where
}

// maxPoolRun pools windows inside the image, the first at position b of
// plane x and the next ones StrideW further. A window holding a NaN is
// left with a NaN in y for the caller to redo.
func maxPoolRun[T float](p device.PoolParams, y []T, arg []int64, x []T, b int) {
	for j := range y {
		m := x[b]
		for kh := 0; kh < p.KH; kh++ {
			for _, v := range x[b+kh*p.W : b+kh*p.W+p.KW] {
				m = max(m, v) // NaN if any is
			}
		}
		k := b
		for kh := p.KH - 1; kh >= 0; kh-- {
			row := x[b+kh*p.W : b+kh*p.W+p.KW]
			for kw := len(row) - 1; kw >= 0; kw-- {
				if row[kw] == m {
					k = b + kh*p.W + kw
				}
			}
		}
		y[j], arg[j] = x[k], int64(k)
		if m != m {
			y[j] = m
		}
		b += p.StrideW
	}
}

// maxPool3x3Run is maxPoolRun for 3×3 windows (ResNet's stem), rows w
// apart and windows s apart.
func maxPool3x3Run[T float](y []T, arg []int64, x []T, b, w, s int) {
	for j := range y {
		r0 := x[b : b+3]
		r1 := x[b+w : b+w+3]
		r2 := x[b+2*w : b+2*w+3]
		a0, a1, a2 := r0[0], r0[1], r0[2]
		b0, b1, b2 := r1[0], r1[1], r1[2]
		c0, c1, c2 := r2[0], r2[1], r2[2]
		m := max(max(a0, a1, a2), max(b0, b1, b2), max(c0, c1, c2))
		k := b + 2*w + 2
		if c1 == m {
			k = b + 2*w + 1
		}
		if c0 == m {
			k = b + 2*w
		}
		if b2 == m {
			k = b + w + 2
		}
		if b1 == m {
			k = b + w + 1
		}
		if b0 == m {
			k = b + w
		}
		if a2 == m {
			k = b + 2
		}
		if a1 == m {
			k = b + 1
		}
		if a0 == m {
			k = b
		}
		v := x[k]
		if m != m {
			v = m
		}
		y[j], arg[j] = v, int64(k)
		b += s
	}
}

// maxPoolPlane pools one H×W plane x into y (OH×OW), recording in arg the
// position in the plane of each maximum: the first in row-major window
// order; a NaN wins. The common 2×2 window with stride 2 and no padding
// goes to maxpool.Plane2x2 in float32 (AVX-512 where the CPU has it),
// where of a -0 and a +0 the value is +0 even when the -0 comes first.
func maxPoolPlane[T float](p device.PoolParams, y []T, arg []int64, x []T) {
	oh, ow := p.OutH(), p.OutW()
	if y32, ok := any(y).([]float32); ok && is2x2(p) {
		maxpool.Plane2x2(y32, arg, any(x).([]float32), oh, ow, p.W)
		return
	}
	q := p
	q.N, q.C = 1, 1
	maxPoolRows(q, y, arg, x, 0, oh)
}

// MaxPool2DGrad routes each output gradient to the input that won.
func (k kernels) MaxPool2DGrad(p device.PoolParams, dx, dy, argmax device.Buffer) {
	noHalf("MaxPool2DGrad", dx, dy, argmax)
	switch buf(dx).dt {
	case device.Float32:
		maxPoolGrad(k.d, p, buf(dx).f32, buf(dy).f32, buf(argmax).i64)
	case device.Float64:
		maxPoolGrad(k.d, p, buf(dx).f64, buf(dy).f64, buf(argmax).i64)
	default:
		panic(dtypeMsg("MaxPool2DGrad", buf(dx).dt))
	}
}

func maxPoolGrad[T float](dev *Device, p device.PoolParams, dx, dy []T, arg []int64) {
	launch(dev, p.N*p.C, p.OutH()*p.OutW(), maxPoolGradArgs[T]{poolArgs[T]{p: p, y: dy, x: dx, arg: arg}})
}

// poolArgs are the arguments of a pooling kernel: the output (gradient) y,
// the input (gradient) x and the positions of the maxima.
type poolArgs[T float] struct {
	p    device.PoolParams
	y, x []T
	arg  []int64
}

func (a *poolArgs[T]) run(lo, hi int) {
	p := a.p
	ol, il := p.OutH()*p.OutW(), p.H*p.W
	for plane := lo; plane < hi; plane++ {
		maxPoolPlane(p, a.y[plane*ol:(plane+1)*ol], a.arg[plane*ol:(plane+1)*ol], a.x[plane*il:(plane+1)*il])
	}
}

// maxPoolGradArgs are the arguments of MaxPool2DGrad.
type maxPoolGradArgs[T float] struct{ poolArgs[T] }

func (a *maxPoolGradArgs[T]) run(lo, hi int) {
	p, dx, dy, arg := a.p, a.x, a.y, a.arg
	oh, ow := p.OutH(), p.OutW()
	for plane := lo; plane < hi; plane++ {
		in := dx[plane*p.H*p.W : (plane+1)*p.H*p.W]
		clear(in)
		g := dy[plane*oh*ow : (plane+1)*oh*ow]
		at := arg[plane*oh*ow:]
		for i, v := range g {
			if at[i] >= 0 {
				in[at[i]] += v
			}
		}
	}
}

// poolDivisor returns the number of elements average pooling divides by
// for the window at output (i, j).
func poolDivisor(p device.PoolParams, i, j int) int {
	if p.CountPad {
		return p.KH * p.KW
	}
	h0, w0 := i*p.StrideH-p.PadH, j*p.StrideW-p.PadW
	h1, w1 := min(h0+p.KH, p.H), min(w0+p.KW, p.W)
	return (h1 - max(h0, 0)) * (w1 - max(w0, 0))
}

// AvgPool2D averages each window.
func (k kernels) AvgPool2D(p device.PoolParams, y, x device.Buffer) {
	noHalf("AvgPool2D", y, x)
	switch buf(y).dt {
	case device.Float32:
		avgPool(k.d, p, buf(y).f32, buf(x).f32, false)
	case device.Float64:
		avgPool(k.d, p, buf(y).f64, buf(x).f64, false)
	default:
		panic(dtypeMsg("AvgPool2D", buf(y).dt))
	}
}

// AvgPool2DGrad spreads each output gradient over its window.
func (k kernels) AvgPool2DGrad(p device.PoolParams, dx, dy device.Buffer) {
	noHalf("AvgPool2DGrad", dx, dy)
	switch buf(dx).dt {
	case device.Float32:
		avgPool(k.d, p, buf(dy).f32, buf(dx).f32, true)
	case device.Float64:
		avgPool(k.d, p, buf(dy).f64, buf(dx).f64, true)
	default:
		panic(dtypeMsg("AvgPool2DGrad", buf(dx).dt))
	}
}

// avgPool computes y from x, or with grad set, x (the input gradient) from
// y (the output gradient).
func avgPool[T float](dev *Device, p device.PoolParams, y, x []T, grad bool) {
	oh, ow := p.OutH(), p.OutW()
	dev.parallelFor(p.N*p.C, oh*ow*p.KH*p.KW, func(lo, hi int) {
		for plane := lo; plane < hi; plane++ {
			in := x[plane*p.H*p.W : (plane+1)*p.H*p.W]
			out := y[plane*oh*ow:]
			if grad {
				clear(in)
			}
			for i := 0; i < oh; i++ {
				for j := 0; j < ow; j++ {
					inv := 1 / T(poolDivisor(p, i, j))
					var sum T
					for h := max(i*p.StrideH-p.PadH, 0); h < min(i*p.StrideH-p.PadH+p.KH, p.H); h++ {
						for w := max(j*p.StrideW-p.PadW, 0); w < min(j*p.StrideW-p.PadW+p.KW, p.W); w++ {
							if grad {
								in[h*p.W+w] += out[i*ow+j] * inv
							} else {
								sum += in[h*p.W+w]
							}
						}
					}
					if !grad {
						out[i*ow+j] = sum * inv
					}
				}
			}
		}
	})
}

// checkIndex panics with a clear message for an index outside [0, n).
func checkIndex(i int64, n int) int {
	if i < 0 || i >= int64(n) {
		panic(fmt.Sprintf("cpu: index %d out of range [0, %d)", i, n))
	}
	return int(i)
}

// Gather reads src at per-element indices along the middle axis.
func (k kernels) Gather(dst, src, idx device.Buffer, outer, n, m, inner int) {
	noHalf("Gather", dst, src, idx)
	gatherScatter(k.d, buf(dst), buf(src), buf(idx).i64, outer, n, m, inner, false, false)
}

// ScatterAdd adds src into dst at per-element indices along the middle axis.
func (k kernels) ScatterAdd(dst, src, idx device.Buffer, outer, n, m, inner int) {
	noHalf("ScatterAdd", dst, src, idx)
	gatherScatter(k.d, buf(dst), buf(src), buf(idx).i64, outer, n, m, inner, true, false)
}

// IndexSelect copies whole slices of src along the middle axis.
func (k kernels) IndexSelect(dst, src, idx device.Buffer, outer, n, m, inner int) {
	noHalf("IndexSelect", dst, src, idx)
	gatherScatter(k.d, buf(dst), buf(src), buf(idx).i64, outer, n, m, inner, false, true)
}

// IndexAdd adds whole slices of src into dst along the middle axis.
func (k kernels) IndexAdd(dst, src, idx device.Buffer, outer, n, m, inner int) {
	noHalf("IndexAdd", dst, src, idx)
	gatherScatter(k.d, buf(dst), buf(src), buf(idx).i64, outer, n, m, inner, true, true)
}

// gatherScatter dispatches on the element type. The big (n-sized) tensor
// is src for the gathers and dst for the scatters.
func gatherScatter(dev *Device, dst, src *Buffer, idx []int64, outer, n, m, inner int, scatter, slices bool) {
	big, small := src, dst
	if scatter {
		big, small = dst, src
	}
	switch dst.dt {
	case device.Float32:
		indexed(dev, big.f32, small.f32, idx, outer, n, m, inner, scatter, slices)
	case device.Float64:
		indexed(dev, big.f64, small.f64, idx, outer, n, m, inner, scatter, slices)
	case device.Int64:
		indexed(dev, big.i64, small.i64, idx, outer, n, m, inner, scatter, slices)
	default:
		panic(dtypeMsg("indexing", dst.dt))
	}
}
