package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

func ptr[T any](v T) *T { return &v }

func info(name string, dims ...int64) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
	}
	return &onnxpb.ValueInfoProto{Name: ptr(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: ptr(int32(onnxpb.TensorProto_FLOAT)), Shape: shape}}}}
}

// writeCase writes a backend-test folder for y = op(a, b) with the given
// inputs and expected output.
func writeCase(t *testing.T, root, name, op string, a, b, want []float32) string {
	dir := filepath.Join(root, name)
	set := filepath.Join(dir, "test_data_set_0")
	require.NoError(t, os.MkdirAll(set, 0o755))
	n := int64(len(a))
	m := &onnxpb.ModelProto{
		IrVersion:   ptr(int64(8)),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: ptr(int64(17))}},
		Graph: &onnxpb.GraphProto{
			Node:   []*onnxpb.NodeProto{{OpType: ptr(op), Input: []string{"a", "b"}, Output: []string{"y"}}},
			Input:  []*onnxpb.ValueInfoProto{info("a", n), info("b", n)},
			Output: []*onnxpb.ValueInfoProto{info("y", n)},
		},
	}
	data, err := proto.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.onnx"), data, 0o644))
	for file, vals := range map[string][]float32{"input_0.pb": a, "input_1.pb": b, "output_0.pb": want} {
		tp, err := onnx.TensorToProto(tensor.FromFloat32(vals, len(vals)), strings.TrimSuffix(file, ".pb"), onnxpb.TensorProto_FLOAT)
		require.NoError(t, err)
		data, err := proto.Marshal(tp)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(set, file), data, 0o644))
	}
	return dir
}

func TestOnnxcheck(t *testing.T) {
	root := t.TempDir()
	writeCase(t, root, "test_add_ok", "Add", []float32{1, 2}, []float32{3, 4}, []float32{4, 6})
	writeCase(t, root, "test_add_wrong", "Add", []float32{1, 2}, []float32{3, 4}, []float32{4, 7})
	writeCase(t, root, "test_frobnicate", "Frobnicate", []float32{1}, []float32{1}, []float32{1})

	var out, errOut bytes.Buffer
	code := run([]string{"-by-op", root}, &out, &errOut)
	text := out.String()
	t.Log(text)
	assert.Equal(t, 1, code, "a failed case makes the exit status 1")
	assert.Contains(t, text, "PASS test_add_ok/test_data_set_0 max_abs=0 max_rel=0")
	assert.Contains(t, text, `FAIL test_add_wrong/test_data_set_0 output 0 "y": max_abs=1 max_rel=0.143 at index 1 (got 6, want 7)`)
	assert.Contains(t, text, "UNSUPPORTED test_frobnicate")
	assert.Contains(t, text, "operator Frobnicate")
	assert.True(t, strings.HasSuffix(text, "1 passed, 1 failed (1 unsupported)\n"))
	assert.Regexp(t, `Add\s+1\s+1\s+0`, text)

	out.Reset()
	code = run([]string{"-atol", "1.5", filepath.Join(root, "test_add_wrong")}, &out, &errOut)
	assert.Equal(t, 0, code, "a looser tolerance passes: %s", out.String())

	md := filepath.Join(root, "ops.md")
	out.Reset()
	run([]string{"-q", "-ops-markdown", md, root}, &out, &errOut)
	table, err := os.ReadFile(md)
	require.NoError(t, err)
	assert.Contains(t, string(table), "| Add | 1–17")
	assert.Contains(t, string(table), "Frobnicate (1)")

	assert.Equal(t, 2, run(nil, &out, &errOut), "no folder is a usage error")
	assert.Equal(t, 2, run([]string{filepath.Join(root, "nothing")}, &out, &errOut))
}
