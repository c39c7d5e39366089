package onnx

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Index and search operators (ArgMax, ArgMin, TopK, OneHot, Range) and
// Einsum. Their integer outputs carry no gradient; TopK's values, OneHot's
// values and Einsum's operands are differentiable.

func init() {
	register("ArgMax", 1, false, argOp(false))
	register("ArgMin", 1, false, argOp(true))
	register("TopK", 1, true, topKOp)
	register("TopK", 10, true, topKOp)
	register("OneHot", 9, true, oneHotOp)
	register("Range", 11, false, rangeOp)
	register("Einsum", 12, true, einsumOp)
}

// rdReverseIndex returns n-1, ..., 1, 0 as an Int64 tensor on dev.
func rdReverseIndex(dev device.Device, n int) *tensor.Tensor {
	idx := make([]int64, n)
	for i := range idx {
		idx[i] = int64(n - 1 - i)
	}
	return tensor.FromInt64(idx, n).To(dev)
}

// argOp returns ArgMax (or ArgMin with min): the int64 position of the
// first (or, with select_last_index, the last) extremum along axis.
func argOp(min bool) opFunc {
	return func(c *nodeCtx) ([]*autograd.Var, error) {
		data, err := c.input("data")
		if err != nil {
			return nil, err
		}
		x := data.Value
		rank := x.Rank()
		if rank == 0 {
			return nil, c.Errorf("input data must have rank at least 1, found a scalar")
		}
		axis, err := c.normAxis("axis", c.AttrInt("axis", 0), rank)
		if err != nil {
			return nil, err
		}
		keep := c.AttrInt("keepdims", 1) != 0
		last := c.AttrInt("select_last_index", 0) != 0
		n := x.Dim(axis)
		if n == 0 {
			return nil, c.Errorf("axis %d of input data %v is empty", axis, x.Shape())
		}
		if !x.DType().IsFloat() {
			x = x.Cast(device.Float64)
		}
		if min {
			x = x.Neg()
		}
		if last {
			x = x.IndexSelect(axis, rdReverseIndex(x.Device(), n))
		}
		r := x.ArgMax(axis, keep)
		if last {
			r = r.Cast(device.Float64).MulScalar(-1).AddScalar(float64(n - 1)).Cast(device.Int64)
		}
		return []*autograd.Var{c.Const(r)}, nil
	}
}

// topKOp is TopK: the k largest (or smallest) elements along axis and
// their int64 positions, sorted, ties going to the lower index. K is the
// attribute k before opset 10 and the second input from then on. The
// positions are found on the host (on the device for k = 1); the values
// are gathered from the input, so gradients flow to it.
func topKOp(c *nodeCtx) ([]*autograd.Var, error) {
	decl := []string{"X", "K"}
	if c.Opset() < 10 {
		decl = decl[:1] // k is an attribute
	}
	in, err := c.inputs(decl...)
	if err != nil {
		return nil, err
	}
	x := in[0]
	var k int64
	if c.Opset() < 10 {
		if !c.HasAttr("k") {
			return nil, c.Errorf("missing required attribute k")
		}
		k = c.AttrInt("k", 0)
	} else {
		kIn := in[1]
		if kIn.Value.Len() != 1 || kIn.Value.Rank() > 1 {
			return nil, c.Errorf("input K must hold one value, found shape %v", kIn.Shape())
		}
		if kIn.Value.DType() != device.Int64 {
			return nil, c.Errorf("input K must be int64, found %v", kIn.Value.DType())
		}
		k = c.Ints(kIn)[0]
	}
	shape := x.Shape()
	rank := len(shape)
	if rank == 0 {
		return nil, c.Errorf("input X must have rank at least 1, found a scalar")
	}
	axis, err := c.normAxis("axis", c.AttrInt("axis", -1), rank)
	if err != nil {
		return nil, err
	}
	n := shape[axis]
	if k < 0 || k > int64(n) {
		return nil, c.Errorf("K = %d is out of range [0, %d] for axis %d of input X %v", k, n, axis, shape)
	}
	largest := c.AttrInt("largest", 1) != 0
	outShape := append([]int(nil), shape...)
	outShape[axis] = int(k)
	var idx *tensor.Tensor
	switch {
	case device.NumElements(outShape) == 0:
		idx = tensor.New(c.dev, device.Int64, outShape...)
	case k == 1:
		v := x.Value
		if !v.DType().IsFloat() {
			v = v.Cast(device.Float64)
		}
		if !largest {
			v = v.Neg()
		}
		idx = v.ArgMax(axis, true)
	default:
		idx = tensor.FromInt64(rdTopKHost(x.Value, axis, int(k), largest), outShape...).To(c.dev)
	}
	var vals *autograd.Var
	if device.NumElements(outShape) == 0 {
		vals = c.Const(tensor.New(c.dev, x.Value.DType(), outShape...))
	} else {
		vals = autograd.Gather(x, axis, idx)
	}
	return []*autograd.Var{vals, c.Const(idx)}, nil
}

