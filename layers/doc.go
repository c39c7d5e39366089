// Package layers provides the building blocks of neural networks: the
// Module and Layer interfaces, the common layers (Linear, Conv2d, pooling,
// BatchNorm, LayerNorm, Dropout, Embedding, activations,
// MultiHeadAttention and TransformerEncoderLayer), the containers
// Sequential and Residual, the losses, and named state (state dicts).
//
// # Overview
//
// A layer's Forward takes and returns *autograd.Var, so a model is plain
// Go code over autograd; a loss is a function returning a 0-dimensional
// Var that autograd.Backward differentiates. The smallest use:
//
//	rng := rand.New(rand.NewPCG(1, 2))
//	model := layers.NewSequential(
//		layers.NewLinear(784, 128, true, rng),
//		layers.ReLU{},
//		layers.NewLinear(128, 10, true, rng),
//	)
//	logits := model.Forward(autograd.Constant(images)) // images: N×784 float32
//	loss := layers.CrossEntropy(logits, labels, layers.CrossEntropyOptions{}) // labels: N int64
//	if err := autograd.Backward(loss); err != nil { … }
//	// every p in model.Parameters() now has p.Grad; an optimizer steps them.
//
// Constructors that initialise weights take a *rand.Rand (math/rand/v2),
// so a seed makes a model reproducible; the initialisations are PyTorch's
// defaults. Parameters are float32 on the CPU when built; To moves a model
// to another device and Cast converts it (Cast(m, device.Float64) before
// autograd.GradCheck).
//
// # Naming
//
// Every parameter (autograd.Param) and buffer (Buffer) carries its full
// dotted name, PyTorch's state_dict key. The rules are few:
//
//   - a layer names its own tensors "weight", "bias", "running_mean", …;
//   - a container prefixes the names of a child when the child is added
//     (Sequential names its layers "0", "1", …: "0.weight");
//   - Named(prefix, m) prefixes everything in m, and returns m.
//
// So a model struct names its fields as it builds them:
//
//	features := layers.Named("features", layers.NewSequential(conv, layers.ReLU{}))
//	// conv's weight is now "features.0.weight"
//
// A name is thus fixed once a module has its place in the model; a module
// belongs to one parent and is named once. StateDict collects the tensors
// by name and LoadStateDict copies them back, reporting every missing key,
// unexpected key or shape and type mismatch. Nothing is found by
// reflection: a model lists its parameters in Parameters and, to take part
// in Train, Eval, To, Cast and StateDict's buffers, its children in
// Children (the Container interface).
//
// # Training and evaluation
//
// BatchNorm and Dropout act differently while training; they implement
// ModeSetter. Every layer starts in training mode. Eval(m) switches m and
// all its descendants to evaluation (running statistics, no dropout) and
// Train(m) switches them back. Gradients are not affected by the mode: to
// run without recording, pass autograd.NoGrad(x) to Forward.
//
// # Errors
//
// A shape that does not fit a layer is a programming error: Forward panics
// with a message naming the layer and both shapes. So do class targets
// outside [0, C) in CrossEntropy and NLL, and indices outside the table in
// Embedding, with the bad value and the bound. LoadStateDict, whose input
// usually comes from a file, returns errors instead.
package layers
