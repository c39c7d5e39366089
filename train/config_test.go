package train

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/internal/fuzzbound"
)

// validTestConfig returns a configuration built in Go that passes Validate.
func validTestConfig() *Config {
	c := DefaultConfig()
	c.Model.Name = "mlp"
	c.Optimizer.Name = "sgd"
	c.Optimizer.LR = 0.1
	c.Output.Dir = "runs/test"
	return c
}

// minimalTestYAML is the smallest valid configuration.
const minimalTestYAML = "model:\n  name: mlp\noptimizer:\n  name: sgd\n  lr: 0.1\n"

func TestLoadConfigShipped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path  string
		check func(t *testing.T, c *Config)
	}{
		{
			path: "../configs/fashion-mnist-mlp.yaml",
			check: func(t *testing.T, c *Config) {
				wantModel := DefaultConfig().Model
				wantModel.Name = "mlp"
				assert.Equal(t, wantModel, c.Model)
				assert.Equal(t, "sgd", c.Optimizer.Name)
				assert.InDelta(t, 0.05, c.Optimizer.LR, 0)
				assert.InDelta(t, 0.9, c.Optimizer.Momentum, 0)
				assert.Equal(t, "runs/fashion-mnist-mlp", c.Output.Dir)
			},
		},
		{
			path: "../configs/fashion-mnist-cnn.yaml",
			check: func(t *testing.T, c *Config) {
				assert.Equal(t, "cnn", c.Model.Name)
				assert.Equal(t, "adam", c.Optimizer.Name)
				assert.InDelta(t, 1e-3, c.Optimizer.LR, 0)
				assert.Equal(t, [2]float64{0.9, 0.999}, c.Optimizer.Betas)
				assert.Equal(t, "runs/fashion-mnist-cnn", c.Output.Dir)
			},
		},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			t.Parallel()
			c, err := LoadConfig(tt.path, nil)
			require.NoError(t, err)
			require.NoError(t, c.Validate())
			assert.Equal(t, tt.path, c.File())
			assert.Equal(t, uint64(1), c.Seed)
			assert.Equal(t, "cpu", c.Device)
			assert.Equal(t, DefaultConfig().Data, c.Data)
			assert.Equal(t, "none", c.Schedule.Name)
			assert.Equal(t, 10, c.Train.Epochs)
			assert.Equal(t, 128, c.Train.BatchSize)
			tt.check(t, c)
		})
	}
}

func TestLoadConfigDefaults(t *testing.T) {
	t.Parallel()
	c, err := LoadConfig("testdata/minimal.yaml", nil)
	require.NoError(t, err)

	want := DefaultConfig()
	assert.Equal(t, want.Seed, c.Seed)
	assert.Equal(t, want.Device, c.Device)
	assert.Equal(t, want.Data, c.Data)
	wantModel := want.Model
	wantModel.Name = "mlp"
	assert.Equal(t, wantModel, c.Model)
	assert.Equal(t, OptimizerConfig{
		Name: "sgd", LR: 0.1, Betas: [2]float64{0.9, 0.999}, Eps: 1e-8, Alpha: 0.99,
	}, c.Optimizer)
	assert.Equal(t, ScheduleConfig{Name: "none", Gamma: 0.1, WarmupStartFactor: 0.1, Per: "epoch"}, c.Schedule)
	assert.Equal(t, TrainConfig{Epochs: 1, BatchSize: 128, EvalBatchSize: 1000, Prefetch: 2, LogEverySteps: 50}, c.Train)
	assert.Equal(t, OutputConfig{Dir: filepath.Join("runs", "minimal"), Progress: true, Format: "text", Plot: true}, c.Output)
	assert.Equal(t, CheckpointConfig{Keep: 3, BestMetric: "auto"}, c.Checkpoint)
}

func TestLoadConfigEpsDefault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		sets []string
		want float64
	}{
		{"sgd", nil, 1e-8},
		{"adam", []string{"optimizer.name=adam"}, 1e-8},
		{"adagrad", []string{"optimizer.name=adagrad"}, 1e-10},
		{"adagrad explicit", []string{"optimizer.name=adagrad", "optimizer.eps=1e-6"}, 1e-6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig("eps.yaml", []byte(minimalTestYAML), tt.sets)
			require.NoError(t, err)
			assert.InDelta(t, tt.want, c.Optimizer.Eps, 0)
		})
	}
}

