package transport

import (
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
)

// Number is the element types transports reduce in host memory.
type Number interface{ ~float32 | ~float64 | ~int64 }

// Combine sets acc[i] = op(acc[i], x[i]) for the elements of acc, the
// elementwise step of a reduction in host memory that transports share.
// Sum and Average add (float32 with the CPU device's vectorised loop); Min
// and Max keep a NaN once one is seen. Average's division is Divide's job.
func Combine[T Number](acc, x []T, op dist.ReduceOp) {
	x = x[:len(acc)]
	switch op {
	case dist.Sum, dist.Average:
		if a, ok := any(acc).([]float32); ok {
			cpu.AddFloat32(a, a, any(x).([]float32))
			return
		}
		for i, v := range x {
			acc[i] += v
		}
	case dist.Min:
		for i, v := range x {
			if v < acc[i] || v != v {
				acc[i] = v
			}
		}
	case dist.Max:
		for i, v := range x {
			if v > acc[i] || v != v {
				acc[i] = v
			}
		}
	}
}

// Divide sets acc[i] /= n, Average's last step (truncating toward zero for
// integers).
func Divide[T Number](acc []T, n int) {
	d := T(n)
	for i := range acc {
		acc[i] /= d
	}
}
