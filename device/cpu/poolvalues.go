package cpu

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/maxpool"
)

// The CPU device implements max pooling without positions.
var _ device.MaxPoolValuesKernels = kernels{}

// MaxPool2DValues takes the maximum of each window, without recording
// where it was (for inference).
func (k kernels) MaxPool2DValues(p device.PoolParams, y, x device.Buffer) {
	noHalf("MaxPool2DValues", y, x)
	switch buf(y).dt {
	case device.Float32:
		maxPoolValues(k.d, p, buf(y).f32, buf(x).f32)
	case device.Float64:
		maxPoolValues(k.d, p, buf(y).f64, buf(x).f64)
	default:
		panic(dtypeMsg("MaxPool2DValues", buf(y).dt))
	}
}

// maxPoolValues is MaxPool2D without positions, by output rows in
// parallel. Its reference loop, for output (i, j) of a plane, is
//
//	m := first x[h][w] of the window inside the image (0 if none)
//	for each (h, w) of the window inside the image: m = max(m, x[h][w])
//
// computed in two passes per output row: the maximum of the window's input
// rows, column by column, then of each window's columns of that.
func maxPoolValues[T float](dev *Device, p device.PoolParams, y, x []T) {
	launch(dev, p.N*p.C*p.OutH(), p.OutW()*p.KH*p.KW, maxPoolValuesArgs[T]{p: p, y: y, x: x})
}

// maxPoolValuesArgs are the arguments of maxPoolValues.
type maxPoolValuesArgs[T float] struct {
	p    device.PoolParams
	y, x []T
}

func (a *maxPoolValuesArgs[T]) run(lo, hi int) {
	sc := getScratch[T](a.p.W)
	maxPoolValuesRows(a.p, a.y, a.x, sc.s, lo, hi)
	putScratch(sc)
}

// maxPoolValuesRows pools output rows [lo, hi) of the N·C·OH rows of y,
// with vm (W elements) as scratch.
func maxPoolValuesRows[T float](p device.PoolParams, y, x, vm []T, lo, hi int) {
	oh, ow, il := p.OutH(), p.OutW(), p.H*p.W
	j0, j1 := innerCols(p, ow)
	for r := lo; r < hi; r++ {
		i := r % oh
		xp := x[r/oh*il : (r/oh+1)*il]
		yr := y[r*ow : (r+1)*ow]
		h0, h1 := max(i*p.StrideH-p.PadH, 0), min(i*p.StrideH-p.PadH+p.KH, p.H)
		if h0 >= h1 { // the window is all padding
			clear(yr)
			continue
		}
		if x32, ok := any(xp).([]float32); ok && p.KW == 3 && p.StrideW == 2 {
			// The windows inside the image across, rows and columns at
			// once (16 per step in AVX-512), then the edge windows.
			if j1 > j0 {
				maxpool.Values3s2(any(yr[j0:j1]).([]float32), x32[h0*p.W+2*j0-p.PadW:], p.W, h1-h0)
			}
			for j := 0; j < j0; j++ {
				w0, w1 := windowCols(p, j)
				yr[j] = windowMax(xp, p.W, h0, h1, w0, w1)
			}
			for j := j1; j < ow; j++ {
				w0, w1 := windowCols(p, j)
				yr[j] = windowMax(xp, p.W, h0, h1, w0, w1)
			}
			continue
		}
		// vm[w] = the maximum of column w over the window's rows.
		copy(vm, xp[h0*p.W:(h0+1)*p.W])
		for h := h0 + 1; h < h1; h++ {
			maxInto(vm, xp[h*p.W:(h+1)*p.W])
		}
		if p.KW == 3 && p.StrideW == 2 {
			maxPool3s2Cols(yr[j0:j1], vm, j0*2-p.PadW)
		} else {
			for j := j0; j < j1; j++ {
				b := j*p.StrideW - p.PadW
				m := vm[b]
				for _, v := range vm[b+1 : b+p.KW] {
					m = max(m, v)
				}
				yr[j] = m
			}
		}
		for j := 0; j < j0; j++ {
			yr[j] = maxPoolValuesEdge(&p, vm, j)
		}
		for j := j1; j < ow; j++ {
			yr[j] = maxPoolValuesEdge(&p, vm, j)
		}
	}
}

// maxPoolValuesEdge is the maximum of the columns of vm in the window of
// output column j, which reaches into the padding.
func maxPoolValuesEdge[T float](p *device.PoolParams, vm []T, j int) T {
	w0, w1 := windowCols(*p, j)
	if w0 >= w1 {
		return 0
	}
	m := vm[w0]
	for _, v := range vm[w0+1 : w1] {
		m = max(m, v)
	}
	return m
}

// maxInto sets dst[i] = max(dst[i], src[i]).
func maxInto[T float](dst, src []T) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = max(dst[i], v)
	}
}

// maxPool3s2Cols sets y[j] to the maximum of the three columns of vm
// starting at b+2j (a 3-wide window with stride 2, inside the image).
func maxPool3s2Cols[T float](y, vm []T, b int) {
	for j := range y {
		w := vm[b+2*j : b+2*j+3]
		y[j] = max(w[0], w[1], w[2])
	}
}

// windowMax is the maximum of the window over the input rows [h0, h1) and
// columns [w0, w1) of the plane xp, rows width apart (the reference loop's
// value; 0 when w0 >= w1). It takes the window's bounds rather than the
// PoolParams, whose copy for each call cost more than the window itself
// (3×2 values at ResNet's edges: a quarter of the pooling's time).
func windowMax[T float](xp []T, width, h0, h1, w0, w1 int) T {
	if w0 >= w1 {
		return 0
	}
	m := xp[h0*width+w0]
	for h := h0; h < h1; h++ {
		for _, v := range xp[h*width+w0 : h*width+w1] {
			m = max(m, v)
		}
	}
	return m
}

// windowCols returns the input columns [w0, w1) of output column j's
// window that lie inside the image (w0 >= w1: none).
func windowCols(p device.PoolParams, j int) (w0, w1 int) {
	return max(j*p.StrideW-p.PadW, 0), min(j*p.StrideW-p.PadW+p.KW, p.W)
}
