package autograd_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// TestOpInfoGradients checks the operations added for export:
// BatchNormInference and Embedding.
func TestOpInfoGradients(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(21, 22))
	mean, variance := randn(rng, 3), positive(rng, 3)
	for _, shape := range [][]int{{4, 3}, {2, 3, 5}, {2, 3, 2, 2}} {
		x := randn(rng, shape...)
		err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
			return autograd.BatchNormInference(xs[0], xs[1], xs[2], mean, variance, 1e-3)
		}, inputs(x, randn(rng, 3), randn(rng, 3)), autograd.GradCheckOptions{})
		require.NoError(t, err, "BatchNormInference %v", shape)
		err = autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
			return autograd.BatchNormInference(xs[0], nil, nil, mean, variance, 1e-5)
		}, inputs(x), autograd.GradCheckOptions{})
		require.NoError(t, err, "BatchNormInference without affine %v", shape)
	}
	idx := tensor.FromInt64([]int64{0, 2, 2, 4, 1, 0}, 2, 3)
	err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
		return autograd.Embedding(xs[0], idx)
	}, inputs(randn(rng, 5, 4)), autograd.GradCheckOptions{})
	require.NoError(t, err, "Embedding")
}

func TestBatchNormInferenceValues(t *testing.T) {
	t.Parallel()
	x := tensor.FromFloat64([]float64{1, 2, 3, 4}, 2, 2)
	mean := tensor.FromFloat64([]float64{1, 2}, 2)
	variance := tensor.FromFloat64([]float64{4, 1}, 2)
	w := autograd.Constant(tensor.FromFloat64([]float64{2, 3}, 2))
	b := autograd.Constant(tensor.FromFloat64([]float64{1, -1}, 2))
	y := autograd.BatchNormInference(autograd.Constant(x), w, b, mean, variance, 0)
	// (x-mean)/sqrt(var)·w + b per column.
	assert.InDeltaSlice(t, []float64{1, -1, 3, 5}, y.Value.Float64s(), 1e-12)
	assert.Panics(t, func() {
		autograd.BatchNormInference(autograd.Constant(x), w, nil, mean, variance, 0)
	})
	assert.Panics(t, func() {
		autograd.BatchNormInference(autograd.Constant(x), nil, nil, tensor.FromFloat64([]float64{1, 2, 3}, 3), variance, 0)
	})
}

func TestOpInfo(t *testing.T) {
	t.Parallel()
	x := autograd.Leaf(tensor.FromFloat32([]float32{1, -2, 3, -4, 5, -6}, 2, 3))
	assert.Nil(t, x.Op(), "a leaf has no operation")
	c := autograd.Constant(tensor.FromFloat32([]float32{1, 2, 3}, 3))
	assert.Nil(t, autograd.Add(c, c).Op(), "nothing is recorded without a gradient")
	assert.Nil(t, autograd.Relu(autograd.NoGrad(x)).Op(), "nor in no-grad mode")

	y := autograd.Add(x, c)
	op := y.Op()
	require.NotNil(t, op)
	assert.Equal(t, "Add", op.Name)
	assert.Nil(t, op.Attrs)
	assert.Equal(t, []*autograd.Var{x, c}, op.Inputs)

	cases := []struct {
		v     *autograd.Var
		name  string
		attrs any
	}{
		{autograd.MulScalar(x, 2.5), "MulScalar", autograd.ScalarAttrs{Value: 2.5}},
		{autograd.LeakyRelu(x, 0.1), "LeakyRelu", autograd.ScalarAttrs{Value: 0.1}},
		{autograd.Transpose(x, -1, 0), "Transpose", autograd.PermuteAttrs{Perm: []int{1, 0}}},
		{autograd.Permute(x, 1, -2), "Permute", autograd.PermuteAttrs{Perm: []int{1, 0}}},
		{autograd.Slice(x, -1, 1, 3), "Slice", autograd.SliceAttrs{Axis: 1, Start: 1, End: 3}},
		{autograd.SumAxes(x, []int{-1, 0}, true), "SumAxes", autograd.AxesAttrs{Axes: []int{0, 1}, Keep: true}},
		{autograd.SumAll(x), "SumAxes", autograd.AxesAttrs{}},
		{autograd.Max(x, -1, false), "Max", autograd.AxesAttrs{Axes: []int{1}}},
		{autograd.Unsqueeze(x, -1), "Unsqueeze", autograd.AxisAttrs{Axis: 2}},
		{autograd.Softmax(x, -1), "Softmax", autograd.AxisAttrs{Axis: 1}},
		{autograd.Concat(-1, x, x), "Concat", autograd.AxisAttrs{Axis: 1}},
		{autograd.Flatten(x, 0), "Flatten", autograd.AxisAttrs{Axis: 0}},
		{autograd.LinearAct(x, x, nil, device.ActReLU), "Linear", autograd.LinearAttrs{Act: device.ActReLU}},
		{autograd.Reshape(x, 3, 2), "Reshape", nil},
	}
	for _, c := range cases {
		op := c.v.Op()
		require.NotNil(t, op, c.name)
		assert.Equal(t, c.name, op.Name)
		assert.Equal(t, c.attrs, op.Attrs, c.name)
		assert.Empty(t, op.Recorder, c.name)
	}
	w := autograd.Leaf(tensor.RandNormal(rand.New(rand.NewPCG(1, 1)), 0, 1, 4, 1, 3, 3))
	img := autograd.Constant(tensor.RandNormal(rand.New(rand.NewPCG(1, 2)), 0, 1, 1, 1, 6, 6))
	co := tensor.ConvOptions{PadH: 1, PadW: 1}
	po := tensor.PoolOptions{KH: 2, KW: 2, StrideH: 2, StrideW: 2}
	conv := autograd.Conv2DActMaxPool(img, w, nil, co, device.ActReLU, po)
	assert.Equal(t, "Conv2DMaxPool", conv.Op().Name)
	assert.Equal(t, autograd.ConvAttrs{Conv: co, Act: device.ActReLU, Pool: po}, conv.Op().Attrs)
	assert.Equal(t, po, autograd.MaxPool2D(w, po).Op().Attrs)
}
