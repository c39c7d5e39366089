package train

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/checkpoint"
	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// writeIDX writes a gzipped IDX file with the given magic, dims and bytes.
func writeIDX(t *testing.T, path string, magic uint32, dims []int, payload []byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	hdr := make([]byte, 4+4*len(dims))
	binary.BigEndian.PutUint32(hdr, magic)
	for i, d := range dims {
		binary.BigEndian.PutUint32(hdr[4+4*i:], uint32(d))
	}
	_, err := zw.Write(append(hdr, payload...))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// syntheticFashion writes a tiny, easily learnable data set in the
// Fashion-MNIST file layout: class k lights up row band k of the image.
func syntheticFashion(t *testing.T, nTrain, nTest int) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, split := range []struct {
		prefix string
		n      int
	}{{"train", nTrain}, {"t10k", nTest}} {
		images := make([]byte, split.n*28*28)
		labels := make([]byte, split.n)
		for i := range labels {
			k := rng.IntN(10)
			labels[i] = byte(k)
			img := images[i*784 : (i+1)*784]
			for j := range img {
				img[j] = byte(rng.IntN(60))
			}
			for r := 2 * k; r < 2*k+3; r++ {
				for c := 4; c < 24; c++ {
					img[r*28+c] = 200 + byte(rng.IntN(55))
				}
			}
		}
		writeIDX(t, filepath.Join(dir, split.prefix+"-images-idx3-ubyte.gz"), 0x803, []int{split.n, 28, 28}, images)
		writeIDX(t, filepath.Join(dir, split.prefix+"-labels-idx1-ubyte.gz"), 0x801, []int{split.n}, labels)
	}
	return dir
}

// readMetrics returns the "epoch" records of a metrics.jsonl (their
// number fields).
func readMetrics(t *testing.T, path string) []map[string]float64 {
	return readRecords(t, path, "epoch")
}

// readRecords returns the number fields of the metrics.jsonl records of
// one kind ("train", "eval", "epoch").
func readRecords(t *testing.T, path, kind string) []map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []map[string]float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		if m["kind"] != kind {
			continue
		}
		nums := map[string]float64{}
		for k, v := range m {
			if x, ok := v.(float64); ok {
				nums[k] = x
			}
		}
		out = append(out, nums)
	}
	return out
}

