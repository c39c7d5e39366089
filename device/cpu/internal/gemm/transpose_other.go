//go:build !amd64 || noasm

package gemm

// transposeTiles is the AVX-512 tile transpose of Transpose, which this
// build does not have.
var transposeTiles func(dst *float32, ldd int, src *float32, lds, chunks int)
