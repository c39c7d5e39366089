package cuda_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/tensor"
)

// TestLayersMatchCPU runs every layer of package layers, and the losses,
// forward and backward on the GPU and on the CPU from the same weights and
// inputs, and compares the outputs and every gradient. It catches both
// kernels that disagree and layer code that mixes CPU and GPU tensors.
func TestLayersMatchCPU(t *testing.T) {
	gpu := gpuOrSkip(t)
	image := []int{2, 4, 7, 7}
	cases := []struct {
		name  string
		shape []int
		build func(rng *rand.Rand) layers.Layer
		eval  bool
	}{
		{"linear", []int{5, 12}, func(r *rand.Rand) layers.Layer { return layers.NewLinear(12, 6, true, r) }, false},
		{"conv", image, func(r *rand.Rand) layers.Layer {
			return layers.NewConv2d(4, 6, 3, 3, layers.Conv2dConfig{PadH: 1, PadW: 1}, r)
		}, false},
		{"conv strided dilated grouped", image, func(r *rand.Rand) layers.Layer {
			return layers.NewConv2d(4, 6, 3, 2, layers.Conv2dConfig{StrideH: 2, StrideW: 1, PadH: 2, DilH: 2, Groups: 2}, r)
		}, false},
		{"conv depthwise", image, func(r *rand.Rand) layers.Layer {
			return layers.NewConv2d(4, 8, 3, 3, layers.Conv2dConfig{PadH: 1, PadW: 1, Groups: 4}, r)
		}, false},
		{"maxpool", image, func(*rand.Rand) layers.Layer {
			return layers.NewMaxPool2d(3, 3, layers.Pool2dConfig{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1})
		}, false},
		{"avgpool", image, func(*rand.Rand) layers.Layer {
			return layers.NewAvgPool2d(3, 2, layers.Pool2dConfig{PadH: 1, ExcludePad: true})
		}, false},
		{"adaptive avgpool", image, func(*rand.Rand) layers.Layer { return layers.NewAdaptiveAvgPool2d(3, 2) }, false},
		{"batchnorm2d train", image, func(*rand.Rand) layers.Layer { return layers.NewBatchNorm2d(4, layers.BatchNormConfig{}) }, false},
		{"batchnorm2d eval", image, func(*rand.Rand) layers.Layer { return layers.NewBatchNorm2d(4, layers.BatchNormConfig{}) }, true},
		{"batchnorm1d", []int{6, 5}, func(*rand.Rand) layers.Layer { return layers.NewBatchNorm1d(5, layers.BatchNormConfig{}) }, false},
		{"layernorm", []int{3, 4, 10}, func(*rand.Rand) layers.Layer { return layers.NewLayerNorm([]int{10}, layers.LayerNormConfig{}) }, false},
		{"dropout", []int{4, 50}, func(r *rand.Rand) layers.Layer { return layers.NewDropout(0.3, r) }, false},
		{"activations", []int{3, 20}, func(*rand.Rand) layers.Layer {
			return layers.NewSequential(layers.GELU{}, layers.LeakyReLU{Slope: 0.1}, layers.SiLU{}, layers.Tanh{},
				layers.Sigmoid{}, layers.ReLU{}, layers.Softmax{Axis: 1}, layers.LogSoftmax{Axis: 1})
		}, false},
		{"residual mlp", []int{4, 2, 3, 3}, func(r *rand.Rand) layers.Layer {
			return layers.NewSequential(layers.NewFlatten(),
				layers.NewResidual(layers.NewSequential(layers.NewLinear(18, 18, true, r), layers.ReLU{})),
				layers.NewLinear(18, 3, false, r))
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var runs [2]layerRun
			for i, dev := range []device.Device{tensor.CPU(), gpu} {
				runs[i] = runLayer(t, dev, tc.shape, tc.build, tc.eval)
			}
			sameValues(t, runs[0].out, runs[1].out, "output")
			sameValues(t, runs[0].dx, runs[1].dx, "input gradient")
			require.Len(t, runs[1].grads, len(runs[0].grads))
			for j := range runs[0].grads {
				sameValues(t, runs[0].grads[j], runs[1].grads[j], fmt.Sprintf("gradient of parameter %d", j))
			}
		})
	}
}