func runTrain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = Run(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

func TestTrainEndToEndOnSyntheticData(t *testing.T) {
	dataDir := syntheticFashion(t, 1200, 300)
	for _, model := range []string{"mlp", "cnn", "lenet5"} {
		t.Run(model, func(t *testing.T) {
			out := t.TempDir()
			config := "../configs/fashion-mnist-mlp.yaml"
			if model != "mlp" {
				config = "../configs/fashion-mnist-cnn.yaml"
			}
			code, stdout, stderr := runTrain(t, "-config", config,
				"-set", "data.dir="+dataDir, "-set", "model.name="+model,
				"-set", "train.epochs=2", "-set", "train.batch_size=32", "-out", out)
			require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Contains(t, stdout, "epoch 2/2")
			assert.Regexp(t, `samples on cpu \(.*float32.*\)`, stdout, "train names the CPU's GEMM backend")

			metrics := readMetrics(t, filepath.Join(out, "metrics.jsonl"))
			require.Len(t, metrics, 2)
			for _, key := range []string{"epoch", "train_loss", "train_accuracy", "test_loss", "test_accuracy", "samples_per_sec", "seconds"} {
				assert.Contains(t, metrics[1], key)
			}
			assert.Equal(t, 2.0, metrics[1]["epoch"])
			assert.Greater(t, metrics[1]["test_accuracy"], 0.9, "the synthetic task is easy")
			assert.Less(t, metrics[1]["train_loss"], metrics[0]["train_loss"])

			// The saved config.yaml repeats the run exactly.
			saved, err := LoadConfig(filepath.Join(out, "config.yaml"), nil)
			require.NoError(t, err)
			assert.Equal(t, model, saved.Model.Name)
			assert.Equal(t, 2, saved.Train.Epochs)
			assert.Equal(t, dataDir, saved.Data.Dir)

			weights, meta, err := checkpoint.Load(filepath.Join(out, "model.safetensors"))
			require.NoError(t, err)
			assert.Equal(t, model, meta["model"])
			assert.Equal(t, "2", meta["epoch"])
			assert.NotEmpty(t, weights)
			last, err := findCheckpoint(out, "last")
			require.NoError(t, err)
			assert.Equal(t, 3, last.Manifest.Epoch, "the last checkpoint is at the end of epoch 2")
			optState, _, err := checkpoint.Load(filepath.Join(last.Dir, "optimizer.safetensors"))
			require.NoError(t, err)
			assert.Contains(t, optState, "step")
			assert.FileExists(t, filepath.Join(out, "curves.png"))
			assert.FileExists(t, filepath.Join(out, "train.log"))
		})
	}
}

func TestTrainSameSeedSameRun(t *testing.T) {
	dataDir := syntheticFashion(t, 300, 100)
	var results [2][]map[string]float64
	for i := range results {
		out := t.TempDir()
		code, _, stderr := runTrain(t, "-config", "../configs/fashion-mnist-mlp.yaml",
			"-set", "data.dir="+dataDir, "-set", "train.epochs=1", "-out", out)
		require.Equal(t, 0, code, stderr)
		results[i] = readMetrics(t, filepath.Join(out, "metrics.jsonl"))
	}
	assert.Equal(t, results[0][0]["train_loss"], results[1][0]["train_loss"])
	assert.Equal(t, results[0][0]["test_accuracy"], results[1][0]["test_accuracy"])
}

func TestTrainBadInput(t *testing.T) {
	dataDir := syntheticFashion(t, 64, 32)
	badYAML := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(badYAML, []byte("model:\n  name: mlp\n  hiden: [3]\n"), 0o644))
	truncated := t.TempDir()
	for _, f := range []string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"} {
		b, err := os.ReadFile(filepath.Join(dataDir, f))
		require.NoError(t, err)
		if strings.HasPrefix(f, "train-images") {
			b = b[:len(b)/2]
		}
		require.NoError(t, os.WriteFile(filepath.Join(truncated, f), b, 0o644))
	}
	mlp := "../configs/fashion-mnist-mlp.yaml"
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"no config", nil, []string{"-config is required"}},
		{"missing config", []string{"-config", "nope.yaml"}, []string{"nope.yaml"}},
		{"unknown key", []string{"-config", badYAML}, []string{"bad.yaml:3:3", `unknown key "hiden"`}},
		{"bad set", []string{"-config", mlp, "-set", "train.epochs=many"}, []string{"train.epochs", "many"}},
		{"unknown device", []string{"-config", mlp, "-set", "device=tpu"}, []string{"tpu", "unknown device"}},
		{"missing data", []string{"-config", mlp, "-set", "data.dir=" + t.TempDir()}, []string{"dataset-fashion-mnist"}},
		{"truncated data", []string{"-config", mlp, "-set", "data.dir=" + truncated}, []string{"train-images-idx3-ubyte.gz"}},
		{"stray argument", []string{"-config", mlp, "extra"}, []string{`unexpected argument "extra"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runTrain(t, append(c.args, "-out", t.TempDir())...)
			assert.Equal(t, 2, code, stderr)
			for _, w := range c.want {
				assert.Contains(t, stderr, w)
			}
			assert.NotContains(t, stderr, "panic")
		})
	}
}

// TestTrainFashionMNISTMLPOneEpoch is the acceptance check: the
// shipped MLP config reaches 84% test accuracy after one epoch on the real
// Fashion-MNIST (PyTorch reaches 85.0%). Skipped with -short or without
// the dataset-fashion-mnist package.
func TestTrainFashionMNISTMLPOneEpoch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping a full epoch on Fashion-MNIST")
	}
	if _, _, err := data.LoadFashionMNIST(data.DefaultFashionMNISTDir); err != nil {
		t.Skipf("Fashion-MNIST not installed (apt-get install dataset-fashion-mnist): %v", err)
	}
	out := t.TempDir()
	code, stdout, stderr := runTrain(t, "-config", "../configs/fashion-mnist-mlp.yaml",
		"-set", "train.epochs=1", "-set", "output.progress=false", "-out", out)
	require.Equal(t, 0, code, stderr)
	t.Log(strings.TrimSpace(stdout))
	m := readMetrics(t, filepath.Join(out, "metrics.jsonl"))
	require.Len(t, m, 1)
	assert.GreaterOrEqual(t, m[0]["test_accuracy"], 0.84)
}

// TestCheckpointRestoresTraining saves a model and its optimizer with the
// checkpoint package after a few steps, restores both into freshly built
// objects, and requires the restored run to continue exactly as the
// uninterrupted one.
func TestCheckpointRestoresTraining(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Model.Name, cfg.Model.Hidden = "mlp", []int{16}
	cfg.Optimizer.Name, cfg.Optimizer.LR = "adam", 0.01
	build := func(seed uint64) (layers.Layer, optim.Optimizer) {
		images, err := data.NewInMemory(make([]float32, 784), []int64{0}, []int{1, 28, 28}, 10)
		require.NoError(t, err)
		model, err := buildModel(cfg, (&datasets{train: images, test: images, classes: 10}).modelInput(cfg, rand.New(rand.NewPCG(seed, 1))), nil)
		require.NoError(t, err)
		opt, err := buildOptimizer(cfg, model.Parameters())
		require.NoError(t, err)
		return model, opt
	}
	rng := rand.New(rand.NewPCG(9, 9))
	x := tensor.RandNormal(rng, 0, 1, 8, 1, 28, 28)
	y := tensor.FromInt64([]int64{0, 1, 2, 3, 4, 5, 6, 7}, 8)
	step := func(model layers.Layer, opt optim.Optimizer) {
		loss := layers.CrossEntropy(model.Forward(autograd.Constant(x)), y, layers.CrossEntropyOptions{})
		require.NoError(t, autograd.Backward(loss))
		require.NoError(t, opt.Step())
		opt.ZeroGrad()
	}

	model, opt := build(1)
	for i := 0; i < 3; i++ {
		step(model, opt)
	}
	dir := t.TempDir()
	require.NoError(t, checkpoint.Save(filepath.Join(dir, "model.safetensors"), layers.StateDict(model), nil))
	require.NoError(t, checkpoint.Save(filepath.Join(dir, "optimizer.safetensors"), opt.StateDict(), nil))

	restored, restoredOpt := build(2) // different initial weights, overwritten below
	_, err := checkpoint.LoadInto(filepath.Join(dir, "model.safetensors"), layers.StateDict(restored))
	require.NoError(t, err)
	state, _, err := checkpoint.Load(filepath.Join(dir, "optimizer.safetensors"))
	require.NoError(t, err)
	require.NoError(t, restoredOpt.LoadStateDict(state))

	for i := 0; i < 2; i++ {
		step(model, opt)
		step(restored, restoredOpt)
	}
	want, got := layers.StateDict(model), layers.StateDict(restored)
	for name, w := range want {
		assert.Equal(t, w.Float32s(), got[name].Float32s(), name)
	}
}
