package autograd_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// randn returns a float64 tensor of standard normal values.
func randn(rng *rand.Rand, shape ...int) *tensor.Tensor {
	return tensor.RandNormal(rng, 0, 1, shape...).Cast(device.Float64)
}

// positive returns a float64 tensor with values in [0.5, 2).
func positive(rng *rand.Rand, shape ...int) *tensor.Tensor {
	return tensor.RandUniform(rng, 0.5, 2, shape...).Cast(device.Float64)
}

// awayFromZero returns values with |x| in [0.2, 2) so that kinks (ReLU,
// Abs, Max) are not crossed by the finite-difference step.
func awayFromZero(rng *rand.Rand, shape ...int) *tensor.Tensor {
	v := tensor.RandUniform(rng, 0.2, 2, shape...).Values()
	for i := range v {
		if rng.IntN(2) == 0 {
			v[i] = -v[i]
		}
	}
	return tensor.FromFloat64(v, shape...)
}

type gradCase struct {
	name   string
	f      func(x []*autograd.Var) *autograd.Var
	inputs func(rng *rand.Rand) []*tensor.Tensor
}

func inputs(ts ...*tensor.Tensor) []*tensor.Tensor { return ts }

func gradCases() []gradCase {
	one := func(name string, f func(x *autograd.Var) *autograd.Var, gen func(*rand.Rand, ...int) *tensor.Tensor, shape ...int) gradCase {
		return gradCase{name, func(x []*autograd.Var) *autograd.Var { return f(x[0]) },
			func(rng *rand.Rand) []*tensor.Tensor { return inputs(gen(rng, shape...)) }}
	}
	two := func(name string, f func(a, b *autograd.Var) *autograd.Var, gen func(*rand.Rand, ...int) *tensor.Tensor, as, bs []int) gradCase {
		return gradCase{name, func(x []*autograd.Var) *autograd.Var { return f(x[0], x[1]) },
			func(rng *rand.Rand) []*tensor.Tensor { return inputs(gen(rng, as...), gen(rng, bs...)) }}
	}
	var cases []gradCase
	add := func(c gradCase) { cases = append(cases, c) }
	// Binary ops with broadcasting (row vector, column, scalar-like).
	for _, shapes := range [][2][]int{{{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{4, 1}, {1, 3}}, {{2, 3, 4}, {1}}} {
		as, bs := shapes[0], shapes[1]
		add(two("add", autograd.Add, randn, as, bs))
		add(two("sub", autograd.Sub, randn, as, bs))
		add(two("mul", autograd.Mul, randn, as, bs))
		add(two("div", autograd.Div, positive, as, bs))
		add(two("pow", autograd.Pow, positive, as, bs))
		add(two("maximum", autograd.Maximum, awayFromZero, as, bs))
		add(two("minimum", autograd.Minimum, awayFromZero, as, bs))
	}
	add(one("neg", autograd.Neg, randn, 3, 4))
	add(one("exp", autograd.Exp, randn, 3, 4))
	add(one("log", autograd.Log, positive, 3, 4))
	add(one("sqrt", autograd.Sqrt, positive, 3, 4))
	add(one("abs", autograd.Abs, awayFromZero, 3, 4))
	add(one("tanh", autograd.Tanh, randn, 3, 4))
	add(one("sigmoid", autograd.Sigmoid, randn, 3, 4))
	add(one("relu", autograd.Relu, awayFromZero, 3, 4))
	add(one("leaky_relu", func(x *autograd.Var) *autograd.Var { return autograd.LeakyRelu(x, 0.1) }, awayFromZero, 3, 4))
	add(one("gelu", autograd.GELU, randn, 3, 4))
	add(one("silu", autograd.SiLU, randn, 3, 4))
	add(one("add_scalar", func(x *autograd.Var) *autograd.Var { return autograd.AddScalar(x, 2) }, randn, 3))
	add(one("mul_scalar", func(x *autograd.Var) *autograd.Var { return autograd.MulScalar(x, -1.5) }, randn, 3))
	add(one("pow_scalar", func(x *autograd.Var) *autograd.Var { return autograd.PowScalar(x, 2.5) }, positive, 3))
	// Views, including non-contiguous inputs to later ops.
	add(one("reshape", func(x *autograd.Var) *autograd.Var { return autograd.Reshape(x, 4, -1) }, randn, 2, 3, 2))
	add(one("transpose_mul", func(x *autograd.Var) *autograd.Var {
		t := autograd.Transpose(x, 0, 1)
		return autograd.Mul(t, t)
	}, randn, 2, 3))
	add(one("permute_reshape", func(x *autograd.Var) *autograd.Var {
		return autograd.Reshape(autograd.Permute(x, 2, 0, 1), -1)
	}, randn, 2, 3, 4))
	add(one("slice", func(x *autograd.Var) *autograd.Var { return autograd.Slice(x, 1, 1, 3) }, randn, 2, 4))
	add(one("expand", func(x *autograd.Var) *autograd.Var { return autograd.Expand(x, 3, 2, 4) }, randn, 2, 1))
	add(one("squeeze_unsqueeze", func(x *autograd.Var) *autograd.Var {
		return autograd.Unsqueeze(autograd.Squeeze(x, 1), 0)
	}, randn, 3, 1, 2))
	add(one("flatten", func(x *autograd.Var) *autograd.Var { return autograd.Flatten(x, 1) }, randn, 2, 3, 2))
	add(two("concat", func(a, b *autograd.Var) *autograd.Var { return autograd.Concat(1, a, b) }, randn, []int{2, 3}, []int{2, 2}))
	add(two("stack", func(a, b *autograd.Var) *autograd.Var { return autograd.Stack(0, a, b) }, randn, []int{2, 3}, []int{2, 3}))
	add(one("split", func(x *autograd.Var) *autograd.Var {
		p := autograd.Split(x, 0, 1, 2)
		return autograd.Mul(autograd.SumAll(p[0]), autograd.SumAll(p[1]))
	}, randn, 3, 2))
	add(one("split_many", func(x *autograd.Var) *autograd.Var {
		// Seven uneven pieces (cut by halving), weighted differently and
		// one left unused.
		p := autograd.Split(x, 1, 1, 2, 1, 3, 1, 1, 1)
		out := autograd.MulScalar(p[0], 0)
		for i, v := range p[:6] {
			out = autograd.Add(out, autograd.MulScalar(autograd.SumAll(v), float64(i+1)))
		}
		return out
	}, randn, 2, 10))
	// Reductions.
	add(one("sum_axes", func(x *autograd.Var) *autograd.Var { return autograd.SumAxes(x, []int{0, 2}, false) }, randn, 2, 3, 4))
	add(one("sum_keep", func(x *autograd.Var) *autograd.Var { return autograd.Sum(x, 1, true) }, randn, 2, 3))
	add(one("mean", func(x *autograd.Var) *autograd.Var { return autograd.Mean(x, -1, false) }, randn, 2, 3))
	add(one("mean_all", autograd.MeanAll, randn, 2, 3))
	add(one("var_unbiased", func(x *autograd.Var) *autograd.Var { return autograd.VarAxes(x, []int{1}, true, false) }, randn, 3, 4))
	add(one("var_biased_all", func(x *autograd.Var) *autograd.Var { return autograd.VarAxes(x, nil, false, false) }, randn, 3, 4))
	add(one("max", func(x *autograd.Var) *autograd.Var { return autograd.Max(x, 1, false) }, randn, 3, 4))
	add(one("min_keep", func(x *autograd.Var) *autograd.Var { return autograd.Min(x, 0, true) }, randn, 3, 4))
	add(one("max_ties", func(x *autograd.Var) *autograd.Var {
		// Maximum with itself makes every element a tie; the gradient is shared.
		return autograd.Max(autograd.Concat(1, x, x), 1, false)
	}, randn, 3, 4))
	add(one("softmax", func(x *autograd.Var) *autograd.Var { return autograd.Softmax(x, 1) }, randn, 3, 4))
	add(one("log_softmax", func(x *autograd.Var) *autograd.Var { return autograd.LogSoftmax(x, 0) }, randn, 3, 4))
	add(one("gather", func(x *autograd.Var) *autograd.Var {
		return autograd.Gather(x, 1, tensor.FromInt64([]int64{0, 2, 2, 1, 3, 3}, 3, 2))
	}, randn, 3, 4))
	add(one("index_select", func(x *autograd.Var) *autograd.Var {
		return autograd.IndexSelect(x, 0, tensor.FromInt64([]int64{2, 0, 2}, 3))
	}, randn, 3, 4))
	add(two("where", func(a, b *autograd.Var) *autograd.Var {
		cond := tensor.FromFloat64([]float64{1, 0, 0, 1, 1, 0}, 2, 3)
		return autograd.Where(cond, a, b)
	}, randn, []int{2, 3}, []int{3}))
	// Linear algebra.
	add(two("matmul", autograd.MatMul, randn, []int{3, 4}, []int{4, 2}))
	add(two("matmul_batch_broadcast", autograd.MatMul, randn, []int{2, 3, 4}, []int{4, 5}))
	add(two("matmul_transposed_view", func(a, b *autograd.Var) *autograd.Var {
		return autograd.MatMul(autograd.Transpose(a, 0, 1), b)
	}, randn, []int{4, 3}, []int{4, 2}))
	cases = append(cases, gradCase{"linear", func(x []*autograd.Var) *autograd.Var {
		return autograd.Linear(x[0], x[1], x[2])
	}, func(rng *rand.Rand) []*tensor.Tensor {
		return inputs(randn(rng, 2, 3, 4), randn(rng, 5, 4), randn(rng, 5))
	}})
	for _, o := range []tensor.ConvOptions{{}, {StrideH: 2, StrideW: 1, PadH: 1, PadW: 2}, {DilH: 2, DilW: 2, PadH: 1, PadW: 1}, {Groups: 2}} {
		o := o
		cases = append(cases, gradCase{"conv2d", func(x []*autograd.Var) *autograd.Var {
			return autograd.Conv2D(x[0], x[1], x[2], o)
		}, func(rng *rand.Rand) []*tensor.Tensor {
			return inputs(randn(rng, 2, 4, 5, 6), randn(rng, 4, 4/max(o.Groups, 1), 3, 2), randn(rng, 4))
		}})
	}
	// The fused operations (ReLU is not differentiable at 0, where random
	// inputs land with probability 0).
	cases = append(cases, gradCase{"linear_relu", func(x []*autograd.Var) *autograd.Var {
		return autograd.LinearAct(x[0], x[1], x[2], device.ActReLU)
	}, func(rng *rand.Rand) []*tensor.Tensor {
		return inputs(randn(rng, 6, 4), randn(rng, 5, 4), randn(rng, 5))
	}})
	cases = append(cases, gradCase{"linear_relu_3d_nobias", func(x []*autograd.Var) *autograd.Var {
		return autograd.LinearAct(x[0], x[1], nil, device.ActReLU)
	}, func(rng *rand.Rand) []*tensor.Tensor {
		return inputs(randn(rng, 2, 3, 4), randn(rng, 5, 4))
	}})
	cases = append(cases, gradCase{"conv2d_relu", func(x []*autograd.Var) *autograd.Var {
		return autograd.Conv2DAct(x[0], x[1], x[2], tensor.ConvOptions{PadH: 1, PadW: 1}, device.ActReLU)
	}, func(rng *rand.Rand) []*tensor.Tensor {
		return inputs(randn(rng, 2, 3, 5, 6), randn(rng, 4, 3, 3, 3), randn(rng, 4))
	}})
	cases = append(cases, gradCase{"conv2d_add_relu", func(x []*autograd.Var) *autograd.Var {
		return autograd.Conv2DAddAct(x[0], x[1], x[2], x[3], tensor.ConvOptions{PadH: 1, PadW: 1}, device.ActReLU)
	}, func(rng *rand.Rand) []*tensor.Tensor {
		return inputs(randn(rng, 2, 3, 5, 6), randn(rng, 4, 3, 3, 3), randn(rng, 4), randn(rng, 2, 4, 5, 6))
	}})
	cases = append(cases, gradCase{"conv2d_add_no_bias", func(x []*autograd.Var) *autograd.Var {
		return autograd.Conv2DAddAct(x[0], x[1], nil, x[2], tensor.ConvOptions{StrideH: 2, StrideW: 2}, device.ActNone)
	}, func(rng *rand.Rand) []*tensor.Tensor {
		return inputs(randn(rng, 2, 3, 5, 6), randn(rng, 4, 3, 1, 1), randn(rng, 2, 4, 3, 3))
	}})
	for _, po := range []tensor.PoolOptions{{KH: 2, KW: 2}, {KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}} {
		po := po
		cases = append(cases, gradCase{"conv2d_relu_maxpool", func(x []*autograd.Var) *autograd.Var {
			return autograd.Conv2DActMaxPool(x[0], x[1], x[2], tensor.ConvOptions{PadH: 1, PadW: 1}, device.ActReLU, po)
		}, func(rng *rand.Rand) []*tensor.Tensor {
			return inputs(randn(rng, 2, 3, 6, 6), randn(rng, 4, 3, 3, 3), randn(rng, 4))
		}})
	}
	cases = append(cases, gradCase{"batch_norm", func(x []*autograd.Var) *autograd.Var {
		y, _, _ := autograd.BatchNorm(x[0], x[1], x[2], 1e-5)
		return autograd.Mul(y, autograd.Constant(tensor.FromFloat64([]float64{1, -2, 3, 0.5, 1.5, -1, 2, 1, 0.3, 0.7, -0.4, 2, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, 2, 3, 2, 2)))
	}, func(rng *rand.Rand) []*tensor.Tensor {
		return inputs(randn(rng, 2, 3, 2, 2), randn(rng, 3), randn(rng, 3))
	}})
	for _, smoothing := range []float64{0, 0.2} {
		smoothing := smoothing
		add(one("softmax_cross_entropy", func(x *autograd.Var) *autograd.Var {
			l, err := autograd.SoftmaxCrossEntropy(x, tensor.FromInt64([]int64{2, 0, 3}, 3), smoothing)
			if err != nil {
				panic(err)
			}
			return l
		}, randn, 3, 4))
	}
	for _, o := range []tensor.PoolOptions{{KH: 2, KW: 2}, {KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}} {
		o := o
		add(one("max_pool", func(x *autograd.Var) *autograd.Var { return autograd.MaxPool2D(x, o) }, randn, 2, 2, 5, 6))
		for _, pad := range []bool{false, true} {
			o.CountPad = pad
			oo := o
			add(one("avg_pool", func(x *autograd.Var) *autograd.Var { return autograd.AvgPool2D(x, oo) }, randn, 2, 2, 5, 6))
		}
	}
	return cases
}

func TestGradCheck(t *testing.T) {
	t.Parallel()
	for i, c := range gradCases() {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			require.NoError(t, autograd.GradCheck(c.f, c.inputs(rng), autograd.GradCheckOptions{}))
		})
	}
}

