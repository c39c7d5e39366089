package onnx

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// Tests of ops_nn.go and ops_pool.go: finite-difference gradients in
// float64 through every differentiable input, training-mode
// BatchNormalization, and errors (never panics) for bad attributes and
// inputs. Forward values are checked against PyTorch by the ONNX backend
// suite (cmd/onnxcheck).

// nnAttrs is a shorthand for a list of attributes.
func nnAttrs(a ...*onnxpb.AttributeProto) []*onnxpb.AttributeProto { return a }

// nnCall runs operator op of the given opset on in with nOut outputs, in
// training mode when setState is not nil (it receives the state
// updates); a panic comes back as an error starting with "panic".
func nnCall(op string, opset, nOut int, attrs []*onnxpb.AttributeProto, setState func(int, *tensor.Tensor) error,
	in ...*autograd.Var) (out []*autograd.Var, err error) {
	return runTestOp(op, opset, nOut, attrs, setState != nil, setState, in...)
}

// nnRand returns a float64 tensor of standard normal values.
func nnRand(rng *rand.Rand, shape ...int) *tensor.Tensor {
	return tensor.RandNormal(rng, 0, 1, shape...).Cast(device.Float64)
}

// nnPositive returns a float64 tensor with values in [0.5, 2).
func nnPositive(rng *rand.Rand, shape ...int) *tensor.Tensor {
	return tensor.RandUniform(rng, 0.5, 2, shape...).Cast(device.Float64)
}

type nnGradCase struct {
	name   string
	op     string
	opset  int
	attrs  []*onnxpb.AttributeProto
	inputs func(rng *rand.Rand) []*tensor.Tensor
}

