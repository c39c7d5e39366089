// Package benchjob is the training job the benchmarks time, on any
// device: a model with its optimizer, a seeded random batch in host
// memory, and one training step taken exactly as cmd/train takes it.
// bench/hora (the CPU) and bench/gpu (a GPU) both measure it, so the two
// benchmarks and the trainer stay in step.
package benchjob

import (
	"fmt"
	"math/rand/v2"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// Job is a model and its optimizer on Dev, with a fixed batch.
type Job struct {
	Dev   device.Device
	Model layers.Layer
	Opt   optim.Optimizer
	// Batch holds seeded random inputs (normal) and labels in host memory.
	Batch data.Batch
	arena *tensor.Arena // the step's memory, recycled after each step
}

// New returns the model and optimizer of configs/fashion-mnist-<name>.yaml
// (name "mlp" or "cnn") on dev, with a batch of n Fashion-MNIST-shaped
// samples.
func New(dev device.Device, name string, n int) (*Job, error) {
	rng := rand.New(rand.NewPCG(1, 1))
	var model layers.Layer
	switch name {
	case "mlp":
		m, err := models.NewMLP(models.MLPConfig{In: 28 * 28, Hidden: []int{512, 256}, Classes: 10, Activation: "relu"}, rng)
		if err != nil {
			return nil, err
		}
		model = m
	case "cnn":
		model = models.NewCNN(10, rng)
	default:
		return nil, fmt.Errorf("unknown model %q (known: mlp, cnn)", name)
	}
	newOpt := func(ps []*autograd.Param) (optim.Optimizer, error) {
		if name == "mlp" {
			return optim.NewSGD(ps, optim.SGDConfig{LR: 0.05, Momentum: 0.9})
		}
		return optim.NewAdam(ps, optim.AdamConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	}
	return NewWith(dev, model, newOpt, []int{n, 1, 28, 28}, 10, rng)
}

// NewWith moves model to dev, makes its optimizer with newOpt (after the
// move, so that the optimizer's state is on dev too), and draws a batch of
// the given shape (batch first) with labels in [0, classes) from rng.
func NewWith(dev device.Device, model layers.Layer, newOpt func([]*autograd.Param) (optim.Optimizer, error),
	shape []int, classes int, rng *rand.Rand) (*Job, error) {
	layers.To(model, dev)
	opt, err := newOpt(model.Parameters())
	if err != nil {
		return nil, err
	}
	b := data.Batch{X: make([]float32, device.NumElements(shape)), Shape: append([]int(nil), shape...), Y: make([]int64, shape[0])}
	for i := range b.X {
		b.X[i] = float32(rng.NormFloat64())
	}
	for i := range b.Y {
		b.Y[i] = rng.Int64N(int64(classes))
	}
	return &Job{Dev: dev, Model: model, Opt: opt, Batch: b, arena: tensor.NewArena()}, nil
}

// Step takes one optimizer step on the host batch as cmd/train's
// trainEpoch does (cmd/train/trainer.go): the batch becomes device
// tensors in the step's arena, then forward, cross-entropy, the loss
// value, backward, optimizer step, ZeroGrad and the count of correct
// predictions. It is the one place to update when the trainer's step
// changes.
func (j *Job) Step() (loss float64, right int, err error) {
	defer j.arena.Reset()
	x, err := j.arena.FromSlice(j.Dev, j.Batch.X, j.Batch.Shape...)
	if err != nil {
		return 0, 0, err
	}
	y, err := j.arena.FromSlice(j.Dev, j.Batch.Y, len(j.Batch.Y))
	if err != nil {
		return 0, 0, err
	}
	return j.update(x, y)
}

// StepOn takes the same step on a batch already on the device.
func (j *Job) StepOn(x, y *tensor.Tensor) (loss float64, right int, err error) {
	defer j.arena.Reset()
	return j.update(x.WithArena(j.arena), y.WithArena(j.arena))
}

// update is the step after the upload, on tensors of the step's arena.
func (j *Job) update(x, y *tensor.Tensor) (loss float64, right int, err error) {
	logits := j.Model.Forward(autograd.Constant(x))
	l := layers.CrossEntropy(logits, y, layers.CrossEntropyOptions{})
	loss = l.Value.Item()
	if err := autograd.Backward(l); err != nil {
		return 0, 0, err
	}
	if err := j.Opt.Step(); err != nil {
		return 0, 0, err
	}
	j.Opt.ZeroGrad()
	return loss, correct(logits.Value, y), nil
}

// Infer runs the model forward on x in evaluation mode without recording
// gradients, as cmd/train's evaluate does (the caller sets layers.Eval).
func (j *Job) Infer(x *tensor.Tensor) {
	j.Model.Forward(autograd.NoGrad(autograd.Constant(x.WithArena(j.arena))))
	j.arena.Reset() // a real loop would read the predictions first
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
