package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hora-dl/hora/device"
)

// BenchmarkBatchNorm times BatchNorm with ReLU and its gradient on the
// zoo's shapes (MobileNet's and ResNet-20's planes of 14×14 and 7×7 at
// batch 128, and a 28×28 one), in GB/s of the tensors each call must
// touch at least once: x and y forward; x, y, dy and dx backward.
func BenchmarkBatchNorm(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	flush := make([]float32, 16<<20) // 64 MiB, twice the L3 cache
	evict := func(b *testing.B) {
		b.StopTimer()
		for i := 0; i < len(flush); i += 16 {
			flush[i]++
		}
		b.StartTimer()
	}
	k := New().Kernels().(kernels)
	for _, s := range []struct{ outer, channels, inner int }{
		{128, 16, 784}, {128, 32, 196}, {128, 64, 196}, {128, 128, 49}, {128, 256, 49}, {128, 64, 49},
	} {
		n := s.outer * s.channels * s.inner
		x, y, dy, dx := k.d.bufferOf(randSlice(rng, n)), k.d.bufferOf(make([]float32, n)), k.d.bufferOf(randSlice(rng, n)), k.d.bufferOf(make([]float32, n))
		mean, variance := k.d.bufferOf(make([]float32, s.channels)), k.d.bufferOf(make([]float32, s.channels))
		w, bias := k.d.bufferOf(randSlice(rng, s.channels)), k.d.bufferOf(randSlice(rng, s.channels))
		dw, db := k.d.bufferOf(make([]float32, s.channels)), k.d.bufferOf(make([]float32, s.channels))
		name := fmt.Sprintf("n%d_c%d_plane%d", s.outer, s.channels, s.inner)
		b.Run(name+"/forward", func(b *testing.B) {
			for b.Loop() {
				evict(b)
				k.BatchNormAct(device.ActReLU, y, mean, variance, x, w, bias, s.outer, s.channels, s.inner, 1e-5)
			}
			b.ReportMetric(float64(2*4*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
		b.Run(name+"/grad", func(b *testing.B) {
			for b.Loop() {
				evict(b)
				k.BatchNormActGrad(device.ActReLU, dx, dw, db, dy, y, x, mean, variance, w, s.outer, s.channels, s.inner, 1e-5)
			}
			b.ReportMetric(float64(4*4*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
