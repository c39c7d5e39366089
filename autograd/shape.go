package autograd

import (
	"slices"

	"github.com/hora-dl/hora/tensor"
)

// Gradient rules for views, joins and reductions.

// Reshape returns x with a new shape (see tensor.Reshape).
func Reshape(x *Var, shape ...int) *Var {
	in := x.Value.Shape()
	return nameOp(record(x.Value.Reshape(shape...), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{g.Reshape(in...)}
	}, x), "Reshape")
}

// Flatten merges axes from..Rank-1 into one.
func Flatten(x *Var, from int) *Var {
	return describeOp(recordInto(x.Value.Flatten(from), func(g *tensor.Tensor, _ []bool, grads []*tensor.Tensor) {
		grads[0] = g.ReshapeLike(x.Value)
	}, x), "Flatten", AxisAttrs{opAxis(from, x.Value.Rank())})
}

// Permute reorders axes.
func Permute(x *Var, axes ...int) *Var {
	inv, perm := make([]int, len(axes)), make([]int, len(axes))
	for i, a := range axes {
		if a < 0 {
			a += len(axes)
		}
		if a >= 0 && a < len(axes) { // else Permute below panics
			inv[a] = i
		}
		perm[i] = a
	}
	return describeOp(record(x.Value.Permute(axes...), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{g.Permute(inv...)}
	}, x), "Permute", PermuteAttrs{perm})
}

// Transpose swaps two axes.
func Transpose(x *Var, a, b int) *Var {
	return describeOp(record(x.Value.Transpose(a, b), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{g.Transpose(a, b)}
	}, x), "Transpose", PermuteAttrs{swapPerm(x.Value.Rank(), a, b)})
}

// Slice takes elements [start, end) of axis.
func Slice(x *Var, axis, start, end int) *Var {
	return describeOp(record(x.Value.Slice(axis, start, end), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		// In the arena of x or else of g: the slice of a parameter (the
		// stacked weights of attention) gets its gradient in the step's
		// memory too, not in fresh memory on every step.
		dx := tensor.Empty(x.Value.DType(), x.Value.Shape(), x.Value, g)
		dx.Fill(0)
		dx.Slice(axis, start, end).CopyFrom(g)
		return []*tensor.Tensor{dx}
	}, x), "Slice", SliceAttrs{opAxis(axis, x.Value.Rank()), start, end})
}

// Expand broadcasts x to shape.
func Expand(x *Var, shape ...int) *Var {
	in := x.Value.Shape()
	return nameOp(record(x.Value.Expand(shape...), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{g.SumTo(in)}
	}, x), "Expand")
}

// Squeeze removes an axis of length 1.
func Squeeze(x *Var, axis int) *Var {
	in := x.Value.Shape()
	return describeOp(record(x.Value.Squeeze(axis), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{g.Reshape(in...)}
	}, x), "Squeeze", AxisAttrs{opAxis(axis, len(in))})
}

// Unsqueeze inserts an axis of length 1.
func Unsqueeze(x *Var, axis int) *Var {
	in := x.Value.Shape()
	return describeOp(record(x.Value.Unsqueeze(axis), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{g.Reshape(in...)}
	}, x), "Unsqueeze", AxisAttrs{opAxis(axis, len(in)+1)})
}

// Concat joins Vars along axis.
func Concat(axis int, xs ...*Var) *Var {
	vals := make([]*tensor.Tensor, len(xs))
	sizes := make([]int, len(xs))
	for i, x := range xs {
		vals[i] = x.Value
	}
	out := tensor.Concat(axis, vals...)
	for i, x := range xs {
		sizes[i] = x.Value.Dim(axis)
	}
	return describeOp(record(out, func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return g.Split(axis, sizes...)
	}, xs...), "Concat", AxisAttrs{opAxis(axis, out.Rank())})
}

// Stack joins Vars of one shape along a new axis.
func Stack(axis int, xs ...*Var) *Var {
	us := make([]*Var, len(xs))
	for i, x := range xs {
		us[i] = Unsqueeze(x, axis)
	}
	return Concat(axis, us...)
}

// Split cuts x along axis into pieces of the given sizes. The pieces are
// views. It halves x recursively rather than slicing each piece from x,
// because each slice sends a gradient the size of what it was cut from:
// cutting n pieces straight from x would cost n gradients the size of x in
// Backward (quadratic when an RNN cuts its input into time steps), halving
// costs about log₂(n) of them.
func Split(x *Var, axis int, sizes ...int) []*Var {
	if len(sizes) <= 2 {
		out := make([]*Var, len(sizes))
		at := 0
		for i, s := range sizes {
			out[i] = Slice(x, axis, at, at+s)
			at += s
		}
		return out
	}
	mid, left, total := len(sizes)/2, 0, 0
	for i, s := range sizes {
		if i < mid {
			left += s
		}
		total += s
	}
	halves := Split(x, axis, left, total-left)
	return append(Split(halves[0], axis, sizes[:mid]...), Split(halves[1], axis, sizes[mid:]...)...)
}

// SumAxes sums over axes (nil: all); keep retains them with length 1.
func SumAxes(x *Var, axes []int, keep bool) *Var {
	in := x.Value.Shape()
	out := x.Value.SumAxes(axes, keep)
	kept := x.Value.SumAxes(axes, true).Shape()
	return describeOp(record(out, func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{g.Reshape(kept...).Expand(in...)}
	}, x), "SumAxes", AxesAttrs{reducedAxes(axes, len(in)), keep})
}

