package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// Elementwise operators: arithmetic (Add, Sub, Mul, Div, Pow, Mod),
// elementary functions (Sqrt, Exp, Log, Erf, trigonometric and
// hyperbolic functions, ...), rounding, comparisons, logic, Where, Cast,
// CastLike, Identity and the variadic Max, Min, Sum and Mean. Binary and
// variadic operators broadcast as NumPy does.
//
// Floating-point inputs go through autograd operations, so gradients flow
// to them. The device kernels compute in floating point only, so integer
// inputs (every ONNX integer type and BOOL is stored as Int64) are
// computed in float64 and converted back, which is exact for magnitudes
// below 2⁵³; integer Div truncates toward zero as the specification says.
// An integer Div or Mod by zero, which ONNX leaves undefined, is an error.
// Integer, boolean and rounded results carry no gradient.

func init() {
	for _, op := range []struct {
		name  string
		since int
		run   func(a, b *autograd.Var) *autograd.Var
	}{
		{"Sub", 1, autograd.Sub},
		{"Mul", 1, autograd.Mul},
	} {
		register(op.name, op.since, true, ewArith(op.run))
	}
	register("Add", 1, true, opAdd)
	register("Div", 1, true, opDiv)
	register("Pow", 1, true, opPow)
	register("Mod", 10, false, opMod)

	for _, op := range []struct {
		name  string
		since int
		f     func(*autograd.Var) *autograd.Var
	}{
		{"Sqrt", 1, autograd.Sqrt},
		{"Exp", 1, autograd.Exp},
		{"Log", 1, autograd.Log},
		{"Reciprocal", 1, autograd.Recip},
		{"Erf", 9, autograd.Erf},
		{"Sin", 7, autograd.Sin},
		{"Cos", 7, autograd.Cos},
		{"Tan", 7, autograd.Tan},
		{"Asin", 7, autograd.Asin},
		{"Acos", 7, autograd.Acos},
		{"Atan", 7, autograd.Atan},
		{"Sinh", 9, autograd.Sinh},
		{"Cosh", 9, autograd.Cosh},
		{"Asinh", 9, autograd.Asinh},
		{"Acosh", 9, autograd.Acosh},
		{"Atanh", 9, autograd.Atanh},
	} {
		register(op.name, op.since, true, ewFloatUnary(op.f))
	}
	register("Neg", 1, true, ewAnyUnary(autograd.Neg))
	register("Abs", 1, true, ewAnyUnary(autograd.Abs))
	register("Floor", 1, false, ewRounding((*tensor.Tensor).Floor))
	register("Ceil", 1, false, ewRounding((*tensor.Tensor).Ceil))
	register("Round", 11, false, ewRounding((*tensor.Tensor).Round))
	register("Sign", 9, false, opSign)
	register("IsNaN", 9, false, opIsNaN)
	register("IsInf", 10, false, opIsInf)

	for _, op := range []struct {
		name  string
		since int
		cmp   func(a, b *tensor.Tensor) *tensor.Tensor
	}{
		{"Equal", 1, (*tensor.Tensor).Eq},
		{"Less", 1, (*tensor.Tensor).Lt},
		{"Greater", 1, (*tensor.Tensor).Gt},
		{"LessOrEqual", 12, (*tensor.Tensor).Le},
		{"GreaterOrEqual", 12, (*tensor.Tensor).Ge},
	} {
		register(op.name, op.since, false, ewCompare(op.cmp))
	}
	register("Not", 1, false, opNot)
	register("And", 1, false, ewLogic(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Mul(b) }))
	register("Or", 1, false, ewLogic((*tensor.Tensor).Maximum))
	register("Xor", 1, false, ewLogic((*tensor.Tensor).Ne))
	register("Where", 9, true, opWhere)

	register("Cast", 1, true, opCast)
	register("CastLike", 15, true, opCastLike)
	register("Identity", 1, true, opIdentity)

	register("Max", 1, true, ewVariadic(autograd.Maximum, false))
	register("Min", 1, true, ewVariadic(autograd.Minimum, false))
	register("Sum", 1, true, ewVariadic(autograd.Add, false))
	register("Mean", 1, true, ewVariadic(autograd.Add, true))
}

// ewSameType returns an error unless every input has the element type of
// the first; names name the inputs.
func ewSameType(c *nodeCtx, names []string, vs ...*autograd.Var) error {
	dt := vs[0].Value.DType()
	for i, v := range vs[1:] {
		if v.Value.DType() != dt {
			return c.Errorf("input %s is %v but input %s is %v: the element types must match",
				names[i+1], v.Value.DType(), names[0], dt)
		}
	}
	return nil
}

