package main

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hora-dl/hora/bench/internal/benchjob"
	"github.com/hora-dl/hora/device"
	_ "github.com/hora-dl/hora/device/cpu" // registers "cpu"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/tensor"
)

// The workloads of `make bench`. bench/pytorch_bench.py measures the same
// ones under the same names; keep the two in step.

// batchSize is the batch of the training steps and of CNN inference, as in
// configs/fashion-mnist-{mlp,cnn}.yaml.
const batchSize = 128

// sgemmSizes are the square sgemm sizes N (N×N times N×N).
var sgemmSizes = []int{256, 512, 1024, 2048}

// gemm is one matrix product C (M×N) = op(A) (M×K) · op(B) (K×N) in the
// layout the MLP's Linear layer uses it.
type gemm struct {
	name    string // "128x784x512 (fwd)": M×K×N and the role
	m, k, n int
	// transA: A is stored K×M and used transposed (dW = dYᵀ·X);
	// transB: B is stored N×K and used transposed (Y = X·Wᵀ).
	transA, transB bool
}

// flops returns the floating-point operations of one product.
func (g gemm) flops() float64 { return 2 * float64(g.m) * float64(g.k) * float64(g.n) }

// operands returns seeded random operands in g's layout.
func (g gemm) operands() (a, b *tensor.Tensor) {
	rng := rand.New(rand.NewPCG(uint64(g.m*g.k), uint64(g.n)))
	if g.transA {
		a = tensor.RandUniform(rng, -1, 1, g.k, g.m)
	} else {
		a = tensor.RandUniform(rng, -1, 1, g.m, g.k)
	}
	if g.transB {
		b = tensor.RandUniform(rng, -1, 1, g.n, g.k)
	} else {
		b = tensor.RandUniform(rng, -1, 1, g.k, g.n)
	}
	return a, b
}

// run computes the product once, with the same views autograd.Linear uses
// (w.T() for the forward pass, g.T() for the weight gradient).
func (g gemm) run(a, b *tensor.Tensor) *tensor.Tensor {
	if g.transA {
		a = a.T()
	}
	if g.transB {
		b = b.T()
	}
	return tensor.MatMul(a, b)
}

// sgemm returns the square product N×N·N×N.
func sgemm(n int) gemm { return gemm{name: fmt.Sprint(n), m: n, k: n, n: n} }

// mlpGEMMs returns the products of one training step of the MLP
// 784-512-256-10 at batch 128: per Linear layer (in→out) the forward
// X·Wᵀ (128×in·in×out), the weight gradient dYᵀ·X (out×128·128×in) and,
// except for the first layer whose input needs no gradient, the input
// gradient dY·W (128×out·out×in).
func mlpGEMMs() []gemm {
	widths := []int{784, 512, 256, 10}
	var gs []gemm
	for i := 0; i+1 < len(widths); i++ {
		in, out := widths[i], widths[i+1]
		gs = append(gs, gemm{name: fmt.Sprintf("%dx%dx%d (fwd)", batchSize, in, out), m: batchSize, k: in, n: out, transB: true})
	}
	for i := len(widths) - 2; i >= 0; i-- {
		in, out := widths[i], widths[i+1]
		if i > 0 {
			gs = append(gs, gemm{name: fmt.Sprintf("%dx%dx%d (dX)", batchSize, out, in), m: batchSize, k: out, n: in})
		}
		gs = append(gs, gemm{name: fmt.Sprintf("%dx%dx%d (dW)", out, batchSize, in), m: out, k: batchSize, n: in, transA: true})
	}
	return gs
}

// newTrainJob returns the model and optimizer of
// configs/fashion-mnist-<name>.yaml (name "mlp" or "cnn") on the CPU, with
// a seeded random batch of batchSize Fashion-MNIST-shaped samples.
func newTrainJob(name string) (*benchjob.Job, error) {
	dev, err := device.Open("cpu")
	if err != nil {
		return nil, err
	}
	return benchjob.New(dev, name, batchSize)
}

// warmUpSteps are the steps taken before a training step is measured, so
// that optimizer state and any buffer caches exist (steady state).
const warmUpSteps = 3

// benchTrainStep returns a benchmark of j's training step: samples/s,
// allocations and bytes per step, after warmUpSteps untimed steps.
func benchTrainStep(j *benchjob.Job) func(b *testing.B) {
	return func(b *testing.B) {
		layers.Train(j.Model)
		for range warmUpSteps {
			if _, _, err := j.Step(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, _, err := j.Step(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(batchSize)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	}
}

// measure calls f once to warm up, then repeatedly until at least minTime
// has passed, and returns the calls per second of the timed part.
func measure(minTime time.Duration, f func()) float64 {
	f()
	n := 0
	start := time.Now()
	for {
		f()
		n++
		if el := time.Since(start); el >= minTime {
			return float64(n) / el.Seconds()
		}
	}
}
