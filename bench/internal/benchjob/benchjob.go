// Package benchjob is the training job the benchmarks time, on any
// device: a shipped config's model and optimizer (configs/*.yaml, read
// and built by package train), a seeded random batch in host memory, and
// the trainer's own step (train.Step). bench/hora (the CPU) and bench/gpu
// (a GPU) both measure it, so the benchmarks time what the trainer runs.
package benchjob

import (
	"fmt"
	"math/rand/v2"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/configs"
	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/tensor"
	"github.com/hora-dl/hora/train"
)

// Job is a model and the trainer's step on Dev, with a fixed batch.
type Job struct {
	Dev   device.Device
	Model layers.Layer
	// Batch holds seeded random inputs (normal) and labels in host memory.
	Batch data.Batch
	step  *train.Step
	arena *tensor.Arena // Infer's memory, recycled after each call
}

// New returns the job of configs/fashion-mnist-<name>.yaml (name "mlp" or
// "cnn") on dev: its model and optimizer, with a batch of n
// Fashion-MNIST-shaped samples.
func New(dev device.Device, name string, n int) (*Job, error) {
	file := "fashion-mnist-" + name + ".yaml"
	text, err := configs.Files.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("unknown model %q (known: mlp, cnn): %w", name, err)
	}
	cfg, err := train.ParseConfig("configs/"+file, text, nil)
	if err != nil {
		return nil, err
	}
	return FromConfig(dev, cfg, []int{n, 1, 28, 28}, 10)
}

// FromConfig returns the job of cfg on dev: the model it names for
// samples of shape[1:] and classes classes, built and initialised as a
// training run builds it, the trainer's step with the config's optimizer,
// and a batch of the given shape (batch first) with labels in
// [0, classes), drawn from a generator seeded by the config's seed.
func FromConfig(dev device.Device, cfg *train.Config, shape []int, classes int) (*Job, error) {
	model, err := train.NewModel(cfg, shape[1:], classes)
	if err != nil {
		return nil, err
	}
	step, err := train.NewStep(cfg, model, dev)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 2))
	b := data.Batch{X: make([]float32, device.NumElements(shape)), Shape: append([]int(nil), shape...), Y: make([]int64, shape[0])}
	for i := range b.X {
		b.X[i] = float32(rng.NormFloat64())
	}
	for i := range b.Y {
		b.Y[i] = rng.Int64N(int64(classes))
	}
	return &Job{Dev: dev, Model: model, Batch: b, step: step, arena: tensor.NewArena()}, nil
}

// Step takes one optimizer step on the host batch, as a training run
// takes it (train.Step.Take).
func (j *Job) Step() (loss float64, right int, err error) { return j.step.Take(j.Batch) }

// StepOn takes the same step on a batch already on the device.
func (j *Job) StepOn(x, y *tensor.Tensor) (loss float64, right int, err error) {
	return j.step.TakeOn(x, y)
}

// Infer runs the model forward on x in evaluation mode without recording
// gradients, as the trainer's evaluation does (the caller sets
// layers.Eval).
func (j *Job) Infer(x *tensor.Tensor) {
	j.Model.Forward(autograd.NoGrad(autograd.Constant(x.WithArena(j.arena))))
	j.arena.Reset() // a real loop would read the predictions first
}

// Close releases the step's engine.
func (j *Job) Close() error { return j.step.Close() }
