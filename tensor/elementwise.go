package tensor

import (
	"fmt"
	"slices"

	"github.com/hora-dl/hora/device"
)

// unary applies a device unary op to a float tensor.
func (t *Tensor) unary(name string, op device.UnaryOp, s float64) *Tensor {
	sameFloat(name, t)
	c := t.Contiguous()
	out := newOut(false, t.DType(), t.shape, t)
	if n := t.Len(); n > 0 {
		t.kernels().Unary(op, out.buf, c.buf, n, s)
	}
	return out
}

// Neg returns -t.
func (t *Tensor) Neg() *Tensor { return t.unary("Neg", device.Neg, 0) }

// Exp returns eᵗ elementwise.
func (t *Tensor) Exp() *Tensor { return t.unary("Exp", device.Exp, 0) }

// Log returns the natural logarithm elementwise.
func (t *Tensor) Log() *Tensor { return t.unary("Log", device.Log, 0) }

// Sqrt returns the square root elementwise.
func (t *Tensor) Sqrt() *Tensor { return t.unary("Sqrt", device.Sqrt, 0) }

// Abs returns |t| elementwise.
func (t *Tensor) Abs() *Tensor { return t.unary("Abs", device.Abs, 0) }

// Sign returns -1, 0 or 1 elementwise.
func (t *Tensor) Sign() *Tensor { return t.unary("Sign", device.Sign, 0) }

// Tanh returns tanh elementwise.
func (t *Tensor) Tanh() *Tensor { return t.unary("Tanh", device.Tanh, 0) }

// Sigmoid returns 1/(1+e^-t) elementwise.
func (t *Tensor) Sigmoid() *Tensor { return t.unary("Sigmoid", device.Sigmoid, 0) }

// Relu returns max(t, 0) elementwise.
func (t *Tensor) Relu() *Tensor { return t.unary("Relu", device.Relu, 0) }

// Erf returns the error function elementwise.
func (t *Tensor) Erf() *Tensor { return t.unary("Erf", device.Erf, 0) }

// Recip returns 1/t elementwise.
func (t *Tensor) Recip() *Tensor { return t.unary("Recip", device.Recip, 0) }

// AddScalar returns t + s.
func (t *Tensor) AddScalar(s float64) *Tensor { return t.unary("AddScalar", device.AddScalar, s) }

// MulScalar returns t · s.
func (t *Tensor) MulScalar(s float64) *Tensor { return t.unary("MulScalar", device.MulScalar, s) }

// PowScalar returns tˢ elementwise.
func (t *Tensor) PowScalar(s float64) *Tensor { return t.unary("PowScalar", device.PowScalar, s) }

// MaxScalar returns max(t, s) elementwise (clamp from below).
func (t *Tensor) MaxScalar(s float64) *Tensor { return t.unary("MaxScalar", device.MaxScalar, s) }

// MinScalar returns min(t, s) elementwise (clamp from above).
func (t *Tensor) MinScalar(s float64) *Tensor { return t.unary("MinScalar", device.MinScalar, s) }

// GtScalar returns 1 where t > s and 0 elsewhere.
func (t *Tensor) GtScalar(s float64) *Tensor { return t.unary("GtScalar", device.GtScalar, s) }

// Floor returns the largest integer not above each element.
func (t *Tensor) Floor() *Tensor { return t.unary("Floor", device.Floor, 0) }

// Ceil returns the smallest integer not below each element.
func (t *Tensor) Ceil() *Tensor { return t.unary("Ceil", device.Ceil, 0) }

// Round rounds each element to the nearest integer, halves to even.
func (t *Tensor) Round() *Tensor { return t.unary("Round", device.Round, 0) }

// Sin returns the sine elementwise.
func (t *Tensor) Sin() *Tensor { return t.unary("Sin", device.Sin, 0) }

// Cos returns the cosine elementwise.
func (t *Tensor) Cos() *Tensor { return t.unary("Cos", device.Cos, 0) }

// Tan returns the tangent elementwise.
func (t *Tensor) Tan() *Tensor { return t.unary("Tan", device.Tan, 0) }

