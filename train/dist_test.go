//go:build mpi

package train

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/checkpoint"
)

// mpirun returns the command line that starts n ranks of bin, or skips.
func mpirun(t *testing.T, n int, args ...string) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not found (install openmpi-bin; make deps does)")
	}
	full := []string{"--allow-run-as-root", "--oversubscribe", "-np", string(rune('0' + n))}
	return exec.Command(path, append(full, args...)...)
}

// buildTrain builds this command with MPI support into a temporary folder.
func buildTrain(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "train")
	out, err := exec.Command("go", "build", "-tags", "mpi,horafault", "-o", bin, "../cmd/train").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// TestDistTrainMatchesSingleProcess checks the promise of data
// parallelism end to end: two ranks with batch 32 each train the same
// model as one process with batch 64 (same seed, same samples, no
// learning-rate scaling), and only rank 0 writes results.
func TestDistTrainMatchesSingleProcess(t *testing.T) {
	bin := buildTrain(t)
	dataDir := syntheticFashion(t, 640, 200)
	common := []string{"-config", "../configs/fashion-mnist-mlp.yaml", "-set", "data.dir=" + dataDir,
		"-set", "train.epochs=2", "-set", "model.hidden=[64]", "-set", "dist.lr_scaling=none",
		"-set", "output.progress=false"}

	single := t.TempDir()
	out, err := exec.Command(bin, append(common, "-set", "train.batch_size=64", "-out", single)...).CombinedOutput()
	require.NoError(t, err, "%s", out)

	multi := t.TempDir()
	timeline := filepath.Join(t.TempDir(), "timeline.json")
	cmd := mpirun(t, 2, append([]string{bin}, append(common, "-set", "train.batch_size=32", "-out", multi)...)...)
	cmd.Env = append(os.Environ(), "HORA_TIMELINE="+timeline)
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	text := string(out)
	assert.Contains(t, text, "data-parallel over 2 ranks")
	assert.Equal(t, 1, strings.Count(text, "epoch 2/2"), "rank 0 alone reports: %s", text)

	assertSameWeights(t, single, multi)
	ms, mm := readMetrics(t, filepath.Join(single, "metrics.jsonl")), readMetrics(t, filepath.Join(multi, "metrics.jsonl"))
	require.Len(t, mm, 2)
	assert.InDelta(t, ms[1]["test_accuracy"], mm[1]["test_accuracy"], 1e-9, "global metrics")
	assert.InDelta(t, ms[1]["train_loss"], mm[1]["train_loss"], 1e-5)

	tl, err := os.ReadFile(timeline)
	require.NoError(t, err)
	for _, want := range []string{`"ALLREDUCE"`, `"QUEUE"`, `"forward"`, `"backward"`, `"step"`} {
		assert.Contains(t, string(tl), want)
	}
}

// assertSameWeights requires the model.safetensors of two run folders to
// hold the same tensors within 1e-5 (relative to each tensor's largest
// value).
func assertSameWeights(t *testing.T, dirA, dirB string) {
	t.Helper()
	a, _, err := checkpoint.Load(filepath.Join(dirA, "model.safetensors"))
	require.NoError(t, err)
	b, _, err := checkpoint.Load(filepath.Join(dirB, "model.safetensors"))
	require.NoError(t, err)
	require.Equal(t, len(a), len(b))
	for name, want := range a {
		got := b[name]
		require.NotNil(t, got, name)
		wv, gv := want.Values(), got.Values()
		diff, scale := 0.0, 0.0
		for i := range wv {
			diff = max(diff, math.Abs(wv[i]-gv[i]))
			scale = max(scale, math.Abs(wv[i]))
		}
		assert.LessOrEqual(t, diff/scale, 1e-5, "%s", name)
	}
}

