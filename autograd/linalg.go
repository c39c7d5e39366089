package autograd

import (
	"github.com/hora-dl/hora/tensor"
)

// MatMul returns the (batched, broadcasting) matrix product a×b.
func MatMul(a, b *Var) *Var {
	return nameOp(record(tensor.MatMul(a.Value, b.Value), func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		return []*tensor.Tensor{
			when(needs[0], func() *tensor.Tensor { return tensor.MatMul(g, b.Value.T()).SumTo(a.Value.Shape()) }),
			when(needs[1], func() *tensor.Tensor { return tensor.MatMul(a.Value.T(), g).SumTo(b.Value.Shape()) }),
		}
	}, a, b), "MatMul")
}

// MaxPool2D takes the maximum of each window of x (N×C×H×W).
// When nothing is recorded (x in no-grad mode or not requiring a
// gradient), the positions of the maxima are not computed.
func MaxPool2D(x *Var, o tensor.PoolOptions) *Var {
	if x.noGrad || !x.requiresGrad {
		return recordInto(tensor.MaxPool2DValues(x.Value, o), nil, x)
	}
	y, argmax := tensor.MaxPool2D(x.Value, o)
	return describeOp(recordInto(y, func(g *tensor.Tensor, _ []bool, grads []*tensor.Tensor) {
		grads[0] = tensor.MaxPool2DGrad(g, argmax, x.Value.Shape(), o)
	}, x), "MaxPool2D", o)
}

// AvgPool2D averages each window of x (N×C×H×W).
func AvgPool2D(x *Var, o tensor.PoolOptions) *Var {
	return describeOp(record(tensor.AvgPool2D(x.Value, o), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{tensor.AvgPool2DGrad(g, x.Value.Shape(), o)}
	}, x), "AvgPool2D", o)
}
