package train

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/hora-dl/hora/checkpoint"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// The tests of this file each pin down a defect a hostile or careless
// user found (what the run must refuse, what it must not lose).

// tinyRun trains a two-epoch MLP on a synthetic data set into a new run
// folder and returns the data folder and the run folder.
func tinyRun(t *testing.T) (dataDir, run string) {
	t.Helper()
	dataDir = syntheticFashion(t, 128, 64)
	run = filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runTrain(t, "-config", mlpConfig, "-set", "data.dir="+dataDir, "-set", "train.epochs=2",
		"-set", "model.hidden=[8]", "-set", "train.batch_size=32", "-set", "output.plot=false", "-out", run)
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	return dataDir, run
}

// treeDigest returns a digest of every file's name, mode and contents
// under dir: equal digests mean nothing was changed.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v\n", path, info.Mode())
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

// lastCheckpoint returns the newest step-* folder of a run.
func lastCheckpoint(t *testing.T, run string) string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(run, checkpointsDir, "step-*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	return dirs[len(dirs)-1]
}

func TestRelExportReplacesOnlyRegularFilesOutsideRuns(t *testing.T) {
	_, run := tinyRun(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	victim := filepath.Join(dir, "victim.txt")
	require.NoError(t, os.WriteFile(victim, []byte("keep me"), 0o644))
	link := filepath.Join(dir, "link.onnx")
	require.NoError(t, os.Symlink(victim, link))
	cases := map[string]string{
		"fifo":             fifo,
		"symlink":          link,
		"folder":           dir,
		"the run's config": filepath.Join(run, configFile),
		"the run's model":  filepath.Join(run, modelFile),
		"a checkpoint":     filepath.Join(lastCheckpoint(t, run), modelFile),
		"in checkpoints/":  filepath.Join(run, checkpointsDir, "new.onnx"),
	}
	if os.Geteuid() == 0 {
		dev := filepath.Join(dir, "null")
		require.NoError(t, syscall.Mknod(dev, syscall.S_IFCHR|0o666, int(1<<8|3)))
		cases["char device"] = dev
	}
	runBefore := treeDigest(t, run)
	dirBefore := treeDigest(t, dir)
	for name, target := range cases {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runTrain(t, "export", "-run", run, "-o", target)
			assert.Equal(t, exitInput, code, stderr)
			assert.Contains(t, stderr, "refusing to")
			assert.Contains(t, stderr, target)
		})
	}
	assert.Equal(t, runBefore, treeDigest(t, run), "the run is unchanged")
	assert.Equal(t, dirBefore, treeDigest(t, dir), "the targets are unchanged")
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "keep me", string(b))

	// A regular file is replaced.
	good := filepath.Join(dir, "model.onnx")
	require.NoError(t, os.WriteFile(good, []byte("old"), 0o644))
	code, _, stderr := runTrain(t, "export", "-run", run, "-o", good)
	require.Equal(t, exitOK, code, stderr)
	_, err = onnx.Load(good)
	assert.NoError(t, err)
}

func TestRelOutBesideTheUsersFiles(t *testing.T) {
	dataDir := syntheticFashion(t, 64, 32)
	dir := t.TempDir()
	src, err := os.ReadFile(mlpConfig)
	require.NoError(t, err)
	config := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(config, src, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644))
	before := treeDigest(t, dir)
	args := []string{"-config", config, "-set", "data.dir=" + dataDir, "-set", "model.hidden=[8]", "-set", "output.plot=false", "-out", dir}
	code, _, stderr := runTrain(t, args...)
	assert.Equal(t, exitInput, code, stderr)
	assert.Contains(t, stderr, "is not empty (config.yaml, notes.txt) and holds no run")
	assert.Contains(t, stderr, "-overwrite")
	assert.Equal(t, before, treeDigest(t, dir), "the user's files are untouched")

	// The same with the folder from the config.
	code, _, stderr = runTrain(t, append(args[:len(args)-2], "-set", "output.dir="+dir)...)
	assert.Equal(t, exitInput, code, stderr)
	assert.Equal(t, before, treeDigest(t, dir))

	// -overwrite says the user wants it.
	code, _, stderr = runTrain(t, append(args, "-overwrite")...)
	assert.Equal(t, exitOK, code, stderr)
}

func TestRelExportOverTheConfigBeingRead(t *testing.T) {
	dataDir := syntheticFashion(t, 64, 32)
	dir := t.TempDir()
	src, err := os.ReadFile(mlpConfig)
	require.NoError(t, err)
	config := filepath.Join(dir, "my.yaml")
	require.NoError(t, os.WriteFile(config, src, 0o644))
	code, _, stderr := runTrain(t, "-config", config, "-set", "data.dir="+dataDir, "-set", "model.hidden=[8]",
		"-set", "export.onnx="+config, "-out", filepath.Join(dir, "run"))
	assert.Equal(t, exitInput, code, stderr)
	assert.Contains(t, stderr, "export.onnx: refusing to replace "+config+": it is an input of the run ("+config+")")
	b, err := os.ReadFile(config)
	require.NoError(t, err)
	assert.Equal(t, src, b)
}

