package autograd_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// uxUniform returns a float64 tensor with values in [lo, hi), each pushed
// at least 0.05 away from the given kinks so finite differences do not
// cross them.
func uxUniform(rng *rand.Rand, lo, hi float64, kinks []float64, shape ...int) *tensor.Tensor {
	v := tensor.RandUniform(rng, lo, hi, shape...).Values()
	for i := range v {
		for _, k := range kinks {
			if math.Abs(v[i]-k) < 0.05 {
				v[i] = k + 0.1
			}
		}
	}
	return tensor.FromFloat64(v, shape...)
}

func TestUnaryExtraGrad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		f      func(x *autograd.Var) *autograd.Var
		lo, hi float64
		kinks  []float64
	}{
		{"Erf", autograd.Erf, -2, 2, nil},
		{"Recip", autograd.Recip, 0.5, 3, nil},
		{"Sin", autograd.Sin, -3, 3, nil},
		{"Cos", autograd.Cos, -3, 3, nil},
		{"Tan", autograd.Tan, -1.2, 1.2, nil},
		{"Asin", autograd.Asin, -0.9, 0.9, nil},
		{"Acos", autograd.Acos, -0.9, 0.9, nil},
		{"Atan", autograd.Atan, -3, 3, nil},
		{"Sinh", autograd.Sinh, -2, 2, nil},
		{"Cosh", autograd.Cosh, -2, 2, nil},
		{"Asinh", autograd.Asinh, -3, 3, nil},
		{"Acosh", autograd.Acosh, 1.2, 4, nil},
		{"Atanh", autograd.Atanh, -0.9, 0.9, nil},
		{"Softplus", autograd.Softplus, -4, 4, nil},
		{"Softsign", autograd.Softsign, -3, 3, []float64{0}},
		{"Elu", func(x *autograd.Var) *autograd.Var { return autograd.Elu(x, 0.7) }, -3, 3, []float64{0}},
		{"Clamp", func(x *autograd.Var) *autograd.Var { return autograd.Clamp(x, -1, 0.5) }, -3, 3, []float64{-1, 0.5}},
		{"ClampLow", func(x *autograd.Var) *autograd.Var { return autograd.Clamp(x, -1, math.Inf(1)) }, -3, 3, []float64{-1}},
		{"ClampNone", func(x *autograd.Var) *autograd.Var { return autograd.Clamp(x, math.Inf(-1), math.Inf(1)) }, -3, 3, nil},
		{"HardSigmoid", func(x *autograd.Var) *autograd.Var { return autograd.HardSigmoid(x, 0.2, 0.5) }, -4, 4, []float64{-2.5, 2.5}},
		{"CastRoundTrip", func(x *autograd.Var) *autograd.Var {
			return autograd.Cast(autograd.Mul(autograd.Cast(x, device.Float32), autograd.Cast(x, device.Float32)), device.Float64)
		}, -2, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(7, 11))
			x := uxUniform(rng, tc.lo, tc.hi, tc.kinks, 3, 4)
			o := autograd.GradCheckOptions{}
			if tc.name == "CastRoundTrip" {
				o.Eps, o.ATol, o.RTol = 1e-2, 1e-3, 1e-3 // float32 in the middle
			}
			err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var { return tc.f(xs[0]) },
				[]*tensor.Tensor{x}, o)
			require.NoError(t, err)
		})
	}
	t.Run("PRelu", func(t *testing.T) {
		t.Parallel()
		rng := rand.New(rand.NewPCG(3, 5))
		for _, ss := range [][]int{{2, 3, 4}, {3, 1}, {4}, {1}} {
			x := uxUniform(rng, -2, 2, []float64{0}, 2, 3, 4)
			s := uxUniform(rng, 0.1, 0.9, nil, ss...)
			err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var { return autograd.PRelu(xs[0], xs[1]) },
				[]*tensor.Tensor{x, s}, autograd.GradCheckOptions{})
			require.NoError(t, err, "slope shape %v", ss)
		}
	})
}

func TestUnaryExtraValues(t *testing.T) {
	t.Parallel()
	x := autograd.Constant(tensor.FromFloat64([]float64{-1000, -2, 0, 2, 1000}))
	near := func(got *autograd.Var, want []float64) {
		t.Helper()
		assert.InDeltaSlice(t, want, got.Value.Values(), 1e-12)
	}
	near(autograd.Softplus(x), []float64{0, math.Log1p(math.Exp(-2)), math.Ln2, 2 + math.Log1p(math.Exp(-2)), 1000})
	near(autograd.Elu(x, 2), []float64{-2, 2 * (math.Exp(-2) - 1), 0, 2, 1000})
	near(autograd.Softsign(x), []float64{-1000.0 / 1001, -2.0 / 3, 0, 2.0 / 3, 1000.0 / 1001})
	near(autograd.Clamp(x, -2, 1), []float64{-2, -2, 0, 1, 1})
	near(autograd.HardSigmoid(x, 0.25, 0.5), []float64{0, 0, 0.5, 1, 1})
	near(autograd.PRelu(x, autograd.Constant(tensor.FromFloat64([]float64{0.5}))), []float64{-500, -1, 0, 2, 1000})
	// Large inputs give finite gradients (no 0·Inf).
	p := autograd.Leaf(tensor.FromFloat64([]float64{-1000, 1000}))
	require.NoError(t, autograd.Backward(autograd.SumAll(autograd.Elu(p, 1))))
	assert.InDeltaSlice(t, []float64{0, 1}, p.Grad.Values(), 1e-12)
	// Cast to an integer type is a constant.
	c := autograd.Cast(p, device.Int64)
	assert.False(t, c.RequiresGrad())
	assert.Equal(t, []int64{-1000, 1000}, c.Value.Int64s())
	assert.Same(t, p, autograd.Cast(p, device.Float64))
}

func TestUnaryExtraOpInfo(t *testing.T) {
	t.Parallel()
	x := autograd.Leaf(tensor.FromFloat64([]float64{0.1, 0.2}))
	for _, tc := range []struct {
		v     *autograd.Var
		name  string
		attrs any
	}{
		{autograd.Erf(x), "Erf", nil},
		{autograd.Atanh(x), "Atanh", nil},
		{autograd.Recip(x), "Recip", nil},
		{autograd.Softplus(x), "Softplus", nil},
		{autograd.Softsign(x), "Softsign", nil},
		{autograd.PRelu(x, x), "PRelu", nil},
		{autograd.Elu(x, 0.5), "Elu", autograd.ScalarAttrs{Value: 0.5}},
		{autograd.Clamp(x, -1, 2), "Clamp", autograd.ClampAttrs{Lo: -1, Hi: 2}},
		{autograd.HardSigmoid(x, 0.2, 0.5), "HardSigmoid", autograd.HardSigmoidAttrs{Alpha: 0.2, Beta: 0.5}},
		{autograd.Cast(x, device.Float32), "Cast", autograd.CastAttrs{To: device.Float32}},
	} {
		info := tc.v.Op()
		require.NotNil(t, info, tc.name)
		assert.Equal(t, tc.name, info.Name)
		assert.Equal(t, tc.attrs, info.Attrs, tc.name)
		assert.Same(t, x, info.Inputs[0], tc.name)
	}
}