// rdTopKHost returns the positions of the k largest (or smallest) values
// of x along axis, laid out like x with axis cut to k. NaN counts as
// larger than every number.
func rdTopKHost(x *tensor.Tensor, axis, k int, largest bool) []int64 {
	shape := x.Shape()
	outer := device.NumElements(shape[:axis])
	n := shape[axis]
	inner := device.NumElements(shape[axis+1:])
	var vals []float64
	var ints []int64
	if x.DType() == device.Int64 {
		ints = x.To(tensor.CPU()).Int64s()
	} else {
		vals = x.Values()
	}
	less := func(a, b int) bool { // a comes before b
		if ints != nil {
			if largest {
				return ints[a] > ints[b]
			}
			return ints[a] < ints[b]
		}
		va, vb := vals[a], vals[b]
		na, nb := math.IsNaN(va), math.IsNaN(vb)
		if na != nb {
			return na == largest
		}
		if largest {
			return va > vb
		}
		return va < vb
	}
	out := make([]int64, outer*k*inner)
	order := make([]int, n)
	pos := make([]int, n)
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			for t := range order {
				order[t] = t
				pos[t] = (o*n+t)*inner + i
			}
			sort.SliceStable(order, func(a, b int) bool { return less(pos[order[a]], pos[order[b]]) })
			for t := 0; t < k; t++ {
				out[(o*k+t)*inner+i] = int64(order[t])
			}
		}
	}
	return out
}

// oneHotOp is OneHot: values[1] where the index (made non-negative by
// adding depth) equals the position along the new axis, values[0]
// elsewhere. Gradients flow to values.
func oneHotOp(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("indices", "depth", "values")
	if err != nil {
		return nil, err
	}
	indices, depthIn, values := in[0].Value, in[1], in[2]
	if depthIn.Value.Len() != 1 || depthIn.Value.Rank() > 1 {
		return nil, c.Errorf("input depth must hold one value, found shape %v", depthIn.Shape())
	}
	depthF := c.Floats(depthIn)[0]
	if math.IsNaN(depthF) || depthF < 1 || depthF > maxElements {
		return nil, c.Errorf("input depth must be a positive integer, found %v", depthF)
	}
	depth := int(depthF)
	if err := c.checkElements(append(indices.Shape(), depth)); err != nil {
		return nil, err
	}
	if values.Value.Len() != 2 || values.Value.Rank() != 1 {
		return nil, c.Errorf("input values must have shape [2] (off, on), found %v", values.Shape())
	}
	rank := indices.Rank() + 1
	axis, err := c.normAxis("axis", c.AttrInt("axis", -1), rank)
	if err != nil {
		return nil, err
	}
	// Indices as integral float64 values, negative ones shifted by depth.
	idx := indices
	if idx.DType() == device.Int64 {
		idx = idx.Cast(device.Float64)
	} else {
		idx = idx.Cast(device.Int64).Cast(device.Float64)
	}
	zero := tensor.Full(idx.Device(), device.Float64, 0)
	idx = idx.Add(idx.Lt(zero).MulScalar(float64(depth)))
	mask := idx.Unsqueeze(axis).Eq(rdArange(idx.Device(), device.Float64, depth, axis, rank))
	vf, isInt := rdAsFloat(values)
	dt := vf.Value.DType()
	off := autograd.Reshape(autograd.Slice(vf, 0, 0, 1))
	on := autograd.Reshape(autograd.Slice(vf, 0, 1, 2))
	if isInt {
		// Exact for the small integers one-hot values usually are.
		y := mask.Mul(on.Value.Sub(off.Value)).Add(off.Value)
		return []*autograd.Var{c.Const(y.Cast(device.Int64))}, nil
	}
	return []*autograd.Var{autograd.Where(mask.Cast(dt), on, off)}, nil
}

