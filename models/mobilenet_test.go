package models_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/tensor"
)

func (f *modelFixture) mobileNetConfig() models.MobileNetConfig {
	c := f.Config
	return models.MobileNetConfig{InChannels: c.InChannels, Classes: c.Classes, Widths: c.Widths, Strides: c.Strides}
}

func TestMobileNetMatchesPyTorch(t *testing.T) {
	f := readFixture(t, "mobilenet_tiny")
	cfg := f.mobileNetConfig()
	checkAgainstPyTorch(t, f, func() layers.Layer {
		m, err := models.NewMobileNet(cfg, rand.New(rand.NewPCG(1, 2)))
		require.NoError(t, err)
		return m
	})
}

func TestMobileNetONNXRoundTrip(t *testing.T) {
	f := readFixture(t, "mobilenet_tiny")
	m, err := models.NewMobileNet(f.mobileNetConfig(), rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	require.NoError(t, layers.LoadStateDict(m, f.stateDict(t)))
	x := f.Input.MustTensor(t)
	s := x.Shape()
	// Inputs scaled up so that some activations pass 6 and ReLU6 clips.
	checkONNXRoundTrip(t, m, x, tensor.RandNormal(rand.New(rand.NewPCG(5, 6)), 0, 20, 3, s[1], s[2], s[3]))
}

func TestMobileNetShapes(t *testing.T) {
	counts := paramCounts(t)
	tests := []struct {
		name   string
		cfg    models.MobileNetConfig
		input  []int
		params int
	}{
		{"small fashion-mnist", models.MobileNetSmallConfig(1, 10), []int{2, 1, 28, 28}, counts["mobilenet_small_fmnist"]},
		{"small cifar", models.MobileNetSmallConfig(3, 10), []int{2, 3, 32, 32}, 0},
		{"half width", models.MobileNetConfig{InChannels: 1, Classes: 4, Widths: []int{8, 16}, Strides: []int{2, 2},
			WidthMultiplier: 0.5}, []int{3, 1, 9, 9}, 4*1*9 + 2*4 + 4*9 + 2*4 + 8*4 + 2*8 + 8*4 + 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := models.NewMobileNet(tt.cfg, rand.New(rand.NewPCG(1, 1)))
			require.NoError(t, err)
			y := m.Forward(autograd.Constant(tensor.RandNormal(rand.New(rand.NewPCG(2, 2)), 0, 1, tt.input...)))
			assert.Equal(t, []int{tt.input[0], tt.cfg.Classes}, y.Shape())
			if tt.params > 0 {
				assert.Equal(t, tt.params, layers.NumParams(m))
			}
		})
	}
}

func TestMobileNetNames(t *testing.T) {
	m, err := models.NewMobileNet(models.MobileNetSmallConfig(1, 10), rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	sd := layers.StateDict(m)
	for name, shape := range map[string][]int{
		"features.0.0.weight":       {32, 1, 3, 3},
		"features.0.1.running_mean": {32},
		"features.1.0.weight":       {32, 1, 3, 3}, // depthwise
		"features.1.3.weight":       {64, 32, 1, 1},
		"features.4.4.bias":         {256},
		"classifier.2.weight":       {10, 256},
		"classifier.2.bias":         {10},
	} {
		if assert.Contains(t, sd, name) {
			assert.Equal(t, shape, sd[name].Shape(), name)
		}
	}
	for _, v := range sd["classifier.2.bias"].Values() {
		assert.Zero(t, v)
	}
}

func TestNewMobileNetErrors(t *testing.T) {
	tests := []struct {
		name   string
		modify func(c *models.MobileNetConfig)
		want   string
	}{
		{"in channels", func(c *models.MobileNetConfig) { c.InChannels = 0 }, "InChannels = 0, expected > 0"},
		{"classes", func(c *models.MobileNetConfig) { c.Classes = 0 }, "Classes = 0, expected > 0"},
		{"no widths", func(c *models.MobileNetConfig) { c.Widths, c.Strides = nil, nil }, "Widths is empty"},
		{"strides length", func(c *models.MobileNetConfig) { c.Strides = []int{1, 2} }, "Strides has 2 entries, expected one per entry of Widths (5)"},
		{"width", func(c *models.MobileNetConfig) { c.Widths = []int{32, 64, 0, 128, 256} }, "Widths[2] = 0, expected > 0 channels"},
		{"stride", func(c *models.MobileNetConfig) { c.Strides = []int{1, 2, 1, -2, 1} }, "Strides[3] = -2, expected > 0"},
		{"multiplier", func(c *models.MobileNetConfig) { c.WidthMultiplier = -1 }, "WidthMultiplier = -1, expected a finite value > 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := models.MobileNetSmallConfig(1, 10)
			tt.modify(&cfg)
			_, err := models.NewMobileNet(cfg, rand.New(rand.NewPCG(1, 1)))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, err := models.NewMobileNet(models.MobileNetSmallConfig(1, 10), nil)
	assert.ErrorContains(t, err, "nil *rand.Rand")
}

// BenchmarkMobileNetSmallStep times one forward and backward pass
// (cross-entropy loss) of a batch of 128 Fashion-MNIST-sized images.
func BenchmarkMobileNetSmallStep(b *testing.B) {
	m, err := models.NewMobileNet(models.MobileNetSmallConfig(1, 10), rand.New(rand.NewPCG(1, 1)))
	require.NoError(b, err)
	rng := rand.New(rand.NewPCG(2, 2))
	x := tensor.RandNormal(rng, 0, 1, 128, 1, 28, 28)
	y := tensor.FromFloat64(make([]float64, 128), 128).Cast(device.Int64)
	step := func() {
		loss := layers.CrossEntropy(m.Forward(autograd.Constant(x)), y, layers.CrossEntropyOptions{})
		require.NoError(b, autograd.Backward(loss))
		for _, p := range m.Parameters() {
			p.ZeroGrad()
		}
	}
	step() // warm up
	b.ResetTimer()
	for b.Loop() {
		step()
	}
	b.ReportMetric(float64(128*b.N)/b.Elapsed().Seconds(), "samples/s")
}

// ExampleNewMobileNet builds the small MobileNet for Fashion-MNIST and
// classifies a batch of two images.
func ExampleNewMobileNet() {
	model, err := models.NewMobileNet(models.MobileNetSmallConfig(1, 10), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		fmt.Println(err)
		return
	}
	layers.Eval(model)
	logits := model.Forward(autograd.NoGrad(autograd.Constant(tensor.Zeros(2, 1, 28, 28))))
	fmt.Println(logits.Value.Shape(), layers.NumParams(model), model.Parameters()[0].Name)
	// Output: [2 10] 67338 features.0.0.weight
}
