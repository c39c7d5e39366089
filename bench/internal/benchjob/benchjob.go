// Package benchjob is the training job the benchmarks time, on any
// device: a shipped config's model and optimizer (configs/*.yaml, read
// and built by package train), a seeded random batch in host memory, and
// the trainer's own step (train.Step). bench/hora (the CPU) and bench/gpu
// (a GPU) both measure it, so the benchmarks time what the trainer runs.
package benchjob

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/configs"
	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/tensor"
	"github.com/hora-dl/hora/train"
)

// CharLMVocab is the vocabulary size of a character-level language
// model's benchmark batches (model charlm): the 99 distinct characters of
// the text configs/fortunes-charlm.yaml trains on (Debian 12's fortunes).
// bench/zoo_twins.py gives PyTorch's twin the same.
const CharLMVocab = 99

// Job is a model and the trainer's step on Dev, with a fixed batch.
type Job struct {
	Dev   device.Device
	Model layers.Layer
	// Config is the configuration the model and the step were built from.
	Config *train.Config
	// Batch holds seeded random inputs (normal) and labels in host memory.
	// A language model's batch holds token ids instead, as the trainer
	// splits its windows of T+1 characters: X the first T of each window
	// (N×T ids as float32), Y the last T (one label per position, N·T).
	Batch data.Batch
	step  *train.Step
	arena *tensor.Arena // Infer's memory, recycled after each call
}

// New returns the job of a shipped config (configs/*.yaml) on dev: its
// model and optimizer, with a batch of n samples (0: the config's
// train.batch_size) shaped as Input says. name is the file's name
// ("fortunes-charlm.yaml") or, for the Fashion-MNIST configs, the model's
// part of it ("cnn" for fashion-mnist-cnn.yaml).
func New(dev device.Device, name string, n int) (*Job, error) {
	cfg, err := Config(name)
	if err != nil {
		return nil, err
	}
	sample, classes, err := Input(cfg)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		n = cfg.Train.BatchSize
	}
	return FromConfig(dev, cfg, append([]int{n}, sample...), classes)
}

// Config reads and parses a shipped config: name is a file of configs/
// ("fortunes-charlm.yaml") or, for the Fashion-MNIST configs, the model's
// part of the file name ("mlp" for fashion-mnist-mlp.yaml).
func Config(name string) (*train.Config, error) {
	file := name
	if !strings.HasSuffix(file, ".yaml") {
		file = "fashion-mnist-" + name + ".yaml"
	}
	text, err := configs.Files.ReadFile(file)
	if err != nil {
		known, _ := fs.Glob(configs.Files, "*.yaml")
		return nil, fmt.Errorf("unknown config %q (known: %s): %w", name, strings.Join(known, ", "), err)
	}
	return train.ParseConfig("configs/"+file, text, nil)
}

// Input returns the shape of one sample of cfg's data and its number of
// classes: 1×28×28 images and 10 classes for Fashion-MNIST; for a
// character-level language model (model charlm), windows of model.context
// token ids and CharLMVocab, as its text (data set text) gives. Other
// data sets are an error.
func Input(cfg *train.Config) (sample []int, classes int, err error) {
	switch {
	case cfg.Model.Name == "charlm":
		return []int{cfg.Model.Context}, CharLMVocab, nil
	case cfg.Data.Name == "fashion-mnist":
		return []int{1, 28, 28}, 10, nil
	}
	return nil, 0, fmt.Errorf("%s: data set %q: the benchmarks give fashion-mnist images or a charlm's token ids only", cfg.File(), cfg.Data.Name)
}

// FromConfig returns the job of cfg on dev: the model it names for
// samples of shape[1:] and classes classes, built and initialised as a
// training run builds it, the trainer's step with the config's optimizer,
// and a batch of the given shape (batch first) with labels in
// [0, classes), drawn from a generator seeded by the config's seed. For a
// language model (model charlm) shape is N×T and classes the vocabulary's
// size: the batch holds N windows of T+1 random ids, split as Job.Batch
// says.
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
	var b data.Batch
	if cfg.Model.Name == "charlm" {
		b = tokenBatch(rng, shape[0], shape[1], classes)
	} else {
		b = data.Batch{X: make([]float32, device.NumElements(shape)), Shape: slices.Clone(shape), Y: make([]int64, shape[0])}
		for i := range b.X {
			b.X[i] = float32(rng.NormFloat64())
		}
		for i := range b.Y {
			b.Y[i] = rng.Int64N(int64(classes))
		}
	}
	return &Job{Dev: dev, Model: model, Config: cfg, Batch: b, step: step, arena: tensor.NewArena()}, nil
}

// tokenBatch returns n windows of t+1 ids in [0, vocab) drawn from rng,
// split into inputs and next-token targets as the trainer splits them.
func tokenBatch(rng *rand.Rand, n, t, vocab int) data.Batch {
	b := data.Batch{X: make([]float32, 0, n*t), Shape: []int{n, t}, Y: make([]int64, 0, n*t)}
	window := make([]int64, t+1)
	for range n {
		for i := range window {
			window[i] = rng.Int64N(int64(vocab))
		}
		for _, id := range window[:t] {
			b.X = append(b.X, float32(id))
		}
		b.Y = append(b.Y, window[1:]...)
	}
	return b
}

// Samples returns the number of samples of the batch (a language model's
// windows, not its N·T labels).
func (j *Job) Samples() int { return j.Batch.Shape[0] }

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
