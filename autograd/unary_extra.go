package autograd

import (
	"math"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// More elementwise operations with their gradient rules: trigonometric
// and hyperbolic functions, Erf, and the activations ONNX models use
// (Elu, Softplus, Softsign, HardSigmoid, PRelu) plus Clamp and Cast.
//
// Each records its name in OpInfo.Name (the function's name) with these
// OpInfo.Attrs: Cast CastAttrs, Elu ScalarAttrs (alpha), Clamp
// ClampAttrs, HardSigmoid HardSigmoidAttrs, and nil for the others.

// CastAttrs is the OpInfo.Attrs of Cast: the target type.
type CastAttrs struct{ To device.DType }

// ClampAttrs is the OpInfo.Attrs of Clamp: the bounds (infinite when
// absent).
type ClampAttrs struct{ Lo, Hi float64 }

// HardSigmoidAttrs is the OpInfo.Attrs of HardSigmoid.
type HardSigmoidAttrs struct{ Alpha, Beta float64 }

// Cast returns x converted to the floating-point type dt; the gradient is
// converted back to x's type. Casting to an integer type is not
// differentiable: the result is a constant.
func Cast(x *Var, dt device.DType) *Var {
	y := x.Value.Cast(dt)
	if dt == x.Value.DType() {
		return x
	}
	if dt == device.Int64 || x.Value.DType() == device.Int64 {
		return Constant(y)
	}
	from := x.Value.DType()
	return describeOp(record(y, func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{g.Cast(from)}
	}, x), "Cast", CastAttrs{To: dt})
}

// Erf returns the error function of x.
func Erf(x *Var) *Var {
	return nameOp(unary(x, x.Value.Erf(), func(x, _ *tensor.Tensor) *tensor.Tensor {
		// 2/√π · e^(-x²)
		return x.Mul(x).Neg().Exp().MulScalar(2 / math.Sqrt(math.Pi))
	}), "Erf")
}

// Sin returns sin x.
func Sin(x *Var) *Var {
	return nameOp(unary(x, x.Value.Sin(), func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Cos() }), "Sin")
}

// Cos returns cos x.
func Cos(x *Var) *Var {
	return nameOp(unary(x, x.Value.Cos(), func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Sin().Neg() }), "Cos")
}

// Tan returns tan x.
func Tan(x *Var) *Var {
	return nameOp(unary(x, x.Value.Tan(), func(_, y *tensor.Tensor) *tensor.Tensor { return y.Mul(y).AddScalar(1) }), "Tan")
}

// Asin returns arcsin x.
func Asin(x *Var) *Var {
	return nameOp(unary(x, x.Value.Asin(), func(x, _ *tensor.Tensor) *tensor.Tensor {
		// 1/√(1-x²)
		return x.Mul(x).Neg().AddScalar(1).Sqrt().Recip()
	}), "Asin")
}

// Acos returns arccos x.
func Acos(x *Var) *Var {
	return nameOp(unary(x, x.Value.Acos(), func(x, _ *tensor.Tensor) *tensor.Tensor {
		return x.Mul(x).Neg().AddScalar(1).Sqrt().Recip().Neg()
	}), "Acos")
}

// Atan returns arctan x.
func Atan(x *Var) *Var {
	return nameOp(unary(x, x.Value.Atan(), func(x, _ *tensor.Tensor) *tensor.Tensor {
		return x.Mul(x).AddScalar(1).Recip()
	}), "Atan")
}

// Sinh returns sinh x.
func Sinh(x *Var) *Var {
	return nameOp(unary(x, x.Value.Sinh(), func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Cosh() }), "Sinh")
}

// Cosh returns cosh x.
func Cosh(x *Var) *Var {
	return nameOp(unary(x, x.Value.Cosh(), func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Sinh() }), "Cosh")
}

// Asinh returns arsinh x.
func Asinh(x *Var) *Var {
	return nameOp(unary(x, x.Value.Asinh(), func(x, _ *tensor.Tensor) *tensor.Tensor {
		// 1/√(x²+1)
		return x.Mul(x).AddScalar(1).Sqrt().Recip()
	}), "Asinh")
}

// Acosh returns arcosh x.
func Acosh(x *Var) *Var {
	return nameOp(unary(x, x.Value.Acosh(), func(x, _ *tensor.Tensor) *tensor.Tensor {
		// 1/√(x²-1)
		return x.Mul(x).AddScalar(-1).Sqrt().Recip()
	}), "Acosh")
}

