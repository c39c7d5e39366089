package maxpool

import "fmt"

// lanes is the number of windows the assembly pools per step.
const lanes = 16

// Plane2x2 pools the 2×2 windows of an input plane x (rows w wide; a last
// odd row or column is left out) into y (oh×ow, ow ≤ w/2, oh·2 rows of x)
// and stores in arg the plane position of each window's maximum: y[i·ow+j]
// is the largest of the window's four values, and arg[i·ow+j] the first
// position (in row-major window order) holding it. A NaN wins (the first
// NaN); a -0 and a +0 give +0, at the first position equal to it. Plane2x2
// panics when the buffers are too short.
func Plane2x2(y []float32, arg []int64, x []float32, oh, ow, w int) {
	if oh < 0 || ow < 0 || 2*ow > w || len(y) < oh*ow || len(arg) < oh*ow || len(x) < 2*oh*w {
		panic(fmt.Sprintf("maxpool: Plane2x2 of %d×%d windows over rows of %d got %d outputs, %d positions and %d inputs", oh, ow, w, len(y), len(arg), len(x)))
	}
	for i, j := 0, 0; i < oh; {
		if haveAsm {
			// It stops at the end or before a step holding a NaN.
			if i, j = plane2x2AVX512(y, arg, x, oh, ow, w, i, j); i == oh {
				return
			}
		}
		end := min(j+lanes, ow)
		r0, r1 := x[2*i*w:], x[(2*i+1)*w:]
		row2x2Go(y[i*ow+j:i*ow+end], arg[i*ow+j:i*ow+end], r0[2*j:2*end], r1[2*j:2*end], int64(2*i*w+2*j), int64(w))
		if j = end; j == ow {
			i, j = i+1, 0
		}
	}
}

// row2x2Go pools one row of windows in Go: r0 and r1 are its two input
// rows from the first window on, at plane position base, w apart. The
// first position holding each maximum is chosen with conditional moves
// rather than branches that depend on the data (on real activations those
// are mispredicted about half the time).
func row2x2Go(y []float32, arg []int64, r0, r1 []float32, base, w int64) {
	for j := range y {
		a, b, c, d := r0[2*j], r0[2*j+1], r1[2*j], r1[2*j+1]
		m := max(max(a, b), max(c, d))
		k := w + 1
		if c == m {
			k = w
		}
		if b == m {
			k = 1
		}
		if a == m {
			k = 0
		}
		if m != m { // a NaN (rare, so predictable): the first NaN wins
			k = firstNaN(a, b, c, w)
		}
		y[j], arg[j] = m, base+int64(2*j)+k
	}
}

// firstNaN returns the offset in its 2×2 window (0, 1, w or w+1) of the
// first NaN among a, b, c and the last value.
func firstNaN(a, b, c float32, w int64) int64 {
	switch {
	case a != a:
		return 0
	case b != b:
		return 1
	case c != c:
		return w
	}
	return w + 1
}
