package onnx

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

func shF32(vals []float32, shape ...int) *autograd.Var {
	return autograd.Constant(tensor.FromFloat32(vals, shape...))
}

func shI64(vals ...int64) *autograd.Var {
	return autograd.Constant(tensor.FromInt64(vals, len(vals)))
}

// shIota returns 0, 1, ... as a float32 tensor of the given shape.
func shIota(shape ...int) *autograd.Var {
	v := make([]float32, device.NumElements(shape))
	for i := range v {
		v[i] = float32(i)
	}
	return shF32(v, shape...)
}

func TestShapeOpsForward(t *testing.T) {
	t.Parallel()
	big, small := int64(math.MaxInt64), int64(math.MinInt64)
	cases := []struct {
		name  string
		op    string
		opset int
		attrs []any
		in    []*autograd.Var
		outs  int
		shape [][]int
		want  [][]float64
	}{
		{"Reshape1Attr", "Reshape", 1, []any{"shape", []int64{0, -1}}, []*autograd.Var{shIota(2, 3, 2)}, 1,
			[][]int{{2, 6}}, nil},
		{"Reshape14AllowZero", "Reshape", 14, []any{"allowzero", 1}, []*autograd.Var{shIota(0, 3), shI64(3, 0)}, 1,
			[][]int{{3, 0}}, nil},
		{"Flatten1Axis0", "Flatten", 1, []any{"axis", 0}, []*autograd.Var{shIota(2, 3)}, 1, [][]int{{1, 6}}, nil},
		{"Flatten11Neg", "Flatten", 11, []any{"axis", -1}, []*autograd.Var{shIota(2, 3, 4)}, 1, [][]int{{6, 4}}, nil},
		{"Squeeze1Attr", "Squeeze", 1, []any{"axes", []int64{0, 2}}, []*autograd.Var{shIota(1, 3, 1, 1)}, 1,
			[][]int{{3, 1}}, nil},
		{"Squeeze13All", "Squeeze", 13, nil, []*autograd.Var{shIota(1, 3, 1)}, 1, [][]int{{3}}, nil},
		{"Unsqueeze11Neg", "Unsqueeze", 11, []any{"axes", []int64{-1, 0}}, []*autograd.Var{shIota(3)}, 1,
			[][]int{{1, 3, 1}}, nil},
		{"Concat1DefaultAxis", "Concat", 1, nil, []*autograd.Var{shIota(2, 1), shIota(2, 2)}, 1,
			[][]int{{2, 3}}, [][]float64{{0, 0, 1, 1, 2, 3}}},
		{"Split2Attr", "Split", 2, []any{"axis", 1, "split", []int64{1, 2}}, []*autograd.Var{shIota(2, 3)}, 2,
			[][]int{{2, 1}, {2, 2}}, [][]float64{{0, 3}, {1, 2, 4, 5}}},
		{"Split1Input", "Split", 1, nil, []*autograd.Var{shIota(5), shI64(2, 3)}, 2,
			[][]int{{2}, {3}}, [][]float64{{0, 1}, {2, 3, 4}}},
		{"Split11Equal", "Split", 11, []any{"axis", -1}, []*autograd.Var{shIota(2, 4)}, 2,
			[][]int{{2, 2}, {2, 2}}, [][]float64{{0, 1, 4, 5}, {2, 3, 6, 7}}},
		{"Split18Uneven", "Split", 18, []any{"num_outputs", 3}, []*autograd.Var{shIota(7)}, 3,
			[][]int{{3}, {3}, {1}}, [][]float64{{0, 1, 2}, {3, 4, 5}, {6}}},
		{"Slice1Attr", "Slice", 1, []any{"starts", []int64{1, -2}, "ends", []int64{big, 1000}},
			[]*autograd.Var{shIota(3, 3)}, 1, [][]int{{2, 2}}, [][]float64{{4, 5, 7, 8}}},
		{"Slice1AttrAxes", "Slice", 1, []any{"starts", []int64{1}, "ends", []int64{2}, "axes", []int64{1}},
			[]*autograd.Var{shIota(2, 3)}, 1, [][]int{{2, 1}}, [][]float64{{1, 4}}},
		{"SliceReverseAll", "Slice", 13, nil, []*autograd.Var{shIota(5), shI64(-1), shI64(small), shI64(0), shI64(-1)}, 1,
			[][]int{{5}}, [][]float64{{4, 3, 2, 1, 0}}},
		{"SliceStep2", "Slice", 13, nil, []*autograd.Var{shIota(7), shI64(1), shI64(big), nil, shI64(2)}, 1,
			[][]int{{3}}, [][]float64{{1, 3, 5}}},
		{"SliceNegStep3", "Slice", 13, nil, []*autograd.Var{shIota(7), shI64(big), shI64(0), nil, shI64(-3)}, 1,
			[][]int{{2}}, [][]float64{{6, 3}}},
		{"SliceHugeStep", "Slice", 13, nil, []*autograd.Var{shIota(4), shI64(1), shI64(big), nil, shI64(big)}, 1,
			[][]int{{1}}, [][]float64{{1}}},
		{"SliceHugeNegStep", "Slice", 13, nil, []*autograd.Var{shIota(4), shI64(2), shI64(small), nil, shI64(small)}, 1,
			[][]int{{1}}, [][]float64{{2}}},
		{"SliceEmpty", "Slice", 13, nil, []*autograd.Var{shIota(4), shI64(3), shI64(1)}, 1, [][]int{{0}}, nil},
		{"GatherScalar", "Gather", 13, []any{"axis", 1}, []*autograd.Var{shIota(2, 3),
			autograd.Constant(tensor.FromInt64([]int64{-1}))}, 1, [][]int{{2}}, [][]float64{{2, 5}}},
		{"GatherInt64Data", "Gather", 13, nil, []*autograd.Var{shI64(5, 6, 7), shI64(2, 0)}, 1,
			[][]int{{2}}, [][]float64{{7, 5}}},
		{"GatherElementsSmaller", "GatherElements", 13, []any{"axis", 0},
			[]*autograd.Var{shIota(3, 3), autograd.Constant(tensor.FromInt64([]int64{2, -3}, 1, 2))}, 1,
			[][]int{{1, 2}}, [][]float64{{6, 1}}},
		{"Shape1", "Shape", 1, []any{"start", 1}, []*autograd.Var{shIota(2, 3)}, 1, [][]int{{2}}, [][]float64{{2, 3}}},
		{"Shape15Clip", "Shape", 15, []any{"start", -10, "end", 10}, []*autograd.Var{shIota(2, 3)}, 1,
			[][]int{{2}}, [][]float64{{2, 3}}},
		{"Shape15Empty", "Shape", 15, []any{"start", 2, "end", 1}, []*autograd.Var{shIota(2, 3)}, 1,
			[][]int{{0}}, nil},
		{"Size", "Size", 13, nil, []*autograd.Var{shIota(2, 3)}, 1, [][]int{{}}, [][]float64{{6}}},
		{"ConstantFloats", "Constant", 13, []any{"value_floats", []float32{1, 2}}, nil, 1, [][]int{{2}},
			[][]float64{{1, 2}}},
		{"ConstantInt", "Constant", 13, []any{"value_int", 7}, nil, 1, [][]int{{}}, [][]float64{{7}}},
		{"ConstantInts", "Constant", 13, []any{"value_ints", []int64{7, 8}}, nil, 1, [][]int{{2}}, [][]float64{{7, 8}}},
		{"ConstantFloat", "Constant", 13, []any{"value_float", float32(2.5)}, nil, 1, [][]int{{}}, [][]float64{{2.5}}},
		{"ConstantTensor", "Constant", 9, []any{"value", tensor.FromFloat32([]float32{1, 2, 3, 4}, 2, 2)}, nil, 1,
			[][]int{{2, 2}}, [][]float64{{1, 2, 3, 4}}},
		{"ConstantOfShapeDefault", "ConstantOfShape", 9, nil, []*autograd.Var{shI64(2)}, 1, [][]int{{2}},
			[][]float64{{0, 0}}},
		{"ConstantOfShapeScalar", "ConstantOfShape", 9, []any{"value", tensor.FromInt64([]int64{3}, 1)},
			[]*autograd.Var{shI64()}, 1, [][]int{{}}, [][]float64{{3}}},
		{"ExpandBidirectional", "Expand", 13, nil, []*autograd.Var{shIota(3, 1), shI64(2, 1, 2)}, 1,
			[][]int{{2, 3, 2}}, [][]float64{{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}}},
		{"Tile6", "Tile", 6, nil, []*autograd.Var{shIota(2, 2), shI64(1, 2)}, 1, [][]int{{2, 4}},
			[][]float64{{0, 1, 0, 1, 2, 3, 2, 3}}},
		{"Tile6Zero", "Tile", 6, nil, []*autograd.Var{shIota(2, 2), shI64(0, 2)}, 1, [][]int{{0, 4}}, nil},
		{"Tile1", "Tile", 1, nil, []*autograd.Var{shIota(2, 2), shI64(2), shI64(0)}, 1, [][]int{{4, 2}},
			[][]float64{{0, 1, 2, 3, 0, 1, 2, 3}}},
		{"Pad1Paddings", "Pad", 1, []any{"paddings", []int64{0, 1, 0, 0}, "value", float32(9)},
			[]*autograd.Var{shIota(1, 2)}, 1, [][]int{{1, 3}}, [][]float64{{9, 0, 1}}},
		{"Pad2Reflect", "Pad", 2, []any{"pads", []int64{3, 2}, "mode", "reflect"}, []*autograd.Var{shIota(3)}, 1,
			[][]int{{8}}, [][]float64{{1, 2, 1, 0, 1, 2, 1, 0}}},
		{"Pad11EdgeCrop", "Pad", 11, []any{"mode", "edge"}, []*autograd.Var{shIota(2, 3), shI64(-1, 2, 0, -1)}, 1,
			[][]int{{1, 4}}, [][]float64{{3, 3, 3, 4}}},
		{"Pad11ConstantInt", "Pad", 11, nil, []*autograd.Var{shI64(1, 2), shI64(1, 1),
			autograd.Constant(tensor.FromInt64([]int64{-4}))}, 1, [][]int{{4}}, [][]float64{{-4, 1, 2, -4}}},
		{"Pad11ReflectSize1", "Pad", 11, []any{"mode", "reflect"}, []*autograd.Var{shIota(1), shI64(2, 1)}, 1,
			[][]int{{4}}, [][]float64{{0, 0, 0, 0}}},
		{"Pad18Axes", "Pad", 18, nil, []*autograd.Var{shIota(2, 2), shI64(1, 0), nil, shI64(-1)}, 1,
			[][]int{{2, 3}}, [][]float64{{0, 0, 1, 0, 2, 3}}},
		{"DepthToSpace1", "DepthToSpace", 1, []any{"blocksize", 2}, []*autograd.Var{shIota(1, 4, 1, 1)}, 1,
			[][]int{{1, 1, 2, 2}}, [][]float64{{0, 1, 2, 3}}},
		{"SpaceToDepth", "SpaceToDepth", 13, []any{"blocksize", 2}, []*autograd.Var{shIota(1, 1, 2, 2)}, 1,
			[][]int{{1, 4, 1, 1}}, [][]float64{{0, 1, 2, 3}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := callOpT(t, tc.op, tc.opset, tc.outs, tc.attrs, tc.in...)
			require.NoError(t, err)
			require.Len(t, out, len(tc.shape))
			for i, s := range tc.shape {
				assert.True(t, slices.Equal(s, out[i].Shape()), "output %d: shape %v, expected %v", i, out[i].Shape(), s)
				if tc.want != nil {
					assert.Equal(t, tc.want[i], out[i].Value.Values(), "output %d", i)
				}
			}
		})
	}
}

