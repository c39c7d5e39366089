package tensor_test

import (
	"math/rand/v2"
	"testing"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// reportGFLOPS reports flops per iteration as GFLOP/s.
func reportGFLOPS(b *testing.B, flops float64) {
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkMatMul512(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := tensor.RandUniform(rng, -1, 1, 512, 512)
	y := tensor.RandUniform(rng, -1, 1, 512, 512)
	b.ResetTimer()
	for b.Loop() {
		tensor.MatMul(x, y)
	}
	reportGFLOPS(b, 2*512*512*512)
}

// The second convolution of the small CNN: a batch of 128 14×14 maps, 32
// channels in, 64 out, 3×3 kernel with padding 1.
var cnnConv = struct {
	n, c, h, w, oc, k int
	o                 tensor.ConvOptions
}{128, 32, 14, 14, 64, 3, tensor.ConvOptions{PadH: 1, PadW: 1}}

func convOperands() (x, w, dy *tensor.Tensor, flops float64) {
	p := cnnConv
	rng := rand.New(rand.NewPCG(3, 4))
	x = tensor.RandUniform(rng, -1, 1, p.n, p.c, p.h, p.w)
	w = tensor.RandUniform(rng, -1, 1, p.oc, p.c, p.k, p.k)
	dy = tensor.RandUniform(rng, -1, 1, p.n, p.oc, p.h, p.w) // padding 1 keeps 14×14
	flops = 2 * float64(p.n*p.oc*p.h*p.w*p.c*p.k*p.k)
	return x, w, dy, flops
}

func BenchmarkConv2DForward(b *testing.B) {
	x, w, _, flops := convOperands()
	b.ResetTimer()
	for b.Loop() {
		tensor.Conv2D(x, w, cnnConv.o)
	}
	reportGFLOPS(b, flops)
}

func BenchmarkConv2DGradInput(b *testing.B) {
	x, w, dy, flops := convOperands()
	b.ResetTimer()
	for b.Loop() {
		tensor.Conv2DGradInput(dy, w, x.Shape(), cnnConv.o)
	}
	reportGFLOPS(b, flops)
}

func BenchmarkConv2DGradWeight(b *testing.B) {
	x, w, dy, flops := convOperands()
	b.ResetTimer()
	for b.Loop() {
		tensor.Conv2DGradWeight(dy, x, w.Shape(), cnnConv.o)
	}
	reportGFLOPS(b, flops)
}

// BenchmarkAddAct times a residual block's sum and ReLU over a batch-32
// 64×56×56 activation (25.7 MB each) fused (AddAct) and composed (Add,
// then Relu).
func BenchmarkAddAct(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := tensor.RandNormal(rng, 0, 1, 32, 64, 56, 56)
	y := tensor.RandNormal(rng, 0, 1, 32, 64, 56, 56)
	b.Run("fused", func(b *testing.B) {
		for b.Loop() {
			tensor.AddAct(x, y, device.ActReLU)
		}
	})
	b.Run("composed", func(b *testing.B) {
		for b.Loop() {
			x.Add(y).Relu()
		}
	})
}
