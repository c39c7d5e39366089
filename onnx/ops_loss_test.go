package onnx

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// Tests of ops_loss.go: forward values against plain loops, gradients by
// finite differences in float64, and errors (not panics) for bad
// attributes and inputs.

func lsMust(t *testing.T, op string, opset, nOut int, attrs []*onnxpb.AttributeProto, in ...*autograd.Var) []*autograd.Var {
	t.Helper()
	out, err := callOp(op, opset, nOut, attrs, in...)
	require.NoError(t, err)
	require.Len(t, out, nOut)
	return out
}

func lsRand(seed uint64, shape ...int) *tensor.Tensor {
	rng := rand.New(rand.NewPCG(seed, 11))
	return tensor.RandNormal(rng, 0, 1, shape...).Cast(device.Float64)
}

func lsConst(t *tensor.Tensor) *autograd.Var { return autograd.Constant(t) }

// lsNLLRef is the reference loss of ONNX's test generator: x is the
// N×C×D log-probabilities (D = product of the trailing axes), target N×D.
func lsNLLRef(x []float64, n, c, d int, target []int64, weight []float64, reduction string, ii int64, hasII bool) []float64 {
	loss := make([]float64, n*d)
	wsum := 0.0
	for i := range n {
		for j := range d {
			t := target[i*d+j]
			if hasII && t == ii {
				continue
			}
			w := 1.0
			if weight != nil {
				w = weight[t]
			}
			loss[i*d+j] = -x[(i*c+int(t))*d+j] * w
			wsum += w
		}
	}
	switch reduction {
	case "none":
		return loss
	case "sum":
		s := 0.0
		for _, v := range loss {
			s += v
		}
		return []float64{s}
	}
	s := 0.0
	for _, v := range loss {
		s += v
	}
	if weight == nil && !hasII {
		return []float64{s / float64(n*d)}
	}
	return []float64{s / wsum}
}

type lsLossCase struct {
	name      string
	shape     []int // N, C, d1, ...
	weight    bool
	reduction string
	ii        *int64
}

func lsLossCases() []lsLossCase {
	neg, one := int64(-1), int64(1)
	return []lsLossCase{
		{"NC_none", []int{3, 4}, false, "none", nil},
		{"NC_mean", []int{3, 4}, false, "mean", nil},
		{"NC_sum_weight", []int{3, 4}, true, "sum", nil},
		{"NCd1_mean_weight_ii", []int{2, 3, 4}, true, "mean", &one},
		{"NCd1d2_none_negii", []int{2, 3, 2, 2}, false, "none", &neg},
		{"NCd1d2_mean_ii", []int{2, 3, 2, 3}, false, "mean", &one},
		{"NCd1d2_sum_weight_negii", []int{2, 3, 2, 2}, true, "sum", &neg},
	}
}

// build returns the inputs (scores, target, weight) of a case and the
// attributes.
func (lc lsLossCase) build(seed uint64) (x, w *tensor.Tensor, target []int64, attrs []*onnxpb.AttributeProto) {
	x = lsRand(seed, lc.shape...)
	n, c := lc.shape[0], lc.shape[1]
	d := 1
	for _, s := range lc.shape[2:] {
		d *= s
	}
	target = make([]int64, n*d)
	for i := range target {
		target[i] = int64((i*7 + 3) % c)
		if lc.ii != nil && i%3 == 1 {
			target[i] = *lc.ii
		}
	}
	if lc.weight {
		w = tensor.FromFloat64([]float64{0.5, 2, 1.5, 0.25}[:c], c)
	}
	attrs = []*onnxpb.AttributeProto{attrString("reduction", lc.reduction)}
	if lc.ii != nil {
		attrs = append(attrs, attrInt("ignore_index", *lc.ii))
	}
	return x, w, target, attrs
}

func (lc lsLossCase) targetShape() []int { return append([]int{lc.shape[0]}, lc.shape[2:]...) }