func TestRelResumeRefusesWhenNoCheckpointVerifies(t *testing.T) {
	_, run := tinyRun(t)
	dirs, err := filepath.Glob(filepath.Join(run, checkpointsDir, "step-*"))
	require.NoError(t, err)
	require.Len(t, dirs, 2)
	// One checkpoint with a changed byte, one with a file missing.
	model := filepath.Join(dirs[0], modelFile)
	b, err := os.ReadFile(model)
	require.NoError(t, err)
	b[len(b)-1] ^= 1
	require.NoError(t, os.WriteFile(model, b, 0o644))
	require.NoError(t, os.Remove(filepath.Join(dirs[1], modelFile)))
	before := treeDigest(t, run)

	code, stdout, stderr := runTrain(t, "resume", "-run", run)
	assert.Equal(t, exitInput, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stderr, "no checkpoint of "+run+" passes verification")
	assert.Contains(t, stderr, filepath.Base(dirs[0]))
	assert.Contains(t, stderr, filepath.Base(dirs[1]))
	assert.Contains(t, stderr, "-start-over")
	assert.Equal(t, before, treeDigest(t, run), "a refused resume changes nothing")

	code, stdout, stderr = runTrain(t, "resume", "-run", run, "-start-over")
	assert.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "-start-over: deleted the checkpoints")
}

func TestRelRunFolderIsLocked(t *testing.T) {
	dataDir, run := tinyRun(t)
	unlock, err := lockRunDir(run) // another process holding it: a second open file description
	require.NoError(t, err)
	before := treeDigest(t, run)
	code, _, stderr := runTrain(t, "resume", "-run", run)
	assert.Equal(t, exitInput, code, stderr)
	assert.Contains(t, stderr, fmt.Sprintf("%s is in use: process %d is training into it", run, os.Getpid()))
	code, _, stderr = runTrain(t, "-config", mlpConfig, "-set", "data.dir="+dataDir, "-out", run, "-overwrite")
	assert.Equal(t, exitInput, code, stderr)
	assert.Contains(t, stderr, "is in use")
	unlock()
	assert.Equal(t, before, treeDigest(t, run), "the refused runs wrote nothing")
}

// fixedBatchModel writes an ONNX model whose input is [1, 1, 28, 28] and
// which reshapes it to [1, 784]: it works for one image only.
func fixedBatchModel(t *testing.T, path string) {
	t.Helper()
	info := func(name string, dims ...int64) *onnxpb.ValueInfoProto {
		shape := &onnxpb.TensorShapeProto{}
		for _, d := range dims {
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
		}
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), Shape: shape}}}}
	}
	init := func(name string, v *tensor.Tensor, dt onnxpb.TensorProto_DataType) *onnxpb.TensorProto {
		tp, err := onnx.TensorToProto(v, name, dt)
		require.NoError(t, err)
		return tp
	}
	transB := int64(1)
	m := &onnxpb.ModelProto{
		IrVersion:   proto.Int64(8),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: proto.Int64(17)}},
		Graph: &onnxpb.GraphProto{
			Node: []*onnxpb.NodeProto{
				{OpType: proto.String("Reshape"), Name: proto.String("flatten"), Input: []string{"x", "shape"}, Output: []string{"xf"}},
				{OpType: proto.String("Gemm"), Name: proto.String("fc"), Input: []string{"xf", "w", "b"}, Output: []string{"y"},
					Attribute: []*onnxpb.AttributeProto{{Name: proto.String("transB"), Type: onnxpb.AttributeProto_INT.Enum(), I: &transB}}},
			},
			Initializer: []*onnxpb.TensorProto{
				init("shape", tensor.FromInt64([]int64{1, 784}, 2), onnxpb.TensorProto_INT64),
				init("w", tensor.Zeros(10, 784), onnxpb.TensorProto_FLOAT),
				init("b", tensor.Zeros(10), onnxpb.TensorProto_FLOAT),
			},
			Input:  []*onnxpb.ValueInfoProto{info("x", 1, 1, 28, 28)},
			Output: []*onnxpb.ValueInfoProto{info("y", 1, 10)},
		},
	}
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func TestRelONNXWithAFixedBatchFailsAtStart(t *testing.T) {
	dataDir := syntheticFashion(t, 64, 32)
	model := filepath.Join(t.TempDir(), "fixed.onnx")
	fixedBatchModel(t, model)
	code, stdout, stderr := runTrain(t, "-config", mlpConfig, "-set", "data.dir="+dataDir, "-set", "model.name=onnx",
		"-set", "model.file="+model, "-set", "train.batch_size=16", "-out", filepath.Join(t.TempDir(), "run"))
	assert.Equal(t, exitInput, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stderr, "model.file: "+model+": a batch of 2 samples")
	assert.Contains(t, stderr, "is its batch dimension fixed?")
	assert.NotContains(t, stderr, "goroutine")
}

