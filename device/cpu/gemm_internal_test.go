package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device/cpu/internal/gemm"
)

// BenchmarkParallelGemm times float32 products through parallelGemm on the
// device's workers, split between them (split=yes) or not (split=no), on
// sizes around serialGemmMax: the data behind it. It reports the fastest
// call's time too (best-ns): on a machine shared with other work, the
// median of the calls hides the hand-off's cost under other processes'
// noise.
func BenchmarkParallelGemm(b *testing.B) {
	defer func(v int) { serialGemmMax = v }(serialGemmMax)
	d := Default()
	for _, s := range []struct {
		name    string
		tA, tB  bool
		m, n, k int
	}{
		// the MLP's 10-wide layer (m·n·k = 327,680)
		{"fwd_128x256x10_tB", false, true, 128, 10, 256},
		{"dX_128x10x256", false, false, 128, 256, 10},
		{"dW_10x128x256_tA", true, false, 10, 256, 128},
		{"64x64x64", false, false, 64, 64, 64},
		{"128x64x64", false, false, 128, 64, 64},
		{"128x64x128", false, false, 128, 128, 64},
		{"128x128x128", false, false, 128, 128, 128},
		{"128x128x256", false, false, 128, 256, 128},
		{"256x128x256", false, false, 256, 256, 128},
		{"256x256x256", false, false, 256, 256, 256},
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		a := make([]float32, s.m*s.k)
		bm := make([]float32, s.k*s.n)
		c := make([]float32, s.m*s.n)
		for i := range a {
			a[i] = rng.Float32()
		}
		for i := range bm {
			bm[i] = rng.Float32()
		}
		lda, ldb := s.k, s.n
		if s.tA {
			lda = s.m
		}
		if s.tB {
			ldb = s.k
		}
		for _, split := range []bool{false, true} {
			name := fmt.Sprintf("%s/split=no", s.name)
			if split {
				name = fmt.Sprintf("%s/split=yes", s.name)
			}
			b.Run(name, func(b *testing.B) {
				serialGemmMax = math.MaxInt
				if split {
					serialGemmMax = 0
				}
				parallelGemm(d, s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bm, ldb, 0, c, s.n)
				best := time.Duration(math.MaxInt64)
				for b.Loop() {
					t0 := time.Now()
					parallelGemm(d, s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bm, ldb, 0, c, s.n)
					best = min(best, time.Since(t0))
				}
				b.ReportMetric(float64(best.Nanoseconds()), "best-ns")
			})
		}
	}
}

// TestSharedPackedGemm: a product computed from op(B) packed once by all
// workers (sharedPackedGemm) gives the unsplit product's bits, in all
// four layouts, with alpha and beta, k over one and two k blocks, on 2
// and 3 workers; and parallelGemm takes that path for sgemm 1024³ where
// Hora's assembly kernel computes it, not for 512³.
func TestSharedPackedGemm(t *testing.T) {
	if gemm.Kernel() == "go" {
		t.Skip("the pure-Go kernel's products go through gonum, never a packed op(B)")
	}
	d := New()
	rng := rand.New(rand.NewPCG(5, 6))
	const m, n = 100, 70
	for _, k := range []int{50, 500} {
		a, b := make([]float32, m*k), make([]float32, k*n)
		for i := range a {
			a[i] = rng.Float32() - 0.5
		}
		for i := range b {
			b[i] = rng.Float32() - 0.5
		}
		c0 := make([]float32, m*n)
		for i := range c0 {
			c0[i] = rng.Float32()
		}
		for _, workers := range []int{2, 3} {
			d.SetThreads(workers)
			for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				tA, tB := tr[0], tr[1]
				lda, ldb := k, n
				if tA {
					lda = m
				}
				if tB {
					ldb = k
				}
				want, got := slices.Clone(c0), slices.Clone(c0)
				ownSgemm(tA, tB, m, n, k, 0.5, a, lda, b, ldb, 2, want, n)
				_, unit, blocks := gemmSplit(m, n, 32)
				sharedPackedGemm(d, tA, tB, m, n, k, 0.5, a, lda, b, ldb, 2, got, n, unit, blocks)
				require.Equal(t, want, got, "k %d, %d workers, transA %v, transB %v", k, workers, tA, tB)
			}
		}
	}
	if d.gemmBackend().lib == nil || !d.gemmBackend().choice.UseBLAS(false, false, 512, 1024, 1024) {
		assert.True(t, sharesPackedB(d, false, false, 1024, 1024, 1024, 2), "1024³")
	}
	assert.False(t, sharesPackedB(d, false, false, 512, 512, 512, 2), "512³: op(B) under sharedPackMin")
}