func TestLoadConfigSets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		sets  []string
		check func(t *testing.T, c *Config)
	}{
		{"int", []string{"train.epochs=3"}, func(t *testing.T, c *Config) {
			assert.Equal(t, 3, c.Train.Epochs)
		}},
		{"float with exponent", []string{"optimizer.lr=1e-3"}, func(t *testing.T, c *Config) {
			assert.InDelta(t, 1e-3, c.Optimizer.LR, 0)
		}},
		{"integer into float", []string{"optimizer.lr=1"}, func(t *testing.T, c *Config) {
			assert.InDelta(t, 1.0, c.Optimizer.LR, 0)
		}},
		{"list replaces default", []string{"model.hidden=[256,128,64]"}, func(t *testing.T, c *Config) {
			assert.Equal(t, []int{256, 128, 64}, c.Model.Hidden)
		}},
		{"empty list", []string{"model.hidden=[]"}, func(t *testing.T, c *Config) {
			assert.Empty(t, c.Model.Hidden)
		}},
		{"array", []string{"optimizer.betas=[0.8, 0.99]"}, func(t *testing.T, c *Config) {
			assert.Equal(t, [2]float64{0.8, 0.99}, c.Optimizer.Betas)
		}},
		{"bool", []string{"output.progress=false", "data.normalize=false"}, func(t *testing.T, c *Config) {
			assert.False(t, c.Output.Progress)
			assert.False(t, c.Data.Normalize)
		}},
		{"string with colon", []string{"device=cuda:1"}, func(t *testing.T, c *Config) {
			assert.Equal(t, "cuda:1", c.Device)
		}},
		{"quoted string", []string{`output.dir="runs/a b"`}, func(t *testing.T, c *Config) {
			assert.Equal(t, "runs/a b", c.Output.Dir)
		}},
		{"spaces around", []string{" train.batch_size = 64 "}, func(t *testing.T, c *Config) {
			assert.Equal(t, 64, c.Train.BatchSize)
		}},
		{"whole section merges", []string{"schedule={name: step, step_size: 2}"}, func(t *testing.T, c *Config) {
			assert.Equal(t, "step", c.Schedule.Name)
			assert.Equal(t, 2, c.Schedule.StepSize)
			assert.InDelta(t, 0.1, c.Schedule.Gamma, 0)
		}},
		{"later set wins", []string{"train.epochs=3", "train.epochs=5"}, func(t *testing.T, c *Config) {
			assert.Equal(t, 5, c.Train.Epochs)
		}},
		{"seed", []string{"seed=18446744073709551615"}, func(t *testing.T, c *Config) {
			assert.Equal(t, uint64(18446744073709551615), c.Seed)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig("sets.yaml", []byte(minimalTestYAML), tt.sets)
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestLoadConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		path string   // a file to load; "" for content
		yaml string   // content parsed as "inline.yaml" when path is ""
		sets []string // -set arguments
		want []string // substrings of the error
	}{
		{
			name: "missing file",
			path: "testdata/no-such-file.yaml",
			want: []string{"testdata/no-such-file.yaml", "no such file"},
		},
		{
			name: "empty file",
			path: "testdata/empty.yaml",
			want: []string{"testdata/empty.yaml: the file is empty", "seed, device, precision, tf32, task, data"},
		},
		{
			name: "only comments",
			path: "testdata/comments_only.yaml",
			want: []string{"testdata/comments_only.yaml: the file is empty"},
		},
		{
			name: "unknown key",
			path: "testdata/unknown_key.yaml",
			want: []string{
				`testdata/unknown_key.yaml:8:3: unknown key "epoch" in train (known: epochs, batch_size, eval_batch_size, label_smoothing, prefetch, limit, eval_every_steps, log_every_steps, ema, patience, min_delta, threads)`,
				`did you mean "epochs"?`,
			},
		},
		{
			name: "wrong type",
			path: "testdata/wrong_type.yaml",
			want: []string{`testdata/wrong_type.yaml:5:7: optimizer.lr: expected a number, found "fast"`},
		},
		{
			name: "syntax error",
			path: "testdata/syntax_error.yaml",
			want: []string{"testdata/syntax_error.yaml:", "invalid YAML"},
		},
		{
			name: "duplicate key",
			path: "testdata/duplicate_key.yaml",
			want: []string{"testdata/duplicate_key.yaml:6:3:", `"lr"`},
		},
		{
			name: "invalid values",
			path: "testdata/invalid_values.yaml",
			want: []string{
				`testdata/invalid_values.yaml:3:9: model.name: expected one of mlp, lenet5, cnn, resnet18, resnet34, resnet20, resnet56, resnet, mobilenet, transformer, charlm, onnx, found "resnet99"`,
				"testdata/invalid_values.yaml:6:7: optimizer.lr: expected a number > 0 and finite, found -0.1",
				"testdata/invalid_values.yaml:8:11: train.epochs: expected an integer >= 1, found 0",
			},
		},
		{
			name: "unknown top-level key",
			yaml: minimalTestYAML + "epochs: 3\n",
			want: []string{`inline.yaml:6:1: unknown key "epochs" at the top level (known: seed, device, precision, tf32, task, data, model, optimizer, schedule, train, output, dist, timeline, export, checkpoint, sample, deterministic)`},
		},
		{
			name: "string for int",
			yaml: minimalTestYAML + "train:\n  epochs: ten\n",
			want: []string{`inline.yaml:7:11: train.epochs: expected an integer, found "ten"`},
		},
		{
			name: "float for int",
			yaml: minimalTestYAML + "train: {batch_size: 1.5}\n",
			want: []string{"inline.yaml:6:21: train.batch_size: expected an integer, found 1.5"},
		},
		{
			name: "quoted number for float",
			yaml: minimalTestYAML + "train: {label_smoothing: \"0.5\"}\n",
			want: []string{`inline.yaml:6:26: train.label_smoothing: expected a number, found "0.5"`},
		},
		{
			name: "negative seed",
			yaml: minimalTestYAML + "seed: -1\n",
			want: []string{"inline.yaml:6:7: seed: expected a non-negative integer, found -1"},
		},
		{
			name: "int overflow",
			yaml: minimalTestYAML + "train:\n  limit: 99999999999999999999\n",
			want: []string{"inline.yaml:7:10: train.limit: expected an integer, found 99999999999999999999 (out of range)"},
		},
		{
			name: "infinite number",
			yaml: minimalTestYAML + "train: {label_smoothing: .inf}\n",
			want: []string{"inline.yaml:6:26: train.label_smoothing: expected a number, found .inf"},
		},
		{
			name: "not a number",
			yaml: minimalTestYAML + "train: {min_delta: .nan}\n",
			want: []string{"inline.yaml:6:20: train.min_delta: expected a number, found .nan"},
		},
		{
			name: "overflowing number",
			yaml: minimalTestYAML + "dist: {timeout_s: 1e999}\n",
			want: []string{"inline.yaml:6:19: dist.timeout_s: expected a number, found 1e999"},
		},
		{
			name: "set infinite number",
			yaml: minimalTestYAML,
			sets: []string{"sample.temperature=-.inf"},
			want: []string{"-set sample.temperature=-.inf: sample.temperature: expected a number, found -.inf"},
		},
		{
			name: "number for bool",
			yaml: minimalTestYAML + "output: {progress: 1}\n",
			want: []string{"inline.yaml:6:20: output.progress: expected true or false, found 1"},
		},
		{
			name: "bool for string",
			yaml: minimalTestYAML + "device: true\n",
			want: []string{"inline.yaml:6:9: device: expected a string, found true"},
		},
		{
			name: "empty value",
			yaml: minimalTestYAML + "train:\n  epochs:\n",
			want: []string{"inline.yaml:7:", "train.epochs: expected an integer, found an empty value"},
		},
		{
			name: "scalar for list",
			yaml: minimalTestYAML + "schedule: {milestones: 5}\n",
			want: []string{"inline.yaml:6:24: schedule.milestones: expected a list of integers, found 5"},
		},
		{
			name: "bad list element",
			yaml: "model:\n  name: mlp\n  hidden: [512, x]\noptimizer: {name: sgd, lr: 0.1}\n",
			want: []string{`inline.yaml:3:17: model.hidden[1]: expected an integer, found "x"`},
		},
		{
			name: "array length",
			yaml: "model: {name: mlp}\noptimizer: {name: sgd, lr: 0.1, betas: [0.9]}\n",
			want: []string{"inline.yaml:2:40: optimizer.betas: expected a list of 2 numbers, found a list of 1"},
		},
		{
			name: "scalar for section",
			yaml: minimalTestYAML + "train: 3\n",
			want: []string{"inline.yaml:6:8: train: expected a mapping with keys epochs, batch_size", "found 3"},
		},
		{
			name: "list at top level",
			yaml: "- 1\n- 2\n",
			want: []string{"inline.yaml:1:1:", "expected a mapping with keys seed", "found a list of 2"},
		},
		{
			name: "two documents",
			yaml: minimalTestYAML + "---\nseed: 2\n",
			want: []string{"inline.yaml:7:1: expected one YAML document, found 2"},
		},
		{
			name: "unknown alias",
			yaml: minimalTestYAML + "seed: *nope\n",
			want: []string{"inline.yaml:6:7: unknown alias *nope"},
		},
		{
			name: "merge key",
			yaml: minimalTestYAML + "train:\n  <<: {epochs: 2}\n",
			want: []string{"inline.yaml:7:3: merge keys (<<) are not supported in train"},
		},
		{
			name: "set unknown key",
			yaml: minimalTestYAML,
			sets: []string{"train.epoch=1"},
			want: []string{`-set train.epoch=1: unknown key "epoch" in train (known: epochs, batch_size`},
		},
		{
			name: "set unknown section",
			yaml: minimalTestYAML,
			sets: []string{"trian.epochs=1"},
			want: []string{`-set trian.epochs=1: unknown key "trian" at the top level (known: seed,`, `did you mean "train"?`},
		},
		{
			name: "set wrong type",
			yaml: minimalTestYAML,
			sets: []string{"optimizer.lr=fast"},
			want: []string{`-set optimizer.lr=fast: optimizer.lr: expected a number, found "fast"`},
		},
		{
			name: "set wrong list element",
			yaml: minimalTestYAML,
			sets: []string{"model.hidden=[256,a]"},
			want: []string{`-set model.hidden=[256,a]: model.hidden[1]: expected an integer, found "a"`},
		},
		{
			name: "set missing =",
			yaml: minimalTestYAML,
			sets: []string{"train.epochs"},
			want: []string{`-set train.epochs: expected key=value`, `found no "="`},
		},
		{
			name: "set empty key",
			yaml: minimalTestYAML,
			sets: []string{"=3"},
			want: []string{"-set =3: expected key=value, found an empty key"},
		},
		{
			name: "set malformed key",
			yaml: minimalTestYAML,
			sets: []string{"train..epochs=3"},
			want: []string{`-set train..epochs=3: malformed key "train..epochs"`},
		},
		{
			name: "set below a value",
			yaml: minimalTestYAML,
			sets: []string{"train.epochs.max=3"},
			want: []string{"-set train.epochs.max=3: train.epochs is an integer, not a section"},
		},
		{
			name: "set invalid YAML",
			yaml: minimalTestYAML,
			sets: []string{"model.hidden=[1,"},
			want: []string{"-set model.hidden=[1,: model.hidden: invalid YAML value"},
		},
		{
			name: "set empty value",
			yaml: minimalTestYAML,
			sets: []string{"train.epochs="},
			want: []string{"-set train.epochs=: train.epochs: expected an integer, found an empty value"},
		},
		{
			name: "set invalid value",
			yaml: minimalTestYAML,
			sets: []string{"train.epochs=0"},
			want: []string{"inline.yaml: train.epochs: expected an integer >= 1, found 0 (from -set train.epochs=0)"},
		},
		{
			name: "set overrides a bad file value",
			yaml: minimalTestYAML + "train: {epochs: 0}\n",
			sets: []string{"train.batch_size=0"},
			want: []string{
				"inline.yaml:6:17: train.epochs: expected an integer >= 1, found 0",
				"inline.yaml: train.batch_size: expected an integer >= 1, found 0 (from -set train.batch_size=0)",
			},
		},
		{
			name: "required keys",
			yaml: "seed: 2\n",
			want: []string{
				`inline.yaml: model.name: expected one of mlp, lenet5, cnn, resnet18, resnet34, resnet20, resnet56, resnet, mobilenet, transformer, charlm, onnx, found "" (the key is not set)`,
				`inline.yaml: optimizer.name: expected one of sgd, adam, adamw, rmsprop, adagrad, found "" (the key is not set)`,
				"inline.yaml: optimizer.lr: expected a number > 0 and finite, found 0 (the key is not set)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var (
				c   *Config
				err error
			)
			if tt.path != "" {
				c, err = LoadConfig(tt.path, tt.sets)
			} else {
				c, err = ParseConfig("inline.yaml", []byte(tt.yaml), tt.sets)
			}
			require.Error(t, err)
			assert.Nil(t, c)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			if len(tt.want) == 1 {
				assert.NotContains(t, err.Error(), "\n", "a single problem is reported on one line")
			}
		})
	}
}

