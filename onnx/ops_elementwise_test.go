package onnx

import (
	"errors"
	"fmt"
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

// ewRun runs one node of operator op at the given opset on the CPU.
// attrs values are int64, float64 or string; a nil input is omitted.
func ewRun(op string, opset int, attrs map[string]any, ins ...*autograd.Var) ([]*autograd.Var, error) {
	var list []*onnxpb.AttributeProto
	for k, v := range attrs {
		a, err := attrOf(k, v)
		if err != nil {
			return nil, err
		}
		list = append(list, a)
	}
	return callOp(op, opset, 1, list, ins...)
}

// ewConst returns a constant Var.
func ewConst(t *tensor.Tensor) *autograd.Var { return autograd.Constant(t) }

// ewF64 returns a float64 constant of the given values and shape.
func ewF64(vals []float64, shape ...int) *autograd.Var {
	return ewConst(tensor.FromFloat64(vals, shape...))
}

// ewI64 returns an Int64 constant of the given values and shape.
func ewI64(vals []int64, shape ...int) *autograd.Var {
	return ewConst(tensor.FromInt64(vals, shape...))
}

// ewAwayFrom returns float64 values in [lo, hi) at least 0.05 away from
// the kinks, so that finite differences do not straddle one.
func ewAwayFrom(rng *rand.Rand, lo, hi float64, kinks []float64, shape ...int) *tensor.Tensor {
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

func TestElementwiseGrad(t *testing.T) {
	t.Parallel()
	type gcase struct {
		op     string
		opset  int
		attrs  map[string]any
		shapes [][]int
		lo, hi float64
		kinks  []float64
	}
	bin := [][]int{{2, 3, 4}, {3, 1}}
	cases := []gcase{
		{"Add", 17, nil, bin, -2, 2, nil},
		{"Sub", 17, nil, bin, -2, 2, nil},
		{"Mul", 17, nil, bin, -2, 2, nil},
		{"Div", 17, nil, bin, 0.5, 2, nil},
		{"Pow", 17, nil, bin, 0.5, 2, nil},
		{"Pow", 17, nil, [][]int{{2, 3}, {}}, 0.5, 2, nil},
		{"Max", 17, nil, [][]int{{2, 3}, {3}, {2, 1}}, -2, 2, nil},
		{"Min", 17, nil, [][]int{{2, 3}, {3}, {2, 1}}, -2, 2, nil},
		{"Sum", 17, nil, [][]int{{2, 3}, {3}, {2, 1}}, -2, 2, nil},
		{"Mean", 17, nil, [][]int{{2, 3}, {3}, {2, 1}}, -2, 2, nil},
		{"Sqrt", 17, nil, [][]int{{3, 4}}, 0.5, 3, nil},
		{"Exp", 17, nil, [][]int{{3, 4}}, -2, 2, nil},
		{"Log", 17, nil, [][]int{{3, 4}}, 0.5, 3, nil},
		{"Neg", 17, nil, [][]int{{3, 4}}, -2, 2, nil},
		{"Abs", 17, nil, [][]int{{3, 4}}, -2, 2, []float64{0}},
		{"Reciprocal", 17, nil, [][]int{{3, 4}}, 0.5, 2, nil},
		{"Erf", 17, nil, [][]int{{3, 4}}, -2, 2, nil},
		{"Sin", 17, nil, [][]int{{3, 4}}, -3, 3, nil},
		{"Cos", 17, nil, [][]int{{3, 4}}, -3, 3, nil},
		{"Tan", 17, nil, [][]int{{3, 4}}, -1, 1, nil},
		{"Asin", 17, nil, [][]int{{3, 4}}, -0.9, 0.9, nil},
		{"Acos", 17, nil, [][]int{{3, 4}}, -0.9, 0.9, nil},
		{"Atan", 17, nil, [][]int{{3, 4}}, -3, 3, nil},
		{"Sinh", 17, nil, [][]int{{3, 4}}, -2, 2, nil},
		{"Cosh", 17, nil, [][]int{{3, 4}}, -2, 2, nil},
		{"Asinh", 17, nil, [][]int{{3, 4}}, -2, 2, nil},
		{"Acosh", 17, nil, [][]int{{3, 4}}, 1.2, 3, nil},
		{"Atanh", 17, nil, [][]int{{3, 4}}, -0.9, 0.9, nil},
		{"Identity", 17, nil, [][]int{{3, 4}}, -2, 2, nil},
		{"Cast", 17, map[string]any{"to": int64(onnxpb.TensorProto_DOUBLE)}, [][]int{{3, 4}}, -2, 2, nil},
		{"Relu", 17, nil, [][]int{{3, 4}}, -2, 2, []float64{0}},
		{"LeakyRelu", 17, map[string]any{"alpha": 0.1}, [][]int{{3, 4}}, -2, 2, []float64{0}},
		{"PRelu", 17, nil, [][]int{{2, 3, 4}, {3, 1}}, -2, 2, []float64{0}},
		{"Elu", 17, map[string]any{"alpha": 0.5}, [][]int{{3, 4}}, -2, 2, []float64{0}},
		{"Selu", 17, nil, [][]int{{3, 4}}, -2, 2, []float64{0}},
		{"Celu", 17, map[string]any{"alpha": 2.0}, [][]int{{3, 4}}, -2, 2, []float64{0}},
		{"ThresholdedRelu", 17, map[string]any{"alpha": 0.5}, [][]int{{3, 4}}, -2, 2, []float64{0.5}},
		{"Sigmoid", 17, nil, [][]int{{3, 4}}, -3, 3, nil},
		{"HardSigmoid", 17, nil, [][]int{{3, 4}}, -4, 4, []float64{-2.5, 2.5}},
		{"HardSwish", 17, nil, [][]int{{3, 4}}, -4, 4, []float64{-3, 3}},
		{"Tanh", 17, nil, [][]int{{3, 4}}, -2, 2, nil},
		{"Softplus", 17, nil, [][]int{{3, 4}}, -3, 3, nil},
		{"Softsign", 17, nil, [][]int{{3, 4}}, -3, 3, []float64{0}},
		{"Clip", 17, nil, [][]int{{3, 4}}, -2, 2, nil},
		{"Shrink", 17, map[string]any{"lambd": 0.5, "bias": 0.3}, [][]int{{3, 4}}, -2, 2, []float64{-0.5, 0.5}},
		{"Clip", 9, map[string]any{"min": -0.5, "max": 1.0}, [][]int{{3, 4}}, -2, 2, []float64{-0.5, 1}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d/%v", tc.op, tc.opset, tc.shapes), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(1, uint64(len(tc.op))))
			var ins []*tensor.Tensor
			for _, s := range tc.shapes {
				ins = append(ins, ewAwayFrom(rng, tc.lo, tc.hi, tc.kinks, s...))
			}
			err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
				outs, err := ewRun(tc.op, tc.opset, tc.attrs, xs...)
				require.NoError(t, err)
				return outs[0]
			}, ins, autograd.GradCheckOptions{})
			require.NoError(t, err)
		})
	}
	// Clip with bounds as inputs (opset 11+): the gradient reaches X.
	t.Run("Clip/inputs", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		x := ewAwayFrom(rng, -2, 2, []float64{-1, 0.5}, 3, 4)
		err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
			outs, err := ewRun("Clip", 13, nil, xs[0], ewF64([]float64{-1}), ewF64([]float64{0.5}))
			require.NoError(t, err)
			return outs[0]
		}, []*tensor.Tensor{x}, autograd.GradCheckOptions{})
		require.NoError(t, err)
	})
	// Where: gradients reach X and Y, not the condition.
	t.Run("Where", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 8))
		cond := ewI64([]int64{1, 0, 1}, 3)
		err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
			outs, err := ewRun("Where", 16, nil, cond, xs[0], xs[1])
			require.NoError(t, err)
			return outs[0]
		}, []*tensor.Tensor{ewAwayFrom(rng, -1, 1, nil, 2, 3), ewAwayFrom(rng, -1, 1, nil, 2, 1)}, autograd.GradCheckOptions{})
		require.NoError(t, err)
	})
}