// rangeOp is Range: start, start+delta, ... up to (excluding) limit, of
// the inputs' type. The three inputs are scalars, read on the host.
func rangeOp(c *nodeCtx) ([]*autograd.Var, error) {
	names := []string{"start", "limit", "delta"}
	in, err := c.inputs(names...)
	if err != nil {
		return nil, err
	}
	for i, name := range names {
		if in[i].Value.Len() != 1 || in[i].Value.Rank() > 1 {
			return nil, c.Errorf("input %s must be a scalar, found shape %v", name, in[i].Shape())
		}
		if in[i].Value.DType() != in[0].Value.DType() {
			return nil, c.Errorf("input %s is %v but start is %v", name, in[i].Value.DType(), in[0].Value.DType())
		}
	}
	dt := in[0].Value.DType()
	if dt == device.Int64 {
		start, limit, delta := c.Ints(in[0])[0], c.Ints(in[1])[0], c.Ints(in[2])[0]
		if delta == 0 {
			return nil, c.Errorf("input delta is 0")
		}
		n := int64(0)
		if d := limit - start; (d > 0) == (delta > 0) && d != 0 {
			// ceil(d / delta) for d and delta of one sign.
			n = (d + delta - sign64(delta)) / delta
		}
		if n > int64(maxOutputElements) {
			return nil, c.Errorf("Range(%d, %d, %d) has %d elements, too many", start, limit, delta, n)
		}
		out := make([]int64, n)
		for i := range out {
			out[i] = start + int64(i)*delta
		}
		return []*autograd.Var{c.ConstInts(out, int(n))}, nil
	}
	start, limit, delta := c.Floats(in[0])[0], c.Floats(in[1])[0], c.Floats(in[2])[0]
	if delta == 0 || math.IsNaN(delta) {
		return nil, c.Errorf("input delta is %v", delta)
	}
	nf := math.Max(math.Ceil((limit-start)/delta), 0)
	if math.IsNaN(nf) || nf > float64(maxOutputElements) {
		return nil, c.Errorf("Range(%v, %v, %v) has too many elements", start, limit, delta)
	}
	n := int(nf)
	out := make([]float64, n)
	for i := range out {
		out[i] = start + float64(i)*delta
	}
	if dt == device.Float32 {
		// Accumulate like the reference (in float32).
		s, d := float32(start), float32(delta)
		for i := range out {
			out[i] = float64(s + float32(i)*d)
		}
	}
	return []*autograd.Var{c.Const(tensor.FromFloat64(out, n).Cast(dt))}, nil
}

