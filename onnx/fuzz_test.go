package onnx

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/internal/fuzzbound"
	"github.com/hora-dl/hora/tensor"
)

// FuzzImport feeds arbitrary bytes to Import and runs what imports on
// small inputs of the declared shapes: neither may panic or hang, and one
// input may take at most fuzzbound.PerInput. The seeds are the
// interpreter tests' model and, when generated (make onnx-suite), a few
// conformance-suite models.
func FuzzImport(f *testing.F) {
	f.Add(mlpSpec(f).bytes(f))
	f.Add(twoInputSpec(f, false).bytes(f))
	for _, name := range []string{"test_conv_with_strides_padding", "test_gemm_default_no_bias", "test_reshape_reduced_dims",
		"test_slice_neg_steps", "test_lstm_defaults", "test_resize_upsample_scales_linear", "test_batchnorm_epsilon"} {
		if data, err := os.ReadFile(filepath.Join("..", "build", "onnx-suite", "node", name, "model.onnx")); err == nil {
			f.Add(data)
		}
	}
	// Small models only: a fuzzed shape may legitimately ask for a
	// gigabyte, which is slow rather than wrong.
	defer func(n, r int) { maxOutputElements, maxUnrolledNodes = n, r }(maxOutputElements, maxUnrolledNodes)
	maxOutputElements, maxUnrolledNodes = 1<<20, 1000
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Run(t, fuzzbound.PerInput, func() { runFuzzInput(data) })
	})
}

// runFuzzInput imports data and, when that works, runs the model on ones
// of the declared shapes (dynamic dimensions 2); it also imports data
// without its head and through its first input.
func runFuzzInput(data []byte) {
	m, err := Import(bytes.NewReader(data))
	if err != nil {
		return
	}
	_, _ = Import(bytes.NewReader(data), WithoutHead())
	if len(m.Inputs) > 0 {
		_, _ = Import(bytes.NewReader(data), Input(m.Inputs[0].Name), WithoutHead())
	}
	inputs := make([]*autograd.Var, len(m.Inputs))
	for i, in := range m.Inputs {
		shape := make([]int, len(in.Shape))
		n := 1
		for d, s := range in.Shape {
			shape[d] = 2
			if s >= 0 {
				shape[d] = s
			}
			n *= shape[d]
		}
		dt, err := hostType(in.Type)
		if err != nil || in.Shape == nil || n > 1<<16 {
			return
		}
		inputs[i] = autograd.Constant(tensor.Full(tensor.CPU(), dt, 1, shape...))
	}
	_, _ = m.Run(inputs...)
}