// TestLossesMatchCPU compares each loss and its gradient.
func TestLossesMatchCPU(t *testing.T) {
	gpu := gpuOrSkip(t)
	losses := map[string]func(x *autograd.Var, labels, target *tensor.Tensor) *autograd.Var{
		"cross-entropy": func(x *autograd.Var, labels, _ *tensor.Tensor) *autograd.Var {
			return layers.CrossEntropy(x, labels, layers.CrossEntropyOptions{LabelSmoothing: 0.1})
		},
		"nll": func(x *autograd.Var, labels, _ *tensor.Tensor) *autograd.Var {
			return layers.NLL(autograd.LogSoftmax(x, 1), labels, layers.ReduceMean)
		},
		"mse": func(x *autograd.Var, _, target *tensor.Tensor) *autograd.Var {
			return layers.MSE(x, autograd.Constant(target), layers.ReduceSum)
		},
		"bce with logits": func(x *autograd.Var, _, target *tensor.Tensor) *autograd.Var {
			return layers.BCEWithLogits(x, autograd.Constant(target.Sigmoid()), layers.ReduceMean)
		},
	}
	for name, loss := range losses {
		t.Run(name, func(t *testing.T) {
			var vals, grads [2][]float64
			for i, dev := range []device.Device{tensor.CPU(), gpu} {
				rng := rand.New(rand.NewPCG(5, 6))
				x := autograd.NewParam("x", randomTensor(t, dev, rng, 7, 5))
				labels, err := tensor.FromSlice(dev, []int64{0, 4, 2, 2, 1, 3, 0}, 7)
				require.NoError(t, err)
				l := loss(x.Var, labels, randomTensor(t, dev, rng, 7, 5))
				require.NoError(t, autograd.Backward(l))
				vals[i], grads[i] = l.Value.Values(), x.Grad.Values()
			}
			sameValues(t, vals[0], vals[1], "loss")
			sameValues(t, grads[0], grads[1], "gradient")
		})
	}
}

// layerRun is what one device computed for a layer: the output, the
// gradient of the input and of each parameter, as float64.
type layerRun struct {
	out, dx []float64
	grads   [][]float64
}

// runLayer builds the layer with a fixed seed on dev, feeds it a fixed
// random input, and backpropagates a fixed random weighting of its output.
func runLayer(t *testing.T, dev device.Device, shape []int, build func(*rand.Rand) layers.Layer, eval bool) layerRun {
	t.Helper()
	rng := rand.New(rand.NewPCG(9, 9))
	l := build(rng)
	layers.To(l, dev)
	if eval {
		layers.Eval(l)
	} else {
		layers.Train(l)
	}
	x := autograd.NewParam("input", randomTensor(t, dev, rng, shape...))
	out := l.Forward(x.Var)
	w := autograd.Constant(randomTensor(t, dev, rng, out.Value.Shape()...))
	require.NoError(t, autograd.Backward(autograd.SumAll(autograd.Mul(out, w))))
	r := layerRun{out: out.Value.Values(), dx: x.Grad.Values()}
	for _, p := range l.Parameters() {
		require.NotNil(t, p.Grad, "parameter %s has no gradient", p.Name)
		r.grads = append(r.grads, p.Grad.Values())
	}
	return r
}

// randomTensor returns a float32 tensor of normal values on dev.
func randomTensor(t *testing.T, dev device.Device, rng *rand.Rand, shape ...int) *tensor.Tensor {
	t.Helper()
	x := make([]float32, device.NumElements(shape))
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	v, err := tensor.FromSlice(dev, x, shape...)
	require.NoError(t, err)
	return v
}

// sameValues requires got to equal want within float32 rounding, relative
// to want's largest magnitude.
func sameValues(t *testing.T, want, got []float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	scale := 1e-30
	for _, v := range want {
		scale = math.Max(scale, math.Abs(v))
	}
	for i := range want {
		if math.IsNaN(want[i]) {
			require.True(t, math.IsNaN(got[i]), "%s[%d]: got %v, want NaN", what, i, got[i])
			continue
		}
		require.InDelta(t, want[i], got[i], 2e-5*scale, "%s[%d] (GPU against CPU)", what, i)
	}
}

// TestONNXModelMatchesCPU exports the CNN and LeNet-5 to ONNX, imports
// each twice, moves one copy to the GPU and compares a training-mode
// forward and backward there with the CPU's.
func TestONNXModelMatchesCPU(t *testing.T) {
	gpu := gpuOrSkip(t)
	for name, build := range map[string]func(*rand.Rand) layers.Layer{
		"cnn":    func(r *rand.Rand) layers.Layer { return models.NewCNN(10, r) },
		"lenet5": func(r *rand.Rand) layers.Layer { return models.NewLeNet5(10, r) },
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			example := randomTensor(t, tensor.CPU(), rand.New(rand.NewPCG(1, 1)), 2, 1, 28, 28)
			require.NoError(t, onnx.Export(build(rand.New(rand.NewPCG(2, 2))), []*tensor.Tensor{example}, &buf, onnx.ExportOptions{}))
			var runs [2]layerRun
			for i, dev := range []device.Device{tensor.CPU(), gpu} {
				runs[i] = runLayer(t, dev, []int{3, 1, 28, 28}, func(*rand.Rand) layers.Layer {
					m, err := onnx.Import(bytes.NewReader(buf.Bytes()))
					require.NoError(t, err)
					return m
				}, false)
			}
			sameValues(t, runs[0].out, runs[1].out, "output")
			sameValues(t, runs[0].dx, runs[1].dx, "input gradient")
			for j := range runs[0].grads {
				sameValues(t, runs[0].grads[j], runs[1].grads[j], fmt.Sprintf("gradient of parameter %d", j))
			}
		})
	}
}
