package onnx

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

func vqF(vals []float64, shape ...int) *autograd.Var {
	if len(shape) == 0 && len(vals) != 1 {
		shape = []int{len(vals)}
	}
	return autograd.Constant(tensor.FromFloat64(vals, shape...))
}

func vqI(vals []int64, shape ...int) *autograd.Var {
	if len(shape) == 0 && len(vals) != 1 {
		shape = []int{len(vals)}
	}
	return autograd.Constant(tensor.FromInt64(vals, shape...))
}

func vqInts(t *testing.T, v *autograd.Var) []int64 {
	t.Helper()
	require.Equal(t, device.Int64, v.Value.DType())
	return v.Value.Int64s()
}

func TestQuantizeLinearSaturation(t *testing.T) {
	t.Parallel()
	x := vqF([]float64{2.5, 3.5, -2.5, 300, -300, 0.49})
	// A negative zero point means int8; halves round to even.
	out, err := callOpT(t, "QuantizeLinear", 13, 1, nil, x, vqF([]float64{1}), vqI([]int64{-1}))
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 3, -3, 127, -128, -1}, vqInts(t, out[0]))
	// No zero point: uint8.
	out, err = callOpT(t, "QuantizeLinear", 10, 1, nil, x, vqF([]float64{2}))
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2, 0, 150, 0, 0}, vqInts(t, out[0]))
}

func TestQuantizeLinearPerAxis(t *testing.T) {
	t.Parallel()
	x := vqF([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	out, err := callOpT(t, "QuantizeLinear", 13, 1, []any{"axis", 0}, x, vqF([]float64{1, 2}), vqI([]int64{10, 20}))
	require.NoError(t, err)
	assert.Equal(t, []int64{11, 12, 13, 22, 22, 23}, vqInts(t, out[0]))
	back, err := callOpT(t, "DequantizeLinear", 13, 1, []any{"axis", -2}, out[0], vqF([]float64{1, 2}), vqI([]int64{10, 20}))
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 2, 3, 4, 4, 6}, back[0].Value.Values())
}

func TestDequantizeLinearGrad(t *testing.T) {
	t.Parallel()
	q := vqI([]int64{0, 3, 128, 255, 7, 9}, 2, 3)
	zp := vqI([]int64{128, 100})
	err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
		out, err := callOpT(t, "DequantizeLinear", 13, 1, []any{"axis", 0}, q, xs[0], zp)
		require.NoError(t, err)
		return out[0]
	}, []*tensor.Tensor{tensor.FromFloat64([]float64{0.5, 2}, 2)}, autograd.GradCheckOptions{})
	assert.NoError(t, err)
}

func TestDynamicQuantizeLinearZeros(t *testing.T) {
	t.Parallel()
	out, err := callOpT(t, "DynamicQuantizeLinear", 11, 3, nil, autograd.Constant(tensor.Zeros(2, 2)))
	require.NoError(t, err)
	assert.Equal(t, []int64{0, 0, 0, 0}, vqInts(t, out[0]))
	assert.Equal(t, 0.0, out[1].Value.Item())
	assert.Equal(t, 0.0, out[2].Value.Item())
}

func TestMatMulIntegerZeroPoints(t *testing.T) {
	t.Parallel()
	a := vqI([]int64{1, 2, 3, 4}, 2, 2)
	b := vqI([]int64{5, 6, 7, 8}, 2, 2)
	// Per-row zero point of A, per-column zero point of B.
	out, err := callOpT(t, "MatMulInteger", 10, 1, nil, a, b, vqI([]int64{1, 2}), vqI([]int64{5, 0}))
	require.NoError(t, err)
	// A-za = [[0 1] [1 2]], B-zb = [[0 6] [2 8]].
	assert.Equal(t, []int64{2, 8, 4, 22}, vqInts(t, out[0]))
}

func TestQLinearMatMulInt8(t *testing.T) {
	t.Parallel()
	a := vqI([]int64{-10, 20, 30, -40}, 2, 2)
	b := vqI([]int64{1, 2, 3, 4}, 2, 2)
	one := vqF([]float64{1})
	out, err := callOpT(t, "QLinearMatMul", 10, 1, nil, a, one, vqI([]int64{0}), b, one, vqI([]int64{0}), vqF([]float64{0.5}), vqI([]int64{-5}))
	require.NoError(t, err)
	// a·b = [[50 60] [-90 -100]]; /0.5 - 5 saturates to int8.
	assert.Equal(t, []int64{95, 115, -128, -128}, vqInts(t, out[0]))
}

func TestQLinearConvBias(t *testing.T) {
	t.Parallel()
	x := vqI([]int64{1, 2, 3, 4}, 1, 1, 2, 2)
	w := vqI([]int64{2, 4}, 2, 1, 1, 1)
	one := vqF([]float64{1})
	// Per-channel w_scale and w_zero_point, int32 bias.
	out, err := callOpT(t, "QLinearConv", 10, 1, nil, x, one, vqI([]int64{1}), w, vqF([]float64{1, 0.5}), vqI([]int64{1, 2}),
		one, vqI([]int64{0}), vqI([]int64{10, 0}))
	require.NoError(t, err)
	// channel 0: (x-1)*1+10; channel 1: (x-1)*2*0.5.
	assert.Equal(t, []int64{10, 11, 12, 13, 0, 1, 2, 3}, vqInts(t, out[0]))
}

