package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// benchShape is one GEMM shape of BenchmarkSgemm.
type benchShape struct {
	name           string
	transA, transB bool
	m, n, k        int
}

// BenchmarkSgemm measures Sgemm for every available kernel on square sizes
// and on the shapes of a 784-512-256 MLP with batch 128, on one goroutine
// ("1core") and split between two goroutines with a Workspace each
// ("2cores"). It reports GFLOP/s over all iterations and
// best-GFLOP/s, from the fastest single iteration: on a machine shared with
// other work the latter is the better estimate of what the code can do.
func BenchmarkSgemm(b *testing.B) {
	shapes := []benchShape{
		{name: "256", m: 256, n: 256, k: 256},
		{name: "512", m: 512, n: 512, k: 512},
		{name: "1024", m: 1024, n: 1024, k: 1024},
		{name: "2048", m: 2048, n: 2048, k: 2048},
		// MLP 784-512-256, batch 128 (names give m×k×n). Forward:
		// H = X (128×784) · W1 (784×512), Y = H (128×512) · W2 (512×256).
		{name: "mlp_fwd1_128x784x512", m: 128, n: 512, k: 784},
		{name: "mlp_fwd2_128x512x256", m: 128, n: 256, k: 512},
		// Backward: dW1 = Xᵀ · dH (X stored 128×784), dH = dY · W2ᵀ (W2
		// stored 512×256).
		{name: "mlp_dW1_784x128x512_tA", transA: true, m: 784, n: 512, k: 128},
		{name: "mlp_dH_128x256x512_tB", transB: true, m: 128, n: 512, k: 256},
		// The 10-wide layer of a 784-512-256-10 MLP: forward Y = H · W3ᵀ
		// (W3 stored 10×256), dH = dY · W3, dW3 = dYᵀ · H.
		{name: "mlp_fwd3_128x256x10_tB", transB: true, m: 128, n: 10, k: 256},
		{name: "mlp_dH3_128x10x256", m: 128, n: 256, k: 10},
		{name: "mlp_dW3_10x128x256_tA", transA: true, m: 10, n: 256, k: 128},
	}
	defer setKernel(kernels[0].name)
	for _, kern := range kernels {
		for _, s := range shapes {
			for _, workers := range []int{1, 2} {
				name := fmt.Sprintf("%s/%s/%dcore", kern.name, s.name, workers)
				if workers > 1 {
					name += "s"
				}
				b.Run(name, func(b *testing.B) {
					if kern.name == "go" && s.m*s.n*s.k > 512*512*512 {
						b.Skip("pure-Go kernel: too slow for this size")
					}
					setKernel(kern.name)
					benchSgemm(b, s, workers)
				})
			}
		}
	}
}

func benchSgemm(b *testing.B, s benchShape, workers int) {
	rng := rand.New(rand.NewPCG(1, 2))
	a := randSlice(rng, s.m*s.k)
	bm := randSlice(rng, s.k*s.n)
	c := randSlice(rng, s.m*s.n)
	lda, ldb := s.k, s.n
	if s.transA {
		lda = s.m
	}
	if s.transB {
		ldb = s.k
	}
	// With two workers, C is split along its larger dimension, at a
	// multiple of the tile size: rows share B and each packs all of it,
	// columns share A. (Any split gives the same bits.)
	byRows := s.m >= s.n
	total, unit := s.m, active.mr
	if !byRows {
		total, unit = s.n, active.nr
	}
	bounds := []int{0, total}
	if workers == 2 {
		mid := min((total/2+unit-1)/unit*unit, total)
		bounds = []int{0, mid, total}
	}
	wss := make([]Workspace, workers)
	run := func(w int) {
		i0, i1 := bounds[w], bounds[w+1]
		if byRows {
			var aw []float32 // rows i0.. of op(A)
			if s.transA {
				aw = a[i0:]
			} else {
				aw = a[i0*lda:]
			}
			Sgemm(&wss[w], s.transA, s.transB, i1-i0, s.n, s.k, 1, aw, lda, bm, ldb, 0, c[i0*s.n:], s.n)
			return
		}
		var bw []float32 // columns i0.. of op(B)
		if s.transB {
			bw = bm[i0*ldb:]
		} else {
			bw = bm[i0:]
		}
		Sgemm(&wss[w], s.transA, s.transB, s.m, i1-i0, s.k, 1, a, lda, bw, ldb, 0, c[i0:], s.n)
	}
	var wg sync.WaitGroup
	step := func() {
		if workers == 1 {
			run(0)
			return
		}
		wg.Add(workers - 1)
		for w := 1; w < workers; w++ {
			go func() {
				defer wg.Done()
				run(w)
			}()
		}
		run(0)
		wg.Wait()
	}
	step() // warm up: grow the workspaces
	b.ResetTimer()
	best := time.Duration(math.MaxInt64)
	for b.Loop() {
		t0 := time.Now()
		step()
		best = min(best, time.Since(t0))
	}
	flop := 2 * float64(s.m) * float64(s.n) * float64(s.k)
	b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	b.ReportMetric(flop/best.Seconds()/1e9, "best-GFLOP/s")
}

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = 2*rng.Float32() - 1
	}
	return s
}

