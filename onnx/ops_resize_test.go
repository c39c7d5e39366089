package onnx

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// Tests of ops_resize.go (Resize, Upsample) and the helpers shared with
// ops_rnn_test.go. The ONNX conformance suite and scripts/onnx_rnn_check.py
// check the values against the references; these tests add gradients,
// corner cases and errors.

func rzF32(vals []float32, shape ...int) *autograd.Var {
	return autograd.Constant(tensor.FromFloat32(vals, shape...))
}

func rzI64(vals ...int64) *autograd.Var {
	return autograd.Constant(tensor.FromInt64(vals, len(vals)))
}

func rzRand(rng *rand.Rand, shape ...int) *tensor.Tensor {
	return tensor.RandUniform(rng, -1, 1, shape...).Cast(device.Float64)
}

func TestResizeValues(t *testing.T) {
	t.Parallel()
	x2x2 := rzF32([]float32{1, 2, 3, 4}, 1, 1, 2, 2)
	cases := []struct {
		name  string
		op    string
		opset int
		attrs []*onnxpb.AttributeProto
		in    []*autograd.Var
		shape []int
		want  []float32
	}{
		{"upsample7 nearest", "Upsample", 7, []*onnxpb.AttributeProto{attrFloats("scales", 1, 1, 2, 2)},
			[]*autograd.Var{x2x2}, []int{1, 1, 4, 4},
			[]float32{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}},
		{"upsample7 linear", "Upsample", 7, []*onnxpb.AttributeProto{attrFloats("scales", 1, 1, 1, 2), attrString("mode", "linear")},
			[]*autograd.Var{x2x2}, []int{1, 1, 2, 4},
			[]float32{1, 1.5, 2, 2, 3, 3.5, 4, 4}},
		{"upsample9 linear", "Upsample", 9, []*onnxpb.AttributeProto{attrString("mode", "linear")},
			[]*autograd.Var{x2x2, rzF32([]float32{1, 1, 2, 1}, 4)}, []int{1, 1, 4, 2},
			[]float32{1, 2, 2, 3, 3, 4, 3, 4}},
		{"resize10 nearest down", "Resize", 10, nil,
			[]*autograd.Var{rzF32([]float32{1, 2, 3, 4}, 1, 4), rzF32([]float32{1, 0.5}, 2)}, []int{1, 2},
			[]float32{1, 3}},
		{"resize13 half_pixel linear", "Resize", 13, []*onnxpb.AttributeProto{attrString("mode", "linear")},
			[]*autograd.Var{rzF32([]float32{1, 2}, 2), nil, rzF32([]float32{2}, 1)}, []int{4},
			[]float32{1, 1.25, 1.75, 2}},
		{"resize13 align_corners linear sizes", "Resize", 13,
			[]*onnxpb.AttributeProto{attrString("mode", "linear"), attrString("coordinate_transformation_mode", "align_corners")},
			[]*autograd.Var{rzF32([]float32{0, 3}, 2), nil, nil, rzI64(4)}, []int{4},
			[]float32{0, 1, 2, 3}},
		{"resize11 empty scales with sizes", "Resize", 11, nil,
			[]*autograd.Var{rzF32([]float32{5, 6}, 2), rzF32(nil, 0), rzF32(nil, 0), rzI64(3)}, []int{3},
			[]float32{5, 5, 6}},
		{"tf_crop_and_resize extrapolation", "Resize", 13,
			[]*onnxpb.AttributeProto{attrString("mode", "linear"), attrString("coordinate_transformation_mode", "tf_crop_and_resize"), attrFloat("extrapolation_value", 10)},
			[]*autograd.Var{rzF32([]float32{0, 4}, 2), rzF32([]float32{0.5, 1.5}, 2), nil, rzI64(3)}, []int{3},
			[]float32{2, 4, 10}},
		{"resize identity", "Resize", 13, nil,
			[]*autograd.Var{x2x2, nil, rzF32([]float32{1, 1, 1, 1}, 4)}, []int{1, 1, 2, 2},
			[]float32{1, 2, 3, 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := callOp(tc.op, tc.opset, 1, tc.attrs, tc.in...)
			require.NoError(t, err)
			require.Equal(t, tc.shape, out[0].Shape())
			assert.InDeltaSlice(t, tc.want, out[0].Value.Float32s(), 1e-6)
		})
	}
}

