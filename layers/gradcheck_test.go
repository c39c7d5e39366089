package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// randShape returns dims drawn uniformly from [lo, hi].
func randShape(rng *rand.Rand, lo, hi, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = lo + rng.IntN(hi-lo+1)
	}
	return s
}

// gradCheckLayer checks, in float64, the gradients of l.Forward with
// respect to its input and all its parameters. The input is drawn with
// shape inShape; view (if not nil) turns it into the layer's actual input,
// for example a transposed, non-contiguous view.
func gradCheckLayer(t *testing.T, l Layer, x *tensor.Tensor, view func(*autograd.Var) *autograd.Var) {
	t.Helper()
	Cast(l, device.Float64)
	params := l.Parameters()
	inputs := []*tensor.Tensor{x.Cast(device.Float64)}
	for _, p := range params {
		inputs = append(inputs, p.Value)
	}
	f := func(xs []*autograd.Var) *autograd.Var {
		for i, p := range params {
			p.Var = xs[i+1] // run the layer on GradCheck's copies
		}
		in := xs[0]
		if view != nil {
			in = view(in)
		}
		return l.Forward(in)
	}
	require.NoError(t, autograd.GradCheck(f, inputs, autograd.GradCheckOptions{}))
}

func transposed(a, b int) func(*autograd.Var) *autograd.Var {
	return func(x *autograd.Var) *autograd.Var {
		y := autograd.Transpose(x, a, b)
		if y.Value.IsContiguous() {
			panic("transposed view is contiguous: pick a shape with both axes > 1")
		}
		return y
	}
}

