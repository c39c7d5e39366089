//go:build arm64 && !noasm

package gemm

// neon8x12 (kernel_arm64.s) sets acc (96 floats, row-major) to Ã·B̃ for an
// 8×12 tile, with a the packed kc×8 micro-panel Ã of op(A) and b the packed
// kc×12 micro-panel B̃ of op(B), kc > 0. NEON (Advanced SIMD) is part of
// every arm64 processor.
//
//go:noescape
func neon8x12(kc int, a, b, acc *float32)

// platformKernels lists the micro-kernels available on arm64: the NEON one
// first, then the pure-Go one (for tests).
func platformKernels() []*kernelInfo {
	return []*kernelInfo{neonKernelInfo(), goKernelInfo()}
}

// neonKernelInfo describes the 8×12 NEON micro-kernel: 24 of the 32 vector
// registers accumulate the tile, 3 hold a k step of B̃ and 5 the
// replicated values of Ã. Its speed has been measured on no arm64
// machine yet (its tests run under qemu-user); the blocks are derived
// from the cache sizes like the others'.
func neonKernelInfo() *kernelInfo {
	return &kernelInfo{
		name: "neon", mr: 8, nr: 12,
		kc: 256, mc: 4096, nc: 240,
		fn:    kernelNEON,
		trans: packTrans,
	}
}

// kernelNEON computes a full 8×12 tile: the assembly's sums, then
// C = alpha·sum + beta·C in Go with writeTile's roundings (the product by
// alpha and by beta each rounded), so that full tiles and edge tiles (which
// go through Workspace.tile and writeTile) get the same operations.
func kernelNEON(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
	if kc <= 0 || len(a) < kc*8 || len(b) < kc*12 || ldc < 12 || len(c) < 7*ldc+12 {
		panic("gemm: internal error: micro-kernel called with short slices")
	}
	var acc [8 * 12]float32
	neon8x12(kc, &a[0], &b[0], &acc[0])
	for i := range 8 {
		row, sum := c[i*ldc:i*ldc+12], acc[i*12:i*12+12]
		for j, s := range sum {
			v := float32(alpha * s)
			if beta != 0 {
				v += float32(beta * row[j])
			}
			row[j] = v
		}
	}
}
