package tensor_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// The fused operations are checked against the same result composed of
// primitive operations, in both float types (float32 runs the vectorised
// kernels).

func fusedInputs(dt device.DType, seed uint64, shapes ...[]int) []*tensor.Tensor {
	rng := rand.New(rand.NewPCG(seed, 5))
	out := make([]*tensor.Tensor, len(shapes))
	for i, s := range shapes {
		out[i] = tensor.RandNormal(rng, 0, 1, s...).Cast(dt)
	}
	return out
}

func assertNear(t *testing.T, want, got *tensor.Tensor, msg string) {
	t.Helper()
	require.Equal(t, want.Shape(), got.Shape(), msg)
	assert.True(t, tensor.AllClose(got, want, 1e-5, 1e-6), "%s:\ngot  %v\nwant %v", msg, got, want)
}

func TestBiasActMatchesComposition(t *testing.T) {
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		for _, shape := range [][]int{{7, 33}, {3, 5, 4, 6}, {2, 3, 1}} {
			in := fusedInputs(dt, 1, shape, []int{shape[1]})
			x, b := in[0], in[1]
			bshape := append([]int{shape[1]}, make([]int, len(shape)-2)...)
			for i := 1; i < len(bshape); i++ {
				bshape[i] = 1
			}
			composed := x.Add(b.Reshape(bshape...))
			assertNear(t, composed, tensor.BiasAct(x, b, device.ActNone, false), "bias")
			assertNear(t, composed.Relu(), tensor.BiasAct(x, b, device.ActReLU, false), "bias+relu")
			assertNear(t, x.Relu(), tensor.BiasAct(x, nil, device.ActReLU, false), "relu, no bias")
			y := x.Clone()
			assert.Same(t, y, tensor.BiasAct(y, b, device.ActReLU, true), "in place")
			assertNear(t, composed.Relu(), y, "in place")

			g := fusedInputs(dt, 2, shape)[0]
			assertNear(t, g.Mul(composed.Relu().GtScalar(0)), tensor.ActGrad(g, composed.Relu(), device.ActReLU), "relu grad")
			axes := []int{0}
			for i := 2; i < len(shape); i++ {
				axes = append(axes, i)
			}
			assertNear(t, g.SumAxes(axes, false), tensor.BiasGrad(g), "bias grad")
		}
	}
}

func TestSoftmaxCrossEntropyMatchesComposition(t *testing.T) {
	labels := tensor.FromInt64([]int64{3, 0, 9, 4, 4, 1}, 6)
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		logits := fusedInputs(dt, 3, []int{6, 10})[0].MulScalar(3)
		for _, smoothing := range []float64{0, 0.1} {
			loss, grad, err := tensor.SoftmaxCrossEntropy(logits, labels, smoothing)
			require.NoError(t, err)
			// -Σ target·log_softmax, averaged over rows; its gradient
			// (softmax - target)/rows.
			logp := logits.LogSoftmax(1)
			target := tensor.Full(tensor.CPU(), dt, smoothing/10, 6, 10)
			onehot := target.Clone()
			for r, l := range labels.Int64s() {
				onehot.Slice(0, r, r+1).Slice(1, int(l), int(l)+1).Fill(1 - smoothing + smoothing/10)
			}
			want := onehot.Mul(logp).SumAll().Neg().MulScalar(1.0 / 6)
			assertNear(t, want, loss, "loss")
			assertNear(t, logp.Exp().Sub(onehot).MulScalar(1.0/6), grad, "gradient")
		}
	}
	_, _, err := tensor.SoftmaxCrossEntropy(tensor.Zeros(2, 3), tensor.FromInt64([]int64{1, 3}, 2), 0)
	var ie *device.IndexError
	require.True(t, errors.As(err, &ie), "a label out of range: %v", err)
	assert.Equal(t, device.IndexError{Pos: 1, Value: 3, N: 3}, *ie)
}

func TestConv2DBiasActMaxPoolMatchesComposition(t *testing.T) {
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		for _, c := range []struct {
			co tensor.ConvOptions
			po tensor.PoolOptions
			x  []int
		}{
			{tensor.ConvOptions{PadH: 1, PadW: 1}, tensor.PoolOptions{KH: 2, KW: 2}, []int{5, 3, 8, 10}},
			{tensor.ConvOptions{}, tensor.PoolOptions{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}, []int{2, 3, 9, 7}},
			{tensor.ConvOptions{PadH: 1, PadW: 1, Groups: 3}, tensor.PoolOptions{KH: 2, KW: 2}, []int{20, 3, 6, 6}},
		} {
			in := fusedInputs(dt, 4, c.x, []int{6, 3 / max(c.co.Groups, 1), 3, 3}, []int{6})
			x, w, b := in[0], in[1], in[2]
			for _, act := range []device.Activation{device.ActNone, device.ActReLU} {
				wantY, wantArg := tensor.MaxPool2D(tensor.BiasAct(tensor.Conv2D(x, w, c.co), b, act, false), c.po)
				y, arg := tensor.Conv2DBiasActMaxPool(x, w, b, c.co, act, c.po)
				assertNear(t, wantY, y, "pooled output")
				assert.Equal(t, wantArg.Int64s(), arg.Int64s(), "positions of the maxima")
			}
		}
	}
}