// TestGradCheckCatchesWrongGradient makes sure GradCheck can fail: an
// operation with a deliberately wrong gradient rule must be reported.
func TestGradCheckCatchesWrongGradient(t *testing.T) {
	t.Parallel()
	wrong := func(x []*autograd.Var) *autograd.Var {
		// x·x computed as Mul(x, Detach(x)) has half the true gradient.
		return autograd.Mul(x[0], x[0].Detach())
	}
	err := autograd.GradCheck(wrong, inputs(tensor.FromFloat64([]float64{1, 2, 3}, 3)), autograd.GradCheckOptions{})
	require.Error(t, err)
	require.Contains(t, err.Error(), "input 0")
}

// TestGradCheckRandomShapes checks the broadcasting binary ops on seeded
// random shapes: ranks 1–4, random broadcast axes on either side, and a
// transposed (non-contiguous) first operand half of the time.
func TestGradCheckRandomShapes(t *testing.T) {
	t.Parallel()
	ops := []struct {
		name string
		f    func(a, b *autograd.Var) *autograd.Var
	}{
		{"add", autograd.Add}, {"sub", autograd.Sub}, {"mul", autograd.Mul},
		{"div", autograd.Div}, {"maximum", autograd.Maximum}, {"minimum", autograd.Minimum},
	}
	rng := rand.New(rand.NewPCG(42, 42))
	for trial := 0; trial < 60; trial++ {
		op := ops[trial%len(ops)]
		rank := 1 + rng.IntN(4)
		full := make([]int, rank)
		for i := range full {
			full[i] = 1 + rng.IntN(3)
		}
		small := append([]int(nil), full[rng.IntN(rank):]...)
		for i := range small {
			if rng.IntN(2) == 0 {
				small[i] = 1
			}
		}
		as, bs := full, small
		if rng.IntN(2) == 0 {
			as, bs = bs, as
		}
		transpose := len(as) >= 2 && rng.IntN(2) == 0
		stored := append([]int(nil), as...)
		if transpose {
			n := len(stored)
			stored[n-2], stored[n-1] = stored[n-1], stored[n-2]
		}
		name := fmt.Sprintf("%s_%v_%v_transposed=%v", op.name, as, bs, transpose)
		t.Run(name, func(t *testing.T) {
			f := func(x []*autograd.Var) *autograd.Var {
				a := x[0]
				if transpose {
					a = autograd.Transpose(a, -2, -1)
				}
				return op.f(a, x[1])
			}
			in := inputs(awayFromZero(rng, stored...), awayFromZero(rng, bs...))
			require.NoError(t, autograd.GradCheck(f, in, autograd.GradCheckOptions{}))
		})
	}
}