func TestNNGrad(t *testing.T) {
	t.Parallel()
	shapes := func(gen func(*rand.Rand, ...int) *tensor.Tensor, ss ...[]int) func(*rand.Rand) []*tensor.Tensor {
		return func(rng *rand.Rand) []*tensor.Tensor {
			out := make([]*tensor.Tensor, len(ss))
			for i, s := range ss {
				out[i] = gen(rng, s...)
			}
			return out
		}
	}
	bnInputs := func(rng *rand.Rand) []*tensor.Tensor {
		return []*tensor.Tensor{nnRand(rng, 2, 3, 2, 2), nnRand(rng, 3), nnRand(rng, 3), nnRand(rng, 3), nnPositive(rng, 3)}
	}
	cases := []nnGradCase{
		{"conv group bias", "Conv", 13, nnAttrs(attrInt("group", 2), attrInts("pads", 1, 0, 1, 0), attrInts("strides", 2, 1)),
			shapes(nnRand, []int{2, 4, 5, 4}, []int{4, 2, 3, 2}, []int{4})},
		{"conv asymmetric dilated", "Conv", 13, nnAttrs(attrInts("pads", 2, 0, 1, 1), attrInts("dilations", 2, 1)),
			shapes(nnRand, []int{1, 2, 5, 5}, []int{3, 2, 2, 3})},
		{"conv 1-D same", "Conv", 13, nnAttrs(attrString("auto_pad", "SAME_LOWER"), attrInts("strides", 2)),
			shapes(nnRand, []int{2, 2, 7}, []int{3, 2, 4}, []int{3})},
		{"convtranspose direct", "ConvTranspose", 13, nnAttrs(attrInts("strides", 2, 3), attrInts("pads", 1, 0, 1, 0),
			attrInts("output_padding", 1, 2), attrInt("group", 2)),
			shapes(nnRand, []int{2, 4, 3, 2}, []int{4, 1, 3, 2}, []int{2})},
		{"convtranspose cropped", "ConvTranspose", 13, nnAttrs(attrInts("strides", 2, 2), attrInts("pads", 2, 0, 1, 1)),
			shapes(nnRand, []int{1, 2, 3, 3}, []int{2, 3, 3, 2}, []int{3})},
		{"convtranspose 1-D output_shape", "ConvTranspose", 13, nnAttrs(attrInts("strides", 2), attrInts("output_shape", 10)),
			shapes(nnRand, []int{1, 2, 4}, []int{2, 2, 3}, []int{2})},
		{"gemm linear", "Gemm", 13, nnAttrs(attrInt("transB", 1)),
			shapes(nnRand, []int{3, 4}, []int{5, 4}, []int{5})},
		{"gemm general", "Gemm", 13, nnAttrs(attrInt("transA", 1), attrFloat("alpha", 0.5), attrFloat("beta", 2)),
			shapes(nnRand, []int{4, 3}, []int{4, 5}, []int{3, 1})},
		{"matmul batched", "MatMul", 13, nil, shapes(nnRand, []int{2, 1, 3, 4}, []int{3, 4, 2})},
		{"matmul vectors", "MatMul", 13, nil, shapes(nnRand, []int{4}, []int{2, 4, 3})},
		{"batchnorm inference", "BatchNormalization", 15, nnAttrs(attrFloat("epsilon", 0.01)), bnInputs},
		{"batchnorm training_mode", "BatchNormalization", 15, nnAttrs(attrInt("training_mode", 1)),
			bnInputs}, // the running statistics do not enter Y: zero gradient
		{"instancenorm", "InstanceNormalization", 13, nil, shapes(nnRand, []int{2, 3, 2, 3}, []int{3}, []int{3})},
		{"layernorm axis 1", "LayerNormalization", 17, nnAttrs(attrInt("axis", 1)),
			shapes(nnRand, []int{2, 3, 4}, []int{3, 4}, []int{4})},
		{"layernorm no bias", "LayerNormalization", 17, nil, shapes(nnRand, []int{3, 5}, []int{5})},
		{"maxpool direct", "MaxPool", 12, nnAttrs(attrInts("kernel_shape", 3, 3), attrInts("strides", 2, 2), attrInts("pads", 1, 1, 1, 1)),
			shapes(nnRand, []int{1, 2, 5, 5})},
		{"maxpool dilated ceil", "MaxPool", 12, nnAttrs(attrInts("kernel_shape", 2, 2), attrInts("dilations", 2, 1),
			attrInt("ceil_mode", 1), attrInts("strides", 2, 2), attrInts("pads", 0, 1, 1, 0)),
			shapes(nnRand, []int{1, 2, 6, 5})},
		{"averagepool direct", "AveragePool", 11, nnAttrs(attrInts("kernel_shape", 3), attrInts("pads", 1, 1)),
			shapes(nnRand, []int{2, 2, 6})},
		{"averagepool ceil count_include_pad", "AveragePool", 11, nnAttrs(attrInts("kernel_shape", 3, 2), attrInts("strides", 2, 2),
			attrInts("pads", 2, 0, 0, 1), attrInt("ceil_mode", 1), attrInt("count_include_pad", 1)),
			shapes(nnRand, []int{1, 2, 6, 5})},
		{"globalaveragepool", "GlobalAveragePool", 13, nil, shapes(nnRand, []int{2, 3, 2, 3})},
		{"globalmaxpool", "GlobalMaxPool", 13, nil, shapes(nnRand, []int{2, 3, 4})},
		{"lrn", "LRN", 13, nnAttrs(attrInt("size", 4), attrFloat("alpha", 0.5)), shapes(nnRand, []int{1, 5, 2, 2})},
		{"dropout inference", "Dropout", 13, nil, shapes(nnRand, []int{2, 3})},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(uint64(i), 11))
			f := func(xs []*autograd.Var) *autograd.Var {
				out, err := nnCall(tc.op, tc.opset, 1, tc.attrs, nil, xs...)
				if err != nil {
					panic(err)
				}
				return out[0]
			}
			require.NotPanics(t, func() {
				require.NoError(t, autograd.GradCheck(f, tc.inputs(rng), autograd.GradCheckOptions{}))
			})
		})
	}
}

func TestNNBatchNormTraining(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	x := nnRand(rng, 4, 2, 3)
	scale, bias := tensor.FromFloat64([]float64{1, 2}, 2), tensor.FromFloat64([]float64{0, -1}, 2)
	mean, variance := tensor.FromFloat64([]float64{0.5, -0.5}, 2), tensor.FromFloat64([]float64{1, 4}, 2)
	state := map[int]*tensor.Tensor{}
	out, err := nnCall("BatchNormalization", 15, 3, nnAttrs(attrFloat("momentum", 0.75)),
		func(i int, t *tensor.Tensor) error { state[i] = t; return nil },
		autograd.Constant(x), autograd.Constant(scale), autograd.Constant(bias), autograd.Constant(mean), autograd.Constant(variance))
	require.NoError(t, err)
	require.Len(t, out, 3)

	// The batch statistics per channel, computed directly.
	xv := x.Values()
	n := 4 * 3
	for ch := range 2 {
		var sum, sq float64
		for b := range 4 {
			for k := range 3 {
				sum += xv[(b*2+ch)*3+k]
			}
		}
		m := sum / float64(n)
		for b := range 4 {
			for k := range 3 {
				d := xv[(b*2+ch)*3+k] - m
				sq += d * d
			}
		}
		biased := sq / float64(n)
		y := out[0].Value.Values()
		for b := range 4 {
			for k := range 3 {
				i := (b*2+ch)*3 + k
				want := (xv[i]-m)/math.Sqrt(biased+1e-5)*scale.Values()[ch] + bias.Values()[ch]
				assert.InDelta(t, want, y[i], 1e-9)
			}
		}
		// ONNX's outputs use the biased variance; the model's state
		// (PyTorch's running statistics) the unbiased one.
		assert.InDelta(t, 0.75*mean.Values()[ch]+0.25*m, out[1].Value.Values()[ch], 1e-12)
		assert.InDelta(t, 0.75*variance.Values()[ch]+0.25*biased, out[2].Value.Values()[ch], 1e-12)
		require.Contains(t, state, 3)
		require.Contains(t, state, 4)
		assert.InDelta(t, 0.75*mean.Values()[ch]+0.25*m, state[3].Values()[ch], 1e-12)
		assert.InDelta(t, 0.75*variance.Values()[ch]+0.25*biased, state[4].Values()[ch], 1e-12)
	}
}

