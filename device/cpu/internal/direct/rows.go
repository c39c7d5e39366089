package direct

import "fmt"

// CopyRows copies rows rows of cols values from src (rows lds apart) to
// dst (rows ldd apart) and zeroes what lies between two copied rows of
// dst (dst[r·ldd+cols : (r+1)·ldd] for r < rows-1): the copy that lays a
// plane out with zero padding between its rows, or packs padded rows
// back, in one call instead of one per row. It panics when dst or src is
// too short, or a row is longer than its stride.
func CopyRows(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	if cols > ldd || cols > lds || len(dst) < (rows-1)*ldd+cols || len(src) < (rows-1)*lds+cols {
		panic(fmt.Sprintf("direct: CopyRows of %d rows of %d values from %d values (rows %d apart) to %d values (rows %d apart)", rows, cols, len(src), lds, len(dst), ldd))
	}
	if haveAsm {
		copyRowsAVX512(&dst[0], ldd, &src[0], lds, rows, cols)
		return
	}
	copyRowsGo(dst, ldd, src, lds, rows, cols)
}

// copyRowsGo is CopyRows in Go.
func copyRowsGo(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	for r := range rows {
		copy(dst[r*ldd:r*ldd+cols], src[r*lds:r*lds+cols])
		if r < rows-1 {
			clear(dst[r*ldd+cols : (r+1)*ldd])
		}
	}
}
