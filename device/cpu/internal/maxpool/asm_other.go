//go:build !amd64 || noasm

package maxpool

// haveAsm is false: the kernels run in Go.
const haveAsm = false

// haveAVX2 is false: Values3s2 runs in Go.
const haveAVX2 = false

func plane2x2AVX512(y []float32, arg []int64, x []float32, oh, ow, w, i, j int) (int, int) {
	panic("maxpool: no assembly on this platform")
}

func values3s2AVX512(y *float32, n int, x *float32, ld, rows int) {
	panic("maxpool: no assembly on this platform")
}

func values3s2AVX2(y *float32, n int, x *float32, ld, rows int) {
	panic("maxpool: no assembly on this platform")
}
