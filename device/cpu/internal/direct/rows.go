package direct

import "fmt"

// CopyRows copies rows rows of cols values from src (rows lds apart) to
// dst (rows ldd apart), leaving the rest of dst as it is: a strided copy
// in one call instead of one per row. It panics when dst or src is too
// short, or a row is longer than its stride.
func CopyRows(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	copyRows(dst, ldd, src, lds, rows, cols, false)
}

// PadRows is CopyRows that also zeroes what lies between two copied rows
// of dst (dst[r·ldd+cols : (r+1)·ldd] for r < rows-1): it lays a plane
// out with zero padding between its rows.
func PadRows(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	copyRows(dst, ldd, src, lds, rows, cols, true)
}

func copyRows(dst []float32, ldd int, src []float32, lds, rows, cols int, zeroGaps bool) {
	if rows <= 0 || cols <= 0 {
		return
	}
	if cols > ldd || cols > lds || len(dst) < (rows-1)*ldd+cols || len(src) < (rows-1)*lds+cols {
		panic(fmt.Sprintf("direct: copy of %d rows of %d values from %d values (rows %d apart) to %d values (rows %d apart)", rows, cols, len(src), lds, len(dst), ldd))
	}
	if haveAsm {
		zero := 0
		if zeroGaps {
			zero = 1
		}
		copyRowsAVX512(&dst[0], ldd, &src[0], lds, rows, cols, zero)
		return
	}
	if haveAVX2 && cols >= 4 {
		zero := 0
		if zeroGaps {
			zero = 1
		}
		if cols >= 8 {
			copyRowsAVX2(&dst[0], ldd, &src[0], lds, rows, cols, zero)
		} else {
			copyRows4AVX2(&dst[0], ldd, &src[0], lds, rows, cols, zero)
		}
		return
	}
	copyRowsGo(dst, ldd, src, lds, rows, cols, zeroGaps)
}

// CopyRowsBiasClamp sets dst[r·ldd + i] = min(max(src[r·lds + i] + bias,
// lo), hi) for rows rows of cols values: the copy of a block of outputs
// out of a scratch buffer with its bias and activation (lo, hi = ±Inf for
// none, 0 and +Inf for ReLU, 0 and 6 for ReLU6; NaN stays NaN, -0 stays
// -0), in one call instead of one per row. It panics when dst or src is
// too short, or a row is longer than its stride.
func CopyRowsBiasClamp(dst []float32, ldd int, src []float32, lds, rows, cols int, bias, lo, hi float32) {
	if rows <= 0 || cols <= 0 {
		return
	}
	if cols > ldd || cols > lds || len(dst) < (rows-1)*ldd+cols || len(src) < (rows-1)*lds+cols {
		panic(fmt.Sprintf("direct: CopyRowsBiasClamp of %d rows of %d values from %d values (rows %d apart) to %d values (rows %d apart)", rows, cols, len(src), lds, len(dst), ldd))
	}
	if haveAVX2 && cols >= 8 {
		copyRowsBiasClampAVX2(&dst[0], ldd, &src[0], lds, rows, cols, bias, lo, hi)
		return
	}
	for r := range rows {
		d, s := dst[r*ldd:r*ldd+cols], src[r*lds:r*lds+cols]
		for i, v := range s {
			d[i] = clamp(v+bias, lo, hi)
		}
	}
}

// copyRowsGo is copyRows in Go.
func copyRowsGo(dst []float32, ldd int, src []float32, lds, rows, cols int, zeroGaps bool) {
	for r := range rows {
		copy(dst[r*ldd:r*ldd+cols], src[r*lds:r*lds+cols])
		if zeroGaps && r < rows-1 {
			clear(dst[r*ldd+cols : (r+1)*ldd])
		}
	}
}

// SplitColumns splits rows rows of cols values of src (rows lds apart)
// into their even and odd columns: even[r·lde+k] = src[r·lds+2k] for
// k < (cols+1)/2 and odd[r·ldo+k] = src[r·lds+2k+1] for k < cols/2, the
// two column phases of a stride-2 convolution's input. Nothing else of
// even and odd is written. It panics when a slice is too short or a row
// longer than its stride.
func SplitColumns(even []float32, lde int, odd []float32, ldo int, src []float32, lds, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	ne, no := (cols+1)/2, cols/2
	if ne > lde || (no > 0 && no > ldo) || cols > lds || len(even) < (rows-1)*lde+ne ||
		(no > 0 && len(odd) < (rows-1)*ldo+no) || len(src) < (rows-1)*lds+cols {
		panic(fmt.Sprintf("direct: SplitColumns of %d rows of %d values from %d values (rows %d apart) to %d and %d values (rows %d and %d apart)",
			rows, cols, len(src), lds, len(even), len(odd), lde, ldo))
	}
	if haveAsm {
		oddStart := &even[0] // any valid pointer: no odd column is written when cols == 1
		if no > 0 {
			oddStart = &odd[0]
		}
		splitColumnsAVX512(&even[0], lde, oddStart, ldo, &src[0], lds, rows, cols)
		return
	}
	if haveAVX2 && cols >= 8 {
		chunks := cols / 16
		splitColumnsAVX2(&even[0], lde, &odd[0], ldo, &src[0], lds, rows, chunks)
		// The rest in steps of 16 or 8 values that end at most one value
		// before the row's end, each from an even column, rewriting values
		// an earlier step wrote (ResNet's 14- and 28-wide rows: 8+8 and
		// 16+16).
		done := 16 * chunks
		for done < cols-1 {
			if cols >= 16 {
				at := (cols - 16) &^ 1
				splitColumnsAVX2(&even[at/2], lde, &odd[at/2], ldo, &src[at], lds, rows, 1)
				done = at + 16
			} else {
				at := min(done, (cols-8)&^1)
				splitColumns8AVX2(&even[at/2], lde, &odd[at/2], ldo, &src[at], lds, rows)
				done = at + 8
			}
		}
		if done < cols { // an odd row's last value, an even column
			for r := range rows {
				even[r*lde+done/2] = src[r*lds+done]
			}
		}
		return
	}
	splitColumnsGo(even, lde, odd, ldo, src, lds, rows, cols)
}

