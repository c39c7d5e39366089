// Package gemm is a pure-Go single-precision matrix product (SGEMM) with
// assembly micro-kernels for amd64: the fallback of the CPU backend when no
// BLAS library can be loaded at run time.
//
// Sgemm computes C = alpha*op(A)*op(B) + beta*C on row-major matrices, with
// the argument convention of CBLAS row-major (and gonum's blas.Float32). It
// is single-threaded: the caller splits C between goroutines, each with its
// own Workspace. Smallest use:
//
//	var ws gemm.Workspace // zero value ready; one per goroutine, reused
//	// C (2×2) = A (2×3) · B (3×2)
//	a := []float32{1, 2, 3, 4, 5, 6}
//	b := []float32{1, 0, 0, 1, 1, 1}
//	c := make([]float32, 4)
//	gemm.Sgemm(&ws, false, false, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2)
//	// c == [4 5 10 11]
//
// # Algorithm
//
// The classic Goto/BLIS scheme. C is computed in tiles of MR×NR elements by
// a micro-kernel that keeps the tile in vector registers and performs kc
// rank-1 updates with FMA: for each k step it loads NR floats of op(B) and
// multiplies them by each of MR broadcast floats of op(A). The operands are
// first packed, so that the micro-kernel reads them sequentially:
//
//   - op(A) into micro-panels Ã of MR rows × kc, stored k step after k step
//     (MR floats per step), zero-padded below the last row;
//   - op(B) into micro-panels B̃ of kc × NR columns (NR floats per step),
//     zero-padded right of the last column.
//
// Packing also absorbs the transpositions: depending on transA/transB a
// k step is a piece of a row of the source (copied) or of a column (a
// transposition, done 16×16 in registers with AVX-512).
//
// Blocking, outermost first:
//
//	for ic over m in blocks of mc:
//	  for pc over k in blocks of kc:       pack Ã = op(A)[ic:+mc, pc:+kc] (stays in L3)
//	    for jc over n in blocks of nc:     pack B̃ = op(B)[pc:+kc, jc:+nc] (stays in L2)
//	      for ir over mc in steps of MR:   one micro-panel of Ã (stays in L1)
//	        for jr over nc in steps of NR: micro-kernel on the tile C[ir:+MR, jr:+NR]
//
// The first k block applies beta, the following ones accumulate (beta = 1);
// alpha and beta are applied when the tile is written back, and with
// beta == 0 C is never read. Block sizes are split evenly (k = 400 gives two
// blocks of 200, not 384 + 16).
//
// Edge tiles (fewer than MR rows or NR columns left) use the same packed
// layout: the AVX-512 kernels write only the valid columns (masked stores)
// and have 8-, 4-, 2- and 1-row variants for the last rows; the other
// kernels compute the full tile into the Workspace and copy its valid part.
//
// # Kernels
//
// Kernel reports the one chosen at start-up from the CPU's features
// (golang.org/x/sys/cpu):
//
//   - "avx512": 14×32 tile in 28 zmm accumulators (two zmm of B̃ per step,
//     14 broadcasts of Ã), kc = 384, nc = 384, mc = 4096;
//   - "avx2": 6×16 tile in 12 ymm accumulators (AVX2 and FMA);
//   - "go": a 4×4 tile in pure Go, the only kernel on other architectures
//     or with the noasm build tag.
//
// Every element of C goes through the same floating-point operations,
// whatever m and n, its position in C and the tile shape that computed it,
// so splitting C between goroutines, by rows or by columns, does not change
// the result by a single bit (for a given kernel and k).
package gemm
