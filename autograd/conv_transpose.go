package autograd

import (
	"fmt"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// ConvTranspose2D returns the 2-D transposed convolution (the gradient of
// Conv2D with respect to its input, used as a layer) of x (N×InC×H×W) with
// w (InC×OutC/groups×KH×KW) plus an optional bias b (OutC), as PyTorch's
// conv_transpose2d. o holds the stride, padding, dilation and groups of
// the convolution being transposed; outH×outW is the output's size, which
// must be one that this convolution maps back to H×W: with padding p,
// stride s, dilation d and kernel k,
//
//	out = (H-1)·s - 2·p + d·(k-1) + 1 + a   for some 0 ≤ a < s
//
// (a is the "output padding"). ConvTranspose2D panics when the shapes do
// not fit, naming them.
func ConvTranspose2D(x, w, b *Var, o tensor.ConvOptions, outH, outW int) *Var {
	xs, ws := x.Value.Shape(), w.Value.Shape()
	if len(xs) != 4 || len(ws) != 4 {
		panic(fmt.Sprintf("autograd: ConvTranspose2D: input %v and weight %v must both be 4-D", xs, ws))
	}
	groups := max(o.Groups, 1)
	if xs[1] != ws[0] || xs[1]%groups != 0 {
		panic(fmt.Sprintf("autograd: ConvTranspose2D: input %v does not match weight %v with %d groups", xs, ws, groups))
	}
	outShape := []int{xs[0], ws[1] * groups, outH, outW}
	y := tensor.Conv2DGradInput(x.Value, w.Value, outShape, o)
	inputs := [3]*Var{x, w, b}
	if b != nil {
		y = tensor.BiasAct(y, b.Value, device.ActNone, true)
	}
	return recordInto(y, func(g *tensor.Tensor, needs []bool, grads []*tensor.Tensor) {
		// y is linear in x and in w: y = Conv2Dᵀ_w(x). Its adjoint in x is
		// the convolution of g with w; in w it is the convolution weight
		// gradient with g as the convolution's input and x as its output
		// gradient.
		if needs[0] {
			grads[0] = tensor.Conv2D(g, w.Value, o)
		}
		if needs[1] {
			grads[1] = tensor.Conv2DGradWeight(x.Value, g, ws, o)
		}
		if b != nil && needs[2] {
			grads[2] = tensor.BiasGrad(g)
		}
	}, operands(inputs)...)
}