func TestRelEmptyTestSetIsAnError(t *testing.T) {
	dataDir := syntheticFashion(t, 64, 0)
	code, stdout, stderr := runTrain(t, "-config", mlpConfig, "-set", "data.dir="+dataDir, "-out", filepath.Join(t.TempDir(), "run"))
	assert.Equal(t, exitInput, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stderr, "the test set (data.dir "+dataDir+") has no samples")
}

func TestRelNegativeFlagsAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"-config", mlpConfig, "-np", "-3"},
		{"-config", mlpConfig, "-restarts", "-1"},
	} {
		code, _, stderr := runTrain(t, args...)
		assert.Equal(t, exitInput, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, args[2]+" "+args[3]+": expected")
	}
	_, run := tinyRun(t)
	for _, flag := range [][]string{{"-temperature", "-1"}, {"-temperature", "NaN"}, {"-top-k", "-3"}, {"-length", "-5"}} {
		code, _, stderr := runTrain(t, "predict", "-run", run, flag[0], flag[1], "x.png")
		assert.Equal(t, exitInput, code, "%v: %s", flag, stderr)
		assert.Contains(t, stderr, "predict: "+flag[0]+" "+flag[1]+": expected")
	}
}

func TestRelNaNWeightsAreNamed(t *testing.T) {
	_, run := tinyRun(t)
	ckpt := lastCheckpoint(t, run)
	path := filepath.Join(ckpt, modelFile)
	weights, meta, err := checkpoint.Load(path)
	require.NoError(t, err)
	w := weights["1.weight"]
	require.NotNil(t, w, "the MLP's first linear layer")
	vals := w.Float32s()
	vals[5] = float32(math.NaN())
	weights["1.weight"] = tensor.FromFloat32(vals, w.Shape()...)
	require.NoError(t, checkpoint.Save(path, weights, meta))
	// Keep the manifest true to the file, as a run that diverged would.
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	manifestPath := filepath.Join(ckpt, "manifest.json")
	var m map[string]any
	raw, err := os.ReadFile(manifestPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &m))
	d := digestBytes(b)
	m["files"].(map[string]any)[modelFile] = map[string]any{"size": d.Size, "sha256": d.SHA256}
	raw, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(manifestPath, raw, 0o644))

	code, stdout, stderr := runTrain(t, "eval", "-run", run, "-checkpoint", filepath.Base(ckpt))
	assert.Equal(t, exitInput, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stderr, `tensor "1.weight" holds NaN at index 5: the weights are not finite`)
	assert.NotContains(t, stderr, "json: unsupported value")
}

func TestRelEnvironmentErrorsAreNotRetried(t *testing.T) {
	var stderr strings.Builder
	err := fmt.Errorf("writing checkpoint: %w", &os.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC})
	assert.Equal(t, exitEnvironment, exitCode(err, &stderr))
	assert.Contains(t, stderr.String(), "no space left on device")
	for code, retry := range map[int]bool{exitOK: false, exitFailure: true, exitInput: false, exitDiverged: false,
		exitEnvironment: false, exitInterrupted: false, 137: true} {
		assert.Equal(t, retry, retryable(code), "exit status %d", code)
	}
}

func TestRelSignalWhileLoadingEndsPromptly(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	RegisterDataset("rel-slow", func(_ struct{}, cfg *Config) (*Data, error) {
		<-release // a load that takes minutes
		return nil, errors.New("released")
	})
	defer datasetRegistry.remove("rel-slow")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel) // SIGTERM, as Main turns it into a cancel
	start := time.Now()
	var o, e strings.Builder
	code := Run(ctx, []string{"-config", mlpConfig, "-set", "data.name=rel-slow", "-out", filepath.Join(t.TempDir(), "run")}, &o, &e)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Equal(t, exitInterrupted, code, e.String())
	assert.Contains(t, e.String(), "interrupted while loading the data")
}

