package onnx

import (
	"math"
	"slices"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Reductions (ReduceSum, ReduceMean, ReduceMax, ...), Softmax, LogSoftmax
// and CumSum. They are built from autograd operations, so gradients flow to
// their floating-point inputs. Integer inputs (device.Int64) are computed
// in float64 and cast back, which is exact for values below 2⁵³.

func init() {
	for _, r := range []struct {
		op   string
		kind rdKind
	}{
		{"ReduceSum", rdSum}, {"ReduceMean", rdMean}, {"ReduceMax", rdMax}, {"ReduceMin", rdMin},
		{"ReduceProd", rdProd}, {"ReduceL1", rdL1}, {"ReduceL2", rdL2}, {"ReduceLogSum", rdLogSum},
		{"ReduceLogSumExp", rdLogSumExp}, {"ReduceSumSquare", rdSumSquare},
	} {
		// The axes moved from an attribute to an optional input in opset
		// 13 for ReduceSum and in opset 18 for the others.
		inputSince := 18
		if r.op == "ReduceSum" {
			inputSince = 13
		}
		register(r.op, 1, true, reduceOp(r.kind, false))
		register(r.op, inputSince, true, reduceOp(r.kind, true))
	}
	register("Softmax", 1, true, softmaxOp(rdSoftmax, true))
	register("Softmax", 13, true, softmaxOp(rdSoftmax, false))
	register("LogSoftmax", 1, true, softmaxOp(rdLogSoftmax, true))
	register("LogSoftmax", 13, true, softmaxOp(rdLogSoftmax, false))
	register("Hardmax", 1, false, softmaxOp(rdHardmax, true))
	register("Hardmax", 13, false, softmaxOp(rdHardmax, false))
	register("CumSum", 11, true, cumSumOp)
}

// rdKind names a reduction or a softmax-like operator.
type rdKind int

const (
	rdSum rdKind = iota
	rdMean
	rdMax
	rdMin
	rdProd
	rdL1
	rdL2
	rdLogSum
	rdLogSumExp
	rdSumSquare
	rdSoftmax
	rdLogSoftmax
	rdHardmax
)

// rdEmptyValue is the result of a reduction over no elements.
func rdEmptyValue(kind rdKind) float64 {
	switch kind {
	case rdMean:
		return math.NaN()
	case rdMax, rdLogSum, rdLogSumExp:
		return math.Inf(-1)
	case rdMin:
		return math.Inf(1)
	case rdProd:
		return 1
	}
	return 0
}

// rdAsFloat returns v itself when it holds floating-point values, and
// otherwise (Int64) a constant float64 copy; isInt tells which.
func rdAsFloat(v *autograd.Var) (f *autograd.Var, isInt bool) {
	if v.Value.DType().IsFloat() {
		return v, false
	}
	return autograd.Constant(v.Value.Cast(device.Float64)), true
}

// rdBackToInt casts a result computed by way of rdAsFloat back to Int64
// when isInt is set (truncating toward zero).
func rdBackToInt(v *autograd.Var, isInt bool) *autograd.Var {
	if !isInt {
		return v
	}
	return autograd.Constant(v.Value.Cast(device.Int64))
}

// rdAxes normalises the reduction axes, rejecting repeated ones.
func rdAxes(c *nodeCtx, what string, axes []int64, rank int) ([]int, error) {
	out := make([]int, len(axes))
	seen := make(map[int]bool, len(axes))
	for i, a := range axes {
		n, err := c.normAxis(what, a, rank)
		if err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, c.Errorf("%s %v repeats axis %d", what, axes, n)
		}
		seen[n] = true
		out[i] = n
	}
	return out, nil
}

