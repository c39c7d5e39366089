package optim

import (
	"fmt"
	"math"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
)

// ClipGradNorm scales the gradients of params in place so that their
// global L2 norm is at most maxNorm, like torch.nn.utils.clip_grad_norm_
// (PyTorch 1.13), and returns the norm before clipping. Parameters whose
// Grad is nil are ignored; with no gradient at all it returns 0.
//
// The norm is that of all gradients concatenated: each gradient's sum of
// squares is taken in its own type, as PyTorch does (float32 squares,
// which the CPU device sums in float64; a gradient above 1.8e19 then
// gives an infinite norm), and the sums are added in float64.
// The gradients are multiplied by maxNorm/(total+1e-6) when that is below
// 1 and left alone otherwise.
//
// Unlike PyTorch, which multiplies by a NaN coefficient, a NaN or infinite
// total norm leaves every gradient unchanged and is returned as it is, so
// that the caller can report it (or skip the step).
//
// It panics when maxNorm is negative or NaN, a programming error.
func ClipGradNorm(params []*autograd.Param, maxNorm float64) (totalNorm float64) {
	if !(maxNorm >= 0) {
		panic(fmt.Sprintf("optim: ClipGradNorm: maxNorm must be >= 0, found %v", maxNorm))
	}
	sumSq := 0.0
	for _, p := range params {
		if p == nil || p.Var == nil || p.Grad == nil {
			continue
		}
		g := p.Grad
		if !g.DType().IsFloat() {
			g = g.Cast(device.Float32) // float16 is a storage type
		}
		// In the gradient's own type, as torch.nn.utils.clip_grad_norm_
		// (the CPU device sums in float64 anyway).
		sumSq += g.Mul(g).SumAll().Item()
	}
	total := math.Sqrt(sumSq)
	if math.IsNaN(total) || math.IsInf(total, 0) {
		return total
	}
	coef := maxNorm / (total + 1e-6)
	if coef >= 1 {
		return total
	}
	for _, p := range params {
		if p == nil || p.Var == nil || p.Grad == nil {
			continue
		}
		if p.Grad.IsContiguous() {
			p.Grad.MulScalarInPlace(coef)
		} else {
			p.Grad.CopyFrom(p.Grad.MulScalar(coef))
		}
	}
	return total
}
