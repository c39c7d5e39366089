package cpu

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/gemm"
)

// copyViews is copyStrided for views that are not both dense. After
// merging the axes that are contiguous in both views, it picks a loop by
// the strides of the last axis:
//
//   - contiguous in both: copy (or convert) whole rows;
//   - broadcast in the source (stride 0): fill rows with one value (short
//     contiguous rows a run of rows per call);
//   - otherwise, one strided element at a time, row by row. When the last
//     axis is contiguous in one view and another axis in the other (a
//     transpose or permutation), that axis is walked next, so that
//     consecutive rows read (or write) the next elements of the same cache
//     lines; float32 views are transposed 16×16 tiles at a time
//     (copyTransposed), other types in bands of short rows (under
//     minRow, copyTiled).
//
// The rows (or the tiles' bands) are split across the workers. Every
// element is converted exactly as D(v), so the result does not depend on
// the loop chosen.
func copyViews[D, S number](dev *Device, dst []D, dl device.Layout, src []S, sl device.Layout) {
	st := newStrided(dl, sl)
	ds, ss := st.inner(0), st.inner(1)
	switch {
	case ds == 1 && ss == 1 && len(st.shape) > 1 && st.shape[len(st.shape)-1] < runRow:
		// Contiguous rows shorter than runRow (a Transformer's head split
		// moves rows of 16 values): one call per run of rows rather than
		// per row, whose cost was 10–20× the 64 bytes it copied.
		m := st.shape[len(st.shape)-1]
		rows := st.dropLast()
		dk, sk := rows.inner(0), rows.inner(1)
		same, _ := any(dst).([]S) // not nil when the types match: copy, asked once
		rows.forEachRow(dev, m, func() func([]int, int) {
			return func(offs []int, n int) {
				do, so := offs[0], offs[1]
				if same != nil {
					for i := range n {
						copy(same[do+i*dk:do+i*dk+m], src[so+i*sk:so+i*sk+m])
					}
					return
				}
				for i := range n {
					convert(dst[do+i*dk:do+i*dk+m], src[so+i*sk:so+i*sk+m])
				}
			}
		})
	case ds == 1 && ss == 1:
		st.forEachRow(dev, 1, func() func([]int, int) {
			return func(offs []int, n int) { convert(dst[offs[0]:offs[0]+n], src[offs[1]:offs[1]+n]) }
		})
	case ss == 0 && ds == 1 && len(st.shape) > 1 && st.shape[len(st.shape)-1] < runRow:
		// Short contiguous rows each filled with one value (a mean's
		// gradient over an image's positions: zoo MobileNet's pooling of
		// 7×7 planes, rows of 49, 2.7% of its training step one row per
		// call): one call per run of rows.
		m := st.shape[len(st.shape)-1]
		rows := st.dropLast()
		dk, sk := rows.inner(0), rows.inner(1)
		rows.forEachRow(dev, m, func() func([]int, int) {
			return func(offs []int, n int) {
				do, so := offs[0], offs[1]
				for i := range n {
					fill(dst[do+i*dk:do+i*dk+m], D(src[so+i*sk]))
				}
			}
		})
	case ss == 0:
		st.forEachRow(dev, 1, func() func([]int, int) {
			return func(offs []int, n int) { fillStrided(dst, offs[0], ds, n, D(src[offs[1]])) }
		})
	default:
		if ax := transposeAxis(st); ax >= 0 {
			st = st.moveToEnd(ax)
			if copyTransposed(dev, dst, src, st) {
				return
			}
			if st.shape[len(st.shape)-1] < minRow {
				copyTiled(dev, dst, src, st)
				return
			}
		}
		st.forEachRow(dev, 1, func() func([]int, int) {
			return func(offs []int, n int) {
				do, so := offs[0], offs[1]
				for i := range n {
					dst[do+i*ds] = D(src[so+i*ss])
				}
			}
		})
	}
}

// convert sets d[i] = D(s[i]): a memmove when the types are the same.
func convert[D, S number](d []D, s []S) {
	if dd, ok := any(d).([]S); ok {
		copy(dd, s)
		return
	}
	s = s[:len(d)]
	for i, v := range s {
		d[i] = D(v)
	}
}

