// Package winograd holds the transforms of two Winograd convolutions
// (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks",
// 2015), in float32, each a Transform: F2 = F(2×2, 3×3) and F4 = F(4×4,
// 3×3). In F(m×m, 3×3) a 3×3 filter g becomes the p×p matrix U = G·g·Gᵀ
// (p = m+2), a p×p patch d of the input (m output rows and columns plus
// the filter's overlap) becomes V = Bᵀ·d·B, and the m×m outputs of that
// patch are Y = Aᵀ·(U ⊙ V)·A. Summed over input channels, the p²
// elementwise products become p² matrix products (one per position ξ of
// the p×p matrices), which the caller computes with its GEMM: 16
// multiply-adds per 2×2 outputs and channel pair instead of 36 for F2, 36
// per 4×4 outputs instead of 144 for F4. F4 does fewer, but reads 36
// transformed filter matrices to F2's 16 and rounds about ten times as
// much; the caller picks one per convolution.
//
// The input and output transforms work on one row of tiles at a time, the
// tiles along the row being the vector lanes: Input reads the p input rows
// a row of tiles covers and writes each of its p² values per tile to its
// own matrix; Output reads the p² products of a row of tiles and writes
// the m output rows. On amd64 with AVX-512 both run in assembly, 16 tiles
// per step, with the same operations in the same order as the Go code (so
// with the same bits): F2's written by hand (f2_amd64.s), F4's generated
// by gen.go (f4_amd64.s).
package winograd