// Atanh returns artanh x.
func Atanh(x *Var) *Var {
	return nameOp(unary(x, x.Value.Atanh(), func(x, _ *tensor.Tensor) *tensor.Tensor {
		// 1/(1-x²)
		return x.Mul(x).Neg().AddScalar(1).Recip()
	}), "Atanh")
}

// Softplus returns ln(1+eˣ), computed as max(x,0) + ln(1+e^-|x|) so that
// it neither overflows nor loses the small values.
func Softplus(x *Var) *Var {
	y := x.Value.Relu().Add(x.Value.Abs().Neg().Exp().AddScalar(1).Log())
	return nameOp(unary(x, y, func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Sigmoid() }), "Softplus")
}

// Softsign returns x/(1+|x|).
func Softsign(x *Var) *Var {
	den := x.Value.Abs().AddScalar(1)
	return nameOp(record(x.Value.Div(den), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		// 1/(1+|x|)²
		return []*tensor.Tensor{g.Div(den.Mul(den))}
	}, x), "Softsign")
}

// Elu returns x for x > 0 and alpha·(eˣ-1) otherwise.
func Elu(x *Var, alpha float64) *Var {
	pos := x.Value.GtScalar(0)
	en := x.Value.MinScalar(0).Exp() // e^min(x,0): no overflow for large x
	y := x.Value.MaxScalar(0).Add(en.AddScalar(-1).MulScalar(alpha))
	return describeOp(record(y, func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		// 1 for x > 0, alpha·eˣ otherwise
		d := tensor.Where(pos, tensor.FullLike(en, 1), en.MulScalar(alpha))
		return []*tensor.Tensor{g.Mul(d)}
	}, x), "Elu", ScalarAttrs{Value: alpha})
}

// Clamp returns x limited to [lo, hi] (either may be infinite). The
// gradient is 1 where x lies inside [lo, hi], bounds included, and 0
// elsewhere.
func Clamp(x *Var, lo, hi float64) *Var {
	y := x.Value
	if !math.IsInf(lo, -1) {
		y = y.MaxScalar(lo)
	}
	if !math.IsInf(hi, 1) {
		y = y.MinScalar(hi)
	}
	if y == x.Value {
		y = x.Value.AddScalar(0)
	}
	return describeOp(record(y, func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{g.Mul(y.Eq(x.Value))}
	}, x), "Clamp", ClampAttrs{Lo: lo, Hi: hi})
}

// HardSigmoid returns max(0, min(1, alpha·x + beta)); the gradient is
// alpha strictly inside the linear part and 0 elsewhere.
func HardSigmoid(x *Var, alpha, beta float64) *Var {
	z := x.Value.MulScalar(alpha).AddScalar(beta)
	y := z.MaxScalar(0).MinScalar(1)
	return describeOp(record(y, func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		// (z > 0)·(z < 1)·alpha
		inside := z.GtScalar(0).Mul(z.Neg().GtScalar(-1))
		return []*tensor.Tensor{g.Mul(inside).MulScalar(alpha)}
	}, x), "HardSigmoid", HardSigmoidAttrs{Alpha: alpha, Beta: beta})
}

// PRelu returns x where x > 0 and slope·x elsewhere; slope broadcasts to
// x's shape (it must not make the result larger than x).
func PRelu(x, slope *Var) *Var {
	neg := x.Value.MinScalar(0)
	y := x.Value.MaxScalar(0).Add(neg.Mul(slope.Value))
	return nameOp(record(y, func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		return []*tensor.Tensor{
			when(needs[0], func() *tensor.Tensor {
				pos := x.Value.GtScalar(0)
				// pos + slope·(1-pos)
				d := pos.Add(pos.Neg().AddScalar(1).Mul(slope.Value))
				return g.Mul(d).SumTo(x.Value.Shape())
			}),
			when(needs[1], func() *tensor.Tensor { return g.Mul(neg).SumTo(slope.Value.Shape()) }),
		}
	}, x, slope), "PRelu")
}

// Recip returns 1/x.
func Recip(x *Var) *Var {
	return nameOp(unary(x, x.Value.Recip(), func(_, y *tensor.Tensor) *tensor.Tensor { return y.Mul(y).Neg() }), "Recip")
}
