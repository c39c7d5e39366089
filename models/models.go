package models

import (
	"fmt"
	"math/rand/v2"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/layers"
)

// Activations lists the names Activation accepts.
var activations = []string{"relu", "gelu", "tanh", "sigmoid", "silu"}

// Activation returns the non-linearity called name: relu, gelu, tanh,
// sigmoid or silu.
func Activation(name string) (layers.Layer, error) {
	switch name {
	case "relu":
		return layers.ReLU{}, nil
	case "gelu":
		return layers.GELU{}, nil
	case "tanh":
		return layers.Tanh{}, nil
	case "sigmoid":
		return layers.Sigmoid{}, nil
	case "silu":
		return layers.SiLU{}, nil
	}
	return nil, fmt.Errorf("models: unknown activation %q (known: %v)", name, activations)
}

// MLPConfig describes a multi-layer perceptron.
type MLPConfig struct {
	In         int     // input features; inputs of any shape N×… are flattened to N×In
	Hidden     []int   // widths of the hidden layers
	Classes    int     // outputs
	Activation string  // non-linearity after each hidden layer [relu]
	Dropout    float64 // dropout probability after each activation; 0 disables it
}

// NewMLP returns Flatten, then for each hidden width a Linear layer, the
// activation and (optionally) Dropout, then a Linear layer to Classes
// outputs, as one layers.Sequential. Parameter names follow PyTorch's
// nn.Sequential of the same layers ("1.weight", "1.bias", "3.weight", …),
// so weights move between the two unchanged.
func NewMLP(cfg MLPConfig, rng *rand.Rand) (*layers.Sequential, error) {
	if cfg.Activation == "" {
		cfg.Activation = "relu"
	}
	if cfg.In <= 0 || cfg.Classes <= 0 {
		return nil, fmt.Errorf("models: MLP needs positive input and class counts, found in %d, classes %d", cfg.In, cfg.Classes)
	}
	if cfg.Dropout < 0 || cfg.Dropout >= 1 {
		return nil, fmt.Errorf("models: MLP dropout must be in [0, 1), found %g", cfg.Dropout)
	}
	ls := []layers.Layer{layers.NewFlatten()}
	in := cfg.In
	for i, h := range cfg.Hidden {
		if h <= 0 {
			return nil, fmt.Errorf("models: MLP hidden width %d (layer %d) must be positive", h, i)
		}
		act, err := Activation(cfg.Activation)
		if err != nil {
			return nil, err
		}
		ls = append(ls, layers.NewLinear(in, h, true, rng), act)
		if cfg.Dropout > 0 {
			ls = append(ls, layers.NewDropout(cfg.Dropout, rng))
		}
		in = h
	}
	ls = append(ls, layers.NewLinear(in, cfg.Classes, true, rng))
	return layers.NewSequential(ls...), nil
}

// Net is a convolutional feature extractor followed by a classifier head,
// the shape of LeNet, the small CNN and most image classifiers. Its
// parameters are named "features.…" and "classifier.…" as in torchvision.
type Net struct {
	Features   *layers.Sequential
	Classifier *layers.Sequential
}

// NewNet names the two parts and returns the network.
func NewNet(features, classifier *layers.Sequential) *Net {
	return &Net{
		Features:   layers.Named("features", features),
		Classifier: layers.Named("classifier", classifier),
	}
}

// Forward returns the classifier's output for the features of x.
func (n *Net) Forward(x *autograd.Var) *autograd.Var {
	return n.Classifier.Forward(n.Features.Forward(x))
}

// Parameters returns the feature extractor's parameters, then the head's.
func (n *Net) Parameters() []*autograd.Param {
	return append(n.Features.Parameters(), n.Classifier.Parameters()...)
}

// Children returns the two parts.
func (n *Net) Children() []layers.Module { return []layers.Module{n.Features, n.Classifier} }

// NewCNN returns the small CNN for 1×28×28 images: conv 1→32 3×3 pad 1,
// ReLU, max-pool 2, conv 32→64 3×3 pad 1, ReLU, max-pool 2, flatten,
// linear 3136→128, ReLU, linear 128→classes.
func NewCNN(classes int, rng *rand.Rand) *Net {
	pad1 := layers.Conv2dConfig{PadH: 1, PadW: 1}
	return NewNet(
		layers.NewSequential(
			layers.NewConv2d(1, 32, 3, 3, pad1, rng), layers.ReLU{}, layers.NewMaxPool2d(2, 2, layers.Pool2dConfig{}),
			layers.NewConv2d(32, 64, 3, 3, pad1, rng), layers.ReLU{}, layers.NewMaxPool2d(2, 2, layers.Pool2dConfig{}),
		),
		layers.NewSequential(
			layers.NewFlatten(),
			layers.NewLinear(64*7*7, 128, true, rng), layers.ReLU{},
			layers.NewLinear(128, classes, true, rng),
		),
	)
}

// NewLeNet5 returns LeNet-5 for 1×28×28 images in its common modern form:
// conv 1→6 5×5 pad 2, ReLU, max-pool 2, conv 6→16 5×5, ReLU, max-pool 2,
// flatten, linear 400→120, ReLU, linear 120→84, ReLU, linear 84→classes.
func NewLeNet5(classes int, rng *rand.Rand) *Net {
	return NewNet(
		layers.NewSequential(
			layers.NewConv2d(1, 6, 5, 5, layers.Conv2dConfig{PadH: 2, PadW: 2}, rng), layers.ReLU{},
			layers.NewMaxPool2d(2, 2, layers.Pool2dConfig{}),
			layers.NewConv2d(6, 16, 5, 5, layers.Conv2dConfig{}, rng), layers.ReLU{},
			layers.NewMaxPool2d(2, 2, layers.Pool2dConfig{}),
		),
		layers.NewSequential(
			layers.NewFlatten(),
			layers.NewLinear(16*5*5, 120, true, rng), layers.ReLU{},
			layers.NewLinear(120, 84, true, rng), layers.ReLU{},
			layers.NewLinear(84, classes, true, rng),
		),
	)
}