// reduceOp returns the implementation of a Reduce* operator; axesInput
// tells that the axes come from the optional second input (with the
// noop_with_empty_axes attribute) rather than from the axes attribute.
func reduceOp(kind rdKind, axesInput bool) opFunc {
	return func(c *nodeCtx) ([]*autograd.Var, error) {
		decl := []string{"data", "axes?"}
		if !axesInput {
			decl = decl[:1]
		}
		in, err := c.inputs(decl...)
		if err != nil {
			return nil, err
		}
		x := in[0]
		rank := x.Value.Rank()
		var axes []int64
		if axesInput {
			if c.HasAttr("axes") {
				return nil, c.Errorf("attribute axes is not allowed from opset %d on: axes is the second input", c.Opset())
			}
			if a := in[1]; a != nil {
				if r := a.Value.Rank(); r > 1 {
					return nil, c.Errorf("input axes must be 1-D, found shape %v", a.Shape())
				}
				axes = c.Ints(a)
			}
		} else {
			axes = c.AttrInts("axes", nil)
		}
		keep := c.AttrInt("keepdims", 1) != 0
		norm, err := rdAxes(c, "axes", axes, rank)
		if err != nil {
			return nil, err
		}
		if len(norm) == 0 {
			if axesInput && c.AttrInt("noop_with_empty_axes", 0) != 0 {
				norm = []int{} // reduce over no axis: an elementwise map
			} else {
				norm = make([]int, rank)
				for i := range norm {
					norm[i] = i
				}
			}
		}
		slices.Sort(norm)
		return []*autograd.Var{rdReduce(c, kind, x, norm, keep)}, nil
	}
}

// rdReduce reduces x over the (normalised, distinct, sorted) axes; with
// no axes it applies the reduction's elementwise part only.
func rdReduce(c *nodeCtx, kind rdKind, x *autograd.Var, axes []int, keep bool) *autograd.Var {
	shape := x.Shape()
	keptShape := append([]int(nil), shape...)
	var outShape []int
	red := make([]bool, len(shape))
	count := 1
	for _, a := range axes {
		red[a] = true
		keptShape[a] = 1
		count *= shape[a]
	}
	for i, d := range shape {
		if !red[i] {
			outShape = append(outShape, d)
		}
	}
	final := outShape
	if keep {
		final = keptShape
	}
	if len(axes) > 0 && count == 0 {
		e := rdEmptyValue(kind)
		if x.Value.DType() == device.Int64 {
			switch {
			case math.IsNaN(e):
				e = 0
			case e < math.MinInt64:
				e = math.MinInt64
			case e > math.MaxInt64:
				e = math.MaxInt64
			}
		}
		return c.Const(tensor.Full(c.dev, x.Value.DType(), e, final...))
	}
	if len(axes) > 1 && axes[len(axes)-1]-axes[0] == len(axes)-1 && x.Value.IsContiguous() {
		// Adjacent axes (such as H and W of N×C×H×W) merge into one, a
		// view, so that one kernel reduces them.
		a, b := axes[0], axes[len(axes)-1]
		merged := append(append(append([]int(nil), shape[:a]...), count), shape[b+1:]...)
		y := rdReduce(c, kind, autograd.Reshape(x, merged...), []int{a}, false)
		return autograd.Reshape(y, final...)
	}
	xf, isInt := rdAsFloat(x)
	sum := func(v *autograd.Var) *autograd.Var {
		if len(axes) == 0 {
			return v
		}
		return autograd.SumAxes(v, axes, keep)
	}
	var y *autograd.Var
	switch kind {
	case rdSum:
		y = sum(xf)
	case rdMean:
		y = sum(xf)
		if count > 1 {
			y = autograd.MulScalar(y, 1/float64(count))
		}
	case rdSumSquare:
		y = sum(autograd.Mul(xf, xf))
	case rdL1:
		y = sum(autograd.Abs(xf))
	case rdL2:
		y = autograd.Sqrt(sum(autograd.Mul(xf, xf)))
	case rdLogSum:
		y = autograd.Log(sum(xf))
	case rdLogSumExp:
		if len(axes) == 0 {
			y = xf
			break
		}
		// log Σ exp(x) = m + log Σ exp(x - m) for any constant m; the
		// maximum (clamped to finite values) keeps exp in range.
		m := rdExtreme(autograd.NoGrad(xf), axes, true, rdMax).Value
		m = m.MaxScalar(-math.MaxFloat32).MinScalar(math.MaxFloat32)
		mc := autograd.Constant(m)
		s := autograd.Log(autograd.SumAxes(autograd.Exp(autograd.Sub(xf, mc)), axes, true))
		y = autograd.Add(s, mc)
		if !keep {
			y = autograd.Reshape(y, final...)
		}
	case rdMax, rdMin, rdProd:
		if len(axes) == 0 {
			y = xf
			break
		}
		y = rdExtreme(xf, axes, keep, kind)
	}
	return rdBackToInt(y, isInt)
}

