package gemm

// The small-product path: products too small or too skinny for packing and
// blocking to pay for themselves (see useSmall) are computed by kernels that
// read op(A) and op(B) where they are. Only op(B) of a transposed B is
// copied, one k block at a time, into the Workspace.

// smallBandFunc computes a band of rows rows and n columns of C at c (row
// stride ldc, 1 <= rows <= the kernel's mr, n >= 1) in tiles of the
// kernel's nr columns, the last one narrower: C = alpha*op(A)·op(B) +
// beta*C over kc k steps, reading op(A)[i][p] at a[i*ars+p*aks] and, for
// the strip of columns from j0 (a multiple of nr), op(B)[p][j0+j] at
// b[j0*bjs+p*bks+j]; with beta == 0 C is not read. Each element gets the
// operations, in the order, of the kernel's packed micro-kernels, so that
// both paths give the same bits. With an epilogue e (a nil Bias: none),
// each row i of the band then gets e's bias e.Bias[i] and clamp.
//
// The arguments are checked once for the band and each tile is one call
// of the assembly: called per tile through a generic wrapper (its checks,
// its prefetch distances and a second indirect call), the small path's Go
// code took a fifth of its time in a profile of mobilenet_v2 at batch 1,
// where a 1×1 layer of 16 input channels computes a 14×32 tile in about
// 450 multiply-adds of 16 lanes.
type smallBandFunc func(kc int, a []float32, ars, aks int, b []float32, bks, bjs int, c []float32, ldc int, alpha, beta float32, rows, n int, e Epilogue)

// Which path Sgemm takes: forcePath is pathAuto (useSmall decides) except
// in tests and benchmarks, which compare the paths. It must not change while
// Sgemm runs.
const (
	pathAuto = iota
	pathPacked
	pathSmall // when the kernel has a small path and B allows it
)

var forcePath = pathAuto

// takeSmall reports whether Sgemm takes the small path: useSmall's choice,
// unless forcePath says otherwise.
func takeSmall(kern *kernelInfo, transA, transB bool, m, n, k, lda, ldb int) bool {
	switch forcePath {
	case pathPacked:
		return false
	case pathSmall:
		return kern.small != nil
	}
	return useSmall(kern, transA, transB, m, n, k, lda, ldb)
}

