package tensor

import (
	"fmt"
	"sort"

	"github.com/hora-dl/hora/device"
)

// reduce1 reduces one axis with a device reduction.
func (t *Tensor) reduce1(name string, op device.ReduceOp, axis int, keep bool) *Tensor {
	sameFloat(name, t)
	axis = t.axis(axis)
	if t.shape[axis] == 0 && op == device.ReduceSum {
		kept := t.Shape() // the sum of nothing is 0
		kept[axis] = 1
		out := newOut(true, t.DType(), kept, t)
		if !keep {
			out = out.Squeeze(axis)
		}
		return out
	}
	if t.shape[axis] == 0 {
		panic(fmt.Sprintf("tensor: %s over empty axis %d of shape %v", name, axis, t.shape))
	}
	c := t.Contiguous()
	outer := device.NumElements(t.shape[:axis])
	inner := device.NumElements(t.shape[axis+1:])
	kept := t.Shape()
	kept[axis] = 1
	dt := t.DType()
	if op == device.ReduceArgMax {
		dt = device.Int64
	}
	out := newOut(false, dt, kept, t)
	if outer*inner > 0 {
		t.kernels().Reduce(op, out.buf, c.buf, outer, t.shape[axis], inner)
	}
	if !keep {
		out = out.Squeeze(axis)
	}
	return out
}