// TestDistFineTuneONNXMatchesSingleProcess: an imported ONNX model
// fine-tunes with data parallelism like a model written in Go. The file is
// an MLP trained and exported by train itself.
func TestDistFineTuneONNXMatchesSingleProcess(t *testing.T) {
	bin := buildTrain(t)
	dataDir := syntheticFashion(t, 640, 200)
	file := filepath.Join(t.TempDir(), "mlp.onnx")
	common := []string{"-config", "../configs/fashion-mnist-mlp.yaml", "-set", "data.dir=" + dataDir,
		"-set", "train.epochs=1", "-set", "model.hidden=[64]", "-set", "output.progress=false"}
	out, err := exec.Command(bin, append(common, "-out", t.TempDir(), "-export-onnx", file)...).CombinedOutput()
	require.NoError(t, err, "%s", out)

	tune := append(common, "-set", "model.name=onnx", "-set", "model.file="+file, "-set", "dist.lr_scaling=none")
	single := t.TempDir()
	out, err = exec.Command(bin, append(tune, "-set", "train.batch_size=64", "-out", single)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	multi := t.TempDir()
	out, err = mpirun(t, 2, append([]string{bin}, append(tune, "-set", "train.batch_size=32", "-out", multi)...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "data-parallel over 2 ranks")
	assertSameWeights(t, single, multi)
}

// TestDistTrainRankFailure: a rank whose data is unreadable ends the whole
// job quickly with a message naming it, rather than leaving rank 0 waiting.
func TestDistTrainRankFailure(t *testing.T) {
	bin := buildTrain(t)
	dataDir := syntheticFashion(t, 64, 20)
	cmd := mpirun(t, 2, "sh", "-c", `if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then d=/nonexistent; else d=`+dataDir+`; fi; exec `+bin+
		` -config ../configs/fashion-mnist-mlp.yaml -set data.dir=$d -set train.epochs=1 -out `+t.TempDir())
	start := time.Now()
	out, err := cmd.CombinedOutput()
	assert.Error(t, err)
	assert.Less(t, time.Since(start), 60*time.Second)
	assert.Contains(t, string(out), "rank 1: aborting")
	assert.Contains(t, string(out), "/nonexistent")
}

// TestDistTrainOnGPUs runs the same comparison on GPUs (the emulator's two,
// on machines without one): two ranks, one GPU each, reduce their
// gradients with NCCL or, where NCCL is missing (as with the emulator),
// through host memory over MPI, and must end where one GPU process does.
func TestDistTrainOnGPUs(t *testing.T) {
	needGPU(t)
	bin := buildTrain(t)
	dataDir := syntheticFashion(t, 320, 100)
	common := []string{"-config", "../configs/fashion-mnist-mlp.yaml", "-set", "data.dir=" + dataDir,
		"-set", "device=cuda", "-set", "tf32=false",
		"-set", "train.epochs=2", "-set", "model.hidden=[32]", "-set", "dist.lr_scaling=none",
		"-set", "output.progress=false"}
	env := append(os.Environ(), "HORA_CACHE_DIR="+t.TempDir())

	single := t.TempDir()
	cmd := exec.Command(bin, append(common, "-set", "train.batch_size=64", "-out", single)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "samples on cuda:0")

	multi := t.TempDir()
	cmd = mpirun(t, 2, append([]string{bin}, append(common, "-set", "train.batch_size=32", "-out", multi)...)...)
	cmd.Env = env
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `data-parallel over 2 ranks \(NCCL (not found.*host staging|[0-9.]+ ).*\)`, string(out))
	assertSameWeights(t, single, multi)
}

// TestDistResumeOnDifferentWorldSize: a 2-rank job whose rank 1 is killed
// (kill -9) is restarted by train -restarts from its last checkpoint on
// another number of ranks (as after losing a node): the rest of the
// epoch is shared among the new ranks, the learning rate rescaled, and
// the job ends with a trained model. With the same number of ranks the
// restarted job ends bit for bit where an uninterrupted one does.
func TestDistResumeOnDifferentWorldSize(t *testing.T) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not found (install openmpi-bin; make deps does)")
	}
	bin := buildTrain(t)
	dataDir := syntheticFashion(t, 640, 160)
	args := func(dir string, extra ...string) []string {
		return append([]string{"-config", "../configs/fashion-mnist-mlp.yaml", "-set", "data.dir=" + dataDir,
			"-set", "model.hidden=[32]", "-set", "train.epochs=2", "-set", "train.batch_size=16",
			"-set", "checkpoint.every_steps=5", "-set", "output.progress=false", "-out", dir}, extra...)
	}
	run := func(t *testing.T, dir string, env []string, extra ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args(dir, extra...)...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Env = append(cmd.Env, "HORA_MPIRUN=mpirun --allow-run-as-root --oversubscribe")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	ref := t.TempDir()
	run(t, ref, nil, "-restarts", "1", "-np", "2")

	for _, next := range []int{2, 1, 3} {
		t.Run(fmt.Sprintf("2 ranks then %d", next), func(t *testing.T) {
			dir := t.TempDir()
			once := filepath.Join(t.TempDir(), "fired")
			out := run(t, dir, []string{"HORA_FAULT=crash-at-step:13:1", "HORA_FAULT_ONCE=" + once,
				fmt.Sprintf("HORA_NP_NEXT=%d", next)}, "-restarts", "1", "-np", "2")
			assert.Contains(t, out, "restarting it from the last checkpoint")
			assert.Contains(t, out, "resuming from")
			m := readMetrics(t, filepath.Join(dir, "metrics.jsonl"))
			require.Len(t, m, 2)
			assert.Greater(t, m[1]["test_accuracy"], 0.9)
			if next == 2 {
				a, _, err := checkpoint.Load(filepath.Join(ref, modelFile))
				require.NoError(t, err)
				b, _, err := checkpoint.Load(filepath.Join(dir, modelFile))
				require.NoError(t, err)
				for name, w := range a {
					assert.Equal(t, w.Float32s(), b[name].Float32s(), name)
				}
				return
			}
			assert.Contains(t, out, fmt.Sprintf("written by 2 rank(s), now %d", next))
		})
	}
}

