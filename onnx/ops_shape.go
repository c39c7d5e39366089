package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Shape and data-movement operators: Reshape, Flatten, Transpose,
// Squeeze, Unsqueeze, Concat, Split, Slice, Gather, GatherElements, Shape,
// Size, Constant, ConstantOfShape, Expand, Tile, DepthToSpace and
// SpaceToDepth (Pad is in ops_pad.go). All of them are built from autograd
// views, joins and index selections, so gradients flow through their data
// inputs; shape, axes and index inputs are read on the host.

func init() {
	register("Reshape", 1, true, opReshape)
	register("Reshape", 5, true, opReshape)
	register("Reshape", 14, true, opReshape)
	register("Flatten", 1, true, opFlatten)
	register("Flatten", 11, true, opFlatten)
	register("Transpose", 1, true, opTranspose)
	register("Squeeze", 1, true, opSqueeze)
	register("Squeeze", 11, true, opSqueeze)
	register("Squeeze", 13, true, opSqueeze)
	register("Unsqueeze", 1, true, opUnsqueeze)
	register("Unsqueeze", 11, true, opUnsqueeze)
	register("Unsqueeze", 13, true, opUnsqueeze)
	register("Concat", 1, true, opConcat)
	register("Concat", 4, true, opConcat)
	register("Split", 1, true, opSplit)
	register("Split", 2, true, opSplit)
	register("Split", 13, true, opSplit)
	register("Split", 18, true, opSplit)
	register("Slice", 1, true, opSlice)
	register("Slice", 10, true, opSlice)
	register("Gather", 1, true, opGather)
	register("GatherElements", 11, true, opGatherElements)
	register("Shape", 1, false, opShape)
	register("Shape", 15, false, opShape)
	register("Size", 1, false, opSize)
	register("Constant", 1, false, opConstant)
	register("Constant", 12, false, opConstant)
	register("ConstantOfShape", 9, false, opConstantOfShape)
	register("Expand", 8, true, opExpand)
	register("Tile", 1, true, opTile1)
	register("Tile", 6, true, opTile)
	register("DepthToSpace", 1, true, opDepthToSpace)
	register("DepthToSpace", 11, true, opDepthToSpace)
	register("SpaceToDepth", 1, true, opSpaceToDepth)
}

// shInts reads a 0-D or 1-D integer input (a shape, axes, sizes) to the
// host, or returns an error naming it.
func shInts(c *nodeCtx, v *autograd.Var, name string) ([]int64, error) {
	vals, err := c.intValues(v, name)
	if err != nil {
		return nil, err
	}
	if v.Value.Rank() > 1 {
		return nil, c.Errorf("input %s must be 1-D, found shape %v", name, v.Shape())
	}
	return vals, nil
}

// shOptInts reads the optional integer input v (nil: absent) named name;
// present tells whether the node gives it.
func shOptInts(c *nodeCtx, v *autograd.Var, name string) (vals []int64, present bool, err error) {
	if v == nil {
		return nil, false, nil
	}
	vals, err = shInts(c, v, name)
	return vals, true, err
}

// shToInts converts checked int64 dimensions to ints.
func shToInts(v []int64) []int {
	out := make([]int, len(v))
	for i, d := range v {
		out[i] = int(d)
	}
	return out
}

// shReshape returns x with the given shape (x itself when it already has
// it).
func shReshape(x *autograd.Var, shape []int) *autograd.Var {
	if slices.Equal(x.Shape(), shape) {
		return x
	}
	return autograd.Reshape(x, shape...)
}

