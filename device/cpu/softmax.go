package cpu

import (
	"math"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/vec"
)

// The CPU device implements the optional row softmax.
var _ device.SoftmaxKernels = kernels{}

// Softmax computes the softmax of each row, rows shared among the workers.
func (k kernels) Softmax(y, x device.Buffer, rows, cols int) {
	noHalf("Softmax", y, x)
	switch buf(y).dt {
	case device.Float32:
		launch(k.d, rows, cols*8, softmaxArgs[float32]{y: buf(y).f32, x: buf(x).f32, cols: cols})
	case device.Float64:
		launch(k.d, rows, cols*8, softmaxArgs[float64]{y: buf(y).f64, x: buf(x).f64, cols: cols})
	default:
		panic(dtypeMsg("Softmax", buf(y).dt))
	}
}

// SoftmaxGrad computes the softmax's input gradient row by row.
func (k kernels) SoftmaxGrad(dx, dy, y device.Buffer, rows, cols int) {
	noHalf("SoftmaxGrad", dx, dy, y)
	switch buf(dx).dt {
	case device.Float32:
		launch(k.d, rows, cols*4, softmaxArgs[float32]{y: buf(y).f32, x: buf(dy).f32, dx: buf(dx).f32, cols: cols})
	case device.Float64:
		launch(k.d, rows, cols*4, softmaxArgs[float64]{y: buf(y).f64, x: buf(dy).f64, dx: buf(dx).f64, cols: cols})
	default:
		panic(dtypeMsg("SoftmaxGrad", buf(dx).dt))
	}
}

// softmaxArgs are Softmax's arguments (dx nil), or SoftmaxGrad's (x is dy).
type softmaxArgs[T float] struct {
	y, x, dx []T
	cols     int
}

func (a *softmaxArgs[T]) run(lo, hi int) {
	for r := lo; r < hi; r++ {
		x, y := a.x[r*a.cols:(r+1)*a.cols], a.y[r*a.cols:(r+1)*a.cols]
		if a.dx != nil {
			softmaxGradRow(a.dx[r*a.cols:(r+1)*a.cols], x, y)
		} else {
			softmaxRow(y, x)
		}
	}
}

// softmaxRow sets y to the softmax of x: package vec's loop on float32;
// on float64 the composed formula's steps, e^(x-max) then a division by
// the sum.
func softmaxRow[T float](y, x []T) {
	if y32, ok := any(y).([]float32); ok {
		vec.Softmax(y32, any(x).([]float32))
		return
	}
	m := x[0]
	for _, v := range x {
		if v > m || v != v {
			m = v
		}
		if m != m {
			break
		}
	}
	var s T
	for i, v := range x {
		e := T(math.Exp(float64(v - m)))
		y[i] = e
		s += e
	}
	for i := range y {
		y[i] /= s
	}
}

// softmaxGradRow sets dx = y·(dy - Σ dy·y).
func softmaxGradRow[T float](dx, dy, y []T) {
	if d32, ok := any(dx).([]float32); ok {
		vec.SoftmaxGrad(d32, any(dy).([]float32), any(y).([]float32))
		return
	}
	var d T
	for i, g := range dy {
		d += g * y[i]
	}
	for i, g := range dy {
		dx[i] = y[i] * (g - d)
	}
}
