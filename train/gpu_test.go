package train

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/checkpoint"
	"github.com/hora-dl/hora/device/cuda"
	"github.com/hora-dl/hora/device/cuda/cudaemu"
)

var (
	emuOnce sync.Once
	emuErr  error
)

// needGPU points device/cuda at the CUDA emulator (unless
// HORA_CUDA_TEST=gpu asks for the real GPU) and skips when neither works.
func needGPU(t *testing.T) {
	t.Helper()
	emuOnce.Do(func() {
		if os.Getenv("HORA_CUDA_TEST") == "gpu" {
			return
		}
		if emuErr = cudaemu.Available(); emuErr != nil {
			return
		}
		var dir, cache string
		if dir, emuErr = cudaemu.BuildCached(); emuErr != nil {
			return
		}
		// The compiled kernels go to a folder of this test run, not the user's cache.
		if cache, emuErr = os.MkdirTemp("", "hora-train-cuda-cache-*"); emuErr != nil {
			return
		}
		os.Setenv("HORA_CUDA_LIBS", dir)
		os.Setenv("HORA_CACHE_DIR", cache)
	})
	if emuErr != nil {
		t.Skipf("no CUDA emulator: %v", emuErr)
	}
	if _, err := cuda.Available(); err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
}

// TestTrainOnGPU trains the CNN on cuda (the emulator's, on machines
// without a GPU) in each precision and checks that it learns.
func TestTrainOnGPU(t *testing.T) {
	needGPU(t)
	dataDir := syntheticFashion(t, 256, 64)
	for _, precision := range []string{"fp32", "bf16", "fp16"} {
		t.Run(precision, func(t *testing.T) {
			out := t.TempDir()
			code, stdout, stderr := runTrain(t, "-config", "../configs/fashion-mnist-cnn.yaml",
				"-set", "data.dir="+dataDir, "-set", "device=cuda", "-set", "precision="+precision,
				"-set", "train.epochs=2", "-set", "train.batch_size=32", "-set", "train.eval_batch_size=64",
				"-set", "output.progress=false", "-out", out)
			require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Contains(t, stdout, "samples on cuda:0")
			if precision == "fp32" { // the first run compiles the kernels into the empty cache
				assert.Contains(t, stdout, "compiling the CUDA kernels for sm_")
			}
			metrics := readMetrics(t, filepath.Join(out, "metrics.jsonl"))
			require.Len(t, metrics, 2)
			assert.Less(t, metrics[1]["train_loss"], metrics[0]["train_loss"], "it learns")
			assert.Greater(t, metrics[1]["test_accuracy"], 0.5)
			weights, _, err := checkpoint.Load(filepath.Join(out, "model.safetensors"))
			require.NoError(t, err)
			assert.NotEmpty(t, weights, "the checkpoint is written from GPU tensors")
		})
	}
}

func TestPrecisionNeedsCUDA(t *testing.T) {
	dataDir := syntheticFashion(t, 64, 16)
	code, _, stderr := runTrain(t, "-config", "../configs/fashion-mnist-mlp.yaml",
		"-set", "data.dir="+dataDir, "-set", "precision=bf16")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `precision: expected "fp32" on device "cpu" (bf16 and fp16 need a CUDA device), found "bf16"`)
	code, _, stderr = runTrain(t, "-config", "../configs/fashion-mnist-mlp.yaml",
		"-set", "data.dir="+dataDir, "-set", "precision=fp8", "-set", "device=cuda")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "precision:")
	assert.Contains(t, stderr, "fp8")
}

// TestTrainGPUOutOfMemory gives the emulated GPU almost no memory: the
// run must end with an error naming the CUDA error and what to change,
// not a panic.
func TestTrainGPUOutOfMemory(t *testing.T) {
	needGPU(t)
	if os.Getenv("HORA_CUDA_TEST") == "gpu" {
		t.Skip("limits the emulator's memory")
	}
	dataDir := syntheticFashion(t, 64, 16)
	t.Setenv("HORA_EMU_MEM_LIMIT", "1")
	code, stdout, stderr := runTrain(t, "-config", "../configs/fashion-mnist-cnn.yaml",
		"-set", "data.dir="+dataDir, "-set", "device=cuda", "-set", "output.progress=false", "-out", t.TempDir())
	assert.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stderr, "CUDA_ERROR_OUT_OF_MEMORY")
	assert.Contains(t, stderr, "lower train.batch_size")
	assert.NotContains(t, stderr, "goroutine", "no panic")
}