// shNormAxes maps possibly negative axes onto [0, rank), rejecting
// repeated ones; allowNeg is false for opsets before negative axes.
func shNormAxes(c *nodeCtx, what string, axes []int64, rank int, allowNeg bool) ([]int, error) {
	out := make([]int, len(axes))
	seen := make(map[int]bool, len(axes))
	for i, a := range axes {
		if a < 0 && !allowNeg {
			return nil, c.Errorf("%s %d: negative axes need opset 11, the model has opset %d", what, a, c.Opset())
		}
		n, err := c.normAxis(fmt.Sprintf("%s %v: axis", what, axes), a, rank)
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

// opReshape implements Reshape: the target shape comes from the shape
// attribute (opset 1) or input; 0 copies the input's dimension (or is a
// real 0 with allowzero, opset 14), -1 is inferred.
func opReshape(c *nodeCtx) ([]*autograd.Var, error) {
	decl := []string{"data", "shape"}
	if c.Opset() < 5 {
		decl = decl[:1] // shape is an attribute
	}
	in, err := c.inputs(decl...)
	if err != nil {
		return nil, err
	}
	x := in[0]
	var spec []int64
	if c.Opset() < 5 {
		if !c.HasAttr("shape") {
			return nil, c.Errorf("attribute shape is missing")
		}
		spec = c.AttrInts("shape", nil)
	} else {
		if spec, err = shInts(c, in[1], "shape"); err != nil {
			return nil, err
		}
	}
	allowZero := c.Opset() >= 14 && c.AttrInt("allowzero", 0) != 0
	shape, err := shReshapeTarget(c, x.Shape(), spec, allowZero)
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{shReshape(x, shape)}, nil
}

// shReshapeTarget resolves a Reshape shape spec against the input shape.
func shReshapeTarget(c *nodeCtx, in []int, spec []int64, allowZero bool) ([]int, error) {
	shape := make([]int, len(spec))
	infer, known := -1, 1
	hasZero := false
	for i, d := range spec {
		switch {
		case d == -1:
			if infer >= 0 {
				return nil, c.Errorf("shape %v has more than one -1", spec)
			}
			infer = i
			continue
		case d == 0 && !allowZero:
			if i >= len(in) {
				return nil, c.Errorf("shape %v: dimension %d is 0 (copy) but the input %v has rank %d", spec, i, in, len(in))
			}
			shape[i] = in[i]
		case d < 0:
			return nil, c.Errorf("shape %v has the negative dimension %d", spec, d)
		case d > math.MaxInt32:
			return nil, c.Errorf("shape %v: dimension %d is too large", spec, d)
		default:
			shape[i] = int(d)
			hasZero = hasZero || d == 0
		}
		known *= shape[i]
	}
	n := device.NumElements(in)
	if infer >= 0 {
		if hasZero && allowZero {
			return nil, c.Errorf("shape %v has both -1 and 0 with allowzero", spec)
		}
		if known == 0 || n%known != 0 {
			return nil, c.Errorf("cannot reshape input %v (%d elements) to %v", in, n, spec)
		}
		shape[infer] = n / known
		known *= shape[infer]
	}
	if known != n {
		return nil, c.Errorf("cannot reshape input %v (%d elements) to %v (%d elements)", in, n, spec, known)
	}
	return shape, nil
}

// opFlatten implements Flatten: the axes before axis become the first
// output dimension and the rest the second. Negative axes need opset 11.
func opFlatten(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("input")
	if err != nil {
		return nil, err
	}
	shape := x.Shape()
	r := len(shape)
	axis := c.AttrInt("axis", 1)
	if axis < 0 {
		if c.Opset() < 11 {
			return nil, c.Errorf("attribute axis %d: negative axes need opset 11, the model has opset %d", axis, c.Opset())
		}
		axis += int64(r)
	}
	if axis < 0 || axis > int64(r) {
		return nil, c.Errorf("attribute axis %d is out of range for rank %d (expected %d..%d)", c.AttrInt("axis", 1), r, -r, r)
	}
	out := []int{device.NumElements(shape[:axis]), device.NumElements(shape[axis:])}
	return []*autograd.Var{shReshape(x, out)}, nil
}

// opTranspose implements Transpose: perm defaults to reversing the axes.
// The result is a view.
func opTranspose(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("data")
	if err != nil {
		return nil, err
	}
	r := x.Value.Rank()
	perm := make([]int, r)
	if c.HasAttr("perm") {
		p := c.AttrInts("perm", nil)
		if len(p) != r {
			return nil, c.Errorf("attribute perm %v has %d entries, the input %v has rank %d", p, len(p), x.Shape(), r)
		}
		seen := make([]bool, r)
		for i, a := range p {
			if a < 0 || a >= int64(r) || seen[a] {
				return nil, c.Errorf("attribute perm %v is not a permutation of 0..%d", p, r-1)
			}
			seen[a] = true
			perm[i] = int(a)
		}
	} else {
		for i := range perm {
			perm[i] = r - 1 - i
		}
	}
	identity := true
	for i, a := range perm {
		identity = identity && a == i
	}
	if identity {
		return []*autograd.Var{x}, nil
	}
	return []*autograd.Var{autograd.Permute(x, perm...)}, nil
}

// opSqueeze implements Squeeze: axes (attribute before opset 13, input
// from 13) must have length 1; without axes every length-1 axis goes.
func opSqueeze(c *nodeCtx) ([]*autograd.Var, error) {
	decl := []string{"data", "axes?"}
	if c.Opset() < 13 {
		decl = decl[:1] // axes is an attribute
	}
	in, err := c.inputs(decl...)
	if err != nil {
		return nil, err
	}
	x := in[0]
	shape := x.Shape()
	var axes []int64
	given := false
	if c.Opset() >= 13 {
		if axes, given, err = shOptInts(c, in[1], "axes"); err != nil {
			return nil, err
		}
	} else if c.HasAttr("axes") {
		axes, given = c.AttrInts("axes", nil), true
	}
	drop := make([]bool, len(shape))
	if given && len(axes) > 0 { // empty axes squeeze everything, as onnxruntime does
		norm, err := shNormAxes(c, "axes", axes, len(shape), c.Opset() >= 11)
		if err != nil {
			return nil, err
		}
		for _, a := range norm {
			if shape[a] != 1 {
				return nil, c.Errorf("axes %v: axis %d of input %v has length %d, expected 1", axes, a, shape, shape[a])
			}
			drop[a] = true
		}
	} else {
		for i, d := range shape {
			drop[i] = d == 1
		}
	}
	out := x
	for i := len(shape) - 1; i >= 0; i-- {
		if drop[i] {
			out = autograd.Squeeze(out, i)
		}
	}
	return []*autograd.Var{out}, nil
}

// opUnsqueeze implements Unsqueeze: axes (attribute before opset 13, input
// from 13) are positions in the output, where length-1 axes are inserted.
func opUnsqueeze(c *nodeCtx) ([]*autograd.Var, error) {
	decl := []string{"data", "axes"}
	if c.Opset() < 13 {
		decl = decl[:1] // axes is an attribute
	}
	in, err := c.inputs(decl...)
	if err != nil {
		return nil, err
	}
	x := in[0]
	var axes []int64
	if c.Opset() >= 13 {
		if axes, err = shInts(c, in[1], "axes"); err != nil {
			return nil, err
		}
	} else {
		if !c.HasAttr("axes") {
			return nil, c.Errorf("attribute axes is missing")
		}
		axes = c.AttrInts("axes", nil)
	}
	r := x.Value.Rank() + len(axes)
	norm, err := shNormAxes(c, "axes", axes, r, c.Opset() >= 11)
	if err != nil {
		return nil, err
	}
	slices.Sort(norm)
	out := x
	for _, a := range norm {
		out = autograd.Unsqueeze(out, a)
	}
	return []*autograd.Var{out}, nil
}

// opConcat implements Concat (axis defaults to 1 in opset 1 and is
// required from opset 4; negative from 11).
func opConcat(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("inputs...")
	if err != nil {
		return nil, err
	}
	if c.Opset() >= 4 && !c.HasAttr("axis") {
		return nil, c.Errorf("attribute axis is missing")
	}
	first := in[0]
	r := first.Value.Rank()
	axisAttr := c.AttrInt("axis", 1)
	if axisAttr < 0 && c.Opset() < 11 {
		return nil, c.Errorf("attribute axis %d: negative axes need opset 11, the model has opset %d", axisAttr, c.Opset())
	}
	if r == 0 {
		return nil, c.Errorf("input 0 is a scalar; Concat needs rank ≥ 1")
	}
	axis, err := c.normAxis("attribute axis", axisAttr, r)
	if err != nil {
		return nil, err
	}
	s0 := first.Shape()
	for i, x := range in[1:] {
		s := x.Shape()
		if x.Value.DType() != first.Value.DType() {
			return nil, c.Errorf("input %d has type %v, input 0 has %v", i+1, x.Value.DType(), first.Value.DType())
		}
		ok := len(s) == r
		for j := 0; ok && j < r; j++ {
			ok = j == axis || s[j] == s0[j]
		}
		if !ok {
			return nil, c.Errorf("input %d has shape %v, expected %v except along axis %d", i+1, s, s0, axis)
		}
	}
	// A Concat of a value with itself, repeated, doubles each time:
	// bound the output before it is made.
	out := slices.Clone(s0)
	for _, x := range in[1:] {
		out[axis] += x.Shape()[axis]
	}
	if err := c.checkElements(out); err != nil {
		return nil, err
	}
	if len(in) == 1 {
		return []*autograd.Var{first}, nil
	}
	return []*autograd.Var{autograd.Concat(axis, in...)}, nil
}

// opSplit implements Split. The sizes come from the split attribute
// (before opset 13; opset 1 also takes a second input) or input (from 13);
// without them the axis is cut into equal parts, one per output (from
// opset 18, num_outputs parts of ceil(n/num_outputs), the last smaller).
func opSplit(c *nodeCtx) ([]*autograd.Var, error) {
	splitInput := c.Opset() >= 13 || c.Opset() == 1
	decl := []string{"input", "split?"}
	if !splitInput {
		decl = decl[:1] // split is an attribute
	}
	in, err := c.inputs(decl...)
	if err != nil {
		return nil, err
	}
	x := in[0]
	shape := x.Shape()
	axisAttr := c.AttrInt("axis", 0)
	if axisAttr < 0 && c.Opset() < 11 {
		return nil, c.Errorf("attribute axis %d: negative axes need opset 11, the model has opset %d", axisAttr, c.Opset())
	}
	axis, err := c.normAxis("attribute axis", axisAttr, len(shape))
	if err != nil {
		return nil, err
	}
	n := shape[axis]
	var split []int64
	given := false
	switch {
	case splitInput:
		if split, given, err = shOptInts(c, in[1], "split"); err != nil {
			return nil, err
		}
		if !given && c.Opset() == 1 && c.HasAttr("split") {
			split, given = c.AttrInts("split", nil), true
		}
	case c.HasAttr("split"):
		split, given = c.AttrInts("split", nil), true
	}
	outs := c.NumOutputs()
	var sizes []int
	switch {
	case given:
		if len(split) != outs {
			return nil, c.Errorf("split %v has %d entries, the node has %d outputs", split, len(split), outs)
		}
		total := int64(0)
		for _, s := range split {
			if s < 0 {
				return nil, c.Errorf("split %v has the negative size %d", split, s)
			}
			total += s
		}
		if total != int64(n) {
			return nil, c.Errorf("split %v adds up to %d, axis %d of input %v has length %d", split, total, axis, shape, n)
		}
		sizes = shToInts(split)
	case c.Opset() >= 18:
		k := c.AttrInt("num_outputs", 0)
		if !c.HasAttr("num_outputs") || k < 1 {
			return nil, c.Errorf("neither input split nor a positive attribute num_outputs is given (found num_outputs %d)", k)
		}
		if k != int64(outs) {
			return nil, c.Errorf("attribute num_outputs %d but the node has %d outputs", k, outs)
		}
		chunk := (n + int(k) - 1) / int(k)
		sizes = make([]int, k)
		left := n
		for i := range sizes {
			sizes[i] = min(chunk, left)
			left -= sizes[i]
		}
	default:
		if outs < 1 || n%outs != 0 {
			return nil, c.Errorf("axis %d of input %v (length %d) cannot be split into %d equal parts", axis, shape, n, outs)
		}
		sizes = make([]int, outs)
		for i := range sizes {
			sizes[i] = n / outs
		}
	}
	return autograd.Split(x, axis, sizes...), nil
}

// shSliceRange resolves one axis of a Slice: start, end and step against
// the dimension d with the spec's clamping rules; it returns the clamped
// start and the number of elements taken.
func shSliceRange(start, end, step int64, d int) (int64, int) {
	dd := int64(d)
	// A step longer than the axis takes at most one element; bounding it
	// keeps the arithmetic below from overflowing.
	step = clampIndex(step, -dd-1, dd+1)
	if start < 0 {
		start += dd
	}
	if end < 0 {
		end += dd
	}
	var n int64
	if step > 0 {
		start = clampIndex(start, 0, dd)
		end = clampIndex(end, 0, dd)
		if end > start {
			n = (end - start + step - 1) / step
		}
	} else {
		start = clampIndex(start, 0, dd-1)
		end = clampIndex(end, -1, dd-1)
		if start > end {
			n = (start - end + (-step) - 1) / (-step)
		}
	}
	return start, int(n)
}

// opSlice implements Slice: starts, ends and axes are attributes before
// opset 10, inputs (with steps) from 10. Step 1 is a view; other steps
// select indices.
func opSlice(c *nodeCtx) ([]*autograd.Var, error) {
	decl := []string{"data", "starts", "ends", "axes?", "steps?"}
	if c.Opset() < 10 {
		decl = decl[:1] // starts, ends and axes are attributes
	}
	in, err := c.inputs(decl...)
	if err != nil {
		return nil, err
	}
	x := in[0]
	shape := x.Shape()
	var starts, ends, axes, steps []int64
	axesGiven, stepsGiven := false, false
	if c.Opset() < 10 {
		if !c.HasAttr("starts") || !c.HasAttr("ends") {
			return nil, c.Errorf("attributes starts and ends are required")
		}
		starts, ends = c.AttrInts("starts", nil), c.AttrInts("ends", nil)
		axes, axesGiven = c.AttrInts("axes", nil), c.HasAttr("axes")
	} else {
		if starts, err = shInts(c, in[1], "starts"); err != nil {
			return nil, err
		}
		if ends, err = shInts(c, in[2], "ends"); err != nil {
			return nil, err
		}
		if axes, axesGiven, err = shOptInts(c, in[3], "axes"); err != nil {
			return nil, err
		}
		if steps, stepsGiven, err = shOptInts(c, in[4], "steps"); err != nil {
			return nil, err
		}
	}
	if len(starts) != len(ends) {
		return nil, c.Errorf("starts %v and ends %v differ in length", starts, ends)
	}
	if !axesGiven {
		axes = make([]int64, len(starts))
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	if len(axes) != len(starts) {
		return nil, c.Errorf("axes %v and starts %v differ in length", axes, starts)
	}
	if !stepsGiven {
		steps = make([]int64, len(starts))
		for i := range steps {
			steps[i] = 1
		}
	}
	if len(steps) != len(starts) {
		return nil, c.Errorf("steps %v and starts %v differ in length", steps, starts)
	}
	norm, err := shNormAxes(c, "axes", axes, len(shape), c.Opset() >= 10)
	if err != nil {
		return nil, err
	}
	out := x
	for i, a := range norm {
		if steps[i] == 0 {
			return nil, c.Errorf("steps %v: step %d is 0", steps, i)
		}
		start, n := shSliceRange(starts[i], ends[i], steps[i], shape[a])
		switch {
		case n == shape[a] && steps[i] > 0: // the whole axis
		case n == 0:
			out = autograd.Slice(out, a, 0, 0)
		case steps[i] == 1:
			out = autograd.Slice(out, a, int(start), int(start)+n)
		default:
			idx := make([]int64, n)
			for j := range idx {
				idx[j] = start + int64(j)*steps[i]
			}
			out = autograd.IndexSelect(out, a, c.ConstInts(idx).Value)
		}
	}
	return []*autograd.Var{out}, nil
}

// shIndices reads an index input to the host, checks every index
// against the axis length n and returns it on the graph's device with
// negative indices made positive (the input itself when none was).
func shIndices(c *nodeCtx, v *autograd.Var, n int, what string) (*tensor.Tensor, error) {
	if v.Value.DType() != device.Int64 {
		return nil, c.Errorf("input indices must be an integer tensor, found %v", v.Value.DType())
	}
	idx := c.Ints(v)
	fixed := false
	for i, j := range idx {
		if j < -int64(n) || j >= int64(n) {
			return nil, c.Errorf("indices[%d] = %d is out of range for %s of length %d (expected %d..%d)", i, j, what, n, -n, n-1)
		}
		if j < 0 {
			idx[i] += int64(n)
			fixed = true
		}
	}
	if !fixed {
		return v.Value, nil
	}
	return c.Const(tensor.FromInt64(idx, v.Shape()...)).Value, nil
}

// opGather implements Gather: the output is data's shape with the axis
// replaced by the indices' shape (a scalar index removes it).
func opGather(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("data", "indices")
	if err != nil {
		return nil, err
	}
	x := in[0]
	shape := x.Shape()
	if len(shape) == 0 {
		return nil, c.Errorf("input data is a scalar; Gather needs rank ≥ 1")
	}
	axisAttr := c.AttrInt("axis", 0)
	if axisAttr < 0 && c.Opset() < 11 {
		return nil, c.Errorf("attribute axis %d: negative axes need opset 11, the model has opset %d", axisAttr, c.Opset())
	}
	axis, err := c.normAxis("attribute axis", axisAttr, len(shape))
	if err != nil {
		return nil, err
	}
	idx, err := shIndices(c, in[1], shape[axis], fmt.Sprintf("axis %d of data %v", axis, shape))
	if err != nil {
		return nil, err
	}
	outShape := slices.Concat(shape[:axis], idx.Shape(), shape[axis+1:])
	flat := idx
	if idx.Rank() != 1 {
		flat = idx.Reshape(idx.Len())
	}
	out := autograd.IndexSelect(x, axis, flat)
	return []*autograd.Var{shReshape(out, outShape)}, nil
}

// opGatherElements implements GatherElements (torch.gather): the output
// has the indices' shape, which may be smaller than data's off the axis.
func opGatherElements(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("data", "indices")
	if err != nil {
		return nil, err
	}
	x := in[0]
	shape := x.Shape()
	ishape := in[1].Shape()
	if len(shape) == 0 {
		return nil, c.Errorf("input data is a scalar; GatherElements needs rank ≥ 1")
	}
	if len(ishape) != len(shape) {
		return nil, c.Errorf("input indices has shape %v, expected rank %d like data %v", ishape, len(shape), shape)
	}
	axis, err := c.normAxis("attribute axis", c.AttrInt("axis", 0), len(shape))
	if err != nil {
		return nil, err
	}
	for i := range shape {
		if i != axis && ishape[i] > shape[i] {
			return nil, c.Errorf("input indices has shape %v, larger than data %v along axis %d", ishape, shape, i)
		}
	}
	idx, err := shIndices(c, in[1], shape[axis], fmt.Sprintf("axis %d of data %v", axis, shape))
	if err != nil {
		return nil, err
	}
	for i := range shape {
		if i != axis && ishape[i] < shape[i] {
			x = autograd.Slice(x, i, 0, ishape[i])
		}
	}
	return []*autograd.Var{autograd.Gather(x, axis, idx)}, nil
}

// opShape implements Shape, with the start and end attributes of opset 15
// (clamped into [0, rank]).
func opShape(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("data")
	if err != nil {
		return nil, err
	}
	shape := x.Shape()
	r := int64(len(shape))
	start, end := int64(0), r
	if c.Opset() >= 15 {
		start, end = c.AttrInt("start", 0), c.AttrInt("end", r)
		if start < 0 {
			start += r
		}
		if end < 0 {
			end += r
		}
		start, end = clampIndex(start, 0, r), clampIndex(end, 0, r)
		end = max(start, end)
	}
	dims := make([]int64, end-start)
	for i := range dims {
		dims[i] = int64(shape[start+int64(i)])
	}
	return []*autograd.Var{c.ConstInts(dims)}, nil
}

// opSize implements Size: the number of elements as an int64 scalar.
func opSize(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("data")
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{c.Const(tensor.FromInt64([]int64{int64(x.Value.Len())}))}, nil
}

// opConstant implements Constant: exactly one of value, value_float,
// value_floats, value_int and value_ints (the last four from opset 12).
func opConstant(c *nodeCtx) ([]*autograd.Var, error) {
	if _, err := c.inputs(); err != nil {
		return nil, err
	}
	var set []string
	for _, name := range []string{"value", "sparse_value", "value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings"} {
		if c.HasAttr(name) {
			set = append(set, name)
		}
	}
	if len(set) != 1 {
		return nil, c.Errorf("exactly one value attribute must be set, found %v", set)
	}
	var t *tensor.Tensor
	switch set[0] {
	case "value":
		var err error
		if t, err = c.AttrTensor("value"); err != nil {
			return nil, err
		}
	case "value_float":
		t = tensor.FromFloat32([]float32{float32(c.AttrFloat("value_float", 0))})
	case "value_floats":
		f := c.AttrFloats("value_floats", nil)
		v := make([]float32, len(f))
		for i, x := range f {
			v[i] = float32(x)
		}
		t = tensor.FromFloat32(v, len(v))
	case "value_int":
		t = tensor.FromInt64([]int64{c.AttrInt("value_int", 0)})
	case "value_ints":
		v := c.AttrInts("value_ints", nil)
		t = tensor.FromInt64(v, len(v))
	case "sparse_value":
		return nil, c.Unsupported("attribute sparse_value (sparse tensors)")
	default:
		return nil, c.Unsupported("attribute %s (string tensors)", set[0])
	}
	return []*autograd.Var{c.Const(t)}, nil
}

// opConstantOfShape implements ConstantOfShape: a tensor of the input
// shape filled with the one-element value attribute (float 0 by default).
func opConstantOfShape(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("input")
	if err != nil {
		return nil, err
	}
	dims, err := shInts(c, x, "input (the shape)")
	if err != nil {
		return nil, err
	}
	for _, d := range dims {
		if d < 0 || d > math.MaxInt32 {
			return nil, c.Errorf("input shape %v has the bad dimension %d", dims, d)
		}
	}
	shape := shToInts(dims)
	if err := c.checkElements(shape); err != nil {
		return nil, err
	}
	dt, v := device.Float32, 0.0
	var iv int64
	if c.HasAttr("value") {
		t, err := c.AttrTensor("value")
		if err != nil {
			return nil, err
		}
		if t.Len() != 1 {
			return nil, c.Errorf("attribute value must hold one element, found shape %v", t.Shape())
		}
		dt = t.DType()
		if dt == device.Int64 {
			iv = t.Int64s()[0]
			v = float64(iv)
		} else {
			v = t.Values()[0]
		}
	}
	if dt == device.Int64 && int64(v) != iv {
		// Not exact in float64: fill on the host.
		vals := make([]int64, device.NumElements(shape))
		for i := range vals {
			vals[i] = iv
		}
		return []*autograd.Var{c.Const(tensor.FromInt64(vals, shape...))}, nil
	}
	return []*autograd.Var{autograd.Constant(tensor.Full(c.Device(), dt, v, shape...))}, nil
}

// opExpand implements Expand: x broadcasts with the shape input in both
// directions (NumPy rules). The result is a view.
func opExpand(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("input", "shape")
	if err != nil {
		return nil, err
	}
	dims, err := shInts(c, in[1], "shape")
	if err != nil {
		return nil, err
	}
	for _, d := range dims {
		if d < 0 || d > math.MaxInt32 {
			return nil, c.Errorf("input shape %v has the bad dimension %d", dims, d)
		}
	}
	x := in[0]
	out, ok := tensor.BroadcastShapes(x.Shape(), shToInts(dims))
	if !ok {
		return nil, c.Errorf("input %v does not broadcast with shape %v", x.Shape(), dims)
	}
	if slices.Equal(out, x.Shape()) {
		return []*autograd.Var{x}, nil
	}
	if err := c.checkElements(out); err != nil {
		return nil, err
	}
	return []*autograd.Var{autograd.Expand(x, out...)}, nil
}

// shTile repeats x reps[i] times along each axis i: x is viewed with a
// length-1 axis before each of its axes, expanded to the repeats and
// reshaped, so there is one copy and the gradient sums the repeats.
func shTile(x *autograd.Var, reps []int) *autograd.Var {
	shape := x.Shape()
	var inter, expanded, out []int
	for i, d := range shape {
		inter = append(inter, 1, d)
		expanded = append(expanded, reps[i], d)
		out = append(out, reps[i]*d)
	}
	if slices.Equal(out, shape) {
		return x
	}
	return autograd.Reshape(autograd.Expand(shReshape(x, inter), expanded...), out...)
}

// opTile implements Tile (opset 6): the repeats input has one
// non-negative entry per axis.
func opTile(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("input", "repeats")
	if err != nil {
		return nil, err
	}
	reps, err := shInts(c, in[1], "repeats")
	if err != nil {
		return nil, err
	}
	x := in[0]
	if len(reps) != x.Value.Rank() {
		return nil, c.Errorf("input repeats %v has %d entries, the input %v has rank %d", reps, len(reps), x.Shape(), x.Value.Rank())
	}
	for _, r := range reps {
		if r < 0 || r > math.MaxInt32 {
			return nil, c.Errorf("input repeats %v has the bad entry %d", reps, r)
		}
	}
	tiled := x.Shape()
	for i, r := range reps {
		tiled[i] *= int(r)
	}
	if err := c.checkElements(tiled); err != nil {
		return nil, err
	}
	return []*autograd.Var{shTile(x, shToInts(reps))}, nil
}

// opTile1 implements Tile of opset 1: the scalar inputs tiles and axis
// repeat the input along one axis.
func opTile1(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("input", "tiles", "axis")
	if err != nil {
		return nil, err
	}
	x := in[0]
	tiles, err := shInts(c, in[1], "tiles")
	if err != nil {
		return nil, err
	}
	axes, err := shInts(c, in[2], "axis")
	if err != nil {
		return nil, err
	}
	if len(tiles) != 1 || len(axes) != 1 {
		return nil, c.Errorf("inputs tiles %v and axis %v must hold one value each", tiles, axes)
	}
	axis, err := c.normAxis("input axis", axes[0], x.Value.Rank())
	if err != nil {
		return nil, err
	}
	if tiles[0] < 0 || tiles[0] > math.MaxInt32 {
		return nil, c.Errorf("input tiles %d is out of range", tiles[0])
	}
	reps := make([]int, x.Value.Rank())
	for i := range reps {
		reps[i] = 1
	}
	reps[axis] = int(tiles[0])
	tiled := x.Shape()
	tiled[axis] *= reps[axis]
	if err := c.checkElements(tiled); err != nil {
		return nil, err
	}
	return []*autograd.Var{shTile(x, reps)}, nil
}

// shBlockInput reads and checks the 4-D input and the blocksize
// attribute of DepthToSpace and SpaceToDepth.
func shBlockInput(c *nodeCtx) (*autograd.Var, []int, int, error) {
	x, err := c.input("input")
	if err != nil {
		return nil, nil, 0, err
	}
	s := x.Shape()
	if len(s) != 4 {
		return nil, nil, 0, c.Errorf("input has shape %v, expected 4-D N×C×H×W", s)
	}
	if !c.HasAttr("blocksize") {
		return nil, nil, 0, c.Errorf("attribute blocksize is missing")
	}
	b := c.AttrInt("blocksize", 0)
	if b < 1 || b > math.MaxInt32 {
		return nil, nil, 0, c.Errorf("attribute blocksize %d must be positive", b)
	}
	return x, s, int(b), nil
}

// opDepthToSpace implements DepthToSpace in DCR (default) and CRD modes.
func opDepthToSpace(c *nodeCtx) ([]*autograd.Var, error) {
	x, s, b, err := shBlockInput(c)
	if err != nil {
		return nil, err
	}
	n, ch, h, w := s[0], s[1], s[2], s[3]
	if ch%(b*b) != 0 {
		return nil, c.Errorf("input %v: channels %d are not a multiple of blocksize² = %d", s, ch, b*b)
	}
	mode := "DCR"
	if c.Opset() >= 11 {
		mode = c.AttrString("mode", "DCR")
	}
	var y *autograd.Var
	switch mode {
	case "DCR":
		y = autograd.Permute(autograd.Reshape(x, n, b, b, ch/(b*b), h, w), 0, 3, 4, 1, 5, 2)
	case "CRD":
		y = autograd.Permute(autograd.Reshape(x, n, ch/(b*b), b, b, h, w), 0, 1, 4, 2, 5, 3)
	default:
		return nil, c.Errorf("attribute mode %q, expected DCR or CRD", mode)
	}
	return []*autograd.Var{autograd.Reshape(y, n, ch/(b*b), h*b, w*b)}, nil
}

// opSpaceToDepth implements SpaceToDepth.
func opSpaceToDepth(c *nodeCtx) ([]*autograd.Var, error) {
	x, s, b, err := shBlockInput(c)
	if err != nil {
		return nil, err
	}
	n, ch, h, w := s[0], s[1], s[2], s[3]
	if h%b != 0 || w%b != 0 {
		return nil, c.Errorf("input %v: height and width are not multiples of blocksize %d", s, b)
	}
	y := autograd.Permute(autograd.Reshape(x, n, ch, h/b, b, w/b, b), 0, 3, 5, 1, 2, 4)
	return []*autograd.Var{autograd.Reshape(y, n, ch*b*b, h/b, w/b)}, nil
}