// A test binary is built without the horafault tag: HORA_FAULT must do
// nothing in it, as in a release build.
func TestRelFaultInjectionIsNotInReleaseBuilds(t *testing.T) {
	if faultInjection {
		t.Skip("built with -tags horafault")
	}
	if os.Getenv("HORA_REL_CHILD") == "1" {
		fmt.Printf("faultStep=%d hook=%v\n", faultStep, faultHook != nil || faultAtStart)
		return
	}
	for _, fault := range []string{"crash-at-step:3", "kill-in-checkpoint:3", "crash-at-start:1"} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestRelFaultInjectionIsNotInReleaseBuilds$")
		cmd.Env = append(os.Environ(), "HORA_REL_CHILD=1", "HORA_FAULT="+fault)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "faultStep=0 hook=false", fault)
	}
}

// A first attempt that dies before it writes config.yaml is started
// again as it was, not resumed (there is nothing to resume).
func TestRelRestartBeforeTheConfigWasWritten(t *testing.T) {
	bin := trainBinary(t)
	dataDir := syntheticFashion(t, 64, 32)
	run := filepath.Join(t.TempDir(), "run")
	once := filepath.Join(t.TempDir(), "fired")
	out, err := command(bin, []string{"HORA_FAULT=crash-at-start:1", "HORA_FAULT_ONCE=" + once},
		"-config", mlpConfig, "-set", "data.dir="+dataDir, "-set", "model.hidden=[8]", "-set", "output.plot=false",
		"-out", run, "-restarts", "1").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.FileExists(t, once, "the fault fired")
	assert.Contains(t, string(out), "restarting it")
	assert.FileExists(t, filepath.Join(run, modelFile))
}

// startLauncher starts train -restarts 1 on a run long enough to be
// signalled, waits until its job trains and returns the launcher and
// the PID of the job it started.
func startLauncher(t *testing.T, bin, run string) (launcher *exec.Cmd, out *syncBuffer, job int) {
	t.Helper()
	dataDir := syntheticFashion(t, 2000, 100)
	out = &syncBuffer{}
	launcher = command(bin, nil, "-config", mlpConfig, "-set", "data.dir="+dataDir, "-set", "train.epochs=1000",
		"-set", "model.hidden=[64]", "-set", "train.batch_size=16", "-set", "output.plot=false", "-out", run, "-restarts", "1")
	launcher.Stdout, launcher.Stderr = out, out
	require.NoError(t, launcher.Start())
	t.Cleanup(func() { launcher.Process.Kill() })
	waitFor(t, func() bool {
		// The thread that started the job lists it.
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", launcher.Process.Pid))
		for _, task := range tasks {
			if b, err := os.ReadFile(task); err == nil && len(strings.Fields(string(b))) > 0 {
				fmt.Sscan(string(b), &job)
			}
		}
		_, err := os.Stat(filepath.Join(run, metricsFile))
		return job > 0 && err == nil
	})
	return launcher, out, job
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] != "Z"
}

func TestRelLauncherSignals(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("needs /proc")
	}
	bin := trainBinary(t)
	t.Run("SIGTERM is passed on", func(t *testing.T) {
		run := filepath.Join(t.TempDir(), "run")
		launcher, out, _ := startLauncher(t, bin, run)
		require.NoError(t, launcher.Process.Signal(syscall.SIGTERM))
		err := launcher.Wait()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, out.String())
		assert.Equal(t, exitInterrupted, ee.ExitCode(), out.String())
		assert.Contains(t, out.String(), "interrupted; the checkpoint of the last step was written")
		_, ok, _, err := latestCheckpoint(run, false)
		require.NoError(t, err)
		assert.True(t, ok, "the job wrote a checkpoint")
	})
	t.Run("kill -9 takes the job along", func(t *testing.T) {
		run := filepath.Join(t.TempDir(), "run")
		launcher, out, job := startLauncher(t, bin, run)
		require.True(t, alive(job))
		require.NoError(t, launcher.Process.Kill())
		launcher.Wait()
		deadline := time.Now().Add(20 * time.Second)
		for alive(job) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		assert.False(t, alive(job), "the job (pid %d) outlived its launcher\n%s", job, out.String())
	})
}

func TestRelPredictKnowsIDXByContent(t *testing.T) {
	dataDir, run := tinyRun(t)
	b, err := os.ReadFile(filepath.Join(dataDir, "t10k-images-idx3-ubyte.gz"))
	require.NoError(t, err)
	renamed := filepath.Join(t.TempDir(), "digits.bin")
	require.NoError(t, os.WriteFile(renamed, b, 0o644))
	code, stdout, stderr := runTrain(t, "predict", "-run", run, renamed)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, 64, strings.Count(stdout, `"index":`), "one prediction per image of the IDX file")

	fifo := filepath.Join(t.TempDir(), "rows.csv")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	code, _, stderr = runTrain(t, "predict", "-run", run, fifo)
	assert.Equal(t, exitInput, code, stderr)
	assert.Contains(t, stderr, "is a named pipe (FIFO), not a regular file")
}
