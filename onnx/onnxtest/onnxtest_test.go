package onnxtest_test

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/onnx/onnxtest"
	"github.com/hora-dl/hora/tensor"
)

func TestCompare(t *testing.T) {
	v := func(x ...float64) *tensor.Tensor { return tensor.FromFloat64(x, len(x)) }
	nan, inf := math.NaN(), math.Inf(1)
	tol := onnxtest.Tolerance{RTol: 0.1, ATol: 0.01}

	d := onnxtest.Compare(v(1, nan, inf, 10), v(1, nan, inf, 10.5), tol)
	assert.True(t, d.OK, "NaN matches NaN, inf matches inf, 0.5 <= 0.01 + 0.1·10.5")
	assert.InDelta(t, 0.5, d.MaxAbs, 1e-12)
	assert.Equal(t, 3, d.Index)

	d = onnxtest.Compare(v(1, 2, 3), v(1, 2.5, 3.05), tol)
	assert.False(t, d.OK)
	assert.Equal(t, 1, d.Index, "the element farthest out of tolerance")
	assert.Equal(t, 2.0, d.Got)
	assert.Equal(t, 2.5, d.Want)

	d = onnxtest.Compare(v(nan), v(1), tol)
	assert.False(t, d.OK, "NaN does not match a number")
	assert.True(t, math.IsInf(d.MaxAbs, 1))

	d = onnxtest.Compare(v(1, 2), tensor.FromFloat64([]float64{1, 2}, 2, 1), tol)
	assert.False(t, d.OK)
	assert.Equal(t, "shape [2], want [2 1]", d.Problem)
}

// writeCase writes the case dir/name: a model of one node y = op(x) on
// float vectors of length len(in), and one data set per (in, want)
// pair.
func writeCase(t *testing.T, dir, name, op string, sets ...[2][]float32) string {
	t.Helper()
	caseDir := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(caseDir, 0o755))
	n := int64(len(sets[0][0]))
	info := func(name string) *onnxpb.ValueInfoProto {
		shape := &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{
			{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: n}}}}
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), Shape: shape}}}}
	}
	m := &onnxpb.ModelProto{
		IrVersion:   proto.Int64(8),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: proto.Int64(17)}},
		Graph: &onnxpb.GraphProto{
			Node:   []*onnxpb.NodeProto{{OpType: proto.String(op), Input: []string{"x"}, Output: []string{"y"}}},
			Input:  []*onnxpb.ValueInfoProto{info("x")},
			Output: []*onnxpb.ValueInfoProto{info("y")},
		},
	}
	write := func(path string, msg proto.Message) {
		data, err := proto.Marshal(msg)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, data, 0o644))
	}
	write(filepath.Join(caseDir, "model.onnx"), m)
	for i, s := range sets {
		set := filepath.Join(caseDir, "test_data_set_"+strconv.Itoa(i))
		require.NoError(t, os.MkdirAll(set, 0o755))
		for k, vals := range map[string][]float32{"input_0.pb": s[0], "output_0.pb": s[1]} {
			tp, err := onnx.TensorToProto(tensor.FromFloat32(vals, len(vals)), "", onnxpb.TensorProto_FLOAT)
			require.NoError(t, err)
			write(filepath.Join(set, k), tp)
		}
	}
	return caseDir
}

func TestCheck(t *testing.T) {
	root := t.TempDir()
	tol := onnxtest.Tolerance{RTol: 1e-4, ATol: 1e-5}

	dir := writeCase(t, root, "test_neg", "Neg",
		[2][]float32{{1, -2}, {-1, 2}},
		[2][]float32{{1, -2}, {-1, 3}})
	res := onnxtest.Check(dir, tol)
	require.Len(t, res, 2)
	assert.Equal(t, onnxtest.Result{Case: "test_neg/test_data_set_0", Status: onnxtest.Pass, Ops: []string{"Neg"}, Detail: "max_abs=0 max_rel=0"}, res[0])
	assert.Equal(t, onnxtest.Fail, res[1].Status)
	assert.Equal(t, `FAIL test_neg/test_data_set_1 output 0 "y": max_abs=1 max_rel=0.333 at index 1 (got 2, want 3)`, res[1].String())

	dir = writeCase(t, root, "test_frobnicate", "Frobnicate", [2][]float32{{1}, {1}})
	res = onnxtest.Check(dir, tol)
	require.Len(t, res, 1)
	assert.Equal(t, onnxtest.Unsupported, res[0].Status)
	assert.Equal(t, "test_frobnicate", res[0].Case, "the model does not load: one result for the case")
	assert.Equal(t, []string{"Frobnicate"}, res[0].Ops)
	assert.Contains(t, res[0].Detail, "not supported: operator Frobnicate")

	dir = writeCase(t, root, "test_no_sets", "Neg", [2][]float32{{1}, {-1}})
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "test_data_set_0")))
	res = onnxtest.Check(dir, tol)
	require.Len(t, res, 1)
	assert.Equal(t, onnxtest.Fail, res[0].Status)
	assert.Equal(t, "no test_data_set_N folders", res[0].Detail)
}

func TestCases(t *testing.T) {
	root := t.TempDir()
	b := writeCase(t, root, "test_b", "Neg", [2][]float32{{1}, {-1}})
	a := writeCase(t, root, "test_a", "Neg", [2][]float32{{1}, {-1}})
	require.NoError(t, os.Mkdir(filepath.Join(root, "not_a_case"), 0o755))

	cases, err := onnxtest.Cases(root)
	require.NoError(t, err)
	assert.Equal(t, []string{a, b}, cases, "the cases inside, in name order")

	cases, err = onnxtest.Cases(a)
	require.NoError(t, err)
	assert.Equal(t, []string{a}, cases, "a case itself")

	_, err = onnxtest.Cases(filepath.Join(root, "not_a_case"))
	assert.ErrorContains(t, err, "no model.onnx, and no folders with one")
}
