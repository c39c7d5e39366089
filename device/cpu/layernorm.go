package cpu

import (
	"math"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/vec"
)

// The CPU device implements the optional fused layer normalisation.
var _ device.LayerNormKernels = kernels{}

// LayerNorm normalises each row of x (rows×cols), rows shared among the
// workers.
func (k kernels) LayerNorm(y, mean, rstd, x, weight, bias device.Buffer, rows, cols int, eps float64) {
	noHalf("LayerNorm", y, mean, rstd, x, weight, bias)
	switch buf(y).dt {
	case device.Float32:
		launch(k.d, rows, cols*4, layerNormArgs[float32]{y: buf(y).f32, x: buf(x).f32, mean: buf(mean).f32, rstd: buf(rstd).f32,
			weight: f32s(weight), bias: f32s(bias), cols: cols, eps: eps})
	case device.Float64:
		launch(k.d, rows, cols*4, layerNormArgs[float64]{y: buf(y).f64, x: buf(x).f64, mean: buf(mean).f64, rstd: buf(rstd).f64,
			weight: f64s(weight), bias: f64s(bias), cols: cols, eps: eps})
	default:
		panic(dtypeMsg("LayerNorm", buf(y).dt))
	}
}

// LayerNormGrad computes LayerNorm's gradients: dx row by row, and the
// weight's and bias's as sums over the rows, each worker summing its
// block of rows into its own partial sums, which are added at the end.
func (k kernels) LayerNormGrad(dx, dweight, dbias, dy, x, mean, rstd, weight device.Buffer, rows, cols int) {
	noHalf("LayerNormGrad", dx, dweight, dbias, dy, x, mean, rstd, weight)
	switch buf(dy).dt {
	case device.Float32:
		layerNormGrad(k.d, layerNormArgs[float32]{y: buf(dy).f32, x: buf(x).f32, mean: buf(mean).f32, rstd: buf(rstd).f32,
			weight: f32s(weight), cols: cols}, buf(dx).f32, f32s(dweight), f32s(dbias), rows)
	case device.Float64:
		layerNormGrad(k.d, layerNormArgs[float64]{y: buf(dy).f64, x: buf(x).f64, mean: buf(mean).f64, rstd: buf(rstd).f64,
			weight: f64s(weight), cols: cols}, buf(dx).f64, f64s(dweight), f64s(dbias), rows)
	default:
		panic(dtypeMsg("LayerNormGrad", buf(dy).dt))
	}
}

// layerNormArgs are LayerNorm's arguments; for the gradient, y is dy.
type layerNormArgs[T float] struct {
	y, x, mean, rstd, weight, bias []T
	cols                           int
	eps                            float64
}

// row returns row r of x and of y.
func (a *layerNormArgs[T]) row(r int) (x, y []T) {
	return a.x[r*a.cols : (r+1)*a.cols], a.y[r*a.cols : (r+1)*a.cols]
}

// run normalises rows [lo, hi): the mean, then the mean squared deviation
// from it (two passes, summed in float64), then the output.
func (a *layerNormArgs[T]) run(lo, hi int) {
	n := float64(a.cols)
	for r := lo; r < hi; r++ {
		x, y := a.row(r)
		m := T(rowSum(x) / n)
		rs := 1 / math.Sqrt(rowSumSqDev(x, m)/n+a.eps)
		scaleShift(y, x, m, T(rs), 0)
		if a.weight != nil {
			mulAdd(y, a.weight, a.bias)
		}
		a.mean[r], a.rstd[r] = m, T(rs)
	}
}

// layerNormGrad computes LayerNorm's gradients. With wdy = dy·weight (dy
// without weight) and x̂ = (x-mean)·rstd, each row's
//
//	dx = rstd·(wdy - mean(wdy) - x̂·mean(wdy·x̂))
//	   = rstd·wdy - rstd²·mean(wdy·(x-mean))·rstd·(x-mean) - rstd·mean(wdy)
//
// is one AffineDev pass after the two row sums.
func layerNormGrad[T float](d *Device, a layerNormArgs[T], dx, dweight, dbias []T, rows int) {
	launch(d, rows, a.cols*6, layerNormDxArgs[T]{a, dx})
	if dweight == nil && dbias == nil {
		return
	}
	parts := min(rows, d.numWorkers())
	sc := getScratch[T](2 * parts * a.cols) // each part's Σdy·x̂ then Σdy
	defer putScratch(sc)
	sums := sc.s
	clear(sums)
	launch(d, parts, rows/parts*a.cols*4, layerNormSumArgs[T]{a, sums, rows, parts})
	clear(dweight)
	clear(dbias)
	for p := range parts {
		part := sums[2*p*a.cols:]
		if dweight != nil {
			addTo(dweight, part[:a.cols])
		}
		if dbias != nil {
			addTo(dbias, part[a.cols:2*a.cols])
		}
	}
}

