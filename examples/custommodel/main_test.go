package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/checkpoint"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/train"
)

// The tests run the example as a user would: built, then started as a
// command.
var (
	buildOnce sync.Once
	binaries  = map[string]string{}
	buildErr  error
)

// binary builds the example once (with -tags mpi too, when mpi is true)
// and returns its path.
func binary(t *testing.T, mpi bool) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hora-custommodel")
		if err != nil {
			buildErr = err
			return
		}
		for _, tags := range []string{"", "mpi"} {
			path := filepath.Join(dir, "custommodel"+tags)
			args := []string{"build", "-o", path}
			if tags != "" {
				args = append(args, "-tags", tags)
			}
			if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
				if tags == "mpi" {
					continue // no MPI here: the MPI test skips
				}
				buildErr = &buildError{string(out)}
				return
			}
			binaries[tags] = path
		}
	})
	require.NoError(t, buildErr)
	key := ""
	if mpi {
		key = "mpi"
	}
	path, ok := binaries[key]
	if !ok {
		t.Skip("the example does not build with -tags mpi here (libopenmpi-dev missing)")
	}
	return path
}

type buildError struct{ out string }

func (e *buildError) Error() string { return "go build: " + e.out }

// dataDir returns the Fashion-MNIST folder.
func dataDir(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(train.DefaultDataDir, "t10k-labels-idx1-ubyte.gz")); err != nil {
		t.Skipf("Fashion-MNIST not installed (make deps installs dataset-fashion-mnist): %v", err)
	}
	return train.DefaultDataDir
}

// run starts the example with args and returns its output; it fails the
// test unless the exit status is want.
func run(t *testing.T, bin string, want int, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "%v\n%s", err, out)
		code = ee.ExitCode()
	}
	require.Equal(t, want, code, "exit status of %v:\n%s", args, out)
	return string(out)
}

// lastEpoch returns the last "epoch" record of a run's metrics.jsonl.
func lastEpoch(t *testing.T, dir string) train.EpochMetrics {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	require.NoError(t, err)
	var last train.EpochMetrics
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var kind struct{ Kind string }
		require.NoError(t, json.Unmarshal(line, &kind))
		if kind.Kind == "epoch" {
			require.NoError(t, json.Unmarshal(line, &last))
		}
	}
	require.Equal(t, "epoch", last.Kind, "metrics.jsonl has an epoch record")
	return last
}

// TestCustomModelTrainsEvaluatesAndExports trains the example's model for
// one epoch of Fashion-MNIST (as the README's command does), then
// evaluates the checkpoint and exports it to ONNX.
func TestCustomModelTrainsEvaluatesAndExports(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping a full epoch")
	}
	bin, data := binary(t, false), dataDir(t)
	dir := t.TempDir()
	run(t, bin, 0, "-config", "config.yaml", "-set", "train.epochs=1", "-set", "data.dir="+data, "-out", dir, "-q")
	m := lastEpoch(t, dir)
	assert.GreaterOrEqual(t, m.TestAccuracy, 0.85, "test accuracy after one epoch")

	var eval struct {
		TestAccuracy float64 `json:"test_accuracy"`
	}
	require.NoError(t, json.Unmarshal([]byte(run(t, bin, 0, "eval", "-run", dir)), &eval))
	assert.Equal(t, m.TestAccuracy, eval.TestAccuracy, "eval of the last checkpoint repeats the run's evaluation")

	file := filepath.Join(t.TempDir(), "shortcut.onnx")
	run(t, bin, 0, "export", "-run", dir, "-o", file)
	model, err := onnx.Load(file)
	require.NoError(t, err)
	weights, _, err := checkpoint.Load(filepath.Join(dir, "model.safetensors"))
	require.NoError(t, err)
	assert.Len(t, model.Parameters(), len(weights), "the exported model holds every weight of the trained one")

	saved, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(saved), "channels: 16", "config.yaml records model.args")
}

// TestCustomModelResumesAfterKill9 kills a run with SIGKILL at a random
// moment after its first checkpoint, resumes it, and requires the final
// weights to be bit-identical to those of a run never interrupted.
func TestCustomModelResumesAfterKill9(t *testing.T) {
	bin, data := binary(t, false), dataDir(t)
	args := func(dir string) []string {
		return []string{"-config", "config.yaml", "-set", "data.dir=" + data, "-out", dir, "-q",
			"-set", "train.limit=1920", "-set", "train.epochs=2", "-set", "model.args.channels=4",
			"-set", "model.args.hidden=32", "-set", "checkpoint.every_steps=3", "-set", "deterministic=true",
			"-set", "train.threads=1", "-set", "output.plot=false"}
	}
	want := t.TempDir()
	run(t, bin, 0, args(want)...)

	got := t.TempDir()
	cmd := exec.Command(bin, args(got)...)
	require.NoError(t, cmd.Start())
	first := filepath.Join(got, "checkpoints", "step-00000003")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(first); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "no checkpoint after 2 minutes")
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(time.Duration(time.Now().UnixNano()%300) * time.Millisecond) // a moment in the run
	require.NoError(t, cmd.Process.Kill())
	err := cmd.Wait()
	if err == nil {
		t.Log("the run finished before the kill: the resume below has nothing left to do")
	}
	out := run(t, bin, 0, "resume", "-run", got, "-q")
	assert.NotContains(t, out, "starting from the beginning")

	a, _, err := checkpoint.Load(filepath.Join(want, "model.safetensors"))
	require.NoError(t, err)
	b, _, err := checkpoint.Load(filepath.Join(got, "model.safetensors"))
	require.NoError(t, err)
	require.Equal(t, len(a), len(b))
	for name, w := range a {
		require.Contains(t, b, name)
		assert.Equal(t, w.Float32s(), b[name].Float32s(), "%s differs after kill -9 and resume", name)
	}
}

// TestCustomModelUnderMPI runs the example as 2 ranks under mpirun.
func TestCustomModelUnderMPI(t *testing.T) {
	bin, data := binary(t, true), dataDir(t)
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not found")
	}
	dir := t.TempDir()
	args := []string{"-np", "2", "--oversubscribe"}
	if os.Getuid() == 0 {
		args = append(args, "--allow-run-as-root")
	}
	args = append(args, bin, "-config", "config.yaml", "-set", "data.dir="+data, "-out", dir, "-q",
		"-set", "train.limit=2560", "-set", "train.epochs=1", "-set", "model.args.channels=4")
	out, err := exec.Command(mpirun, args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "data-parallel over 2 ranks")
	m := lastEpoch(t, dir)
	assert.Equal(t, 10, m.Step, "2560 samples in global batches of 2×128")
	assert.InDelta(t, 0.002, m.LR, 1e-12, "metrics show the rate applied: optimizer.lr 0.001 × 2 ranks (linear scaling)")
	assert.True(t, strings.Contains(string(out), "epoch 1/1"), "%s", out)
}
