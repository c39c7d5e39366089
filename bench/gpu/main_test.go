package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cuda"
	"github.com/hora-dl/hora/device/cuda/cudaemu"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/tensor"
)

// The benchmark's code paths at -small sizes: on the CPU always, on
// cuda:0 when it opens (a GPU with HORA_CUDA_TEST=gpu or HORA_CUDA_LIBS,
// else the CUDA emulator, device/cuda/cudaemu), and the
// PyTorch script's names and ONNX export when python3 has torch.

var (
	tmpDir     string // removed after the tests
	cudaSkip   string // why the CUDA tests skip, when they do
	torchOnce  sync.Once
	torchPy    string // a Python with torch, or "" with onnxReason
	onnxOnce   sync.Once
	onnxFile   string // the small ResNet-18 export, or "" with onnxReason
	onnxReason string
)

// smallImage is the ResNet-18 input size of the tests' export.
const smallImage = 16

// python returns $PYTHON, or python3.
func python() string {
	if p := os.Getenv("PYTHON"); p != "" {
		return p
	}
	return "python3"
}

// torchPython returns a Python that imports torch ($PYTHON, python3 or
// Debian's /usr/bin/python3), or "" with the reason in onnxReason.
func torchPython() string {
	torchOnce.Do(func() {
		tried := []string{python()}
		if os.Getenv("PYTHON") == "" {
			tried = append(tried, "/usr/bin/python3")
		}
		for _, p := range tried {
			if exec.Command(p, "-c", "import torch").Run() == nil {
				torchPy = p
				return
			}
		}
		onnxReason = fmt.Sprintf("no Python with torch (tried %s)", strings.Join(tried, ", "))
	})
	return torchPy
}

func TestMain(m *testing.M) {
	var err error
	if tmpDir, err = os.MkdirTemp("", "hora-gpu-bench-test-*"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if os.Getenv("HORA_CUDA_TEST") != "gpu" && os.Getenv("HORA_CUDA_LIBS") == "" {
		// As device/cuda's tests: the emulator's libraries (cached across
		// test binaries by a hash of their sources), unless HORA_CUDA_LIBS
		// or HORA_CUDA_TEST=gpu asks for real ones.
		if dir, err := cudaemu.BuildCached(); err != nil {
			cudaSkip = fmt.Sprintf("the CUDA emulator cannot be built: %v (HORA_CUDA_TEST=gpu runs on a real GPU)", err)
		} else {
			os.Setenv("HORA_CUDA_LIBS", dir)
			os.Setenv("HORA_CACHE_DIR", tmpDir)
		}
	}
	code := m.Run()
	os.RemoveAll(tmpDir)
	os.Exit(code)
}

// resnetONNX returns the ResNet-18 of torch_gpu_bench.py --write-onnx at
// smallImage×smallImage, exported once, or skips t when python3 has no
// torch.
func resnetONNX(t *testing.T) string {
	t.Helper()
	onnxOnce.Do(func() {
		py := torchPython()
		if py == "" {
			return
		}
		f := filepath.Join(tmpDir, "resnet18.onnx")
		out, err := exec.Command(py, "torch_gpu_bench.py", "--write-onnx", f, "--image-size", fmt.Sprint(smallImage)).CombinedOutput()
		if err != nil {
			onnxReason = fmt.Sprintf("torch_gpu_bench.py --write-onnx: %v\n%s", err, out)
			return
		}
		onnxFile = f
	})
	if onnxFile == "" {
		t.Skip(onnxReason)
	}
	return onnxFile
}

// openCUDA returns cuda:0, or skips t.
func openCUDA(t *testing.T) *cuda.Device {
	t.Helper()
	if cudaSkip != "" {
		t.Skip(cudaSkip)
	}
	d, err := cuda.Open(0)
	if errors.Is(err, device.ErrUnavailable) {
		t.Skipf("no GPU: %v", err)
	}
	require.NoError(t, err)
	return d
}

// runRows runs the program and returns its measurements and info lines.
func runRows(t *testing.T, args ...string) (rows []row, infos map[string]string) {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, run(args, &out))
	infos = map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var fields map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &fields), line)
		if _, ok := fields["info"]; ok {
			var in info
			require.NoError(t, json.Unmarshal([]byte(line), &in), line)
			assert.Equal(t, "hora", in.Framework)
			infos[in.Info] = in.Value
			continue
		}
		var r row
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		assert.Equal(t, "hora", r.Framework)
		assert.Greater(t, r.Value, 0.0, r.Workload)
		assert.False(t, math.IsInf(r.Value, 0), r.Workload)
		rows = append(rows, r)
	}
	return rows, infos
}

func workloads(rows []row) []string {
	var w []string
	for _, r := range rows {
		w = append(w, r.Workload)
	}
	return w
}

