package onnxtest_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/onnx/onnxtest"
	"github.com/hora-dl/hora/tensor"
)

// A case is a folder with model.onnx and test_data_set_N folders of
// input_K.pb and output_K.pb. Here the model is a ReLU exported by Hora
// and the expected output is written by hand; the ONNX conformance suite
// (scripts/gen-onnx-node-tests) has hundreds of such folders.
func ExampleCheck() {
	root, err := os.MkdirTemp("", "onnxtest")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)
	dir := filepath.Join(root, "test_relu")
	set := filepath.Join(dir, "test_data_set_0")
	if err := os.MkdirAll(set, 0o755); err != nil {
		fmt.Println(err)
		return
	}
	var model bytes.Buffer
	if err := onnx.Export(layers.ReLU{}, []*tensor.Tensor{tensor.Zeros(1, 3)}, &model, onnx.ExportOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	files := map[string][]byte{filepath.Join(dir, "model.onnx"): model.Bytes()}
	for name, t := range map[string]*tensor.Tensor{
		"input_0.pb":  tensor.FromFloat32([]float32{-1, 0, 2}, 1, 3),
		"output_0.pb": tensor.FromFloat32([]float32{0, 0, 2}, 1, 3),
	} {
		tp, err := onnx.TensorToProto(t, "", onnxpb.TensorProto_FLOAT)
		if err != nil {
			fmt.Println(err)
			return
		}
		if files[filepath.Join(set, name)], err = proto.Marshal(tp); err != nil {
			fmt.Println(err)
			return
		}
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			fmt.Println(err)
			return
		}
	}

	cases, err := onnxtest.Cases(root)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, dir := range cases {
		for _, r := range onnxtest.Check(dir, onnxtest.Tolerance{RTol: 1e-4, ATol: 1e-5}) {
			fmt.Println(r)
		}
	}
	// Output:
	// PASS test_relu/test_data_set_0 max_abs=0 max_rel=0
}
