package cpu

import "github.com/hora-dl/hora/device"

// strided walks several views of one shape row by row along the last axis.
// Adjacent axes that are laid out contiguously in every view are merged
// first, so a dense view is walked as one long row.
type strided struct {
	shape   []int   // merged shape, at least one axis
	strides [][]int // per view
	offsets []int   // per view
}

func newStrided(layouts ...device.Layout) strided {
	shape := layouts[0].Shape
	s := strided{offsets: make([]int, len(layouts)), strides: make([][]int, len(layouts))}
	for k, l := range layouts {
		s.offsets[k] = l.Offset
	}
	// Drop axes of length 1 (they contribute nothing to any offset).
	for i, d := range shape {
		if d == 1 {
			continue
		}
		if n := len(s.shape); n > 0 && mergeable(layouts, s, i) {
			s.shape[n-1] *= d
			for k, l := range layouts {
				s.strides[k][n-1] = l.Strides[i]
			}
			continue
		}
		s.shape = append(s.shape, d)
		for k, l := range layouts {
			s.strides[k] = append(s.strides[k], l.Strides[i])
		}
	}
	if len(s.shape) == 0 {
		s.shape = []int{1}
		for k := range layouts {
			s.strides[k] = []int{0}
		}
	}
	return s
}

// mergeable reports whether original axis i can be folded into the last
// merged axis: in every view, stepping the merged axis once equals stepping
// axis i shape[i] times.
func mergeable(layouts []device.Layout, s strided, i int) bool {
	n := len(s.shape) - 1
	for k, l := range layouts {
		if s.strides[k][n] != l.Strides[i]*l.Shape[i] {
			return false
		}
	}
	return true
}

// rows returns the number of rows and the row length.
func (s strided) rows() (nrows, rowLen int) {
	rowLen = s.shape[len(s.shape)-1]
	nrows = 1
	for _, d := range s.shape[:len(s.shape)-1] {
		nrows *= d
	}
	return nrows, rowLen
}

// inner returns the last-axis stride of view k.
func (s strided) inner(k int) int { return s.strides[k][len(s.shape)-1] }

// rowStarts writes into offs the offset of row r in every view.
func (s strided) rowStarts(r int, offs []int) {
	copy(offs, s.offsets)
	for ax := len(s.shape) - 2; ax >= 0 && r > 0; ax-- {
		d := s.shape[ax]
		idx := r % d
		r /= d
		for k := range offs {
			offs[k] += idx * s.strides[k][ax]
		}
	}
}

// minPiece is the least work (elements times cost) of a piece of a row,
// when rows are cut because there are too few to keep every worker busy.
const minPiece = 1 << 14

// forEachRow calls a row function on every row of s, in parallel: over
// whole rows when there are enough of them, else over pieces of rows of at
// least minPiece work. cost is the work per element, as parallelFor
// takes it. Each parallel chunk gets its own row function from newRow (so
// it can own scratch space); the function is called with the offsets in
// every view of the first element of the piece and the piece's length,
// and steps through the piece with the views' inner strides.
func (s strided) forEachRow(dev *Device, cost int, newRow func() func(offs []int, n int)) {
	nrows, n := s.rows()
	pieces := 1
	if w := dev.numWorkers(); nrows < 2*w {
		pieces = max(1, min((2*w+nrows-1)/nrows, n*cost/minPiece))
	}
	dev.parallelFor(nrows*pieces, cost*n/pieces, func(lo, hi int) {
		row := newRow()
		o := s.seek(lo / pieces)
		offs := make([]int, len(o.offs))
		for u := lo; u < hi; u++ {
			p := u % pieces
			if p == 0 && u > lo {
				o.next()
			}
			start, end := n*p/pieces, n*(p+1)/pieces
			for k := range offs {
				offs[k] = o.offs[k] + start*s.inner(k)
			}
			row(offs, end-start)
		}
	})
}

// odometer steps through the rows of a strided walk in order, keeping the
// offset of the current row's start in every view, so that going to the
// next row costs an increment rather than the divisions of rowStarts.
type odometer struct {
	s    strided
	idx  []int // index of the current row along every axis but the last
	offs []int // per view
}

// seek returns an odometer at row r.
func (s strided) seek(r int) *odometer {
	o := &odometer{s: s, idx: make([]int, len(s.shape)-1), offs: make([]int, len(s.offsets))}
	s.rowStarts(r, o.offs)
	for ax := len(o.idx) - 1; ax >= 0; ax-- {
		o.idx[ax] = r % s.shape[ax]
		r /= s.shape[ax]
	}
	return o
}

// next moves to the next row.
func (o *odometer) next() {
	for ax := len(o.idx) - 1; ax >= 0; ax-- {
		o.idx[ax]++
		for k := range o.offs {
			o.offs[k] += o.s.strides[k][ax]
		}
		if o.idx[ax] < o.s.shape[ax] {
			return
		}
		o.idx[ax] = 0
		for k := range o.offs {
			o.offs[k] -= o.s.strides[k][ax] * o.s.shape[ax]
		}
	}
}

// moveToEnd returns s with merged axis ax moved to just before the last
// one. Walking the axes in another order changes only the order in which
// elements are visited.
func (s strided) moveToEnd(ax int) strided {
	last := len(s.shape) - 1
	perm := func(v []int) []int {
		out := make([]int, 0, len(v))
		out = append(out, v[:ax]...)
		out = append(out, v[ax+1:last]...)
		return append(out, v[ax], v[last])
	}
	t := strided{shape: perm(s.shape), offsets: s.offsets, strides: make([][]int, len(s.strides))}
	for k, st := range s.strides {
		t.strides[k] = perm(st)
	}
	return t
}

// dropLast returns s without its last axis (whose length and strides the
// caller keeps): its rows are the columns of s's last two axes.
func (s strided) dropLast() strided {
	last := len(s.shape) - 1
	t := strided{shape: s.shape[:last], offsets: s.offsets, strides: make([][]int, len(s.strides))}
	if last == 0 {
		t.shape = []int{1}
	}
	for k, st := range s.strides {
		t.strides[k] = st[:last]
		if last == 0 {
			t.strides[k] = []int{0}
		}
	}
	return t
}
