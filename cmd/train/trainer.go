package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/checkpoint"
	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu" // importing it registers "cpu"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// EpochMetrics is one line of metrics.jsonl.
type EpochMetrics struct {
	Epoch         int     `json:"epoch"`
	TrainLoss     float64 `json:"train_loss"`
	TrainAccuracy float64 `json:"train_accuracy"`
	TestLoss      float64 `json:"test_loss"`
	TestAccuracy  float64 `json:"test_accuracy"`
	SamplesPerSec float64 `json:"samples_per_sec"`
	Seconds       float64 `json:"seconds"`
	LR            float64 `json:"lr"`
}

// run state of one training job.
type trainer struct {
	cfg    *Config
	dev    device.Device
	model  layers.Layer
	opt    optim.Optimizer
	sched  optim.Schedule
	train  *data.Loader
	test   *data.Loader
	rng    *rand.Rand // shuffling
	stderr io.Writer
	// arena recycles the memory of each step (batch, activations,
	// gradients) for the next one.
	arena *tensor.Arena
}

func train(ctx context.Context, cfg *Config, stdout, stderr io.Writer) error {
	if err := os.MkdirAll(cfg.Output.Dir, 0o755); err != nil {
		return inputError{fmt.Errorf("output.dir: %w", err)}
	}
	dev, err := device.Open(cfg.Device)
	if err != nil {
		return inputError{fmt.Errorf("%s: device: %w", cfg.File(), err)}
	}
	if err := backendError(dev); err != nil {
		return inputError{fmt.Errorf("device %s: %w", dev.Name(), err)}
	}
	trainSet, testSet, err := loadData(cfg)
	if err != nil {
		return inputError{err}
	}
	initRNG := rand.New(rand.NewPCG(cfg.Seed, 1))
	model, err := buildModel(cfg, initRNG)
	if err != nil {
		return inputError{err}
	}
	layers.To(model, dev)
	opt, err := buildOptimizer(cfg, model.Parameters())
	if err != nil {
		return inputError{err}
	}
	sched, err := buildSchedule(cfg, trainSet.Len())
	if err != nil {
		return inputError{err}
	}
	t := &trainer{cfg: cfg, dev: dev, model: model, opt: opt, sched: sched,
		rng: rand.New(rand.NewPCG(cfg.Seed, 2)), stderr: stderr, arena: tensor.NewArena()}
	if t.train, err = data.NewLoader(trainSet, data.LoaderConfig{
		BatchSize: cfg.Train.BatchSize, Shuffle: true, Prefetch: cfg.Train.Prefetch, ReuseMemory: true}); err != nil {
		return inputError{fmt.Errorf("%s: train: %w", cfg.File(), err)}
	}
	if t.test, err = data.NewLoader(testSet, data.LoaderConfig{
		BatchSize: cfg.Train.EvalBatchSize, Prefetch: cfg.Train.Prefetch, ReuseMemory: true}); err != nil {
		return inputError{fmt.Errorf("%s: train: %w", cfg.File(), err)}
	}

	if err := writeConfig(cfg); err != nil {
		return err
	}
	metricsPath := filepath.Join(cfg.Output.Dir, "metrics.jsonl")
	metrics, err := os.Create(metricsPath)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	defer metrics.Close()

	fmt.Fprintf(stdout, "model %s: %d parameters; %d training and %d test samples on %s%s\n",
		cfg.Model.Name, layers.NumParams(model), trainSet.Len(), testSet.Len(), dev.Name(), backend(dev))
	step := 0
	for epoch := 1; epoch <= cfg.Train.Epochs; epoch++ {
		m, err := t.trainEpoch(ctx, epoch, &step)
		if err != nil {
			return err
		}
		if m.TestLoss, m.TestAccuracy, err = t.evaluate(ctx); err != nil {
			return err
		}
		line, _ := json.Marshal(m)
		if _, err := metrics.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("%s: %w", metricsPath, err)
		}
		if err := metrics.Sync(); err != nil {
			return fmt.Errorf("%s: %w", metricsPath, err)
		}
		if err := t.save(epoch); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "epoch %d/%d  train loss %.4f acc %.4f  test loss %.4f acc %.4f  %.0f samples/s  %.1fs\n",
			epoch, cfg.Train.Epochs, m.TrainLoss, m.TrainAccuracy, m.TestLoss, m.TestAccuracy, m.SamplesPerSec, m.Seconds)
	}
	fmt.Fprintf(stdout, "wrote metrics.jsonl, model.safetensors, optimizer.safetensors and config.yaml to %s\n", cfg.Output.Dir)
	return nil
}

// writeConfig saves the configuration in effect (file, defaults and -set
// overrides) as DIR/config.yaml, so a run can be repeated exactly.
func writeConfig(cfg *Config) error {
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("config.yaml: %w", err)
	}
	path := filepath.Join(cfg.Output.Dir, "config.yaml")
	header := fmt.Sprintf("# The configuration of this run: %s with defaults and -set overrides applied.\n", cfg.File())
	if err := os.WriteFile(path, append([]byte(header), out...), 0o644); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// loadData reads the training and test sets named by the config.