// ewBroadcast returns the NumPy broadcast of the inputs' shapes, or an
// error naming the inputs whose shapes do not broadcast.
func ewBroadcast(c *nodeCtx, names []string, vs ...*autograd.Var) ([]int, error) {
	shape := vs[0].Value.Shape()
	for i, v := range vs[1:] {
		s, ok := tensor.BroadcastShapes(shape, v.Value.Shape())
		if !ok {
			return nil, c.Errorf("input %s shape %v does not broadcast with %v (input %s and those before it)",
				names[i+1], v.Value.Shape(), shape, names[0])
		}
		shape = s
	}
	// Broadcasting [n, 1] with [1, n] gives n²: bound it before computing.
	if err := c.checkElements(shape); err != nil {
		return nil, err
	}
	return shape, nil
}

// ewToFloat returns an Int64 value as a Float64 constant, and floating
// values unchanged.
func ewToFloat(v *autograd.Var) *autograd.Var {
	if v.Value.DType() == device.Int64 {
		return autograd.Constant(v.Value.Cast(device.Float64))
	}
	return v
}

// ewToInt converts a Float64 result of an integer computation back to an
// Int64 constant (truncating toward zero).
func ewToInt(v *autograd.Var) *autograd.Var {
	return autograd.Constant(v.Value.Cast(device.Int64))
}

// ewIntOrFloat applies f to the inputs, computing in float64 when they are
// Int64 and converting the result back to Int64.
func ewIntOrFloat(f func(vs ...*autograd.Var) *autograd.Var, vs ...*autograd.Var) *autograd.Var {
	if vs[0].Value.DType() != device.Int64 {
		return f(vs...)
	}
	fs := make([]*autograd.Var, len(vs))
	for i, v := range vs {
		fs[i] = ewToFloat(v)
	}
	return ewToInt(f(fs...))
}

// ewNames returns the names of the inputs of a variadic operator.
func ewNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("data_%d", i)
	}
	return names
}

// ewBinaryInputs returns the inputs A and B of a binary operator after
// checking that they have one element type and broadcast.
func ewBinaryInputs(c *nodeCtx) (a, b *autograd.Var, err error) {
	in, err := c.inputs("A", "B")
	if err != nil {
		return nil, nil, err
	}
	a, b = in[0], in[1]
	names := []string{"A", "B"}
	if err := ewSameType(c, names, a, b); err != nil {
		return nil, nil, err
	}
	if _, err := ewBroadcast(c, names, a, b); err != nil {
		return nil, nil, err
	}
	return a, b, nil
}

// ewLegacyBroadcast rejects the explicit broadcast and axis attributes of
// the arithmetic operators before opset 7 (a model of opset 7 or later
// cannot set them).
func ewLegacyBroadcast(c *nodeCtx) error {
	if c.AttrInt("broadcast", 0) != 0 || c.HasAttr("axis") {
		return c.Unsupported("the legacy broadcast/axis attributes of %s (opset < 7)", c.Op())
	}
	return nil
}

// ewArith implements Add, Sub, Mul and Div with NumPy broadcasting.
func ewArith(f func(a, b *autograd.Var) *autograd.Var) opFunc {
	return func(c *nodeCtx) ([]*autograd.Var, error) {
		if err := ewLegacyBroadcast(c); err != nil {
			return nil, err
		}
		a, b, err := ewBinaryInputs(c)
		if err != nil {
			return nil, err
		}
		return []*autograd.Var{ewIntOrFloat(func(vs ...*autograd.Var) *autograd.Var { return f(vs[0], vs[1]) }, a, b)}, nil
	}
}

// opAdd implements Add, with the Relu or Clip(0, 6) that the interpreter
// fused into it (a residual block's sum and activation) applied in the same
// pass.
func opAdd(c *nodeCtx) ([]*autograd.Var, error) {
	act := c.FusedActivation()
	return ewArith(func(a, b *autograd.Var) *autograd.Var { return autograd.AddAct(a, b, act) })(c)
}

// opDiv implements Div; an integer divisor holding a zero is an error
// (float division gives IEEE infinities and NaNs).
func opDiv(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("A", "B")
	if err != nil {
		return nil, err
	}
	if err := ewIntDivisor(c, in[1]); err != nil {
		return nil, err
	}
	return ewArith(autograd.Div)(c)
}

// ewIntDivisor returns an error when b, input B of Div or Mod, is an
// integer tensor holding a zero.
func ewIntDivisor(c *nodeCtx, b *autograd.Var) error {
	if b.Value.DType() == device.Int64 && slices.Contains(c.Ints(b), 0) {
		return c.Errorf("integer division by zero in input B")
	}
	return nil
}