func TestResizeNearestInt64(t *testing.T) {
	t.Parallel()
	x := autograd.Constant(tensor.FromInt64([]int64{7, 8, 9}, 3))
	out, err := callOp("Resize", 13, 1, []*onnxpb.AttributeProto{attrString("coordinate_transformation_mode", "asymmetric"), attrString("nearest_mode", "floor")},
		x, nil, rzF32([]float32{2}, 1))
	require.NoError(t, err)
	assert.Equal(t, []int64{7, 7, 8, 8, 9, 9}, out[0].Value.Int64s())

	_, err = callOp("Resize", 13, 1, []*onnxpb.AttributeProto{attrString("mode", "linear")}, x, nil, rzF32([]float32{2}, 1))
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrUnsupported), "%v", err)
}

// TestResizeGrad checks the gradient with respect to the data in float64
// for every mode and some coordinate transformations.
func TestResizeGrad(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	x := rzRand(rng, 1, 2, 3, 4)
	cases := []struct {
		name  string
		attrs []*onnxpb.AttributeProto
		sizes []int64
	}{
		{"nearest up", []*onnxpb.AttributeProto{attrString("mode", "nearest")}, []int64{1, 2, 5, 7}},
		{"linear up", []*onnxpb.AttributeProto{attrString("mode", "linear")}, []int64{1, 2, 6, 9}},
		{"linear down align_corners", []*onnxpb.AttributeProto{attrString("mode", "linear"), attrString("coordinate_transformation_mode", "align_corners")}, []int64{1, 2, 2, 3}},
		{"cubic exclude_outside", []*onnxpb.AttributeProto{attrString("mode", "cubic"), attrInt("exclude_outside", 1), attrFloat("cubic_coeff_a", -0.5)}, []int64{1, 2, 5, 6}},
		{"cubic asymmetric", []*onnxpb.AttributeProto{attrString("mode", "cubic"), attrString("coordinate_transformation_mode", "asymmetric")}, []int64{1, 2, 4, 3}},
		{"channels too", []*onnxpb.AttributeProto{attrString("mode", "linear"), attrString("coordinate_transformation_mode", "pytorch_half_pixel")}, []int64{1, 3, 1, 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
				out, err := callOp("Resize", 13, 1, tc.attrs, xs[0], nil, nil, rzI64(tc.sizes...))
				require.NoError(t, err)
				return out[0]
			}, []*tensor.Tensor{x}, autograd.GradCheckOptions{})
			assert.NoError(t, err)
		})
	}
	t.Run("tf_crop_and_resize", func(t *testing.T) {
		t.Parallel()
		roi := autograd.Constant(tensor.FromFloat64([]float64{0, 0, 0.2, -0.5, 1, 1, 0.9, 1.2}, 8))
		attrs := []*onnxpb.AttributeProto{attrString("mode", "linear"), attrString("coordinate_transformation_mode", "tf_crop_and_resize"), attrFloat("extrapolation_value", 2)}
		err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
			out, err := callOp("Resize", 13, 1, attrs, xs[0], roi, nil, rzI64(1, 2, 4, 5))
			require.NoError(t, err)
			return out[0]
		}, []*tensor.Tensor{x}, autograd.GradCheckOptions{})
		assert.NoError(t, err)
	})
	t.Run("upsample9", func(t *testing.T) {
		t.Parallel()
		err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
			out, err := callOp("Upsample", 9, 1, []*onnxpb.AttributeProto{attrString("mode", "linear")}, xs[0], rzF32([]float32{1, 1, 2, 1.5}, 4))
			require.NoError(t, err)
			return out[0]
		}, []*tensor.Tensor{x}, autograd.GradCheckOptions{})
		assert.NoError(t, err)
	})
}