func TestLoadConfigMissingFileIsNotExist(t *testing.T) {
	t.Parallel()
	_, err := LoadConfig(filepath.Join(t.TempDir(), "absent.yaml"), nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		modify func(c *Config)
		want   string // "" when the configuration is valid
	}{
		{"valid", func(*Config) {}, ""},
		{"lenet5", func(c *Config) { c.Model.Name = "lenet5" }, ""},
		{"step schedule", func(c *Config) { c.Schedule.Name = "step"; c.Schedule.StepSize = 3 }, ""},
		{"multistep schedule", func(c *Config) { c.Schedule.Name = "multistep"; c.Schedule.Milestones = []int{2, 5} }, ""},
		{"cosine schedule per step", func(c *Config) {
			c.Schedule.Name = "cosine"
			c.Schedule.MinLR = 1e-4
			c.Schedule.Per = "step"
		}, ""},
		{"nesterov", func(c *Config) { c.Optimizer.Momentum = 0.9; c.Optimizer.Nesterov = true }, ""},
		{"unknown model", func(c *Config) { c.Model.Name = "resnet99" },
			`config: model.name: expected one of mlp, lenet5, cnn, resnet18, resnet34, resnet20, resnet56, resnet, mobilenet, transformer, charlm, onnx, found "resnet99"`},
		{"unknown activation", func(c *Config) { c.Model.Activation = "elu" },
			`model.activation: expected one of relu, gelu, tanh, sigmoid, silu, found "elu"`},
		{"zero width", func(c *Config) { c.Model.Hidden = []int{512, 0} },
			"model.hidden[1]: expected a layer width >= 1, found 0"},
		{"dropout 1", func(c *Config) { c.Model.Dropout = 1 },
			"model.dropout: expected a number in [0, 1), found 1"},
		{"negative dropout", func(c *Config) { c.Model.Dropout = -0.1 },
			"model.dropout: expected a number in [0, 1), found -0.1"},
		{"unknown optimizer", func(c *Config) { c.Optimizer.Name = "lion" },
			`optimizer.name: expected one of sgd, adam, adamw, rmsprop, adagrad, found "lion"`},
		{"zero lr", func(c *Config) { c.Optimizer.LR = 0 },
			"optimizer.lr: expected a number > 0 and finite, found 0"},
		{"beta 1", func(c *Config) { c.Optimizer.Name = "adam"; c.Optimizer.Betas[1] = 1 },
			"optimizer.betas[1]: expected a number in [0, 1), found 1"},
		{"zero eps", func(c *Config) { c.Optimizer.Name = "adamw"; c.Optimizer.Eps = 0 },
			"optimizer.eps: expected a number > 0 and finite, found 0"},
		{"eps of another optimizer", func(c *Config) { c.Optimizer.Eps = 0 }, ""},
		{"negative weight decay", func(c *Config) { c.Optimizer.WeightDecay = -1 },
			"optimizer.weight_decay: expected a number >= 0 and finite, found -1"},
		{"nesterov without momentum", func(c *Config) { c.Optimizer.Nesterov = true },
			"optimizer.nesterov: expected false unless Momentum > 0 and Dampening == 0, found true with Momentum 0 and Dampening 0"},
		{"unknown schedule", func(c *Config) { c.Schedule.Name = "linear" },
			`schedule.name: expected one of none, step, multistep, cosine, found "linear"`},
		{"step without step_size", func(c *Config) { c.Schedule.Name = "step" },
			`schedule.step_size: expected an integer >= 1, found 0`},
		{"multistep without milestones", func(c *Config) { c.Schedule.Name = "multistep" },
			`schedule.milestones: expected a non-empty list of increasing epochs, found []`},
		{"multistep decreasing", func(c *Config) { c.Schedule.Name = "multistep"; c.Schedule.Milestones = []int{5, 2} },
			"schedule.milestones[1]: expected an integer > 5 (milestones must increase), found 2"},
		{"cosine min_lr above lr", func(c *Config) { c.Schedule.Name = "cosine"; c.Schedule.MinLR = 1 },
			"schedule.min_lr: expected a number in [0, base learning rate 0.1], found 1"},
		{"bad per", func(c *Config) { c.Schedule.Per = "batch" },
			`schedule.per: expected one of epoch, step, found "batch"`},
		{"warmup factor", func(c *Config) { c.Schedule.WarmupEpochs = 2; c.Schedule.WarmupStartFactor = 0 },
			"schedule.warmup_start_factor: expected a number in (0, 1], found 0"},
		{"zero epochs", func(c *Config) { c.Train.Epochs = 0 },
			"train.epochs: expected an integer >= 1, found 0"},
		{"zero batch", func(c *Config) { c.Train.BatchSize = 0 },
			"train.batch_size: expected an integer >= 1, found 0"},
		{"label smoothing 1", func(c *Config) { c.Train.LabelSmoothing = 1 },
			"train.label_smoothing: expected a number in [0, 1), found 1"},
		{"negative limit", func(c *Config) { c.Train.Limit = -1 },
			"train.limit: expected an integer >= 0 (0 uses every sample), found -1"},
		{"unknown lr scaling", func(c *Config) { c.Dist.LRScaling = "quadratic" },
			`dist.lr_scaling: expected one of linear, sqrt, none, found "quadratic"`},
		{"unknown compression", func(c *Config) { c.Dist.Compression = "int8" },
			`dist.compression: expected one of none, fp16, found "int8"`},
		{"zero backward passes", func(c *Config) { c.Dist.BackwardPassesPerStep = 0 },
			"dist.backward_passes_per_step: expected an integer >= 1, found 0"},
		{"negative fusion threshold", func(c *Config) { c.Dist.FusionThreshold = -5 },
			"dist.fusion_threshold: expected a size in bytes >= 0 (0 turns fusion off), found -5"},
		{"zero cycle time", func(c *Config) { c.Dist.CycleTimeMS = 0 },
			"dist.cycle_time_ms: expected a number > 0, found 0"},
		{"negative warmup", func(c *Config) { c.Dist.WarmupSteps = -1 },
			"dist.warmup_steps: expected an integer >= 0, found -1"},
		{"negative stall warning", func(c *Config) { c.Dist.StallWarningS = -1 },
			"dist.stall_warning_s: expected a number >= 0, found -1"},
		{"empty device", func(c *Config) { c.Device = "" },
			`device: expected a device name such as "cpu" or "cuda:0", found ""`},
		{"unknown data set", func(c *Config) { c.Data.Name = "mnist" },
			`data.name: expected one of fashion-mnist, idx, text, images, csv, found "mnist"`},
		{"empty output dir", func(c *Config) { c.Output.Dir = "" },
			`output.dir: expected a folder, found ""`},
		{"a table's key for images", func(c *Config) { c.Data.Name, c.Data.Dir, c.Data.Label = "images", "pets", "species" },
			`data.label: expected no value for data set "images" (the key is read by data set "csv" only), found "species"`},
		{"an image key for a table", func(c *Config) {
			c.Data.Name, c.Data.File, c.Data.Label, c.Data.ImageSize = "csv", "t.csv", "y", []int{32, 32}
		},
			`data.image_size: expected no value for data set "csv" (the key is read by data set "images" only), found [32 32]`},
		{"csv without a label", func(c *Config) { c.Data.Name, c.Data.File = "csv", "t.csv" },
			`data.label: expected the column to predict`},
		{"csv with a file and a train file", func(c *Config) {
			c.Data.Name, c.Data.File, c.Data.TrainFile, c.Data.Label = "csv", "t.csv", "u.csv", "y"
		},
			`data.file: expected "" when data.train_file and data.val_file name the tables`},
		{"regression of images", func(c *Config) { c.Task, c.Data.Name, c.Data.Dir = "regression", "images", "pets" },
			`task: expected "classification" for data set "images"`},
		{"bad image size", func(c *Config) { c.Data.Name, c.Data.Dir, c.Data.ImageSize = "images", "pets", []int{32} },
			`data.image_size: expected [height, width], or [] for the first image's size, found [32]`},
		{"mean and std of different lengths", func(c *Config) {
			c.Data.Name, c.Data.Dir, c.Data.Mean, c.Data.Std = "images", "pets", []float64{0.5, 0.5, 0.5}, []float64{0.2}
		},
			`data.std: expected as many values as data.mean (3), found [0.2]`},
		{"a freeze glob that is not one", func(c *Config) { c.Model.Freeze = []string{"[a"} },
			`model.freeze[0]: expected a glob pattern of parameter names`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := validTestConfig()
			tt.modify(c)
			err := c.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.True(t, strings.HasPrefix(err.Error(), "config: "), "prefixed by the source: %q", err)
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	c := validTestConfig()
	c.Train.Epochs = 0
	c.Optimizer.LR = -1
	err := c.Validate()
	require.Error(t, err)
	assert.Len(t, strings.Split(err.Error(), "\n"), 2)
}

func TestDefaultConfigNeedsRequiredKeys(t *testing.T) {
	t.Parallel()
	err := DefaultConfig().Validate()
	require.Error(t, err)
	for _, key := range []string{"model.name", "optimizer.name", "optimizer.lr", "output.dir"} {
		assert.Contains(t, err.Error(), key)
	}
}

// TestConfigRoundTrip checks that a configuration written with yaml.Marshal
// (as main may do to record a run) reads back the same.
func TestConfigRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []string{
		"../configs/fashion-mnist-mlp.yaml",
		"../configs/fashion-mnist-cnn.yaml",
		"testdata/minimal.yaml",
	}
	for _, path := range tests {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			c, err := LoadConfig(path, []string{"schedule.name=multistep", "schedule.milestones=[3, 6]"})
			require.NoError(t, err)
			out, err := yaml.Marshal(c)
			require.NoError(t, err)
			got, err := ParseConfig("roundtrip.yaml", out, nil)
			require.NoError(t, err, "marshaled:\n%s", out)
			assert.Equal(t, c.Seed, got.Seed)
			assert.Equal(t, c.Device, got.Device)
			assert.Equal(t, c.Data, got.Data)
			assert.Equal(t, c.Model, got.Model)
			assert.Equal(t, c.Optimizer, got.Optimizer)
			assert.Equal(t, c.Schedule, got.Schedule)
			assert.Equal(t, c.Train, got.Train)
			assert.Equal(t, c.Output, got.Output)
		})
	}
}