// A node with training_mode = 1 uses the batch statistics when its
// running statistics are plain inputs (the ONNX spec), but follows the
// model's mode when they are the model's state (a model PyTorch exported
// for training, then evaluated).
func TestNNBatchNormTrainingModeAttr(t *testing.T) {
	t.Parallel()
	x := autograd.Constant(tensor.FromFloat64([]float64{1, 3, 5, 7}, 2, 2))
	one, zero := autograd.Constant(tensor.FromFloat64([]float64{1, 1}, 2)), autograd.Constant(tensor.FromFloat64([]float64{0, 0}, 2))
	attrs := nnAttrs(attrInt("training_mode", 1), attrFloat("epsilon", 0))
	isState := func(int, *tensor.Tensor) error { return nil }
	for _, tc := range []struct {
		name     string
		training bool
		setState func(int, *tensor.Tensor) error
		want     []float64
	}{
		{"inputs", false, nil, []float64{-1, -1, 1, 1}},
		{"state in eval", false, isState, []float64{1, 3, 5, 7}},
		{"state in training", true, isState, []float64{-1, -1, 1, 1}},
	} {
		out, err := runTestOp("BatchNormalization", 15, 1, attrs, tc.training, tc.setState, x, one, zero, zero, one)
		require.NoError(t, err, tc.name)
		assert.InDeltaSlice(t, tc.want, out[0].Value.Values(), 1e-12, tc.name)
	}
}

func TestNNDropout(t *testing.T) {
	t.Parallel()
	x := autograd.Constant(tensor.FromFloat32([]float32{1, 2, 3, 4}, 2, 2))
	out, err := nnCall("Dropout", 13, 2, nil, nil, x)
	require.NoError(t, err)
	assert.Same(t, x, out[0], "inference Dropout is the identity")
	assert.Equal(t, []int64{1, 1, 1, 1}, out[1].Value.Int64s())
	// Training with ratio 0 keeps everything.
	out, err = nnCall("Dropout", 13, 2, nil, nil, x, autograd.Constant(tensor.FromFloat32([]float32{0}, 1)),
		autograd.Constant(tensor.FromInt64([]int64{1})))
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2, 3, 4}, out[0].Value.Float32s())
	assert.Equal(t, []int64{1, 1, 1, 1}, out[1].Value.Int64s())
	// Opset 7 reads the ratio from the attribute.
	out, err = nnCall("Dropout", 7, 1, nnAttrs(attrFloat("ratio", 0.3)), nil, x)
	require.NoError(t, err)
	assert.Same(t, x, out[0])
}

func TestNNDropoutTraining(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	x := autograd.Leaf(tensor.Full(tensor.CPU(), device.Float64, 2, 100, 100))
	y, mask := dropout(x, 0.25, rng)
	m, yv := mask.Int64s(), y.Value.Values()
	kept := 0
	for i, k := range m {
		if k == 1 {
			kept++
			assert.InDelta(t, 2/0.75, yv[i], 1e-12)
		} else {
			assert.Zero(t, yv[i])
		}
	}
	assert.InDelta(t, 0.75, float64(kept)/float64(len(m)), 0.02)
	// The gradient is the same mask and scale.
	require.NoError(t, autograd.Backward(autograd.SumAll(y)))
	g := x.Grad.Values()
	for i, k := range m {
		assert.InDelta(t, float64(k)/0.75, g[i], 1e-12)
	}
}