// rdExtreme computes ReduceMax, ReduceMin or ReduceProd of x over axes
// (at least one): one axis directly, several by moving them last and
// merging them into one.
func rdExtreme(x *autograd.Var, axes []int, keep bool, kind rdKind) *autograd.Var {
	shape := x.Shape()
	if len(axes) == 1 && kind != rdProd {
		if kind == rdMax {
			return autograd.Max(x, axes[0], keep)
		}
		return autograd.Min(x, axes[0], keep)
	}
	red := make([]bool, len(shape))
	for _, a := range axes {
		red[a] = true
	}
	var perm, rest []int
	kept := append([]int(nil), shape...)
	n := 1
	for i, d := range shape {
		if !red[i] {
			perm = append(perm, i)
			rest = append(rest, d)
		}
	}
	for i, d := range shape {
		if red[i] {
			perm = append(perm, i)
			n *= d
			kept[i] = 1
		}
	}
	v := x
	if !rdIsIdentity(perm) {
		v = autograd.Permute(v, perm...)
	}
	v = autograd.Reshape(v, append(append([]int(nil), rest...), n)...)
	last := len(rest)
	switch kind {
	case rdMax:
		v = autograd.Max(v, last, false)
	case rdMin:
		v = autograd.Min(v, last, false)
	default:
		v = rdProdLast(v)
	}
	if keep {
		return autograd.Reshape(v, kept...)
	}
	return v
}

// rdProdLast multiplies the elements along the last axis of x, pairing
// halves so that log₂ n products of slices do it (zeros are fine, unlike
// exp Σ log). The last axis is removed.
func rdProdLast(x *autograd.Var) *autograd.Var {
	last := x.Value.Rank() - 1
	for n := x.Value.Dim(last); n > 1; n = x.Value.Dim(last) {
		h := n / 2
		p := autograd.Mul(autograd.Slice(x, last, 0, h), autograd.Slice(x, last, h, 2*h))
		if n%2 == 1 {
			p = autograd.Concat(last, p, autograd.Slice(x, last, 2*h, n))
		}
		x = p
	}
	return autograd.Squeeze(x, last)
}

// rdIsIdentity reports whether perm is 0, 1, 2, ...
func rdIsIdentity(perm []int) bool {
	for i, p := range perm {
		if i != p {
			return false
		}
	}
	return true
}

// softmaxOp returns Softmax, LogSoftmax or Hardmax. With coerce (opsets
// before 13) the input is seen as a matrix whose rows are the axes before
// axis and whose columns are the axes from axis on, and the operator
// works on the rows; from opset 13 it works along axis alone.
func softmaxOp(kind rdKind, coerce bool) opFunc {
	return func(c *nodeCtx) ([]*autograd.Var, error) {
		x, err := c.input("input")
		if err != nil {
			return nil, err
		}
		if !x.Value.DType().IsFloat() {
			return nil, c.Errorf("input must be float or double, found %v", x.Value.DType())
		}
		shape := x.Shape()
		rank := len(shape)
		def := int64(-1)
		if coerce {
			def = 1
		}
		if rank == 0 {
			return nil, c.Errorf("input must have rank at least 1, found a scalar")
		}
		axis, err := c.normAxis("axis", c.AttrInt("axis", def), rank)
		if err != nil {
			return nil, err
		}
		v := x
		if coerce && axis != rank-1 {
			v = autograd.Reshape(x, device.NumElements(shape[:axis]), device.NumElements(shape[axis:]))
			axis = 1
		}
		var y *autograd.Var
		switch kind {
		case rdSoftmax:
			y = autograd.Softmax(v, axis)
		case rdLogSoftmax:
			y = autograd.LogSoftmax(v, axis)
		default:
			y = c.Const(rdOneHotMax(v.Value, axis))
		}
		if v != x {
			y = autograd.Reshape(y, shape...)
		}
		return []*autograd.Var{y}, nil
	}
}

// rdOneHotMax returns 1 at the first maximum of x along axis and 0
// elsewhere, in x's type.
func rdOneHotMax(x *tensor.Tensor, axis int) *tensor.Tensor {
	n := x.Dim(axis)
	if x.Len() == 0 {
		return x.Clone()
	}
	idx := x.ArgMax(axis, true).Cast(x.DType())
	return rdArange(x.Device(), x.DType(), n, axis, x.Rank()).Eq(idx)
}

