package autograd

import (
	"errors"
	"fmt"
	"slices"

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
	if s, gs := out.Value.Shape(), g.Shape(); !slices.Equal(s, gs) {
		return fmt.Errorf("autograd: output gradient shape %v differs from output shape %v", gs, s)
	}
	order := topoOrder(out)

	// pending counts, per leaf, the uses whose gradients have not arrived.
	pending := map[*Var]int{}
	for _, v := range order {
		for _, in := range v.node.inputs {
			if in.requiresGrad && in.node == nil {
				pending[in]++
			}
		}
	}
	if out.node == nil { // the output is itself a leaf
		accumulate(out, g)
		return nil
	}

	grads := map[*Var]*tensor.Tensor{out: g}
	leafGrads := map[*Var]*tensor.Tensor{}
	for i := len(order) - 1; i >= 0; i-- {
		v := order[i]
		gv := grads[v]
		delete(grads, v)
		if gv == nil {
			// v does not reach the loss through a differentiable path: its
			// leaf inputs receive nothing from it.
			for _, in := range v.node.inputs {
				if in.requiresGrad && in.node == nil {
					leafDone(in, pending, leafGrads)
				}
			}
			continue
		}
		needs := make([]bool, len(v.node.inputs))
		for j, in := range v.node.inputs {
			needs[j] = in.requiresGrad
		}
		gin := v.node.backward(gv, needs)
		for j, in := range v.node.inputs {
			if !in.requiresGrad {
				continue
			}
			gi := gin[j]
			if in.node != nil {
				if gi != nil {
					grads[in] = addGrad(grads[in], gi)
				}
				continue
			}
			if gi != nil {
				leafGrads[in] = addGrad(leafGrads[in], gi)
			}
			leafDone(in, pending, leafGrads)
		}
	}
	return nil
}

// leafDone notes that one use of leaf has delivered its gradient; after the
// last one it accumulates the total into leaf.Grad and fires its hooks.
func leafDone(leaf *Var, pending map[*Var]int, leafGrads map[*Var]*tensor.Tensor) {
	pending[leaf]--
	if pending[leaf] > 0 {
		return
	}
	if lg := leafGrads[leaf]; lg != nil {
		accumulate(leaf, lg)
	}
	delete(leafGrads, leaf)
	for _, h := range leaf.hooks {
		h()
	}
}

func addGrad(acc, g *tensor.Tensor) *tensor.Tensor {
	if acc == nil {
		return g
	}
	return acc.Add(g)
}

// accumulate adds g to the leaf's Grad, keeping Grad a dense tensor that
// no other Var shares.
func accumulate(leaf *Var, g *tensor.Tensor) {
	if leaf.Grad == nil {
		leaf.Grad = g.Clone()
		return
	}
	leaf.Grad = leaf.Grad.Add(g)
}

// topoOrder returns the recorded Vars reachable from out, each after all
// of its inputs, using an explicit stack (deep graphs do not overflow).
func topoOrder(out *Var) []*Var {
	var order []*Var
	visited := map[*Var]bool{}
	type frame struct {
		v    *Var
		next int // index of the next input to visit
	}
	stack := []frame{{v: out}}
	visited[out] = true
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.v.node == nil {
			stack = stack[:len(stack)-1]
			continue
		}
		if top.next < len(top.v.node.inputs) {
			in := top.v.node.inputs[top.next]
			top.next++
			if !visited[in] && in.node != nil {
				visited[in] = true
				stack = append(stack, frame{v: in})
			}
			continue
		}
		order = append(order, top.v)
		stack = stack[:len(stack)-1]
	}
	return order
}