// trainNames are the small training workloads at precision prec.
func trainNames(prec string, resnet bool) []string {
	var w []string
	for _, m := range []string{"mlp", "cnn"} {
		for _, where := range []string{"host data", "data on GPU"} {
			w = append(w, fmt.Sprintf("%s train step batch 4 %s (%s)", m, prec, where))
		}
	}
	if resnet {
		for _, where := range []string{"host data", "data on GPU"} {
			w = append(w, fmt.Sprintf("resnet18 3x%dx%d train step batch 2 %s (%s)", smallImage, smallImage, prec, where))
		}
	}
	return w
}

func TestSmallOnCPU(t *testing.T) {
	args := []string{"-device", "cpu", "-small", "-min-time", "1ms"}
	py := torchPython()
	if py != "" {
		args = append(args, "-onnx", resnetONNX(t))
	}
	rows, infos := runRows(t, args...)
	assert.Equal(t, append([]string{"sgemm 64 fp32"}, trainNames("fp32", py != "")...), workloads(rows))
	assert.Equal(t, "cpu", infos["device"])
	assert.Equal(t, "float32 (cpu)", infos["training precision"])
	for _, r := range rows {
		want := "samples/s"
		if strings.Contains(r.Workload, "gemm") {
			want = "TFLOP/s"
		}
		assert.Equal(t, want, r.Unit, r.Workload)
	}
	if py == "" {
		t.Skip(onnxReason + ": the names are not compared with torch_gpu_bench.py's")
	}

	// torch_gpu_bench.py measures the same workloads under the same names.
	out, err := exec.Command(py, "torch_gpu_bench.py", "--device", "cpu", "--small", "--min-time", "0.001",
		"--image-size", fmt.Sprint(smallImage)).Output()
	require.NoError(t, err)
	var torch []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var fields map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &fields), line)
		assert.Equal(t, "pytorch", fields["framework"])
		if w, ok := fields["workload"].(string); ok {
			torch = append(torch, w)
		}
	}
	assert.Equal(t, workloads(rows), torch)
}

func TestSmallOnCUDA(t *testing.T) {
	d := openCUDA(t)
	args := []string{"-device", "cuda:0", "-small", "-min-time", "1ms"}
	resnet := !testing.Short() && os.Getenv("HORA_BENCH_GPU_RESNET") != "0"
	if resnet {
		args = append(args, "-onnx", resnetONNX(t))
	}
	tf32, ac := d.TF32(), d.Autocast()
	rows, infos := runRows(t, args...)
	assert.Equal(t, append([]string{
		"sgemm 64 fp32", "sgemm 64 tf32",
		"bf16 gemm 64 (Hora: fp32 tensors, bf16 autocast, fp32 out)",
	}, trainNames("tf32", resnet)...), workloads(rows))
	assert.Equal(t, describe(d), infos["device"])
	assert.Contains(t, infos["device"], d.GPU())
	assert.Equal(t, tf32, d.TF32(), "the TF32 setting is restored")
	assert.Equal(t, ac, d.Autocast(), "autocast is restored")

	rows, infos = runRows(t, "-device", "cuda:0", "-small", "-min-time", "1ms", "-tf32=false", "-resident=false", "mlp")
	assert.Equal(t, []string{"mlp train step batch 4 fp32 (host data)"}, workloads(rows))
	assert.Equal(t, "float32, TF32 off", infos["training precision"])
}

// TestTrainStepsLearn takes steps on one repeated batch, on the CPU and on
// cuda:0: the loss falls, and ResNet-18's running statistics move and
// stay valid across steps (keepBuffers).
func TestTrainStepsLearn(t *testing.T) {
	t.Run("cpu", func(t *testing.T) {
		dev, err := device.Open("cpu")
		require.NoError(t, err)
		testTrainStepsLearn(t, dev, true)
	})
	t.Run("cuda", func(t *testing.T) {
		// ResNet-18 takes some 20 s on the emulator.
		testTrainStepsLearn(t, openCUDA(t), !testing.Short())
	})
}