func ExampleLoadConfig() {
	cfg, err := LoadConfig("../configs/fashion-mnist-mlp.yaml",
		[]string{"train.epochs=1", "model.hidden=[256,128]", "optimizer.lr=1e-2"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Model.Name, cfg.Model.Hidden, cfg.Optimizer.LR, cfg.Train.Epochs, cfg.Output.Dir)

	_, err = LoadConfig("testdata/wrong_type.yaml", nil)
	fmt.Println(err)
	_, err = LoadConfig("../configs/fashion-mnist-mlp.yaml", []string{"train.epoch=1"})
	fmt.Println(err)
	// Output:
	// mlp [256 128] 0.01 1 runs/fashion-mnist-mlp
	// testdata/wrong_type.yaml:5:7: optimizer.lr: expected a number, found "fast"
	// -set train.epoch=1: unknown key "epoch" in train (known: epochs, batch_size, eval_batch_size, label_smoothing, prefetch, limit, eval_every_steps, log_every_steps, ema, patience, min_delta, threads); did you mean "epochs"?
}

// TestLoadConfigBounds: a value that would size memory or work past its
// bound fails when the configuration is loaded, naming the key, the value
// and the bound.
func TestLoadConfigBounds(t *testing.T) {
	t.Parallel()
	const (
		mlp         = "model: {name: mlp}\noptimizer: {name: sgd, lr: 0.1}\n"
		transformer = "model: {name: transformer}\noptimizer: {name: sgd, lr: 0.1}\n"
		charlm      = "data: {name: text, files: [a.txt]}\nmodel: {name: charlm}\noptimizer: {name: sgd, lr: 0.1}\n"
		resnet      = "model: {name: resnet}\noptimizer: {name: sgd, lr: 0.1}\n"
		images      = "data: {name: images, dir: pets}\nmodel: {name: cnn}\noptimizer: {name: sgd, lr: 0.1}\n"
		onnx        = "model: {name: onnx, file: m.onnx}\noptimizer: {name: sgd, lr: 0.1}\n"
	)
	tests := []struct {
		name string
		yaml string
		sets []string
		want string
	}{
		{"hidden width", "model:\n  name: mlp\n  hidden: [512, 1000000000000]\noptimizer: {name: sgd, lr: 0.1}\n", nil,
			"inline.yaml:3:17: model.hidden[1]: 1000000000000 is too large; at most 1048576"},
		{"hidden weights", mlp, []string{"model.hidden=[65536, 65536]"},
			"inline.yaml: model.hidden[1]: a layer of 65536 × 65536 = 4294967296 weights is too large; at most 2147483648 (from -set model.hidden=[65536, 65536])"},
		{"hidden layers", mlp, []string{"model.hidden=[" + strings.Repeat("8, ", 1024) + "8]"},
			"model.hidden: 1025 layers are too many; at most 1024"},
		{"classifier weights", mlp, []string{"model.hidden=[1048576]", "model.classes=4096"},
			"model.classes: a classifier of 1048576 × 4096 = 4294967296 weights is too large; at most 2147483648"},
		{"classes", mlp, []string{"model.classes=2000000"}, "model.classes: 2000000 is too large; at most 1048576"},
		{"head classes", onnx, []string{"model.head.classes=2000000"}, "model.head.classes: 2000000 is too large; at most 1048576"},
		{"resnet width", resnet, []string{"model.widths=[16, 2000000, 64]"}, "model.widths[1]: 2000000 is too large; at most 1048576"},
		{"resnet weights", resnet, []string{"model.widths=[16, 32, 20000]"},
			"model.widths[2]: a 3×3 convolution of 20000 × 20000 × 9 = 3600000000 weights is too large; at most 2147483648"},
		{"resnet blocks", resnet, []string{"model.blocks=[2, 5000, 2]"}, "model.blocks[1]: 5000 is too large; at most 1024"},
		{"resnet blocks in all", resnet, []string{"model.blocks=[600, 600, 2]"}, "model.blocks: 1202 blocks in all are too many; at most 1024"},
		{"dim", transformer, []string{"model.dim=2000000", "model.heads=1"}, "model.dim: 2000000 is too large; at most 1048576"},
		{"dim weights", transformer, []string{"model.dim=65536", "model.heads=1"},
			"model.dim: an attention projection of 65536 × 65536 = 4294967296 weights is too large; at most 2147483648"},
		{"ff", transformer, []string{"model.ff=2000000"}, "model.ff: 2000000 is too large; at most 1048576"},
		{"ff weights", transformer, []string{"model.dim=4096", "model.ff=1048576"},
			"model.ff: a feed-forward layer of 4096 × 1048576 = 4294967296 weights is too large; at most 2147483648"},
		{"layers", transformer, []string{"model.layers=5000"}, "model.layers: 5000 is too large; at most 1024"},
		{"patch size", transformer, []string{"model.patch_size=100000"}, "model.patch_size: 100000 is too large; at most 32768"},
		{"context", charlm, []string{"model.context=100000"}, "model.context: 100000 is too large; at most 16384"},
		{"image size", images, []string{"data.image_size=[224, 100000]"}, "data.image_size[1]: 100000 is too large; at most 32768"},
		{"workers", images, []string{"data.workers=100000"}, "data.workers: 100000 is too large; at most 4096"},
		{"epochs", mlp, []string{"train.epochs=2000000"}, "train.epochs: 2000000 is too large; at most 1048576"},
		{"batch size", mlp, []string{"train.batch_size=100000000"}, "train.batch_size: 100000000 is too large; at most 16777216"},
		{"eval batch size", mlp, []string{"train.eval_batch_size=100000000"}, "train.eval_batch_size: 100000000 is too large; at most 16777216"},
		{"prefetch", mlp + "train: {prefetch: 1000000}\n", nil, "inline.yaml:3:19: train.prefetch: 1000000 is too large; at most 1024"},
		{"threads", mlp, []string{"train.threads=100000"},
			"inline.yaml: train.threads: 100000 is too large; at most 4096 (from -set train.threads=100000)"},
		{"keep", mlp, []string{"checkpoint.keep=100000"}, "checkpoint.keep: 100000 is too large; at most 1024"},
		{"sample length", charlm + "sample: {length: 1000000000000}\n", nil,
			"inline.yaml:4:18: sample.length: 1000000000000 is too large; at most 1048576"},
		{"fusion threshold", mlp, []string{"dist.fusion_threshold=100000000000"}, "dist.fusion_threshold: 100000000000 is too large; at most 17179869184"},
		{"backward passes", mlp, []string{"dist.backward_passes_per_step=100000"}, "dist.backward_passes_per_step: 100000 is too large; at most 65536"},
		{"cycle time", mlp, []string{"dist.cycle_time_ms=1e12"}, "dist.cycle_time_ms: 1e+12 is too large; at most 60000"},
		{"stall warning", mlp, []string{"dist.stall_warning_s=1e300"}, "dist.stall_warning_s: 1e+300 is too large; at most 604800"},
		{"stall shutdown", mlp, []string{"dist.stall_shutdown_s=1e10"}, "dist.stall_shutdown_s: 1e+10 is too large; at most 604800"},
		{"timeout", mlp, []string{"dist.timeout_s=1e10"}, "dist.timeout_s: 1e+10 is too large; at most 604800"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig("inline.yaml", []byte(tt.yaml), tt.sets)
			require.Error(t, err)
			assert.Nil(t, c)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "\n", "one problem")
		})
	}

	// The bounds themselves are accepted.
	ok := []struct {
		yaml string
		sets []string
	}{
		{mlp, []string{"model.hidden=[1048576, 2048]", "model.classes=1024", "train.prefetch=1024", "train.threads=4096",
			"train.batch_size=16777216", "train.eval_batch_size=16777216", "train.epochs=1048576", "checkpoint.keep=1024",
			"sample.length=1048576", "dist.fusion_threshold=17179869184",
			"dist.backward_passes_per_step=65536", "dist.cycle_time_ms=60000", "dist.timeout_s=604800"}},
		{transformer, []string{"model.dim=32768", "model.ff=65536", "model.layers=1024", "model.patch_size=32768"}},
		{charlm, []string{"model.context=16384"}},
		{resnet, []string{"model.blocks=[1000, 24]", "model.widths=[15000, 1]"}},
	}
	for _, tt := range ok {
		_, err := ParseConfig("inline.yaml", []byte(tt.yaml), tt.sets)
		assert.NoError(t, err, "%v", tt.sets)
	}
}

