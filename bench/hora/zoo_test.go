package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/bench/internal/benchjob"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/tensor"
)

// TestMain runs this test binary as hora-bench when the zoo group starts
// it as a child process (zooChild), as it starts bin/hora-bench.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if err := run(os.Args[1:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "hora-bench:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The zoo group measures each model in a process of its own, started
// again from this program, and reports its peak resident memory, the Go
// heap it keeps between steps, and the memory of a process without a
// model; the children's info lines are not repeated.
func TestZooPeakMemoryPerProcess(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run([]string{"-zoo-time", "1ms", "-zoo-model", "none,lenet5", "zoo"}, &out))
	var workloads []string
	values, infos := map[string]float64{}, map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		if name, ok := r["info"]; ok {
			infos[name.(string)]++
			continue
		}
		w := r["workload"].(string)
		workloads = append(workloads, w)
		values[w] = r["value"].(float64)
	}
	for name, n := range infos {
		assert.Equal(t, 1, n, "info %q: the parent's info lines only", name)
	}
	assert.Contains(t, infos, "gemm backend")
	assert.Equal(t, []string{"zoo no model peak memory", "zoo lenet5 params", "zoo lenet5 train step",
		"zoo lenet5 peak memory (train step)", "zoo lenet5 Go heap live between steps"}, workloads)
	if runtime.GOOS == "linux" {
		assert.Positive(t, values["zoo no model peak memory"])
		assert.Greater(t, values["zoo lenet5 peak memory (train step)"], values["zoo lenet5 Go heap live between steps"],
			"the process holds at least what its heap keeps")
	}
	assert.Positive(t, values["zoo lenet5 Go heap live between steps"])

	err := run([]string{"-zoo-model", "lenet5,resnet99", "zoo"}, &bytes.Buffer{})
	assert.ErrorContains(t, err, `no zoo config "resnet99"`)
}

// pytorch_bench.py --zoo-model none reports the peak resident memory of
// Python with torch and no model, as the zoo group's first child.
func TestPyTorchZooNoModel(t *testing.T) {
	t.Parallel()
	python := twinPython(t)
	cmd := exec.Command(python, "../pytorch_bench.py", "--zoo-model", "none")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s", stderr.Bytes())
	var r map[string]any
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(out), &r), "%s", out)
	assert.Equal(t, "zoo no model peak memory", r["workload"])
	assert.Equal(t, "MiB", r["unit"])
	assert.Greater(t, r["value"].(float64), 50.0, "Python with torch holds tens of MiB at least")
}

func TestZooJobs(t *testing.T) {
	t.Parallel()
	for _, file := range zooConfigs {
		j, err := newZooJob(file)
		require.NoError(t, err, file)
		assert.Equal(t, j.Config.Train.BatchSize, j.Samples(), file)
		if j.Config.Model.Name == "charlm" {
			n, ctx := j.Config.Train.BatchSize, j.Config.Model.Context
			assert.Equal(t, []int{n, ctx}, j.Batch.Shape)
			assert.Len(t, j.Batch.Y, n*ctx, "one target per position")
			// The targets are the inputs one position on, as the trainer
			// splits its windows.
			assert.Equal(t, int64(j.Batch.X[1]), j.Batch.Y[0])
		} else {
			assert.Equal(t, []int{j.Config.Train.BatchSize, 1, 28, 28}, j.Batch.Shape, file)
		}
		require.NoError(t, j.Close())
	}
}