func TestConvIntegerPadding(t *testing.T) {
	t.Parallel()
	x := vqI([]int64{5, 5, 5, 5}, 1, 1, 2, 2)
	w := vqI([]int64{1}, 1, 1, 1, 1)
	out, err := callOpT(t, "ConvInteger", 10, 1, []any{"pads", []int64{1, 0, 0, 0}}, x, w, vqI([]int64{5}))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 1, 3, 2}, out[0].Shape())
	assert.Equal(t, []int64{0, 0, 0, 0, 0, 0}, vqInts(t, out[0]))
}

func TestQuantErrors(t *testing.T) {
	t.Parallel()
	fx := vqF([]float64{1, 2, 3, 4}, 2, 2)
	ix := vqI([]int64{1, 2, 3, 4}, 2, 2)
	one := vqF([]float64{1})
	zero := vqI([]int64{0})
	cases := []struct {
		name, op string
		opset    int
		attrs    []any
		in       []*autograd.Var
		want     string
	}{
		{"per-axis before 13", "QuantizeLinear", 10, nil, []*autograd.Var{fx, vqF([]float64{1, 2})}, "opset 13"},
		{"scale length", "QuantizeLinear", 13, nil, []*autograd.Var{fx, vqF([]float64{1, 2, 3})}, "expected 2"},
		{"axis range", "QuantizeLinear", 13, []any{"axis", 5}, []*autograd.Var{fx, vqF([]float64{1, 2})}, "out of range"},
		{"zero point range", "QuantizeLinear", 13, nil, []*autograd.Var{fx, one, vqI([]int64{300})}, "outside"},
		{"int scale", "QuantizeLinear", 13, nil, []*autograd.Var{fx, zero}, "float"},
		{"float data", "DequantizeLinear", 13, nil, []*autograd.Var{fx, one}, "integer"},
		{"missing scale", "DequantizeLinear", 13, nil, []*autograd.Var{ix, nil}, "x_scale"},
		{"float data", "MatMulInteger", 10, nil, []*autograd.Var{fx, ix}, "integer"},
		{"inner sizes", "MatMulInteger", 10, nil, []*autograd.Var{ix, vqI([]int64{1, 2, 3}, 3, 1)}, "inner"},
		{"zero point shape", "MatMulInteger", 10, nil, []*autograd.Var{ix, ix, vqI([]int64{1, 2, 3})}, "a_zero_point"},
		{"missing y_zero_point", "QLinearMatMul", 10, nil, []*autograd.Var{ix, one, zero, ix, one, zero, one, nil}, "y_zero_point"},
		{"y_scale shape", "QLinearMatMul", 10, nil, []*autograd.Var{ix, one, zero, ix, one, zero, vqF([]float64{1, 2}), zero}, "y_scale"},
		{"conv rank", "ConvInteger", 10, nil, []*autograd.Var{ix, ix}, "N×C"},
		{"conv w zero point", "ConvInteger", 10, nil, []*autograd.Var{vqI([]int64{1, 2, 3, 4}, 1, 1, 2, 2), vqI([]int64{1}, 1, 1, 1, 1), nil, vqI([]int64{1, 2})}, "w_zero_point"},
		{"qlinearconv bias", "QLinearConv", 10, nil, []*autograd.Var{vqI([]int64{1, 2, 3, 4}, 1, 1, 2, 2), one, zero, vqI([]int64{1}, 1, 1, 1, 1), one, zero, one, zero, vqI([]int64{1, 2})}, "B"},
	}
	for _, tc := range cases {
		t.Run(tc.op+"/"+tc.name, func(t *testing.T) {
			_, err := callOpT(t, tc.op, tc.opset, 1, tc.attrs, tc.in...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.False(t, errors.Is(err, ErrUnsupported), "a bad input is not unsupported: %v", err)
		})
	}
}

// A symmetric int8 zero point (0) saturates at -128, not at 0: the
// interpreter tells the operator the declared type.
func TestQuantizeLinearDeclaredInt8(t *testing.T) {
	s := graphSpec{
		nodes: []*onnxpb.NodeProto{node("QuantizeLinear", "q", []string{"x", "scale", "zp"}, []string{"y"})},
		inits: []*onnxpb.TensorProto{
			initTensor(t, "scale", tensor.FromFloat32([]float32{0.5}), f32),
			initTensor(t, "zp", tensor.FromInt64([]int64{0}), onnxpb.TensorProto_INT8),
		},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, 4)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", onnxpb.TensorProto_INT8, 4)},
	}
	m := s.load(t)
	outs, err := m.Run(autograd.Constant(tensor.FromFloat32([]float32{-100, -1, 1.25, 100}, 4)))
	require.NoError(t, err)
	assert.Equal(t, []int64{-128, -2, 2, 127}, outs[0].Value.Int64s())
}
