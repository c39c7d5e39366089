//go:build amd64 && !noasm

package gemm

import "golang.org/x/sys/cpu"

//go:generate go run gen_small.go

// smallKernelAVX512 is the signature of the kernels of small_amd64.s.
type smallKernelAVX512 func(kc int, a *float32, ars, aks int, b *float32, bks int, c *float32, ldc int, alpha, beta float32, mask uint32, bias *float32, lo, hi float32, pf, pfa, pfaStep int)

// checkSmallBand panics unless a band of a small kernel's tiles (see
// smallBandFunc; tiles of at most maxRows×maxCols) stays inside the
// slices, and returns the epilogue's operands (bias nil: none).
func checkSmallBand(kc int, a []float32, ars, aks int, b []float32, bks, bjs int, c []float32, ldc, rows, n int, e Epilogue, maxRows, maxCols int) (bias *float32, lo, hi float32) {
	if kc <= 0 || rows < 1 || rows > maxRows || n < 1 || ars < 1 || aks < 1 || bks < min(n, maxCols) || bjs < 0 || ldc < n ||
		len(a) < (rows-1)*ars+(kc-1)*aks+1 || len(c) < (rows-1)*ldc+n || (e.Bias != nil && len(e.Bias) < rows) {
		panic("gemm: internal error: small kernel called with bad arguments")
	}
	// The strips of B the tiles read: the last one, and the last whole one
	// before it (bjs may be 0: every strip at the same place).
	last := (n - 1) / maxCols * maxCols
	need := last*bjs + (kc-1)*bks + n - last
	if last > 0 {
		need = max(need, (last-maxCols)*bjs+(kc-1)*bks+maxCols)
	}
	if len(b) < need {
		panic("gemm: internal error: small kernel called with bad arguments")
	}
	if e.Bias != nil {
		return &e.Bias[0], e.Lo, e.Hi
	}
	return nil, 0, 0
}

// smallBandAVX512 is the smallBandFunc of the AVX-512 kernel: tiles of up
// to 14×32, each in one call of the kernel of its height (op(A) is not
// padded: only its rows may be read); a last tile of up to 16 columns in
// the kernel 16 wide, of up to 24 in the one 24 wide (the columns past 16
// in ymm, half a zmm operation's cost on Zen 4: mobilenet_v2's 96 → 24
// channel 1×1 layer on channels-last images, one Zen 4 thread, 80 → 94
// GFLOP/s from cache, 75 → 84 from memory;
// BenchmarkChannelsLastPointwise). The slice lengths are checked first, so
// that the assembly reads and writes only inside them.
func smallBandAVX512(kc int, a []float32, ars, aks int, b []float32, bks, bjs int, c []float32, ldc int, alpha, beta float32, rows, n int, e Epilogue) {
	bias, lo, hi := checkSmallBand(kc, a, ars, aks, b, bks, bjs, c, ldc, rows, n, e, 14, 32)
	pfa, pfaStep := smallPrefetchA(rows, ars, aks)
	j := 0
	if n >= 32 {
		kernel, pf := smallW32[rows], smallPrefetch(bks, 32)
		for ; j+32 <= n; j += 32 {
			kernel(kc, &a[0], ars, aks, &b[j*bjs], bks, &c[j], ldc, alpha, beta, 0xffffffff, bias, lo, hi, pf, pfa, pfaStep)
		}
	}
	cols := n - j
	if cols == 0 {
		return
	}
	mask := uint32(1)<<cols - 1
	switch {
	case cols <= 16:
		smallW16[rows](kc, &a[0], ars, aks, &b[j*bjs], bks, &c[j], ldc, alpha, beta, mask, bias, lo, hi, smallPrefetch(bks, 16), pfa, pfaStep)
	case cols <= 24 && haveVL:
		smallW24[rows](kc, &a[0], ars, aks, &b[j*bjs], bks, &c[j], ldc, alpha, beta, mask, bias, lo, hi, smallPrefetch(bks, 32), pfa, pfaStep)
	default:
		smallW32[rows](kc, &a[0], ars, aks, &b[j*bjs], bks, &c[j], ldc, alpha, beta, mask, bias, lo, hi, smallPrefetch(bks, 32), pfa, pfaStep)
	}
}

// prefetchRows is how many k steps ahead the small kernels prefetch a
// packed op(B) (see smallPrefetch) and an op(A) laid out k-major (see
// smallPrefetchA).
const prefetchRows = 32