func TestResizeErrors(t *testing.T) {
	t.Parallel()
	x := rzF32([]float32{1, 2, 3, 4}, 1, 1, 2, 2)
	sc := rzF32([]float32{1, 1, 2, 2}, 4)
	cases := []struct {
		name        string
		op          string
		opset       int
		attrs       []*onnxpb.AttributeProto
		in          []*autograd.Var
		unsupported bool
	}{
		{"no scales or sizes", "Resize", 13, nil, []*autograd.Var{x}, false},
		{"both scales and sizes", "Resize", 13, nil, []*autograd.Var{x, nil, sc, rzI64(1, 1, 4, 4)}, false},
		{"scales length", "Resize", 13, nil, []*autograd.Var{x, nil, rzF32([]float32{2, 2}, 2)}, false},
		{"sizes length", "Resize", 13, nil, []*autograd.Var{x, nil, nil, rzI64(4, 4)}, false},
		{"negative scale", "Resize", 13, nil, []*autograd.Var{x, nil, rzF32([]float32{1, 1, -2, 2}, 4)}, false},
		{"zero size", "Resize", 13, nil, []*autograd.Var{x, nil, nil, rzI64(1, 1, 0, 4)}, false},
		{"scale empties axis", "Resize", 13, nil, []*autograd.Var{x, nil, rzF32([]float32{1, 1, 0.1, 1}, 4)}, false},
		{"float sizes", "Resize", 13, nil, []*autograd.Var{x, nil, nil, rzF32([]float32{1, 1, 4, 4}, 4)}, false},
		{"int scales", "Resize", 13, nil, []*autograd.Var{x, nil, rzI64(1, 1, 2, 2)}, false},
		{"bad mode", "Resize", 13, []*onnxpb.AttributeProto{attrString("mode", "area")}, []*autograd.Var{x, nil, sc}, false},
		{"bad coordinate mode", "Resize", 13, []*onnxpb.AttributeProto{attrString("coordinate_transformation_mode", "center")}, []*autograd.Var{x, nil, sc}, false},
		{"bad nearest mode", "Resize", 13, []*onnxpb.AttributeProto{attrString("nearest_mode", "round")}, []*autograd.Var{x, nil, sc}, false},
		{"tf_crop without roi", "Resize", 13, []*onnxpb.AttributeProto{attrString("coordinate_transformation_mode", "tf_crop_and_resize")}, []*autograd.Var{x, nil, sc}, false},
		{"roi length", "Resize", 13, []*onnxpb.AttributeProto{attrString("coordinate_transformation_mode", "tf_crop_and_resize")}, []*autograd.Var{x, rzF32([]float32{0, 1}, 2), sc}, false},
		{"missing X", "Resize", 13, nil, []*autograd.Var{nil, nil, sc}, false},
		{"resize10 cubic", "Resize", 10, []*onnxpb.AttributeProto{attrString("mode", "cubic")}, []*autograd.Var{x, sc}, false},
		{"resize10 no scales", "Resize", 10, nil, []*autograd.Var{x}, false},
		{"upsample below 1", "Upsample", 9, nil, []*autograd.Var{x, rzF32([]float32{1, 1, 0.5, 1}, 4)}, false},
		{"upsample7 without scales", "Upsample", 7, nil, []*autograd.Var{x}, false},
		{"upsample bad mode", "Upsample", 7, []*onnxpb.AttributeProto{attrFloats("scales", 1, 1, 2, 2), attrString("mode", "cubic")}, []*autograd.Var{x}, false},
		{"linear on integers", "Resize", 13, []*onnxpb.AttributeProto{attrString("mode", "linear")},
			[]*autograd.Var{autograd.Constant(tensor.FromInt64([]int64{1, 2}, 2)), nil, rzF32([]float32{2}, 1)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := callOp(tc.op, tc.opset, 1, tc.attrs, tc.in...)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "panic")
			assert.Equal(t, tc.unsupported, errors.Is(err, ErrUnsupported), "%v", err)
		})
	}
}

// BenchmarkResizeNearest2x upsamples a YOLO-sized feature map by 2 with
// nearest neighbours (the common Resize of detection and segmentation
// networks).
func BenchmarkResizeNearest2x(b *testing.B) {
	x := autograd.Constant(tensor.RandUniform(rand.New(rand.NewPCG(1, 1)), -1, 1, 1, 256, 52, 52))
	scales := rzF32([]float32{1, 1, 2, 2}, 4)
	b.SetBytes(int64(x.Value.Len()) * 4 * 5) // read x, write 4x
	b.ResetTimer()
	for range b.N {
		if _, err := callOp("Resize", 13, 1, []*onnxpb.AttributeProto{attrString("coordinate_transformation_mode", "asymmetric"), attrString("nearest_mode", "floor")}, x, nil, scales); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResizeBilinear2x upsamples the same map bilinearly.
func BenchmarkResizeBilinear2x(b *testing.B) {
	x := autograd.Constant(tensor.RandUniform(rand.New(rand.NewPCG(1, 1)), -1, 1, 1, 256, 52, 52))
	scales := rzF32([]float32{1, 1, 2, 2}, 4)
	b.SetBytes(int64(x.Value.Len()) * 4 * 5)
	b.ResetTimer()
	for range b.N {
		if _, err := callOp("Resize", 13, 1, []*onnxpb.AttributeProto{attrString("mode", "linear")}, x, nil, scales); err != nil {
			b.Fatal(err)
		}
	}
}