func TestShapeOpsConstantOfShapeLargeInt(t *testing.T) {
	t.Parallel()
	v := int64(1)<<60 + 1
	out, err := callOpT(t, "ConstantOfShape", 9, 1, []any{"value", tensor.FromInt64([]int64{v}, 1)}, shI64(2))
	require.NoError(t, err)
	assert.Equal(t, []int64{v, v}, out[0].Value.Int64s())
}

func TestShapeOpsGrad(t *testing.T) {
	t.Parallel()
	i64 := func(vals ...int64) *autograd.Var { return shI64(vals...) }
	cases := []struct {
		name   string
		op     string
		opset  int
		attrs  []any
		shapes [][]int         // float64 inputs, differentiated
		extra  []*autograd.Var // further (integer) inputs
		outs   int
	}{
		{"Reshape", "Reshape", 14, nil, [][]int{{2, 3, 2}}, []*autograd.Var{i64(3, -1)}, 1},
		{"Flatten", "Flatten", 13, []any{"axis", 2}, [][]int{{2, 3, 2}}, nil, 1},
		{"Transpose", "Transpose", 13, []any{"perm", []int64{1, 2, 0}}, [][]int{{2, 3, 4}}, nil, 1},
		{"TransposeDefault", "Transpose", 13, nil, [][]int{{2, 3}}, nil, 1},
		{"Squeeze", "Squeeze", 13, nil, [][]int{{1, 3, 1}}, []*autograd.Var{i64(-1)}, 1},
		{"Unsqueeze", "Unsqueeze", 13, nil, [][]int{{3, 2}}, []*autograd.Var{i64(0, 3)}, 1},
		{"Concat", "Concat", 13, []any{"axis", -1}, [][]int{{2, 1}, {2, 3}, {2, 2}}, nil, 1},
		{"Split", "Split", 13, []any{"axis", 1}, [][]int{{2, 5}}, []*autograd.Var{i64(2, 0, 3)}, 3},
		{"SliceStep1", "Slice", 13, nil, [][]int{{4, 5}}, []*autograd.Var{i64(1, -4), i64(3, 100), i64(0, 1)}, 1},
		{"SliceNegStep", "Slice", 13, nil, [][]int{{4, 5}},
			[]*autograd.Var{i64(-1, 4), i64(math.MinInt64, 0), i64(1, 0), i64(-2, -1)}, 1},
		{"Gather", "Gather", 13, []any{"axis", 1}, [][]int{{3, 4}},
			[]*autograd.Var{autograd.Constant(tensor.FromInt64([]int64{0, -1, 0, 2}, 2, 2))}, 1},
		{"GatherElements", "GatherElements", 13, []any{"axis", 1}, [][]int{{3, 4}},
			[]*autograd.Var{autograd.Constant(tensor.FromInt64([]int64{3, 3, 0, -1, 1, 1}, 2, 3))}, 1},
		{"Expand", "Expand", 13, nil, [][]int{{3, 1}}, []*autograd.Var{i64(2, 1, 4)}, 1},
		{"Tile", "Tile", 13, nil, [][]int{{2, 3}}, []*autograd.Var{i64(2, 3)}, 1},
		{"PadConstant", "Pad", 13, nil, [][]int{{2, 3}}, []*autograd.Var{i64(1, 2, 0, 1)}, 1},
		{"PadReflectCrop", "Pad", 13, []any{"mode", "reflect"}, [][]int{{3, 4}}, []*autograd.Var{i64(-1, 3, 2, 2)}, 1},
		{"PadEdge", "Pad", 13, []any{"mode", "edge"}, [][]int{{3, 4}}, []*autograd.Var{i64(2, 1, 0, 3)}, 1},
		{"DepthToSpaceDCR", "DepthToSpace", 13, []any{"blocksize", 2}, [][]int{{1, 8, 2, 3}}, nil, 1},
		{"DepthToSpaceCRD", "DepthToSpace", 13, []any{"blocksize", 2, "mode", "CRD"}, [][]int{{1, 8, 2, 3}}, nil, 1},
		{"SpaceToDepth", "SpaceToDepth", 13, []any{"blocksize", 2}, [][]int{{2, 1, 4, 2}}, nil, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inputs := make([]*tensor.Tensor, len(tc.shapes))
			for i, s := range tc.shapes {
				vals := make([]float64, device.NumElements(s))
				for j := range vals {
					vals[j] = math.Sin(float64(3*j+i+1)) * 2
				}
				inputs[i] = tensor.FromFloat64(vals, s...)
			}
			f := func(xs []*autograd.Var) *autograd.Var {
				out, err := callOpT(t, tc.op, tc.opset, tc.outs, tc.attrs, append(xs, tc.extra...)...)
				require.NoError(t, err)
				flat := make([]*autograd.Var, len(out))
				for i, o := range out {
					flat[i] = autograd.Reshape(o, o.Value.Len())
				}
				return autograd.Concat(0, flat...)
			}
			require.NoError(t, autograd.GradCheck(f, inputs, autograd.GradCheckOptions{}))
		})
	}
}

