package autograd

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Gradient rules for elementwise operations. Binary operations broadcast;
// their gradients are summed back to each input's shape.

// Add returns a + b.
func Add(a, b *Var) *Var {
	as, bs := a.Value.Shape(), b.Value.Shape()
	return nameOp(record(a.Value.Add(b.Value), func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		return []*tensor.Tensor{when(needs[0], func() *tensor.Tensor { return g.SumTo(as) }),
			when(needs[1], func() *tensor.Tensor { return g.SumTo(bs) })}
	}, a, b), "Add")
}

// AddAct returns act(a + b) as one operation, a residual block's sum and
// activation: for a and b of one shape, one pass over memory forward (no
// separate sum is stored) and one backward, where both inputs receive the
// activation's gradient. Other shapes broadcast as in Add.
func AddAct(a, b *Var, act device.Activation) *Var {
	as, bs := a.Value.Shape(), b.Value.Shape()
	y := tensor.AddAct(a.Value, b.Value, act)
	return describeOp(record(y, func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		g = tensor.ActGrad(g, y, act)
		return []*tensor.Tensor{when(needs[0], func() *tensor.Tensor { return g.SumTo(as) }),
			when(needs[1], func() *tensor.Tensor { return g.SumTo(bs) })}
	}, a, b), "AddAct", ActAttrs{Act: act})
}

// Sub returns a - b.
func Sub(a, b *Var) *Var {
	as, bs := a.Value.Shape(), b.Value.Shape()
	return nameOp(record(a.Value.Sub(b.Value), func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		return []*tensor.Tensor{when(needs[0], func() *tensor.Tensor { return g.SumTo(as) }),
			when(needs[1], func() *tensor.Tensor { return g.Neg().SumTo(bs) })}
	}, a, b), "Sub")
}

// Mul returns a · b elementwise.
func Mul(a, b *Var) *Var {
	return nameOp(record(a.Value.Mul(b.Value), func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		return []*tensor.Tensor{when(needs[0], func() *tensor.Tensor { return g.Mul(b.Value).SumTo(a.Value.Shape()) }),
			when(needs[1], func() *tensor.Tensor { return g.Mul(a.Value).SumTo(b.Value.Shape()) })}
	}, a, b), "Mul")
}

// Div returns a / b elementwise.
func Div(a, b *Var) *Var {
	return nameOp(record(a.Value.Div(b.Value), func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		return []*tensor.Tensor{when(needs[0], func() *tensor.Tensor { return g.Div(b.Value).SumTo(a.Value.Shape()) }),
			when(needs[1], func() *tensor.Tensor {
				// d(a/b)/db = -a/b²
				return g.Mul(a.Value).Div(b.Value.Mul(b.Value)).Neg().SumTo(b.Value.Shape())
			})}
	}, a, b), "Div")
}

// Pow returns aᵇ elementwise (a > 0 where b's gradient is needed).
func Pow(a, b *Var) *Var {
	y := a.Value.Pow(b.Value)
	return nameOp(record(y, func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		return []*tensor.Tensor{when(needs[0], func() *tensor.Tensor {
			// b · a^(b-1)
			return g.Mul(b.Value).Mul(a.Value.Pow(b.Value.AddScalar(-1))).SumTo(a.Value.Shape())
		}), when(needs[1], func() *tensor.Tensor {
			return g.Mul(y).Mul(a.Value.Log()).SumTo(b.Value.Shape())
		})}
	}, a, b), "Pow")
}

// Maximum returns the elementwise maximum; ties send the gradient to a.
func Maximum(a, b *Var) *Var {
	return nameOp(record(a.Value.Maximum(b.Value), func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		mask := a.Value.Ge(b.Value)
		return splitByMask(g, mask, a, b, needs)
	}, a, b), "Maximum")
}

// Minimum returns the elementwise minimum; ties send the gradient to a.
func Minimum(a, b *Var) *Var {
	return nameOp(record(a.Value.Minimum(b.Value), func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		mask := a.Value.Le(b.Value)
		return splitByMask(g, mask, a, b, needs)
	}, a, b), "Minimum")
}

// splitByMask sends g to a where mask is 1 and to b elsewhere.
func splitByMask(g, mask *tensor.Tensor, a, b *Var, needs []bool) []*tensor.Tensor {
	return []*tensor.Tensor{
		when(needs[0], func() *tensor.Tensor { return g.Mul(mask).SumTo(a.Value.Shape()) }),
		when(needs[1], func() *tensor.Tensor { return g.Mul(mask.Neg().AddScalar(1)).SumTo(b.Value.Shape()) }),
	}
}

// Where returns a where cond (a constant tensor) is nonzero, b elsewhere.
func Where(cond *tensor.Tensor, a, b *Var) *Var {
	return describeOp(record(tensor.Where(cond, a.Value, b.Value), func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		zero := tensor.FullLike(g, 0)
		return []*tensor.Tensor{
			when(needs[0], func() *tensor.Tensor { return tensor.Where(cond, g, zero).SumTo(a.Value.Shape()) }),
			when(needs[1], func() *tensor.Tensor { return tensor.Where(cond, zero, g).SumTo(b.Value.Shape()) }),
		}
	}, a, b), "Where", WhereAttrs{cond})
}