// TestConfigReferenceStatesBounds: the doc comment of each bounded key
// states its bound, so that the reference does.
func TestConfigReferenceStatesBounds(t *testing.T) {
	t.Parallel()
	bounds := map[string][]int64{
		"model.hidden":                  {maxLayers, maxWidth, maxLayerWeights},
		"model.widths":                  {maxWidth, maxLayerWeights},
		"model.blocks":                  {maxLayers},
		"model.dim":                     {maxWidth, maxLayerWeights},
		"model.ff":                      {maxWidth, maxLayerWeights},
		"model.layers":                  {maxLayers},
		"model.classes":                 {maxClasses},
		"model.head.classes":            {maxClasses},
		"model.patch_size":              {maxImageSide},
		"model.context":                 {maxContext},
		"data.image_size":               {maxImageSide},
		"data.workers":                  {maxThreads},
		"train.epochs":                  {maxEpochs},
		"train.batch_size":              {maxBatchSize},
		"train.eval_batch_size":         {maxBatchSize},
		"train.prefetch":                {maxPrefetch},
		"train.threads":                 {maxThreads},
		"checkpoint.keep":               {maxKeep},
		"sample.length":                 {maxSampleLength},
		"dist.fusion_threshold":         {maxFusionThreshold},
		"dist.backward_passes_per_step": {maxBackwardPasses},
		"dist.cycle_time_ms":            {maxCycleTimeMS},
		"dist.stall_warning_s":          {maxWaitS},
		"dist.stall_shutdown_s":         {maxWaitS},
		"dist.timeout_s":                {maxWaitS},
	}
	rows := map[string]string{}
	for _, line := range strings.Split(ConfigReference(), "\n") {
		if key, _, ok := strings.Cut(strings.TrimPrefix(line, "| `"), "` |"); ok {
			rows[key] = line
		}
	}
	for key, limits := range bounds {
		require.Contains(t, rows, key)
		for _, limit := range limits {
			assert.Contains(t, strings.ToLower(rows[key]), fmt.Sprintf("at most %d", limit), "the doc comment of %s states its bound", key)
		}
	}
}