func TestElementwiseValues(t *testing.T) {
	t.Parallel()
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		name  string
		op    string
		opset int
		attrs map[string]any
		ins   []*autograd.Var
		want  *tensor.Tensor
	}{
		{"int div truncates", "Div", 14, nil, []*autograd.Var{ewI64([]int64{7, -7, 7, -7}), ewI64([]int64{2, 2, -2, -2})},
			tensor.FromInt64([]int64{3, -3, -3, 3})},
		{"int mod floors", "Mod", 13, nil, []*autograd.Var{ewI64([]int64{7, -7, 7, -7}), ewI64([]int64{3, 3, -3, -3})},
			tensor.FromInt64([]int64{1, 2, -2, -1})},
		{"int fmod truncates", "Mod", 13, map[string]any{"fmod": int64(1)}, []*autograd.Var{ewI64([]int64{7, -7, 7, -7}), ewI64([]int64{3, 3, -3, -3})},
			tensor.FromInt64([]int64{1, -1, 1, -1})},
		{"float fmod", "Mod", 13, map[string]any{"fmod": int64(1)}, []*autograd.Var{ewF64([]float64{5.5, -5.5}), ewF64([]float64{2})},
			tensor.FromFloat64([]float64{1.5, -1.5})},
		{"int add", "Add", 14, nil, []*autograd.Var{ewI64([]int64{1, 2, 3}), ewI64([]int64{10})}, tensor.FromInt64([]int64{11, 12, 13})},
		{"int pow", "Pow", 15, nil, []*autograd.Var{ewI64([]int64{2, 3, -2}), ewI64([]int64{3})}, tensor.FromInt64([]int64{8, 27, -8})},
		{"float pow int exponent", "Pow", 15, nil, []*autograd.Var{ewF64([]float64{2, 0.5}), ewI64([]int64{-1, 2})}, tensor.FromFloat64([]float64{0.5, 0.25})},
		{"pow scalar broadcast", "Pow", 15, nil, []*autograd.Var{ewF64([]float64{3}), ewF64([]float64{2}, 1, 1)}, tensor.FromFloat64([]float64{9}, 1, 1)},
		{"int max", "Max", 13, nil, []*autograd.Var{ewI64([]int64{1, 5}), ewI64([]int64{3, 2}), ewI64([]int64{0})}, tensor.FromInt64([]int64{3, 5})},
		{"mean", "Mean", 13, nil, []*autograd.Var{ewF64([]float64{1, 5}), ewF64([]float64{3})}, tensor.FromFloat64([]float64{2, 4})},
		{"int clip", "Clip", 13, nil, []*autograd.Var{ewI64([]int64{-5, 0, 5}), ewI64([]int64{-1}, 1), nil}, tensor.FromInt64([]int64{-1, 0, 5})},
		{"clip min > max", "Clip", 13, nil, []*autograd.Var{ewF64([]float64{-5, 0, 5}), ewF64([]float64{2}), ewF64([]float64{1})}, tensor.FromFloat64([]float64{1, 1, 1})},
		{"int abs", "Abs", 13, nil, []*autograd.Var{ewI64([]int64{-3, 4})}, tensor.FromInt64([]int64{3, 4})},
		{"int sign", "Sign", 13, nil, []*autograd.Var{ewI64([]int64{-3, 0, 4})}, tensor.FromInt64([]int64{-1, 0, 1})},
		{"round half even", "Round", 11, nil, []*autograd.Var{ewF64([]float64{0.5, 1.5, 2.5, -0.5, -1.5})}, tensor.FromFloat64([]float64{0, 2, 2, 0, -2})},
		{"cast float to int8 wraps", "Cast", 13, map[string]any{"to": int64(onnxpb.TensorProto_INT8)},
			[]*autograd.Var{ewF64([]float64{-1.7, 1.7, 200, -200})}, tensor.FromInt64([]int64{-1, 1, -56, 56})},
		{"cast int to uint8 wraps", "Cast", 13, map[string]any{"to": int64(onnxpb.TensorProto_UINT8)},
			[]*autograd.Var{ewI64([]int64{300, -1, 255})}, tensor.FromInt64([]int64{44, 255, 255})},
		{"cast to bool", "Cast", 13, map[string]any{"to": int64(onnxpb.TensorProto_BOOL)},
			[]*autograd.Var{ewF64([]float64{0, -0.1, 3, nan})}, tensor.FromInt64([]int64{0, 1, 1, 1})},
		{"cast int to float", "Cast", 13, map[string]any{"to": int64(onnxpb.TensorProto_FLOAT)},
			[]*autograd.Var{ewI64([]int64{3, -4})}, tensor.FromFloat32([]float32{3, -4})},
		{"castlike", "CastLike", 15, nil, []*autograd.Var{ewF64([]float64{1.5}), ewConst(tensor.FromFloat32([]float32{0}))},
			tensor.FromFloat32([]float32{1.5})},
		{"equal int", "Equal", 13, nil, []*autograd.Var{ewI64([]int64{1, 2}), ewI64([]int64{2})}, tensor.FromInt64([]int64{0, 1})},
		{"less or equal", "LessOrEqual", 16, nil, []*autograd.Var{ewF64([]float64{1, 2, 3}), ewF64([]float64{2})}, tensor.FromInt64([]int64{1, 1, 0})},
		{"not", "Not", 7, nil, []*autograd.Var{ewI64([]int64{0, 1})}, tensor.FromInt64([]int64{1, 0})},
		{"and", "And", 7, nil, []*autograd.Var{ewI64([]int64{0, 1, 0, 1}), ewI64([]int64{0, 0, 1, 1})}, tensor.FromInt64([]int64{0, 0, 0, 1})},
		{"or", "Or", 7, nil, []*autograd.Var{ewI64([]int64{0, 1, 0, 1}), ewI64([]int64{0, 0, 1, 1})}, tensor.FromInt64([]int64{0, 1, 1, 1})},
		{"xor", "Xor", 7, nil, []*autograd.Var{ewI64([]int64{0, 1, 0, 1}), ewI64([]int64{0, 0, 1, 1})}, tensor.FromInt64([]int64{0, 1, 1, 0})},
		{"where int", "Where", 16, nil, []*autograd.Var{ewI64([]int64{1, 0}), ewI64([]int64{5, 6}), ewI64([]int64{-1})}, tensor.FromInt64([]int64{5, -1})},
		{"isnan", "IsNaN", 13, nil, []*autograd.Var{ewF64([]float64{nan, inf, 1})}, tensor.FromInt64([]int64{1, 0, 0})},
		{"isinf", "IsInf", 10, nil, []*autograd.Var{ewF64([]float64{nan, inf, -inf, 1})}, tensor.FromInt64([]int64{0, 1, 1, 0})},
		{"isinf positive", "IsInf", 10, map[string]any{"detect_negative": int64(0)}, []*autograd.Var{ewF64([]float64{nan, inf, -inf, 1})}, tensor.FromInt64([]int64{0, 1, 0, 0})},
		{"isinf negative", "IsInf", 10, map[string]any{"detect_positive": int64(0)}, []*autograd.Var{ewF64([]float64{nan, inf, -inf, 1})}, tensor.FromInt64([]int64{0, 0, 1, 0})},
		{"softplus large", "Softplus", 7, nil, []*autograd.Var{ewF64([]float64{-1000, 1000})}, tensor.FromFloat64([]float64{0, 1000})},
		{"shrink", "Shrink", 9, map[string]any{"lambd": 1.0, "bias": 0.5}, []*autograd.Var{ewF64([]float64{-2, -1, 0, 1, 2})}, tensor.FromFloat64([]float64{-1.5, 0, 0, 0, 1.5})},
		{"shrink int", "Shrink", 9, map[string]any{"lambd": 1.0, "bias": 1.0}, []*autograd.Var{ewI64([]int64{-3, 1, 3})}, tensor.FromInt64([]int64{-2, 0, 2})},
		{"prelu int", "PRelu", 16, nil, []*autograd.Var{ewI64([]int64{-4, 4}), ewI64([]int64{2})}, tensor.FromInt64([]int64{-8, 4})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs, err := ewRun(tc.op, tc.opset, tc.attrs, tc.ins...)
			require.NoError(t, err)
			require.Len(t, outs, 1)
			got := outs[0].Value
			assert.Equal(t, tc.want.DType(), got.DType())
			assert.Equal(t, tc.want.Shape(), got.Shape())
			assert.InDeltaSlice(t, tc.want.Values(), got.Values(), 1e-12)
		})
	}
}

