package cpu

import "github.com/hora-dl/hora/device/cpu/internal/vec"

// indexed is the common kernel of Gather (scatter=false, slices=false),
// ScatterAdd (scatter=true), IndexSelect (slices=true) and IndexAdd (both).
// The big tensor is outer×n×inner and the small one outer×m×inner; idx
// holds m indices (slices) or one per element of the small tensor. Its
// reference loop is
//
//	for o, j, i := range outer, m, inner {
//		t := idx[(o*m+j)*inner+i] // idx[j] with slices
//		s, b := (o*m+j)*inner+i, (o*n+t)*inner+i
//		if scatter {
//			big[b] += small[s]
//		} else {
//			small[s] = big[b]
//		}
//	}
//
// Every index is checked (checkIndex) before anything is written, on the
// calling goroutine, so a bad index panics there. The gathers are split
// across the workers by rows of the small tensor, copying whole rows of
// inner elements for IndexSelect. The scatters are split by outer index
// and by pieces of the inner axis, so that no two workers write the same
// element, and every element still receives its additions in the order of
// the reference loop (increasing j): the result is bit for bit the same.
func indexed[T number](dev *Device, big, small []T, idx []int64, outer, n, m, inner int, scatter, slices bool) {
	if outer*m*inner == 0 {
		return
	}
	if slices {
		for _, t := range idx[:m] {
			checkIndex(t, n)
		}
	} else {
		for _, t := range idx[:outer*m*inner] {
			checkIndex(t, n)
		}
	}
	if !scatter {
		dev.parallelFor(outer*m, inner, func(lo, hi int) {
			gatherRows(big, small, idx, lo, hi, n, m, inner, slices)
		})
		return
	}
	pieces := 1
	if w := dev.numWorkers(); outer < 2*w {
		pieces = max(1, min((2*w+outer-1)/outer, m*inner/minPiece, inner/minRun))
	}
	dev.parallelFor(outer*pieces, m*inner/pieces, func(lo, hi int) {
		for u := lo; u < hi; u++ {
			o, p := u/pieces, u%pieces
			scatterRows(big, small, idx, o, inner*p/pieces, inner*(p+1)/pieces, n, m, inner, slices)
		}
	})
}

// minRun is the shortest piece of the inner axis the scatters cut it into.
const minRun = 64

// gatherRows sets rows [lo, hi) of the small tensor (row r = o*m + j holds
// inner elements) from the big one, one outer index at a time.
func gatherRows[T number](big, small []T, idx []int64, lo, hi, n, m, inner int, slices bool) {
	for r := lo; r < hi; {
		o, j0 := r/m, r%m
		j1 := min(m, j0+hi-r)
		src := big[o*n*inner : (o+1)*n*inner]
		switch {
		case slices && inner == 1:
			d := small[r : r+j1-j0]
			for k, t := range idx[j0:j1] {
				d[k] = src[t]
			}
		case slices:
			for j, t := range idx[j0:j1] {
				copy(small[(r+j)*inner:(r+j+1)*inner], src[int(t)*inner:])
			}
		default:
			for row := r; row < r+j1-j0; row++ {
				d := small[row*inner : (row+1)*inner]
				for i, t := range idx[row*inner : (row+1)*inner] {
					d[i] = src[int(t)*inner+i]
				}
			}
		}
		r += j1 - j0
	}
}

// scatterRows adds the elements [i0, i1) of every row of outer index o of
// the small tensor into the big one, in the order of j.
func scatterRows[T number](big, small []T, idx []int64, o, i0, i1, n, m, inner int, slices bool) {
	dst, src := big[o*n*inner:(o+1)*n*inner], small[o*m*inner:(o+1)*m*inner]
	switch {
	case slices && inner == 1:
		for j, t := range idx[:m] {
			dst[t] += src[j]
		}
	case slices:
		for j, t := range idx[:m] {
			b, s := int(t)*inner, j*inner
			addRun(dst[b+i0:b+i1], src[s+i0:s+i1])
		}
	default:
		ix := idx[o*m*inner : (o+1)*m*inner]
		for j := range m {
			for i := i0; i < i1; i++ {
				dst[int(ix[j*inner+i])*inner+i] += src[j*inner+i]
			}
		}
	}
}

// addRun sets d[i] += s[i].
func addRun[T number](d, s []T) {
	if d32, ok := any(d).([]float32); ok && len(d) >= 16 {
		vec.Add(d32, d32, any(s).([]float32))
		return
	}
	s = s[:len(d)]
	for i, v := range s {
		d[i] += v
	}
}