func TestNNMaxPoolIndices(t *testing.T) {
	t.Parallel()
	// 1×1×3×4 with the maximum of each 2×2 window (stride 2) known.
	x := tensor.FromFloat32([]float32{
		1, 9, 2, 3,
		4, 5, 8, 6,
		7, 0, 1, 2,
	}, 1, 1, 3, 4)
	for _, order := range []int64{0, 1} {
		out, err := nnCall("MaxPool", 12, 2, nnAttrs(attrInts("kernel_shape", 2, 2), attrInts("strides", 2, 2),
			attrInt("ceil_mode", 1), attrInt("storage_order", order)), nil, autograd.Constant(x))
		require.NoError(t, err)
		assert.Equal(t, []float32{9, 8, 7, 2}, out[0].Value.Float32s())
		// (row, col) of the maxima: (0,1), (1,2), (2,0), (2,3).
		want := []int64{1, 6, 8, 11}
		if order == 1 {
			want = []int64{3, 7, 2, 11}
		}
		assert.Equal(t, want, out[1].Value.Int64s(), "storage_order %d", order)
	}
}

func TestNNErrors(t *testing.T) {
	t.Parallel()
	f := func(shape ...int) *autograd.Var { return autograd.Constant(tensor.Zeros(shape...)) }
	i64 := autograd.Constant(tensor.FromInt64([]int64{1, 2, 3, 4}, 1, 1, 2, 2))
	vec := f(3)
	cases := []struct {
		name        string
		op          string
		opset       int
		attrs       []*onnxpb.AttributeProto
		in          []*autograd.Var
		unsupported bool
	}{
		{"conv missing weight", "Conv", 13, nil, []*autograd.Var{f(1, 2, 5, 5)}, false},
		{"conv channel mismatch", "Conv", 13, nil, []*autograd.Var{f(1, 2, 5, 5), f(3, 3, 3, 3)}, false},
		{"conv bad group", "Conv", 13, nnAttrs(attrInt("group", 3)), []*autograd.Var{f(1, 2, 5, 5), f(3, 2, 3, 3)}, false},
		{"conv weight rank", "Conv", 13, nil, []*autograd.Var{f(1, 2, 5, 5), f(3, 2, 3)}, false},
		{"conv bias length", "Conv", 13, nil, []*autograd.Var{f(1, 2, 5, 5), f(3, 2, 3, 3), f(4)}, false},
		{"conv kernel_shape mismatch", "Conv", 13, nnAttrs(attrInts("kernel_shape", 2, 2)), []*autograd.Var{f(1, 2, 5, 5), f(3, 2, 3, 3)}, false},
		{"conv pads length", "Conv", 13, nnAttrs(attrInts("pads", 1, 1)), []*autograd.Var{f(1, 2, 5, 5), f(3, 2, 3, 3)}, false},
		{"conv negative pads", "Conv", 13, nnAttrs(attrInts("pads", 1, -1, 1, 1)), []*autograd.Var{f(1, 2, 5, 5), f(3, 2, 3, 3)}, false},
		{"conv zero stride", "Conv", 13, nnAttrs(attrInts("strides", 0, 1)), []*autograd.Var{f(1, 2, 5, 5), f(3, 2, 3, 3)}, false},
		{"conv bad auto_pad", "Conv", 13, nnAttrs(attrString("auto_pad", "SAME")), []*autograd.Var{f(1, 2, 5, 5), f(3, 2, 3, 3)}, false},
		{"conv kernel too large", "Conv", 13, nil, []*autograd.Var{f(1, 2, 2, 2), f(3, 2, 3, 3)}, false},
		{"conv integer", "Conv", 13, nil, []*autograd.Var{i64, i64}, false},
		{"convtranspose 3-D", "ConvTranspose", 13, nil, []*autograd.Var{f(1, 2, 3, 3, 3), f(2, 3, 1, 1, 1)}, true},
		{"conv 3-D weight rank", "Conv", 13, nil, []*autograd.Var{f(1, 2, 3, 3, 3), f(3, 2, 1, 1)}, false},
		{"conv rank 2", "Conv", 13, nil, []*autograd.Var{f(2, 5), f(3, 2)}, false},
		{"convtranspose channels", "ConvTranspose", 13, nil, []*autograd.Var{f(1, 2, 3, 3), f(3, 2, 3, 3)}, false},
		{"convtranspose output_padding length", "ConvTranspose", 13, nnAttrs(attrInts("output_padding", 1)),
			[]*autograd.Var{f(1, 2, 3, 3), f(2, 2, 3, 3)}, false},
		{"convtranspose empty output", "ConvTranspose", 13, nnAttrs(attrInts("pads", 3, 3, 3, 3)),
			[]*autograd.Var{f(1, 2, 1, 1), f(2, 2, 3, 3)}, false},
		{"convtranspose bias length", "ConvTranspose", 13, nil, []*autograd.Var{f(1, 2, 3, 3), f(2, 2, 3, 3), f(3)}, false},
		{"gemm inner", "Gemm", 13, nil, []*autograd.Var{f(2, 3), f(4, 5)}, false},
		{"gemm rank", "Gemm", 13, nil, []*autograd.Var{f(2, 3, 1), f(3, 5)}, false},
		{"gemm C shape", "Gemm", 13, nil, []*autograd.Var{f(2, 3), f(3, 5), f(3)}, false},
		{"matmul inner", "MatMul", 13, nil, []*autograd.Var{f(2, 3), f(4, 5)}, false},
		{"matmul batch", "MatMul", 13, nil, []*autograd.Var{f(2, 2, 3), f(3, 3, 5)}, false},
		{"matmul scalar", "MatMul", 13, nil, []*autograd.Var{autograd.Constant(tensor.Scalar(1)), f(3)}, false},
		{"matmul types", "MatMul", 13, nil, []*autograd.Var{f(2, 2), autograd.Constant(tensor.FromInt64([]int64{1, 2, 3, 4}, 2, 2))}, false},
		{"batchnorm scale length", "BatchNormalization", 15, nil, []*autograd.Var{f(2, 3, 2), f(2), vec, vec, vec}, false},
		{"batchnorm missing var", "BatchNormalization", 15, nil, []*autograd.Var{f(2, 3, 2), vec, vec, vec}, false},
		{"batchnorm spatial 0", "BatchNormalization", 7, nnAttrs(attrInt("spatial", 0)), []*autograd.Var{f(2, 3, 2), vec, vec, vec, vec}, true},
		{"instancenorm rank", "InstanceNormalization", 13, nil, []*autograd.Var{f(2, 3), vec, vec}, false},
		{"instancenorm scale", "InstanceNormalization", 13, nil, []*autograd.Var{f(2, 3, 4), f(2), vec}, false},
		{"layernorm axis", "LayerNormalization", 17, nnAttrs(attrInt("axis", 3)), []*autograd.Var{f(2, 3, 4), f(4)}, false},
		{"layernorm scale", "LayerNormalization", 17, nil, []*autograd.Var{f(2, 3, 4), f(3)}, false},
		{"maxpool no kernel", "MaxPool", 12, nil, []*autograd.Var{f(1, 1, 4, 4)}, false},
		{"maxpool storage_order", "MaxPool", 12, nnAttrs(attrInts("kernel_shape", 2, 2), attrInt("storage_order", 2)),
			[]*autograd.Var{f(1, 1, 4, 4)}, false},
		{"maxpool kernel too large", "MaxPool", 12, nnAttrs(attrInts("kernel_shape", 5, 5)), []*autograd.Var{f(1, 1, 4, 4)}, false},
		{"maxpool kernel length", "MaxPool", 12, nnAttrs(attrInts("kernel_shape", 2)), []*autograd.Var{f(1, 1, 4, 4)}, false},
		{"maxpool 3-D ceil_mode", "MaxPool", 12, nnAttrs(attrInts("kernel_shape", 2, 2, 2), attrInt("ceil_mode", 1)), []*autograd.Var{f(1, 1, 4, 4, 4)}, true},
		{"averagepool integer", "AveragePool", 11, nnAttrs(attrInts("kernel_shape", 2, 2)), []*autograd.Var{i64}, false},
		{"averagepool dilation zero", "AveragePool", 11, nnAttrs(attrInts("kernel_shape", 2, 2), attrInts("dilations", 0, 1)),
			[]*autograd.Var{f(1, 1, 4, 4)}, false},
		{"globalaveragepool rank", "GlobalAveragePool", 13, nil, []*autograd.Var{f(2, 3)}, false},
		{"globalmaxpool empty", "GlobalMaxPool", 13, nil, []*autograd.Var{f(2, 3, 0)}, false},
		{"dropout ratio", "Dropout", 13, nil, []*autograd.Var{f(2, 2), autograd.Constant(tensor.Scalar(1.5))}, false},
		{"dropout ratio shape", "Dropout", 13, nil, []*autograd.Var{f(2, 2), f(2)}, false},
		{"lrn size", "LRN", 13, nil, []*autograd.Var{f(1, 3, 2, 2)}, false},
		{"lrn rank", "LRN", 13, nnAttrs(attrInt("size", 3)), []*autograd.Var{f(1, 3)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := nnCall(tc.op, tc.opset, 1, tc.attrs, nil, tc.in...)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "panic")
			assert.Equal(t, tc.unsupported, errors.Is(err, ErrUnsupported), "%v", err)
		})
	}
}