func testTrainStepsLearn(t *testing.T, dev device.Device, resnet bool) {
	for _, model := range []string{"mlp", "cnn", "resnet18"} {
		t.Run(model, func(t *testing.T) {
			b := &bench{dev: dev}
			if model == "resnet18" {
				if !resnet {
					t.Skip("-short")
				}
				b.onnx = resnetONNX(t)
			}
			j, err := b.newTrainJob(model, 4)
			require.NoError(t, err)
			layers.Train(j.Model)
			first, right, err := j.Step()
			require.NoError(t, err)
			assert.GreaterOrEqual(t, right, 0)
			last := first
			for range 4 {
				last, _, err = j.Step()
				require.NoError(t, err)
			}
			assert.False(t, math.IsNaN(last))
			assert.Less(t, last, first, "the loss on one repeated batch falls")
			// The resident variant takes the same steps.
			x, err := tensor.FromSlice(dev, j.Batch.X, j.Batch.Shape...)
			require.NoError(t, err)
			y, err := tensor.FromSlice(dev, j.Batch.Y, len(j.Batch.Y))
			require.NoError(t, err)
			for range 2 {
				loss, _, err := j.StepOn(x, y)
				require.NoError(t, err)
				assert.Less(t, loss, first)
			}
			require.NoError(t, dev.Sync())
			bufs := layers.BuffersOf(j.Model)
			if model != "resnet18" {
				assert.Empty(t, bufs)
				return
			}
			require.NotEmpty(t, bufs)
			moved := 0
			for _, buf := range bufs {
				assert.Nil(t, buf.Value.Arena(), "%s outlives the step's arena", buf.Name)
				if strings.HasSuffix(buf.Name, "running_mean") && slices.ContainsFunc(buf.Value.Float32s(), func(v float32) bool { return v != 0 }) {
					moved++
				}
			}
			assert.Positive(t, moved, "running means move from zero")
		})
	}
}

func TestRunErrors(t *testing.T) {
	var out bytes.Buffer
	assert.ErrorContains(t, run([]string{"-device", "cpu", "gemmm"}, &out), `unknown group "gemmm"`)
	assert.ErrorContains(t, run([]string{"-device", "cpu", "resnet18"}, &out), "needs -onnx FILE")
	assert.ErrorContains(t, run([]string{"-device", "nosuch:0", "gemm"}, &out), "-device nosuch:0")
	assert.ErrorContains(t, run([]string{"-device", "cpu", "-min-time", "0s"}, &out), "must be positive")
	assert.Empty(t, out.String(), "nothing measured")
}

// TestTable runs gpu_table.py on lines of both sides.
func TestTable(t *testing.T) {
	if _, err := exec.LookPath(python()); err != nil {
		t.Skipf("no %s: %v", python(), err)
	}
	lines := []string{
		`{"framework":"hora","info":"device","value":"cuda:0: NVIDIA H100 80GB HBM3, sm_90"}`,
		`{"framework":"pytorch","info":"torch","value":"PyTorch 2.11.0"}`,
		`{"framework":"hora","workload":"sgemm 8192 tf32","unit":"TFLOP/s","value":400}`,
		`{"framework":"pytorch","workload":"sgemm 8192 tf32","unit":"TFLOP/s","value":390}`,
		`{"framework":"hora","workload":"sgemm 8192 tf32","unit":"TFLOP/s","value":300}`,
		`{"framework":"pytorch","workload":"sgemm 8192 tf32","unit":"TFLOP/s","value":410}`,
		`{"framework":"hora","workload":"bf16 gemm 8192 (Hora: fp32 tensors, bf16 autocast, fp32 out)","unit":"TFLOP/s","value":500}`,
		`{"framework":"pytorch","workload":"bf16 gemm 8192 (PyTorch: bf16 tensors, bf16 out)","unit":"TFLOP/s","value":600,"hora_workload":"bf16 gemm 8192 (Hora: fp32 tensors, bf16 autocast, fp32 out)"}`,
		`{"framework":"hora","workload":"mlp train step batch 128 tf32 (host data)","unit":"samples/s","value":150000}`,
		`{"framework":"pytorch","workload":"mlp train step batch 128 tf32 (host data)","unit":"samples/s","value":100000}`,
	}
	f := filepath.Join(t.TempDir(), "results.jsonl")
	require.NoError(t, os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	out, err := exec.Command(python(), "gpu_table.py", "-repeat", "2", f).CombinedOutput()
	require.NoError(t, err, "%s", out)
	s := string(out)
	assert.Contains(t, s, "Hora: cuda:0: NVIDIA H100 80GB HBM3, sm_90")
	assert.Contains(t, s, "PyTorch: PyTorch 2.11.0")
	// Medians: Hora 350, PyTorch 400.
	assert.Contains(t, s, "| sgemm 8192 tf32 | TFLOP/s | 350.0 | 400.0 | 0.88× | ≥ 0.95× ✘ |")
	assert.Contains(t, s, "| bf16 gemm 8192 (Hora: fp32 tensors, bf16 autocast, fp32 out) | TFLOP/s | 500.0 | – | – |  |\n"+
		"| bf16 gemm 8192 (PyTorch: bf16 tensors, bf16 out) | TFLOP/s | 500.0 | 600.0 | 0.83× | ≥ 0.95× ✘ |")
	assert.Contains(t, s, "| mlp train step batch 128 tf32 (host data) | samples/s | 150,000 | 100,000 | 1.50× | ≥ 1× ✔ |")
	assert.Contains(t, s, "the median of 2 runs")
	assert.Contains(t, s, "2 target(s) missed")
}