// ewScalarConst returns the value of v when it is a one-element constant
// (no gradient), for the fast paths of Pow.
func ewScalarConst(v *autograd.Var) (float64, bool) {
	if v.RequiresGrad() || v.Value.Len() != 1 {
		return 0, false
	}
	return v.Value.Values()[0], true
}

// opPow implements Pow: the base X and exponent Y broadcast; from opset 12
// they may have different types and the result has X's type. A constant
// scalar exponent uses x·x, x, √x or a scalar power.
func opPow(c *nodeCtx) ([]*autograd.Var, error) {
	if err := ewLegacyBroadcast(c); err != nil {
		return nil, err
	}
	in, err := c.inputs("X", "Y")
	if err != nil {
		return nil, err
	}
	x, y := in[0], in[1]
	if c.Opset() < 12 {
		if err := ewSameType(c, []string{"X", "Y"}, x, y); err != nil {
			return nil, err
		}
	}
	shape, err := ewBroadcast(c, []string{"X", "Y"}, x, y)
	if err != nil {
		return nil, err
	}
	isInt := x.Value.DType() == device.Int64
	xf := ewToFloat(x)
	dt := xf.Value.DType()
	var out *autograd.Var
	if s, ok := ewScalarConst(y); ok {
		switch s {
		case 1:
			out = xf
		case 2:
			out = autograd.Mul(xf, xf)
		case 0.5:
			out = autograd.Sqrt(xf)
		default:
			out = autograd.PowScalar(xf, s)
		}
	} else {
		yf := y
		if y.Value.DType() != dt {
			yf = autograd.Cast(y, dt)
		}
		out = autograd.Pow(xf, yf)
	}
	if !slices.Equal(out.Value.Shape(), shape) {
		out = autograd.Expand(out, shape...)
	}
	if isInt {
		out = ewToInt(out)
	}
	return []*autograd.Var{out}, nil
}

// opMod implements Mod: with fmod = 0 (integers only) the remainder has
// the divisor's sign, as Python's %; with fmod = 1 it has the dividend's,
// as C's fmod. The result carries no gradient.
func opMod(c *nodeCtx) ([]*autograd.Var, error) {
	a, b, err := ewBinaryInputs(c)
	if err != nil {
		return nil, err
	}
	fmod := c.AttrInt("fmod", 0)
	if fmod != 0 && fmod != 1 {
		return nil, c.Errorf("attribute fmod is %d, want 0 or 1", fmod)
	}
	if err := ewIntDivisor(c, b); err != nil {
		return nil, err
	}
	if fmod == 0 && a.Value.DType() != device.Int64 {
		return nil, c.Errorf("attribute fmod is 0 but the inputs are %v: floating-point Mod needs fmod = 1", a.Value.DType())
	}
	af, bf := ewToFloat(a).Value, ewToFloat(b).Value
	var r *tensor.Tensor
	if fmod == 1 {
		r = af.Rem(bf)
	} else {
		r = af.Mod(bf)
	}
	if a.Value.DType() == device.Int64 {
		r = r.Cast(device.Int64)
	}
	return []*autograd.Var{autograd.Constant(r)}, nil
}

// ewFloatUnary implements a function of floating-point inputs only.
func ewFloatUnary(f func(*autograd.Var) *autograd.Var) opFunc {
	return func(c *nodeCtx) ([]*autograd.Var, error) {
		x, err := c.input("X")
		if err != nil {
			return nil, err
		}
		if x.Value.DType() == device.Int64 {
			return nil, c.Errorf("input X is an integer or bool tensor; %s takes float or double", c.Op())
		}
		return []*autograd.Var{f(x)}, nil
	}
}

// ewAnyUnary implements a function of numeric inputs (integers computed
// in float64).
func ewAnyUnary(f func(*autograd.Var) *autograd.Var) opFunc {
	return func(c *nodeCtx) ([]*autograd.Var, error) {
		x, err := c.input("X")
		if err != nil {
			return nil, err
		}
		return []*autograd.Var{ewIntOrFloat(func(vs ...*autograd.Var) *autograd.Var { return f(vs[0]) }, x)}, nil
	}
}

// ewRounding implements Floor, Ceil and Round (float inputs; the result
// is piecewise constant and carries no gradient).
func ewRounding(f func(*tensor.Tensor) *tensor.Tensor) opFunc {
	return func(c *nodeCtx) ([]*autograd.Var, error) {
		x, err := c.input("X")
		if err != nil {
			return nil, err
		}
		if x.Value.DType() == device.Int64 {
			return nil, c.Errorf("input X is an integer or bool tensor; %s takes float or double", c.Op())
		}
		return []*autograd.Var{autograd.Constant(f(x.Value))}, nil
	}
}

