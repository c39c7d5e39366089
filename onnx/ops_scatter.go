package onnx

import (
	"cmp"
	"math"
	"slices"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Scatter and gather operators and the operators whose output shape
// depends on input values: ScatterElements (and its old name Scatter),
// ScatterND, GatherND, NonZero, Compress, Unique, ReverseSequence,
// MaxUnpool and BitShift.
//
// Index inputs are read on the host and turned into row positions; the
// data moves on the graph's device through IndexSelect and IndexAdd, so
// gradients flow to the float data and updates of ScatterElements,
// ScatterND, GatherND, Compress, ReverseSequence, MaxUnpool and to
// Unique's first output.

func init() {
	register("Scatter", 9, true, scScatterElementsOp)
	register("ScatterElements", 11, true, scScatterElementsOp)
	register("ScatterND", 11, true, scScatterNDOp)
	register("GatherND", 11, true, scGatherNDOp)
	register("NonZero", 9, false, scNonZeroOp)
	register("Compress", 9, true, scCompressOp)
	register("Unique", 11, true, scUniqueOp)
	register("ReverseSequence", 10, true, scReverseSequenceOp)
	register("MaxUnpool", 9, true, scMaxUnpoolOp)
	register("BitShift", 11, false, scBitShiftOp)
}

// scNormIndex maps index i (negative counts from the end) of input name
// onto [0, n), or returns an error naming the input, the position and the
// bound.
func scNormIndex(c *nodeCtx, name string, pos int, i int64, n int) (int64, error) {
	if i < -int64(n) || i >= int64(n) {
		return 0, c.Errorf("input %s: index %d at position %d is out of range [%d, %d)", name, i, pos, -n, n)
	}
	if i < 0 {
		i += int64(n)
	}
	return i, nil
}

// scProd is the number of elements of shape.
func scProd(shape []int) int { return device.NumElements(shape) }

// scReduction reads the reduction attribute of the scatter operators.
func scReduction(c *nodeCtx) (string, error) {
	r := c.AttrString("reduction", "none")
	switch r {
	case "none", "add", "mul", "max", "min":
		return r, nil
	}
	return "", c.Errorf("attribute reduction must be none, add, mul, max or min, found %q", r)
}

// scScatterRows returns data (P×inner) with the rows of upd (Q×inner)
// combined into the rows tgt names (tgt has Q entries in [0, P)):
// replaced (reduction none, the last update winning on repeats), added,
// multiplied, or combined by max or min.
func scScatterRows(c *nodeCtx, data, upd *autograd.Var, tgt []int64, red string) *autograd.Var {
	p := data.Value.Dim(0)
	dt := data.Value.DType()
	switch {
	case len(tgt) == 0:
		return data
	case red == "add":
		return autograd.IndexAdd(data, 0, c.ConstInts(tgt).Value, upd)
	case red == "none":
		src := make([]int64, p)
		for i := range src {
			src[i] = int64(i)
		}
		for q, t := range tgt {
			src[t] = int64(p + q)
		}
		return autograd.IndexSelect(autograd.Concat(0, data, upd), 0, c.ConstInts(src).Value)
	case dt == device.Int64:
		return scScatterRowsHost(c, data.Value, upd.Value, tgt, red)
	}
	// mul, max, min on floats: in rounds, each applying at most one update
	// to a row, with the operation's identity where no update lands.
	inner := data.Value.Dim(1)
	ident := 1.0
	switch red {
	case "max":
		ident = math.Inf(-1)
	case "min":
		ident = math.Inf(1)
	}
	cat := autograd.Concat(0, c.Const(tensor.Full(c.dev, dt, ident, 1, inner)), upd)
	done := make([]bool, len(tgt))
	out := data
	for left := len(tgt); left > 0; {
		src := make([]int64, p)
		for q, t := range tgt {
			if !done[q] && src[t] == 0 {
				src[t] = int64(q + 1)
				done[q] = true
				left--
			}
		}
		f := autograd.IndexSelect(cat, 0, c.ConstInts(src).Value)
		switch red {
		case "mul":
			out = autograd.Mul(out, f)
		case "max":
			out = autograd.Maximum(out, f)
		default:
			out = autograd.Minimum(out, f)
		}
	}
	return out
}

// scScatterRowsHost is scScatterRows for integer data combined by mul,
// max or min, computed on the host.
func scScatterRowsHost(c *nodeCtx, data, upd *tensor.Tensor, tgt []int64, red string) *autograd.Var {
	inner := data.Dim(1)
	out := data.To(tensor.CPU()).Int64s()
	u := upd.To(tensor.CPU()).Int64s()
	for q, t := range tgt {
		for i := 0; i < inner; i++ {
			a, b := &out[int(t)*inner+i], u[q*inner+i]
			switch red {
			case "mul":
				*a *= b
			case "max":
				*a = max(*a, b)
			default:
				*a = min(*a, b)
			}
		}
	}
	return c.ConstInts(out, data.Shape()...)
}

// scScatterElementsOp is ScatterElements (and Scatter, its name before
// opset 11): a copy of data with updates[p] written at p with p[axis]
// replaced by indices[p], or combined with it by the reduction
// (opset 16). Gradients flow to data and updates.
func scScatterElementsOp(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("data", "indices", "updates")
	if err != nil {
		return nil, err
	}
	data, updates := in[0], in[2]
	red, err := scReduction(c)
	if err != nil {
		return nil, err
	}
	ds, is := data.Shape(), in[1].Shape()
	rank := len(ds)
	if rank == 0 {
		return nil, c.Errorf("input data must have rank at least 1, found a scalar")
	}
	if len(is) != rank {
		return nil, c.Errorf("input indices must have the rank of data %v, found shape %v", ds, is)
	}
	if !slices.Equal(updates.Shape(), is) {
		return nil, c.Errorf("input updates must have the shape of indices %v, found %v", is, updates.Shape())
	}
	if updates.Value.DType() != data.Value.DType() {
		return nil, c.Errorf("input updates must have the type of data (%v), found %v", data.Value.DType(), updates.Value.DType())
	}
	axis, err := c.normAxis("axis", c.AttrInt("axis", 0), rank)
	if err != nil {
		return nil, err
	}
	for d := range is {
		if d != axis && is[d] > ds[d] {
			return nil, c.Errorf("input indices %v is larger than data %v along axis %d", is, ds, d)
		}
	}
	idx, err := c.intValues(in[1], "indices")
	if err != nil {
		return nil, err
	}
	// Flat position in data of each element of indices.
	tgt := make([]int64, len(idx))
	pos := make([]int, rank)
	dstride := make([]int, rank)
	s := 1
	for d := rank - 1; d >= 0; d-- {
		dstride[d] = s
		s *= ds[d]
	}
	for k, v := range idx {
		j, err := scNormIndex(c, "indices", k, v, ds[axis])
		if err != nil {
			return nil, err
		}
		off := 0
		for d, p := range pos {
			if d == axis {
				p = int(j)
			}
			off += p * dstride[d]
		}
		tgt[k] = int64(off)
		for d := rank - 1; d >= 0; d-- { // next position in indices
			pos[d]++
			if pos[d] < is[d] {
				break
			}
			pos[d] = 0
		}
	}
	n, m := scProd(ds), len(idx)
	out := scScatterRows(c, autograd.Reshape(data, n, 1), autograd.Reshape(updates, m, 1), tgt, red)
	return []*autograd.Var{autograd.Reshape(out, ds...)}, nil
}

// scScatterNDOp is ScatterND: a copy of data with the slices
// data[indices[i]] replaced by (or, from opset 16, combined with)
// updates[i]. indices has shape I×k; updates has shape I ++ data.shape[k:].
// Gradients flow to data and updates.
func scScatterNDOp(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("data", "indices", "updates")
	if err != nil {
		return nil, err
	}
	data, updates := in[0], in[2]
	red, err := scReduction(c)
	if err != nil {
		return nil, err
	}
	ds, is := data.Shape(), in[1].Shape()
	if len(ds) == 0 {
		return nil, c.Errorf("input data must have rank at least 1, found a scalar")
	}
	if len(is) == 0 {
		return nil, c.Errorf("input indices must have rank at least 1, found a scalar")
	}
	k := is[len(is)-1]
	if k > len(ds) {
		return nil, c.Errorf("the last dimension of input indices %v is larger than the rank of data %v", is, ds)
	}
	want := append(slices.Clone(is[:len(is)-1]), ds[k:]...)
	if !slices.Equal(updates.Shape(), want) {
		return nil, c.Errorf("input updates must have shape %v (indices %v, data %v), found %v", want, is, ds, updates.Shape())
	}
	if updates.Value.DType() != data.Value.DType() {
		return nil, c.Errorf("input updates must have the type of data (%v), found %v", data.Value.DType(), updates.Value.DType())
	}
	idx, err := c.intValues(in[1], "indices")
	if err != nil {
		return nil, err
	}
	tgt, err := scRowsND(c, "indices", idx, ds[:k], 0)
	if err != nil {
		return nil, err
	}
	p, inner, q := scProd(ds[:k]), scProd(ds[k:]), scProd(is[:len(is)-1])
	out := scScatterRows(c, autograd.Reshape(data, p, inner), autograd.Reshape(updates, q, inner), tgt, red)
	return []*autograd.Var{autograd.Reshape(out, ds...)}, nil
}

// scRowsND turns idx, tuples of len(dims) indices into a tensor of shape
// dims, into row-major row numbers, each offset by base.
func scRowsND(c *nodeCtx, name string, idx []int64, dims []int, base int64) ([]int64, error) {
	k := len(dims)
	if k == 0 {
		return nil, nil
	}
	rows := make([]int64, len(idx)/k)
	for r := range rows {
		var off int64
		for j := 0; j < k; j++ {
			v, err := scNormIndex(c, name, r*k+j, idx[r*k+j], dims[j])
			if err != nil {
				return nil, err
			}
			off = off*int64(dims[j]) + v
		}
		rows[r] = base + off
	}
	return rows, nil
}

// scGatherNDOp is GatherND: the slices of data named by the index tuples
// in the last dimension of indices, the first batch_dims dimensions
// (opset 12) being shared by both. Gradients flow to data.
func scGatherNDOp(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("data", "indices")
	if err != nil {
		return nil, err
	}
	data := in[0]
	ds, is := data.Shape(), in[1].Shape()
	b := int(c.AttrInt("batch_dims", 0))
	if len(ds) == 0 || len(is) == 0 {
		return nil, c.Errorf("inputs data %v and indices %v must have rank at least 1", ds, is)
	}
	if b < 0 || b >= len(ds) || b >= len(is) {
		return nil, c.Errorf("attribute batch_dims %d must be in [0, %d) for data %v and indices %v", b, min(len(ds), len(is)), ds, is)
	}
	if !slices.Equal(ds[:b], is[:b]) {
		return nil, c.Errorf("the first %d (batch_dims) dimensions of data %v and indices %v differ", b, ds, is)
	}
	k := is[len(is)-1]
	if b+k > len(ds) {
		return nil, c.Errorf("the last dimension of input indices %v plus batch_dims %d is larger than the rank of data %v", is, b, ds)
	}
	idx, err := c.intValues(in[1], "indices")
	if err != nil {
		return nil, err
	}
	batch, p, inner := scProd(ds[:b]), scProd(ds[b:b+k]), scProd(ds[b+k:])
	m := scProd(is[b : len(is)-1])
	rows := make([]int64, 0, batch*m)
	for bi := 0; bi < batch; bi++ {
		if k == 0 {
			for j := 0; j < m; j++ {
				rows = append(rows, int64(bi))
			}
			continue
		}
		r, err := scRowsND(c, "indices", idx[bi*m*k:(bi+1)*m*k], ds[b:b+k], int64(bi*p))
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	outShape := append(slices.Clone(is[:len(is)-1]), ds[b+k:]...)
	y := autograd.IndexSelect(autograd.Reshape(data, batch*p, inner), 0, c.ConstInts(rows).Value)
	return []*autograd.Var{autograd.Reshape(y, outShape...)}, nil
}

// scNonZeroOp is NonZero: the int64 coordinates (rank × count, row-major
// order) of the nonzero elements of X. A scalar counts as one element of
// a 1-D tensor.
func scNonZeroOp(c *nodeCtx) ([]*autograd.Var, error) {
	v, err := c.input("X")
	if err != nil {
		return nil, err
	}
	x := v.Value
	shape := x.Shape()
	if len(shape) == 0 {
		shape = []int{1}
	}
	nz := scNonZeroHost(x)
	rank := len(shape)
	out := make([]int64, rank*len(nz))
	for j, f := range nz {
		for d := rank - 1; d >= 0; d-- {
			out[d*len(nz)+j] = int64(f % shape[d])
			f /= shape[d]
		}
	}
	return []*autograd.Var{c.ConstInts(out, rank, len(nz))}, nil
}

// scNonZeroHost returns the flat positions of the nonzero elements of x
// (NaN counts as nonzero).
func scNonZeroHost(x *tensor.Tensor) []int {
	var nz []int
	if x.DType() == device.Int64 {
		for i, v := range x.To(tensor.CPU()).Int64s() {
			if v != 0 {
				nz = append(nz, i)
			}
		}
		return nz
	}
	for i, v := range x.Values() {
		if v != 0 {
			nz = append(nz, i)
		}
	}
	return nz
}

// scCompressOp is Compress: the slices of input along axis (of the
// flattened input when axis is absent) where condition is nonzero; a
// condition shorter than the axis drops the rest. Gradients flow to
// input.
func scCompressOp(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("input", "condition")
	if err != nil {
		return nil, err
	}
	x, cond := in[0], in[1].Value
	if cond.Rank() != 1 {
		return nil, c.Errorf("input condition must be 1-D, found shape %v", cond.Shape())
	}
	axis := 0
	if c.HasAttr("axis") {
		a, err := c.normAxis("axis", c.AttrInt("axis", 0), x.Value.Rank())
		if err != nil {
			return nil, err
		}
		axis = a
	} else {
		x = autograd.Reshape(x, x.Value.Len())
	}
	n := x.Value.Dim(axis)
	var keep []int64
	for _, i := range scNonZeroHost(cond) {
		if i >= n {
			return nil, c.Errorf("input condition is true at position %d, beyond the length %d of axis %d of input %v", i, n, axis, in[0].Shape())
		}
		keep = append(keep, int64(i))
	}
	return []*autograd.Var{autograd.IndexSelect(x, axis, c.ConstInts(keep).Value)}, nil
}

// scUniqueOp is Unique: the distinct elements of X (or distinct slices
// along axis), sorted ascending (lexicographically for slices) or in
// order of first occurrence with sorted = 0, with the position of each
// one's first occurrence, the position in Y of each element of X and the
// counts. Gradients flow from Y to X.
func scUniqueOp(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("X")
	if err != nil {
		return nil, err
	}
	axis := 0
	if c.HasAttr("axis") {
		if x.Value.Rank() == 0 {
			return nil, c.Errorf("attribute axis is set but input X is a scalar")
		}
		a, err := c.normAxis("axis", c.AttrInt("axis", 0), x.Value.Rank())
		if err != nil {
			return nil, err
		}
		axis = a
	} else {
		x = autograd.Reshape(x, x.Value.Len())
	}
	shape := x.Shape()
	n := shape[axis]
	outer, inner := scProd(shape[:axis]), scProd(shape[axis+1:])
	// key(i) is the i-th slice along axis, as float64 (exact for the
	// integers of practical size) and int64 values.
	var fv []float64
	var iv []int64
	if x.Value.DType() == device.Int64 {
		iv = x.Value.To(tensor.CPU()).Int64s()
	} else {
		fv = x.Value.Values()
	}
	cmpSlices := func(a, b int) int {
		for o := 0; o < outer; o++ {
			for i := 0; i < inner; i++ {
				pa, pb := (o*n+a)*inner+i, (o*n+b)*inner+i
				var r int
				if iv != nil {
					r = cmp.Compare(iv[pa], iv[pb])
				} else {
					r = cmp.Compare(fv[pa], fv[pb]) // NaNs equal, first
				}
				if r != 0 {
					return r
				}
			}
		}
		return 0
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, cmpSlices)
	// Groups of equal slices, each led by its first occurrence.
	group := make([]int, n) // group of each slice, in sorted order
	var first []int64
	var counts []int64
	for j, i := range order {
		if j == 0 || cmpSlices(order[j-1], i) != 0 {
			first = append(first, int64(i))
			counts = append(counts, 0)
		}
		group[i] = len(first) - 1
		counts[len(counts)-1]++
	}
	rank := make([]int, len(first)) // position in Y of each group
	for g := range rank {
		rank[g] = g
	}
	if c.AttrInt("sorted", 1) == 0 {
		byFirst := make([]int, len(first))
		for g := range byFirst {
			byFirst[g] = g
		}
		slices.SortFunc(byFirst, func(a, b int) int { return cmp.Compare(first[a], first[b]) })
		for r, g := range byFirst {
			rank[g] = r
		}
	}
	k := len(first)
	indices, cnt := make([]int64, k), make([]int64, k)
	for g := range first {
		indices[rank[g]] = first[g]
		cnt[rank[g]] = counts[g]
	}
	inverse := make([]int64, n)
	for i := range inverse {
		inverse[i] = int64(rank[group[i]])
	}
	y := autograd.IndexSelect(x, axis, c.ConstInts(indices).Value)
	return []*autograd.Var{y, c.ConstInts(indices), c.ConstInts(inverse), c.ConstInts(cnt)}, nil
}

// scReverseSequenceOp is ReverseSequence: for each batch entry b along
// batch_axis, the first sequence_lens[b] elements along time_axis
// reversed, the rest copied. Gradients flow to input.
func scReverseSequenceOp(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("input", "sequence_lens")
	if err != nil {
		return nil, err
	}
	x := in[0]
	shape := x.Shape()
	if len(shape) < 2 {
		return nil, c.Errorf("input must have rank at least 2, found shape %v", shape)
	}
	bAxis, tAxis := c.AttrInt("batch_axis", 1), c.AttrInt("time_axis", 0)
	if !(bAxis == 0 && tAxis == 1 || bAxis == 1 && tAxis == 0) {
		return nil, c.Errorf("attributes batch_axis %d and time_axis %d must be 0 and 1 in some order", bAxis, tAxis)
	}
	lens, err := c.intValues(in[1], "sequence_lens")
	if err != nil {
		return nil, err
	}
	nb, nt := shape[bAxis], shape[tAxis]
	if in[1].Value.Rank() != 1 || len(lens) != nb {
		return nil, c.Errorf("input sequence_lens must have shape [%d] (the batch size), found %v", nb, in[1].Shape())
	}
	for b, l := range lens {
		if l < 0 || l > int64(nt) {
			return nil, c.Errorf("input sequence_lens: length %d of batch %d is out of range [0, %d]", l, b, nt)
		}
	}
	rows := make([]int64, shape[0]*shape[1])
	for i0 := 0; i0 < shape[0]; i0++ {
		for i1 := 0; i1 < shape[1]; i1++ {
			b, t := i0, i1
			if bAxis == 1 {
				b, t = i1, i0
			}
			if int64(t) < lens[b] {
				t = int(lens[b]) - 1 - t
			}
			r := b*shape[1] + t
			if bAxis == 1 {
				r = t*shape[1] + b
			}
			rows[i0*shape[1]+i1] = int64(r)
		}
	}
	flat := autograd.Reshape(x, shape[0]*shape[1], scProd(shape[2:]))
	y := autograd.IndexSelect(flat, 0, c.ConstInts(rows).Value)
	return []*autograd.Var{autograd.Reshape(y, shape...)}, nil
}

// scMaxUnpoolOp is MaxUnpool: a zero tensor of the unpooled shape (the
// output_shape input, or what kernel_shape, strides and pads give) with
// the values of X written at the flat positions in I (as MaxPool's
// Indices output numbers them, over the whole tensor). Gradients flow to
// X.
func scMaxUnpoolOp(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("X", "I", "output_shape?")
	if err != nil {
		return nil, err
	}
	x := in[0]
	xs := x.Shape()
	if !x.Value.DType().IsFloat() {
		return nil, c.Errorf("input X must be a float tensor, found %v", x.Value.DType())
	}
	if len(xs) < 3 {
		return nil, c.Errorf("input X must have rank at least 3 (N, C, spatial...), found shape %v", xs)
	}
	if !slices.Equal(in[1].Shape(), xs) {
		return nil, c.Errorf("input I must have the shape of X %v, found %v", xs, in[1].Shape())
	}
	sp := len(xs) - 2
	kernel := c.AttrInts("kernel_shape", nil)
	if len(kernel) != sp {
		return nil, c.Errorf("attribute kernel_shape must have %d values, found %v", sp, kernel)
	}
	strides := c.AttrInts("strides", nil)
	if strides == nil {
		strides = slices.Repeat([]int64{1}, sp)
	}
	pads := c.AttrInts("pads", nil)
	if pads == nil {
		pads = make([]int64, 2*sp)
	}
	if len(strides) != sp || len(pads) != 2*sp {
		return nil, c.Errorf("attributes strides %v and pads %v must have %d and %d values", strides, pads, sp, 2*sp)
	}
	shape := slices.Clone(xs) // the unpooled shape I refers to
	for d := 0; d < sp; d++ {
		if kernel[d] < 1 || strides[d] < 1 || pads[d] < 0 || pads[d+sp] < 0 {
			return nil, c.Errorf("kernel_shape %v, strides %v and pads %v must be positive (pads non-negative)", kernel, strides, pads)
		}
		shape[d+2] = int((int64(xs[d+2])-1)*strides[d] + kernel[d] - pads[d] - pads[d+sp])
		if shape[d+2] < 1 {
			return nil, c.Errorf("kernel_shape %v, strides %v and pads %v give an empty output for X %v", kernel, strides, pads, xs)
		}
	}
	outShape := slices.Clone(shape)
	if in[2] != nil {
		os, err := c.intValues(in[2], "output_shape")
		if err != nil {
			return nil, err
		}
		if len(os) != len(xs) {
			return nil, c.Errorf("input output_shape must have %d values, found %v", len(xs), os)
		}
		for d, v := range os {
			if d < 2 && v != int64(xs[d]) || v < 0 {
				return nil, c.Errorf("input output_shape %v does not fit X %v", os, xs)
			}
			if v < int64(shape[d]) {
				return nil, c.Errorf("input output_shape %v is smaller than the unpooled shape %v", os, shape)
			}
			outShape[d] = int(v)
		}
	}
	if err := c.checkElements(outShape); err != nil {
		return nil, err
	}
	idx, err := c.intValues(in[1], "I")
	if err != nil {
		return nil, err
	}
	total := scProd(shape)
	for k, v := range idx {
		if v < 0 || v >= int64(total) {
			return nil, c.Errorf("input I: index %d at position %d is out of range [0, %d) for the unpooled shape %v", v, k, total, shape)
		}
	}
	if !slices.Equal(shape, outShape) {
		// I numbers the positions of the unpooled shape, which is padded
		// at the end of each axis to output_shape (the reference
		// implementation's reading).
		for k, v := range idx {
			var off int64
			for d := range shape {
				stride := int64(scProd(shape[d+1:]))
				off = off*int64(outShape[d]) + v/stride
				v %= stride
			}
			idx[k] = off
		}
		total = scProd(outShape)
	}
	zero := c.Const(tensor.New(c.dev, x.Value.DType(), total, 1))
	y := scScatterRows(c, zero, autograd.Reshape(x, len(idx), 1), idx, "none")
	return []*autograd.Var{autograd.Reshape(y, outShape...)}, nil
}

// scBitShiftOp is BitShift: X shifted left or right (direction) by Y bits,
// broadcasting. Unsigned values are stored as Int64, so the shifts act on
// the 64-bit pattern (a right shift is logical); a left shift is not
// truncated to the original width.
func scBitShiftOp(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("X", "Y")
	if err != nil {
		return nil, err
	}
	dir := c.AttrString("direction", "")
	if dir != "LEFT" && dir != "RIGHT" {
		return nil, c.Errorf("attribute direction must be LEFT or RIGHT, found %q", dir)
	}
	x, y := in[0].Value, in[1].Value
	if x.DType() != device.Int64 || y.DType() != device.Int64 {
		return nil, c.Errorf("inputs X and Y must be integer tensors, found %v and %v", x.DType(), y.DType())
	}
	shape, ok := tensor.BroadcastShapes(x.Shape(), y.Shape())
	if !ok {
		return nil, c.Errorf("inputs X %v and Y %v do not broadcast", x.Shape(), y.Shape())
	}
	xv := x.Expand(shape...).Contiguous().To(tensor.CPU()).Int64s()
	yv := y.Expand(shape...).Contiguous().To(tensor.CPU()).Int64s()
	out := make([]int64, len(xv))
	for i := range out {
		s := uint64(yv[i])
		if dir == "LEFT" {
			out[i] = int64(uint64(xv[i]) << s)
		} else {
			out[i] = int64(uint64(xv[i]) >> s)
		}
	}
	return []*autograd.Var{c.Const(tensor.FromInt64(out, shape...))}, nil
}