func loadData(cfg *Config) (train, test data.Dataset, err error) {
	if cfg.Data.Name != "fashion-mnist" {
		return nil, nil, fmt.Errorf("%s: data.name: unknown data set %q (known: fashion-mnist)", cfg.File(), cfg.Data.Name)
	}
	tr, te, err := data.LoadFashionMNIST(cfg.Data.Dir)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Data.Normalize {
		tr.Normalize(data.FashionMNISTMean, data.FashionMNISTStd)
		te.Normalize(data.FashionMNISTMean, data.FashionMNISTStd)
	}
	train = tr
	if n := cfg.Train.Limit; n > 0 && n < tr.Len() {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		train = data.Subset(tr, idx)
	}
	return train, te, nil
}

// backend describes how a device computes, for devices that say (the CPU
// names its GEMM library), as " (…)".
func backend(dev device.Device) string {
	if b, ok := dev.(interface{ Backend() string }); ok {
		return " (" + b.Backend() + ")"
	}
	return ""
}

// backendError reports a device setting from the environment that cannot
// be honoured, such as HORA_BLAS naming a library that does not open; a
// machine without any BLAS library is fine.
func backendError(dev device.Device) error {
	if b, ok := dev.(interface{ BackendError() error }); ok {
		if err := b.BackendError(); err != nil && !cpu.IsNoBLAS(err) {
			return err
		}
	}
	return nil
}

// batchTensors turns a data batch into device tensors in the step's arena:
// they, and everything computed from them, are valid until the arena's
// next Reset.
func (t *trainer) batchTensors(b data.Batch) (x, y *tensor.Tensor, err error) {
	if x, err = t.arena.FromSlice(t.dev, b.X, b.Shape...); err != nil {
		return nil, nil, err
	}
	if y, err = t.arena.FromSlice(t.dev, b.Y, len(b.Y)); err != nil {
		return nil, nil, err
	}
	return x, y, nil
}

// correct counts the rows of logits whose argmax equals the label.
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

func (t *trainer) trainEpoch(ctx context.Context, epoch int, step *int) (EpochMetrics, error) {
	layers.Train(t.model)
	m := EpochMetrics{Epoch: epoch}
	if t.cfg.Schedule.Per == "epoch" {
		t.opt.SetLR(t.sched.LR(epoch - 1))
	}
	m.LR = t.opt.LR()
	bar := newProgress(t.stderr, t.cfg.Output.Progress, t.train.NumBatches(), fmt.Sprintf("epoch %d/%d", epoch, t.cfg.Train.Epochs))
	var lossSum float64
	seen, right := 0, 0
	start := time.Now()
	for b := range t.train.Batches(ctx, t.rng) {
		if t.cfg.Schedule.Per == "step" {
			t.opt.SetLR(t.sched.LR(*step))
		}
		x, y, err := t.batchTensors(b)
		if err != nil {
			return m, err
		}
		logits := t.model.Forward(autograd.Constant(x))
		loss := layers.CrossEntropy(logits, y, layers.CrossEntropyOptions{LabelSmoothing: t.cfg.Train.LabelSmoothing})
		l := loss.Value.Item()
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return m, fmt.Errorf("epoch %d step %d: loss is %v; lower optimizer.lr or set optimizer.clip_norm", epoch, *step+1, l)
		}
		if err := autograd.Backward(loss); err != nil {
			return m, err
		}
		if c := t.cfg.Optimizer.ClipNorm; c > 0 {
			optim.ClipGradNorm(t.opt.Params(), c)
		}
		if err := t.opt.Step(); err != nil {
			return m, err
		}
		t.opt.ZeroGrad()
		*step++
		lossSum += l * float64(b.Len())
		seen += b.Len()
		right += correct(logits.Value, y)
		t.arena.Reset()
		bar.step(fmt.Sprintf("loss %.4f  %.0f samples/s", lossSum/float64(seen), float64(seen)/time.Since(start).Seconds()))
	}
	if err := ctx.Err(); err != nil {
		return m, err
	}
	bar.finish()
	m.Seconds = time.Since(start).Seconds()
	m.TrainLoss = lossSum / float64(max(seen, 1))
	m.TrainAccuracy = float64(right) / float64(max(seen, 1))
	m.SamplesPerSec = float64(seen) / m.Seconds
	return m, nil
}

// evaluate returns the mean loss and accuracy on the test set.
func (t *trainer) evaluate(ctx context.Context) (loss, accuracy float64, err error) {
	layers.Eval(t.model)
	seen, right := 0, 0
	for b := range t.test.Batches(ctx, nil) {
		x, y, err := t.batchTensors(b)
		if err != nil {
			return 0, 0, err
		}
		logits := t.model.Forward(autograd.NoGrad(autograd.Constant(x)))
		l := layers.CrossEntropy(logits, y, layers.CrossEntropyOptions{Reduction: layers.ReduceSum})
		loss += l.Value.Item()
		right += correct(logits.Value, y)
		seen += b.Len()
		t.arena.Reset()
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	return loss / float64(max(seen, 1)), float64(right) / float64(max(seen, 1)), nil
}

// save writes the model weights and the optimizer state, each atomically,
// after an epoch.
func (t *trainer) save(epoch int) error {
	meta := map[string]string{"model": t.cfg.Model.Name, "epoch": fmt.Sprint(epoch), "format": "pt"}
	for name, state := range map[string]map[string]*tensor.Tensor{
		"model.safetensors":     layers.StateDict(t.model),
		"optimizer.safetensors": t.opt.StateDict(),
	} {
		path := filepath.Join(t.cfg.Output.Dir, name)
		if err := checkpoint.Save(path, state, meta); err != nil {
			return fmt.Errorf("saving %s: %w", path, err)
		}
	}
	return nil
}
