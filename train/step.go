package train

import (
	"context"
	"io"

	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// Step takes training steps exactly as a training run does — the same
// code, not a copy: the batch into the step's arena, forward,
// cross-entropy, backward (loss scaling for fp16), gradients averaged by
// the distributed optimizer (one process here), clipping, the optimizer
// with the config's learning rate, ZeroGrad and the weight average. The
// benchmarks time it, so that what they measure is the trainer's step.
type Step struct {
	t *trainer
}

// NewStep moves model to dev and builds, as the config says, what the
// trainer's step uses around it: the optimizer, loss scaling for fp16 and
// the distributed optimizer over a single process. Close it when done.
func NewStep(cfg *Config, model layers.Layer, dev device.Device) (*Step, error) {
	t, err := newStepTrainer(cfg, model, dev, dist.Single())
	if err != nil {
		return nil, err
	}
	if err := t.startEngine(context.Background(), io.Discard); err != nil {
		return nil, err
	}
	layers.Train(model)
	return &Step{t: t}, nil
}

// Take takes one optimizer step on the host batch b and returns the loss
// and the number of samples predicted right.
func (s *Step) Take(b data.Batch) (loss float64, right int, err error) {
	x, y, err := s.t.batchTensors(b, s.t.trainTargets())
	if err != nil {
		return 0, 0, err
	}
	return s.take(x, y)
}

// TakeOn takes one optimizer step on a batch already on the device: x the
// samples, y the int64 labels.
func (s *Step) TakeOn(x, y *tensor.Tensor) (loss float64, right int, err error) {
	return s.take(x.WithArena(s.t.arena), y.WithArena(s.t.arena))
}

// take is the step on tensors of the step's arena.
func (s *Step) take(x, y *tensor.Tensor) (loss float64, right int, err error) {
	if loss, right, err = s.t.forwardBackward(x, y); err != nil {
		return 0, 0, err
	}
	return loss, right, s.t.applyStep(context.Background())
}

// Model returns the model the steps train.
func (s *Step) Model() layers.Layer { return s.t.model }

// Optimizer returns the optimizer the steps apply (the distributed
// optimizer around the config's).
func (s *Step) Optimizer() optim.Optimizer { return s.t.opt }

// Device returns the device the model lives on.
func (s *Step) Device() device.Device { return s.t.dev }

// Close stops the step's engine.
func (s *Step) Close() error { return s.t.close() }