// Asin returns the arcsine elementwise.
func (t *Tensor) Asin() *Tensor { return t.unary("Asin", device.Asin, 0) }

// Acos returns the arccosine elementwise.
func (t *Tensor) Acos() *Tensor { return t.unary("Acos", device.Acos, 0) }

// Atan returns the arctangent elementwise.
func (t *Tensor) Atan() *Tensor { return t.unary("Atan", device.Atan, 0) }

// Sinh returns the hyperbolic sine elementwise.
func (t *Tensor) Sinh() *Tensor { return t.unary("Sinh", device.Sinh, 0) }

// Cosh returns the hyperbolic cosine elementwise.
func (t *Tensor) Cosh() *Tensor { return t.unary("Cosh", device.Cosh, 0) }

// Asinh returns the inverse hyperbolic sine elementwise.
func (t *Tensor) Asinh() *Tensor { return t.unary("Asinh", device.Asinh, 0) }

// Acosh returns the inverse hyperbolic cosine elementwise.
func (t *Tensor) Acosh() *Tensor { return t.unary("Acosh", device.Acosh, 0) }

// Atanh returns the inverse hyperbolic tangent elementwise.
func (t *Tensor) Atanh() *Tensor { return t.unary("Atanh", device.Atanh, 0) }

// IsNaN returns 1 where an element is NaN and 0 elsewhere, in t"s type.
func (t *Tensor) IsNaN() *Tensor { return t.unary("IsNaN", device.IsNaN, 0) }

// IsInf returns 1 where an element is +Inf or -Inf and 0 elsewhere, in t"s type.
func (t *Tensor) IsInf() *Tensor { return t.unary("IsInf", device.IsInf, 0) }

// binary applies a broadcasting device binary op.
func binary(name string, op device.BinaryOp, a, b *Tensor) *Tensor {
	sameFloat(name, a, b)
	shape, ok := BroadcastShapes(a.shape, b.shape)
	if !ok {
		panic(fmt.Sprintf("tensor: %s: shapes %v and %v do not broadcast", name, a.shape, b.shape))
	}
	out := newOut(false, a.DType(), shape, a, b)
	a.kernels().Binary(op, out.buf, a.buf, a.broadcastLayout(shape, name, b), b.buf, b.broadcastLayout(shape, name, a))
	return out
}

// Add returns t + u with broadcasting.
func (t *Tensor) Add(u *Tensor) *Tensor { return binary("Add", device.Add, t, u) }

// Sub returns t - u with broadcasting.
func (t *Tensor) Sub(u *Tensor) *Tensor { return binary("Sub", device.Sub, t, u) }

// Mul returns t · u elementwise with broadcasting.
func (t *Tensor) Mul(u *Tensor) *Tensor { return binary("Mul", device.Mul, t, u) }

// Div returns t / u elementwise with broadcasting.
func (t *Tensor) Div(u *Tensor) *Tensor { return binary("Div", device.Div, t, u) }

// Pow returns tᵘ elementwise with broadcasting.
func (t *Tensor) Pow(u *Tensor) *Tensor { return binary("Pow", device.Pow, t, u) }

// Maximum returns the elementwise maximum with broadcasting.
func (t *Tensor) Maximum(u *Tensor) *Tensor { return binary("Maximum", device.Maximum, t, u) }

// Minimum returns the elementwise minimum with broadcasting.
func (t *Tensor) Minimum(u *Tensor) *Tensor { return binary("Minimum", device.Minimum, t, u) }

// Eq returns 1 where t == u and 0 elsewhere, in t's type.
func (t *Tensor) Eq(u *Tensor) *Tensor { return binary("Eq", device.Equal, t, u) }

// Ne returns 1 where t != u and 0 elsewhere.
func (t *Tensor) Ne(u *Tensor) *Tensor { return binary("Ne", device.NotEqual, t, u) }

// Lt returns 1 where t < u and 0 elsewhere.
func (t *Tensor) Lt(u *Tensor) *Tensor { return binary("Lt", device.Less, t, u) }

// Le returns 1 where t <= u and 0 elsewhere.
func (t *Tensor) Le(u *Tensor) *Tensor { return binary("Le", device.LessEqual, t, u) }