func TestGradCheckLayers(t *testing.T) {
	t.Parallel()
	type gcase struct {
		name string
		// build returns the layer, its input and an optional view of it.
		build func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var)
	}
	normal := func(rng *rand.Rand, shape ...int) *tensor.Tensor { return tensor.RandNormal(rng, 0, 1, shape...) }
	cases := []gcase{
		{"Linear", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			s := randShape(rng, 2, 4, 2)
			return NewLinear(s[1], 1+rng.IntN(4), true, rng), normal(rng, s...), nil
		}},
		{"Linear 3-D input broadcast over batch axes", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			s := randShape(rng, 2, 3, 3)
			return NewLinear(s[2], 3, true, rng), normal(rng, s...), nil
		}},
		{"Linear transposed input no bias", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			// stored 4×3, seen as 3×4
			return NewLinear(4, 2, false, rng), normal(rng, 4, 3), transposed(0, 1)
		}},
		{"Conv2d", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return NewConv2d(2, 3, 3, 3, Conv2dConfig{}, rng), normal(rng, 2, 2, 4+rng.IntN(2), 4+rng.IntN(2)), nil
		}},
		{"Conv2d stride pad dilation groups", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			cfg := Conv2dConfig{StrideH: 2, StrideW: 1, PadH: 1, PadW: 2, DilH: 1, DilW: 2, Groups: 2}
			return NewConv2d(4, 2, 2, 3, cfg, rng), normal(rng, 1, 4, 5, 4), nil
		}},
		{"Conv2d transposed H and W", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return NewConv2d(2, 2, 2, 2, Conv2dConfig{NoBias: true}, rng), normal(rng, 1, 2, 3, 4), transposed(2, 3)
		}},
		{"MaxPool2d", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return NewMaxPool2d(3, 3, Pool2dConfig{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}), normal(rng, 2, 2, 5, 4), nil
		}},
		{"AvgPool2d include pad", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return NewAvgPool2d(3, 2, Pool2dConfig{StrideH: 2, StrideW: 1, PadH: 1, PadW: 1}), normal(rng, 1, 2, 5, 4), nil
		}},
		{"AvgPool2d exclude pad transposed", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return NewAvgPool2d(3, 3, Pool2dConfig{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, ExcludePad: true}), normal(rng, 1, 2, 4, 5), transposed(2, 3)
		}},
		{"GlobalAvgPool", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return NewGlobalAvgPool(), normal(rng, 2, 3, 3, 4), nil
		}},
		{"AdaptiveAvgPool2d divisible", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return NewAdaptiveAvgPool2d(2, 3), normal(rng, 1, 2, 4, 6), nil
		}},
		{"AdaptiveAvgPool2d overlapping windows", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return NewAdaptiveAvgPool2d(3, 2), normal(rng, 1, 2, 5, 5), nil
		}},
		{"BatchNorm1d N×C train", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			bn := NewBatchNorm1d(3, BatchNormConfig{})
			randomizeAffine(bn, rng)
			return bn, normal(rng, 2+rng.IntN(3), 3), nil
		}},
		{"BatchNorm1d N×C×L train transposed", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			bn := NewBatchNorm1d(3, BatchNormConfig{})
			randomizeAffine(bn, rng)
			return bn, normal(rng, 2, 4, 3), transposed(1, 2)
		}},
		{"BatchNorm2d train", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			bn := NewBatchNorm2d(2, BatchNormConfig{})
			randomizeAffine(bn, rng)
			return bn, normal(rng, 2, 2, 2, 3), nil
		}},
		{"BatchNorm2d eval", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			bn := NewBatchNorm2d(2, BatchNormConfig{})
			randomizeAffine(bn, rng)
			bn.runningMean.Value = tensor.RandNormal(rng, 0, 1, 2)
			bn.runningVar.Value = tensor.RandUniform(rng, 0.5, 1.5, 2)
			Eval(bn)
			return bn, normal(rng, 2, 2, 3, 2), nil
		}},
		{"BatchNorm2d no affine", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return NewBatchNorm2d(2, BatchNormConfig{NoAffine: true}), normal(rng, 3, 2, 2, 2), nil
		}},
		{"LayerNorm last axis", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			ln := NewLayerNorm([]int{5}, LayerNormConfig{})
			randomizeAffine(ln, rng)
			return ln, normal(rng, 2, 3, 5), nil
		}},
		{"LayerNorm two axes transposed", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			ln := NewLayerNorm([]int{3, 4}, LayerNormConfig{})
			randomizeAffine(ln, rng)
			return ln, normal(rng, 2, 4, 3), transposed(1, 2)
		}},
		{"Embedding", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return NewEmbedding(6, 3, rng), tensor.FromInt64([]int64{1, 5, 1, 0, 5, 5}, 2, 3), nil
		}},
		{"Flatten transposed", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return NewFlatten(), normal(rng, 2, 3, 2, 4), transposed(1, 3)
		}},
		{"ReLU", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return ReLU{}, normal(rng, randShape(rng, 2, 4, 2)...), nil
		}},
		{"LeakyReLU transposed", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return LeakyReLU{Slope: 0.2}, normal(rng, 3, 4), transposed(0, 1)
		}},
		{"GELU", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return GELU{}, normal(rng, randShape(rng, 2, 4, 3)...), nil
		}},
		{"SiLU", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return SiLU{}, normal(rng, randShape(rng, 2, 4, 2)...), nil
		}},
		{"Sigmoid transposed", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return Sigmoid{}, normal(rng, 3, 2), transposed(0, 1)
		}},
		{"Tanh", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return Tanh{}, normal(rng, randShape(rng, 2, 4, 2)...), nil
		}},
		{"Softmax axis 1 transposed", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return Softmax{Axis: 1}, normal(rng, 2, 4, 3), transposed(1, 2)
		}},
		{"LogSoftmax last axis", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return LogSoftmax{Axis: -1}, normal(rng, randShape(rng, 2, 4, 3)...), nil
		}},
		{"Dropout train", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			// A fresh generator per call makes every forward use the same mask.
			return freshDropout{p: 0.4}, normal(rng, 4, 5), nil
		}},
		{"Dropout eval", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			d := NewDropout(0.5, rng)
			Eval(d)
			return d, normal(rng, 3, 3), nil
		}},
		{"Sequential", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return NewSequential(NewLinear(3, 4, true, rng), Tanh{}, NewLinear(4, 2, true, rng)), normal(rng, 2, 3), nil
		}},
		{"Residual", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return NewResidual(NewSequential(NewLinear(3, 3, true, rng), SiLU{})), normal(rng, 2, 3), nil
		}},
		{"small CNN", func(rng *rand.Rand) (Layer, *tensor.Tensor, func(*autograd.Var) *autograd.Var) {
			return NewSequential(
				NewConv2d(1, 2, 3, 3, Conv2dConfig{PadH: 1, PadW: 1}, rng),
				NewBatchNorm2d(2, BatchNormConfig{}),
				ReLU{},
				NewMaxPool2d(2, 2, Pool2dConfig{}),
				NewFlatten(),
				NewLinear(8, 3, true, rng),
			), normal(rng, 2, 1, 4, 4), nil
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(uint64(i+1), 7))
			l, x, view := tc.build(rng)
			if x.DType() == device.Int64 { // Embedding: only the table is differentiated
				gradCheckIndexed(t, l, x)
				return
			}
			gradCheckLayer(t, l, x, view)
		})
	}
}

