package cpu

import (
	"fmt"

	"github.com/hora-dl/hora/device"
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
	launch(dev, p.N*p.C, p.OutH()*p.OutW()*p.KH*p.KW, poolArgs[T]{p: p, y: y, x: x, arg: arg})
}

// maxPoolPlane pools one H×W plane x into y (OH×OW), recording in arg the
// position in the plane of each maximum: the first in row-major window
// order; a NaN wins.
func maxPoolPlane[T float](p device.PoolParams, y []T, arg []int64, x []T) {
	oh, ow := p.OutH(), p.OutW()
	if y32, ok := any(y).([]float32); ok && p.KH == 2 && p.KW == 2 && p.StrideH == 2 && p.StrideW == 2 && p.PadH == 0 && p.PadW == 0 {
		maxPool2x2(p.W, oh, ow, y32, arg, any(x).([]float32))
		return
	}
	for i := 0; i < oh; i++ {
		for j := 0; j < ow; j++ {
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
			y[i*ow+j], arg[i*ow+j] = best, where
		}
	}
}

// maxPool2x2 is maxPoolPlane for float32 and the common 2×2 window with
// stride 2 and no padding. It picks the same winner as the general loop
// (the first maximum in row-major window order; a NaN wins) without
// branches that depend on the data: on real activations those are
// mispredicted about half the time, which made this loop 4× slower.
func maxPool2x2(w, oh, ow int, y []float32, arg []int64, x []float32) {
	for i := 0; i < oh; i++ {
		pool2x2Row(y[i*ow:(i+1)*ow], arg[i*ow:(i+1)*ow], x[2*i*w:2*i*w+w], x[(2*i+1)*w:(2*i+1)*w+w], int64(2*i*w), int64(w))
	}
}

// pool2x2Row pools two input rows r0, r1 (starting at position base of
// their plane, w apart) into y. The first position holding each maximum is
// chosen with conditional moves (of a -0 and a +0, the value is +0 even
// when the -0 comes first: the only difference from maxPoolPlane).
func pool2x2Row(y []float32, arg []int64, r0, r1 []float32, base, w int64) {
	for j := range y {
		a, b, c, d := r0[2*j], r0[2*j+1], r1[2*j], r1[2*j+1]
		m := max(max(a, b), max(c, d))
		k := w + 1
		if c == m {
			k = w
		}
		if b == m {
			k = 1
		}
		if a == m {
			k = 0
		}
		if m != m { // a NaN (rare, so predictable): the first NaN wins
			k = firstNaN(a, b, c, w)
		}
		y[j], arg[j] = m, base+int64(2*j)+k
	}
}

// firstNaN returns the offset in its 2×2 window (0, 1, w or w+1) of the
// first NaN among a, b, c and the last value.
func firstNaN(a, b, c float32, w int64) int64 {
	switch {
	case a != a:
		return 0
	case b != b:
		return 1
	case c != c:
		return w
	}
	return w + 1
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
