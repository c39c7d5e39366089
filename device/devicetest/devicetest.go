package devicetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
)

// RunAll runs every conformance check on dev as subtests of t.
func RunAll(t *testing.T, dev device.Device) {
	t.Helper()
	require.NotNil(t, dev, "device")
	require.NotNil(t, dev.Kernels(), "Kernels of %s", dev.Name())
	t.Run("Memory", func(t *testing.T) { TestMemory(t, dev) })
	t.Run("Copy", func(t *testing.T) { TestCopy(t, dev) })
	t.Run("Slice", func(t *testing.T) { TestSlice(t, dev) })
	t.Run("Fill", func(t *testing.T) { TestFill(t, dev) })
	t.Run("Unary", func(t *testing.T) { TestUnary(t, dev) })
	t.Run("Binary", func(t *testing.T) { TestBinary(t, dev) })
	t.Run("Where", func(t *testing.T) { TestWhere(t, dev) })
	t.Run("Reduce", func(t *testing.T) { TestReduce(t, dev) })
	t.Run("MatMul", func(t *testing.T) { TestMatMul(t, dev) })
	t.Run("Conv2D", func(t *testing.T) { TestConv2D(t, dev) })
	t.Run("MaxPool2D", func(t *testing.T) { TestMaxPool2D(t, dev) })
	t.Run("AvgPool2D", func(t *testing.T) { TestAvgPool2D(t, dev) })
	t.Run("Indexing", func(t *testing.T) { TestIndexing(t, dev) })
	t.Run("FusedAct", func(t *testing.T) { TestFusedAct(t, dev) })
}

// floatTypes are the types the floating-point kernels are checked in.
var floatTypes = []device.DType{device.Float32, device.Float64}

// allTypes are the element types every device's buffers hold (see
// storedTypes for device.Float16).
var allTypes = []device.DType{device.Float32, device.Float64, device.Int64}

// newRand returns the suite's seeded generator; every check starts from
// its own seed so that checks can be run alone.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x686f7261)) }

// randFloats returns n values uniform in [lo, hi), rounded to float32 so
// that they are exact in every floating-point type.
func randFloats(rng *rand.Rand, n int, lo, hi float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(float32(lo + (hi-lo)*rng.Float64()))
	}
	return v
}

// roundTo returns v as stored in an element of type dt: rounded to
// float32 or float16, or truncated toward zero for int64 (as a C or Go
// conversion).
func roundTo(dt device.DType, v float64) float64 {
	switch dt {
	case device.Float32:
		return float64(float32(v))
	case device.Float16:
		return roundHalf(v)
	case device.Int64:
		return float64(int64(v))
	}
	return v
}

// Upload allocates a buffer of type dt on dev holding vals (converted
// to dt), freed when the test ends.
func Upload(t testing.TB, dev device.Device, dt device.DType, vals []float64) device.Buffer {
	t.Helper()
	b, err := dev.Alloc(dt, len(vals))
	require.NoError(t, err, "Alloc(%v, %d)", dt, len(vals))
	src := HostSlice(dt, vals)
	if src == nil {
		t.Fatalf("upload: unsupported %v", dt)
	}
	require.NoError(t, dev.Write(b, src), "Write %v[%d]", dt, len(vals))
	t.Cleanup(b.Free)
	return b
}

// HostSlice converts vals to the host slice type of dt ([]uint16 of
// binary16 bits for Float16), or returns nil for an unknown type.
func HostSlice(dt device.DType, vals []float64) any {
	switch dt {
	case device.Float32:
		s := make([]float32, len(vals))
		for i, v := range vals {
			s[i] = float32(v)
		}
		return s
	case device.Float64:
		return append([]float64(nil), vals...)
	case device.Int64:
		s := make([]int64, len(vals))
		for i, v := range vals {
			s[i] = int64(v)
		}
		return s
	case device.Float16:
		s := make([]uint16, len(vals))
		for i, v := range vals {
			s[i] = halfBits(v)
		}
		return s
	}
	return nil
}

// Download reads b back as float64 (Float16 widened exactly).
func Download(t testing.TB, dev device.Device, b device.Buffer) []float64 {
	t.Helper()
	out := make([]float64, b.Len())
	switch b.DType() {
	case device.Float32:
		s := make([]float32, b.Len())
		require.NoError(t, dev.Read(s, b))
		for i, v := range s {
			out[i] = float64(v)
		}
	case device.Float64:
		require.NoError(t, dev.Read(out, b))
	case device.Int64:
		s := make([]int64, b.Len())
		require.NoError(t, dev.Read(s, b))
		for i, v := range s {
			out[i] = float64(v)
		}
	case device.Float16:
		s := make([]uint16, b.Len())
		require.NoError(t, dev.Read(s, b))
		for i, v := range s {
			out[i] = halfValue(v)
		}
	default:
		t.Fatalf("download: unsupported %v", b.DType())
	}
	return out
}

