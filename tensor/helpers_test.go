package tensor_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// arange returns a float32 tensor holding 0, 1, 2, ... in the given shape.
func arange(shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	return tensor.FromFloat32(v, shape...)
}

// arange64 is arange for float64.
func arange64(shape ...int) *tensor.Tensor { return arange(shape...).Cast(device.Float64) }

// panicMessage runs fn and returns the panic value as a string ("" when it
// does not panic).
func panicMessage(fn func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	fn()
	return ""
}

// assertPanicsWith checks that fn panics with a message containing every
// one of parts (typically both shapes, formatted with %v).
func assertPanicsWith(t *testing.T, fn func(), parts ...string) {
	t.Helper()
	msg := panicMessage(fn)
	if msg == "" {
		t.Errorf("did not panic; want a message containing %q", parts)
		return
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("panic %q does not contain %q", msg, p)
		}
	}
}

// assertValues checks t's shape and values (as float64) to a tolerance.
func assertValues(t *testing.T, got *tensor.Tensor, shape []int, want []float64, tol float64) {
	t.Helper()
	if len(shape) == 0 {
		shape = nil
	}
	if !assert.Equal(t, shape, got.Shape(), "shape") {
		return
	}
	vals := got.Values()
	if !assert.Len(t, vals, len(want)) {
		return
	}
	for i := range want {
		if math.IsNaN(want[i]) {
			assert.True(t, math.IsNaN(vals[i]), "[%d] = %g, want NaN", i, vals[i])
			continue
		}
		if math.IsInf(want[i], 0) {
			assert.Equal(t, want[i], vals[i], "[%d]", i)
			continue
		}
		assert.InDelta(t, want[i], vals[i], tol*math.Max(1, math.Abs(want[i])), "[%d]", i)
	}
}

// strideOf returns the row-major strides of shape.
func strideOf(shape []int) []int {
	s := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = n
		n *= shape[i]
	}
	return s
}

// forEachIndex calls fn for every index of shape in row-major order.
func forEachIndex(shape []int, fn func(idx []int)) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	idx := make([]int, len(shape))
	for k := 0; k < n; k++ {
		r := k
		for a := len(shape) - 1; a >= 0; a-- {
			idx[a] = r % shape[a]
			r /= shape[a]
		}
		fn(idx)
	}
}

// flat returns the row-major position of idx in shape.
func flat(shape, idx []int) int {
	p := 0
	for i, s := range strideOf(shape) {
		p += idx[i] * s
	}
	return p
}
