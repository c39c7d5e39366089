package onnx

import (
	"math"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

func init() {
	register("Pad", 1, true, opPad)
	register("Pad", 2, true, opPad)
	register("Pad", 11, true, opPad)
	register("Pad", 18, true, opPad)
}

// opPad implements Pad in the constant, reflect and edge modes. The pads
// (begin values for every axis, then end values; negative ones crop) and
// the constant value are attributes before opset 11 ("paddings" in opset
// 1) and inputs from 11; opset 18 adds the axes input that the pads refer
// to. Gradients flow to the data input.
func opPad(c *nodeCtx) ([]*autograd.Var, error) {
	var decl []string
	switch {
	case c.Opset() < 11:
		decl = []string{"data"} // pads and value are attributes
	case c.Opset() < 18:
		decl = []string{"data", "pads", "constant_value?"}
	default:
		decl = []string{"data", "pads", "constant_value?", "axes?"}
	}
	in, err := c.inputs(decl...)
	if err != nil {
		return nil, err
	}
	x := in[0]
	r := x.Value.Rank()
	var pads []int64
	value := 0.0
	axes := make([]int, r)
	for i := range axes {
		axes[i] = i
	}
	if c.Opset() < 11 {
		name := "pads"
		if c.Opset() < 2 {
			name = "paddings"
		}
		if !c.HasAttr(name) {
			return nil, c.Errorf("attribute %s is missing", name)
		}
		pads = c.AttrInts(name, nil)
		value = c.AttrFloat("value", 0)
	} else {
		if pads, err = shInts(c, in[1], "pads"); err != nil {
			return nil, err
		}
		if cv := in[2]; cv != nil {
			if cv.Value.Len() != 1 {
				return nil, c.Errorf("input constant_value must hold one value, found shape %v", cv.Shape())
			}
			if cv.Value.DType() != x.Value.DType() {
				return nil, c.Errorf("input constant_value has type %v, data has %v", cv.Value.DType(), x.Value.DType())
			}
			value = c.Floats(cv)[0]
		}
		if c.Opset() >= 18 && in[3] != nil {
			a, err := shInts(c, in[3], "axes")
			if err != nil {
				return nil, err
			}
			if axes, err = shNormAxes(c, "axes", a, r, true); err != nil {
				return nil, err
			}
		}
	}
	k := len(axes)
	if len(pads) != 2*k {
		return nil, c.Errorf("pads %v has %d entries, expected %d (begin and end for %d axes of input %v)", pads, len(pads), 2*k, k, x.Shape())
	}
	mode := c.AttrString("mode", "constant")
	switch mode {
	case "constant", "reflect", "edge":
	case "wrap":
		return nil, c.Unsupported("Pad mode %q", mode)
	default:
		return nil, c.Errorf("attribute mode %q, expected constant, reflect or edge", mode)
	}
	shape := x.Shape()
	for i, a := range axes {
		b, e := pads[i], pads[i+k]
		if b > math.MaxInt32 || e > math.MaxInt32 || b+e+int64(shape[a]) < 0 {
			return nil, c.Errorf("pads %v: axis %d of input %v cannot be padded by %d and %d", pads, a, shape, b, e)
		}
		if (b > 0 || e > 0) && shape[a]+int(min(b, 0))+int(min(e, 0)) == 0 && mode != "constant" {
			return nil, c.Errorf("pads %v: %s padding of axis %d of input %v, which is (or is cropped to) empty", pads, mode, a, shape)
		}
	}
	padded := x.Shape()
	for i, a := range axes {
		padded[a] += int(pads[i] + pads[i+k])
	}
	if err := c.checkElements(padded); err != nil {
		return nil, err
	}
	out := x
	for i, a := range axes {
		b, e := int(pads[i]), int(pads[i+k])
		if b < 0 || e < 0 { // crop first
			d := out.Value.Dim(a)
			out = autograd.Slice(out, a, max(-b, 0), d-max(-e, 0))
			b, e = max(b, 0), max(e, 0)
		}
		if b == 0 && e == 0 {
			continue
		}
		switch mode {
		case "constant":
			out = shPadConstant(c, out, a, b, e, value)
		default:
			d := out.Value.Dim(a)
			idx := make([]int64, b+d+e)
			for j := range idx {
				idx[j] = int64(shPadSource(j-b, d, mode == "reflect"))
			}
			out = autograd.IndexSelect(out, a, c.ConstInts(idx).Value)
		}
	}
	return []*autograd.Var{out}, nil
}

// shPadSource returns the position in an axis of length d > 0 that the
// padded position j (relative to the axis start, may be outside [0, d))
// copies: the nearest edge, or its mirror image (without repeating the
// edge) when reflect is set.
func shPadSource(j, d int, reflect bool) int {
	if !reflect || d == 1 {
		return min(max(j, 0), d-1)
	}
	period := 2 * (d - 1)
	j %= period
	if j < 0 {
		j += period
	}
	if j >= d {
		j = period - j
	}
	return j
}

// shPadConstant pads axis a of x with b and e elements of value.
func shPadConstant(c *nodeCtx, x *autograd.Var, a, b, e int, value float64) *autograd.Var {
	parts := make([]*autograd.Var, 0, 3)
	block := func(n int) *autograd.Var {
		s := x.Shape()
		s[a] = n
		return autograd.Constant(tensor.Full(c.Device(), x.Value.DType(), value, s...))
	}
	if b > 0 {
		parts = append(parts, block(b))
	}
	parts = append(parts, x)
	if e > 0 {
		parts = append(parts, block(e))
	}
	return autograd.Concat(a, parts...)
}
