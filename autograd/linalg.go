package autograd

import (
	"github.com/hora-dl/hora/tensor"
)

// MatMul returns the (batched, broadcasting) matrix product a×b.
func MatMul(a, b *Var) *Var {
	return record(tensor.MatMul(a.Value, b.Value), func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		return []*tensor.Tensor{
			when(needs[0], func() *tensor.Tensor { return tensor.MatMul(g, b.Value.T()).SumTo(a.Value.Shape()) }),
			when(needs[1], func() *tensor.Tensor { return tensor.MatMul(a.Value.T(), g).SumTo(b.Value.Shape()) }),
		}
	}, a, b)
}

// Linear returns x×wᵀ + b for x (…×in), w (out×in) and an optional bias b
// (out), as torch.nn.functional.linear.
func Linear(x, w, b *Var) *Var {
	in := x.Value.Shape()
	x2 := x.Value.Reshape(-1, in[len(in)-1])
	y := tensor.MatMul(x2, w.Value.T())
	inputs := []*Var{x, w}
	if b != nil {
		y = y.Add(b.Value)
		inputs = append(inputs, b)
	}
	outShape := append(in[:len(in)-1:len(in)-1], w.Value.Dim(0))
	return record(y.Reshape(outShape...), func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		g2 := g.Reshape(-1, g.Dim(-1))
		grads := []*tensor.Tensor{
			when(needs[0], func() *tensor.Tensor { return tensor.MatMul(g2, w.Value).Reshape(in...) }),
			when(needs[1], func() *tensor.Tensor { return tensor.MatMul(g2.T(), x2) }),
		}
		if b != nil {
			grads = append(grads, when(needs[2], func() *tensor.Tensor { return g2.Sum(0, false) }))
		}
		return grads
	}, inputs...)
}

// Conv2D returns the 2-D cross-correlation of x (N×C×H×W) with w
// (OutC×C/groups×KH×KW) plus an optional bias b (OutC).
func Conv2D(x, w, b *Var, o tensor.ConvOptions) *Var {
	y := tensor.Conv2D(x.Value, w.Value, o)
	inputs := []*Var{x, w}
	if b != nil {
		y = y.Add(b.Value.Reshape(-1, 1, 1))
		inputs = append(inputs, b)
	}
	return record(y, func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		grads := []*tensor.Tensor{
			when(needs[0], func() *tensor.Tensor { return tensor.Conv2DGradInput(g, w.Value, x.Value.Shape(), o) }),
			when(needs[1], func() *tensor.Tensor { return tensor.Conv2DGradWeight(g, x.Value, w.Value.Shape(), o) }),
		}
		if b != nil {
			grads = append(grads, when(needs[2], func() *tensor.Tensor { return g.SumAxes([]int{0, 2, 3}, false) }))
		}
		return grads
	}, inputs...)
}

// MaxPool2D takes the maximum of each window of x (N×C×H×W).
func MaxPool2D(x *Var, o tensor.PoolOptions) *Var {
	y, argmax := tensor.MaxPool2D(x.Value, o)
	return record(y, func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{tensor.MaxPool2DGrad(g, argmax, x.Value.Shape(), o)}
	}, x)
}

// AvgPool2D averages each window of x (N×C×H×W).
func AvgPool2D(x *Var, o tensor.PoolOptions) *Var {
	return record(tensor.AvgPool2D(x.Value, o), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{tensor.AvgPool2DGrad(g, x.Value.Shape(), o)}
	}, x)
}
