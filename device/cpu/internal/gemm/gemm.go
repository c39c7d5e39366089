package gemm

import (
	"fmt"
	"unsafe"

	"github.com/hora-dl/hora/device/cpu/internal/vec"
)

// edgeKernel computes the top-left rows×cols part of an MR×NR tile, as
// microKernel the whole tile, writing nothing else in C.
type edgeKernel func(kc int, a, b, c []float32, ldc int, alpha, beta float32, rows, cols int)

// microKernel computes one MR×NR tile: C[0:MR, 0:NR] = alpha*Ã·B̃ + beta*C,
// where a holds the packed kc×MR micro-panel Ã of op(A) (MR floats per k
// step), b the packed kc×NR micro-panel B̃ of op(B) (NR floats per k step),
// and c the tile's first row, with row stride ldc. With beta == 0, C is not
// read.
type microKernel func(kc int, a, b, c []float32, ldc int, alpha, beta float32)

// kernelInfo describes a micro-kernel and the blocking sizes that go with
// it.
type kernelInfo struct {
	name   string
	mr, nr int // tile of C the micro-kernel computes
	// Blocking: kc is the depth of a packed block (an mr×kc micro-panel of
	// Ã stays in L1 while it is used), nc the number of columns of op(B)
	// packed at once (the kc×nc block B̃ stays in L2), mc the number of rows
	// of op(A) packed at once (the mc×kc block Ã stays in L3). mc is a
	// multiple of mr and nc of nr.
	kc, mc, nc int
	fn         microKernel
	// edge, if not nil, computes edge tiles (fewer than mr rows or nr
	// columns of C left); without it they go through Workspace.tile.
	edge edgeKernel
	// trans packs the micro-panels whose k steps are columns of the source
	// (op(A) of a non-transposed A, op(B) of a transposed B).
	trans packFunc
	// small, if not nil, computes a tile of the small-product path (see
	// useSmall) from unpacked operands; without it every product is packed.
	small smallBandFunc
}

var (
	// kernels lists the micro-kernels usable on this CPU, fastest first.
	kernels = platformKernels()
	// active is the micro-kernel Sgemm uses: kernels[0], except in tests.
	active = kernels[0]
)

// Kernel names the micro-kernel chosen for this CPU: "avx512", "avx2"
// (amd64), "neon" (arm64) or "go".
func Kernel() string { return active.name }

// setKernel makes Sgemm use the named micro-kernel (one of kernels) and
// reports whether it is available. It is for tests, which use it to cover
// every kernel the CPU can run; it must not be called while Sgemm runs.
func setKernel(name string) bool {
	setupBlocking()
	for _, k := range kernels {
		if k.name == name {
			active = k
			return true
		}
	}
	return false
}

// Workspace holds the packing buffers of one goroutine. The zero value is
// ready; it grows on first use and is reused after, so steady-state calls
// allocate nothing. A Workspace must not be used by two goroutines at once.
type Workspace struct {
	a    []float32 // packed mc×kc block of op(A), 64-byte aligned
	b    []float32 // packed kc×nc block of op(B), 64-byte aligned
	tile []float32 // MR×NR result of an edge tile
}

// alignedFloats returns a zeroed slice of n floats whose first element is
// 64-byte (cache-line) aligned.
func alignedFloats(n int) []float32 {
	s := make([]float32, n+16)
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(s)))%64) / 4
	if off != 0 {
		off = 16 - off
	}
	return s[off : off+n : off+n]
}

// reserve makes the buffers hold at least na, nb and nt floats.
func (ws *Workspace) reserve(na, nb, nt int) {
	na += packSlack
	nb += packSlack
	if len(ws.a) < na {
		ws.a = alignedFloats(na)
	}
	if len(ws.b) < nb {
		ws.b = alignedFloats(nb)
	}
	if len(ws.tile) < nt {
		ws.tile = alignedFloats(nt)
	}
}

// Sgemm computes C = alpha*op(A)*op(B) + beta*C on row-major matrices,
// single-threaded (the caller splits work across goroutines). op(A) is m×k
// (A is m×k with row stride lda, or k×m when transA), op(B) is k×n (B k×n
// with ldb, or n×k when transB), C is m×n with row stride ldc. With
// beta == 0, C is not read (it may hold NaN), as in BLAS. m, n or k may be 0
// (k == 0 means C = beta*C).
//
// Products for which packing does not pay (see useSmall) are computed from
// the operands where they are, with the same result to the bit.
//
// As in BLAS, alpha == 0 also means C = beta*C, without reading A and B.
// Leading dimensions must be at least max(1, row length) and the slices long
// enough for the matrices they hold; Sgemm panics otherwise, and on a nil
// Workspace.
func Sgemm(ws *Workspace, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemm(ws, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, Epilogue{})
}