// smallPrefetch is the distance in bytes past op(B)'s current row that a
// small kernel w columns wide prefetches at each of its k steps. A
// packed op(B) (rows at most a panel of 32 floats apart) is read row after
// row: prefetchRows rows down. An op(B) read in place has its rows bks
// apart, a stream per row, more than the hardware prefetchers follow: the
// same row of the next strip of columns, which the next tile of the band
// reads, so that every row of every strip is fetched a strip ahead. A 1×1
// convolution reads its N×C×H×W image that way: mobilenet_v2's 32→16 layer
// on 112×112 planes at batch 1 took 0.135–0.153 ms a run without it,
// 0.044–0.045 with it (Zen 5); its 96→24 layer on 56×56 planes, one Zen 4
// thread, image after image from memory, ran at 68 GFLOP/s when deeper
// products (kc > 32) prefetched 32 rows down the strip instead, 82 this
// way (BenchmarkInPlacePointwise; AVX2 59 and 67).
func smallPrefetch(bks, w int) int {
	if bks <= 32 {
		return 4 * prefetchRows * bks
	}
	return 4 * w
}

// haveVL reports AVX512VL, the ymm forms of AVX-512 (registers Y16–Y31)
// that the kernels 24 columns wide use.
var haveVL = cpu.X86.HasAVX512VL

// smallPrefetchA returns where a small kernel prefetches op(A) of a
// tile of rows rows: pfa bytes past the tile's first element at its first
// k step, pfaStep bytes further at each next one. op(A) laid out k-major
// (aks > 1: the convolutions' weightPanels, a transposed A) holds the
// tile's rows side by side at each k step: it prefetches 32 steps ahead.
// op(A) as stored (aks == 1) has its rows ars apart, each read 4 bytes a
// step, a stream per row, which the hardware prefetchers of Zen 4 follow
// badly: it prefetches the next band of rows instead, a cache line a step
// (a band of rows of k floats is 56·k bytes: kc ≥ k steps of 64 bytes
// cover it). mobilenet_v2's 1×1 layers at batch 32 read their channels-last
// input that way, each band once: on one Zen 4 thread, 96 → 24 channels
// from memory ran at 48 GFLOP/s before, 75 this way (79–80 from cache
// either way; BenchmarkChannelsLastPointwise).
func smallPrefetchA(rows, ars, aks int) (pfa, pfaStep int) {
	if aks > 1 {
		return 4 * prefetchRows * aks, 4 * aks
	}
	return 4 * rows * ars, 64
}

// smallKernelAVX2 is the signature of the kernels of small_avx2_amd64.s.
type smallKernelAVX2 func(kc int, a *float32, ars, aks int, b *float32, bks int, c *float32, ldc int, alpha, beta float32, mask *int32, bias *float32, lo, hi float32, pf, pfa, pfaStep int)

// avx2Masks[n] sets the first n of 8 lanes: the VMASKMOVPS mask of a
// tile's last vector of n columns.
var avx2Masks = func() (m [8][8]int32) {
	for n := range m {
		for l := range n {
			m[n][l] = -1
		}
	}
	return m
}()

// smallBandAVX2 is the smallBandFunc of the AVX2 kernel: tiles of up to
// 6×16, each in one call of the kernel of its height, a last tile of up to
// 8 columns in the kernel 8 wide, and the masked kernel when its last
// vector is partial (AVX2 masks cost a register and slower loads, so whole
// tiles go without). The slice lengths are checked first, so that the
// assembly reads and writes only inside them.
func smallBandAVX2(kc int, a []float32, ars, aks int, b []float32, bks, bjs int, c []float32, ldc int, alpha, beta float32, rows, n int, e Epilogue) {
	bias, lo, hi := checkSmallBand(kc, a, ars, aks, b, bks, bjs, c, ldc, rows, n, e, 6, 16)
	pfa, pfaStep := smallPrefetchA(rows, ars, aks)
	j := 0
	if n >= 16 {
		kernel, mask, pf := smallAVX2W16[0][rows], &avx2Masks[0][0], smallPrefetch(bks, 16)
		for ; j+16 <= n; j += 16 {
			kernel(kc, &a[0], ars, aks, &b[j*bjs], bks, &c[j], ldc, alpha, beta, mask, bias, lo, hi, pf, pfa, pfaStep)
		}
	}
	cols := n - j
	if cols == 0 {
		return
	}
	masked, mask := 0, &avx2Masks[cols%8][0]
	if cols%8 != 0 {
		masked = 1
	}
	if cols <= 8 {
		smallAVX2W8[masked][rows](kc, &a[0], ars, aks, &b[j*bjs], bks, &c[j], ldc, alpha, beta, mask, bias, lo, hi, smallPrefetch(bks, 8), pfa, pfaStep)
		return
	}
	smallAVX2W16[masked][rows](kc, &a[0], ars, aks, &b[j*bjs], bks, &c[j], ldc, alpha, beta, mask, bias, lo, hi, smallPrefetch(bks, 16), pfa, pfaStep)
}
