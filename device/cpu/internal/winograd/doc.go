// Package winograd holds the transforms of the Winograd F(2×2, 3×3)
// convolution (Lavin and Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2015), in float32: a 3×3 filter g becomes the 4×4 matrix
// U = G·g·Gᵀ, a 4×4 patch d of the input (two output rows and columns plus
// the filter's overlap) becomes V = Bᵀ·d·B, and the 2×2 outputs of that
// patch are Y = Aᵀ·(U ⊙ V)·A. Summed over input channels, the 16
// elementwise products become 16 matrix products (one per position ξ of the
// 4×4 matrices), which the caller computes with its GEMM: 16 multiply-adds
// per 2×2 outputs and channel pair instead of 36.
//
//	    ⎡1   0   0⎤        ⎡1  0 -1  0⎤        ⎡1  1  1  0⎤
//	G = ⎢½   ½   ½⎥   Bᵀ = ⎢0  1  1  0⎥   Aᵀ = ⎣0  1 -1 -1⎦
//	    ⎢½  -½   ½⎥        ⎢0 -1  1  0⎥
//	    ⎣0   0   1⎦        ⎣0  1  0 -1⎦
//
// The input and output transforms work on one row of tiles at a time, the
// tiles along the row being the vector lanes: Input reads the four input
// rows a row of tiles covers and writes each of its 16 values per tile to
// its own matrix; Output reads the 16 products of a row of tiles and writes
// the two output rows. On amd64 with AVX-512 both run in assembly, 16 tiles
// per step, with the same operations in the same order as the Go code (so
// with the same bits).
package winograd