// The charlm's step runs (token ids, a loss per position, clipping) and
// learns on its repeated batch.
func TestZooCharLMStepLearns(t *testing.T) {
	t.Parallel()
	dev, err := device.Open("cpu")
	require.NoError(t, err)
	cfg, err := benchjob.Config("fortunes-charlm.yaml")
	require.NoError(t, err)
	cfg.Model.Dim, cfg.Model.FF, cfg.Model.Layers, cfg.Model.Context = 32, 64, 1, 16
	j, err := benchjob.FromConfig(dev, cfg, []int{4, 16}, benchjob.CharLMVocab)
	require.NoError(t, err)
	defer j.Close()
	first, _, err := j.Step()
	require.NoError(t, err)
	assert.InDelta(t, math.Log(benchjob.CharLMVocab), first, 0.5, "about the uniform guess at first")
	var last float64
	for range 5 {
		last, _, err = j.Step()
		require.NoError(t, err)
	}
	assert.Less(t, last, first)
}

// The vocabulary of the benchmark's language model is the real text's,
// where Debian's fortunes is installed (make deps installs it).
func TestCharLMVocabIsTheText(t *testing.T) {
	t.Parallel()
	cfg, err := benchjob.Config("fortunes-charlm.yaml")
	require.NoError(t, err)
	var text []byte
	for _, f := range cfg.Data.Files {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			t.Skipf("%s: the fortunes package is not installed", f)
		}
		require.NoError(t, err)
		text = append(text, b...)
	}
	seen := map[rune]bool{}
	for _, r := range string(text) {
		seen[r] = true
	}
	assert.Len(t, seen, benchjob.CharLMVocab)
}

// twinPython returns the Python with torch that runs the twins (PYTHON,
// as bench/run.sh takes it, or Debian's /usr/bin/python3), or skips the
// test where there is none (make test installs python3-torch).
func twinPython(t *testing.T) string {
	python := os.Getenv("PYTHON")
	if python == "" {
		python = "/usr/bin/python3"
	}
	if out, err := exec.Command(python, "-c", "import torch, yaml").CombinedOutput(); err != nil {
		t.Skipf("%s has no torch (install python3-torch: make bench-deps): %v\n%s", python, err, out)
	}
	return python
}

// twinRun runs bench/zoo_twins.py with args and returns its JSON lines.
func twinRun(t *testing.T, python string, args ...string) []map[string]any {
	cmd := exec.Command(python, append([]string{"../zoo_twins.py"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "zoo_twins.py %s\n%s", strings.Join(args, " "), stderr.Bytes())
	var rows []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		var r map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), sc.Text())
		rows = append(rows, r)
	}
	require.NoError(t, sc.Err())
	return rows
}

