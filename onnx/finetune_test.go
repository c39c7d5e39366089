package onnx_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/internal/interop"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/onnx/onnxtest"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// TestFineTuneMatchesPyTorch imports a small CNN with BatchNorm and a
// residual block that PyTorch exported in training mode
// (scripts/onnx_finetune.py), trains it for 5 steps of SGD (lr 0.01,
// momentum 0.9) with softmax cross-entropy in training mode (batch
// statistics) on the batch PyTorch trained on, and requires PyTorch's loss
// at every step within 1e-4 relative. It then checks the eval-mode logits
// after training, which depend on the running statistics the 5 training
// forwards left in the BatchNormalization buffers.
func TestFineTuneMatchesPyTorch(t *testing.T) {
	if testing.Short() {
		t.Skip("exports models with PyTorch; skipped with -short")
	}
	python := interop.Python(t, "torch, onnx")
	dir := t.TempDir()
	runScript(t, python, "onnx_finetune.py", dir)

	for _, opset := range []string{"op13", "op17"} {
		t.Run(opset, func(t *testing.T) {
			d := filepath.Join(dir, opset)
			read := func(name string) *tensor.Tensor {
				x, err := onnx.ReadTensor(filepath.Join(d, name))
				require.NoError(t, err)
				return x
			}
			x, labels, want := read("input.pb"), read("labels.pb"), read("losses.pb").Values()

			m, err := onnx.Load(filepath.Join(d, "model.onnx"))
			require.NoError(t, err)
			// 4 convolutions (weight, and bias for 2), 4 BatchNorms
			// (scale, bias), the linear head (weight, bias); the running
			// statistics are buffers.
			require.Len(t, m.Parameters(), 16, "trainable parameters")
			require.Len(t, m.Buffers(), 8, "BatchNormalization running statistics")

			layers.Train(m)
			opt, err := optim.NewSGD(m.Parameters(), optim.SGDConfig{LR: 0.01, Momentum: 0.9})
			require.NoError(t, err)
			got := make([]float64, len(want))
			// Each step's values live in an arena, as in cmd/train: the
			// running statistics must outlive its Reset.
			arena := tensor.NewArena()
			for step := range want {
				opt.ZeroGrad()
				xa, err := arena.FromSlice(x.Device(), x.Float32s(), x.Shape()...)
				require.NoError(t, err)
				outs, err := m.Run(autograd.Constant(xa))
				require.NoError(t, err, "step %d", step)
				loss, err := autograd.SoftmaxCrossEntropy(outs[0], labels, 0)
				require.NoError(t, err)
				require.NoError(t, autograd.Backward(loss))
				for _, p := range m.Parameters() {
					require.NotNil(t, p.Grad, "step %d: parameter %s got no gradient", step, p.Name)
				}
				require.NoError(t, opt.Step())
				got[step] = loss.Value.Values()[0]
				arena.Reset()
			}
			t.Logf("losses: hora %.6f, pytorch %.6f", got, want)
			for i := range want {
				assert.InDelta(t, want[i], got[i], 1e-4*math.Abs(want[i]), "loss at step %d (hora %v, pytorch %v)", i, got, want)
			}
			// The loss must have gone down, or nothing was trained.
			assert.Less(t, got[len(got)-1], got[0])

			// Eval mode: ONNX's running statistics (population variance
			// of each batch; PyTorch's unbiased one is a little apart).
			layers.Eval(m)
			outs, err := m.Run(autograd.Constant(x))
			require.NoError(t, err)
			evalWant := read("eval_output.pb")
			assertCloseToPyTorch(t, outs[0].Value, evalWant, "eval-mode logits after training")
			d2 := onnxtest.Compare(outs[0].Value, read("eval_output_torch.pb"), onnxtest.Tolerance{})
			t.Logf("eval-mode logits: max abs diff %.3g from PyTorch's own running statistics (unbiased variance)", d2.MaxAbs)
		})
	}
}
