// Package autograd records computations on tensors and differentiates them
// (reverse mode, define by run).
//
// # Overview
//
// Every operation on *Var values computes its result right away with the
// tensor package and, when some input requires a gradient, records a node:
// the inputs and a closure that turns the output's gradient into the
// inputs' gradients. Backward walks the recorded nodes from the loss in
// reverse topological order (an explicit stack, no recursion) and adds
// each leaf's gradient to its Grad, so a value used twice gets the sum of
// both contributions:
//
//	w := autograd.NewParam("w", tensor.FromFloat32([]float32{2}, 1))
//	x := autograd.Constant(tensor.FromFloat32([]float32{3}, 1))
//	y := autograd.Mul(w.Var, autograd.Mul(w.Var, x)) // y = w²·x
//	_ = autograd.Backward(autograd.SumAll(y))        // w.Grad = 2·w·x = 12
//
// # No-grad mode
//
// NoGrad(x) marks x so that nothing computed from it is recorded. The mode
// travels with the data rather than living in a global switch, so ranks
// running as goroutines never interfere with one another.
//
// # Gradient-ready hooks
//
// Param.OnGradReady registers a function that Backward calls as soon as a
// parameter's gradient for the current pass is final; hooks fire in the
// reverse order of use. The dist package uses them to overlap gradient
// communication with the rest of the backward pass.
//
// # Checking
//
// GradCheck compares Backward's gradients with central finite differences
// in float64; every gradient rule in this package is tested with it.
package autograd