// opSign implements Sign: -1, 0 or 1 in the input's type (no gradient).
func opSign(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("input")
	if err != nil {
		return nil, err
	}
	y := ewToFloat(x).Value.Sign()
	if x.Value.DType() == device.Int64 {
		y = y.Cast(device.Int64)
	}
	return []*autograd.Var{autograd.Constant(y)}, nil
}

// opIsNaN implements IsNaN: a bool tensor.
func opIsNaN(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("X")
	if err != nil {
		return nil, err
	}
	if x.Value.DType() == device.Int64 {
		return []*autograd.Var{autograd.Constant(tensor.FullLike(x.Value, 0))}, nil
	}
	return []*autograd.Var{autograd.Constant(x.Value.IsNaN().Cast(device.Int64))}, nil
}

// opIsInf implements IsInf with its detect_positive and detect_negative
// attributes: a bool tensor.
func opIsInf(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("X")
	if err != nil {
		return nil, err
	}
	if x.Value.DType() == device.Int64 {
		return []*autograd.Var{autograd.Constant(tensor.FullLike(x.Value, 0))}, nil
	}
	pos, neg := c.AttrInt("detect_positive", 1) != 0, c.AttrInt("detect_negative", 1) != 0
	m := x.Value.IsInf()
	switch {
	case pos && !neg:
		m = m.Mul(x.Value.GtScalar(0))
	case neg && !pos:
		m = m.Mul(x.Value.Neg().GtScalar(0))
	case !pos && !neg:
		m = tensor.FullLike(m, 0)
	}
	return []*autograd.Var{autograd.Constant(m.Cast(device.Int64))}, nil
}

// ewCompare implements a comparison: a bool (0/1 Int64) tensor.
func ewCompare(cmp func(a, b *tensor.Tensor) *tensor.Tensor) opFunc {
	return func(c *nodeCtx) ([]*autograd.Var, error) {
		if err := ewLegacyBroadcast(c); err != nil {
			return nil, err
		}
		a, b, err := ewBinaryInputs(c)
		if err != nil {
			return nil, err
		}
		r := cmp(ewToFloat(a).Value, ewToFloat(b).Value)
		return []*autograd.Var{autograd.Constant(r.Cast(device.Int64))}, nil
	}
}

// ewBool checks that input v, named name, is a bool (Int64) tensor.
func ewBool(c *nodeCtx, v *autograd.Var, name string) error {
	if v.Value.DType() != device.Int64 {
		return c.Errorf("input %s is %v, want a bool tensor", name, v.Value.DType())
	}
	return nil
}

// opNot implements Not.
func opNot(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("X")
	if err != nil {
		return nil, err
	}
	if err := ewBool(c, x, "X"); err != nil {
		return nil, err
	}
	xf := x.Value.Cast(device.Float64)
	r := xf.Eq(tensor.Full(xf.Device(), device.Float64, 0))
	return []*autograd.Var{autograd.Constant(r.Cast(device.Int64))}, nil
}

// ewLogic implements And, Or and Xor on bool tensors (0/1), given f on
// their float64 values.
func ewLogic(f func(a, b *tensor.Tensor) *tensor.Tensor) opFunc {
	return func(c *nodeCtx) ([]*autograd.Var, error) {
		if err := ewLegacyBroadcast(c); err != nil {
			return nil, err
		}
		in, err := c.inputs("A", "B")
		if err != nil {
			return nil, err
		}
		a, b := in[0], in[1]
		if err := ewBool(c, a, "A"); err != nil {
			return nil, err
		}
		if err := ewBool(c, b, "B"); err != nil {
			return nil, err
		}
		if _, err := ewBroadcast(c, []string{"A", "B"}, a, b); err != nil {
			return nil, err
		}
		r := f(a.Value.Cast(device.Float64), b.Value.Cast(device.Float64))
		return []*autograd.Var{autograd.Constant(r.Cast(device.Int64))}, nil
	}
}

// opWhere implements Where: X where condition is true, Y elsewhere, the
// three broadcast together; gradients flow to X and Y.
func opWhere(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("condition", "X", "Y")
	if err != nil {
		return nil, err
	}
	cond, x, y := in[0], in[1], in[2]
	if err := ewSameType(c, []string{"X", "Y"}, x, y); err != nil {
		return nil, err
	}
	if _, err := ewBroadcast(c, []string{"condition", "X", "Y"}, cond, x, y); err != nil {
		return nil, err
	}
	out := ewIntOrFloat(func(vs ...*autograd.Var) *autograd.Var {
		cv := cond.Value
		if cv.DType() != vs[0].Value.DType() {
			cv = cv.Cast(vs[0].Value.DType())
		}
		return autograd.Where(cv, vs[0], vs[1])
	}, x, y)
	return []*autograd.Var{out}, nil
}

