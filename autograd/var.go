package autograd

import (
	"github.com/hora-dl/hora/tensor"
)

// Var is a value in a computation whose gradient can be taken. A Var made
// by an operation remembers the operation (its node) when any of its
// inputs requires a gradient; leaves (inputs, parameters) have no node.
type Var struct {
	// Value is the tensor the Var holds. Optimizers replace or update it
	// between steps; operations never modify it.
	Value *tensor.Tensor
	// Grad is the gradient accumulated by Backward for a leaf that
	// requires it (nil until the first Backward, or after ZeroGrad).
	Grad *tensor.Tensor

	spareGrad    *tensor.Tensor // the buffer of the last Grad, kept by ZeroGrad for reuse
	requiresGrad bool
	noGrad       bool
	node         *node
	hooks        []func()

	// Bookkeeping of the Backward pass in progress (see backward.go).
	pass    *pass          // the pass that last visited v
	pending int            // uses of v whose gradients have not arrived
	gacc    *tensor.Tensor // v's gradient accumulated so far in this pass
	// gaccShared tells that gacc's memory may be read by another gradient.
	gaccShared bool
}

// node records how a Var was computed: its inputs and the rule that turns
// the output gradient into input gradients.
type node struct {
	inputs []*Var
	// needs[i] tells whether input i requires a gradient.
	needs []bool
	// backward returns one gradient per input, each with its input's shape;
	// it may return nil for inputs whose needs entry is false.
	backward func(g *tensor.Tensor, needs []bool) []*tensor.Tensor
	// backwardInto, when set instead of backward, writes the gradients
	// into out (one entry per input), which the node provides.
	backwardInto func(g *tensor.Tensor, needs []bool, out []*tensor.Tensor)

	in   [3]*Var // inline storage for up to 3 inputs
	need [3]bool
	out  [3]*tensor.Tensor
}

// recorded is a Var and its node, allocated together.
type recorded struct {
	v Var
	n node
}

// Constant wraps a tensor that needs no gradient (data, labels).
func Constant(t *tensor.Tensor) *Var { return &Var{Value: t} }

// Leaf wraps a tensor whose gradient Backward should compute.
func Leaf(t *tensor.Tensor) *Var { return &Var{Value: t, requiresGrad: true} }

// NoGrad returns x in no-grad mode: nothing computed from it is recorded,
// whatever else takes part (parameters included). It is this package's
// no-grad scope; it travels with the data instead of living in global
// state, so goroutines running different ranks never see each other's mode:
//
//	logits := model.Forward(autograd.NoGrad(autograd.Constant(images)))
func NoGrad(x *Var) *Var { return &Var{Value: x.Value, noGrad: true} }

// Detach returns a Var with x's value and no history.
func (v *Var) Detach() *Var { return Constant(v.Value) }

// RequiresGrad reports whether Backward computes a gradient for v.
func (v *Var) RequiresGrad() bool { return v.requiresGrad }

// IsNoGrad reports whether v is in no-grad mode (see NoGrad).
func (v *Var) IsNoGrad() bool { return v.noGrad }

// Shape returns the shape of the value.
func (v *Var) Shape() []int { return v.Value.Shape() }

// ZeroGrad drops the accumulated gradient: Grad becomes nil. Its memory is
// reused by the next Backward, so a tensor read from Grad before ZeroGrad
// changes after the next Backward (Clone it to keep it).
func (v *Var) ZeroGrad() {
	if v.Grad != nil {
		v.spareGrad = v.Grad
	}
	v.Grad = nil
}

// Param is a named trainable leaf, such as "features.0.weight".
type Param struct {
	*Var
	// Name is the parameter's dotted path in its model.
	Name string
}

// NewParam returns a parameter holding t.
func NewParam(name string, t *tensor.Tensor) *Param {
	return &Param{Var: Leaf(t), Name: name}
}

// OnGradReady registers fn to run during Backward as soon as p's gradient
// for this pass is complete. Hooks fire in the reverse order in which
// parameters are used, which lets a distributed optimizer start
// communicating early gradients while later ones are still being computed.
func (p *Param) OnGradReady(fn func(p *Param)) {
	p.hooks = append(p.hooks, func() { fn(p) })
}

// record builds the output Var of an operation, recording it when some
// input requires a gradient and none is in no-grad mode.
func record(value *tensor.Tensor, backward func(g *tensor.Tensor, needs []bool) []*tensor.Tensor, inputs ...*Var) *Var {
	v := recordInto(value, nil, inputs...)
	if v.node != nil {
		v.node.backward = backward
	}
	return v
}

// recordInto is record for a rule that writes its gradients into the
// slice it is given (one entry per input, nil where not needed), which
// saves an allocation per node in Backward.
func recordInto(value *tensor.Tensor, backward func(g *tensor.Tensor, needs []bool, out []*tensor.Tensor), inputs ...*Var) *Var {
	need := false
	for _, in := range inputs {
		if in.noGrad {
			return &Var{Value: value, noGrad: true}
		}
		need = need || in.requiresGrad
	}
	if !need {
		return &Var{Value: value}
	}
	r := &recorded{v: Var{Value: value, requiresGrad: true}}
	n := &r.n
	n.backwardInto = backward
	if len(inputs) <= len(n.in) {
		n.inputs, n.needs = n.in[:len(inputs)], n.need[:len(inputs)]
	} else {
		n.inputs, n.needs = make([]*Var, len(inputs)), make([]bool, len(inputs))
	}
	copy(n.inputs, inputs)
	for i, in := range inputs {
		n.needs[i] = in.requiresGrad
	}
	r.v.node = n
	return &r.v
}