// Epilogue is what SgemmEpilogue applies to C after the product: a bias
// per row and a clamp, C[i][j] = min(max(C[i][j] + Bias[i], Lo), Hi), with
// the operations, in the order, of a separate pass of package vec's
// AddScalarClamp (Lo, Hi = ±Inf for no clamp, 0 and +Inf for a ReLU): a
// convolution's bias and activation.
type Epilogue struct {
	Bias   []float32 // one value per row of C (nil inside the package: no epilogue)
	Lo, Hi float32
}

// SgemmEpilogue is Sgemm followed by the epilogue e on C, applied to each
// tile of C as it is written (while it is in L1) on the small-product path
// (see useSmall), and to each mc×nc block of C after its last k block
// (while it is in L2) on the packed path, rather than in a pass of its
// own. It reports whether it applied e: it does unless k or alpha is 0
// (then it only scales C by beta, and the caller applies e). It panics, as
// Sgemm, on bad arguments, and when e.Bias has fewer than m values.
func SgemmEpilogue(ws *Workspace, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, e Epilogue) bool {
	if len(e.Bias) < m {
		panic(fmt.Sprintf("gemm: SgemmEpilogue with %d biases for %d rows", len(e.Bias), m))
	}
	return sgemm(ws, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, e)
}

// sgemm is Sgemm with an optional epilogue (a nil Bias: none), passed by
// value so that a call allocates nothing; it reports whether it applied the
// epilogue (see SgemmEpilogue).
func sgemm(ws *Workspace, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, e Epilogue) bool {
	checkArgs(ws, transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return true
	}
	if k == 0 || alpha == 0 {
		scale(m, n, beta, c, ldc)
		return false
	}

	setupBlocking()
	kern := active
	if takeSmall(kern, transA, transB, m, n, k, lda, ldb) {
		smallSgemm(ws, kern, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, e)
		return true
	}
	kc, nc := blockSize(k, kern.kc, 1), blockSize(n, kern.nc, kern.nr)
	ws.reserve(blockSize(m, kern.mc, kern.mr)*kc, kc*nc, kern.mr*kern.nr)
	return packedLoop(ws, kern, transA, m, n, k, alpha, a, lda, beta, c, ldc, e, func(pc, jc, kb, nb int) []float32 {
		packB(ws.b, transB, b, ldb, pc, jc, kb, nb, kern.nr, kern.trans)
		return ws.b
	})
}

// packedLoop is the packed path's loop nest: blocks of mc rows of op(A),
// packed into ws (which must hold an mc×kc block and a tile), by blocks of
// kc k steps and of nc columns of op(B), whose packed kb×nb block blockB
// returns, each block of C then computed by macroKernel; the epilogue e (a
// nil Bias: none) goes to each block of C after its last k block, while
// it is in L2. It reports whether it applied e.
func packedLoop(ws *Workspace, kern *kernelInfo, transA bool, m, n, k int, alpha float32, a []float32, lda int, beta float32, c []float32, ldc int, e Epilogue, blockB func(pc, jc, kb, nb int) []float32) bool {
	mr, nr := kern.mr, kern.nr
	kc := blockSize(k, kern.kc, 1)
	mc := blockSize(m, kern.mc, mr)
	nc := blockSize(n, kern.nc, nr)
	for ic := 0; ic < m; ic += mc {
		mb := min(mc, m-ic)
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			packA(ws.a, transA, a, lda, ic, pc, mb, kb, mr, kern.trans)
			bet := beta
			if pc > 0 {
				bet = 1 // later k blocks accumulate onto the first
			}
			last := e.Bias != nil && pc+kb == k
			for jc := 0; jc < n; jc += nc {
				nb := min(nc, n-jc)
				macroKernel(kern, mb, nb, kb, alpha, bet, ws.a, blockB(pc, jc, kb, nb), c[ic*ldc+jc:], ldc, ws.tile)
				if last {
					// The block of C is still in L2.
					for i := range mb {
						row := c[(ic+i)*ldc+jc:][:nb]
						vec.AddScalarClamp(row, row, e.Bias[ic+i], e.Lo, e.Hi)
					}
				}
			}
		}
	}
	return e.Bias != nil
}

