package device

// OptimizerKernels is an optional kernel set of a device whose Kernels()
// value implements it: the update of one parameter by an optimizer, in
// place and in one pass over the parameter, its gradient and its state.
// Package optim finds it by type assertion on the parameter's device and
// otherwise composes the update from elementwise kernels. All buffers are
// dense, of n elements and of one floating-point type.
type OptimizerKernels interface {
	// SGDStep updates param in place with torch.optim.SGD's rule, using
	// and updating the momentum buffer buf (ignored when Momentum is 0;
	// First marks its first use, when it is set to the gradient).
	SGDStep(h SGDHyper, param, grad, buf Buffer, n int)

	// AdamStep updates param in place with torch.optim.Adam's rule (AdamW's
	// when Decoupled), using and updating the moment buffers m and v, and
	// maxV for AMSGrad (nil otherwise).
	AdamStep(h AdamHyper, param, grad, m, v, maxV Buffer, n int)
}

// SGDHyper holds the settings of one SGD step.
type SGDHyper struct {
	LR, Momentum, Dampening, WeightDecay float64
	Nesterov, First                      bool
}

// AdamHyper holds the settings of one Adam step; Step counts from 1.
type AdamHyper struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	Step                               int
	Decoupled, AMSGrad                 bool
}

// MultiStepKernels is an optional kernel set of a device whose Kernels()
// value implements it: the optimizer updates of a parameter group (many
// parameters, one set of hyper-parameters) in one call, so that a GPU
// launches one kernel per group rather than one per parameter. Each
// method returns false, changing nothing, when it has no kernel for these
// buffers (their type, say); callers then update each parameter with
// OptimizerKernels. Buffer i of each list has ns[i] elements.
type MultiStepKernels interface {
	OptimizerKernels

	// SGDSteps is OptimizerKernels.SGDStep for each params[i] (bufs[i] is
	// its momentum buffer, or nil).
	SGDSteps(h SGDHyper, params, grads, bufs []Buffer, ns []int) bool
	// AdamSteps is OptimizerKernels.AdamStep without AMSGrad for each
	// params[i].
	AdamSteps(h AdamHyper, params, grads, m, v []Buffer, ns []int) bool
}
