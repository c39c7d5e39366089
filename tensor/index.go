package tensor

import (
	"fmt"
	"slices"

	"github.com/hora-dl/hora/device"
)

// Concat joins tensors of equal shape except along axis.
func Concat(axis int, ts ...*Tensor) *Tensor {
	if len(ts) == 0 {
		panic("tensor: Concat of nothing")
	}
	sameDevice("Concat", ts...)
	axis = ts[0].axis(axis)
	shape := ts[0].Shape()
	shape[axis] = 0
	for _, t := range ts {
		if t.Rank() != len(shape) || t.DType() != ts[0].DType() {
			panic(fmt.Sprintf("tensor: Concat: %v %v and %v %v", ts[0].DType(), ts[0].shape, t.DType(), t.shape))
		}
		for i, d := range t.shape {
			if i != axis && d != ts[0].shape[i] {
				panic(fmt.Sprintf("tensor: Concat along axis %d: shapes %v and %v", axis, ts[0].shape, t.shape))
			}
		}
		shape[axis] += t.shape[axis]
	}
	out := newOut(false, ts[0].DType(), shape, ts...)
	at := 0
	for _, t := range ts {
		out.Slice(axis, at, at+t.shape[axis]).CopyFrom(t)
		at += t.shape[axis]
	}
	return out
}

// Stack joins tensors of equal shape along a new axis.
func Stack(axis int, ts ...*Tensor) *Tensor {
	if len(ts) == 0 {
		panic("tensor: Stack of nothing")
	}
	us := make([]*Tensor, len(ts))
	for i, t := range ts {
		if !slices.Equal(t.shape, ts[0].shape) {
			panic(fmt.Sprintf("tensor: Stack: shapes %v and %v", ts[0].shape, t.shape))
		}
		us[i] = t.Unsqueeze(axis)
	}
	return Concat(axis, us...)
}

// Split cuts t along axis into pieces of the given sizes, which must add
// up to the axis length. The pieces are views.
func (t *Tensor) Split(axis int, sizes ...int) []*Tensor {
	axis = t.axis(axis)
	total := 0
	for _, s := range sizes {
		total += s
	}
	if total != t.shape[axis] {
		panic(fmt.Sprintf("tensor: Split sizes %v of axis %d of shape %v", sizes, axis, t.shape))
	}
	out := make([]*Tensor, len(sizes))
	at := 0
	for i, s := range sizes {
		out[i] = t.Slice(axis, at, at+s)
		at += s
	}
	return out
}

func checkIndexTensor(op string, idx *Tensor) {
	if idx.DType() != device.Int64 {
		panic(fmt.Sprintf("tensor: %s: indices must be int64, found %v %v", op, idx.DType(), idx.shape))
	}
}

// Gather picks along axis: out[…, j, …] = t[…, idx[…, j, …], …] where idx
// has t's shape except along axis (torch.gather).
func (t *Tensor) Gather(axis int, idx *Tensor) *Tensor {
	checkIndexTensor("Gather", idx)
	sameDevice("Gather", t, idx)
	axis = t.axis(axis)
	outer, n, inner := t.splitAt(axis)
	checkIndexShape("Gather", axis, idx, t)
	out := newOut(false, t.DType(), idx.shape, t, idx)
	t.kernels().Gather(out.buf, t.Contiguous().buf, idx.Contiguous().buf, outer, n, idx.shape[axis], inner)
	return out
}

// ScatterAdd returns a copy of t with src added at the positions idx
// names along axis, the adjoint of Gather.
func (t *Tensor) ScatterAdd(axis int, idx, src *Tensor) *Tensor {
	checkIndexTensor("ScatterAdd", idx)
	sameDevice("ScatterAdd", t, idx, src)
	axis = t.axis(axis)
	if !slices.Equal(idx.shape, src.shape) {
		panic(fmt.Sprintf("tensor: ScatterAdd: index %v and source %v differ", idx.shape, src.shape))
	}
	checkIndexShape("ScatterAdd", axis, idx, t)
	sameType("ScatterAdd", t, src)
	outer, n, inner := t.splitAt(axis)
	out := t.Clone()
	t.kernels().ScatterAdd(out.buf, src.Contiguous().buf, idx.Contiguous().buf, outer, n, idx.shape[axis], inner)
	return out
}

// IndexSelect picks whole slices along axis at the positions in the 1-D
// int64 tensor idx.
func (t *Tensor) IndexSelect(axis int, idx *Tensor) *Tensor {
	checkIndexTensor("IndexSelect", idx)
	sameDevice("IndexSelect", t, idx)
	if idx.Rank() != 1 {
		panic(fmt.Sprintf("tensor: IndexSelect: index must be 1-D, found %v", idx.shape))
	}
	axis = t.axis(axis)
	outer, n, inner := t.splitAt(axis)
	shape := t.Shape()
	shape[axis] = idx.shape[0]
	out := newOut(false, t.DType(), shape, t, idx)
	t.kernels().IndexSelect(out.buf, t.Contiguous().buf, idx.Contiguous().buf, outer, n, idx.shape[0], inner)
	return out
}

// IndexAdd returns a copy of t with the slices of src added at the
// positions in idx along axis, the adjoint of IndexSelect.
func (t *Tensor) IndexAdd(axis int, idx, src *Tensor) *Tensor {
	checkIndexTensor("IndexAdd", idx)
	sameDevice("IndexAdd", t, idx, src)
	axis = t.axis(axis)
	outer, n, inner := t.splitAt(axis)
	if idx.Rank() != 1 {
		panic(fmt.Sprintf("tensor: IndexAdd: index must be 1-D, found %v", idx.shape))
	}
	want := t.Shape()
	want[axis] = idx.Len()
	if !slices.Equal(want, src.shape) {
		panic(fmt.Sprintf("tensor: IndexAdd along axis %d of %v: source %v, expected %v", axis, t.shape, src.shape, want))
	}
	sameType("IndexAdd", t, src)
	out := t.Clone()
	t.kernels().IndexAdd(out.buf, src.Contiguous().buf, idx.Contiguous().buf, outer, n, idx.Len(), inner)
	return out
}

// checkIndexShape panics unless idx has t's shape except along axis.
func checkIndexShape(op string, axis int, idx, t *Tensor) {
	ok := idx.Rank() == t.Rank()
	for i := range t.shape {
		if ok && i != axis && idx.shape[i] != t.shape[i] {
			ok = false
		}
	}
	if !ok {
		panic(fmt.Sprintf("tensor: %s along axis %d: index %v and input %v", op, axis, idx.shape, t.shape))
	}
}

// sameType panics unless t and u have one element type.
func sameType(op string, t, u *Tensor) {
	if t.DType() != u.DType() {
		panic(fmt.Sprintf("tensor: %s: types %v %v and %v %v differ", op, t.DType(), t.shape, u.DType(), u.shape))
	}
}

// splitAt returns the sizes before, at and after axis.
func (t *Tensor) splitAt(axis int) (outer, n, inner int) {
	return device.NumElements(t.shape[:axis]), t.shape[axis], device.NumElements(t.shape[axis+1:])
}