// fillStrided sets the n elements of dst from offset off, stride step, to v.
func fillStrided[D number](dst []D, off, step, n int, v D) {
	if step == 1 {
		fill(dst[off:off+n], v)
		return
	}
	for i := range n {
		dst[off+i*step] = v
	}
}

// runRow bounds the contiguous rows copyViews copies a run at a time
// (one call per run of rows of the second-to-last axis); longer rows go
// one per call, so that a few very long rows can still be split across
// the workers.
const runRow = 4096

// minRow is the least length of the last axis for which copyViews walks
// rows with strided reads (or writes) rather than tiles: the lines of one
// row then stay in cache for the next row, which reads the next element of
// each, as long as the axis contiguous in the other view comes next.
const minRow = 64

// minTiled is the least length of the two axes a tiled copy walks across:
// below it, copyTiled's bookkeeping costs more than strided reads.
const minTiled = 8

// transposeAxis returns a merged axis of st (not the last) along which one
// view is contiguous while the other is contiguous along the last axis, or
// -1 if there is none (or the axes are too short to be worth tiling).
func transposeAxis(st strided) int {
	last := len(st.shape) - 1
	var along int // the view that is not contiguous along the last axis
	switch {
	case st.inner(0) == 1:
		along = 1
	case st.inner(1) == 1:
		along = 0
	default:
		return -1
	}
	if st.shape[last] < 2 {
		return -1
	}
	for ax := last - 1; ax >= 0; ax-- {
		if st.strides[along][ax] == 1 && st.shape[ax] >= minTiled {
			return ax
		}
	}
	return -1
}

// copyTransposed copies float32 views whose last two axes are a transpose
// of each other (one contiguous in each view, as transposeAxis and
// moveToEnd leave them) with gemm.Transpose, 16×16 tiles at a time in
// AVX-512, and reports whether it did (not for other types). A
// Transformer's K (N×T×H×d viewed as N×H×d×T) took 8% of its training
// step in copyTiled's element loop.
func copyTransposed[D, S number](dev *Device, dst []D, src []S, st strided) bool {
	d32, ok := any(dst).([]float32)
	if !ok {
		return false
	}
	s32, ok := any(src).([]float32)
	if !ok || len(st.shape) < 2 {
		return false
	}
	last := len(st.shape) - 1
	m, dm, sm := st.shape[last], st.strides[0][last], st.strides[1][last]
	rows := st.dropLast()
	dk, sk := rows.inner(0), rows.inner(1)
	runs := st.shape[last-1] // the longest run of rows forEachRow hands over
	switch {
	case sm == 1 && dk == 1 && sk >= m && dm >= runs: // a run of n rows: src n×m (stride sk), dst m×n (stride dm)
		rows.forEachRow(dev, m, func() func([]int, int) {
			return func(offs []int, n int) { gemm.Transpose(d32[offs[0]:], dm, s32[offs[1]:], sk, n, m) }
		})
	case dm == 1 && sk == 1 && sm >= runs && dk >= m: // src m×n (stride sm), dst n×m (stride dk)
		rows.forEachRow(dev, m, func() func([]int, int) {
			return func(offs []int, n int) { gemm.Transpose(d32[offs[0]:], dk, s32[offs[1]:], sm, m, n) }
		})
	default:
		return false
	}
	return true
}

// tileElems is about the number of elements copyTiled copies per block.
const tileElems = 1024

// copyTiled copies the views of st, whose last two axes are contiguous in
// one view each and whose last axis is short (under minRow), in blocks of
// about tileElems elements: a band of rows of the second-to-last axis,
// walked along that axis for each element of the last one, so the band's
// cache lines of both views stay in cache. The bands are split across the
// workers.
func copyTiled[D, S number](dev *Device, dst []D, src []S, st strided) {
	last := len(st.shape) - 1
	m, dm, sm := st.shape[last], st.strides[0][last], st.strides[1][last]
	rows := st.dropLast()
	dk, sk := rows.inner(0), rows.inner(1)
	band := max(minTiled, tileElems/m)
	rows.forEachRow(dev, m, func() func([]int, int) {
		return func(offs []int, n int) {
			for j0 := 0; j0 < n; j0 += band {
				nb := min(band, n-j0)
				for i := range m {
					do, so := offs[0]+j0*dk+i*dm, offs[1]+j0*sk+i*sm
					for x := range nb {
						dst[do+x*dk] = D(src[so+x*sk])
					}
				}
			}
		}
	})
}