// splitColumnsGo is SplitColumns in Go.
func splitColumnsGo(even []float32, lde int, odd []float32, ldo int, src []float32, lds, rows, cols int) {
	for r := range rows {
		row := src[r*lds : r*lds+cols]
		e := even[r*lde:]
		for k := 0; 2*k < cols; k++ {
			e[k] = row[2*k]
		}
		if cols > 1 {
			o := odd[r*ldo:]
			for k := 0; 2*k+1 < cols; k++ {
				o[k] = row[2*k+1]
			}
		}
	}
}

// AddRows adds rows rows of cols values of src (rows lds apart) to dst
// (rows ldd apart): dst[r·ldd + i] += src[r·lds + i]. It panics when dst
// or src is too short, or a row is longer than its stride.
func AddRows(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	if cols > ldd || cols > lds || len(dst) < (rows-1)*ldd+cols || len(src) < (rows-1)*lds+cols {
		panic(fmt.Sprintf("direct: AddRows of %d rows of %d values from %d values (rows %d apart) to %d values (rows %d apart)", rows, cols, len(src), lds, len(dst), ldd))
	}
	if haveAsm {
		addRowsAVX512(&dst[0], ldd, &src[0], lds, rows, cols)
		return
	}
	if haveAVX2 {
		addRowsAVX2(&dst[0], ldd, &src[0], lds, rows, cols)
		return
	}
	for r := range rows {
		d, s := dst[r*ldd:][:cols], src[r*lds:][:cols]
		for i, v := range s {
			d[i] += v
		}
	}
}

// MergeColumns is SplitColumns backwards: for rows rows of cols values
// of dst (rows ldd apart), dst[r·ldd+2k] = even[r·lde+k] and
// dst[r·ldd+2k+1] = odd[r·ldo+k]. Nothing else of dst is written. It
// panics when a slice is too short or a row longer than its stride.
func MergeColumns(dst []float32, ldd int, even []float32, lde int, odd []float32, ldo int, rows, cols int) {
	mergeColumns(dst, ldd, even, lde, odd, ldo, rows, cols, false)
}

// MergeColumnsAdd is MergeColumns adding to dst: dst[r·ldd+2k] +=
// even[r·lde+k] and dst[r·ldd+2k+1] += odd[r·ldo+k].
func MergeColumnsAdd(dst []float32, ldd int, even []float32, lde int, odd []float32, ldo int, rows, cols int) {
	mergeColumns(dst, ldd, even, lde, odd, ldo, rows, cols, true)
}

// mergeColumns is MergeColumnsAdd when add is set, else MergeColumns.
func mergeColumns(dst []float32, ldd int, even []float32, lde int, odd []float32, ldo int, rows, cols int, add bool) {
	if rows <= 0 || cols <= 0 {
		return
	}
	ne, no := (cols+1)/2, cols/2
	if ne > lde || (no > 0 && no > ldo) || cols > ldd || len(even) < (rows-1)*lde+ne ||
		(no > 0 && len(odd) < (rows-1)*ldo+no) || len(dst) < (rows-1)*ldd+cols {
		panic(fmt.Sprintf("direct: MergeColumns of %d rows of %d values from %d and %d values (rows %d and %d apart) to %d values (rows %d apart)",
			rows, cols, len(even), len(odd), lde, ldo, len(dst), ldd))
	}
	if haveAsm {
		oddStart := &even[0] // any valid pointer: no odd column is read when cols == 1
		if no > 0 {
			oddStart = &odd[0]
		}
		addFlag := 0
		if add {
			addFlag = 1
		}
		mergeColumnsAVX512(&dst[0], ldd, &even[0], lde, oddStart, ldo, rows, cols, addFlag)
		return
	}
	k0 := 0 // the pairs of columns before k0 are done
	if add && haveAVX2 && no >= 4 {
		// Steps of 8 and 4 pairs; the last pairs and an odd row's last
		// value below.
		k0 = no / 4 * 4
		mergeColumnsAddAVX2(&dst[0], ldd, &even[0], lde, &odd[0], ldo, rows, k0)
	}
	for r := range rows {
		row := dst[r*ldd:][:cols]
		for j := 2 * k0; j < cols; j++ {
			v := even[r*lde+j/2]
			if j%2 == 1 {
				v = odd[r*ldo+j/2]
			}
			if add {
				row[j] += v
			} else {
				row[j] = v
			}
		}
	}
}
