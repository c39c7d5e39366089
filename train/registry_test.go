package train

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/layers"
)

// blobArgs are the keys of the test data set "blobs" (data.args).
type blobArgs struct {
	Samples  int `yaml:"samples"`
	Features int `yaml:"features"`
}

func (a *blobArgs) SetDefaults() { a.Samples, a.Features = 256, 4 }

func (a blobArgs) Validate() error {
	if a.Features < 1 {
		return fmt.Errorf("features must be >= 1, found %d", a.Features)
	}
	return nil
}

// loadBlobs makes two classes told apart by the sign of the first
// feature.
func loadBlobs(a blobArgs, cfg *Config) (*Data, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, 9))
	makeSet := func(n int) (*data.InMemory, error) {
		x, y := make([]float32, n*a.Features), make([]int64, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range y {
			if x[i*a.Features] > 0 {
				y[i] = 1
			}
		}
		return data.NewInMemory(x, y, []int{a.Features}, 2)
	}
	tr, err := makeSet(a.Samples)
	if err != nil {
		return nil, err
	}
	te, err := makeSet(a.Samples / 2)
	if err != nil {
		return nil, err
	}
	return &Data{Train: tr, Test: te, Classes: 2}, nil
}

// tinyArgs are the keys of the test model "tiny" (model.args).
type tinyArgs struct {
	Hidden int `yaml:"hidden"`
}

func newTiny(a tinyArgs, in ModelInput) (layers.Layer, error) {
	if a.Hidden == 0 {
		return nil, errors.New("hidden must be set")
	}
	return layers.NewSequential(
		layers.NewFlatten(),
		layers.NewLinear(in.SampleShape[0], a.Hidden, true, in.Rand), layers.ReLU{},
		layers.NewLinear(a.Hidden, in.Classes, true, in.Rand),
	), nil
}

// registerTestEntries registers the data set "blobs" and the model
// "tiny" for one test, and removes them after it, so that the other tests
// see only the built-in names.
func registerTestEntries(t *testing.T) {
	RegisterDataset("blobs", loadBlobs)
	RegisterModel("tiny", newTiny)
	t.Cleanup(func() {
		datasetRegistry.remove("blobs")
		modelRegistry.remove("tiny")
	})
}

func writeTestConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

const registeredConfig = `data:
  name: blobs
  args:
    samples: 512
model:
  name: tiny
  args:
    hidden: 16
optimizer: {name: adam, lr: 0.01}
train: {epochs: 3, batch_size: 32}
output: {plot: false, progress: false}
`

func TestRegisteredModelAndDataset(t *testing.T) {
	registerTestEntries(t)
	path := writeTestConfig(t, registeredConfig)
	out := t.TempDir()
	code, stdout, stderr := runTrain(t, "-config", path, "-out", out, "-q", "-set", "model.args.hidden=32")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "model tiny: 226 parameters; 512 training and 256 test samples", "hidden 32 from -set: 4·32+32 + 32·2+2")
	saved, err := os.ReadFile(filepath.Join(out, "config.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(saved), "hidden: 32")
	assert.Contains(t, string(saved), "samples: 512")
	assert.Contains(t, string(saved), "features: 4", "config.yaml records the defaults of the args")

	// The run resumes, evaluates and exports like a built-in one.
	code, stdout, stderr = runTrain(t, "resume", "-run", out, "-set", "train.epochs=4", "-q")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "epoch 4/4", stderr)
	code, stdout, stderr = runTrain(t, "eval", "-run", out, "-checkpoint", "last")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `"step":64`)
}

