package train

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/checkpoint"
)

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// trainBinary builds this command once per test run (without MPI) and
// returns its path: the resume tests kill real processes.
func trainBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hora-train-bin")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "train")
		out, err := exec.Command("go", "build", "-tags", "horafault", "-o", binaryPath, "../cmd/train").CombinedOutput()
		if err != nil {
			binaryErr = err
			binaryPath = string(out)
		}
	})
	require.NoError(t, binaryErr, binaryPath)
	return binaryPath
}

// resumeArgs is a small run with dropout (so the random generator's state
// matters), checkpoints every 5 steps and 40 steps in all.
func resumeArgs(dataDir string, extra ...string) []string {
	args := []string{"-config", "../configs/fashion-mnist-mlp.yaml", "-set", "data.dir=" + dataDir,
		"-set", "model.hidden=[32]", "-set", "model.dropout=0.2", "-set", "train.epochs=2",
		"-set", "train.batch_size=32", "-set", "checkpoint.every_steps=5", "-set", "checkpoint.keep=2",
		"-set", "train.threads=1", "-set", "train.log_every_steps=5", "-q"}
	return append(args, extra...)
}

// command returns the command that runs the binary with args and the
// extra environment.
func command(bin string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// assertSameFinalWeights requires the final weights of two runs to be
// identical bit for bit.
func assertSameFinalWeights(t *testing.T, want, got string) {
	t.Helper()
	a, _, err := checkpoint.Load(filepath.Join(want, modelFile))
	require.NoError(t, err)
	b, _, err := checkpoint.Load(filepath.Join(got, modelFile))
	require.NoError(t, err)
	require.Equal(t, len(a), len(b))
	for name, w := range a {
		require.Contains(t, b, name)
		assert.Equal(t, w.Float32s(), b[name].Float32s(), "%s differs", name)
	}
}

// referenceRun trains the resume tests' run without interruption.
func referenceRun(t *testing.T, bin, dataDir string) string {
	t.Helper()
	ref := t.TempDir()
	out, err := command(bin, nil, resumeArgs(dataDir, "-out", ref)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return ref
}

// TestResumeIsBitIdentical kills runs at different moments — with
// SIGKILL before a step, in the middle of writing a checkpoint, at a
// moment chosen from outside, with Ctrl-C — resumes each, and requires
// the final weights to equal those of the uninterrupted run bit for bit.
func TestResumeIsBitIdentical(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the process-killing resume tests")
	}
	bin := trainBinary(t)
	dataDir := syntheticFashion(t, 640, 160)
	ref := referenceRun(t, bin, dataDir)
	refMetrics := readMetrics(t, filepath.Join(ref, "metrics.jsonl"))
	require.Len(t, refMetrics, 2)

	resume := func(t *testing.T, dir string) string {
		t.Helper()
		out, err := command(bin, nil, "resume", "-run", dir, "-q").CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	killedBy := func(t *testing.T, err error, sig syscall.Signal) {
		t.Helper()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		ws, ok := ee.Sys().(syscall.WaitStatus)
		require.True(t, ok)
		require.True(t, ws.Signaled(), "the process was killed, not %v", ee)
		assert.Equal(t, sig, ws.Signal())
	}

	t.Run("kill -9 before a step", func(t *testing.T) {
		dir := t.TempDir()
		_, err := command(bin, []string{"HORA_FAULT=crash-at-step:13"}, resumeArgs(dataDir, "-out", dir)...).CombinedOutput()
		killedBy(t, err, syscall.SIGKILL)
		last, err := findCheckpoint(dir, "last")
		require.NoError(t, err)
		assert.Equal(t, 10, last.Manifest.Step)
		out := resume(t, dir)
		assert.Contains(t, out, "resuming from")
		assertSameFinalWeights(t, ref, dir)
		got := readMetrics(t, filepath.Join(dir, "metrics.jsonl"))
		require.Len(t, got, 2, "one epoch record per epoch after the resume")
		assert.Equal(t, refMetrics[1]["test_accuracy"], got[1]["test_accuracy"])
		steps := readRecords(t, filepath.Join(dir, "metrics.jsonl"), "train")
		assert.Len(t, steps, 8, "train records every 5 of 40 steps, none twice")
	})

	t.Run("kill -9 while writing a checkpoint", func(t *testing.T) {
		dir := t.TempDir()
		_, err := command(bin, []string{"HORA_FAULT=kill-in-checkpoint:10"}, resumeArgs(dataDir, "-out", dir)...).CombinedOutput()
		killedBy(t, err, syscall.SIGKILL)
		assert.DirExists(t, filepath.Join(dir, checkpointsDir, ".step-00000010.tmp"), "the interrupted write")
		last, err := findCheckpoint(dir, "last")
		require.NoError(t, err)
		assert.Equal(t, 5, last.Manifest.Step, "the last complete checkpoint")
		out := resume(t, dir)
		assert.Contains(t, out, "removed")
		assert.NoDirExists(t, filepath.Join(dir, checkpointsDir, ".step-00000010.tmp"))
		assertSameFinalWeights(t, ref, dir)
	})

	t.Run("kill -9 from outside", func(t *testing.T) {
		dir := t.TempDir()
		cmd := command(bin, nil, resumeArgs(dataDir, "-out", dir)...)
		require.NoError(t, cmd.Start())
		waitFor(t, func() bool {
			all, _, _ := listCheckpoints(dir)
			return len(all) > 0
		})
		require.NoError(t, cmd.Process.Kill())
		err := cmd.Wait()
		if err == nil {
			t.Skip("the run ended before the signal arrived")
		}
		killedBy(t, err, syscall.SIGKILL)
		resume(t, dir)
		assertSameFinalWeights(t, ref, dir)
	})

	t.Run("Ctrl-C writes a checkpoint", func(t *testing.T) {
		dir := t.TempDir()
		cmd := command(bin, nil, resumeArgs(dataDir, "-out", dir)...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		waitFor(t, func() bool {
			all, _, _ := listCheckpoints(dir)
			return len(all) > 0
		})
		require.NoError(t, cmd.Process.Signal(os.Interrupt))
		err := cmd.Wait()
		if err == nil {
			t.Skip("the run ended before the signal arrived")
		}
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, exitInterrupted, ee.ExitCode(), out.String())
		assert.Contains(t, out.String(), "stopped at step")
		resume(t, dir)
		assertSameFinalWeights(t, ref, dir)
	})

	t.Run("train -restarts restarts a crashed job", func(t *testing.T) {
		dir := t.TempDir()
		once := filepath.Join(t.TempDir(), "fired")
		out, err := command(bin, []string{"HORA_FAULT=crash-at-step:27", "HORA_FAULT_ONCE=" + once},
			resumeArgs(dataDir, "-out", dir, "-restarts", "2")...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "restarting it from the last checkpoint")
		assertSameFinalWeights(t, ref, dir)
	})
}

// waitFor polls cond until it holds, failing after a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCheckpointsKeepLastAndBest checks the retention: the newest
// checkpoint.keep checkpoints and the best one remain, with manifests
// whose digests match their files.
func TestCheckpointsKeepLastAndBest(t *testing.T) {
	dataDir := syntheticFashion(t, 320, 100)
	out := t.TempDir()
	code, stdout, stderr := runTrain(t, "-config", "../configs/fashion-mnist-mlp.yaml", "-set", "data.dir="+dataDir,
		"-set", "model.hidden=[16]", "-set", "train.epochs=4", "-set", "train.batch_size=32",
		"-set", "checkpoint.keep=1", "-set", "train.eval_every_steps=5", "-set", "checkpoint.every_steps=5", "-out", out)
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	all, skipped, err := listCheckpoints(out)
	require.NoError(t, err)
	assert.Empty(t, skipped)
	best, err := readBest(out)
	require.NoError(t, err)
	require.NotEmpty(t, best.Checkpoint)
	assert.Equal(t, "test_accuracy", best.Metric)
	var names []string
	for _, c := range all {
		names = append(names, filepath.Base(c.Dir))
		_, err := readManifest(c.Dir, true)
		assert.NoError(t, err)
	}
	assert.Contains(t, names, checkpointName(40), "the newest")
	assert.Contains(t, names, best.Checkpoint, "the best")
	assert.LessOrEqual(t, len(names), 2)
	evals := readRecords(t, filepath.Join(out, "metrics.jsonl"), "eval")
	assert.Len(t, evals, 8, "an evaluation every 5 steps (the epoch ends coincide)")
	top := 0.0
	for _, e := range evals {
		top = max(top, e["test_accuracy"])
	}
	assert.Equal(t, top, best.Value, "every evaluation had a checkpoint: the best is the top one")
}
