package models_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/internal/golden"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/tensor"
)

// The models are layers and containers, so that layers.Train, Eval, To
// and StateDict reach their BatchNorm buffers.
var (
	_ layers.Layer     = (*models.ResNet)(nil)
	_ layers.Container = (*models.ResNet)(nil)
	_ layers.Container = (*models.Net)(nil)
)

// modelFixture is a file of models/testdata written by
// scripts/golden/models_gen.py.
type modelFixture struct {
	Case   string `json:"case"`
	Config struct {
		Block      string `json:"block"`
		Layers     []int  `json:"layers"`
		Widths     []int  `json:"widths"`
		Strides    []int  `json:"strides"`
		Stem       string `json:"stem"`
		InChannels int    `json:"in_channels"`
		Classes    int    `json:"classes"`
	} `json:"config"`
	State      map[string]*golden.Tensor `json:"state"`
	Input      *golden.Tensor            `json:"input"`
	GradOutput *golden.Tensor            `json:"grad_output"`
	Eval       modeResult                `json:"eval"`
	Train      modeResult                `json:"train"`
}

// modeResult holds PyTorch's results in one mode (eval or train).
type modeResult struct {
	Output       *golden.Tensor            `json:"output"`
	GradInput    *golden.Tensor            `json:"grad_input"`
	GradParams   map[string]*golden.Tensor `json:"grad_params"`
	BuffersAfter map[string]*golden.Tensor `json:"buffers_after"`
}

func readFixture(t *testing.T, name string) *modelFixture {
	t.Helper()
	var f modelFixture
	golden.Read(t, filepath.Join("testdata", name+".json"), &f)
	return &f
}

func (f *modelFixture) resnetConfig() models.ResNetConfig {
	c := f.Config
	return models.ResNetConfig{Block: c.Block, Layers: c.Layers, Widths: c.Widths, Stem: c.Stem,
		InChannels: c.InChannels, Classes: c.Classes}
}

// stateDict converts the fixture's state to tensors.
func (f *modelFixture) stateDict(t *testing.T) map[string]*tensor.Tensor {
	sd := map[string]*tensor.Tensor{}
	for name, g := range f.State {
		sd[name] = g.MustTensor(t)
	}
	return sd
}

// checkAgainstPyTorch loads the fixture's state into a model from build,
// runs it in eval and in train mode, and compares the outputs, the
// gradients of sum(output·G) with respect to the input and to every
// parameter, and (train) the running statistics after the forward pass.
func checkAgainstPyTorch(t *testing.T, f *modelFixture, build func() layers.Layer) {
	const rtol, atol = 1e-4, 1e-5
	const grtol, gatol = 1e-3, 1e-5
	for _, mode := range []string{"eval", "train"} {
		t.Run(mode, func(t *testing.T) {
			m := build()
			require.NoError(t, layers.LoadStateDict(m, f.stateDict(t)))
			want := f.Train
			layers.Train(m)
			if mode == "eval" {
				want = f.Eval
				layers.Eval(m)
			}
			x := autograd.Leaf(f.Input.MustTensor(t))
			y := m.Forward(x)
			golden.AssertClose(t, want.Output, y.Value, rtol, atol, "output")
			loss := autograd.SumAll(autograd.Mul(y, autograd.Constant(f.GradOutput.MustTensor(t))))
			require.NoError(t, autograd.Backward(loss))
			golden.AssertClose(t, want.GradInput, x.Grad, grtol, gatol, "input gradient")
			params := m.Parameters()
			require.Len(t, params, len(want.GradParams), "parameters")
			for _, p := range params {
				g, ok := want.GradParams[p.Name]
				if assert.True(t, ok, "PyTorch has no parameter %q", p.Name) {
					golden.AssertClose(t, g, p.Grad, grtol, gatol, p.Name+" gradient")
				}
			}
			if mode == "train" {
				sd := layers.StateDict(m)
				for name, b := range want.BuffersAfter {
					golden.AssertClose(t, b, sd[name], rtol, atol, name+" after the forward pass")
				}
			}
		})
	}
}

func TestResNetMatchesPyTorch(t *testing.T) {
	for _, name := range []string{"resnet_basic_cifar", "resnet_basic_imagenet", "resnet_bottleneck"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := readFixture(t, name)
			cfg := f.resnetConfig()
			checkAgainstPyTorch(t, f, func() layers.Layer {
				m, err := models.NewResNet(cfg, rand.New(rand.NewPCG(1, 2)))
				require.NoError(t, err)
				return m
			})
		})
	}
}