func TestLossNLLValues(t *testing.T) {
	t.Parallel()
	for _, lc := range lsLossCases() {
		t.Run(lc.name, func(t *testing.T) {
			x, w, target, attrs := lc.build(1)
			in := []*autograd.Var{lsConst(x), lsConst(tensor.FromInt64(target, lc.targetShape()...))}
			var wv []float64
			if w != nil {
				in = append(in, lsConst(w))
				wv = w.Float64s()
			}
			got := lsMust(t, "NegativeLogLikelihoodLoss", 13, 1, attrs, in...)[0].Value
			d := x.Len() / (lc.shape[0] * lc.shape[1])
			ii := int64(0)
			if lc.ii != nil {
				ii = *lc.ii
			}
			want := lsNLLRef(x.Float64s(), lc.shape[0], lc.shape[1], d, target, wv, lc.reduction, ii, lc.ii != nil)
			if lc.reduction == "none" {
				assert.Equal(t, lc.targetShape(), got.Shape())
			} else {
				assert.Empty(t, got.Shape())
			}
			assert.InDeltaSlice(t, want, got.Float64s(), 1e-12)
		})
	}
}

func TestLossSCEValues(t *testing.T) {
	t.Parallel()
	for _, lc := range lsLossCases() {
		t.Run(lc.name, func(t *testing.T) {
			x, w, target, attrs := lc.build(2)
			in := []*autograd.Var{lsConst(x), lsConst(tensor.FromInt64(target, lc.targetShape()...))}
			var wv []float64
			if w != nil {
				in = append(in, lsConst(w))
				wv = w.Float64s()
			}
			out := lsMust(t, "SoftmaxCrossEntropyLoss", 13, 2, attrs, in...)
			logProb := x.LogSoftmax(1)
			require.True(t, tensor.AllClose(logProb, out[1].Value, 0, 1e-12))
			d := x.Len() / (lc.shape[0] * lc.shape[1])
			ii := int64(0)
			if lc.ii != nil {
				ii = *lc.ii
			}
			want := lsNLLRef(logProb.Float64s(), lc.shape[0], lc.shape[1], d, target, wv, lc.reduction, ii, lc.ii != nil)
			assert.InDeltaSlice(t, want, out[0].Value.Float64s(), 1e-12)

			// Without the log_prob output (the fused path for N×C mean).
			one := lsMust(t, "SoftmaxCrossEntropyLoss", 12, 1, attrs, in...)
			assert.InDeltaSlice(t, want, one[0].Value.Float64s(), 1e-12)
		})
	}
}

func TestLossGradients(t *testing.T) {
	t.Parallel()
	opts := autograd.GradCheckOptions{}
	for _, lc := range lsLossCases() {
		for _, op := range []string{"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"} {
			t.Run(op+"/"+lc.name, func(t *testing.T) {
				x, w, target, attrs := lc.build(3)
				tv := lsConst(tensor.FromInt64(target, lc.targetShape()...))
				inputs := []*tensor.Tensor{x}
				if w != nil {
					inputs = append(inputs, w)
				}
				nOut := 1
				if op == "SoftmaxCrossEntropyLoss" {
					nOut = 2
				}
				err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
					in := []*autograd.Var{xs[0], tv}
					if len(xs) > 1 {
						in = append(in, xs[1])
					}
					out := lsMust(t, op, 13, nOut, attrs, in...)
					loss := autograd.SumAll(out[0])
					if nOut == 2 { // both outputs carry gradients
						loss = autograd.Add(loss, autograd.MulScalar(autograd.SumAll(autograd.Mul(out[1], out[1])), 0.1))
					}
					return loss
				}, inputs, opts)
				assert.NoError(t, err)
			})
		}
	}
	t.Run("SCE_fused", func(t *testing.T) {
		tv := lsConst(tensor.FromInt64([]int64{2, 0, 1, 3}, 4))
		err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
			return lsMust(t, "SoftmaxCrossEntropyLoss", 13, 1, nil, xs[0], tv)[0]
		}, []*tensor.Tensor{lsRand(4, 4, 5)}, opts)
		assert.NoError(t, err)
	})
	t.Run("MVN", func(t *testing.T) {
		for _, axes := range [][]int64{nil, {1}, {0, 2}, {-1}} {
			var attrs []*onnxpb.AttributeProto
			if axes != nil {
				attrs = append(attrs, attrInts("axes", axes...))
			}
			err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
				return lsMust(t, "MeanVarianceNormalization", 13, 1, attrs, xs[0])[0]
			}, []*tensor.Tensor{lsRand(5, 2, 3, 2, 2)}, opts)
			assert.NoError(t, err, "axes %v", axes)
		}
	})
	t.Run("Trilu", func(t *testing.T) {
		for _, upper := range []int64{0, 1} {
			k := lsConst(tensor.FromInt64([]int64{1}))
			err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
				return lsMust(t, "Trilu", 14, 1, []*onnxpb.AttributeProto{attrInt("upper", upper)}, xs[0], k)[0]
			}, []*tensor.Tensor{lsRand(6, 2, 3, 4)}, opts)
			assert.NoError(t, err, "upper %d", upper)
		}
	})
}