// blockSize splits total into the fewest blocks of at most max and returns
// their common size, rounded up to a multiple of unit (max must be one), so
// that the last block is not much smaller than the others.
func blockSize(total, max, unit int) int {
	nblocks := (total + max - 1) / max
	bs := (total + nblocks - 1) / nblocks
	return (bs + unit - 1) / unit * unit
}

// macroKernel computes the mb×nb block of C at the start of c from the
// packed mb×kb block of op(A) in ap and the packed kb×nb block of op(B) in
// bp, one MR×NR tile per micro-kernel call. The loop over the micro-panels
// of Ã is the outer one: each stays in L1 while the micro-panels of B̃
// stream from L2 and the tiles move along the same MR rows of C. Edge tiles
// go to kern.edge, or else are computed into tile and only their valid part
// is written back.
func macroKernel(kern *kernelInfo, mb, nb, kb int, alpha, beta float32, ap, bp, c []float32, ldc int, tile []float32) {
	mr, nr, fn, edge := kern.mr, kern.nr, kern.fn, kern.edge
	for ir := 0; ir < mb; ir += mr {
		mv := min(mr, mb-ir)
		apan := ap[ir*kb : (ir+mr)*kb]
		for jr := 0; jr < nb; jr += nr {
			nv := min(nr, nb-jr)
			bpan := bp[jr*kb : (jr+nr)*kb]
			ct := c[ir*ldc+jr:]
			switch {
			case mv == mr && nv == nr:
				fn(kb, apan, bpan, ct, ldc, alpha, beta)
			case edge != nil:
				edge(kb, apan, bpan, ct, ldc, alpha, beta, mv, nv)
			default:
				fn(kb, apan, bpan, tile, nr, alpha, 0)
				writeTile(ct, ldc, mv, nv, tile, nr, beta)
			}
		}
	}
}

// writeTile stores the top-left mv×nv part of an edge tile (row stride nr,
// already scaled by alpha) into C: C = tile + beta*C, not reading C when
// beta == 0. This is the write-back of the full-tile kernels that use it
// (avx2, go), so edge elements get the same operations as the others.
func writeTile(c []float32, ldc, mv, nv int, tile []float32, nr int, beta float32) {
	for i := range mv {
		t := tile[i*nr : i*nr+nv]
		row := c[i*ldc : i*ldc+nv]
		if beta == 0 {
			copy(row, t)
			continue
		}
		for j, v := range t {
			row[j] = v + float32(beta*row[j]) // no FMA, as the kernels
		}
	}
}

// scale sets C = beta*C for the m×n matrix C, writing zeros when beta == 0
// so that NaNs in C do not survive.
func scale(m, n int, beta float32, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// checkArgs panics with a message naming the offending argument when the
// arguments of Sgemm are inconsistent.
func checkArgs(ws *Workspace, transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if ws == nil {
		panic("gemm: nil *Workspace")
	}
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative dimension: m = %d, n = %d, k = %d", m, n, k))
	}
	ra, ca := m, k // rows and columns of A as stored
	if transA {
		ra, ca = k, m
	}
	rb, cb := k, n
	if transB {
		rb, cb = n, k
	}
	checkMatrix("A", "a", "lda", transA, ra, ca, a, lda)
	checkMatrix("B", "b", "ldb", transB, rb, cb, b, ldb)
	checkMatrix("C", "c", "ldc", false, m, n, c, ldc)
}

// checkMatrix checks that s, with leading dimension ld, can hold a rows×cols
// row-major matrix.
func checkMatrix(name, slice, ldName string, trans bool, rows, cols int, s []float32, ld int) {
	shape := func() string {
		if trans {
			return fmt.Sprintf("%s is %d×%d (transposed)", name, rows, cols)
		}
		return fmt.Sprintf("%s is %d×%d", name, rows, cols)
	}
	if ld < max(1, cols) {
		panic(fmt.Sprintf("gemm: %s = %d < max(1, %d): %s, so its row stride must be at least %d", ldName, ld, cols, shape(), max(1, cols)))
	}
	if rows == 0 || cols == 0 {
		return
	}
	if need := (rows-1)*ld + cols; len(s) < need {
		panic(fmt.Sprintf("gemm: len(%s) = %d < %d: %s with %s = %d needs (%d-1)*%d+%d elements", slice, len(s), need, shape(), ldName, ld, rows, ld, cols))
	}
}
