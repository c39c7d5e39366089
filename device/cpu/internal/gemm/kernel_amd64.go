//go:build amd64 && !noasm

package gemm

import "golang.org/x/sys/cpu"

// The AVX-512 micro-kernels (kernel_amd64.s) compute alpha*Ã·B̃ + beta*C,
// not reading C when beta == 0, for a 14×32 tile of C at c (row stride ldc
// floats), with a the packed kc×14 micro-panel Ã of op(A) and b the packed
// kc×32 micro-panel B̃ of op(B): kernelAVX512x14 all 14 rows, x8, x4, x2 and
// x1 the first 8, 4, 2 or 1 of them (a still advancing by 14 floats per k
// step). Only the columns whose bit is set in mask, and the first rows rows
// (1 <= rows <= the kernel's height), are read or written. Every element is
// computed with the same operations in the same order by all five.

//go:noescape
func kernelAVX512x14(kc int, a, b, c *float32, ldc int, alpha, beta float32, mask uint32, rows int)

//go:noescape
func kernelAVX512x8(kc int, a, b, c *float32, ldc int, alpha, beta float32, mask uint32, rows int)

//go:noescape
func kernelAVX512x4(kc int, a, b, c *float32, ldc int, alpha, beta float32, mask uint32, rows int)

//go:noescape
func kernelAVX512x2(kc int, a, b, c *float32, ldc int, alpha, beta float32, mask uint32, rows int)

//go:noescape
func kernelAVX512x1(kc int, a, b, c *float32, ldc int, alpha, beta float32, mask uint32, rows int)

// kernelAVX2 is the 6×16 AVX2+FMA micro-kernel, with kernelAVX512's contract.
//
//go:noescape
func kernelAVX2(kc int, a, b, c *float32, ldc int, alpha, beta float32)

// asmKernel wraps an assembly micro-kernel for a full mr×nr tile into a
// microKernel, checking the slice lengths first so that the assembly never
// touches memory outside the slices it is given.
func asmKernel(mr, nr int, f func(kc int, a, b, c *float32, ldc int, alpha, beta float32)) microKernel {
	return func(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
		if kc <= 0 || len(a) < kc*mr || len(b) < kc*nr || ldc < nr || len(c) < (mr-1)*ldc+nr {
			panic("gemm: internal error: micro-kernel called with short slices")
		}
		f(kc, &a[0], &b[0], &c[0], ldc, alpha, beta)
	}
}

// kernelAVX512 computes a full 14×32 tile.
func kernelAVX512(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
	if kc <= 0 || len(a) < kc*14 || len(b) < kc*32 || ldc < 32 || len(c) < 13*ldc+32 {
		panic("gemm: internal error: micro-kernel called with short slices")
	}
	kernelAVX512x14(kc, &a[0], &b[0], &c[0], ldc, alpha, beta, 0xffffffff, 14)
}

// edgeAVX512 computes the top-left rows×cols part of a 14×32 tile, the
// columns masked. The rows go to the 8-, 4-, 2- and 1-row kernels (binary
// decomposition) unless that costs as much as the 14-row kernel: with one
// FMA chain per accumulator, 4 rows or fewer run at the speed of 4 (the FMA
// latency, not the throughput, is the limit), so 11 = 8+2+1 rows cost as much
// as 8+4+4 = 16 rows.
func edgeAVX512(kc int, a, b, c []float32, ldc int, alpha, beta float32, rows, cols int) {
	if kc <= 0 || rows < 1 || rows > 14 || cols < 1 || cols > 32 ||
		len(a) < kc*14 || len(b) < kc*32 || ldc < cols || len(c) < (rows-1)*ldc+cols {
		panic("gemm: internal error: edge micro-kernel called with bad arguments")
	}
	mask := uint32(1)<<cols - 1
	if cols == 32 {
		mask = 0xffffffff
	}
	cost := 0
	for h := 8; h >= 1; h /= 2 {
		if rows&h != 0 {
			cost += max(h, 4)
		}
	}
	if cost >= 14 {
		kernelAVX512x14(kc, &a[0], &b[0], &c[0], ldc, alpha, beta, mask, rows)
		return
	}
	i := 0
	if rows&8 != 0 {
		kernelAVX512x8(kc, &a[i], &b[0], &c[i*ldc], ldc, alpha, beta, mask, 8)
		i += 8
	}
	if rows&4 != 0 {
		kernelAVX512x4(kc, &a[i], &b[0], &c[i*ldc], ldc, alpha, beta, mask, 4)
		i += 4
	}
	if rows&2 != 0 {
		kernelAVX512x2(kc, &a[i], &b[0], &c[i*ldc], ldc, alpha, beta, mask, 2)
		i += 2
	}
	if rows&1 != 0 {
		kernelAVX512x1(kc, &a[i], &b[0], &c[i*ldc], ldc, alpha, beta, mask, 1)
	}
}

// platformKernels lists the micro-kernels this CPU can run, fastest first.
func platformKernels() []*kernelInfo {
	var ks []*kernelInfo
	if cpu.X86.HasAVX512F {
		ks = append(ks, &kernelInfo{
			name: "avx512", mr: 14, nr: 32,
			kc: 384, mc: 4096, nc: 384,
			fn:    kernelAVX512,
			edge:  edgeAVX512,
			trans: packTransAVX512,
			small: smallBandAVX512,
		})
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, &kernelInfo{
			name: "avx2", mr: 6, nr: 16,
			kc: 384, mc: 4096, nc: 256,
			fn:    asmKernel(6, 16, kernelAVX2),
			trans: packTransAVX2,
			small: smallBandAVX2,
		})
	}
	return append(ks, goKernelInfo())
}
