package onnx_test

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/internal/interop"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// TestTorchvisionTransfer does transfer learning from torchvision's
// resnet18 and mobilenet_v2 as package train does: it imports each
// WithoutHead, appends a new layers.Linear of 5 classes, trains for a few
// SGD steps (resnet18 with its backbone frozen, so that its BatchNorms
// keep their running statistics; mobilenet_v2 whole), exports the result
// and runs the file in onnxruntime and in Hora's importer, whose outputs
// must be Hora's within 1e-4.
func TestTorchvisionTransfer(t *testing.T) {
	if testing.Short() {
		t.Skip("exports torchvision models with PyTorch; skipped with -short")
	}
	files := interop.TorchvisionModels(t)
	script := interop.ORTScript(t)
	for _, tc := range []struct {
		name           string
		head           onnx.HeadInfo
		freezeBackbone bool
	}{
		{"resnet18", onnx.HeadInfo{Node: "/fc/Gemm", Op: "Gemm", InFeatures: 512, OutFeatures: 1000,
			Weight: "fc.weight", Bias: "fc.bias", Features: "/Flatten_output_0"}, true},
		{"mobilenet_v2", onnx.HeadInfo{Node: "/classifier/classifier.1/Gemm", Op: "Gemm", InFeatures: 1280, OutFeatures: 1000,
			Weight: "classifier.1.weight", Bias: "classifier.1.bias", Features: "/Flatten_output_0"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			m, err := onnx.Load(files[tc.name], onnx.WithoutHead())
			require.NoError(t, err)
			head, ok := m.Head()
			require.True(t, ok)
			assert.Equal(t, tc.head, head)
			require.Len(t, m.Outputs, 1)
			assert.Equal(t, []int{-1, head.InFeatures}, m.Outputs[0].Shape, "the features: %v", m.Outputs[0])
			for _, p := range m.Parameters() {
				assert.NotContains(t, []string{head.Weight, head.Bias}, p.Name, "the classifier's initializers are not parameters")
			}
			t.Logf("import: %v", time.Since(start).Round(time.Millisecond))

			rng := rand.New(rand.NewPCG(7, 8))
			lin := layers.NewLinear(head.InFeatures, 5, true, rng)
			net := layers.NewSequential(m, lin)
			params := net.Parameters()
			if tc.freezeBackbone {
				for _, p := range m.Parameters() {
					p.Freeze()
				}
				params = lin.Parameters()
			}
			stats := m.Buffers()[0].Value.Clone()

			start = time.Now()
			x := tensor.RandNormal(rng, 0, 1, 4, 3, 64, 64)
			labels := tensor.FromInt64([]int64{0, 1, 2, 3}, 4)
			opt, err := optim.NewSGD(params, optim.SGDConfig{LR: 0.01, Momentum: 0.9})
			require.NoError(t, err)
			layers.Train(net)
			var losses []float64
			for range 4 {
				opt.ZeroGrad()
				loss, err := autograd.SoftmaxCrossEntropy(net.Forward(autograd.Constant(x)), labels, 0)
				require.NoError(t, err)
				require.NoError(t, autograd.Backward(loss))
				require.NoError(t, opt.Step())
				losses = append(losses, loss.Value.Values()[0])
			}
			t.Logf("training: losses %.4f in %v", losses, time.Since(start).Round(time.Millisecond))
			assert.Less(t, losses[len(losses)-1], losses[0], "the loss falls")
			moved := !slices.Equal(stats.Float32s(), m.Buffers()[0].Value.Float32s())
			assert.Equal(t, !tc.freezeBackbone, moved, "the running statistics of %s change unless its parameters are frozen", m.Buffers()[0].Name)

			start = time.Now()
			path := filepath.Join(t.TempDir(), tc.name+"_finetuned.onnx")
			require.NoError(t, onnx.ExportFile(path, net, []*tensor.Tensor{x.Slice(0, 0, 2)}, onnx.ExportOptions{}))
			t.Logf("export: %v", time.Since(start).Round(time.Millisecond))

			start = time.Now()
			x3 := tensor.RandNormal(rng, 0, 1, 3, 3, 64, 64)
			want := horaForward(net, x3)
			outs, errs := interop.RunORT(t, script, []interop.ORTRequest{{Model: path, Inputs: map[string]interop.ORTTensor{"input": interop.ORTInput(x3)}, Threads: 2}})
			require.Empty(t, errs[0], "onnxruntime")
			require.Contains(t, outs[0], "output")
			require.Equal(t, []int{3, 5}, outs[0]["output"].Shape())
			exportClose(t, want, outs[0]["output"], 1e-4, 1e-4, "onnxruntime against Hora")
			t.Logf("onnxruntime check: %v", time.Since(start).Round(time.Millisecond))

			// The file imports back into Hora too.
			back, err := onnx.Load(path)
			require.NoError(t, err)
			got, err := back.Run(autograd.Constant(x3))
			require.NoError(t, err)
			exportClose(t, want, got[0].Value, 1e-4, 1e-4, "Hora's import of the exported file")
		})
	}
}
