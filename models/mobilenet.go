package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/tensor"
)

// MobileNetConfig describes a MobileNet (v1 style, Howard et al., 2017): a
// stem convolution followed by depthwise-separable blocks, global average
// pooling and a Linear classifier.
type MobileNetConfig struct {
	// InChannels is the number of input channels (1 for grey images).
	InChannels int
	// Classes is the number of outputs.
	Classes int
	// Widths holds output channels: Widths[0] is the stem's, Widths[i]
	// (i ≥ 1) that of depthwise-separable block i.
	Widths []int
	// Strides holds the stride of the stem (Strides[0]) and of each
	// block's depthwise convolution, one per entry of Widths; 2 halves the
	// image.
	Strides []int
	// WidthMultiplier scales every width (the paper's α): width w becomes
	// max(1, round(α·w)) [1].
	WidthMultiplier float64
}

// MobileNetSmallConfig returns a MobileNet sized for 28×28 images such as
// Fashion-MNIST: a 32-channel stride-2 stem (to 14×14), then blocks of 64,
// 128 (stride 2, to 7×7), 128 and 256 channels; 67,338 parameters for 1
// channel and 10 classes. One forward and backward pass of a batch of 128
// takes about 150 ms on 2 cores (a minute or so per epoch of 60,000).
func MobileNetSmallConfig(inChannels, classes int) MobileNetConfig {
	return MobileNetConfig{
		InChannels: inChannels, Classes: classes,
		Widths:  []int{32, 64, 128, 128, 256},
		Strides: []int{2, 1, 2, 1, 1},
	}
}

// widths returns the scaled widths, or an error naming the first invalid
// field of cfg.
func (cfg MobileNetConfig) widths() ([]int, error) {
	m := cfg.WidthMultiplier
	if m == 0 {
		m = 1
	}
	switch {
	case cfg.InChannels <= 0:
		return nil, fmt.Errorf("models: MobileNetConfig.InChannels = %d, expected > 0", cfg.InChannels)
	case cfg.Classes <= 0:
		return nil, fmt.Errorf("models: MobileNetConfig.Classes = %d, expected > 0", cfg.Classes)
	case len(cfg.Widths) == 0:
		return nil, fmt.Errorf("models: MobileNetConfig.Widths is empty, expected at least the stem's width")
	case len(cfg.Strides) != len(cfg.Widths):
		return nil, fmt.Errorf("models: MobileNetConfig.Strides has %d entries, expected one per entry of Widths (%d)", len(cfg.Strides), len(cfg.Widths))
	case !(m > 0) || math.IsInf(m, 0):
		return nil, fmt.Errorf("models: MobileNetConfig.WidthMultiplier = %g, expected a finite value > 0 (or 0 for 1)", cfg.WidthMultiplier)
	}
	ws := make([]int, len(cfg.Widths))
	for i, w := range cfg.Widths {
		if w <= 0 {
			return nil, fmt.Errorf("models: MobileNetConfig.Widths[%d] = %d, expected > 0 channels", i, w)
		}
		if s := cfg.Strides[i]; s <= 0 {
			return nil, fmt.Errorf("models: MobileNetConfig.Strides[%d] = %d, expected > 0", i, s)
		}
		ws[i] = max(1, int(math.Round(m*float64(w))))
	}
	return ws, nil
}

// NewMobileNet builds the network described by cfg as a Net:
//
//   - features.0, the stem: 3×3 convolution (stride Strides[0], padding
//     1, no bias), BatchNorm, ReLU6;
//   - features.i for i ≥ 1, a depthwise-separable block: 3×3 depthwise
//     convolution (groups = channels, stride Strides[i], padding 1),
//     BatchNorm, ReLU6, 1×1 pointwise convolution to Widths[i] channels,
//     BatchNorm, ReLU6;
//   - classifier: global average pooling, Flatten, Linear to Classes.
//
// Parameters are therefore named like PyTorch's nn.Sequential of the same
// modules: "features.0.0.weight" (stem convolution), "features.0.1.weight"
// and "features.0.1.running_mean" (its BatchNorm), "features.1.0.weight"
// (block 1's depthwise convolution), "features.1.3.weight" (its pointwise
// convolution), "features.1.4.bias", …, "classifier.2.weight" and
// "classifier.2.bias". ReLU6 is min(max(x, 0), 6).
//
// Initialisation follows torchvision's MobileNetV2: convolutions from
// N(0, 2/fan_out), BatchNorm weights 1 and biases 0, the Linear weight
// from N(0, 0.01²) and its bias 0; every draw comes from rng. The input
// size is free (N×InChannels×H×W). An invalid cfg returns an error naming
// the field.
func NewMobileNet(cfg MobileNetConfig, rng *rand.Rand) (*Net, error) {
	ws, err := cfg.widths()
	if err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("models: NewMobileNet: nil *rand.Rand, expected a seeded generator")
	}
	features := layers.NewSequential(layers.NewSequential(
		newConv(cfg.InChannels, ws[0], 3, cfg.Strides[0], 1, 1, rng), newBN(ws[0]), layers.ReLU6{}))
	for i := 1; i < len(ws); i++ {
		c := ws[i-1]
		features.Append(layers.NewSequential(
			newConv(c, c, 3, cfg.Strides[i], 1, c, rng), newBN(c), layers.ReLU6{},
			newConv(c, ws[i], 1, 1, 0, 1, rng), newBN(ws[i]), layers.ReLU6{},
		))
	}
	fc := layers.NewLinear(ws[len(ws)-1], cfg.Classes, true, rng)
	fc.Weight().Value.CopyFrom(tensor.RandNormal(rng, 0, 0.01, fc.Weight().Shape()...))
	fc.Bias().Value.Fill(0)
	classifier := layers.NewSequential(layers.NewGlobalAvgPool(), layers.NewFlatten(), fc)
	return NewNet(features, classifier), nil
}
