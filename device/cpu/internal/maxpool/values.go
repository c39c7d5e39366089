package maxpool

import "fmt"

// Values3s2 pools, without positions, one output row of 3×3 windows with
// stride 2 that lie inside the image across: for j < len(y),
//
//	y[j] = max over r < rows, k < 3 of x[r·ld + 2j + k]
//
// with Go's max (a NaN wins; a -0 and a +0 give +0), from the rows input
// rows (1 to 3: the window's rows inside the image) ld apart, x starting
// at the first window's first column. It panics when x is too short for
// the windows or rows is out of range.
func Values3s2(y, x []float32, ld, rows int) {
	n := len(y)
	if n == 0 {
		return
	}
	if rows < 1 || rows > 3 || ld < 2*n+1 || len(x) < (rows-1)*ld+2*n+1 {
		panic(fmt.Sprintf("maxpool: Values3s2 of %d windows over %d rows %d apart got %d inputs", n, rows, ld, len(x)))
	}
	if haveAsm {
		values3s2AVX512(&y[0], n, &x[0], ld, rows)
		return
	}
	if done := n &^ 7; haveAVX2 && done > 0 {
		values3s2AVX2(&y[0], n, &x[0], ld, rows)
		y, x = y[done:], x[2*done:]
	}
	values3s2Go(y, x, ld, rows)
}

// values3s2Go is Values3s2 in Go.
func values3s2Go(y, x []float32, ld, rows int) {
	for j := range y {
		m := x[2*j]
		for r := range rows {
			w := x[r*ld+2*j : r*ld+2*j+3]
			m = max(m, w[0], w[1], w[2])
		}
		y[j] = m
	}
}