// sign64 returns -1, 0 or 1.
func sign64(v int64) int64 {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// esEllipsis is the first label standing for an axis of an ellipsis.
const esEllipsis = rune(0x10000)

// esOperand is an einsum operand: its value and one label per axis.
type esOperand struct {
	v      *autograd.Var
	labels []rune
}

// einsumOp is Einsum. The equation's terms (with "..." broadcasting and
// the implicit output form) are evaluated as diagonals (repeated labels in
// one term), sums over labels used once, and pairwise contractions made
// of permutations, reshapes and batched matrix products, left to right.
func einsumOp(c *nodeCtx) ([]*autograd.Var, error) {
	if !c.HasAttr("equation") {
		return nil, c.Errorf("missing required attribute equation")
	}
	eq := c.AttrString("equation", "")
	in, err := c.inputs("Inputs...")
	if err != nil {
		return nil, fmt.Errorf("equation %q: %w", eq, err)
	}
	isInt := false
	ops := make([]*esOperand, len(in))
	for i, v := range in {
		if i > 0 && v.Value.DType() != in[0].Value.DType() {
			return nil, c.Errorf("equation %q: input %d is %v but input 0 is %v", eq, i, v.Value.DType(), in[0].Value.DType())
		}
		f, ii := rdAsFloat(v)
		isInt = ii
		ops[i] = &esOperand{v: f}
	}
	out, err := esParse(c, eq, ops)
	if err != nil {
		return nil, err
	}
	// The length of every label, with 1 broadcasting.
	size := map[rune]int{}
	for i, op := range ops {
		for a, l := range op.labels {
			d := op.v.Value.Dim(a)
			if s, ok := size[l]; ok && s != d && s != 1 && d != 1 {
				return nil, c.Errorf("equation %q: label %s has length %d in input %d but %d elsewhere", eq, esName(l), d, i, s)
			}
			if s, ok := size[l]; !ok || s == 1 {
				size[l] = d
			}
		}
	}
	for i, op := range ops {
		if err := esDiagonals(c, eq, i, op); err != nil {
			return nil, err
		}
	}
	// needed(from) tells whether a label is in the output or in an
	// operand from index from on.
	needed := func(l rune, from int) bool {
		if slices.Contains(out, l) {
			return true
		}
		for _, op := range ops[from:] {
			if slices.Contains(op.labels, l) {
				return true
			}
		}
		return false
	}
	acc := ops[0]
	esSumUnneeded(acc, func(l rune) bool { return needed(l, 1) })
	for i := 1; i < len(ops); i++ {
		b := ops[i]
		keep := func(l rune) bool { return needed(l, i+1) }
		esSumUnneeded(acc, func(l rune) bool { return keep(l) || slices.Contains(b.labels, l) })
		esSumUnneeded(b, func(l rune) bool { return keep(l) || slices.Contains(acc.labels, l) })
		acc = esContract(acc, b, keep)
	}
	// Broadcast labels of length 1 the output needs longer.
	perm := make([]int, len(out))
	for i, l := range out {
		perm[i] = slices.Index(acc.labels, l)
	}
	y := acc.v
	if !rdIsIdentity(perm) {
		y = autograd.Permute(y, perm...)
	}
	shape := make([]int, len(out))
	for i, l := range out {
		shape[i] = size[l]
	}
	if !slices.Equal(y.Shape(), shape) {
		y = autograd.Expand(y, shape...)
	}
	return []*autograd.Var{rdBackToInt(y, isInt)}, nil
}

// esName formats a label for error messages.
func esName(l rune) string {
	if l >= esEllipsis {
		return "..."
	}
	return string(l)
}

// esParse reads the equation, sets each operand's labels (ellipsis axes
// get labels from esEllipsis on, right-aligned across operands) and
// returns the output labels.
func esParse(c *nodeCtx, eq string, ops []*esOperand) ([]rune, error) {
	e := strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' {
			return -1
		}
		return r
	}, eq)
	lhs, rhs, explicit := strings.Cut(e, "->")
	terms := strings.Split(lhs, ",")
	if len(terms) != len(ops) {
		return nil, c.Errorf("equation %q has %d input terms for %d inputs", eq, len(terms), len(ops))
	}
	// split returns a term's letters before and after its ellipsis.
	split := func(t string) (before, after []rune, ell bool, err error) {
		b, a, ell := strings.Cut(t, "...")
		if strings.Contains(a, "...") {
			return nil, nil, false, c.Errorf("equation %q: term %q has two ellipses", eq, t)
		}
		for _, s := range []string{b, a} {
			for _, r := range s {
				if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
					return nil, nil, false, c.Errorf("equation %q: term %q holds %q, expected letters and ...", eq, t, r)
				}
			}
		}
		return []rune(b), []rune(a), ell, nil
	}
	maxEll := 0
	count := map[rune]int{}
	for i, t := range terms {
		before, after, ell, err := split(t)
		if err != nil {
			return nil, err
		}
		rank := ops[i].v.Value.Rank()
		nEll := rank - len(before) - len(after)
		if nEll < 0 || (!ell && nEll != 0) {
			return nil, c.Errorf("equation %q: term %q does not fit input %d of shape %v", eq, t, i, ops[i].v.Shape())
		}
		maxEll = max(maxEll, nEll)
		labels := append([]rune(nil), before...)
		for k := 0; k < nEll; k++ {
			labels = append(labels, -1-rune(nEll-k)) // fixed below, once maxEll is known
		}
		labels = append(labels, after...)
		ops[i].labels = labels
		for _, l := range before {
			count[l]++
		}
		for _, l := range after {
			count[l]++
		}
	}
	for _, op := range ops {
		for a, l := range op.labels {
			if l < 0 { // -1-j: the j-th ellipsis axis counted from the right
				op.labels[a] = esEllipsis + rune(maxEll) + l + 1
			}
		}
	}
	var out []rune
	if explicit {
		before, after, ell, err := split(rhs)
		if err != nil {
			return nil, err
		}
		out = append(out, before...)
		if ell {
			for k := 0; k < maxEll; k++ {
				out = append(out, esEllipsis+rune(k))
			}
		}
		out = append(out, after...)
		seen := map[rune]bool{}
		for _, l := range out {
			if seen[l] {
				return nil, c.Errorf("equation %q: output repeats label %s", eq, esName(l))
			}
			seen[l] = true
			if l < esEllipsis && count[l] == 0 {
				return nil, c.Errorf("equation %q: output label %s is in no input", eq, esName(l))
			}
		}
	} else {
		for k := 0; k < maxEll; k++ {
			out = append(out, esEllipsis+rune(k))
		}
		var once []rune
		for l, n := range count {
			if n == 1 {
				once = append(once, l)
			}
		}
		slices.Sort(once)
		out = append(out, once...)
	}
	return out, nil
}

