package tensor_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

func TestRoundingAndTrigOps(t *testing.T) {
	t.Parallel()
	checkUnary(t, []float64{-2.5, -0.5, 0, 0.25, 0.5, 1.5}, func(x *tensor.Tensor, apply func(func(float64) float64) []float64) []unaryCase {
		return []unaryCase{
			{"Floor", x.Floor(), []float64{-3, -1, 0, 0, 0, 1}},
			{"Ceil", x.Ceil(), []float64{-2, 0, 0, 1, 1, 2}},
			{"Round", x.Round(), []float64{-2, 0, 0, 0, 0, 2}},
			{"Sin", x.Sin(), apply(math.Sin)},
			{"Cos", x.Cos(), apply(math.Cos)},
			{"Tan", x.Tan(), apply(math.Tan)},
			{"Asin", x.MulScalar(0.3).Asin(), apply(func(v float64) float64 { return math.Asin(v * 0.3) })},
			{"Acos", x.MulScalar(0.3).Acos(), apply(func(v float64) float64 { return math.Acos(v * 0.3) })},
			{"Atan", x.Atan(), apply(math.Atan)},
			{"Sinh", x.Sinh(), apply(math.Sinh)},
			{"Cosh", x.Cosh(), apply(math.Cosh)},
			{"Asinh", x.Asinh(), apply(math.Asinh)},
			{"Acosh", x.Abs().AddScalar(1).Acosh(), apply(func(v float64) float64 { return math.Acosh(math.Abs(v) + 1) })},
			{"Atanh", x.MulScalar(0.3).Atanh(), apply(func(v float64) float64 { return math.Atanh(v * 0.3) })},
		}
	})
	sp := tensor.FromFloat64([]float64{math.NaN(), math.Inf(1), math.Inf(-1), 1})
	assertValues(t, sp.IsNaN(), []int{4}, []float64{1, 0, 0, 0}, 0)
	assertValues(t, sp.IsInf(), []int{4}, []float64{0, 1, 1, 0}, 0)
	assertPanicsWith(t, func() { tensor.FromInt64([]int64{1}).Floor() }, "Floor", "int64")
}

func TestModRem(t *testing.T) {
	t.Parallel()
	a := tensor.FromFloat32([]float32{7, -7, 7, -7, 5.5}, 5)
	b := tensor.FromFloat32([]float32{3, 3, -3, -3, 2}, 5)
	assertValues(t, a.Mod(b), []int{5}, []float64{1, 2, -2, -1, 1.5}, 0)
	assertValues(t, a.Rem(b), []int{5}, []float64{1, -1, 1, -1, 1.5}, 0)
	// Broadcasting.
	assertValues(t, a.Mod(tensor.Scalar(4)), []int{5}, []float64{3, 1, 3, 1, 1.5}, 0)
	assertPanicsWith(t, func() { a.Mod(tensor.Zeros(2)) }, "Mod", "[5]", "[2]")
}

func TestMulScalarInPlace(t *testing.T) {
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		x := tensor.FromFloat64([]float64{1, -2, 3.5, 0, 8, -0.25}, 2, 3).Cast(dt)
		x.MulScalarInPlace(-2)
		assert.Equal(t, []float64{-2, 4, -7, 0, -16, 0.5}, x.Values(), "%v", dt)
	}
	assert.Panics(t, func() { tensor.Zeros(2, 3).T().MulScalarInPlace(2) }, "a strided view")
}
