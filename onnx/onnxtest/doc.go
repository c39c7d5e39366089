// Package onnxtest runs ONNX backend-test cases through Hora's importer
// and compares the results with the references, the way devicetest checks
// a device and disttest a transport.
//
// A case is a folder in the layout of the ONNX conformance suite: the
// model, model.onnx, and one folder per data set, test_data_set_N, with
// the inputs input_K.pb and the expected outputs output_K.pb (serialized
// TensorProtos). Check runs every data set of one case; Cases finds the
// cases in a folder such as the suite's "node" folder:
//
//	dirs, err := onnxtest.Cases("build/onnx-suite/node")
//	for _, dir := range dirs {
//		for _, r := range onnxtest.Check(dir, onnxtest.Tolerance{RTol: 1e-4, ATol: 1e-5}) {
//			fmt.Println(r) // PASS test_relu/test_data_set_0 max_abs=0 max_rel=0
//		}
//	}
//
// A result is Unsupported, rather than Fail, when the error wraps
// onnx.ErrUnsupported: the model needs an operator, attribute or element
// type that Hora does not implement. cmd/onnxcheck is the command line
// of this package.
//
// Compare, which Check uses for every output, also serves tests that
// check Hora against other references (PyTorch's outputs, say).
package onnxtest
