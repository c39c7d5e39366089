package tensor

import (
	"fmt"
	"slices"

	"github.com/hora-dl/hora/device"
)

// view returns a tensor sharing t's buffer with the given layout.
func (t *Tensor) view(shape, strides []int, offset int) *Tensor {
	v := t.newView()
	v.shape, v.strides, v.offset = shape, strides, offset
	return v
}

// newView returns an empty Tensor sharing t's buffer and arena: from the
// arena's slabs when t has one.
func (t *Tensor) newView() *Tensor {
	t.checkLive()
	if t.arena != nil {
		v := t.arena.newTensor()
		v.buf = t.buf
		return v
	}
	return &Tensor{buf: t.buf}
}

// Reshape returns a tensor with the same elements in row-major order and a
// new shape; one dimension may be -1 and is then inferred. It is a view when
// t is contiguous, a copy otherwise.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	infer, known := -1, 1
	for i, d := range shape {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			panic(fmt.Sprintf("tensor: Reshape %v to %v: bad dimension %d", t.shape, slices.Clone(shape), d))
		default:
			known *= d
		}
	}
	n := t.Len()
	if infer >= 0 && (known == 0 || n%known != 0) {
		panic(fmt.Sprintf("tensor: Reshape %v to %v: %d elements do not fit", t.shape, slices.Clone(shape), n))
	}
	if infer < 0 && known != n {
		panic(fmt.Sprintf("tensor: Reshape %v (%d elements) to %v (%d elements)", t.shape, n, slices.Clone(shape), known))
	}
	v := t.Contiguous().newView()
	v.setContiguous(shape)
	if infer >= 0 {
		v.shape[infer] = n / known
		v.setContiguous(v.shape) // recompute the strides
	}
	return v
}

// ReshapeLike is Reshape to the shape of like.
func (t *Tensor) ReshapeLike(like *Tensor) *Tensor { return t.Reshape(like.shape...) }

// Flatten merges axes from..Rank-1 into one: Flatten(1) turns N×C×H×W
// into N×(C·H·W).
func (t *Tensor) Flatten(from int) *Tensor {
	from = t.axis(from)
	var dims [8]int
	shape := append(dims[:0], t.shape[:from]...)
	return t.Reshape(append(shape, device.NumElements(t.shape[from:]))...)
}

// Permute reorders the axes: output axis i is input axis axes[i]. View.
func (t *Tensor) Permute(axes ...int) *Tensor {
	if len(axes) != len(t.shape) {
		panic(fmt.Sprintf("tensor: Permute %v of shape %v: need %d axes", slices.Clone(axes), t.shape, len(t.shape)))
	}
	r := len(axes)
	var seenBuf [16]bool
	seen := seenBuf[:min(r, len(seenBuf))]
	if r > len(seenBuf) {
		seen = make([]bool, r)
	}
	v := t.newView()
	if r <= len(v.dims)/2 { // inline, as setContiguous lays out
		v.shape, v.strides = v.dims[:r:r], v.dims[r:2*r:2*r]
	} else {
		v.shape, v.strides = make([]int, r), make([]int, r)
	}
	for i, a := range axes {
		a = t.axis(a)
		if seen[a] {
			panic(fmt.Sprintf("tensor: Permute %v of shape %v: repeated axis", slices.Clone(axes), t.shape))
		}
		seen[a] = true
		v.shape[i], v.strides[i] = t.shape[a], t.strides[a]
	}
	v.offset = t.offset
	return v
}

// Transpose swaps axes a and b. View.
func (t *Tensor) Transpose(a, b int) *Tensor {
	axes := make([]int, len(t.shape))
	for i := range axes {
		axes[i] = i
	}
	a, b = t.axis(a), t.axis(b)
	axes[a], axes[b] = b, a
	return t.Permute(axes...)
}

// T transposes the last two axes. View.
func (t *Tensor) T() *Tensor {
	if len(t.shape) != 2 {
		return t.Transpose(-2, -1)
	}
	v := t.newView()
	v.offset = t.offset
	v.dims = [8]int{t.shape[1], t.shape[0], t.strides[1], t.strides[0]}
	v.shape, v.strides = v.dims[0:2:2], v.dims[2:4:4]
	return v
}