// ewCastTo converts x to the ONNX element type to: float and double keep
// gradients; integer types truncate toward zero and wrap around to their
// width; BOOL maps nonzero to 1.
func ewCastTo(c *nodeCtx, x *autograd.Var, to onnxpb.TensorProto_DataType) (*autograd.Var, error) {
	switch to {
	case onnxpb.TensorProto_FLOAT:
		return autograd.Cast(x, device.Float32), nil
	case onnxpb.TensorProto_DOUBLE:
		return autograd.Cast(x, device.Float64), nil
	case onnxpb.TensorProto_BOOL:
		xf := ewToFloat(x).Value
		r := xf.Ne(tensor.Full(xf.Device(), xf.DType(), 0))
		return autograd.Constant(r.Cast(device.Int64)), nil
	case onnxpb.TensorProto_INT64, onnxpb.TensorProto_UINT64:
		return autograd.Constant(x.Value.Cast(device.Int64)), nil
	}
	bits := map[onnxpb.TensorProto_DataType]int{
		onnxpb.TensorProto_INT8: 8, onnxpb.TensorProto_UINT8: 8,
		onnxpb.TensorProto_INT16: 16, onnxpb.TensorProto_UINT16: 16,
		onnxpb.TensorProto_INT32: 32, onnxpb.TensorProto_UINT32: 32,
	}[to]
	if bits == 0 {
		if _, known := onnxpb.TensorProto_DataType_name[int32(to)]; !known || to == onnxpb.TensorProto_UNDEFINED {
			return nil, c.Errorf("attribute to is %d, not an ONNX element type", int32(to))
		}
		return nil, c.Unsupported("Cast to %s", typeName(to))
	}
	signed := to == onnxpb.TensorProto_INT8 || to == onnxpb.TensorProto_INT16 || to == onnxpb.TensorProto_INT32
	// Truncate toward zero, then wrap: ((v + off) mod 2^bits) - off.
	v := x.Value
	if v.DType() != device.Int64 {
		v = v.Cast(device.Int64)
	}
	vf := v.Cast(device.Float64)
	span := math.Ldexp(1, bits)
	off := 0.0
	if signed {
		off = span / 2
	}
	w := vf.AddScalar(off).Mod(tensor.Full(vf.Device(), device.Float64, span)).AddScalar(-off)
	return autograd.Constant(w.Cast(device.Int64)), nil
}

// opCast implements Cast (attribute to).
func opCast(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("input")
	if err != nil {
		return nil, err
	}
	if !c.HasAttr("to") {
		return nil, c.Errorf("attribute to is missing")
	}
	out, err := ewCastTo(c, x, onnxpb.TensorProto_DataType(c.AttrInt("to", 0)))
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{out}, nil
}

// opCastLike implements CastLike: input is converted to the element type
// of target_type. Hora keeps every integer and bool type as Int64, so an
// integer target converts as INT64 does (truncation, no wrap-around).
func opCastLike(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("input", "target_type")
	if err != nil {
		return nil, err
	}
	x, like := in[0], in[1]
	to := protoTypeOf(like.Value.DType())
	out, err := ewCastTo(c, x, to)
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{out}, nil
}

// opIdentity implements Identity (tensors only).
func opIdentity(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("input")
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{x}, nil
}

// ewVariadic implements Max, Min, Sum and Mean: f folds the inputs, which
// broadcast together; mean divides the sum by their number.
func ewVariadic(f func(a, b *autograd.Var) *autograd.Var, mean bool) opFunc {
	return func(c *nodeCtx) ([]*autograd.Var, error) {
		in, err := c.inputs("data...")
		if err != nil {
			return nil, err
		}
		names := ewNames(len(in))
		if err := ewSameType(c, names, in...); err != nil {
			return nil, err
		}
		if _, err := ewBroadcast(c, names, in...); err != nil {
			return nil, err
		}
		out := ewIntOrFloat(func(vs ...*autograd.Var) *autograd.Var {
			acc := vs[0]
			for _, v := range vs[1:] {
				acc = f(acc, v)
			}
			if mean && len(vs) > 1 {
				acc = autograd.MulScalar(acc, 1/float64(len(vs)))
			}
			return acc
		}, in...)
		return []*autograd.Var{out}, nil
	}
}