// unary records y = f(x) whose derivative is computed by dydx(x, y).
func unary(x *Var, y *tensor.Tensor, dydx func(x, y *tensor.Tensor) *tensor.Tensor) *Var {
	return record(y, func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		return []*tensor.Tensor{g.Mul(dydx(x.Value, y))}
	}, x)
}

// Neg returns -x.
func Neg(x *Var) *Var {
	return nameOp(record(x.Value.Neg(), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{g.Neg()}
	}, x), "Neg")
}

// AddScalar returns x + s.
func AddScalar(x *Var, s float64) *Var {
	return describeOp(record(x.Value.AddScalar(s), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{g}
	}, x), "AddScalar", ScalarAttrs{s})
}

// MulScalar returns x · s.
func MulScalar(x *Var, s float64) *Var {
	return describeOp(record(x.Value.MulScalar(s), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{g.MulScalar(s)}
	}, x), "MulScalar", ScalarAttrs{s})
}

// PowScalar returns xˢ.
func PowScalar(x *Var, s float64) *Var {
	return describeOp(unary(x, x.Value.PowScalar(s), func(x, _ *tensor.Tensor) *tensor.Tensor {
		return x.PowScalar(s - 1).MulScalar(s)
	}), "PowScalar", ScalarAttrs{s})
}

// Exp returns eˣ.
func Exp(x *Var) *Var {
	return nameOp(unary(x, x.Value.Exp(), func(_, y *tensor.Tensor) *tensor.Tensor { return y }), "Exp")
}

// Log returns ln x.
func Log(x *Var) *Var {
	return nameOp(unary(x, x.Value.Log(), func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Recip() }), "Log")
}

// Sqrt returns √x.
func Sqrt(x *Var) *Var {
	return nameOp(unary(x, x.Value.Sqrt(), func(_, y *tensor.Tensor) *tensor.Tensor { return y.Recip().MulScalar(0.5) }), "Sqrt")
}

// Abs returns |x| (gradient 0 at 0).
func Abs(x *Var) *Var {
	return nameOp(unary(x, x.Value.Abs(), func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Sign() }), "Abs")
}

// Tanh returns tanh x.
func Tanh(x *Var) *Var {
	return nameOp(unary(x, x.Value.Tanh(), func(_, y *tensor.Tensor) *tensor.Tensor {
		return y.Mul(y).Neg().AddScalar(1)
	}), "Tanh")
}

// Sigmoid returns 1/(1+e⁻ˣ).
func Sigmoid(x *Var) *Var {
	return nameOp(unary(x, x.Value.Sigmoid(), func(_, y *tensor.Tensor) *tensor.Tensor {
		return y.Mul(y.Neg().AddScalar(1))
	}), "Sigmoid")
}

// Relu returns max(x, 0) (gradient 0 at 0, as in PyTorch).
func Relu(x *Var) *Var {
	y := x.Value.Relu()
	return nameOp(record(y, func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		// g where y > 0 (that is, x > 0), else 0: one pass over g.
		return []*tensor.Tensor{tensor.ActGrad(g, y, device.ActReLU)}
	}, x), "Relu")
}

// ReLU6 returns min(max(x, 0), 6), as torch.nn.ReLU6, in one pass over x
// forward and one over the gradient backward. As in PyTorch, no gradient
// flows where x is at or beyond a bound (x <= 0 or x >= 6). It is recorded
// (and exported) as a Clamp to [0, 6], ONNX's Clip.
func ReLU6(x *Var) *Var {
	v := x.Value.Contiguous()
	var y *tensor.Tensor
	if v.Rank() >= 2 {
		// BiasAct's N×C×… planes, which its kernel shares among the cores.
		y = tensor.BiasAct(v, nil, device.ActReLU6, false)
	} else {
		y = tensor.BiasAct(v.Reshape(1, v.Len()), nil, device.ActReLU6, false).Reshape(v.Shape()...)
	}
	return describeOp(record(y, func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{tensor.ActGrad(g, y, device.ActReLU6)}
	}, x), "Clamp", ClampAttrs{Lo: 0, Hi: 6})
}

// LeakyRelu returns x for x > 0 and slope·x otherwise.
func LeakyRelu(x *Var, slope float64) *Var {
	pos := x.Value.GtScalar(0)
	// factor = pos + slope·(1-pos)
	factor := pos.MulScalar(1 - slope).AddScalar(slope)
	return describeOp(record(x.Value.Mul(factor), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{g.Mul(factor)}
	}, x), "LeakyRelu", ScalarAttrs{slope})
}

// GELU returns x·Φ(x) with the exact (erf) normal CDF Φ: one pass
// forward and one backward on devices with device.GELUKernels.
func GELU(x *Var) *Var {
	return nameOp(record(tensor.GELU(x.Value), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{tensor.GELUGrad(g, x.Value)}
	}, x), "GELU")
}

// SiLU returns x·σ(x).
func SiLU(x *Var) *Var {
	s := x.Value.Sigmoid()
	return nameOp(record(x.Value.Mul(s), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		// σ + x·σ·(1-σ)
		d := s.Add(x.Value.Mul(s).Mul(s.Neg().AddScalar(1)))
		return []*tensor.Tensor{g.Mul(d)}
	}, x), "SiLU")
}

// when returns f() if need is set and nil otherwise.
func when(need bool, f func() *tensor.Tensor) *tensor.Tensor {
	if !need {
		return nil
	}
	return f()
}
