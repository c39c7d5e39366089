package autograd_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// TestGradCheckReLU6 checks the gradients of the fused operations with
// ReLU6 (inputs large enough for outputs on both sides of 0 and 6; the
// kinks are hit with probability 0), and of depthwise convolutions, which
// run on their own kernel forward.
func TestGradCheckReLU6(t *testing.T) {
	t.Parallel()
	scaled := func(rng *rand.Rand, s float64, shape ...int) *tensor.Tensor {
		return tensor.RandNormal(rng, 0, s, shape...).Cast(device.Float64)
	}
	type tc struct {
		name string
		f    func(x []*autograd.Var) *autograd.Var
		in   func(rng *rand.Rand) []*tensor.Tensor
	}
	cases := []tc{
		{"relu6", func(x []*autograd.Var) *autograd.Var { return autograd.ReLU6(x[0]) },
			func(rng *rand.Rand) []*tensor.Tensor { return inputs(scaled(rng, 4, 3, 2, 5)) }},
		{"relu6_rank1", func(x []*autograd.Var) *autograd.Var { return autograd.ReLU6(x[0]) },
			func(rng *rand.Rand) []*tensor.Tensor { return inputs(scaled(rng, 4, 17)) }},
		{"relu6_strided", func(x []*autograd.Var) *autograd.Var { return autograd.ReLU6(autograd.Transpose(x[0], 0, 1)) },
			func(rng *rand.Rand) []*tensor.Tensor { return inputs(scaled(rng, 4, 4, 6)) }},
		{"relu", func(x []*autograd.Var) *autograd.Var { return autograd.Relu(x[0]) },
			func(rng *rand.Rand) []*tensor.Tensor { return inputs(randn(rng, 3, 2, 5)) }},
		{"add_relu", func(x []*autograd.Var) *autograd.Var { return autograd.AddAct(x[0], x[1], device.ActReLU) },
			func(rng *rand.Rand) []*tensor.Tensor { return inputs(randn(rng, 2, 3, 4), randn(rng, 2, 3, 4)) }},
		{"add_relu6", func(x []*autograd.Var) *autograd.Var { return autograd.AddAct(x[0], x[1], device.ActReLU6) },
			func(rng *rand.Rand) []*tensor.Tensor { return inputs(scaled(rng, 4, 2, 3, 4), scaled(rng, 4, 2, 3, 4)) }},
		{"add_relu_broadcast", func(x []*autograd.Var) *autograd.Var { return autograd.AddAct(x[0], x[1], device.ActReLU) },
			func(rng *rand.Rand) []*tensor.Tensor { return inputs(randn(rng, 2, 3, 4), randn(rng, 3, 1)) }},
		{"add_none", func(x []*autograd.Var) *autograd.Var { return autograd.AddAct(x[0], x[1], device.ActNone) },
			func(rng *rand.Rand) []*tensor.Tensor { return inputs(randn(rng, 5), randn(rng, 5)) }},
		{"linear_relu6", func(x []*autograd.Var) *autograd.Var {
			return autograd.LinearAct(x[0], x[1], x[2], device.ActReLU6)
		}, func(rng *rand.Rand) []*tensor.Tensor {
			return inputs(scaled(rng, 3, 6, 4), randn(rng, 5, 4), randn(rng, 5))
		}},
		{"conv2d_relu6", func(x []*autograd.Var) *autograd.Var {
			return autograd.Conv2DAct(x[0], x[1], x[2], tensor.ConvOptions{PadH: 1, PadW: 1}, device.ActReLU6)
		}, func(rng *rand.Rand) []*tensor.Tensor {
			return inputs(scaled(rng, 3, 2, 3, 5, 6), randn(rng, 4, 3, 3, 3), randn(rng, 4))
		}},
		{"conv2d_relu6_maxpool", func(x []*autograd.Var) *autograd.Var {
			po := tensor.PoolOptions{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}
			return autograd.Conv2DActMaxPool(x[0], x[1], x[2], tensor.ConvOptions{PadH: 1, PadW: 1}, device.ActReLU6, po)
		}, func(rng *rand.Rand) []*tensor.Tensor {
			return inputs(scaled(rng, 3, 2, 3, 6, 6), randn(rng, 4, 3, 3, 3), randn(rng, 4))
		}},
	}
	for _, act := range []device.Activation{device.ActNone, device.ActReLU, device.ActReLU6} {
		for _, o := range []tensor.ConvOptions{
			{PadH: 1, PadW: 1, Groups: 4},
			{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, Groups: 4},
			{StrideH: 1, StrideW: 2, DilH: 2, PadH: 2, PadW: 1, Groups: 4},
		} {
			act, o := act, o
			cases = append(cases, tc{fmt.Sprintf("depthwise_%v_%+v", act, o), func(x []*autograd.Var) *autograd.Var {
				return autograd.Conv2DAct(x[0], x[1], x[2], o, act)
			}, func(rng *rand.Rand) []*tensor.Tensor {
				return inputs(scaled(rng, 3, 2, 4, 7, 6), randn(rng, 4, 1, 3, 3), randn(rng, 4))
			}})
		}
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 11))
			require.NoError(t, autograd.GradCheck(c.f, c.in(rng), autograd.GradCheckOptions{}))
		})
	}
}