// Slice returns elements [start, end) along axis. View.
func (t *Tensor) Slice(axis, start, end int) *Tensor {
	axis = t.axis(axis)
	if start < 0 || end > t.shape[axis] || start > end {
		panic(fmt.Sprintf("tensor: Slice [%d:%d] of axis %d of shape %v", start, end, axis, t.shape))
	}
	shape := t.Shape()
	shape[axis] = end - start
	return t.view(shape, t.Strides(), t.offset+start*t.strides[axis])
}

// Index selects position i of axis, dropping the axis. View.
func (t *Tensor) Index(axis, i int) *Tensor {
	return t.Slice(axis, i, i+1).Squeeze(axis)
}

// Squeeze removes axis, which must have length 1. View.
func (t *Tensor) Squeeze(axis int) *Tensor {
	axis = t.axis(axis)
	if t.shape[axis] != 1 {
		panic(fmt.Sprintf("tensor: Squeeze axis %d of shape %v", axis, t.shape))
	}
	shape := append(t.Shape()[:axis], t.shape[axis+1:]...)
	strides := append(t.Strides()[:axis], t.strides[axis+1:]...)
	return t.view(shape, strides, t.offset)
}

// Unsqueeze inserts an axis of length 1 at position axis (0..Rank). View.
func (t *Tensor) Unsqueeze(axis int) *Tensor {
	if axis < 0 {
		axis += len(t.shape) + 1
	}
	if axis < 0 || axis > len(t.shape) {
		panic(fmt.Sprintf("tensor: Unsqueeze axis %d of shape %v", axis, t.shape))
	}
	shape := append(t.Shape()[:axis:axis], append([]int{1}, t.shape[axis:]...)...)
	stride := 1
	if axis < len(t.shape) {
		stride = t.strides[axis] * t.shape[axis]
	}
	strides := append(t.Strides()[:axis:axis], append([]int{stride}, t.strides[axis:]...)...)
	return t.view(shape, strides, t.offset)
}

// Expand broadcasts t to shape without copying (repeated axes get stride 0).
func (t *Tensor) Expand(shape ...int) *Tensor {
	l := t.broadcastLayout(shape, "Expand", nil)
	return t.view(l.Shape, l.Strides, l.Offset)
}

// broadcastLayout returns t's layout broadcast to shape, panicking with
// both shapes (and other's, for the error message) if that is impossible.
func (t *Tensor) broadcastLayout(shape []int, op string, other *Tensor) device.Layout {
	r := len(shape)
	if len(t.shape) > r {
		panic(broadcastMsg(op, t, shape, other))
	}
	if sameDims(t.shape, shape) { // no broadcasting: t's own layout
		return t.layout()
	}
	strides := make([]int, r)
	lead := r - len(t.shape)
	for i := range shape {
		if i < lead {
			continue
		}
		d := t.shape[i-lead]
		switch {
		case d == shape[i]:
			strides[i] = t.strides[i-lead]
		case d == 1:
			strides[i] = 0
		default:
			panic(broadcastMsg(op, t, shape, other))
		}
	}
	return device.Layout{Shape: append([]int(nil), shape...), Strides: strides, Offset: t.offset}
}

func sameDims(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i, d := range a {
		if b[i] != d {
			return false
		}
	}
	return true
}

func broadcastMsg(op string, t *Tensor, shape []int, other *Tensor) string {
	if other != nil {
		return fmt.Sprintf("tensor: %s: shapes %v and %v do not broadcast", op, other.shape, t.shape)
	}
	return fmt.Sprintf("tensor: %s: shape %v does not broadcast to %v", op, t.shape, shape)
}

// BroadcastShapes returns the shape two shapes broadcast to (NumPy rules)
// and false when they do not broadcast.
func BroadcastShapes(a, b []int) ([]int, bool) {
	r := max(len(a), len(b))
	out := make([]int, r)
	for i := 0; i < r; i++ {
		x, y := 1, 1
		if j := len(a) - r + i; j >= 0 {
			x = a[j]
		}
		if j := len(b) - r + i; j >= 0 {
			y = b[j]
		}
		switch {
		case x == y || y == 1:
			out[i] = x
		case x == 1:
			out[i] = y
		default:
			return nil, false
		}
	}
	return out, true
}