func TestValidateRefusesNonFiniteNumbers(t *testing.T) {
	t.Parallel()
	c := validTestConfig()
	c.Data.AugmentScale[0] = math.NaN()
	c.Optimizer.ClipNorm = math.Inf(-1)
	c.Train.MinDelta = math.Inf(1)
	c.Dist.TimeoutS = math.NaN()
	c.Sample.Temperature = math.Inf(1)
	err := c.Validate()
	require.Error(t, err)
	assert.Equal(t, strings.Join([]string{
		"config: data.augment_scale[0]: expected a finite number, found NaN",
		"config: optimizer.clip_norm: expected a finite number, found -Inf",
		"config: train.min_delta: expected a finite number, found +Inf",
		"config: dist.timeout_s: expected a finite number, found NaN",
		"config: sample.temperature: expected a finite number, found +Inf",
	}, "\n"), err.Error(), "one problem per key")
}

// TestLoadConfigRefusesBombs: documents made to exhaust the parser's time
// and memory fail at once.
func TestLoadConfigRefusesBombs(t *testing.T) {
	t.Parallel()
	var laughs strings.Builder // 1 MB of aliases of aliases
	laughs.WriteString("a0: &a0 [" + strings.Repeat("x,", 999) + "x]\n")
	for i := 1; laughs.Len() < 1<<20; i++ {
		fmt.Fprintf(&laughs, "a%d: &a%d [*a%d%s]\n", i, i, i-1, strings.Repeat(fmt.Sprintf(",*a%d", i-1), 999))
	}
	path := filepath.Join(t.TempDir(), "laughs.yaml")
	require.NoError(t, os.WriteFile(path, []byte(laughs.String()), 0o600))
	var keys strings.Builder
	keys.WriteString(minimalTestYAML + "data:\n  args:\n")
	for i := range 1001 {
		fmt.Fprintf(&keys, "    k%d: &k%d [*k%d]\n", i, i, max(i-1, 0))
	}
	tests := []struct {
		name, path, yaml string
		sets             []string
		want             string
	}{
		{name: "alias bomb", path: path, want: "reading config: " + path + ": the file is too large: "},
		{name: "nesting", yaml: minimalTestYAML + "seed: " + strings.Repeat("[", 30000) + "\n", want: "inline.yaml:6:70: values nested more than 64 deep"},
		{name: "nested entries", yaml: strings.Repeat("- ", 30000) + "\n", want: "inline.yaml:1:129: values nested more than 64 deep"},
		{name: "keys", yaml: keys.String(), want: "inline.yaml:1008:5: more than 1000 keys in one mapping"},
		{name: "set nesting", yaml: minimalTestYAML, sets: []string{"model.hidden=" + strings.Repeat("[", 1000)},
			want: "-set model.hidden=" + strings.Repeat("[", 1000) + ": model.hidden: values nested more than 64 deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			var err error
			if tt.path != "" {
				_, err = LoadConfig(tt.path, tt.sets)
			} else {
				_, err = ParseConfig("inline.yaml", []byte(tt.yaml), tt.sets)
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Less(t, time.Since(start), time.Second)
		})
	}
}