func TestRegisteredArgsErrors(t *testing.T) {
	registerTestEntries(t)
	for _, c := range []struct{ name, config, set, want string }{
		{"unknown key from -set", registeredConfig, "model.args.hiden=3", `-set model.args.hiden=3: unknown key "hiden" in model.args (known: hidden); did you mean "hidden"?`},
		{"wrong type", "data: {name: blobs, args: {samples: many}}\nmodel: {name: mlp}\noptimizer: {name: sgd, lr: 0.1}\n", "",
			`run.yaml:1:37: data.args.samples: expected an integer, found "many"`},
		{"validate", "data: {name: blobs, args: {features: 0}}\nmodel: {name: mlp}\noptimizer: {name: sgd, lr: 0.1}\n", "",
			`run.yaml:1:28: data.args: features must be >= 1, found 0`},
		{"args of a built-in model", "model:\n  name: mlp\n  args: {hidden: 3}\noptimizer: {name: sgd, lr: 0.1}\n", "",
			`run.yaml:3:10: model.args: expected no keys for model "mlp" (only a model registered with train.RegisterModel takes model.args), found a mapping`},
		{"unknown model", "model: {name: tinny}\noptimizer: {name: sgd, lr: 0.1}\n", "",
			`model.name: expected one of mlp, lenet5, cnn, resnet18, resnet34, resnet20, resnet56, resnet, mobilenet, transformer, charlm, onnx, tiny, found "tinny"`},
		{"builder error", "data: {name: blobs}\nmodel: {name: tiny}\noptimizer: {name: sgd, lr: 0.1}\n", "",
			`model "tiny": hidden must be set`},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"-config", writeTestConfig(t, c.config), "-out", t.TempDir(), "-q"}
			if c.set != "" {
				args = append(args, "-set", c.set)
			}
			code, _, stderr := runTrain(t, args...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, c.want)
		})
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	registerTestEntries(t)
	assert.Panics(t, func() { RegisterModel("tiny", newTiny) }, "a registered name")
	assert.Panics(t, func() { RegisterModel("mlp", newTiny) }, "a built-in name")
	assert.Panics(t, func() { RegisterModel("", newTiny) }, "no name")
	assert.Panics(t, func() { RegisterDataset("fashion-mnist", loadBlobs) }, "a built-in data set")
}

// TestFitCallbacks checks that Fit runs the loop with step and epoch
// callbacks that see the metrics, that ErrStop ends the run successfully
// after a checkpoint, and that Resume continues it.
func TestFitCallbacks(t *testing.T) {
	newData := func() *Data {
		d, err := loadBlobs(blobArgs{Samples: 256, Features: 4}, DefaultConfig())
		require.NoError(t, err)
		return d
	}
	newModel := func() layers.Layer {
		m, err := newTiny(tinyArgs{Hidden: 8}, ModelInput{SampleShape: []int{4}, Classes: 2, Rand: rand.New(rand.NewPCG(1, 1))})
		require.NoError(t, err)
		return m
	}
	cfg := DefaultConfig()
	cfg.Optimizer.Name, cfg.Optimizer.LR = "sgd", 0.1
	cfg.Train.Epochs, cfg.Train.BatchSize = 5, 32
	cfg.Output.Dir, cfg.Output.Progress, cfg.Output.Plot, cfg.Output.Quiet = t.TempDir(), false, false, true
	var steps []StepMetrics
	epochs := 0
	cb := Callback{
		Step: func(m StepMetrics) error { steps = append(steps, m); return nil },
		Epoch: func(m EpochMetrics) error {
			epochs++
			if m.Epoch == 2 {
				return ErrStop
			}
			return nil
		},
	}
	history, err := Fit(context.Background(), newModel(), newData(), cfg, cb)
	require.NoError(t, err)
	require.Len(t, history, 2, "stopped after epoch 2")
	assert.Equal(t, 2, epochs)
	require.Len(t, steps, 16, "8 steps of 32 per epoch")
	assert.Equal(t, 1, steps[0].Step)
	assert.Equal(t, 0.1, steps[0].LR)
	assert.InDelta(t, 1.0/8, steps[0].Epoch, 1e-12)

	_, err = Fit(context.Background(), newModel(), newData(), cfg)
	require.ErrorContains(t, err, "holds the checkpoints of an earlier run: continue it with train.Resume")

	history, err = Resume(context.Background(), newModel(), newData(), cfg)
	require.NoError(t, err)
	require.Len(t, history, 3, "epochs 3 to 5")
	assert.Equal(t, 5, history[2].Epoch)

	fail := Callback{Step: func(StepMetrics) error { return errors.New("boom") }}
	cfg.Output.Dir = t.TempDir()
	_, err = Fit(context.Background(), newModel(), newData(), cfg, fail)
	require.ErrorContains(t, err, "callback: boom")

	cfg.Optimizer.LR = -1
	_, err = Fit(context.Background(), newModel(), newData(), cfg)
	require.ErrorContains(t, err, "optimizer.lr: expected a number > 0 and finite, found -1")
}
