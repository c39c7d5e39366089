package autograd

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Linear returns x×wᵀ + b for x (…×in), w (out×in) and an optional bias b
// (out), as torch.nn.functional.linear.
func Linear(x, w, b *Var) *Var { return LinearAct(x, w, b, device.ActNone) }

// LinearAct returns act(x×wᵀ + b): a Linear layer and the activation after
// it as one operation, whose bias and activation take one pass over the
// output forward and one backward.
func LinearAct(x, w, b *Var, act device.Activation) *Var {
	x2 := x.Value
	var in []int // x's shape when it is not a matrix
	if x2.Rank() != 2 {
		in = x.Value.Shape()
		x2 = x2.Reshape(-1, in[len(in)-1])
	}
	y := tensor.MatMul(x2, w.Value.T())
	inputs := []*Var{x, w}
	var bv *tensor.Tensor
	if b != nil {
		bv = b.Value
		inputs = append(inputs, b)
	}
	if b != nil || act != device.ActNone {
		y = tensor.BiasAct(y, bv, act, true)
	}
	out := y
	if in != nil {
		out = y.Reshape(append(in[:len(in)-1:len(in)-1], w.Value.Dim(0))...)
	}
	return record(out, func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		g2 := g
		if in != nil {
			g2 = g.Reshape(-1, g.Dim(-1))
		}
		g2 = tensor.ActGrad(g2, y, act)
		grads := []*tensor.Tensor{
			when(needs[0], func() *tensor.Tensor {
				dx := tensor.MatMul(g2, w.Value)
				if in != nil {
					dx = dx.Reshape(in...)
				}
				return dx
			}),
			when(needs[1], func() *tensor.Tensor { return tensor.MatMul(g2.T(), x2) }),
		}
		if b != nil {
			grads = append(grads, when(needs[2], func() *tensor.Tensor { return tensor.BiasGrad(g2) }))
		}
		return grads
	}, inputs...)
}

// Conv2D returns the 2-D cross-correlation of x (N×C×H×W) with w
// (OutC×C/groups×KH×KW) plus an optional bias b (OutC).
func Conv2D(x, w, b *Var, o tensor.ConvOptions) *Var {
	return Conv2DAct(x, w, b, o, device.ActNone)
}

// Conv2DAct returns act(Conv2D(x, w, b)) as one operation: the bias and
// activation take one pass over the output forward and one backward.
func Conv2DAct(x, w, b *Var, o tensor.ConvOptions, act device.Activation) *Var {
	y := tensor.Conv2D(x.Value, w.Value, o)
	inputs := []*Var{x, w}
	var bv *tensor.Tensor
	if b != nil {
		bv = b.Value
		inputs = append(inputs, b)
	}
	if b != nil || act != device.ActNone {
		y = tensor.BiasAct(y, bv, act, true)
	}
	return record(y, func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		g = tensor.ActGrad(g, y, act)
		grads := []*tensor.Tensor{
			when(needs[0], func() *tensor.Tensor { return tensor.Conv2DGradInputLike(g, w.Value, x.Value, o) }),
			when(needs[1], func() *tensor.Tensor { return tensor.Conv2DGradWeightLike(g, x.Value, w.Value, o) }),
		}
		if b != nil {
			grads = append(grads, when(needs[2], func() *tensor.Tensor { return tensor.BiasGrad(g) }))
		}
		return grads
	}, inputs...)
}

// SoftmaxCrossEntropy returns the mean over rows of the cross-entropy of
// softmax(logits) (N×C) against the Int64 labels (N), smoothed as
// PyTorch's label_smoothing, computing the gradient in the same pass. It
// returns nil when the device has no fused kernel for it; callers then
// compose LogSoftmax and a negative log-likelihood.
func SoftmaxCrossEntropy(logits *Var, labels *tensor.Tensor, smoothing float64) *Var {
	loss, grad, ok := tensor.SoftmaxCrossEntropy(logits.Value, labels, smoothing)
	if !ok {
		return nil
	}
	return record(loss, func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		if g.Len() == 1 && g.Item() == 1 {
			return []*tensor.Tensor{grad}
		}
		return []*tensor.Tensor{grad.Mul(g)}
	}, logits)
}
