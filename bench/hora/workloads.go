package main

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/device"
	_ "github.com/hora-dl/hora/device/cpu" // registers "cpu"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/optim"
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

// trainJob is a model, its optimizer and a batch of 128 random samples,
// set up as cmd/train sets up configs/fashion-mnist-<name>.yaml.
type trainJob struct {
	name  string // "mlp" or "cnn"
	dev   device.Device
	model layers.Layer
	opt   optim.Optimizer
	batch data.Batch
	arena *tensor.Arena // the step's memory, recycled after each step
}

// newTrainJob returns the model and optimizer of
// configs/fashion-mnist-<name>.yaml (name "mlp" or "cnn"), on the CPU,
// with a seeded random batch of 128 Fashion-MNIST-shaped samples.
func newTrainJob(name string) (*trainJob, error) {
	dev, err := device.Open("cpu")
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var model layers.Layer
	switch name {
	case "mlp":
		if model, err = models.NewMLP(models.MLPConfig{In: 28 * 28, Hidden: []int{512, 256}, Classes: 10, Activation: "relu"}, rng); err != nil {
			return nil, err
		}
	case "cnn":
		model = models.NewCNN(10, rng)
	default:
		return nil, fmt.Errorf("unknown model %q (known: mlp, cnn)", name)
	}
	layers.To(model, dev)
	var opt optim.Optimizer
	if name == "mlp" {
		opt, err = optim.NewSGD(model.Parameters(), optim.SGDConfig{LR: 0.05, Momentum: 0.9})
	} else {
		opt, err = optim.NewAdam(model.Parameters(), optim.AdamConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	}
	if err != nil {
		return nil, err
	}
	b := data.Batch{X: make([]float32, batchSize*28*28), Shape: []int{batchSize, 1, 28, 28}, Y: make([]int64, batchSize)}
	for i := range b.X {
		b.X[i] = float32(rng.NormFloat64())
	}
	for i := range b.Y {
		b.Y[i] = rng.Int64N(10)
	}
	return &trainJob{name: name, dev: dev, model: model, opt: opt, batch: b, arena: tensor.NewArena()}, nil
}

// step takes one optimizer step on b exactly as cmd/train's trainEpoch
// does (cmd/train/trainer.go): the batch becomes device tensors, then
// forward, cross-entropy, the loss value, backward, optimizer step,
// ZeroGrad and the count of correct predictions. It is the one place to
// update when the trainer's step changes.
func (j *trainJob) step(b data.Batch) (loss float64, right int, err error) {
	defer j.arena.Reset()
	x, err := j.arena.FromSlice(j.dev, b.X, b.Shape...)
	if err != nil {
		return 0, 0, err
	}
	y, err := j.arena.FromSlice(j.dev, b.Y, len(b.Y))
	if err != nil {
		return 0, 0, err
	}
	logits := j.model.Forward(autograd.Constant(x))
	l := layers.CrossEntropy(logits, y, layers.CrossEntropyOptions{})
	loss = l.Value.Item()
	if err := autograd.Backward(l); err != nil {
		return 0, 0, err
	}
	if err := j.opt.Step(); err != nil {
		return 0, 0, err
	}
	j.opt.ZeroGrad()
	return loss, correct(logits.Value, y), nil
}

// correct counts the rows of logits whose argmax equals the label, as
// cmd/train does for the training accuracy.
func correct(logits, y *tensor.Tensor) int {
	pred := logits.ArgMax(1, false).Int64s()
	n := 0
	for i, l := range y.Int64s() {
		if pred[i] == l {
			n++
		}
	}
	return n
}

// warmUpSteps are the steps taken before a training step is measured, so
// that optimizer state and any buffer caches exist (steady state).
const warmUpSteps = 3

// benchTrainStep returns a benchmark of j's training step: samples/s,
// allocations and bytes per step, after warmUpSteps untimed steps.
func benchTrainStep(j *trainJob) func(b *testing.B) {
	return func(b *testing.B) {
		layers.Train(j.model)
		for range warmUpSteps {
			if _, _, err := j.step(j.batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, _, err := j.step(j.batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(batchSize)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	}
}

// infer runs j's model forward on b in evaluation mode without recording
// gradients, as cmd/train's evaluate does.
func (j *trainJob) infer(x *tensor.Tensor) {
	j.model.Forward(autograd.NoGrad(autograd.Constant(x.WithArena(j.arena))))
	j.arena.Reset() // a real loop would read the predictions first
}

// inferenceInput returns j's batch as a device tensor.
func (j *trainJob) inferenceInput() (*tensor.Tensor, error) {
	return tensor.FromSlice(j.dev, j.batch.X, j.batch.Shape...)
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