func TestShapeOpsErrors(t *testing.T) {
	t.Parallel()
	x := shIota(2, 3)
	cases := []struct {
		name        string
		op          string
		opset       int
		attrs       []any
		in          []*autograd.Var
		outs        int
		unsupported bool
	}{
		{"ReshapeMissingShape", "Reshape", 13, nil, []*autograd.Var{x}, 1, false},
		{"ReshapeBadCount", "Reshape", 13, nil, []*autograd.Var{x, shI64(4, 2)}, 1, false},
		{"ReshapeTwoInferred", "Reshape", 13, nil, []*autograd.Var{x, shI64(-1, -1)}, 1, false},
		{"ReshapeNegative", "Reshape", 13, nil, []*autograd.Var{x, shI64(-2, -3)}, 1, false},
		{"ReshapeFloatShape", "Reshape", 13, nil, []*autograd.Var{x, shF32([]float32{6}, 1)}, 1, false},
		{"ReshapeZeroBeyondRank", "Reshape", 13, nil, []*autograd.Var{x, shI64(6, 1, 0)}, 1, false},
		{"ReshapeAllowZeroInfer", "Reshape", 14, []any{"allowzero", 1}, []*autograd.Var{x, shI64(0, -1)}, 1, false},
		{"Reshape1NoAttr", "Reshape", 1, nil, []*autograd.Var{x}, 1, false},
		{"FlattenAxis", "Flatten", 13, []any{"axis", 3}, []*autograd.Var{x}, 1, false},
		{"FlattenNegOld", "Flatten", 9, []any{"axis", -1}, []*autograd.Var{x}, 1, false},
		{"TransposePermLen", "Transpose", 13, []any{"perm", []int64{0}}, []*autograd.Var{x}, 1, false},
		{"TransposePermRepeat", "Transpose", 13, []any{"perm", []int64{0, 0}}, []*autograd.Var{x}, 1, false},
		{"SqueezeNotOne", "Squeeze", 13, nil, []*autograd.Var{x, shI64(0)}, 1, false},
		{"SqueezeAxisRange", "Squeeze", 11, []any{"axes", []int64{5}}, []*autograd.Var{x}, 1, false},
		{"SqueezeNegOld", "Squeeze", 1, []any{"axes", []int64{-1}}, []*autograd.Var{shIota(2, 1)}, 1, false},
		{"UnsqueezeRepeat", "Unsqueeze", 13, nil, []*autograd.Var{x, shI64(0, -4)}, 1, false},
		{"UnsqueezeMissing", "Unsqueeze", 13, nil, []*autograd.Var{x}, 1, false},
		{"UnsqueezeNoAttr", "Unsqueeze", 11, nil, []*autograd.Var{x}, 1, false},
		{"ConcatShapes", "Concat", 13, []any{"axis", 0}, []*autograd.Var{x, shIota(2, 2)}, 1, false},
		{"ConcatTypes", "Concat", 13, []any{"axis", 0}, []*autograd.Var{shI64(1), shIota(1)}, 1, false},
		{"ConcatNoAxis", "Concat", 13, nil, []*autograd.Var{x, x}, 1, false},
		{"ConcatAxisRange", "Concat", 13, []any{"axis", 2}, []*autograd.Var{x, x}, 1, false},
		{"ConcatScalar", "Concat", 13, []any{"axis", 0}, []*autograd.Var{shF32([]float32{1})}, 1, false},
		{"ConcatNone", "Concat", 13, []any{"axis", 0}, nil, 1, false},
		{"SplitSum", "Split", 13, []any{"axis", 1}, []*autograd.Var{x, shI64(1, 1)}, 2, false},
		{"SplitCount", "Split", 13, []any{"axis", 1}, []*autograd.Var{x, shI64(3)}, 2, false},
		{"SplitNegative", "Split", 13, []any{"axis", 1}, []*autograd.Var{x, shI64(4, -1)}, 2, false},
		{"SplitUneven", "Split", 13, []any{"axis", 1}, []*autograd.Var{x}, 2, false},
		{"Split18NoNum", "Split", 18, nil, []*autograd.Var{x}, 2, false},
		{"Split18NumMismatch", "Split", 18, []any{"num_outputs", 3}, []*autograd.Var{x}, 2, false},
		{"SliceStepZero", "Slice", 13, nil, []*autograd.Var{x, shI64(0), shI64(1), shI64(0), shI64(0)}, 1, false},
		{"SliceLengths", "Slice", 13, nil, []*autograd.Var{x, shI64(0, 0), shI64(1)}, 1, false},
		{"SliceAxesLen", "Slice", 13, nil, []*autograd.Var{x, shI64(0), shI64(1), shI64(0, 1)}, 1, false},
		{"SliceAxisRange", "Slice", 13, nil, []*autograd.Var{x, shI64(0), shI64(1), shI64(2)}, 1, false},
		{"SliceRepeatAxis", "Slice", 13, nil, []*autograd.Var{x, shI64(0, 0), shI64(1, 1), shI64(1, -1)}, 1, false},
		{"Slice1NoAttrs", "Slice", 1, nil, []*autograd.Var{x}, 1, false},
		{"GatherOutOfRange", "Gather", 13, nil, []*autograd.Var{x, shI64(2)}, 1, false},
		{"GatherNegOutOfRange", "Gather", 13, []any{"axis", 1}, []*autograd.Var{x, shI64(-4)}, 1, false},
		{"GatherFloatIndices", "Gather", 13, nil, []*autograd.Var{x, shF32([]float32{0}, 1)}, 1, false},
		{"GatherScalarData", "Gather", 13, nil, []*autograd.Var{shF32([]float32{1}), shI64(0)}, 1, false},
		{"GatherAxis", "Gather", 13, []any{"axis", 2}, []*autograd.Var{x, shI64(0)}, 1, false},
		{"GatherElementsRank", "GatherElements", 13, nil, []*autograd.Var{x, shI64(0)}, 1, false},
		{"GatherElementsRange", "GatherElements", 13, nil,
			[]*autograd.Var{x, autograd.Constant(tensor.FromInt64([]int64{2}, 1, 1))}, 1, false},
		{"GatherElementsLarger", "GatherElements", 13, nil,
			[]*autograd.Var{x, autograd.Constant(tensor.FromInt64(make([]int64, 8), 1, 8))}, 1, false},
		{"ConstantNone", "Constant", 13, nil, nil, 1, false},
		{"ConstantTwo", "Constant", 13, []any{"value_int", 1, "value_float", float32(1)}, nil, 1, false},
		{"ConstantString", "Constant", 13, []any{"value_string", "x"}, nil, 1, true},
		{"ConstantOfShapeNegative", "ConstantOfShape", 9, nil, []*autograd.Var{shI64(2, -1)}, 1, false},
		{"ConstantOfShapeValue", "ConstantOfShape", 9, []any{"value", tensor.FromFloat32([]float32{1, 2}, 2)},
			[]*autograd.Var{shI64(2)}, 1, false},
		{"ConstantOfShape2D", "ConstantOfShape", 9, nil,
			[]*autograd.Var{autograd.Constant(tensor.FromInt64([]int64{2, 2}, 1, 2))}, 1, false},
		{"ExpandIncompatible", "Expand", 13, nil, []*autograd.Var{x, shI64(2, 2)}, 1, false},
		{"ExpandNegative", "Expand", 13, nil, []*autograd.Var{x, shI64(-1)}, 1, false},
		{"TileLength", "Tile", 13, nil, []*autograd.Var{x, shI64(2)}, 1, false},
		{"TileNegative", "Tile", 13, nil, []*autograd.Var{x, shI64(2, -1)}, 1, false},
		{"Tile1Axis", "Tile", 1, nil, []*autograd.Var{x, shI64(2), shI64(2)}, 1, false},
		{"PadLength", "Pad", 13, nil, []*autograd.Var{x, shI64(1, 1)}, 1, false},
		{"PadMode", "Pad", 13, []any{"mode", "mirror"}, []*autograd.Var{x, shI64(1, 1, 1, 1)}, 1, false},
		{"PadWrap", "Pad", 13, []any{"mode", "wrap"}, []*autograd.Var{x, shI64(1, 1, 1, 1)}, 1, true},
		{"PadCropTooMuch", "Pad", 13, nil, []*autograd.Var{x, shI64(-2, 0, -1, 0)}, 1, false},
		{"PadReflectEmpty", "Pad", 13, []any{"mode", "reflect"}, []*autograd.Var{x, shI64(-2, 0, 1, 0)}, 1, false},
		{"PadConstantType", "Pad", 13, nil, []*autograd.Var{x, shI64(1, 1, 1, 1), shI64(0)}, 1, false},
		{"Pad2NoPads", "Pad", 2, nil, []*autograd.Var{x}, 1, false},
		{"DepthToSpaceRank", "DepthToSpace", 13, []any{"blocksize", 2}, []*autograd.Var{x}, 1, false},
		{"DepthToSpaceChannels", "DepthToSpace", 13, []any{"blocksize", 2}, []*autograd.Var{shIota(1, 2, 1, 1)}, 1, false},
		{"DepthToSpaceMode", "DepthToSpace", 13, []any{"blocksize", 1, "mode", "XYZ"}, []*autograd.Var{shIota(1, 2, 1, 1)}, 1, false},
		{"DepthToSpaceNoBlock", "DepthToSpace", 13, nil, []*autograd.Var{shIota(1, 4, 1, 1)}, 1, false},
		{"SpaceToDepthSize", "SpaceToDepth", 13, []any{"blocksize", 2}, []*autograd.Var{shIota(1, 1, 3, 2)}, 1, false},
		{"SpaceToDepthBlock", "SpaceToDepth", 13, []any{"blocksize", 0}, []*autograd.Var{shIota(1, 1, 2, 2)}, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := callOpT(t, tc.op, tc.opset, tc.outs, tc.attrs, tc.in...)
			require.Error(t, err)
			assert.Equal(t, tc.unsupported, errors.Is(err, ErrUnsupported), "error %v", err)
			t.Log(err)
		})
	}
}