// normAxes resolves, de-duplicates and sorts axes; nil means all axes.
func (t *Tensor) normAxes(axes []int) []int {
	if axes == nil {
		axes = make([]int, len(t.shape))
		for i := range axes {
			axes[i] = i
		}
		return axes
	}
	seen := map[int]bool{}
	var out []int
	for _, a := range axes {
		a = t.axis(a)
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	sort.Ints(out)
	return out
}

// reduceAxes reduces several axes, from the last: each run of
// consecutive axes (a global average pool's H and W) as one axis of their
// combined length, in one pass over a contiguous view, one float64 sum per
// output rounded once; other runs one after the other. (One axis at a
// time, a float32 rounding after each, zoo MobileNet's global average
// pooling of 7×7 planes took 4% of its training step, its rows of 7 in
// the device's element loop.)
func (t *Tensor) reduceAxes(name string, op device.ReduceOp, axes []int, keep bool) *Tensor {
	axes = t.normAxes(axes)
	out := t
	for end := len(axes); end > 0; {
		start := end - 1 // axes[start:end] are consecutive
		for start > 0 && axes[start-1] == axes[start]-1 {
			start--
		}
		out = out.reduceRun(name, op, axes[start], axes[end-1], keep)
		end = start
	}
	if out == t {
		out = t.Clone()
	}
	return out
}

// reduceRun reduces the consecutive axes first…last as one axis (see
// reduceAxes); keep retains them with length 1.
func (t *Tensor) reduceRun(name string, op device.ReduceOp, first, last int, keep bool) *Tensor {
	if first == last {
		return t.reduce1(name, op, first, keep)
	}
	merged := append(append(t.Shape()[:first:first], -1), t.shape[last+1:]...)
	if device.NumElements(t.shape) == 0 {
		merged[first] = device.NumElements(t.shape[first : last+1])
	}
	out := t.Contiguous().Reshape(merged...).reduce1(name, op, first, true)
	kept := t.Shape()
	for a := first; a <= last; a++ {
		kept[a] = 1
	}
	if !keep {
		kept = append(kept[:first:first], kept[last+1:]...)
	}
	return out.Reshape(kept...)
}

// SumAxes sums over the given axes (nil: all); keep retains them with length 1.
func (t *Tensor) SumAxes(axes []int, keep bool) *Tensor {
	return t.reduceAxes("Sum", device.ReduceSum, axes, keep)
}

// Sum sums over one axis.
func (t *Tensor) Sum(axis int, keep bool) *Tensor {
	return t.reduce1("Sum", device.ReduceSum, axis, keep)
}

// SumAll returns the 0-dimensional sum of all elements.
func (t *Tensor) SumAll() *Tensor {
	if t.Len() == 0 {
		return newOut(true, t.DType(), nil, t)
	}
	return t.Reshape(-1).reduce1("Sum", device.ReduceSum, 0, false)
}

// MeanAxes averages over the given axes (nil: all).
func (t *Tensor) MeanAxes(axes []int, keep bool) *Tensor {
	n := 1
	for _, a := range t.normAxes(axes) {
		n *= t.shape[a]
	}
	return t.SumAxes(axes, keep).MulScalar(1 / float64(n))
}

// Mean averages over one axis.
func (t *Tensor) Mean(axis int, keep bool) *Tensor {
	return t.Sum(axis, keep).MulScalar(1 / float64(t.Dim(axis)))
}

// MeanAll returns the 0-dimensional mean of all elements.
func (t *Tensor) MeanAll() *Tensor { return t.SumAll().MulScalar(1 / float64(t.Len())) }

// Max returns the maximum over one axis.
func (t *Tensor) Max(axis int, keep bool) *Tensor {
	return t.reduce1("Max", device.ReduceMax, axis, keep)
}

// Min returns the minimum over one axis.
func (t *Tensor) Min(axis int, keep bool) *Tensor {
	return t.reduce1("Min", device.ReduceMin, axis, keep)
}

// MaxAll returns the 0-dimensional maximum of all elements.
func (t *Tensor) MaxAll() *Tensor { return t.Reshape(-1).Max(0, false) }

// ArgMax returns the int64 position of the first maximum along axis.
func (t *Tensor) ArgMax(axis int, keep bool) *Tensor {
	return t.reduce1("ArgMax", device.ReduceArgMax, axis, keep)
}

// VarAxes returns the variance over axes (nil: all), dividing by n-1 when
// unbiased and by n otherwise.
func (t *Tensor) VarAxes(axes []int, unbiased, keep bool) *Tensor {
	n := 1
	for _, a := range t.normAxes(axes) {
		n *= t.shape[a]
	}
	d := t.Sub(t.MeanAxes(axes, true))
	div := float64(n)
	if unbiased {
		div = float64(n - 1)
	}
	return d.Mul(d).SumAxes(axes, keep).MulScalar(1 / div)
}

// Var returns the variance over one axis.
func (t *Tensor) Var(axis int, unbiased, keep bool) *Tensor {
	return t.VarAxes([]int{axis}, unbiased, keep)
}

// Softmax returns exp(t) normalised to sum to 1 along axis (the maximum
// subtracted first). Over the last axis of a dense tensor on a device with
// device.SoftmaxKernels it is one kernel, a few passes per row.
func (t *Tensor) Softmax(axis int) *Tensor {
	if sk, rows, cols := t.softmaxKernels(axis); sk != nil {
		out := newOut(false, t.DType(), t.shape, t)
		sk.Softmax(out.buf, t.buf, rows, cols)
		return out
	}
	e := t.Sub(t.Max(axis, true)).Exp()
	return e.Div(e.Sum(axis, true))
}

// SoftmaxGrad returns y·(dy - Σ dy·y) summed along axis: the gradient of
// Softmax(axis) whose output is y, for the output gradient dy. Over the
// last axis of dense tensors on a device with device.SoftmaxKernels it is
// one kernel.
func SoftmaxGrad(dy, y *Tensor, axis int) *Tensor {
	if !sameShape(dy, y) {
		panic(fmt.Sprintf("tensor: SoftmaxGrad: gradient %v and output %v differ", dy.shape, y.shape))
	}
	if sk, rows, cols := y.softmaxKernels(axis); sk != nil && fused(y, dy) != nil {
		out := newOut(false, y.DType(), y.shape, dy, y)
		sk.SoftmaxGrad(out.buf, dy.buf, y.buf, rows, cols)
		return out
	}
	return y.Mul(dy.Sub(dy.Mul(y).Sum(axis, true)))
}

// softmaxKernels returns t's device's softmax kernels and t's rows and
// columns when axis is t's last, t is dense, not empty and of a float
// type; nil otherwise.
func (t *Tensor) softmaxKernels(axis int) (device.SoftmaxKernels, int, int) {
	sk, ok := t.kernels().(device.SoftmaxKernels)
	if !ok || t.Rank() == 0 || t.axis(axis) != t.Rank()-1 || t.Len() == 0 || fused(t) == nil {
		return nil, 0, 0
	}
	cols := t.shape[t.Rank()-1]
	return sk, t.Len() / cols, cols
}

// LogSoftmax returns log(Softmax(t)) computed stably.
func (t *Tensor) LogSoftmax(axis int) *Tensor {
	s := t.Sub(t.Max(axis, true))
	return s.Sub(s.Exp().Sum(axis, true).Log())
}