// FuzzLoadConfig checks that no file content makes the loader panic or
// take long, that a configuration it accepts is valid, and that its errors
// name the file.
func FuzzLoadConfig(f *testing.F) {
	for _, pattern := range []string{"../configs/*.yaml", "testdata/*.yaml"} {
		paths, err := filepath.Glob(pattern)
		require.NoError(f, err)
		for _, p := range paths {
			data, err := os.ReadFile(p)
			require.NoError(f, err)
			f.Add(data)
		}
	}
	f.Add([]byte("model: &m {name: mlp}\noptimizer: {name: sgd, lr: 1e-3}\nschedule: {milestones: [*m]}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("train: !!map {epochs: !!int 3}\n"))
	// Bombs: aliases of aliases, nesting, keys, size.
	f.Add([]byte("model:\n  args:\n    a: &a [x, x, x, x]\n    b: &b [*a, *a, *a, *a]\n    c: &c [*b, *b, *b, *b]\n    d: [*c, *c, *c, *c]\n"))
	f.Add([]byte(minimalTestYAML + "seed: " + strings.Repeat("[", 100) + "\n"))
	f.Add([]byte(strings.Repeat("- ", 100) + "x\n"))
	f.Add([]byte(minimalTestYAML + "data: {args: {" + strings.Repeat("k: 1, ", 2000) + "}}\n"))
	f.Add([]byte(minimalTestYAML + strings.Repeat("#", 64<<10)))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Run(t, fuzzbound.PerInput, func() {
			c, err := ParseConfig("fuzz.yaml", data, nil)
			if err != nil {
				first, _, _ := strings.Cut(err.Error(), "\n")
				if !strings.HasPrefix(first, "fuzz.yaml") {
					t.Fatalf("error does not name the file: %q", err)
				}
				return
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("ParseConfig accepted a configuration Validate rejects: %v", err)
			}
		})
	})
}

func TestRankThreads(t *testing.T) {
	t.Parallel()
	assert.GreaterOrEqual(t, rankThreads(1), 1)
	assert.Equal(t, 1, rankThreads(64), "at least one thread per rank")
}

// TestEveryShippedConfigLoads: each file in configs/ is a valid config
// whose output.dir is runs/<its name>.
func TestEveryShippedConfigLoads(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("../configs/*.yaml")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(paths), 7)
	for _, path := range paths {
		c, err := LoadConfig(path, nil)
		require.NoError(t, err, path)
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		assert.Equal(t, filepath.Join("runs", name), c.Output.Dir, path)
	}
}