// esDiagonals replaces each label repeated in operand i's term by its
// diagonal.
func esDiagonals(c *nodeCtx, eq string, i int, op *esOperand) error {
	for {
		a, b := -1, -1
		for x := range op.labels {
			for y := x + 1; y < len(op.labels); y++ {
				if a < 0 && op.labels[x] == op.labels[y] {
					a, b = x, y
				}
			}
		}
		if a < 0 {
			return nil
		}
		shape := op.v.Shape()
		n := shape[a]
		if shape[b] != n {
			return c.Errorf("equation %q: label %s of input %d has lengths %d and %d", eq, esName(op.labels[a]), i, n, shape[b])
		}
		var perm []int
		var labels []rune
		var rest []int
		for x := range shape {
			if x != a && x != b {
				perm = append(perm, x)
				labels = append(labels, op.labels[x])
				rest = append(rest, shape[x])
			}
		}
		perm = append(perm, a, b)
		labels = append(labels, op.labels[a])
		v := op.v
		if !rdIsIdentity(perm) {
			v = autograd.Permute(v, perm...)
		}
		v = autograd.Reshape(v, append(append([]int(nil), rest...), n*n)...)
		idx := make([]int64, n)
		for k := range idx {
			idx[k] = int64(k * (n + 1))
		}
		v = autograd.IndexSelect(v, len(rest), tensor.FromInt64(idx, n).To(op.v.Value.Device()))
		op.v, op.labels = v, labels
	}
}

// esSumUnneeded sums op over the labels keep rejects.
func esSumUnneeded(op *esOperand, keep func(rune) bool) {
	var axes []int
	var labels []rune
	for a, l := range op.labels {
		if keep(l) {
			labels = append(labels, l)
		} else {
			axes = append(axes, a)
		}
	}
	if len(axes) > 0 {
		op.v = autograd.SumAxes(op.v, axes, false)
		op.labels = labels
	}
}

// esContract multiplies two operands whose every label is either shared
// or needed later: shared labels that keep accepts are batch axes, other
// shared ones are summed over, and the rest are kept.
func esContract(a, b *esOperand, keep func(rune) bool) *esOperand {
	// The length of each label here: shared ones of length 1 broadcast.
	size := map[rune]int{}
	for _, op := range []*esOperand{a, b} {
		for i, l := range op.labels {
			size[l] = max(size[l], op.v.Value.Dim(i))
		}
	}
	var batch, sum, aOnly, bOnly []rune
	for _, l := range a.labels {
		switch {
		case !slices.Contains(b.labels, l):
			aOnly = append(aOnly, l)
		case keep(l):
			batch = append(batch, l)
		default:
			sum = append(sum, l)
		}
	}
	for _, l := range b.labels {
		if !slices.Contains(a.labels, l) {
			bOnly = append(bOnly, l)
		}
	}
	dims := func(ls []rune) int {
		n := 1
		for _, l := range ls {
			n *= size[l]
		}
		return n
	}
	nb, nm, nk, nn := dims(batch), dims(aOnly), dims(sum), dims(bOnly)
	// arrange lays op out as batch, x, y (or batch, y, x transposed back
	// when that needs no copy) reshaped to [nb, len x, len y].
	arrange := func(op *esOperand, x, y []rune, nx, ny int) *autograd.Var {
		v := op.v
		// Broadcast shared labels of length 1.
		shape := v.Shape()
		full := make([]int, len(shape))
		for i, l := range op.labels {
			full[i] = shape[i]
			if slices.Contains(batch, l) || slices.Contains(sum, l) {
				full[i] = size[l]
			}
		}
		if !slices.Equal(full, shape) {
			v = autograd.Expand(v, full...)
		}
		order := func(parts ...[]rune) []int {
			var p []int
			for _, part := range parts {
				for _, l := range part {
					p = append(p, slices.Index(op.labels, l))
				}
			}
			return p
		}
		straight, swapped := order(batch, x, y), order(batch, y, x)
		if !rdIsIdentity(straight) && rdIsIdentity(swapped) && v.Value.IsContiguous() {
			return autograd.Transpose(autograd.Reshape(v, nb, ny, nx), 1, 2)
		}
		if !rdIsIdentity(straight) {
			v = autograd.Permute(v, straight...)
		}
		return autograd.Reshape(v, nb, nx, ny)
	}
	av := arrange(a, aOnly, sum, nm, nk)
	bv := arrange(b, sum, bOnly, nk, nn)
	y := autograd.MatMul(av, bv)
	var shape []int
	var labels []rune
	for _, part := range [][]rune{batch, aOnly, bOnly} {
		for _, l := range part {
			shape = append(shape, size[l])
			labels = append(labels, l)
		}
	}
	return &esOperand{v: autograd.Reshape(y, shape...), labels: labels}
}