// Gt returns 1 where t > u and 0 elsewhere.
func (t *Tensor) Gt(u *Tensor) *Tensor { return binary("Gt", device.Greater, t, u) }

// Ge returns 1 where t >= u and 0 elsewhere.
func (t *Tensor) Ge(u *Tensor) *Tensor { return binary("Ge", device.GreaterEqual, t, u) }

// Mod returns the floored remainder t - u·⌊t/u⌋ with broadcasting; it has
// the sign of u (Python's %). It is NaN where u is 0.
func (t *Tensor) Mod(u *Tensor) *Tensor { return binary("Mod", device.Mod, t, u) }

// Rem returns the truncated remainder of t / u with broadcasting (C's
// fmod); it has the sign of t. It is NaN where u is 0.
func (t *Tensor) Rem(u *Tensor) *Tensor { return binary("Rem", device.Rem, t, u) }

// Where returns a where cond is nonzero and b elsewhere; the three
// broadcast together and share one floating-point type.
func Where(cond, a, b *Tensor) *Tensor {
	sameFloat("Where", cond, a, b)
	shape, ok := BroadcastShapes(a.shape, b.shape)
	if ok {
		shape, ok = BroadcastShapes(cond.shape, shape)
	}
	if !ok {
		panic(fmt.Sprintf("tensor: Where: shapes %v, %v and %v do not broadcast", cond.shape, a.shape, b.shape))
	}
	out := newOut(false, a.DType(), shape, a, b, cond)
	a.kernels().Where(out.buf,
		cond.buf, cond.broadcastLayout(shape, "Where", nil),
		a.buf, a.broadcastLayout(shape, "Where", nil),
		b.buf, b.broadcastLayout(shape, "Where", nil))
	return out
}

// SumTo sums t over broadcast axes so that it has the given shape, the
// adjoint of broadcasting shape to t's shape.
func (t *Tensor) SumTo(shape []int) *Tensor {
	if slices.Equal(t.shape, shape) {
		return t
	}
	lead := len(t.shape) - len(shape)
	if lead < 0 {
		panic(fmt.Sprintf("tensor: SumTo %v from %v", shape, t.shape))
	}
	var axes []int
	for i := range t.shape {
		if i < lead || (shape[i-lead] == 1 && t.shape[i] != 1) {
			axes = append(axes, i)
		} else if shape[i-lead] != t.shape[i] {
			panic(fmt.Sprintf("tensor: SumTo %v from %v", shape, t.shape))
		}
	}
	return t.SumAxes(axes, true).Reshape(shape...)
}

// AddInPlace adds u to t elementwise (u broadcasts to t's shape): t += u.
// t must be dense (IsContiguous) and must not share memory with u.
func (t *Tensor) AddInPlace(u *Tensor) {
	sameFloat("AddInPlace", t, u)
	t.checkLive()
	if !t.IsContiguous() {
		panic(fmt.Sprintf("tensor: AddInPlace into a non-contiguous %v view", t.shape))
	}
	l := t.layout()
	t.kernels().Binary(device.Add, t.buf, t.buf, l, u.buf, u.broadcastLayout(t.shape, "AddInPlace", t))
}

// MulScalarInPlace multiplies t by s elementwise in place: t *= s. t must
// be dense (IsContiguous).
func (t *Tensor) MulScalarInPlace(s float64) {
	sameFloat("MulScalarInPlace", t)
	t.checkLive()
	if !t.IsContiguous() {
		panic(fmt.Sprintf("tensor: MulScalarInPlace into a non-contiguous %v view", t.shape))
	}
	if n := t.Len(); n > 0 {
		t.kernels().Unary(device.MulScalar, t.buf, t.buf, n, s)
	}
}

// SameLayout reports whether t and u are dense tensors of the same device,
// type and shape.
func (t *Tensor) SameLayout(u *Tensor) bool {
	return t.Device() == u.Device() && t.DType() == u.DType() && slices.Equal(t.shape, u.shape) &&
		t.IsContiguous() && u.IsContiguous()
}
