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