// TestZooTwins checks that each PyTorch twin of bench/zoo_twins.py is the
// architecture and training step Hora builds for the config: the same
// zoo, batch sizes and optimizer settings, the same parameter count and
// parameters (names and shapes), the same logits for Hora's weights.
func TestZooTwins(t *testing.T) {
	t.Parallel()
	python := twinPython(t)
	described := twinRun(t, python, "describe")
	require.Len(t, described, len(zooConfigs), "one twin per zoo config")
	dir := t.TempDir()
	var files []string
	horaLogits := map[string]*tensor.Tensor{}
	for i, file := range zooConfigs {
		twin := described[i]
		require.Equal(t, file, twin["config"], "bench/zoo_twins.py's ZOO lists zooConfigs in order")
		j, err := newZooJob(file)
		require.NoError(t, err, file)
		defer j.Close()
		cfg := j.Config

		// The parameter count, then every parameter's name and shape.
		assert.EqualValues(t, layers.NumParams(j.Model), twin["params"], "%s: parameters of Hora's model and of the PyTorch twin", file)
		hora := map[string][]int{}
		for _, p := range j.Model.Parameters() {
			hora[p.Name] = p.Value.Shape()
		}
		torch := map[string][]int{}
		for _, ps := range twin["param_shapes"].([]any) {
			nameShape := ps.([]any)
			var shape []int
			for _, d := range nameShape[1].([]any) {
				shape = append(shape, int(d.(float64)))
			}
			torch[nameShape[0].(string)] = shape
		}
		assert.Equal(t, hora, torch, "%s: parameters (name: shape)", file)

		// The step's settings.
		assert.EqualValues(t, cfg.Train.BatchSize, twin["batch"], file)
		assert.EqualValues(t, cfg.Model.Name, twin["name"], file)
		o := cfg.Optimizer
		want := map[string]any{"name": o.Name, "lr": o.LR, "weight_decay": o.WeightDecay, "clip_norm": o.ClipNorm}
		switch o.Name {
		case "sgd":
			want["momentum"], want["dampening"], want["nesterov"] = o.Momentum, o.Dampening, o.Nesterov
		case "adam", "adamw":
			want["betas"], want["eps"], want["amsgrad"] = []any{o.Betas[0], o.Betas[1]}, o.Eps, o.AMSGrad
		}
		assert.Equal(t, want, twin["optimizer"], "%s: optimizer", file)
		// What the twins leave out is off in every zoo config.
		assert.Zero(t, cfg.Train.LabelSmoothing, file)
		assert.Zero(t, cfg.Train.EMA, file)
		assert.Equal(t, "fp32", cfg.Precision, file)
		assert.Equal(t, 1, cfg.Dist.BackwardPassesPerStep, file)
		assert.Empty(t, cfg.Model.Freeze, file)
		assert.Zero(t, cfg.Model.Dropout, file)

		// Hora's weights and a few samples of its batch for the twin;
		// Hora's logits in training mode, as the step computes them. The
		// vectors (biases, the norms' scales and shifts) are drawn from
		// U(-4, 4) first, so that no part hides behind its initial value
		// (a zero bias, ReLU6's clipping of values above 6).
		rng := rand.New(rand.NewPCG(7, uint64(i)))
		for _, p := range j.Model.Parameters() {
			if p.Value.Rank() == 1 {
				p.Value.CopyFrom(tensor.RandUniform(rng, -4, 4, p.Value.Shape()...))
			}
		}
		sd := layers.StateDict(j.Model)
		state := map[string]any{}
		for name, v := range sd {
			state[name] = map[string]any{"shape": v.Shape(), "data": v.Values()}
		}
		n := 8
		sample := len(j.Batch.X) / j.Samples()
		shape := append([]int{n}, j.Batch.Shape[1:]...)
		xs := j.Batch.X[:n*sample]
		js, err := json.Marshal(map[string]any{"config": file, "state": state, "x": map[string]any{"shape": shape, "data": xs}})
		require.NoError(t, err)
		path := filepath.Join(dir, strings.TrimSuffix(file, ".yaml")+".json")
		require.NoError(t, os.WriteFile(path, js, 0o644))
		files = append(files, path)
		x, err := tensor.FromSlice(j.Dev, xs, shape...)
		require.NoError(t, err)
		layers.Train(j.Model)
		horaLogits[file] = j.Model.Forward(autograd.NoGrad(autograd.Constant(x))).Value
	}

	for _, r := range twinRun(t, python, append([]string{"check"}, files...)...) {
		file := r["config"].(string)
		assert.Empty(t, r["missing"], "%s: Hora's state dict lacks these of the twin's", file)
		assert.Empty(t, r["unexpected"], "%s: the twin has none of these of Hora's state dict", file)
		want := horaLogits[file]
		logits := r["logits"].(map[string]any)
		var shape []int
		for _, d := range logits["shape"].([]any) {
			shape = append(shape, int(d.(float64)))
		}
		require.Equal(t, want.Shape(), shape, "%s: logits", file)
		worst, at, ws := 0.0, 0, want.Values()
		for i, v := range logits["data"].([]any) {
			w := ws[i]
			if d := math.Abs(v.(float64)-w) / (1 + math.Abs(w)); d > worst {
				worst, at = d, i
			}
		}
		t.Logf("%s: the twin's logits are Hora's within %.1e (relative)", file, worst)
		assert.Less(t, worst, 1e-4, "%s: the twin's logits differ from Hora's (worst at %d)", file, at)
		delete(horaLogits, file)
	}
	assert.Empty(t, horaLogits, "configs the twins did not check")
}
