// Package onnx reads and writes ONNX models.
//
// Import turns an ONNX graph into a Model: a layers.Module whose float
// initializers are named, trainable parameters and whose forward pass runs
// on Hora's autograd operations, on the device of its inputs. An imported
// model can be run, fine-tuned, checkpointed and trained with data
// parallelism like any model written in Go:
//
//	m, err := onnx.Load("resnet18.onnx")
//	outs, err := m.Run(autograd.Constant(images)) // images: [batch, 3, 224, 224]
//
// Opsets 7 to 17 of the ai.onnx domain are supported (older files import
// where their operators are implemented); each operator keeps the
// attribute and input conventions of its version (Squeeze's axes attribute
// before opset 13 and input after, say). SupportedOps lists them. Values
// that depend only on constants are folded at import, the shape
// arithmetic that exporters emit (Shape → Gather → Concat → Reshape) is
// computed once per input shape, and a Relu after a Conv or Gemm runs
// fused into it. If, Loop and Scan run their subgraphs, unrolled onto the
// autograd tape. Element types map onto Hora's: float is float32, double
// is float64, and all integer types and bool are int64; float16, bfloat16,
// strings, sequences and optionals are not supported.
//
// For transfer learning, the WithoutHead option removes a pretrained
// model's final classifier (Model.Head says what it was), so that a new
// layers.Linear can be appended; Input feeds a model of several inputs
// through one of them; a BatchNormalization whose scale and bias are
// frozen (autograd.Param.Freeze) keeps its running statistics in
// training:
//
//	m, err := onnx.Load("resnet18.onnx", onnx.WithoutHead())
//	head, _ := m.Head() // head.InFeatures == 512
//	net := layers.NewSequential(m, layers.NewLinear(head.InFeatures, classes, true, rng))
//
// Export and ExportFile trace one forward pass of a Hora model through the
// autograd tape (autograd.Var.Op) into an opset-17 graph whose
// initializers are named as in the model's state dict and whose batch
// dimension is dynamic.
//
// Package onnxtest runs ONNX backend-test folders (model.onnx and
// test_data_set_N) and compares the outputs; cmd/onnxcheck is its command
// line.
//
// Errors about a model name the node, its operator and the opset; errors
// about inputs name the input and the expected and found shape or type.
// Operators, attributes and types that Hora does not implement give
// errors that wrap ErrUnsupported.
//
// A model file is untrusted input. Load reads only regular files;
// external data must be a regular file inside the model's folder (symbolic
// links resolved) and of the size the tensor's shape wants; errors about
// such files wrap ErrBadFile. An output whose size an operator takes from
// attributes or input values may have at most 2³⁰ elements, one run's
// Loop, Scan and If subgraphs may evaluate at most 2²⁰ nodes (a Loop whose
// trip count alone would pass that is refused before it starts), and an
// integer Div or Mod by zero is an error.
package onnx