func TestElementwiseErrors(t *testing.T) {
	t.Parallel()
	f32 := ewConst(tensor.FromFloat32([]float32{1, 2, 3}))
	f64 := ewF64([]float64{1, 2, 3})
	i64 := ewI64([]int64{1, 0, 1})
	for _, tc := range []struct {
		name        string
		op          string
		opset       int
		attrs       map[string]any
		ins         []*autograd.Var
		want        []string
		unsupported bool
	}{
		{"mixed types", "Add", 14, nil, []*autograd.Var{f32, f64}, []string{"float32", "float64", "B"}, false},
		{"no broadcast", "Mul", 14, nil, []*autograd.Var{f64, ewF64([]float64{1, 2})}, []string{"[2]", "[3]"}, false},
		{"missing B", "Sub", 14, nil, []*autograd.Var{f64}, []string{"input 1 (B) is missing"}, false},
		{"legacy broadcast", "Add", 14, map[string]any{"broadcast": int64(1)}, []*autograd.Var{f64, f64}, []string{"broadcast"}, true},
		{"float mod without fmod", "Mod", 13, nil, []*autograd.Var{f64, f64}, []string{"fmod"}, false},
		{"bad fmod", "Mod", 13, map[string]any{"fmod": int64(2)}, []*autograd.Var{i64, i64}, []string{"fmod is 2"}, false},
		{"sqrt of int", "Sqrt", 13, nil, []*autograd.Var{i64}, []string{"integer", "Sqrt"}, false},
		{"floor of int", "Floor", 13, nil, []*autograd.Var{i64}, []string{"integer", "Floor"}, false},
		{"and of float", "And", 7, nil, []*autograd.Var{f64, i64}, []string{"A", "bool"}, false},
		{"where mixed", "Where", 16, nil, []*autograd.Var{i64, f64, f32}, []string{"Y", "float32"}, false},
		{"where broadcast", "Where", 16, nil, []*autograd.Var{ewI64([]int64{1, 0}), f64, f64}, []string{"[3]", "[2]"}, false},
		{"cast to string", "Cast", 13, map[string]any{"to": int64(onnxpb.TensorProto_STRING)}, []*autograd.Var{f64}, []string{"string"}, true},
		{"cast to float16", "Cast", 13, map[string]any{"to": int64(onnxpb.TensorProto_FLOAT16)}, []*autograd.Var{f64}, []string{"float16"}, true},
		{"cast to nonsense", "Cast", 13, map[string]any{"to": int64(999)}, []*autograd.Var{f64}, []string{"999"}, false},
		{"cast without to", "Cast", 13, nil, []*autograd.Var{f64}, []string{"to is missing"}, false},
		{"prelu slope too big", "PRelu", 16, nil, []*autograd.Var{f64, ewF64([]float64{1, 2, 3}, 3, 1)}, []string{"slope", "[3 1]", "[3]"}, false},
		{"clip bound not scalar", "Clip", 13, nil, []*autograd.Var{f64, ewF64([]float64{1, 2})}, []string{"min", "[2]", "scalar"}, false},
		{"clip bound type", "Clip", 13, nil, []*autograd.Var{f64, nil, ewConst(tensor.FromFloat32([]float32{1}))}, []string{"max", "float32"}, false},
		{"celu alpha 0", "Celu", 13, map[string]any{"alpha": 0.0}, []*autograd.Var{f64}, []string{"alpha"}, false},
		{"max no inputs", "Max", 13, nil, nil, []string{"at least one input"}, false},
		{"sum mixed", "Sum", 13, nil, []*autograd.Var{f64, f64, f32}, []string{"data_2", "float32"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { _, err = ewRun(tc.op, tc.opset, tc.attrs, tc.ins...) })
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Equal(t, tc.unsupported, errors.Is(err, ErrUnsupported), "errors.Is(err, ErrUnsupported) for %v", err)
		})
	}
}

// TestElementwiseGradInt checks that integer results carry no gradient
// and that Cast between float types passes it through.
func TestElementwiseGradInt(t *testing.T) {
	t.Parallel()
	x := autograd.Leaf(tensor.FromFloat32([]float32{-1.5, 2.5}))
	outs, err := ewRun("Cast", 13, map[string]any{"to": int64(onnxpb.TensorProto_INT32)}, x)
	require.NoError(t, err)
	assert.False(t, outs[0].RequiresGrad())
	assert.Equal(t, device.Int64, outs[0].Value.DType())
	outs, err = ewRun("Greater", 13, nil, x, ewConst(tensor.FromFloat32([]float32{0})))
	require.NoError(t, err)
	assert.False(t, outs[0].RequiresGrad())
	outs, err = ewRun("Cast", 13, map[string]any{"to": int64(onnxpb.TensorProto_DOUBLE)}, x)
	require.NoError(t, err)
	require.True(t, outs[0].RequiresGrad())
	require.NoError(t, autograd.Backward(autograd.SumAll(autograd.MulScalar(outs[0], 3))))
	assert.Equal(t, []float32{3, 3}, x.Grad.Float32s())
}
