package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// checkBadInput runs onnxcheck on args and checks that it stops within a
// few seconds with exit status 2 and one line on stderr holding each of
// want.
func checkBadInput(t *testing.T, args []string, want ...string) {
	t.Helper()
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(args, &out, &errOut) }()
	select {
	case code := <-done:
		msg := errOut.String()
		assert.Equal(t, 2, code, "exit status; stdout %q, stderr %q", out.String(), msg)
		assert.Equal(t, 1, strings.Count(msg, "\n"), "one line: %q", msg)
		assert.True(t, strings.HasPrefix(msg, "onnxcheck: "), msg)
		for _, w := range want {
			assert.Contains(t, msg, w)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("onnxcheck %v still runs after 5 s", args)
	}
}

func TestOnnxcheckBadInput(t *testing.T) {
	root := t.TempDir()
	good := writeCase(t, root, "test_add_ok", "Add", []float32{1, 2}, []float32{3, 4}, []float32{4, 6})
	model, err := os.ReadFile(filepath.Join(good, "model.onnx"))
	require.NoError(t, err)

	// A case folder whose model.onnx is replaced by what setup makes of it.
	badModel := func(name string, setup func(path string)) string {
		dir := writeCase(t, root, name, "Add", []float32{1}, []float32{1}, []float32{2})
		path := filepath.Join(dir, "model.onnx")
		require.NoError(t, os.Remove(path))
		setup(path)
		return dir
	}
	write := func(data []byte) func(string) {
		return func(path string) { require.NoError(t, os.WriteFile(path, data, 0o644)) }
	}

	missing := filepath.Join(root, "nothere")
	checkBadInput(t, []string{missing}, missing, "no such file or directory")
	file := filepath.Join(good, "model.onnx")
	checkBadInput(t, []string{file}, file+" is not a folder")

	dir := badModel("test_dir", func(path string) { require.NoError(t, os.Mkdir(path, 0o755)) })
	checkBadInput(t, []string{dir}, filepath.Join(dir, "model.onnx")+" is a directory, not a regular file")
	dir = badModel("test_empty", write(nil))
	checkBadInput(t, []string{dir}, filepath.Join(dir, "model.onnx")+": onnx: empty file")
	dir = badModel("test_truncated", write(model[:len(model)/2]))
	checkBadInput(t, []string{dir}, filepath.Join(dir, "model.onnx")+": onnx: not an ONNX model (protobuf: ")
	dir = badModel("test_random", write([]byte("\x8a\x03\xff\xfe random bytes, not a model")))
	checkBadInput(t, []string{dir}, filepath.Join(dir, "model.onnx")+": onnx: not an ONNX model (protobuf: ")

	// A test input that is not a TensorProto.
	dir = writeCase(t, root, "test_bad_input", "Add", []float32{1}, []float32{1}, []float32{2})
	input := filepath.Join(dir, "test_data_set_0", "input_0.pb")
	require.NoError(t, os.WriteFile(input, []byte("\xff\xff\xff"), 0o644))
	checkBadInput(t, []string{dir}, input+": not a TensorProto")

	// External data read through a link to a folder outside the case.
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), make([]byte, 8), 0o644))
	dir = writeCase(t, root, "test_escape", "Add", []float32{1, 2}, []float32{3, 4}, []float32{4, 6})
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "d")))
	m := &onnxpb.ModelProto{}
	require.NoError(t, proto.Unmarshal(model, m))
	m.Graph.Initializer = []*onnxpb.TensorProto{{
		Name: ptr("w"), DataType: ptr(int32(onnxpb.TensorProto_FLOAT)), Dims: []int64{2},
		DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
		ExternalData: []*onnxpb.StringStringEntryProto{{Key: ptr("location"), Value: ptr("d/secret")}},
	}}
	data, err := proto.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.onnx"), data, 0o644))
	checkBadInput(t, []string{dir}, filepath.Join(dir, "model.onnx"), `external data location "d/secret" is `, "outside the model's folder")

	// A folder of cases stops at the bad one with status 2, too.
	checkBadInput(t, []string{root}, "onnxcheck: ")
}
