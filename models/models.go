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

// ImageShape is the shape of the images a model takes: channels, height
// and width.
type ImageShape struct {
	Channels, Height, Width int
}

// String formats the shape as C×H×W.
func (s ImageShape) String() string { return fmt.Sprintf("%d×%d×%d", s.Channels, s.Height, s.Width) }

// FashionMNISTShape is the shape of Fashion-MNIST's images, 1×28×28.
var FashionMNISTShape = ImageShape{Channels: 1, Height: 28, Width: 28}

// NewCNN returns the small CNN for 1×28×28 images: conv 1→32 3×3 pad 1,
// ReLU, max-pool 2, conv 32→64 3×3 pad 1, ReLU, max-pool 2, flatten,
// linear 3136→128, ReLU, linear 128→classes. NewCNNFor builds it for
// other image sizes.
func NewCNN(classes int, rng *rand.Rand) *Net {
	net, err := NewCNNFor(FashionMNISTShape, classes, rng)
	if err != nil {
		panic(err)
	}
	return net
}

// NewCNNFor returns the small CNN of NewCNN for images of shape in: the
// first convolution takes in.Channels, and the first linear layer takes
// 64 × ⌊H/4⌋ × ⌊W/4⌋ features. Images smaller than 4×4 are an error.
func NewCNNFor(in ImageShape, classes int, rng *rand.Rand) (*Net, error) {
	if err := checkImage("cnn", in, 4, classes); err != nil {
		return nil, err
	}
	pad1 := layers.Conv2dConfig{PadH: 1, PadW: 1}
	return NewNet(
		layers.NewSequential(
			layers.NewConv2d(in.Channels, 32, 3, 3, pad1, rng), layers.ReLU{}, layers.NewMaxPool2d(2, 2, layers.Pool2dConfig{}),
			layers.NewConv2d(32, 64, 3, 3, pad1, rng), layers.ReLU{}, layers.NewMaxPool2d(2, 2, layers.Pool2dConfig{}),
		),
		layers.NewSequential(
			layers.NewFlatten(),
			layers.NewLinear(64*(in.Height/4)*(in.Width/4), 128, true, rng), layers.ReLU{},
			layers.NewLinear(128, classes, true, rng),
		),
	), nil
}

// checkImage checks that model can take images of shape in (at least
// minSide pixels a side) and classes classes.
func checkImage(model string, in ImageShape, minSide, classes int) error {
	switch {
	case in.Channels < 1:
		return fmt.Errorf("models: %s: expected images with at least 1 channel, found %s", model, in)
	case in.Height < minSide || in.Width < minSide:
		return fmt.Errorf("models: %s: expected images of at least %d×%d pixels, found %s", model, minSide, minSide, in)
	case classes < 1:
		return fmt.Errorf("models: %s: expected at least 1 class, found %d", model, classes)
	}
	return nil
}

// NewLeNet5 returns LeNet-5 for 1×28×28 images in its common modern form:
// conv 1→6 5×5 pad 2, ReLU, max-pool 2, conv 6→16 5×5, ReLU, max-pool 2,
// flatten, linear 400→120, ReLU, linear 120→84, ReLU, linear 84→classes.
// NewLeNet5For builds it for other image sizes.
func NewLeNet5(classes int, rng *rand.Rand) *Net {
	net, err := NewLeNet5For(FashionMNISTShape, classes, rng)
	if err != nil {
		panic(err)
	}
	return net
}

// NewLeNet5For returns the LeNet-5 of NewLeNet5 for images of shape in:
// the first convolution takes in.Channels, and the first linear layer
// takes 16 × ⌊(⌊H/2⌋-4)/2⌋ × ⌊(⌊W/2⌋-4)/2⌋ features. Images smaller than
// 12×12 are an error.
func NewLeNet5For(in ImageShape, classes int, rng *rand.Rand) (*Net, error) {
	if err := checkImage("lenet5", in, 12, classes); err != nil {
		return nil, err
	}
	h, w := (in.Height/2-4)/2, (in.Width/2-4)/2
	return NewNet(
		layers.NewSequential(
			layers.NewConv2d(in.Channels, 6, 5, 5, layers.Conv2dConfig{PadH: 2, PadW: 2}, rng), layers.ReLU{},
			layers.NewMaxPool2d(2, 2, layers.Pool2dConfig{}),
			layers.NewConv2d(6, 16, 5, 5, layers.Conv2dConfig{}, rng), layers.ReLU{},
			layers.NewMaxPool2d(2, 2, layers.Pool2dConfig{}),
		),
		layers.NewSequential(
			layers.NewFlatten(),
			layers.NewLinear(16*h*w, 120, true, rng), layers.ReLU{},
			layers.NewLinear(120, 84, true, rng), layers.ReLU{},
			layers.NewLinear(84, classes, true, rng),
		),
	), nil
}
