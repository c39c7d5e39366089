package autograd

import (
	"errors"
	"fmt"

	"github.com/hora-dl/hora/tensor"
)

// ErrNoGrad is returned by Backward when the loss does not depend on
// anything that requires a gradient.
var ErrNoGrad = errors.New("autograd: loss does not require a gradient")

// Backward computes the gradient of the one-element loss with respect to
// every leaf it depends on that requires a gradient, adding it to the
// leaf's Grad. Gradient-ready hooks fire as each leaf's gradient completes.
func Backward(loss *Var) error {
	if loss.Value.Len() != 1 {
		return fmt.Errorf("autograd: Backward needs a one-element loss, found shape %v", loss.Value.Shape())
	}
	return BackwardWith(loss, tensor.FullLike(loss.Value, 1))
}

// BackwardWith is Backward for a loss of any shape, starting from the
// output gradient g (same shape as out).
func BackwardWith(out *Var, g *tensor.Tensor) error {
	if !out.requiresGrad {
		return ErrNoGrad
	}
	if !g.SameShape(out.Value) {
		return fmt.Errorf("autograd: output gradient shape %v differs from output shape %v", g.Shape(), out.Value.Shape())
	}
	if out.node == nil { // the output is itself a leaf
		accumulate(out, g, true)
		out.fireHooks()
		return nil
	}
	p := &pass{}
	order := p.topoOrder(out)
	defer func() { p.order, p.stack = nil, nil }() // leafs keep p: let go of the graph

	// pending counts, per leaf, the uses whose gradients have not arrived.
	for _, v := range order {
		for _, in := range v.node.inputs {
			if in.requiresGrad && in.node == nil {
				if in.pass != p {
					in.pass, in.pending, in.gacc = p, 0, nil
				}
				in.pending++
			}
		}
	}
	out.gacc = g
	// The gradients computed from here on in the step's arena are given
	// back to it (tensor.Release) as soon as the pass is done with them,
	// so that later ones reuse their memory: the backward pass then holds
	// about the gradients in flight, not all it computed. Only those the
	// arena handed out after this mark qualify; g and what the forward
	// pass computed (which a rule may return as a gradient) never do.
	mark, release := arenaMark(g, out.Value)
	for i := len(order) - 1; i >= 0; i-- {
		v := order[i]
		gv := v.gacc
		v.gacc = nil
		// Nothing but v reads gv (see gaccShared); out's gradient is the
		// caller's.
		gvOwned := v != out && !v.gaccShared
		if gv == nil {
			// v does not reach the loss through a differentiable path: its
			// leaf inputs receive nothing from it.
			for _, in := range v.node.inputs {
				if in.requiresGrad && in.node == nil {
					leafDone(in)
				}
			}
			continue
		}
		gin := v.node.grads(gv)
		for j, in := range v.node.inputs {
			if !in.requiresGrad {
				continue
			}
			if gi := gin[j]; gi != nil {
				// A leaf may take over the memory of its gradient (see
				// accumulate) only if nothing else still reads it.
				giShared := sharesMemory(gi, gv, gvOwned, gin, j)
				if in.gacc == nil {
					in.gacc, in.gaccShared = gi, giShared
				} else {
					sum := in.gacc.Add(gi)
					if release && sum.Buffer() != in.gacc.Buffer() && sum.Buffer() != gi.Buffer() {
						// The two terms are done with unless read elsewhere.
						if !in.gaccShared {
							in.gacc.Release(mark)
						}
						if !giShared {
							gi.Release(mark)
						}
					}
					in.gacc, in.gaccShared = sum, false // a new sum
				}
			}
			if in.node == nil {
				leafDone(in)
			}
		}
		if release && gvOwned && !anySharesMemory(gv, gin) {
			gv.Release(mark)
		}
	}
	return nil
}

// arenaMark returns the mark (tensor.Arena.Mark) of the arena of the
// pass's output gradient g, or else of the output's value, and whether
// there is one: without an arena, nothing is released.
func arenaMark(g, out *tensor.Tensor) (tensor.ArenaMark, bool) {
	a := g.Arena()
	if a == nil {
		a = out.Arena()
	}
	if a == nil {
		return tensor.ArenaMark{}, false
	}
	return a.Mark(), true
}

