//go:build amd64 && !noasm

package gemm

//go:generate go run gen_small.go

// smallKernelAVX512 is the signature of the kernels of small_amd64.s.
type smallKernelAVX512 func(kc int, a *float32, ars, aks int, b *float32, bks int, c *float32, ldc int, alpha, beta float32, mask uint32, bias *float32, lo, hi float32)

// smallTileAVX512 is the smallTileFunc of the AVX-512 kernel: a tile of up
// to 14×32 in one call of the kernel of its height (op(A) is not padded:
// only its rows may be read), 16 columns wide when cols <= 16. The slice
// lengths are checked first, so that the assembly reads and writes only
// inside them.
func smallTileAVX512(kc int, a []float32, ars, aks int, b []float32, bks int, c []float32, ldc int, alpha, beta float32, rows, cols int, e Epilogue) {
	if kc <= 0 || rows < 1 || rows > 14 || cols < 1 || cols > 32 || ars < 1 || aks < 1 || bks < cols || ldc < cols ||
		len(a) < (rows-1)*ars+(kc-1)*aks+1 || len(b) < (kc-1)*bks+cols || len(c) < (rows-1)*ldc+cols ||
		(e.Bias != nil && len(e.Bias) < rows) {
		panic("gemm: internal error: small kernel called with bad arguments")
	}
	var bias *float32
	var lo, hi float32
	if e.Bias != nil {
		bias, lo, hi = &e.Bias[0], e.Lo, e.Hi
	}
	if cols <= 16 {
		smallW16[rows](kc, &a[0], ars, aks, &b[0], bks, &c[0], ldc, alpha, beta, uint32(1)<<cols-1, bias, lo, hi)
		return
	}
	mask := uint32(1)<<cols - 1
	if cols == 32 {
		mask = 0xffffffff
	}
	smallW32[rows](kc, &a[0], ars, aks, &b[0], bks, &c[0], ldc, alpha, beta, mask, bias, lo, hi)
}