// relTol is the relative tolerance for results of type dt.
func relTol(dt device.DType) float64 {
	if dt == device.Float32 {
		return 1e-5
	}
	return 1e-12
}

// absTol is the absolute tolerance for results of type dt: the smallest
// normal number, so that results which underflow may flush to zero.
func absTol(dt device.DType) float64 {
	switch dt {
	case device.Float32:
		return 0x1p-126
	case device.Float64:
		return 0x1p-1022
	}
	return 0
}

// checkClose compares got with want element by element. mag, when not
// nil, is the magnitude of the terms behind each result (the sum of their
// absolute values); the error allowed is relTol·max(|want|, mag). NaNs
// must match NaNs and infinities must match exactly.
func checkClose(t testing.TB, dt device.DType, got, want, mag []float64, format string, args ...any) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d values, want %d", fmt.Sprintf(format, args...), len(got), len(want))
		return
	}
	rtol, atol := relTol(dt), absTol(dt)
	var bad []string
	nbad := 0
	for i := range want {
		g, w := got[i], want[i]
		ok := false
		switch {
		case math.IsNaN(w) || math.IsNaN(g):
			ok = math.IsNaN(w) && math.IsNaN(g)
		case math.IsInf(w, 0) || math.IsInf(g, 0):
			ok = g == w
		default:
			scale := math.Abs(w)
			if mag != nil {
				scale = math.Max(scale, mag[i])
			}
			ok = math.Abs(g-w) <= rtol*scale+atol
		}
		if !ok {
			nbad++
			if len(bad) < 6 {
				bad = append(bad, fmt.Sprintf("[%d] got %.10g want %.10g", i, g, w))
			}
		}
	}
	if nbad > 0 {
		t.Errorf("%s: %d of %d values differ (%v): %s", fmt.Sprintf(format, args...), nbad, len(want), dt, strings.Join(bad, "; "))
	}
}

// checkEqual compares got with want exactly (NaN equals NaN).
func checkEqual(t testing.TB, got, want []float64, format string, args ...any) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d values, want %d", fmt.Sprintf(format, args...), len(got), len(want))
		return
	}
	var bad []string
	nbad := 0
	for i := range want {
		if got[i] != want[i] && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			nbad++
			if len(bad) < 6 {
				bad = append(bad, fmt.Sprintf("[%d] got %.10g want %.10g", i, got[i], want[i]))
			}
		}
	}
	if nbad > 0 {
		t.Errorf("%s: %d of %d values differ: %s", fmt.Sprintf(format, args...), nbad, len(want), strings.Join(bad, "; "))
	}
}

// forEach calls fn with every multi-index of shape in row-major order (once
// with an empty index for a scalar, never for an empty shape).
func forEach(shape []int, fn func(idx []int)) {
	if device.NumElements(shape) == 0 {
		return
	}
	idx := make([]int, len(shape))
	for {
		fn(idx)
		ax := len(shape) - 1
		for ; ax >= 0; ax-- {
			idx[ax]++
			if idx[ax] < shape[ax] {
				break
			}
			idx[ax] = 0
		}
		if ax < 0 {
			return
		}
	}
}

// at returns the buffer position of idx in l.
func at(l device.Layout, idx []int) int {
	o := l.Offset
	for i, v := range idx {
		o += v * l.Strides[i]
	}
	return o
}

// span returns the buffer length a layout needs: one past its largest position.
func span(l device.Layout) int {
	if device.NumElements(l.Shape) == 0 {
		return l.Offset
	}
	o := l.Offset
	for i, d := range l.Shape {
		o += (d - 1) * l.Strides[i]
	}
	return o + 1
}

// layout builds a Layout.
func layout(shape, strides []int, offset int) device.Layout {
	return device.Layout{Shape: shape, Strides: strides, Offset: offset}
}

// dense is device.Contiguous with an offset.
func dense(offset int, shape ...int) device.Layout {
	l := device.Contiguous(shape)
	l.Offset = offset
	return l
}

// permuted returns the layout of a dense tensor whose axes were stored in
// the order perm: axis i of the view is axis perm[i] of the storage.
func permuted(shape []int, perm []int, offset int) device.Layout {
	stored := make([]int, len(shape))
	for i, p := range perm {
		stored[p] = shape[i]
	}
	st := device.Contiguous(stored).Strides
	strides := make([]int, len(shape))
	for i, p := range perm {
		strides[i] = st[p]
	}
	return layout(append([]int(nil), shape...), strides, offset)
}

// sentinel returns n recognisable values that a kernel must not touch.
func sentinel(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = -7 - float64(i%5)
	}
	return v
}
