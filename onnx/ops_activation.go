package onnx

import (
	"math"
	"slices"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Activation operators: Relu, LeakyRelu, PRelu, Elu, Selu, Celu,
// ThresholdedRelu, Sigmoid, HardSigmoid, HardSwish, Tanh, Softplus,
// Softsign, Shrink and Clip. All are differentiable in their floating-point
// inputs (PRelu also in its slope); the ones ONNX defines for integers
// (Relu, PRelu, Clip, Shrink) compute those in float64.

func init() {
	register("Relu", 1, true, ewAnyUnary(autograd.Relu))
	register("Sigmoid", 1, true, ewFloatUnary(autograd.Sigmoid))
	register("Tanh", 1, true, ewFloatUnary(autograd.Tanh))
	register("Softplus", 1, true, ewFloatUnary(autograd.Softplus))
	register("Softsign", 1, true, ewFloatUnary(autograd.Softsign))
	register("LeakyRelu", 1, true, actAlpha(0.01, autograd.LeakyRelu))
	register("Elu", 1, true, actAlpha(1, autograd.Elu))
	register("Celu", 12, true, actAlpha(1, func(x *autograd.Var, alpha float64) *autograd.Var {
		// alpha·elu(x/alpha)
		return autograd.MulScalar(autograd.Elu(autograd.MulScalar(x, 1/alpha), 1), alpha)
	}))
	register("ThresholdedRelu", 10, true, actAlpha(1, func(x *autograd.Var, alpha float64) *autograd.Var {
		return autograd.Mul(x, autograd.Constant(x.Value.GtScalar(alpha)))
	}))
	register("Selu", 1, true, opSelu)
	register("HardSigmoid", 1, true, opHardSigmoid)
	register("HardSwish", 14, true, ewFloatUnary(func(x *autograd.Var) *autograd.Var {
		return autograd.Mul(x, autograd.HardSigmoid(x, 1.0/6, 0.5))
	}))
	register("PRelu", 1, true, opPRelu)
	register("Clip", 1, true, opClip)
	register("Shrink", 9, true, opShrink)
}

// actFloatInput returns the operator's one input, X, checking that it is
// floating point.
func actFloatInput(c *nodeCtx) (*autograd.Var, error) {
	x, err := c.input("X")
	if err != nil {
		return nil, err
	}
	if x.Value.DType() == device.Int64 {
		return nil, c.Errorf("input X is an integer or bool tensor; %s takes float or double", c.Op())
	}
	return x, nil
}

// actAlpha implements an activation of a float input with one attribute,
// alpha (default def).
func actAlpha(def float64, f func(x *autograd.Var, alpha float64) *autograd.Var) opFunc {
	return func(c *nodeCtx) ([]*autograd.Var, error) {
		x, err := actFloatInput(c)
		if err != nil {
			return nil, err
		}
		alpha := c.AttrFloat("alpha", def)
		if c.Op() == "Celu" && alpha == 0 {
			return nil, c.Errorf("attribute alpha is 0; Celu divides by it")
		}
		return []*autograd.Var{f(x, alpha)}, nil
	}
}

// opSelu implements Selu: gamma·(x for x > 0, alpha·(eˣ-1) otherwise).
func opSelu(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := actFloatInput(c)
	if err != nil {
		return nil, err
	}
	alpha := c.AttrFloat("alpha", 1.67326319217681884765625)
	gamma := c.AttrFloat("gamma", 1.05070102214813232421875)
	return []*autograd.Var{autograd.MulScalar(autograd.Elu(x, alpha), gamma)}, nil
}

// opHardSigmoid implements HardSigmoid: max(0, min(1, alpha·x + beta)).
func opHardSigmoid(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := actFloatInput(c)
	if err != nil {
		return nil, err
	}
	alpha, beta := c.AttrFloat("alpha", 0.2), c.AttrFloat("beta", 0.5)
	return []*autograd.Var{autograd.HardSigmoid(x, alpha, beta)}, nil
}

// opPRelu implements PRelu: x where x > 0 and slope·x elsewhere; slope
// broadcasts to X's shape (unidirectional broadcasting).
func opPRelu(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("X", "slope")
	if err != nil {
		return nil, err
	}
	x, slope := in[0], in[1]
	if err := ewSameType(c, []string{"X", "slope"}, x, slope); err != nil {
		return nil, err
	}
	shape, ok := tensor.BroadcastShapes(x.Value.Shape(), slope.Value.Shape())
	if !ok || !slices.Equal(shape, x.Value.Shape()) {
		return nil, c.Errorf("input slope shape %v does not broadcast to input X shape %v", slope.Value.Shape(), x.Value.Shape())
	}
	return []*autograd.Var{ewIntOrFloat(func(vs ...*autograd.Var) *autograd.Var { return autograd.PRelu(vs[0], vs[1]) }, x, slope)}, nil
}

// opClip implements Clip: the bounds are the min and max attributes
// before opset 11 and the optional scalar inputs min and max from opset 11
// (absent means unbounded). With min > max every element becomes max.
func opClip(c *nodeCtx) ([]*autograd.Var, error) {
	decl := []string{"input", "min?", "max?"}
	if c.Opset() < 11 {
		decl = decl[:1] // min and max are attributes
	}
	in, err := c.inputs(decl...)
	if err != nil {
		return nil, err
	}
	x := in[0]
	lo, hi := math.Inf(-1), math.Inf(1)
	if c.Opset() < 11 {
		lo, hi = c.AttrFloat("min", lo), c.AttrFloat("max", hi)
		if c.HasAttr("min") && float32(lo) == -math.MaxFloat32 {
			lo = math.Inf(-1)
		}
		if c.HasAttr("max") && float32(hi) == math.MaxFloat32 {
			hi = math.Inf(1)
		}
	} else {
		for i, name := range []string{"min", "max"} {
			b := in[1+i]
			if b == nil {
				continue
			}
			if b.Value.Len() != 1 {
				return nil, c.Errorf("input %s has shape %v, want a scalar", name, b.Value.Shape())
			}
			if b.Value.DType() != x.Value.DType() {
				return nil, c.Errorf("input %s is %v but input is %v: the element types must match", name, b.Value.DType(), x.Value.DType())
			}
			v := c.Floats(b)[0]
			if i == 0 {
				lo = v
			} else {
				hi = v
			}
		}
	}
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return nil, c.Errorf("the bounds min %g and max %g must not be NaN", lo, hi)
	}
	out := ewIntOrFloat(func(vs ...*autograd.Var) *autograd.Var { return autograd.Clamp(vs[0], lo, hi) }, x)
	return []*autograd.Var{out}, nil
}

// opShrink implements Shrink: x + bias for x < -lambd, x - bias for
// x > lambd and 0 in between; the gradient is 1 outside [-lambd, lambd].
func opShrink(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("input")
	if err != nil {
		return nil, err
	}
	lambd, bias := c.AttrFloat("lambd", 0.5), c.AttrFloat("bias", 0)
	out := ewIntOrFloat(func(vs ...*autograd.Var) *autograd.Var {
		v := vs[0].Value
		keep := v.GtScalar(lambd).Add(v.Neg().GtScalar(lambd)) // |x| > lambd (lambd ≥ 0)
		shifted := autograd.Sub(vs[0], autograd.Constant(v.Sign().MulScalar(bias)))
		return autograd.Mul(shifted, autograd.Constant(keep))
	}, x)
	return []*autograd.Var{out}, nil
}