// BenchmarkMicroKernel measures each micro-kernel alone on one tile, its
// packed operands in L1: the peak the blocking tries to reach.
func BenchmarkMicroKernel(b *testing.B) {
	for _, kern := range kernels {
		b.Run(kern.name, func(b *testing.B) {
			const kc = 256
			rng := rand.New(rand.NewPCG(1, 2))
			a := randSlice(rng, kc*kern.mr)
			bb := randSlice(rng, kc*kern.nr)
			c := make([]float32, kern.mr*kern.nr)
			for b.Loop() {
				kern.fn(kc, a, bb, c, kern.nr, 1, 1)
			}
			b.ReportMetric(2*float64(kc*kern.mr*kern.nr)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkSmallCrossover times the small path against the packed one
// (path=small, path=packed) on one goroutine, in the four layouts, on
// shapes named m×k×n: the data behind useSmall's rule.
func BenchmarkSmallCrossover(b *testing.B) {
	if active.small == nil {
		b.Skip("no small path for kernel " + active.name)
	}
	defer func() { forcePath = pathAuto }()
	var shapes []benchShape
	for _, tr := range transCombos {
		for _, d := range [][3]int{ // m, n, k
			// the MLP's 10-wide layer: forward, input and weight gradients
			{128, 10, 256}, {128, 256, 10}, {10, 256, 128},
			// n growing at m = k = 256, then m at n = k = 256
			{256, 16, 256}, {256, 32, 256}, {256, 64, 256}, {256, 128, 256},
			{16, 256, 256}, {32, 256, 256}, {64, 256, 256}, {128, 256, 256},
			// k growing at m = n = 256
			{256, 256, 8}, {256, 256, 16}, {256, 256, 32}, {256, 256, 64},
			// cubes
			{32, 32, 32}, {64, 64, 64}, {96, 96, 96}, {128, 128, 128}, {192, 192, 192}, {256, 256, 256},
			// long rows 4 KiB apart (A's, or B's), and one or a few row bands
			// over a B whose k block exceeds L2
			{256, 32, 1024}, {32, 1024, 1024}, {14, 2048, 512}, {32, 2048, 512},
		} {
			shapes = append(shapes, benchShape{
				name:   fmt.Sprintf("tA=%v,tB=%v/%dx%dx%d", tr[0], tr[1], d[0], d[2], d[1]),
				transA: tr[0], transB: tr[1], m: d[0], n: d[1], k: d[2],
			})
		}
	}
	for _, s := range shapes {
		for _, path := range []int{pathSmall, pathPacked} {
			name := s.name + "/path=small"
			if path == pathPacked {
				name = s.name + "/path=packed"
			}
			b.Run(name, func(b *testing.B) {
				forcePath = path
				benchSgemm(b, s, 1)
			})
		}
	}
}

// BenchmarkColdA times mobilenet_v2's 160→960 1×1 layer on a 7×7 plane
// (m×k×n = 960×160×49) on one goroutine with A, the weights, in cache
// (warm) or not (cold: 48 copies of A in turn, 29 MB), read as stored
// (plain) or in bands of mr rows, each band k-major and one product
// (panel): the layout of the convolutions' weightPanels in package cpu.
func BenchmarkColdA(b *testing.B) {
	m, n, k := 960, 49, 160
	setupBlocking()
	rng := rand.New(rand.NewPCG(1, 2))
	const copies = 48
	as := make([][]float32, copies)
	panels := make([][]float32, copies)
	for ci := range as {
		as[ci] = randSlice(rng, m*k)
		p := make([]float32, m*k)
		mr := active.mr
		for r0 := 0; r0 < m; r0 += mr {
			rows := min(mr, m-r0)
			for pp := 0; pp < k; pp++ {
				for i := 0; i < rows; i++ {
					p[r0*k+pp*rows+i] = as[ci][(r0+i)*k+pp]
				}
			}
		}
		panels[ci] = p
	}
	bm := randSlice(rng, k*n)
	c := make([]float32, m*n)
	var ws Workspace
	for _, mode := range []string{"warm-plain", "cold-plain", "warm-panel", "cold-panel"} {
		b.Run(mode, func(b *testing.B) {
			i := 0
			for b.Loop() {
				idx := 0
				if mode[0] == 'c' {
					idx = i % copies
				}
				i++
				if mode[5:] == "plain" {
					Sgemm(&ws, false, false, m, n, k, 1, as[idx], k, bm, n, 0, c, n)
				} else {
					mr := active.mr
					for r0 := 0; r0 < m; r0 += mr {
						rows := min(mr, m-r0)
						Sgemm(&ws, true, false, rows, n, k, 1, panels[idx][r0*k:], rows, bm, n, 0, c[r0*n:], n)
					}
				}
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkChannelsLastPointwise times the products of mobilenet_v2's 1×1
// layers on channels-last images (m positions × k input channels, read as
// stored, times a packed k×n filter) on one goroutine, in blocks of rows as
// package cpu splits them: from cache (m = 1400) or streamed from memory
// (m = 100352: 112×112 positions of 8 images). The data behind
// smallPrefetchA.
func BenchmarkChannelsLastPointwise(b *testing.B) {
	for _, d := range [][2]int{{32, 16}, {96, 24}, {144, 32}, {16, 96}, {384, 64}} {
		k, n := d[0], d[1]
		for _, m := range []int{1400, 100352} {
			b.Run(fmt.Sprintf("k=%d,n=%d,m=%d", k, n, m), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				a := randSlice(rng, m*k)
				w := randSlice(rng, k*n)
				pb := make([]float32, PackedBSize(k, n))
				PackB(pb, false, w, n, k, n)
				c := make([]float32, m*n)
				var ws Workspace
				const step = 14 * 36
				for b.Loop() {
					for r := 0; r < m; r += step {
						SgemmPackedB(&ws, false, min(step, m-r), n, k, 0, n, 1, a[r*k:], k, pb, 0, c[r*n:], n, Epilogue{})
					}
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkInPlacePointwise times the products of mobilenet_v2's 1×1
// layers into few channels on N×C×H×W images (m output channels × k input
// channels of weights, times the image's k×l planes read in place) on one
// goroutine: one image, from cache, or 16 in turn, from memory. The data
// behind smallPrefetch.
func BenchmarkInPlacePointwise(b *testing.B) {
	for _, d := range [][3]int{{16, 32, 112 * 112}, {24, 96, 56 * 56}, {32, 144, 28 * 28}} {
		m, k, l := d[0], d[1], d[2]
		for _, images := range []int{1, 16} {
			b.Run(fmt.Sprintf("m=%d,k=%d,l=%d,images=%d", m, k, l, images), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				w := randSlice(rng, m*k)
				x := randSlice(rng, images*k*l)
				y := make([]float32, images*m*l)
				var ws Workspace
				i := 0
				for b.Loop() {
					n := i % images
					i++
					Sgemm(&ws, false, false, m, l, k, 1, w, k, x[n*k*l:], l, 0, y[n*m*l:], l)
				}
				b.ReportMetric(2*float64(m*k*l)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
