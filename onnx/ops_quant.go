package onnx

import (
	"fmt"
	"math"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// Quantization operators: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, QLinearConv, QLinearMatMul, ConvInteger and
// MatMulInteger.
//
// Quantized values (uint8, int8, int32) are stored as Int64 like every
// ONNX integer type, so the operator cannot see whether a zero point was
// declared uint8 or int8. quantRange infers it from the zero point's
// values: a negative value means int8, anything else (and an absent zero
// point, as the spec says) uint8. A model with an int8 zero point whose
// values are all in [0, 127] (symmetric int8 quantization with zero point
// 0, say) therefore saturates as uint8.
//
// The integer arithmetic runs in float64, which is exact for the products
// and sums of 8-bit values (below 2⁵³), through the float Conv and MatMul
// implementations, and is then rounded (half to even) and saturated.

func init() {
	register("QuantizeLinear", 10, false, opQuantizeLinear)
	register("QuantizeLinear", 13, false, opQuantizeLinear)
	register("DequantizeLinear", 10, true, opDequantizeLinear)
	register("DequantizeLinear", 13, true, opDequantizeLinear)
	register("DynamicQuantizeLinear", 11, false, opDynamicQuantizeLinear)
	register("QLinearConv", 10, false, opQLinearConv)
	register("QLinearMatMul", 10, false, opQLinearMatMul)
	register("ConvInteger", 10, false, opConvInteger)
	register("MatMulInteger", 10, false, opMatMulInteger)
}

// quantRange returns the saturation bounds of the 8-bit type of zero
// point zp (nil: uint8), inferred from its values (see the file comment).
func quantRange(c *nodeCtx, zp *autograd.Var, index int, name string) (lo, hi float64, err error) {
	if zp == nil {
		return 0, 255, nil
	}
	switch c.InputType(index) {
	case onnxpb.TensorProto_INT8:
		return -128, 127, nil
	case onnxpb.TensorProto_UINT8:
		return 0, 255, nil
	}
	if zp.Value.DType() != device.Int64 {
		return 0, 0, c.Errorf("input %s must be an 8-bit integer tensor, found %v", name, zp.Value.DType())
	}
	neg := false
	for _, v := range c.Ints(zp) {
		if v < -128 || v > 255 {
			return 0, 0, c.Errorf("input %s holds %d, outside the int8 and uint8 ranges", name, v)
		}
		neg = neg || v < 0
	}
	if neg {
		return -128, 127, nil
	}
	return 0, 255, nil
}

// quantParam reshapes a scale or zero point p so that it broadcasts
// against x: a tensor of one element becomes a scalar; with perAxis, a
// 1-D tensor whose length is x's size along axis lines up with that axis.
func quantParam(c *nodeCtx, p *autograd.Var, x *autograd.Var, axis int64, perAxis bool, name string) (*autograd.Var, error) {
	ps, xs := p.Shape(), x.Shape()
	n := 1
	for _, d := range ps {
		n *= d
	}
	if n == 1 && len(ps) <= 1 {
		return autograd.Reshape(p, []int{}...), nil
	}
	if !perAxis || len(ps) != 1 {
		if perAxis {
			return nil, c.Errorf("input %s has shape %v, expected a scalar or a 1-D tensor", name, ps)
		}
		return nil, c.Errorf("input %s has shape %v, expected a scalar (per-axis quantization needs opset 13)", name, ps)
	}
	ax, err := c.normAxis("attribute axis", axis, len(xs))
	if err != nil {
		return nil, err
	}
	if ps[0] != xs[ax] {
		return nil, c.Errorf("input %s has %d values, expected %d (the size of axis %d of input x %v)", name, ps[0], xs[ax], ax, xs)
	}
	shape := make([]int, len(xs))
	for i := range shape {
		shape[i] = 1
	}
	shape[ax] = ps[0]
	return autograd.Reshape(p, shape...), nil
}

// quantInputs reads the inputs of QuantizeLinear and DequantizeLinear (x,
// scale and the optional zero point, named xName, sName and zName) and
// returns x, the scale and the zero point shaped to broadcast against x.
func quantInputs(c *nodeCtx, xName, sName, zName string) (x, scale, zp *autograd.Var, err error) {
	in, err := c.inputs(xName, sName, zName+"?")
	if err != nil {
		return
	}
	x, scale, zp = in[0], in[1], in[2]
	if err = nnFloat(c, scale, sName); err != nil {
		return
	}
	perAxis := c.Opset() >= 13
	axis := c.AttrInt("axis", 1)
	if scale, err = quantParam(c, scale, x, axis, perAxis, sName); err != nil {
		return
	}
	if zp != nil {
		if zp.Value.DType() != device.Int64 {
			err = c.Errorf("input %s must be an integer tensor, found %v", zName, zp.Value.DType())
			return
		}
		if zp, err = quantParam(c, zp, x, axis, perAxis, zName); err != nil {
			return
		}
	}
	return
}

// opQuantizeLinear is QuantizeLinear: y = saturate(round(x / y_scale) +
// y_zero_point), rounding halves to even, computed in x's float type.
func opQuantizeLinear(c *nodeCtx) ([]*autograd.Var, error) {
	x, scale, zp, err := quantInputs(c, "x", "y_scale", "y_zero_point")
	if err != nil {
		return nil, err
	}
	if err := nnFloat(c, x, "x"); err != nil {
		return nil, err
	}
	lo, hi, err := quantRange(c, zp, 2, "y_zero_point")
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{autograd.Constant(quantize(x.Value, scale.Value, zp, lo, hi))}, nil
}

// quantize returns saturate(round(x / scale) + zp) as Int64, computed in
// x's float type.
func quantize(x, scale *tensor.Tensor, zp *autograd.Var, lo, hi float64) *tensor.Tensor {
	dt := x.DType()
	if scale.DType() != dt {
		scale = scale.Cast(dt)
	}
	y := x.Div(scale).Round()
	if zp != nil {
		y = y.Add(zp.Value.Cast(dt))
	}
	return y.MaxScalar(lo).MinScalar(hi).Cast(device.Int64)
}

// opDequantizeLinear is DequantizeLinear: y = (x - x_zero_point) *
// x_scale in the scale's float type. The gradient flows to x_scale.
func opDequantizeLinear(c *nodeCtx) ([]*autograd.Var, error) {
	x, scale, zp, err := quantInputs(c, "x", "x_scale", "x_zero_point")
	if err != nil {
		return nil, err
	}
	if x.Value.DType() != device.Int64 {
		return nil, c.Errorf("input x must be an integer tensor, found %v", x.Value.DType())
	}
	dt := scale.Value.DType()
	xf := x.Value.Cast(dt)
	if zp != nil {
		xf = xf.Sub(zp.Value.Cast(dt))
	}
	return []*autograd.Var{autograd.Mul(autograd.Constant(xf), scale)}, nil
}

// opDynamicQuantizeLinear is DynamicQuantizeLinear: uint8 quantization
// of x with the scale and zero point that map [min(x, 0), max(x, 0)] onto
// [0, 255], computed in float32 like the spec's reference.
func opDynamicQuantizeLinear(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("x")
	if err != nil {
		return nil, err
	}
	if err := nnFloat(c, x, "x"); err != nil {
		return nil, err
	}
	var xmin, xmax float32
	if x.Value.Len() > 0 {
		xmax = float32(x.Value.MaxAll().Item())
		xmin = -float32(x.Value.Neg().MaxAll().Item())
	}
	if math.IsNaN(float64(xmin)) || math.IsNaN(float64(xmax)) || math.IsInf(float64(xmin), 0) || math.IsInf(float64(xmax), 0) {
		return nil, c.Errorf("input x holds NaN or infinite values (range [%g, %g])", xmin, xmax)
	}
	xmin, xmax = min(xmin, 0), max(xmax, 0)
	scale := (xmax - xmin) / 255
	var zpv float64
	if scale != 0 {
		zpv = math.RoundToEven(float64((0 - xmin) / scale))
		zpv = min(max(zpv, 0), 255)
	}
	dev := x.Value.Device()
	var y *tensor.Tensor
	if scale == 0 {
		y = tensor.Full(dev, device.Int64, 0, x.Shape()...)
	} else {
		zp := autograd.Constant(tensor.Full(dev, device.Int64, zpv))
		y = quantize(x.Value, tensor.Full(dev, x.Value.DType(), float64(scale)), zp, 0, 255)
	}
	return []*autograd.Var{
		autograd.Constant(y),
		c.ConstScalar(device.Float32, float64(scale)),
		c.ConstScalar(device.Int64, zpv),
	}, nil
}

// intInputs checks that the inputs vs, named names, are integer tensors
// (or absent: nil).
func intInputs(c *nodeCtx, names []string, vs ...*autograd.Var) error {
	for i, v := range vs {
		if v != nil && v.Value.DType() != device.Int64 {
			return c.Errorf("input %s must be an integer tensor, found %v", names[i], v.Value.DType())
		}
	}
	return nil
}

// zeroShifted returns v - zp in float64 as a constant. zp is a scalar (one
// element) or, when axis >= 0, a 1-D tensor with one value per index of
// v's axis.
func zeroShifted(c *nodeCtx, v, zp *autograd.Var, axis int, vName, zName string) (*autograd.Var, error) {
	f := v.Value.Cast(device.Float64)
	if zp == nil {
		return autograd.Constant(f), nil
	}
	z, err := perIndex(c, zp, v.Shape(), axis, vName, zName)
	if err != nil {
		return nil, err
	}
	return autograd.Constant(f.Sub(z.Cast(device.Float64))), nil
}

// perIndex returns p (a scalar, or with axis >= 0 a 1-D tensor of one value
// per index of that axis of shape) reshaped to broadcast against shape.
func perIndex(c *nodeCtx, p *autograd.Var, shape []int, axis int, vName, pName string) (*tensor.Tensor, error) {
	ps := p.Shape()
	if n := p.Value.Len(); n == 1 && len(ps) <= 1 {
		return p.Value.Reshape(), nil
	}
	if axis < 0 || len(ps) != 1 || axis >= len(shape) || ps[0] != shape[axis] {
		want := "a scalar"
		if axis >= 0 && axis < len(shape) {
			want = fmt.Sprintf("a scalar or a 1-D tensor of %d values (axis %d of %s)", shape[axis], axis, vName)
		}
		return nil, c.Errorf("input %s has shape %v, expected %s", pName, ps, want)
	}
	s := make([]int, len(shape))
	for i := range s {
		s[i] = 1
	}
	s[axis] = ps[0]
	return p.Value.Reshape(s...), nil
}

// opConvInteger is ConvInteger: the convolution of (x - x_zero_point) and
// (w - w_zero_point) with int32 accumulation, w_zero_point per output
// channel or scalar. The padding holds zero after the shift (the zero
// point before it).
func opConvInteger(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("x", "w", "x_zero_point?", "w_zero_point?")
	if err != nil {
		return nil, err
	}
	y, err := convShifted(c, in[0], in[1], in[2], in[3])
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{autograd.Constant(y.Value.Cast(device.Int64))}, nil
}

// convShifted checks the inputs x, w and their zero points xz and wz (nil:
// absent) and returns the float64 convolution of the shifted values.
func convShifted(c *nodeCtx, x, w, xz, wz *autograd.Var) (*autograd.Var, error) {
	if err := intInputs(c, []string{"x", "w", "x_zero_point", "w_zero_point"}, x, w, xz, wz); err != nil {
		return nil, err
	}
	if len(w.Shape()) < 1 {
		return nil, c.Errorf("input w has shape %v, expected M×C/group×kH×kW", w.Shape())
	}
	xf, err := zeroShifted(c, x, xz, -1, "x", "x_zero_point")
	if err != nil {
		return nil, err
	}
	wf, err := zeroShifted(c, w, wz, 0, "w", "w_zero_point")
	if err != nil {
		return nil, err
	}
	out, err := opConv(c.withInputs(xf, wf))
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// opMatMulInteger is MatMulInteger: (A - a_zero_point) × (B -
// b_zero_point) with int32 accumulation; a_zero_point is a scalar or one
// value per row of A, b_zero_point a scalar or one value per column of B.
func opMatMulInteger(c *nodeCtx) ([]*autograd.Var, error) {
	names := []string{"A", "B", "a_zero_point", "b_zero_point"}
	in, err := c.inputs(names[0], names[1], names[2]+"?", names[3]+"?")
	if err != nil {
		return nil, err
	}
	y, err := matMulShifted(c, names, in[0], in[1], in[2], in[3])
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{autograd.Constant(y.Value.Cast(device.Int64))}, nil
}

// matMulShifted checks the inputs a, b and their zero points az and bz
// (nil: absent), named by names in that order, and returns the float64
// product of the shifted values.
func matMulShifted(c *nodeCtx, names []string, a, b, az, bz *autograd.Var) (*autograd.Var, error) {
	if err := intInputs(c, names, a, b, az, bz); err != nil {
		return nil, err
	}
	an, bn, azn, bzn := names[0], names[1], names[2], names[3]
	if a.Value.Rank() == 0 || b.Value.Rank() == 0 {
		return nil, c.Errorf("inputs %s %v and %s %v must have at least one axis", an, a.Shape(), bn, b.Shape())
	}
	// A's zero point has one value per row (axis -2), B's one per column
	// (the last axis).
	rowAxis := a.Value.Rank() - 2
	if rowAxis < 0 {
		rowAxis = -1
	}
	af, err := zeroShifted(c, a, az, rowAxis, an, azn)
	if err != nil {
		return nil, err
	}
	colAxis := b.Value.Rank() - 1
	if b.Value.Rank() < 2 {
		colAxis = -1
	}
	bf, err := zeroShifted(c, b, bz, colAxis, bn, bzn)
	if err != nil {
		return nil, err
	}
	out, err := opMatMul(c.withInputs(af, bf))
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// requantize returns saturate(round(acc * scale / yScale) + yZp) as Int64
// for the float64 accumulator acc, scale being the product of the input
// scales (broadcasting against acc).
func requantize(c *nodeCtx, acc *autograd.Var, scale *tensor.Tensor, yScale, yZp *autograd.Var) (*autograd.Var, error) {
	if err := nnFloat(c, yScale, "y_scale"); err != nil {
		return nil, err
	}
	if yScale.Value.Len() != 1 {
		return nil, c.Errorf("input y_scale has shape %v, expected a scalar", yScale.Shape())
	}
	if yZp.Value.DType() != device.Int64 || yZp.Value.Len() != 1 {
		return nil, c.Errorf("input y_zero_point must be an integer scalar, found %v %v", yZp.Value.DType(), yZp.Shape())
	}
	lo, hi, err := quantRange(c, yZp, 7, "y_zero_point")
	if err != nil {
		return nil, err
	}
	ys := yScale.Value.Reshape().Cast(device.Float64)
	y := acc.Value.Mul(scale.Cast(device.Float64)).Div(ys).Round()
	y = y.Add(yZp.Value.Reshape().Cast(device.Float64))
	return autograd.Constant(y.MaxScalar(lo).MinScalar(hi).Cast(device.Int64)), nil
}

// qlScale checks the float scale input s, named name: a scalar, or with
// axis >= 0 one value per index of that axis of shape. It returns s
// shaped to broadcast against shape.
func qlScale(c *nodeCtx, s *autograd.Var, name string, shape []int, axis int) (*tensor.Tensor, error) {
	if err := nnFloat(c, s, name); err != nil {
		return nil, err
	}
	return perIndex(c, s, shape, axis, "", name)
}

// opQLinearConv is QLinearConv: ConvInteger of the inputs, plus the int32
// bias B, requantized with x_scale·w_scale/y_scale (w_scale and
// w_zero_point per output channel or scalar).
func opQLinearConv(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point", "B?")
	if err != nil {
		return nil, err
	}
	x, xScale, xZp, w, wScale, wZp, yScale, yZp, b := in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], in[8]
	acc, err := convShifted(c, x, w, xZp, wZp)
	if err != nil {
		return nil, err
	}
	ys := acc.Shape()
	xs, err := qlScale(c, xScale, "x_scale", ys, -1)
	if err != nil {
		return nil, err
	}
	ws, err := qlScale(c, wScale, "w_scale", ys, 1)
	if err != nil {
		return nil, err
	}
	if b != nil {
		if b.Value.DType() != device.Int64 {
			return nil, c.Errorf("input B must be an int32 tensor, found %v", b.Value.DType())
		}
		if err := nnVector(c, b, "B", ys[1]); err != nil {
			return nil, err
		}
		shape := make([]int, len(ys))
		for i := range shape {
			shape[i] = 1
		}
		shape[1] = ys[1]
		acc = autograd.Constant(acc.Value.Add(b.Value.Cast(device.Float64).Reshape(shape...)))
	}
	scale := xs.Cast(device.Float64).Mul(ws.Cast(device.Float64))
	y, err := requantize(c, acc, scale, yScale, yZp)
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{y}, nil
}

// opQLinearMatMul is QLinearMatMul: MatMulInteger of the inputs
// requantized with a_scale·b_scale/y_scale.
func opQLinearMatMul(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point")
	if err != nil {
		return nil, err
	}
	a, aScale, aZp, b, bScale, bZp, yScale, yZp := in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7]
	acc, err := matMulShifted(c, []string{"a", "b", "a_zero_point", "b_zero_point"}, a, b, aZp, bZp)
	if err != nil {
		return nil, err
	}
	ys := acc.Shape()
	rowAxis, colAxis := len(ys)-2, len(ys)-1
	if a.Value.Rank() < 2 {
		rowAxis = -1
	}
	if b.Value.Rank() < 2 {
		colAxis = -1
	}
	as, err := qlScale(c, aScale, "a_scale", ys, rowAxis)
	if err != nil {
		return nil, err
	}
	bs, err := qlScale(c, bScale, "b_scale", ys, colAxis)
	if err != nil {
		return nil, err
	}
	y, err := requantize(c, acc, as.Cast(device.Float64).Mul(bs.Cast(device.Float64)), yScale, yZp)
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{y}, nil
}