// layerNormDxArgs compute dx for rows [lo, hi).
type layerNormDxArgs[T float] struct {
	layerNormArgs[T]
	dx []T
}

func (a *layerNormDxArgs[T]) run(lo, hi int) {
	n := float64(a.cols)
	for r := lo; r < hi; r++ {
		x, dy := a.row(r)
		dx := a.dx[r*a.cols : (r+1)*a.cols]
		wdy := dy
		if a.weight != nil {
			mul(dx, dy, a.weight)
			wdy = dx
		}
		m, rs := a.mean[r], float64(a.rstd[r])
		meanWdy := rowSum(wdy) / n
		meanWdyXc := rowDotDev(x, wdy, m) / n
		affineDev(dx, wdy, x, T(rs), m, T(-rs*rs*rs*meanWdyXc), T(-rs*meanWdy))
	}
}

// layerNormSumArgs sum dy·x̂ and dy over block p of the rows (of parts
// equal blocks) into sums[2p·cols:], for p in [lo, hi).
type layerNormSumArgs[T float] struct {
	layerNormArgs[T]
	sums        []T
	rows, parts int
}

func (a *layerNormSumArgs[T]) run(lo, hi int) {
	sc := getScratch[T](a.cols)
	defer putScratch(sc)
	tmp := sc.s
	for p := lo; p < hi; p++ {
		dw, db := a.sums[2*p*a.cols:][:a.cols], a.sums[(2*p+1)*a.cols:][:a.cols]
		for r := p * a.rows / a.parts; r < (p+1)*a.rows/a.parts; r++ {
			x, dy := a.row(r)
			scaleShift(tmp, x, a.mean[r], a.rstd[r], 0)
			mul(tmp, tmp, dy)
			addTo(dw, tmp)
			addTo(db, dy)
		}
	}
}

// The row helpers below run package vec's loops on float32 and plain
// loops on float64.

func rowSum[T float](x []T) float64 {
	if x32, ok := any(x).([]float32); ok {
		return vec.SumF64(x32)
	}
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	return s
}

func rowSumSqDev[T float](x []T, m T) float64 {
	if x32, ok := any(x).([]float32); ok {
		return vec.SumSqDev(x32, float32(m))
	}
	var s float64
	for _, v := range x {
		d := float64(v - m)
		s += d * d
	}
	return s
}

// rowDotDev is Σ (x-m)·g.
func rowDotDev[T float](x, g []T, m T) float64 {
	if x32, ok := any(x).([]float32); ok {
		return vec.DotDev(x32, any(g).([]float32), float32(m))
	}
	var s float64
	for i, v := range x {
		s += float64(v-m) * float64(g[i])
	}
	return s
}

// scaleShift sets dst = (a-m)·s + b.
func scaleShift[T float](dst, a []T, m, s, b T) {
	if d32, ok := any(dst).([]float32); ok {
		vec.ScaleShift(d32, any(a).([]float32), float32(m), float32(s), float32(b))
		return
	}
	for i, v := range a {
		dst[i] = (v-m)*s + b
	}
}

// affineDev sets dst = gs·g + xs·(x-m) + c.
func affineDev[T float](dst, g, x []T, gs, m, xs, c T) {
	if d32, ok := any(dst).([]float32); ok {
		vec.AffineDev(d32, any(g).([]float32), any(x).([]float32), float32(gs), float32(m), float32(xs), float32(c))
		return
	}
	for i := range dst {
		dst[i] = gs*g[i] + xs*(x[i]-m) + c
	}
}

// mul sets dst = a·b elementwise.
func mul[T float](dst, a, b []T) {
	if d32, ok := any(dst).([]float32); ok {
		vec.Mul(d32, any(a).([]float32), any(b).([]float32))
		return
	}
	for i := range dst {
		dst[i] = a[i] * b[i]
	}
}

// mulAdd sets y = y·w + b elementwise.
func mulAdd[T float](y, w, b []T) {
	mul(y, y, w)
	addTo(y, b)
}