// TestDistFitCallbackStopsEveryRank runs train.Fit on 2 ranks with a
// callback that asks to stop on rank 1 only: both ranks must stop at the
// same step and end successfully.
func TestDistFitCallbackStopsEveryRank(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "fitmpi")
	out, err := exec.Command("go", "build", "-tags", "mpi", "-o", bin, "./testdata/fitmpi").CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = mpirun(t, 2, bin, t.TempDir()).CombinedOutput()
	require.NoError(t, err, "%s", out)
	text := string(out)
	assert.Contains(t, text, "rank 0: last step 3, 0 epochs")
	assert.Contains(t, text, "rank 1: last step 3, 0 epochs")
	assert.Contains(t, text, "a callback stopped the run at step 3")
}

// rankPID returns the PID of the process of rank under mpirun (found by
// the OMPI_COMM_WORLD_RANK in its environment), or 0.
func rankPID(bin string, rank int) int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		exe, err := os.Readlink(filepath.Join(p, "exe"))
		if err != nil || exe != bin {
			continue
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == fmt.Sprintf("OMPI_COMM_WORLD_RANK=%d", rank) {
				pid, _ := strconv.Atoi(filepath.Base(p))
				return pid
			}
		}
	}
	return 0
}

// TestDistStoppedRankIsReported: a rank stopped by SIGSTOP no longer
// joins the negotiation rounds; rank 0 warns after dist.stall_warning_s,
// naming it, and the job ends after dist.stall_shutdown_s (well before
// dist.timeout_s).
func TestDistStoppedRankIsReported(t *testing.T) {
	bin := buildTrain(t)
	dataDir := syntheticFashion(t, 2000, 100)
	run := t.TempDir()
	var out syncBuffer
	cmd := mpirun(t, 2, bin, "-config", "../configs/fashion-mnist-mlp.yaml", "-set", "data.dir="+dataDir,
		"-set", "train.epochs=1000", "-set", "model.hidden=[64]", "-set", "train.batch_size=16", "-set", "output.progress=false",
		"-set", "dist.stall_warning_s=2", "-set", "dist.stall_shutdown_s=6", "-set", "dist.timeout_s=120", "-out", run)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	var rank1 int
	t.Cleanup(func() {
		if rank1 > 0 {
			syscall.Kill(rank1, syscall.SIGCONT)
			syscall.Kill(rank1, syscall.SIGKILL)
		}
		cmd.Process.Kill()
	})
	waitFor(t, func() bool {
		rank1 = rankPID(bin, 1)
		return rank1 > 0 && strings.Contains(out.String(), "data-parallel over 2 ranks")
	})
	time.Sleep(500 * time.Millisecond) // into the steps
	require.NoError(t, syscall.Kill(rank1, syscall.SIGSTOP))
	stopped := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		assert.Error(t, err, "the job fails")
	case <-time.After(60 * time.Second):
		t.Fatalf("the job did not end within 60 s of stopping rank 1:\n%s", out.String())
	}
	took := time.Since(stopped)
	text := out.String()
	assert.Regexp(t, `dist: stall: rank 0 has waited [0-9.]+s for the other ranks in .*not answering: rank 1 on host`, text)
	assert.Contains(t, text, "dist: stall shutdown after")
	assert.Less(t, took, 40*time.Second, "the shutdown comes after stall_shutdown_s, not after dist.timeout_s (120 s)")
}
