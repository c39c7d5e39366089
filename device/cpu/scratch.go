package cpu

import "sync"

// scratch is a reusable working buffer of one kernel call on one worker
// (an im2col matrix, a partial sum), recycled through a sync.Pool so that
// steady-state kernels allocate nothing.
type scratch[T float] struct{ s []T }

var (
	scratch32 = sync.Pool{New: func() any { return new(scratch[float32]) }}
	scratch64 = sync.Pool{New: func() any { return new(scratch[float64]) }}
)

// getScratch returns a buffer of n elements with arbitrary contents; give it
// back with putScratch.
func getScratch[T float](n int) *scratch[T] {
	var sc *scratch[T]
	switch any(T(0)).(type) {
	case float32:
		sc = any(scratch32.Get()).(*scratch[T])
	default:
		sc = any(scratch64.Get()).(*scratch[T])
	}
	if cap(sc.s) < n {
		sc.s = make([]T, n)
	}
	sc.s = sc.s[:n]
	return sc
}

func putScratch[T float](sc *scratch[T]) {
	switch any(T(0)).(type) {
	case float32:
		scratch32.Put(sc)
	default:
		scratch64.Put(sc)
	}
}
