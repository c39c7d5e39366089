package local

import (
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/transport"
)

// chunk is the number of elements a rank reduces at a time: the partial
// result stays in the first-level cache while every rank's input streams
// through.
const chunk = 2048

// align is the granularity of the ranks' shares of a buffer, in elements,
// so that two ranks never write the same cache line.
const align = 64

// scratch is a rank's working memory for reductions, allocated once.
type scratch struct {
	f32a, f32b []float32
	f64        []float64
	i64        []int64
	f16        []uint16
}

func newScratch() *scratch {
	return &scratch{
		f32a: make([]float32, chunk),
		f32b: make([]float32, chunk),
		f64:  make([]float64, chunk),
		i64:  make([]int64, chunk),
		f16:  make([]uint16, chunk),
	}
}

// segment returns the share [lo, hi) of n elements that rank r of size
// handles: about n/size elements, in whole multiples of align.
func segment(n, size, r int) (lo, hi int) {
	blocks := (n + align - 1) / align
	lo = min(n, r*blocks/size*align)
	hi = min(n, (r+1)*blocks/size*align)
	return lo, hi
}

// reduce reduces elements [lo, hi) of every rank's buffer bufs[r] and
// writes the result into all of them: in chunks, acc = bufs[0], then
// acc = op(acc, bufs[r]) for r = 1, 2, ... (always in rank order, so the
// result does not depend on which rank computes it), divided by the number
// of ranks for Average, then copied out.
func reduce[T transport.Number](bufs [][]T, lo, hi int, op dist.ReduceOp, acc []T) {
	for c := lo; c < hi; c += len(acc) {
		e := min(c+len(acc), hi)
		a := acc[:e-c]
		copy(a, bufs[0][c:e])
		for _, b := range bufs[1:] {
			transport.Combine(a, b[c:e], op)
		}
		if op == dist.Average {
			transport.Divide(a, len(bufs))
		}
		for _, b := range bufs {
			copy(b[c:e], a)
		}
	}
}

// reduceHalf is reduce for Float16 data: each chunk is converted to
// float32, combined there, and rounded back to half once.
func reduceHalf(bufs [][]uint16, lo, hi int, op dist.ReduceOp, s *scratch) {
	for c := lo; c < hi; c += chunk {
		e := min(c+chunk, hi)
		a, x, h := s.f32a[:e-c], s.f32b[:e-c], s.f16[:e-c]
		cpu.Float16ToFloat32(a, bufs[0][c:e])
		for _, b := range bufs[1:] {
			cpu.Float16ToFloat32(x, b[c:e])
			transport.Combine(a, x, op)
		}
		if op == dist.Average {
			transport.Divide(a, len(bufs))
		}
		cpu.Float32ToFloat16(h, a)
		for _, b := range bufs {
			copy(b[c:e], h)
		}
	}
}

// spread copies elements [lo, hi) of bufs[root] into every other buffer.
func spread[T any](bufs [][]T, root, lo, hi int) {
	src := bufs[root][lo:hi]
	for r, b := range bufs {
		if r != root {
			copy(b[lo:hi], src)
		}
	}
}

// gather copies src into every buffer at offset off.
func gather[T any](bufs [][]T, off int, src []T) {
	for _, b := range bufs {
		copy(b[off:off+len(src)], src)
	}
}
