package tensor_test

import (
	"errors"
	"fmt"
	"math"
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

// TestAddActMatchesReference checks AddAct against act(a + b) computed
// element by element in the tensors' type (a NaN stays NaN, as in
// PyTorch), bit for bit, on the fused kernel (one shape, long enough for
// the vector loop and its tail) and on the composed fallback (broadcast,
// strided), with NaNs and infinities.
func TestAddActMatchesReference(t *testing.T) {
	act := func(a device.Activation, v float64) float64 {
		if a != device.ActNone && v < 0 {
			v = 0
		}
		if a == device.ActReLU6 && v > 6 {
			v = 6
		}
		return v
	}
	check := func(name string, dt device.DType, a, b *tensor.Tensor) {
		t.Helper()
		sum := a.Add(b) // the broadcast shape; the sum rounded to dt
		for _, ac := range []device.Activation{device.ActNone, device.ActReLU, device.ActReLU6} {
			got := tensor.AddAct(a, b, ac)
			require.Equal(t, sum.Shape(), got.Shape(), name)
			gv := got.Values()
			for i, v := range sum.Values() {
				want := act(ac, v)
				if math.Float64bits(want) != math.Float64bits(gv[i]) && !(math.IsNaN(want) && math.IsNaN(gv[i])) {
					t.Errorf("%s %v %v: element %d is %v, want %v", name, dt, ac, i, gv[i], want)
					break
				}
			}
		}
	}
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		for _, shapes := range [][2][]int{{{2, 3, 37}, {2, 3, 37}}, {{1000}, {1000}}, {{2, 3, 5}, {3, 1}}} {
			in := fusedInputs(dt, 3, shapes[0], shapes[1])
			a, b := in[0].MulScalar(4), in[1].MulScalar(4)
			if a.Len() == b.Len() {
				v := a.Values()
				v[0], v[1], v[2] = math.NaN(), math.Inf(1), math.Inf(-1)
				a = tensor.FromFloat64(v, a.Shape()...).Cast(dt)
			}
			check(fmt.Sprint(shapes[0], "+", shapes[1]), dt, a, b)
		}
		in := fusedInputs(dt, 4, []int{4, 6}, []int{6, 4})
		v := in[0].Values()
		v[5] = math.NaN()
		check("strided", dt, tensor.FromFloat64(v, 4, 6).Cast(dt), in[1].T())
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

// TestGELU checks the one-pass GELU and its gradient against the erf
// formulas in float64, element by element, over the normal range, the
// tails and the specials; a strided input takes the composed path and must
// agree too.
func TestGELU(t *testing.T) {
	xs := []float64{-10, -6, -3.5, -1, -0.25, -1e-8, 0, 1e-8, 0.5, 1, 2.5, 7, 40, math.Inf(1), math.Inf(-1), math.NaN()}
	dys := make([]float64, len(xs))
	for i := range dys {
		dys[i] = 1.5 - 0.25*float64(i%5)
	}
	cdf := func(x float64) float64 { return 0.5 * (1 + math.Erf(x/math.Sqrt2)) }
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		x := tensor.FromFloat64(xs, 4, 4).Cast(dt)
		dy := tensor.FromFloat64(dys, 4, 4).Cast(dt)
		y, dx := tensor.GELU(x).Values(), tensor.GELUGrad(dy, x).Values()
		xT := tensor.FromFloat64(xs, 4, 4).Cast(dt).T().T() // same values, a strided view
		yT, dxT := tensor.GELU(xT).Values(), tensor.GELUGrad(dy, xT).Values()
		for i, v := range xs {
			v = float64(float32(v)) // the float32 input's value
			wantY := v * cdf(v)
			wantDx := dys[i] * (cdf(v) + v*math.Exp(-v*v/2)/math.Sqrt(2*math.Pi))
			switch {
			case math.IsNaN(v):
				assert.True(t, math.IsNaN(y[i]) && math.IsNaN(dx[i]), "%v GELU(NaN)", dt)
				continue
			case math.IsInf(v, -1): // -Inf·0, as in PyTorch
				assert.True(t, math.IsNaN(y[i]) && math.IsNaN(dx[i]), "%v GELU(-Inf) = %v, %v", dt, y[i], dx[i])
				continue
			case math.IsInf(v, 1):
				assert.Equal(t, v, y[i], "%v GELU(+Inf)", dt)
				continue
			}
			tol := 1e-6 * math.Max(1, math.Abs(wantY))
			assert.InDelta(t, wantY, y[i], tol, "%v GELU(%v)", dt, v)
			assert.InDelta(t, wantDx, dx[i], 1e-6*math.Max(1, math.Abs(wantDx)), "%v GELU'(%v)", dt, v)
			assert.InDelta(t, y[i], yT[i], 1e-6*math.Max(1, math.Abs(wantY)), "%v strided GELU(%v)", dt, v)
			assert.InDelta(t, dx[i], dxT[i], 1e-6*math.Max(1, math.Abs(wantDx)), "%v strided GELU'(%v)", dt, v)
		}
	}
	assert.Panics(t, func() { tensor.GELUGrad(tensor.Zeros(2, 3), tensor.Zeros(3, 2)) })
}

// TestSoftmaxKernel checks the one-kernel softmax over the last axis and
// its gradient against the composed formulas (which a transposed view
// takes), in both float types, with masked (-Inf) entries, a fully masked
// row (NaN, as PyTorch) and large logits.
func TestSoftmaxKernel(t *testing.T) {
	inf := math.Inf(-1)
	vals := []float64{
		1, 2, 3, 4, 5,
		0, inf, 2, inf, -1,
		inf, inf, inf, inf, inf,
		1000, 999, -1000, 0, 1,
		-3, 0.5, 0.25, 7, 2,
		0.1, 0.2, 0.3, 0.4, 0.5,
	}
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		x := tensor.FromFloat64(vals, 6, 5).Cast(dt)
		xT := tensor.FromFloat64(vals, 6, 5).Cast(dt).T().Contiguous().T() // strided: composed
		y, yT := x.Softmax(-1), xT.Softmax(1)
		yv, yTv := y.Values(), yT.Values()
		for i := range yv {
			if i/5 == 2 {
				assert.True(t, math.IsNaN(yv[i]) && math.IsNaN(yTv[i]), "%v fully masked row: %v, %v", dt, yv[i], yTv[i])
				continue
			}
			assert.InDelta(t, yTv[i], yv[i], 1e-7, "%v softmax [%d]", dt, i)
		}
		for r := 0; r < 6; r++ {
			if r == 2 {
				continue
			}
			var s float64
			for _, v := range yv[r*5 : r*5+5] {
				s += v
			}
			assert.InDelta(t, 1, s, 1e-6, "%v row %d sums to 1", dt, r)
		}
		dy := tensor.RandNormal(rand.New(rand.NewPCG(1, 2)), 0, 1, 6, 5).Cast(dt)
		g, gT := tensor.SoftmaxGrad(dy, y, -1), tensor.SoftmaxGrad(dy, yT, 1)
		gv, gTv := g.Values(), gT.Values()
		for i := range gv {
			if i/5 == 2 {
				continue
			}
			assert.InDelta(t, gTv[i], gv[i], 1e-6, "%v softmax gradient [%d]", dt, i)
		}
	}
	// Another axis than the last is composed, and the same.
	x := tensor.RandNormal(rand.New(rand.NewPCG(3, 4)), 0, 2, 3, 4, 5)
	assertNear(t, x.Exp().Div(x.Exp().Sum(1, true)), x.Softmax(1), "axis 1")
	assert.Panics(t, func() { tensor.SoftmaxGrad(tensor.Zeros(2, 3), tensor.Zeros(3, 2), -1) })
}
