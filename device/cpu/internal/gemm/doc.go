// Package gemm is a pure-Go single-precision matrix product (SGEMM) with
// assembly micro-kernels for amd64 (AVX-512, AVX2) and arm64 (NEON): the
// CPU backend's float32 GEMM where it runs its AVX-512 kernel, and its
// fallback when no BLAS library can be loaded at run time.
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
// SgemmEpilogue adds a convolution's bias and activation (a per-row bias
// and a clamp) to each tile of C as its small-product kernels write it.
//
// An op(B) that many products share (a model's constant weight) can be
// packed once: PackB lays it out in the micro-panels B̃ described below,
// every k block after the other, and SgemmPackedB reads them in place on
// both paths, for all of C's columns or for a range of whole panels (a
// worker's share), with the bits of Sgemm.
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
// On arm64 the NEON kernel (kernel_arm64.s) computes 8×12 tiles in 24 of
// the 32 vector registers, loading each value of Ã replicated (LD1R) and
// multiplying it into the three vectors of a k step of B̃ with fused
// multiply-adds; alpha and beta are applied in Go. Its tests run under
// qemu-user (make test-arm64); its speed has not been measured on arm64
// hardware.
//
// # Block sizes from the cache sizes
//
// The block sizes nc and mc of each kernel are derived, at the first
// product, from the data-cache sizes of the CPU (cache.go, blocking.go):
// read from Linux's sysfs (/sys/devices/system/cpu/cpu0/cache/index*/
// {level,type,size,shared_cpu_list}, on every architecture), else on amd64
// from CPUID's deterministic cache parameters (leaf 4 on Intel, 0x8000001d
// on AMD), else from AMD's legacy leaves 0x80000005/6 (sizes only; some
// hypervisors answer nothing else). The rules (deriveBlocks), for the loop
// nest above, in which the micro-panel of Ã is the operand reused from L1,
// the block B̃ the one kept in L2 and the block Ã the one kept in L3:
//
//   - nc: the kc×nc block B̃ fills about half of this CPU's share of L2;
//   - mc: the mc×kc block Ã fits this CPU's share of L3;
//
// each clamped to a sane range and rounded to the nearest multiple of nr or
// mr. kc
// stays the kernel's default: it sets where k is split, hence the rounding
// of every product with k > kc, and a kc taken from L1d would make results
// differ from machine to machine for the same kernel, for no measured speed
// (see deriveBlocks); the defaults keep the micro-panel of Ã within half of
// a 48K L1d. nc and mc do not change a bit of the result. When the sizes
// cannot be read the kernels keep their default sizes (the ones they were
// tuned with on Zen 5). Blocking reports the kernel, the block sizes and the
// cache sizes; device/cpu shows them in its backend's name. On the 2-core
// Zen 5 machine of this project (a VM without sysfs cache directories or
// leaf 0x8000001d: L1d 48K, L2 1M, L3 of the whole package from the legacy
// leaves), avx512 gets kc = 384, nc = 352, mc = 4088 (the defaults were 384,
// 384, 4096), which split the sizes benchmarked (up to 2048) in the same
// blocks as the defaults.
//
// # Small products
//
// Products too small or too skinny for packing to pay for itself, such as
// the 10-wide layer of an MLP (128×256·256×10 and its gradients), skip it
// (small.go): kernels with the micro-kernels' register tiling read op(A)
// and op(B) where they are (strides for rows and k steps, masked loads for
// the last columns), and only a transposed B is copied, one k block at a
// time. The rule (useSmall): op(B)'s k block fits in the kc×nc floats the
// packed path keeps in L2, so that blocking n would gain nothing, or B is
// not transposed and op(A) has at most mr rows (B is then read once);
// except for A as stored, or B as stored, with rows a multiple of 4 KiB
// apart (2 KiB for B with AVX2's tiles: they collide in L1d), more than mr
// rows and more than nr columns. On Zen 5 that sends the MLP's 10-wide
// products (2–3.8× as fast as packed), cubes up to 512 and the MLP
// 784-512-256-10's other products at batch 128 to the small path, and
// square products from 1024 up to the packed one. The AVX-512 and AVX2
// kernels have such a path (small_amd64.s and small_avx2_amd64.s,
// generated by gen_small.go: 1 to 14 rows and 16 or 32 columns, 1 to 6
// rows and 8 or 16 columns); the Go and NEON kernels pack every product.
// Both paths split k in the same blocks and give every element the same
// operations, so they give the same bits.
//
// # Kernels
//
// Kernel reports the one chosen at start-up from the CPU's features
// (golang.org/x/sys/cpu):
//
//   - "avx512": 14×32 tile in 28 zmm accumulators (two zmm of B̃ per step,
//     14 broadcasts of Ã); default blocks kc = 384, nc = 384, mc = 4096;
//     a small-product path;
//   - "avx2": 6×16 tile in 12 ymm accumulators (AVX2 and FMA); defaults
//     kc = 384, nc = 256, mc = 4096; a small-product path; transposed
//     operands packed through 8×8 in-register transposes;
//   - "go": a 4×4 tile in pure Go, the only kernel on other architectures
//     or with the noasm build tag; defaults kc = 256, nc = 256, mc = 4096.
//
// Every element of C goes through the same floating-point operations,
// whatever m and n, its position in C, the tile shape that computed it and
// the path (packed or small), so splitting C between goroutines, by rows or
// by columns, does not change the result by a single bit (for a given
// kernel and k: the cache sizes change nc and mc only).
package gemm
