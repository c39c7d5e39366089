package blas

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// BenchmarkSgemm measures row-major C = A·B (beta = 0) on square sizes and
// on an MLP layer (batch 128, 784 → 512): "1core" on the benchmark's
// goroutine, "2cores" with C split between two goroutines calling Sgemm at
// once, as Hora's workers do: by rows when m >= n, else by columns (each
// worker packs the whole of the operand it shares, B for a split by rows,
// A for a split by columns, so splitting the longer side of C costs less).
//
// GFLOP/s is per wall-clock second; GFLOP/cpu-s per second of CPU time of
// the process, all threads together, i.e. the speed of one core, which stays
// meaningful when a shared machine time-slices the benchmark with other
// work.
//
// Note that a user-set OPENBLAS_CORETYPE is kept: on AMD with AVX-512, run
// with it unset (env -u OPENBLAS_CORETYPE) to get the SkylakeX kernels.
func BenchmarkSgemm(b *testing.B) {
	l := loadOrSkip(b)
	b.Logf("%s", l.Name())
	shapes := [][3]int{{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048}, {128, 512, 784}}
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		name := fmt.Sprint(m)
		if m != n || n != k {
			name = fmt.Sprintf("m=%d,k=%d,n=%d", m, k, n)
		}
		rng := rand.New(rand.NewPCG(1, uint64(m)))
		a, bm, c := randSlice(rng, m*k), randSlice(rng, k*n), make([]float32, m*n)
		for _, workers := range []int{1, 2} {
			sub := name + "/1core"
			if workers > 1 {
				sub = fmt.Sprintf("%s/%dcores", name, workers)
			}
			b.Run(sub, func(b *testing.B) {
				var wg sync.WaitGroup
				cpu0 := cpuTime()
				for b.Loop() {
					if workers == 1 {
						l.Sgemm(false, false, m, n, k, 1, a, k, bm, n, 0, c, n)
						continue
					}
					for w := range workers {
						if m >= n { // rows [lo, hi) of C and A
							lo, hi := m*w/workers, m*(w+1)/workers
							wg.Go(func() {
								l.Sgemm(false, false, hi-lo, n, k, 1, a[lo*k:], k, bm, n, 0, c[lo*n:], n)
							})
						} else { // columns [lo, hi) of C and B
							lo, hi := n*w/workers, n*(w+1)/workers
							wg.Go(func() {
								l.Sgemm(false, false, m, hi-lo, k, 1, a, k, bm[lo:], n, 0, c[lo:], n)
							})
						}
					}
					wg.Wait()
				}
				gflop := 2 * float64(m) * float64(n) * float64(k) * float64(b.N) / 1e9
				b.ReportMetric(gflop/b.Elapsed().Seconds(), "GFLOP/s")
				if cpu := cpuTime() - cpu0; cpu > 0 {
					b.ReportMetric(gflop/cpu.Seconds(), "GFLOP/cpu-s")
				}
			})
		}
	}
}

func randSlice(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = rng.Float32()*2 - 1
	}
	return x
}
