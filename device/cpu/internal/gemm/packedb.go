package gemm

import "fmt"

// Products with op(B) packed once. A Linear layer's weight at inference
// never changes, yet every call would copy it into micro-panels (the
// packed path) or read it with a stride of a row (the small path: a GEMV
// over a 1280×1000 weight read each k step 4 KB further on, 1.7× slower
// than from panels). PackB lays the whole of op(B) out once in the panels
// both paths read, and SgemmPackedB reads them in place.
//
// The layout, for the active kernel's nr and the k blocks kc that the
// product splits k into (blockSize(k, kc, 1)): k block after k block, each
// holding the kb×nr micro-panels of all n columns side by side, panel j/nr
// at j·kb floats from the block's start, its last panel zero-padded. Each
// block is the packed path's B̃ for every nc columns at once, and the
// small path's packSmallB copy of a transposed B.

// PackedBSize returns the number of floats PackB writes for a k×n op(B)
// with the active kernel (with the slack a packing routine may write past
// its last panel).
func PackedBSize(k, n int) int {
	setupBlocking()
	nr := active.nr
	return k*((n+nr-1)/nr*nr) + packSlack
}

// PanelWidth is the number of columns of op(B) in one micro-panel of the
// active kernel: SgemmPackedB's column ranges start at multiples of it.
func PanelWidth() int {
	setupBlocking()
	return active.nr
}

// PackB packs op(B) (k×n: B is k×n with row stride ldb, or n×k when
// transB) into dst, which must hold PackedBSize(k, n) floats.
func PackB(dst []float32, transB bool, b []float32, ldb, k, n int) {
	packColumns("PackB", dst, transB, b, ldb, k, n, 0, n)
}

// PackBColumns is PackB for the columns [j0, j1) of op(B) alone (j0 a
// multiple of PanelWidth, j1 at most n), written where PackB puts them in
// dst: workers that each pack some panels fill one packed op(B) together,
// at the same time, since it writes nothing outside those panels (op(B)'s
// panels of 16 or 32 columns take whole vectors: no packer writes slack
// past them, as packTransAVX512 does past the 14-row panels of op(A)).
func PackBColumns(dst []float32, transB bool, b []float32, ldb, k, n, j0, j1 int) {
	packColumns("PackBColumns", dst, transB, b, ldb, k, n, j0, j1)
}

// packColumns is PackBColumns, its panics naming op.
func packColumns(op string, dst []float32, transB bool, b []float32, ldb, k, n, j0, j1 int) {
	setupBlocking()
	kern := active
	if k < 0 || n < 0 {
		panic(fmt.Sprintf("gemm: %s of a %d×%d op(B)", op, k, n))
	}
	if j0 < 0 || j1 > n || j0 > j1 || j0%kern.nr != 0 {
		panic(fmt.Sprintf("gemm: %s of columns [%d, %d) of a %d×%d op(B) (panels of %d)", op, j0, j1, k, n, kern.nr))
	}
	if len(dst) < PackedBSize(k, n) {
		panic(fmt.Sprintf("gemm: %s of a %d×%d op(B) into %d floats, need %d", op, k, n, len(dst), PackedBSize(k, n)))
	}
	rb, cb := k, n
	if transB {
		rb, cb = n, k
	}
	checkMatrix("B", "b", "ldb", transB, rb, cb, b, ldb)
	if k == 0 || j0 == j1 {
		return
	}
	kc := blockSize(k, kern.kc, 1)
	for pc := 0; pc < k; pc += kc {
		// A block's slack lands on the next block, packed after it.
		kb := min(kc, k-pc)
		packB(dst[packedBlock(pc, n, kern.nr)+j0*kb:], transB, b, ldb, pc, j0, kb, j1-j0, kern.nr, kern.trans)
	}
}

// packedBlock returns the offset in a packed op(B) of n columns of the k
// block starting at row pc: the blocks before it hold pc rows of panels.
func packedBlock(pc, n, nr int) int {
	return pc * ((n + nr - 1) / nr * nr)
}

// SgemmPackedB computes columns [j0, j1) of C = alpha*op(A)·op(B) + beta*C,
// op(B) being the k×n matrix PackB packed into pb, then the epilogue e (a
// nil Bias: none) on them; c is C's first row (row stride ldc), not offset
// by j0, and j0 a multiple of PanelWidth. The result is Sgemm's (and
// SgemmEpilogue's) to the bit: the same kernels read the same panels. It
// reports whether it applied e (it does unless alpha is 0). Single
// threaded, like Sgemm; ws holds the packed blocks of op(A) of the packed
// path.
func SgemmPackedB(ws *Workspace, transA bool, m, n, k, j0, j1 int, alpha float32, a []float32, lda int, pb []float32, beta float32, c []float32, ldc int, e Epilogue) bool {
	setupBlocking()
	kern := active
	nr := kern.nr
	if j0 < 0 || j1 > n || j0 > j1 || j0%nr != 0 {
		panic(fmt.Sprintf("gemm: SgemmPackedB of columns [%d, %d) of %d (panels of %d)", j0, j1, n, nr))
	}
	if len(pb) < PackedBSize(k, n) {
		panic(fmt.Sprintf("gemm: SgemmPackedB of a %d×%d op(B) from %d floats, need %d", k, n, len(pb), PackedBSize(k, n)))
	}
	if e.Bias != nil && len(e.Bias) < m {
		panic(fmt.Sprintf("gemm: SgemmPackedB with %d biases for %d rows", len(e.Bias), m))
	}
	nb := j1 - j0
	if ws == nil {
		panic("gemm: nil *Workspace")
	}
	ra, ca := m, k
	if transA {
		ra, ca = k, m
	}
	checkMatrix("A", "a", "lda", transA, ra, ca, a, lda)
	checkMatrix("C", "c", "ldc", false, m, j1, c, ldc)
	if m == 0 || nb == 0 {
		return true
	}
	c = c[j0:]
	if k == 0 || alpha == 0 {
		scale(m, nb, beta, c, ldc)
		return false
	}
	// The small path when packing op(A) does not pay, by useSmall's rule
	// for a B as stored with rows of nb floats.
	if kern.small != nil && takeSmall(kern, transA, false, m, nb, k, lda, nb) {
		smallLoop(kern, transA, m, nb, k, alpha, a, lda, beta, c, ldc, e, func(pc, kb int) bOperand {
			return bOperand{b: pb[packedBlock(pc, n, nr)+j0*kb:], ks: nr, js: kb}
		})
		return true
	}
	kc := blockSize(k, kern.kc, 1)
	ws.reserve(blockSize(m, kern.mc, kern.mr)*kc, 0, kern.mr*nr)
	return packedLoop(ws, kern, transA, m, nb, k, alpha, a, lda, beta, c, ldc, e, func(pc, jc, kb, _ int) []float32 {
		return pb[packedBlock(pc, n, nr)+(j0+jc)*kb:]
	})
}
