package tensor_test

import (
	"math/rand/v2"
	"testing"

	"github.com/hora-dl/hora/tensor"
)

func BenchmarkZZMM(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := tensor.RandNormal(rng, 0, 1, 128, 784)
	w := tensor.RandNormal(rng, 0, 1, 512, 784)
	a := tensor.NewArena()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tensor.MatMul(x.WithArena(a), w.T())
		a.Reset()
	}
	b.ReportMetric(2*128*784*512*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