// freshDropout runs a train-mode Dropout with a newly seeded generator on
// every Forward, so that finite differences see the same mask.
type freshDropout struct{ p float64 }

func (freshDropout) Parameters() []*autograd.Param { return nil }

func (d freshDropout) Forward(x *autograd.Var) *autograd.Var {
	return NewDropout(d.p, rand.New(rand.NewPCG(5, 5))).Forward(x)
}

// randomizeAffine gives a normalisation layer a non-trivial weight and bias.
func randomizeAffine(m Module, rng *rand.Rand) {
	ps := m.Parameters()
	ps[0].Value = tensor.RandUniform(rng, 0.5, 1.5, ps[0].Shape()...)
	ps[1].Value = tensor.RandNormal(rng, 0, 0.5, ps[1].Shape()...)
}

// gradCheckIndexed checks the gradient of a layer with integer input with
// respect to its parameters.
func gradCheckIndexed(t *testing.T, l Layer, idx *tensor.Tensor) {
	t.Helper()
	Cast(l, device.Float64)
	params := l.Parameters()
	var inputs []*tensor.Tensor
	for _, p := range params {
		inputs = append(inputs, p.Value)
	}
	f := func(xs []*autograd.Var) *autograd.Var {
		for i, p := range params {
			p.Var = xs[i]
		}
		return l.Forward(autograd.Constant(idx))
	}
	require.NoError(t, autograd.GradCheck(f, inputs, autograd.GradCheckOptions{}))
}