// Sum sums over one axis.
func Sum(x *Var, axis int, keep bool) *Var { return SumAxes(x, []int{axis}, keep) }

// SumAll returns the 0-dimensional sum of all elements.
func SumAll(x *Var) *Var { return SumAxes(x, nil, false) }

// MeanAxes averages over axes (nil: all).
func MeanAxes(x *Var, axes []int, keep bool) *Var {
	s := SumAxes(x, axes, keep)
	return MulScalar(s, float64(s.Value.Len())/float64(x.Value.Len()))
}

// Mean averages over one axis.
func Mean(x *Var, axis int, keep bool) *Var { return MeanAxes(x, []int{axis}, keep) }

// MeanAll returns the 0-dimensional mean of all elements.
func MeanAll(x *Var) *Var { return MeanAxes(x, nil, false) }

// VarAxes returns the variance over axes, unbiased (n-1) or not (n).
func VarAxes(x *Var, axes []int, unbiased, keep bool) *Var {
	d := Sub(x, MeanAxes(x, axes, true))
	n := x.Value.Len() / x.Value.SumAxes(axes, true).Len()
	div := float64(n)
	if unbiased {
		div = float64(n - 1)
	}
	return MulScalar(SumAxes(Mul(d, d), axes, keep), 1/div)
}

// Max returns the maximum over axis; the gradient is shared equally among
// tied maxima.
func Max(x *Var, axis int, keep bool) *Var {
	return describeOp(extremum(x, x.Value.Max(axis, true), axis, keep), "Max", AxesAttrs{[]int{opAxis(axis, x.Value.Rank())}, keep})
}

// Min returns the minimum over axis; the gradient is shared equally among
// tied minima.
func Min(x *Var, axis int, keep bool) *Var {
	return describeOp(extremum(x, x.Value.Min(axis, true), axis, keep), "Min", AxesAttrs{[]int{opAxis(axis, x.Value.Rank())}, keep})
}

// extremum records a max or min reduction whose result, with the axis
// kept, is kept: the gradient flows to the elements equal to it.
func extremum(x *Var, kept *tensor.Tensor, axis int, keep bool) *Var {
	out := kept
	if !keep {
		out = kept.Squeeze(axis)
	}
	return record(out, func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		mask := x.Value.Eq(kept)
		share := mask.Div(mask.Sum(axis, true))
		return []*tensor.Tensor{share.Mul(g.Reshape(kept.Shape()...))}
	}, x)
}

// Softmax normalises exp(x) along axis.
func Softmax(x *Var, axis int) *Var {
	y := x.Value.Softmax(axis)
	return describeOp(record(y, func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		// y ⊙ (g - Σ g⊙y)
		return []*tensor.Tensor{tensor.SoftmaxGrad(g, y, axis)}
	}, x), "Softmax", AxisAttrs{opAxis(axis, y.Rank())})
}

// LogSoftmax returns log(Softmax(x)) along axis.
func LogSoftmax(x *Var, axis int) *Var {
	y := x.Value.LogSoftmax(axis)
	return describeOp(record(y, func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		// g - softmax ⊙ Σ g
		return []*tensor.Tensor{g.Sub(y.Exp().Mul(g.Sum(axis, true)))}
	}, x), "LogSoftmax", AxisAttrs{opAxis(axis, y.Rank())})
}

// Gather picks x along axis at the int64 positions idx (torch.gather).
func Gather(x *Var, axis int, idx *tensor.Tensor) *Var {
	return describeOp(record(x.Value.Gather(axis, idx), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{tensor.ZerosLike(x.Value).ScatterAdd(axis, idx, g)}
	}, x), "Gather", IndexAttrs{opAxis(axis, x.Value.Rank()), idx})
}

// IndexSelect picks whole slices of x along axis at the 1-D int64 idx.
func IndexSelect(x *Var, axis int, idx *tensor.Tensor) *Var {
	return describeOp(record(x.Value.IndexSelect(axis, idx), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{tensor.ZerosLike(x.Value).IndexAdd(axis, idx, g)}
	}, x), "IndexSelect", IndexAttrs{opAxis(axis, x.Value.Rank()), idx})
}

// Embedding returns the rows of the table w (Num×Dim) named by the Int64
// indices idx of any shape S: a result of shape S×Dim (torch's
// F.embedding). Rows picked several times accumulate their gradients.
func Embedding(w *Var, idx *tensor.Tensor) *Var {
	flat := idx.Reshape(-1)
	out := w.Value.IndexSelect(0, flat)
	return describeOp(record(out.Reshape(append(idx.Shape(), w.Value.Dim(-1))...), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{tensor.ZerosLike(w.Value).IndexAdd(0, flat, g.Reshape(flat.Len(), w.Value.Dim(-1)))}
	}, w), "Embedding", IndexAttrs{0, idx})
}

// swapPerm returns the permutation of rank axes that swaps a and b.
func swapPerm(rank, a, b int) []int {
	perm := make([]int, rank)
	for i := range perm {
		perm[i] = i
	}
	a, b = opAxis(a, rank), opAxis(b, rank)
	perm[a], perm[b] = b, a
	return perm
}

// reducedAxes returns axes made non-negative and sorted (nil stays nil:
// all axes).
func reducedAxes(axes []int, rank int) []int {
	if axes == nil {
		return nil
	}
	out := make([]int, len(axes))
	for i, a := range axes {
		out[i] = opAxis(a, rank)
	}
	slices.Sort(out)
	return out
}