func TestResNetShapes(t *testing.T) {
	tests := []struct {
		name  string
		cfg   models.ResNetConfig
		input []int
	}{
		{"resnet20 fashion-mnist", models.ResNet20Config(1, 10), []int{2, 1, 28, 28}},
		{"resnet20 cifar", models.ResNet20Config(3, 10), []int{2, 3, 32, 32}},
		{"resnet18 cifar-size input", models.ResNet18Config(3, 100), []int{2, 3, 32, 32}},
		{"resnet18 fashion-mnist", models.ResNet18Config(1, 10), []int{2, 1, 28, 28}},
		{"bottleneck odd size", models.ResNetConfig{Block: "bottleneck", Layers: []int{1, 1}, Widths: []int{4, 8},
			InChannels: 3, Classes: 7, Stem: "cifar"}, []int{3, 3, 13, 11}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := models.NewResNet(tt.cfg, rand.New(rand.NewPCG(1, 1)))
			require.NoError(t, err)
			y := m.Forward(autograd.NoGrad(autograd.Constant(tensor.RandNormal(rand.New(rand.NewPCG(2, 2)), 0, 1, tt.input...))))
			assert.Equal(t, []int{tt.input[0], tt.cfg.Classes}, y.Shape())
			for _, v := range y.Value.Values() {
				require.False(t, math.IsNaN(v) || math.IsInf(v, 0), "output %v", v)
			}
		})
	}
}

// paramCounts reads the counts PyTorch computed (testdata/param_counts.json).
func paramCounts(t *testing.T) map[string]int {
	var counts map[string]int
	golden.Read(t, filepath.Join("testdata", "param_counts.json"), &counts)
	return counts
}

func TestResNetParamCounts(t *testing.T) {
	counts := paramCounts(t)
	tests := []struct {
		name string
		cfg  models.ResNetConfig
		want int
	}{
		{"resnet18", models.ResNet18Config(3, 1000), 11_689_512},
		{"resnet34", models.ResNet34Config(3, 1000), 21_797_672},
		{"resnet50", models.ResNet50Config(3, 1000), 25_557_032},
		{"resnet20_cifar", models.ResNet20Config(3, 10), 272_474},
		{"resnet56_cifar", models.ResNet56Config(3, 10), 855_770},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, counts[tt.name], "param_counts.json")
			m, err := models.NewResNet(tt.cfg, rand.New(rand.NewPCG(1, 1)))
			require.NoError(t, err)
			assert.Equal(t, tt.want, layers.NumParams(m))
		})
	}
}