func TestLossMVNValues(t *testing.T) {
	t.Parallel()
	x := lsRand(7, 2, 3, 4)
	y := lsMust(t, "MeanVarianceNormalization", 13, 1, []*onnxpb.AttributeProto{attrInts("axes", 0, 2)}, lsConst(x))[0].Value
	xv, yv := x.Float64s(), y.Float64s()
	for ch := range 3 {
		var idx []int
		for n := range 2 {
			for k := range 4 {
				idx = append(idx, (n*3+ch)*4+k)
			}
		}
		mean, sq := 0.0, 0.0
		for _, i := range idx {
			mean += xv[i]
		}
		mean /= float64(len(idx))
		for _, i := range idx {
			sq += (xv[i] - mean) * (xv[i] - mean)
		}
		std := math.Sqrt(sq / float64(len(idx)))
		for _, i := range idx {
			assert.InDelta(t, (xv[i]-mean)/(std+1e-9), yv[i], 1e-12)
		}
	}
}

func TestLossTriluEyeLikeValues(t *testing.T) {
	t.Parallel()
	x := make([]int64, 2*3*4)
	for i := range x {
		x[i] = int64(i + 1)
	}
	xv := lsConst(tensor.FromInt64(x, 2, 3, 4))
	for _, upper := range []int64{0, 1} {
		for _, k := range []int64{-5, -1, 0, 2, 9} {
			y := lsMust(t, "Trilu", 14, 1, []*onnxpb.AttributeProto{attrInt("upper", upper)}, xv, lsConst(tensor.FromInt64([]int64{k})))[0].Value
			require.Equal(t, device.Int64, y.DType())
			got := y.Int64s()
			for i, v := range x {
				r, c := int64(i/4%3), int64(i%4)
				keep := c-r >= k
				if upper == 0 {
					keep = c-r <= k
				}
				want := int64(0)
				if keep {
					want = v
				}
				assert.Equal(t, want, got[i], "upper %d k %d element %d", upper, k, i)
			}
		}
	}
	// Without k, the default is the upper triangle with the main diagonal.
	y := lsMust(t, "Trilu", 14, 1, nil, lsConst(tensor.FromFloat64([]float64{1, 2, 3, 4}, 2, 2)))[0].Value
	assert.Equal(t, []float64{1, 2, 0, 4}, y.Float64s())

	in := lsConst(tensor.Zeros(3, 4))
	e := lsMust(t, "EyeLike", 9, 1, []*onnxpb.AttributeProto{attrInt("k", 1), attrInt("dtype", int64(onnxpb.TensorProto_INT32))}, in)[0].Value
	require.Equal(t, device.Int64, e.DType())
	assert.Equal(t, []int64{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, e.Int64s())
	e = lsMust(t, "EyeLike", 9, 1, []*onnxpb.AttributeProto{attrInt("k", -2)}, in)[0].Value
	require.Equal(t, device.Float32, e.DType())
	assert.Equal(t, []float32{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0}, e.Float32s())
}

func TestLossErrors(t *testing.T) {
	t.Parallel()
	x := lsConst(lsRand(8, 2, 3))
	xnd := lsConst(lsRand(8, 2, 3, 2))
	tgt := lsConst(tensor.FromInt64([]int64{0, 2}, 2))
	w := lsConst(tensor.FromFloat64([]float64{1, 2, 3}, 3))
	cases := []struct {
		name  string
		op    string
		opset int
		attrs []*onnxpb.AttributeProto
		in    []*autograd.Var
		want  string
		unsup bool
	}{
		{"bad reduction", "NegativeLogLikelihoodLoss", 13, []*onnxpb.AttributeProto{attrString("reduction", "avg")}, []*autograd.Var{x, tgt}, "reduction", false},
		{"missing target", "NegativeLogLikelihoodLoss", 13, nil, []*autograd.Var{x}, "target", false},
		{"rank-1 input", "NegativeLogLikelihoodLoss", 13, nil, []*autograd.Var{lsConst(lsRand(1, 3)), tgt}, "rank >= 2", false},
		{"int input", "NegativeLogLikelihoodLoss", 13, nil, []*autograd.Var{tgt, tgt}, "float", false},
		{"float target", "NegativeLogLikelihoodLoss", 13, nil, []*autograd.Var{x, lsConst(tensor.FromFloat64([]float64{0, 1}, 2))}, "integers", false},
		{"target shape", "NegativeLogLikelihoodLoss", 13, nil, []*autograd.Var{xnd, tgt}, "expected [2 2]", false},
		{"target out of range", "NegativeLogLikelihoodLoss", 13, nil, []*autograd.Var{x, lsConst(tensor.FromInt64([]int64{3, 0}, 2))}, "outside [0, 3)", false},
		{"negative target", "NegativeLogLikelihoodLoss", 13, []*onnxpb.AttributeProto{attrInt("ignore_index", 5)}, []*autograd.Var{x, lsConst(tensor.FromInt64([]int64{-1, 5}, 2))}, "outside [0, 3)", false},
		{"weight shape", "NegativeLogLikelihoodLoss", 13, nil, []*autograd.Var{x, tgt, lsConst(tensor.FromFloat64([]float64{1, 2}, 2))}, "one weight per class", false},
		{"weight type", "NegativeLogLikelihoodLoss", 13, nil, []*autograd.Var{x, tgt, lsConst(tensor.FromFloat32([]float32{1, 2, 3}, 3))}, "weight", false},
		{"sce labels out of range", "SoftmaxCrossEntropyLoss", 13, nil, []*autograd.Var{x, lsConst(tensor.FromInt64([]int64{0, 7}, 2))}, "outside [0, 3)", false},
		{"sce bad reduction", "SoftmaxCrossEntropyLoss", 13, []*onnxpb.AttributeProto{attrString("reduction", "")}, []*autograd.Var{x, tgt, w}, "reduction", false},
		{"sce weights shape", "SoftmaxCrossEntropyLoss", 13, nil, []*autograd.Var{xnd, lsConst(tensor.FromInt64([]int64{0, 1, 2, 0}, 2, 2)), lsConst(lsRand(1, 3, 1))}, "weights", false},
		{"trilu rank 1", "Trilu", 14, nil, []*autograd.Var{lsConst(lsRand(1, 3))}, "rank >= 2", false},
		{"trilu k shape", "Trilu", 14, nil, []*autograd.Var{x, lsConst(tensor.FromInt64([]int64{1, 2}, 2))}, "scalar", false},
		{"trilu float k", "Trilu", 14, nil, []*autograd.Var{x, lsConst(tensor.FromFloat64([]float64{1}, 1))}, "integer", false},
		{"eyelike 3-D", "EyeLike", 9, nil, []*autograd.Var{xnd}, "2-D", false},
		{"eyelike bad dtype", "EyeLike", 9, []*onnxpb.AttributeProto{attrInt("dtype", 999)}, []*autograd.Var{x}, "dtype", false},
		{"eyelike float16", "EyeLike", 9, []*onnxpb.AttributeProto{attrInt("dtype", int64(onnxpb.TensorProto_FLOAT16))}, []*autograd.Var{x}, "float16", true},
		{"mvn default axes on rank 3", "MeanVarianceNormalization", 13, nil, []*autograd.Var{xnd}, "out of range", false},
		{"mvn repeated axes", "MeanVarianceNormalization", 9, []*onnxpb.AttributeProto{attrInts("axes", 1, -2)}, []*autograd.Var{xnd}, "repeats", false},
		{"mvn int input", "MeanVarianceNormalization", 13, []*onnxpb.AttributeProto{attrInts("axes", 0)}, []*autograd.Var{tgt}, "float", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := callOp(tc.op, tc.opset, 1, tc.attrs, tc.in...)
			require.Error(t, err)
			assert.False(t, strings.HasPrefix(err.Error(), "panic"), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, tc.unsup, errors.Is(err, ErrUnsupported), "%v", err)
		})
	}
}