// useSmall reports whether the product goes through the small path: when
// the kernel has one and the k block of op(B) (kb <= kc rows, k being split
// as on the packed path: kb rows of ldb floats where B is, kb rows of n
// floats for the copy of a transposed B) fits in the kc×nc floats of the
// block B̃ that the packed path keeps in L2, or, B not being transposed,
// when op(A) has no more rows than a tile (m <= mr: B is then read once).
// Past L2, a B as stored and an A not transposed still take it while B's
// k block fits L3 (see smallBands and smallStreams): the small kernels
// prefetch B's rows.
//
// The small path is the packed path's loop nest without the packing and
// without blocking n: a tile reads its mr rows of op(A) from L1 for every
// strip of nr columns, and its strip of op(B) from L2 for every band of mr
// rows. When op(B)'s k block fits in L2 the packed path would not block n
// either, and packing then only costs time. Measured on Zen 5
// (BenchmarkSmallCrossover, one core, kc = 384, 25 shapes in each of the
// four layouts, fastest calls of 3 runs): on the 90 shapes the rule sends
// to the small path it ran 0.96–3.8× as fast as the packed path (median
// calls 0.93–5×), 2–3.8× on the MLP's 10-wide products and on n, m or k of
// 16, 1.02–1.2× at 256×256×256; the few below 1× are a transposed B with
// k of 16 to 64 at m = n = 256, within the noise. On the 10 it sends to the
// packed path, a transposed B of 1024 columns or more (copied whole) ran
// 0.85–0.95× as fast on the small path, and m = 32 with n of 1024 or 2048
// 1.1–1.27× (the rule is conservative there). Forced further (two cores
// too): 512×512×512 1.06–1.08×, m×k×n = 128×784×512 with B transposed
// 1.01–1.04×, 2048×2048×256 with A transposed 1.19×, 4096×1024×64 1.18–1.33×.
//
// One exception: with A as stored (not transposed) and its rows a multiple
// of 4 KiB apart, the mr rows a tile reads at each k step fall in the same
// set of an L1d with 4 KiB per way (48K 12-way on Zen 5, 32K 8-way on
// Intel), more rows than ways, and the small path re-reads them from L2 for
// every strip of nr columns: m×k×n = 2048×2048×256 ran 0.97–0.99× as fast
// and 1024×1024×352 0.94–1.01×, where packing A into contiguous
// micro-panels avoids the conflict. Such products, with more than mr rows
// and more than nr columns, stay on the packed path; with one strip
// (256×1024×32: 1.3–1.4×) the small path still wins. The same holds for B
// as stored with its rows 4 KiB apart, and, with AVX2's 6×16 tiles (a line
// of B for every 12 FMAs, against 2 lines for 28 with AVX-512's 14×32),
// 2 KiB apart, where a strip's rows fall in two sets: with A transposed,
// m×k×n = 784×128×1024 ran 0.57× and 784×128×512 0.79–0.85× as fast on
// the small path as on the packed one with AVX2; with AVX-512 0.94× and
// 1.04×.
func useSmall(kern *kernelInfo, transA, transB bool, m, n, k, lda, ldb int) bool {
	if kern.small == nil {
		return false
	}
	if !transA && lda%1024 == 0 && m > kern.mr && n > kern.nr {
		return false // rows of A 4 KiB apart, re-read for each strip of op(B)
	}
	if !transB && m > kern.mr && n > kern.nr && (ldb%1024 == 0 || (ldb%512 == 0 && kern.mr < 8)) {
		return false // rows of B 2 or 4 KiB apart, re-read for each band of op(A)
	}
	kb := blockSize(k, kern.kc, 1)
	budget := kern.kc * kern.nc
	if transB {
		return kb*n <= budget
	}
	if m <= kern.mr || kb*ldb <= budget {
		return true
	}
	// Each band of rows re-reads B's k block as a stream that the
	// kernels prefetch, from L3: cheaper than packing it while the block
	// fits the L3 share of the packed path's A block (mc×kc) and all
	// bands together read at most smallStreams such shares.
	share := kern.mc * kern.kc
	bands := (m + kern.mr - 1) / kern.mr
	return !transA && kb*ldb <= share && (bands <= smallBands || bands*kb*ldb <= smallStreams*share)
}

// smallStreams bounds what the bands of a small-path product with a B
// larger than L2 read in all, in L3 shares (see useSmall). On Zen 5 with
// both cores (benchSgemm's split) the small path ran 1.04–1.17× as fast
// as the packed one on m×k×n = 128×576×784, 256×1152×196, 64×576×3136
// and 512³ (resnet18's 3×3 layers through im2col), and 0.88× on
// 256×256×4096, whose 19 bands read 20 L3 shares.
const smallStreams = 4

// smallBands is the most bands of rows for which a B not transposed
// whose k block exceeds the packed path's L2 block still takes the small
// path, as long as it fits the share of L3 the packed path gives its
// block of A (mc×kc). On one Zen 5 core the small path ran 1.2–1.7× as
// fast as the packed one on m×k×n = 16×144×n (n = 1024 to 16384),
// 32×288×n (1024, 2048), 24×144×n (3136 to 12544), 40×144×4096 and
// 32×192×784 (mobilenet_v2's 1×1 layers of few output channels: the model
// at batch 32 went from 85–88 to 81–85 ms with B up to 3 L2 blocks), and
// slower once B streams from memory (16×144×131072, 75 MB: 0.7×).
const smallBands = 3