// TestResNet18LoadsTorchvisionStateDict builds a state dict with the
// names and shapes of torchvision's resnet18
// (testdata/resnet18_state_shapes.json) and loads it: LoadStateDict
// accepts it only when every name, shape and type matches.
func TestResNet18LoadsTorchvisionStateDict(t *testing.T) {
	var shapes map[string][]int
	golden.Read(t, filepath.Join("testdata", "resnet18_state_shapes.json"), &shapes)
	require.Len(t, shapes, 122, "62 parameters and 20 BatchNorms × 3 buffers")
	sd := map[string]*tensor.Tensor{}
	for name, shape := range shapes {
		dt := device.Float32
		if strings.HasSuffix(name, "num_batches_tracked") {
			dt = device.Int64
		}
		sd[name] = tensor.Full(tensor.CPU(), dt, 0.5, shape...)
	}
	m, err := models.NewResNet(models.ResNet18Config(3, 1000), rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	require.NoError(t, layers.LoadStateDict(m, sd))
	assert.Equal(t, 0.5, layers.StateDict(m)["layer2.0.downsample.1.running_var"].Values()[0])
	ps := m.Parameters()
	require.Len(t, ps, 62)
	assert.Equal(t, "conv1.weight", ps[0].Name)
	assert.Equal(t, "fc.bias", ps[61].Name)
}

func TestResNetInit(t *testing.T) {
	cfg := models.ResNet20Config(3, 10)
	cfg.ZeroInitResidual = true
	m, err := models.NewResNet(cfg, rand.New(rand.NewPCG(3, 4)))
	require.NoError(t, err)
	sd := layers.StateDict(m)

	// Kaiming normal, fan-out mode: std = √(2/(64·3·3)) for the last stage's convolutions.
	w := sd["layer3.2.conv1.weight"].Values()
	var ss, sum float64
	for _, v := range w {
		sum += v
		ss += v * v
	}
	n := float64(len(w))
	std := math.Sqrt(ss/n - (sum/n)*(sum/n))
	assert.InEpsilon(t, math.Sqrt(2/float64(64*9)), std, 0.03, "conv weight std")
	assert.InDelta(t, 0, sum/n, 3*std/math.Sqrt(n), "conv weight mean")

	for _, v := range sd["layer2.1.bn2.weight"].Values() {
		assert.Zero(t, v, "ZeroInitResidual: the last BatchNorm weight of a block is 0")
	}
	for _, v := range sd["layer2.1.bn1.weight"].Values() {
		assert.Equal(t, 1.0, v, "other BatchNorm weights are 1")
	}

	// The same seed gives the same weights.
	m2, err := models.NewResNet(cfg, rand.New(rand.NewPCG(3, 4)))
	require.NoError(t, err)
	assert.Equal(t, w, layers.StateDict(m2)["layer3.2.conv1.weight"].Values())
}

func TestNewResNetErrors(t *testing.T) {
	ok := models.ResNet20Config(3, 10)
	tests := []struct {
		name   string
		modify func(c *models.ResNetConfig)
		want   string
	}{
		{"block", func(c *models.ResNetConfig) { c.Block = "wide" }, `Block = "wide", expected "basic" or "bottleneck"`},
		{"stem", func(c *models.ResNetConfig) { c.Stem = "tiny" }, `Stem = "tiny", expected "imagenet" or "cifar"`},
		{"no stages", func(c *models.ResNetConfig) { c.Layers, c.Widths = nil, nil }, "Layers is empty"},
		{"widths length", func(c *models.ResNetConfig) { c.Widths = []int{16, 32} }, "Widths has 2 entries, expected one per stage of Layers (3)"},
		{"in channels", func(c *models.ResNetConfig) { c.InChannels = 0 }, "InChannels = 0, expected > 0"},
		{"classes", func(c *models.ResNetConfig) { c.Classes = -1 }, "Classes = -1, expected > 0"},
		{"blocks", func(c *models.ResNetConfig) { c.Layers = []int{3, 0, 3} }, "Layers[1] = 0, expected > 0 blocks"},
		{"width", func(c *models.ResNetConfig) { c.Widths = []int{16, 32, -64} }, "Widths[2] = -64, expected > 0 channels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			cfg.Layers, cfg.Widths = []int{3, 3, 3}, []int{16, 32, 64}
			tt.modify(&cfg)
			_, err := models.NewResNet(cfg, rand.New(rand.NewPCG(1, 1)))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, err := models.NewResNet(ok, nil)
	assert.ErrorContains(t, err, "nil *rand.Rand")
}

func TestResNetDefaults(t *testing.T) {
	m, err := models.NewResNet(models.ResNetConfig{Layers: []int{1}, Widths: []int{4}, InChannels: 1, Classes: 2},
		rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	cfg := m.Config()
	assert.Equal(t, "basic", cfg.Block)
	assert.Equal(t, "imagenet", cfg.Stem)
}

// checkONNXRoundTrip exports m in evaluation mode, imports it back and
// compares the outputs on a batch of another size.
func checkONNXRoundTrip(t *testing.T, m layers.Layer, example, x *tensor.Tensor) {
	t.Helper()
	layers.Eval(m)
	var buf bytes.Buffer
	require.NoError(t, onnx.Export(m, []*tensor.Tensor{example}, &buf, onnx.ExportOptions{}))
	imported, err := onnx.Import(&buf)
	require.NoError(t, err)
	want := m.Forward(autograd.NoGrad(autograd.Constant(x))).Value.Values()
	outs, err := imported.Run(autograd.NoGrad(autograd.Constant(x)))
	require.NoError(t, err)
	require.Len(t, outs, 1)
	got := outs[0].Value.Values()
	require.Len(t, got, len(want))
	for i := range want {
		assert.InDelta(t, want[i], got[i], 1e-5+1e-5*math.Abs(want[i]), "output element %d", i)
	}
}

func TestResNetONNXRoundTrip(t *testing.T) {
	for _, name := range []string{"resnet_basic_cifar", "resnet_basic_imagenet", "resnet_bottleneck"} {
		t.Run(name, func(t *testing.T) {
			f := readFixture(t, name)
			m, err := models.NewResNet(f.resnetConfig(), rand.New(rand.NewPCG(1, 2)))
			require.NoError(t, err)
			require.NoError(t, layers.LoadStateDict(m, f.stateDict(t)))
			x := f.Input.MustTensor(t)
			rng := rand.New(rand.NewPCG(5, 6))
			s := x.Shape()
			checkONNXRoundTrip(t, m, x, tensor.RandNormal(rng, 0, 1, 3, s[1], s[2], s[3]))
		})
	}
}

// ExampleNewResNet builds ResNet-20 for Fashion-MNIST images and
// classifies a batch of two.
func ExampleNewResNet() {
	model, err := models.NewResNet(models.ResNet20Config(1, 10), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		fmt.Println(err)
		return
	}
	layers.Eval(model) // BatchNorm uses its running statistics
	images := tensor.Zeros(2, 1, 28, 28)
	logits := model.Forward(autograd.NoGrad(autograd.Constant(images)))
	fmt.Println(logits.Value.Shape(), layers.NumParams(model))
	fmt.Println(model.Parameters()[0].Name, model.Parameters()[3].Name)
	// Output:
	// [2 10] 272186
	// conv1.weight layer1.0.conv1.weight
}
