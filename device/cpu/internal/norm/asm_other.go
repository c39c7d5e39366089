//go:build !amd64 || noasm

package norm

// haveAsm is false: the kernels run in Go.
const haveAsm = false

func gradMask(Act, []float32, []float32) (*float32, float32, float32) {
	panic("norm: no assembly on this platform")
}

func sumAVX512(x *float32, ld, rows, cols int) float64 {
	panic("norm: no assembly on this platform")
}

func sumSqDevAVX512(x *float32, ld, rows, cols int, m float32) float64 {
	panic("norm: no assembly on this platform")
}

func scaleShiftAVX512(y, x *float32, ld, rows, cols int, m, s, b, lo, hi float32) {
	panic("norm: no assembly on this platform")
}

func gradSumsAVX512(dy, out, x *float32, ld, rows, cols, act int, m, lo, hi float32) (sumG, sumGXc float64) {
	panic("norm: no assembly on this platform")
}

func gradApplyAVX512(dx, dy, out, x *float32, ld, rows, cols, act int, k, m, xs, shift, lo, hi float32) {
	panic("norm: no assembly on this platform")
}

// haveAVX2 is false: the kernels run in Go.
const haveAVX2 = false

func sumAVX2(x *float32, ld, rows, cols int) float64 {
	panic("norm: no assembly on this platform")
}

func sumSqDevAVX2(x *float32, ld, rows, cols int, m float32) float64 {
	panic("norm: no assembly on this platform")
}

func scaleShiftAVX2(y, x *float32, ld, rows, cols int, m, s, b, lo, hi float32) {
	panic("norm: no assembly on this platform")
}

func gradSumsAVX2(dy, out, x *float32, ld, rows, cols, act int, m, lo, hi float32) (sumG, sumGXc float64) {
	panic("norm: no assembly on this platform")
}

func gradApplyAVX2(dx, dy, out, x *float32, ld, rows, cols, act int, k, m, xs, shift, lo, hi float32) {
	panic("norm: no assembly on this platform")
}
