//go:build !amd64 || noasm

package gemm

// transposeTiles is the vector tile transpose of Transpose (AVX-512 or
// AVX2), which this build does not have.
var transposeTiles func(dst *float32, ldd int, src *float32, lds, chunks int)