// smallSgemm is Sgemm on the small path (its arguments checked, m, n, k > 0
// and alpha != 0). It splits k in the blocks the packed path uses, the
// first applying beta and the others adding to C, so that every element of
// C gets the same operations on both paths.
//
// With an epilogue e (a nil Bias: none), the last k block applies it to
// each tile as it writes it.
func smallSgemm(ws *Workspace, kern *kernelInfo, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, e Epilogue) {
	smallLoop(kern, transA, m, n, k, alpha, a, lda, beta, c, ldc, e, func(pc, kb int) bOperand {
		if transB {
			return packSmallB(ws, kern, b, ldb, pc, kb, n)
		}
		return bOperand{b: b[pc*ldb:], ks: ldb, js: 1} // op(B)[p][j] = B[p][j]
	})
}

// smallLoop is the small path's loop over the k blocks of a product, each
// block's op(B) as blockB returns it; the last block applies the epilogue
// e (a nil Bias: none).
func smallLoop(kern *kernelInfo, transA bool, m, n, k int, alpha float32, a []float32, lda int, beta float32, c []float32, ldc int, e Epilogue, blockB func(pc, kb int) bOperand) {
	kc := blockSize(k, kern.kc, 1)
	ars, aks := lda, 1 // op(A)[i][p] = A[i][p]
	if transA {
		ars, aks = 1, lda // op(A)[i][p] = A[p][i]
	}
	for pc := 0; pc < k; pc += kc {
		kb := min(kc, k-pc)
		bet := beta
		if pc > 0 {
			bet = 1
		}
		var last Epilogue
		if pc+kb == k {
			last = e
		}
		smallBlock(kern, m, n, kb, alpha, a[pc*aks:], ars, aks, blockB(pc, kb), bet, c, ldc, last)
	}
}

// bOperand locates the k block of op(B) that the small kernels read: the
// strip of columns from j on starts at b[j*js], and its k steps are ks
// floats apart.
type bOperand struct {
	b      []float32
	ks, js int
}

// packSmallB copies the k block pc:pc+kb of op(B) = Bᵀ (B is n×k, row
// stride ldb) into the Workspace, in micro-panels of w = nr columns (16
// when n <= 16), the layout of the packed path. A partial last panel is
// first copied into a zero-padded block of w rows of B, so that it too is
// transposed by kern.trans's fast full-panel case.
func packSmallB(ws *Workspace, kern *kernelInfo, b []float32, ldb, pc, kb, n int) bOperand {
	w := kern.nr
	if n <= 16 {
		w = 16
	}
	panels := (n + w - 1) / w
	ws.reserveB(panels * w * kb)
	full := n / w * w
	if full > 0 {
		packB(ws.b, true, b, ldb, pc, 0, kb, full, w, kern.trans)
	}
	if v := n - full; v > 0 {
		ws.reserveA(w * kb)
		rows := ws.a[:w*kb]
		for j := range v {
			copy(rows[j*kb:(j+1)*kb], b[(full+j)*ldb+pc:])
		}
		clear(rows[v*kb:])
		kern.trans(ws.b[full*kb:], rows, kb, w, kb, w)
	}
	return bOperand{b: ws.b, ks: w, js: kb}
}

// smallBlock computes C (m×n) = alpha*op(A)·op(B) + beta*C over kb k steps
// in tiles of mr×nr, the tiles of one row band of op(A) after another, and
// applies the epilogue e (a nil Bias: none) to each tile.
func smallBlock(kern *kernelInfo, m, n, kb int, alpha float32, a []float32, ars, aks int, b bOperand, beta float32, c []float32, ldc int, e Epilogue) {
	mr := kern.mr
	for i := 0; i < m; i += mr {
		band := e
		if e.Bias != nil {
			band.Bias = e.Bias[i:]
		}
		kern.small(kb, a[i*ars:], ars, aks, b.b, b.ks, b.js, c[i*ldc:], ldc, alpha, beta, min(mr, m-i), n, band)
	}
}

// reserveA and reserveB make the A or B buffer hold at least n floats (and
// the packing slack).
func (ws *Workspace) reserveA(n int) {
	if n += packSlack; len(ws.a) < n {
		ws.a = alignedFloats(n)
	}
}

func (ws *Workspace) reserveB(n int) {
	if n += packSlack; len(ws.b) < n {
		ws.b = alignedFloats(n)
	}
}