// TestReLU6Bounds pins ReLU6 and its gradient at the bounds, as PyTorch's
// hardtanh backward: no gradient at exactly 0 and 6 (nor beyond), the
// gradient strictly inside, and a NaN output passes its gradient.
func TestReLU6Bounds(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		x := tensor.FromFloat64([]float64{-1, 0, 0.5, 6, 7, 5.5, nan, 3}, 1, 8).Cast(dt)
		y := tensor.BiasAct(x, nil, device.ActReLU6, false)
		got := y.Values()
		assert.Equal(t, []float64{0, 0, 0.5, 6, 6, 5.5}, got[:6], "%v", dt)
		assert.True(t, math.IsNaN(got[6]), "relu6(NaN) on %v", dt)
		dy := tensor.FromFloat64([]float64{1, 2, 3, 4, 5, 6, 7, 8}, 1, 8).Cast(dt)
		assert.Equal(t, []float64{0, 0, 3, 0, 0, 6, 7, 8}, tensor.ActGrad(dy, y, device.ActReLU6).Values(), "%v", dt)
		// A strided gradient takes the same kernel.
		dyT := tensor.FromFloat64([]float64{1, 2, 3, 4, 5, 6, 7, 8}, 8, 1).Cast(dt).T()
		assert.Equal(t, []float64{0, 0, 3, 0, 0, 6, 7, 8}, tensor.ActGrad(dyT, y, device.ActReLU6).Values(), "strided, %v", dt)
	}
}

// TestReLU6Op pins autograd.ReLU6, the activation MobileNet uses: its
// values and its gradient at and beyond the bounds, as torch.nn.ReLU6
// (hardtanh backward), for any shape; it is recorded as Clamp(0, 6).
func TestReLU6Op(t *testing.T) {
	t.Parallel()
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		x := autograd.Leaf(tensor.FromFloat64([]float64{-1, 0, 0.5, 6, 7, 5.5, 3, -0.0}, 2, 2, 2).Cast(dt))
		y := autograd.ReLU6(x)
		assert.Equal(t, []int{2, 2, 2}, y.Value.Shape())
		assert.Equal(t, []float64{0, 0, 0.5, 6, 6, 5.5, 3, 0}, y.Value.Values(), "%v", dt)
		require.NoError(t, autograd.Backward(autograd.SumAll(autograd.Mul(y, autograd.Constant(tensor.FromFloat64([]float64{1, 2, 3, 4, 5, 6, 7, 8}, 2, 2, 2).Cast(dt))))))
		assert.Equal(t, []float64{0, 0, 3, 0, 0, 6, 7, 0}, x.Grad.Values(), "%v", dt)
		require.NotNil(t, y.Op())
		assert.Equal(t, "Clamp", y.Op().Name)
		assert.Equal(t, autograd.ClampAttrs{Lo: 0, Hi: 6}, y.Op().Attrs)
	}
}