func TestGradCheckLosses(t *testing.T) {
	t.Parallel()
	randTargets := func(rng *rand.Rand, c int, shape ...int) *tensor.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(rng.IntN(c))
		}
		return tensor.FromInt64(v, shape...)
	}
	type lcase struct {
		name string
		// build returns the float inputs and the loss of Vars made from them.
		build func(rng *rand.Rand) ([]*tensor.Tensor, func(xs []*autograd.Var) *autograd.Var)
	}
	cases := []lcase{}
	for _, r := range []Reduction{ReduceMean, ReduceSum, ReduceNone} {
		for _, e := range []float64{0, 0.2} {
			cases = append(cases, lcase{fmt.Sprintf("CrossEntropy N×C smoothing %g %v", e, r), func(rng *rand.Rand) ([]*tensor.Tensor, func([]*autograd.Var) *autograd.Var) {
				n, c := 2+rng.IntN(3), 2+rng.IntN(4)
				tg := randTargets(rng, c, n)
				return []*tensor.Tensor{tensor.RandNormal(rng, 0, 2, n, c)}, func(xs []*autograd.Var) *autograd.Var {
					return CrossEntropy(xs[0], tg, CrossEntropyOptions{LabelSmoothing: e, Reduction: r})
				}
			}})
		}
		cases = append(cases,
			lcase{"CrossEntropy N×C×H×W smoothed " + r.String(), func(rng *rand.Rand) ([]*tensor.Tensor, func([]*autograd.Var) *autograd.Var) {
				tg := randTargets(rng, 3, 2, 2, 3)
				return []*tensor.Tensor{tensor.RandNormal(rng, 0, 1, 2, 3, 2, 3)}, func(xs []*autograd.Var) *autograd.Var {
					return CrossEntropy(xs[0], tg, CrossEntropyOptions{LabelSmoothing: 0.1, Reduction: r})
				}
			}},
			lcase{"CrossEntropy transposed logits " + r.String(), func(rng *rand.Rand) ([]*tensor.Tensor, func([]*autograd.Var) *autograd.Var) {
				tg := randTargets(rng, 4, 3)
				return []*tensor.Tensor{tensor.RandNormal(rng, 0, 1, 4, 3)}, func(xs []*autograd.Var) *autograd.Var {
					return CrossEntropy(autograd.Transpose(xs[0], 0, 1), tg, CrossEntropyOptions{Reduction: r})
				}
			}},
			lcase{"NLL " + r.String(), func(rng *rand.Rand) ([]*tensor.Tensor, func([]*autograd.Var) *autograd.Var) {
				tg := randTargets(rng, 5, 2, 3)
				return []*tensor.Tensor{tensor.RandNormal(rng, 0, 1, 2, 5, 3)}, func(xs []*autograd.Var) *autograd.Var {
					return NLL(xs[0], tg, r)
				}
			}},
			lcase{"MSE " + r.String(), func(rng *rand.Rand) ([]*tensor.Tensor, func([]*autograd.Var) *autograd.Var) {
				s := randShape(rng, 1, 4, 2)
				return []*tensor.Tensor{tensor.RandNormal(rng, 0, 1, s...), tensor.RandNormal(rng, 0, 1, s...)}, func(xs []*autograd.Var) *autograd.Var {
					return MSE(xs[0], xs[1], r)
				}
			}},
			lcase{"MSE transposed prediction " + r.String(), func(rng *rand.Rand) ([]*tensor.Tensor, func([]*autograd.Var) *autograd.Var) {
				return []*tensor.Tensor{tensor.RandNormal(rng, 0, 1, 2, 3), tensor.RandNormal(rng, 0, 1, 3, 2)}, func(xs []*autograd.Var) *autograd.Var {
					return MSE(autograd.Transpose(xs[0], 0, 1), xs[1], r)
				}
			}},
			lcase{"BCEWithLogits " + r.String(), func(rng *rand.Rand) ([]*tensor.Tensor, func([]*autograd.Var) *autograd.Var) {
				s := randShape(rng, 1, 4, 2)
				return []*tensor.Tensor{tensor.RandNormal(rng, 0, 3, s...), tensor.RandUniform(rng, 0, 1, s...)}, func(xs []*autograd.Var) *autograd.Var {
					return BCEWithLogits(xs[0], xs[1], r)
				}
			}},
		)
	}
	cases = append(cases, lcase{"BCEWithLogits at x = 0 and large |x|", func(*rand.Rand) ([]*tensor.Tensor, func([]*autograd.Var) *autograd.Var) {
		x := tensor.FromFloat64([]float64{0, 0, 40, -40, 3, -3}, 2, 3)
		tg := tensor.FromFloat64([]float64{0.3, 1, 1, 1, 0, 0.5}, 2, 3)
		return []*tensor.Tensor{x, tg}, func(xs []*autograd.Var) *autograd.Var { return BCEWithLogits(xs[0], xs[1], ReduceSum) }
	}})
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inputs, f := tc.build(rand.New(rand.NewPCG(uint64(i+1), 11)))
			for j := range inputs {
				inputs[j] = inputs[j].Cast(device.Float64)
			}
			require.NoError(t, autograd.GradCheck(f, inputs, autograd.GradCheckOptions{}))
		})
	}
}
