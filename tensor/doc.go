// Package tensor provides Tensor, an n-dimensional strided view of a
// device buffer, and the operations deep-learning code is written with.
//
// # Overview
//
// A Tensor has a shape, strides (in elements), an offset and an element
// type (float32, float64 or int64), and lives on a device.Device; every
// operation runs the kernels of its operands' device, so code above this
// package never branches on the device kind. Constructors without a device
// (Zeros, FromFloat32, Scalar, RandUniform, ...) use the CPU; To moves a
// tensor to another device.
//
//	x := tensor.FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
//	y := x.Add(tensor.FromFloat32([]float32{10, 20, 30})) // broadcasts: [2 3]
//	z := tensor.MatMul(y, x.T())                          // [2 2]
//	fmt.Println(z.Sum(1, false).Float32s())
//
// The op set: elementwise unary and binary operations with NumPy
// broadcasting (Add, Mul, Exp, Sigmoid, comparisons, Where, ...);
// reductions over one or several axes (Sum, Mean, Max, Min, ArgMax, Var)
// and their adjoint SumTo; Softmax and LogSoftmax; batched MatMul with
// broadcast batch axes; Conv2D, MaxPool2D and AvgPool2D with their
// gradients; Gather, ScatterAdd, IndexSelect and IndexAdd; Concat, Stack
// and Split; random initialisers that draw from a caller's seeded
// *rand.Rand, so that runs are reproducible.
//
// Operations return new tensors and leave their inputs alone. The only
// methods that write into an existing tensor are CopyFrom and Fill.
// Float32 elementwise results are computed in float32 or rounded from
// float64; reductions accumulate in float64 on the CPU.
//
// # Views and aliasing
//
// These return views that share memory with their input (writing through
// one, with CopyFrom or Fill, changes the other): Reshape and Flatten (when
// the input IsContiguous; otherwise they copy), Permute, Transpose, T,
// Slice, Index, Squeeze, Unsqueeze, Expand (repeated axes have stride 0),
// Split (each piece), Contiguous (when the input is already contiguous),
// Cast (when the type is already right) and To (when the device is already
// right). Buffer exposes the shared buffer; two tensors alias when their
// Buffers are equal. Everything else, including Clone, returns a tensor
// with its own dense, row-major buffer. CopyFrom handles a source that
// overlaps its destination.
//
// Kernels read dense buffers, so an operation on a non-contiguous view
// first makes a dense copy of it (MatMul accepts a transposed matrix
// without copying).
//
// # Fused operations
//
// BiasAct, ActGrad, BiasGrad, Conv2DBiasAct and Conv2DBiasActMaxPool run
// a device's fused kernels (device.FusedKernels, ConvBiasActKernels) when
// it has them, and compose the same result from primitive operations
// otherwise; SoftmaxCrossEntropy reports a device without its kernel, and
// its callers compose it. Batch normalisation and the optimizer updates
// are not here: autograd's BatchNorm runs device.BatchNormKernels and
// optim's optimizers run device.OptimizerKernels themselves, on the
// Buffers of dense tensors, with Empty giving them memory for results.
//
// # Arenas
//
// An Arena recycles the memory of a loop's steps: the result of an
// operation takes its buffer (and its Tensor value) from the arena of its
// inputs, if any, and Reset hands everything back for the next step.
// Tensors without an arena (parameters, optimizer state) never take one, so
// what must outlive the step is safe; a tensor used after its arena's
// Reset panics. See Arena and Tensor.Keep. Within a step, Tensor.Release
// hands memory back early (autograd's Backward does so with the gradients
// it is done with), so that the rest of the step reuses it.
//
// # Errors
//
// Mistakes in tensor code written in Go — shapes that do not broadcast or
// multiply, a wrong number of axes, an axis out of range, mixed element
// types or devices — are programming errors and panic, like gonum's mat,
// with a message that names the operation and both shapes, for example
//
//	tensor: Add: shapes [2 3] and [2] do not broadcast
//	tensor: MatMul: shapes [2 3] and [4 2]: inner dimensions 3 and 4 differ
//
// Data that comes from outside the program returns an error instead:
// FromSlice reports data that does not fill its shape.
package tensor
