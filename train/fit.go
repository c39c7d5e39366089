package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/layers"
)

// Callback holds functions the training loop calls as it goes; Fit takes
// any number of them. Each function runs on every rank of a data-parallel
// run, with the same metrics there. A function returns ErrStop to end the
// run early (every rank stops at the same step, after a checkpoint; Fit
// then returns nil), or another error to fail it.
type Callback struct {
	// Step, when set, runs after every optimizer step.
	Step func(StepMetrics) error
	// Epoch, when set, runs at the end of every epoch, after the
	// evaluation and the checkpoint.
	Epoch func(EpochMetrics) error
}

// StepMetrics describes the optimizer step just taken.
type StepMetrics struct {
	// Step counts the optimizer steps taken so far (the first is 1).
	Step int
	// Epoch is the position in epochs: 2.5 is half-way through epoch 3.
	Epoch float64
	// Loss is this rank's mean training loss over the step's batches.
	Loss float64
	// LR is the learning rate the step applied.
	LR float64
}

// ErrStop, returned by a Callback, ends the run early and successfully.
var ErrStop = errors.New("train: a callback stopped the run")

// Fit trains model on d as the config says — the very loop of the train
// command: data sharding and gradient averaging under mpirun, the
// schedule, evaluation after each epoch, checkpoints in cfg.Output.Dir
// (Resume continues from them), early stopping, the EMA, the metrics log
// and the curves — and returns the metrics of the epochs it trained. It
// prints what the command prints, to stdout and stderr.
//
// Start from DefaultConfig: set at least Optimizer.Name, Optimizer.LR and
// Output.Dir. Model.Name, when set, names the model in checkpoints (the
// default is "custom"); the config's model and data keys are otherwise
// ignored, since model and d are given. model must map a batch of samples
// [batch, SampleShape...] to logits [batch, d.Classes]; Fit moves it to
// cfg.Device. Cancelling ctx stops the run as Ctrl-C does: it writes a
// checkpoint and returns an error wrapping context.Canceled.
func Fit(ctx context.Context, model layers.Layer, d *Data, cfg *Config, callbacks ...Callback) ([]EpochMetrics, error) {
	return fit(ctx, model, d, cfg, false, os.Stdout, os.Stderr, callbacks)
}

// Resume continues a Fit whose run folder (cfg.Output.Dir) holds
// checkpoints, from the latest one, bit for bit as an uninterrupted run
// with the same number of ranks. model and d must be built as they were
// for Fit.
func Resume(ctx context.Context, model layers.Layer, d *Data, cfg *Config, callbacks ...Callback) ([]EpochMetrics, error) {
	return fit(ctx, model, d, cfg, true, os.Stdout, os.Stderr, callbacks)
}

// fit is Fit and Resume, writing to stdout and stderr.
func fit(ctx context.Context, model layers.Layer, d *Data, cfg *Config, resume bool, stdout, stderr io.Writer, callbacks []Callback) ([]EpochMetrics, error) {
	if model == nil {
		return nil, errors.New("train.Fit: nil model")
	}
	if cfg == nil {
		return nil, errors.New("train.Fit: nil config (start from train.DefaultConfig())")
	}
	c := *cfg
	c.modelGiven, c.dataGiven = true, true
	if c.Model.Name == "" {
		c.Model.Name = "custom"
	}
	if c.origins == nil && c.path == "" {
		c.path = "train.Fit config"
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if !resume && hasCheckpoints(c.Output.Dir) {
		return nil, fmt.Errorf("train.Fit: Output.Dir %s holds the checkpoints of an earlier run: continue it with train.Resume, or choose another folder", c.Output.Dir)
	}
	j := &job{cfg: &c, resume: resume, model: model, data: d, callbacks: callbacks, stdout: stdout, stderr: stderr}
	err := inWorld(ctx, func(comm dist.Communicator) error { return train(ctx, comm, j) })
	if errors.Is(err, errInterrupted) {
		err = fmt.Errorf("train.Fit: %w", err)
	}
	return j.history, err
}
