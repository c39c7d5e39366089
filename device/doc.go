// Package device defines where tensors live and what they compute with:
// the Device interface, element types (DType), Buffers, and Kernels, the
// small set of primitives (strided copy, elementwise, reductions, matrix
// product, convolution, pooling, gather/scatter) each backend implements.
//
// Backends register themselves by name from an init function, and Open
// finds them by a spec such as "cpu" or "cuda:1":
//
//	import _ "github.com/hora-dl/hora/device/cpu"
//
//	dev, err := device.Open("cpu")
//	if err != nil { ... }
//	b, err := dev.Alloc(device.Float32, 4)
//	err = dev.Write(b, []float32{1, 2, 3, 4})
//	dev.Kernels().Unary(device.Exp, b, b, 4, 0)
//
// A backend's Kernels value may also implement optional kernel sets, which
// callers find by type assertion and otherwise compose from the
// primitives: FusedKernels, ConvBiasActKernels, MaxPoolValuesKernels,
// SoftmaxKernels and GELUKernels, which package tensor runs;
// BatchNormKernels and LayerNormKernels, which autograd's BatchNorm and
// LayerNorm run; OptimizerKernels and MultiStepKernels, which optim's
// optimizers run.
//
// Kernels do not validate their arguments; their callers (package tensor,
// and the packages above it for their kernel sets) check shapes before
// they call them. Each Kernels method's doc comment is its reference
// definition, and the conformance suite in device/devicetest checks a
// backend against plain loops that follow those comments.
//
// This package knows nothing of tensors or gradients.
package device