// anySharesMemory reports whether one of the input gradients gin uses
// the memory of the output gradient gv.
func anySharesMemory(gv *tensor.Tensor, gin []*tensor.Tensor) bool {
	b := gv.Buffer()
	for _, gi := range gin {
		if gi != nil && gi.Buffer() == b {
			return true
		}
	}
	return false
}

// grads runs the node's rule on its output gradient g.
func (n *node) grads(g *tensor.Tensor) []*tensor.Tensor {
	if n.backwardInto == nil {
		return n.backward(g, n.needs)
	}
	var out []*tensor.Tensor
	if len(n.inputs) <= len(n.out) {
		out = n.out[:len(n.inputs)]
		clear(out)
	} else {
		out = make([]*tensor.Tensor, len(n.inputs))
	}
	n.backwardInto(g, n.needs, out)
	return out
}

// pass is one Backward call; Vars point at the pass that last visited them.
type pass struct {
	order []*Var
	stack []frame
}

type frame struct {
	v    *Var
	next int // index of the next input to visit
}

// leafDone notes that one use of leaf has delivered its gradient; after the
// last one it accumulates the total into leaf.Grad and fires its hooks.
func leafDone(leaf *Var) {
	leaf.pending--
	if leaf.pending > 0 {
		return
	}
	if lg := leaf.gacc; lg != nil {
		accumulate(leaf, lg, leaf.gaccShared)
	}
	leaf.gacc = nil
	leaf.fireHooks()
}

func (v *Var) fireHooks() {
	for _, h := range v.hooks {
		h()
	}
}

// sharesMemory reports whether gradient gin[j] uses the memory of
// another of the node's input gradients, or of its output gradient gv
// unless the node owned gv (nothing else reads it: gin[j] then takes it
// over).
func sharesMemory(gi, gv *tensor.Tensor, gvOwned bool, gin []*tensor.Tensor, j int) bool {
	b := gi.Buffer()
	if b == gv.Buffer() && !gvOwned {
		return true
	}
	for k, o := range gin {
		if k != j && o != nil && o.Buffer() == b {
			return true
		}
	}
	return false
}

// accumulate adds g to the leaf's Grad, keeping Grad a dense tensor that
// no other Var shares and that lives outside any arena (it outlives the
// step). The buffer ZeroGrad let go of is reused when the shape matches.
// Unless shared (g's memory may still be read elsewhere in the pass), a
// gradient computed in an arena becomes Grad without a copy.
func accumulate(leaf *Var, g *tensor.Tensor, shared bool) {
	if leaf.Grad != nil {
		leaf.Grad.AddInPlace(g)
		return
	}
	spare := leaf.spareGrad
	leaf.spareGrad = nil
	if spare != nil && !spare.SameLayout(g) {
		spare = nil
	}
	// A gradient computed in the step's arena becomes Grad without a copy,
	// the arena taking the old Grad's memory in exchange.
	if !shared {
		if kept, ok := g.Keep(spare); ok {
			leaf.Grad = kept
			return
		}
	}
	if spare == nil {
		spare = tensor.New(g.Device(), g.DType(), g.Shape()...)
	}
	spare.CopyFrom(g)
	leaf.Grad = spare
}

// topoOrder returns the recorded Vars reachable from out, each after all
// of its inputs, using an explicit stack (deep graphs do not overflow).
func (p *pass) topoOrder(out *Var) []*Var {
	p.order = make([]*Var, 0, 32)
	p.stack = append(make([]frame, 0, 32), frame{v: out})
	out.pass, out.gacc = p, nil
	for len(p.stack) > 0 {
		top := &p.stack[len(p.stack)-1]
		if top.v.node == nil {
			p.stack = p.stack[:len(p.stack)-1]
			continue
		}
		if top.next < len(top.v.node.inputs) {
			in := top.v.node.inputs[top.next]
			top.next++
			if in.pass != p && in.node != nil {
				in.pass, in.gacc = p, nil
				p.stack = append(p.stack, frame{v: in})
			}
			continue
		}
		p.order = append(p.order, top.v)
		p.stack = p.stack[:len(p.stack)-1]
	}
	return p.order
}
