package onnx_test

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/internal/interop"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/onnx/onnxtest"
	"github.com/hora-dl/hora/tensor"
)

// runScript runs a script of scripts/ (the tests run in onnx/) with args.
func runScript(t *testing.T, python, script string, args ...string) {
	t.Helper()
	start := time.Now()
	cmd := exec.Command(python, append([]string{filepath.Join("..", "scripts", script)}, args...)...)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=2")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s:\n%s", cmd, interop.LastLines(out, 20))
	t.Logf("%s took %v", script, time.Since(start).Round(time.Millisecond))
}

// pytorchRTol is how close Hora's outputs must be to PyTorch's:
// |got - want| <= 1e-4·|want| + 1e-5·max|want|. The absolute part, scaled
// to the output, lets elements near zero differ by the float32 rounding of
// long sums taken in another order.
const pytorchRTol = 1e-4

// TestPyTorchModels exports models with PyTorch (scripts/onnx_models.py:
// torchvision CNNs, a VGG-style CNN, an MLP, a Transformer encoder and an
// LSTM classifier, at opsets 13 and 17), imports each with onnx.Load and
// compares Run's outputs with PyTorch's on two batches of other sizes than
// the one exported (the batch axis is dynamic).
func TestPyTorchModels(t *testing.T) {
	if testing.Short() {
		t.Skip("exports models with PyTorch (~10 s); skipped with -short")
	}
	python := interop.Python(t, "torch, torchvision, onnx")
	dir := t.TempDir()
	runScript(t, python, "onnx_models.py", dir)

	cases, err := filepath.Glob(filepath.Join(dir, "*", "model.onnx"))
	require.NoError(t, err)
	require.NotEmpty(t, cases, "onnx_models.py wrote no model")
	sort.Strings(cases)
	for _, path := range cases {
		name := filepath.Base(filepath.Dir(path))
		t.Run(name, func(t *testing.T) {
			m, err := onnx.Load(path)
			require.NoError(t, err)
			sets, err := filepath.Glob(filepath.Join(filepath.Dir(path), "test_data_set_*"))
			require.NoError(t, err)
			require.NotEmpty(t, sets)
			for _, set := range sets {
				x, err := onnx.ReadTensor(filepath.Join(set, "input_0.pb"))
				require.NoError(t, err)
				want, err := onnx.ReadTensor(filepath.Join(set, "output_0.pb"))
				require.NoError(t, err)
				outs, err := m.Run(autograd.Constant(x))
				require.NoError(t, err, "%s, input %v", filepath.Base(set), x.Shape())
				require.Len(t, outs, 1)
				assertCloseToPyTorch(t, outs[0].Value, want, filepath.Base(set))
			}
			if m.Inputs[0].Type == onnxpb.TensorProto_FLOAT {
				// An input of the wrong rank is an error, not a panic.
				x, err := onnx.ReadTensor(filepath.Join(sets[0], "input_0.pb"))
				require.NoError(t, err)
				bad := x.Reshape(append([]int{1}, x.Shape()...)...)
				_, err = m.Run(autograd.Constant(bad))
				assert.Error(t, err, "input of shape %v", bad.Shape())
			}
		})
	}
}

// assertCloseToPyTorch checks got against want with pytorchRTol and an
// absolute tolerance of pytorchRTol/10 of want's largest magnitude.
func assertCloseToPyTorch(t *testing.T, got, want *tensor.Tensor, what string) {
	t.Helper()
	scale := 0.0
	for _, v := range want.Values() {
		scale = math.Max(scale, math.Abs(v))
	}
	tol := onnxtest.Tolerance{RTol: pytorchRTol, ATol: pytorchRTol / 10 * scale}
	d := onnxtest.Compare(got, want, tol)
	assert.True(t, d.OK, "%s: %s; max abs diff %.3g, max rel %.3g; worst at %d: got %v, want %v (tolerance %+v)",
		what, d.Problem, d.MaxAbs, d.MaxRel, d.Index, d.Got, d.Want, tol)
	if d.OK {
		t.Logf("%s: max abs diff %.3g (output scale %.3g)", what, d.MaxAbs, scale)
	}
}