// rdArange returns 0, 1, ..., n-1 of type dt along axis of a tensor of
// the given rank whose other axes have length 1.
func rdArange(dev device.Device, dt device.DType, n, axis, rank int) *tensor.Tensor {
	shape := make([]int, rank)
	for i := range shape {
		shape[i] = 1
	}
	shape[axis] = n
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = float64(i)
	}
	return tensor.FromFloat64(vals, shape...).Cast(dt).To(dev)
}

// rdCumSumMatMul is the longest axis CumSum computes as a product with a
// triangular matrix; longer ones use a log-step scan.
const rdCumSumMatMul = 256

// cumSumOp is CumSum: running sums along the axis given by the second
// input, inclusive or exclusive, forward or in reverse.
func cumSumOp(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("x", "axis")
	if err != nil {
		return nil, err
	}
	x, axisIn := in[0], in[1]
	if axisIn.Value.Len() != 1 || axisIn.Value.Rank() > 1 {
		return nil, c.Errorf("input axis must be a scalar, found shape %v", axisIn.Shape())
	}
	if axisIn.Value.DType() != device.Int64 {
		return nil, c.Errorf("input axis must be int32 or int64, found %v", axisIn.Value.DType())
	}
	rank := x.Value.Rank()
	if rank == 0 {
		return nil, c.Errorf("input x must have rank at least 1, found a scalar")
	}
	axis, err := c.normAxis("axis", c.Ints(axisIn)[0], rank)
	if err != nil {
		return nil, err
	}
	exclusive := c.AttrInt("exclusive", 0) != 0
	reverse := c.AttrInt("reverse", 0) != 0
	if x.Value.Len() == 0 {
		return []*autograd.Var{x}, nil
	}
	xf, isInt := rdAsFloat(x)
	y := rdCumSum(c, xf, axis, exclusive, reverse)
	return []*autograd.Var{rdBackToInt(y, isInt)}, nil
}

// rdCumSum computes the running sums of the float tensor x along axis.
func rdCumSum(c *nodeCtx, x *autograd.Var, axis int, exclusive, reverse bool) *autograd.Var {
	shape := x.Shape()
	rank := len(shape)
	n := shape[axis]
	v := x
	if axis != rank-1 {
		v = autograd.Transpose(v, axis, rank-1)
	}
	vshape := v.Shape()
	m := v.Value.Len() / n
	dt := x.Value.DType()
	var y *autograd.Var
	if n <= rdCumSumMatMul {
		// y[j] = Σ_i x[i]·T[i][j] with T lower or upper triangular.
		tri := make([]float64, n*n)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				in := i <= j
				switch {
				case exclusive && !reverse:
					in = i < j
				case !exclusive && reverse:
					in = i >= j
				case exclusive && reverse:
					in = i > j
				}
				if in {
					tri[i*n+j] = 1
				}
			}
		}
		t := c.Const(tensor.FromFloat64(tri, n, n).Cast(dt))
		y = autograd.Reshape(autograd.MatMul(autograd.Reshape(v, m, n), t), vshape...)
	} else {
		// Hillis–Steele scan: log₂ n shifted additions.
		last := rank - 1
		var rev *tensor.Tensor
		if reverse {
			idx := make([]int64, n)
			for i := range idx {
				idx[i] = int64(n - 1 - i)
			}
			rev = tensor.FromInt64(idx, n).To(c.dev)
			v = autograd.IndexSelect(v, last, rev)
		}
		shift := func(v *autograd.Var, k int) *autograd.Var {
			zs := append([]int(nil), vshape...)
			zs[last] = k
			z := c.Const(tensor.Full(c.dev, dt, 0, zs...))
			return autograd.Concat(last, z, autograd.Slice(v, last, 0, n-k))
		}
		if exclusive {
			v = shift(v, 1)
		}
		for k := 1; k < n; k *= 2 {
			v = autograd.Add(v, shift(v, k))
		}
		if reverse {
			v = autograd.IndexSelect(v, last, rev)
		}
		y = v
	}
	if axis != rank-1 {
		y = autograd.Transpose(y, axis, rank-1)
	}
	return y
}
