// Command custommodel is the train command with one more model, defined
// in this file: a small convolutional network with a linear shortcut
// from the pixels to the logits. Registering it is all it takes to get
// the whole trainer — YAML and -set, resume, eval, predict, export,
// mpirun and -restarts, checkpoints, curves and progress:
//
//	go run ./examples/custommodel -config examples/custommodel/config.yaml -set train.epochs=1
//	go run ./examples/custommodel resume -run runs/custommodel
//	go run ./examples/custommodel eval -run runs/custommodel
//	go run ./examples/custommodel export -run runs/custommodel -o shortcut.onnx
//
// The model's own keys sit under model.args in config.yaml and are decoded
// into shortcutArgs, as strictly as every other key.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/train"
)

func main() {
	train.RegisterModel("shortcut", newShortcutNet)
	os.Exit(train.Main(context.Background(), os.Args[1:]))
}

// shortcutArgs are the keys of model.args.
type shortcutArgs struct {
	// Channels is the width of the first convolution; the second has
	// twice as many.
	Channels int `yaml:"channels"`
	// Hidden is the width of the hidden layer of the head.
	Hidden int `yaml:"hidden"`
	// Shortcut adds a linear map from the pixels to the logits.
	Shortcut bool `yaml:"shortcut"`
}

// SetDefaults gives the keys a config leaves out their values.
func (a *shortcutArgs) SetDefaults() { *a = shortcutArgs{Channels: 16, Hidden: 128, Shortcut: true} }

// Validate checks the values after decoding.
func (a shortcutArgs) Validate() error {
	if a.Channels < 1 || a.Hidden < 1 {
		return fmt.Errorf("channels and hidden must be >= 1, found %d and %d", a.Channels, a.Hidden)
	}
	return nil
}

// shortcutNet is conv → ReLU → pool → conv → ReLU → pool → linear → ReLU →
// linear, plus, when on, a linear shortcut from the flattened pixels.
type shortcutNet struct {
	features *layers.Sequential
	head     *layers.Sequential
	shortcut *layers.Sequential // nil when off
}

// newShortcutNet builds the model for samples of in.SampleShape
// (channels × height × width, both sides divisible by 4).
func newShortcutNet(args shortcutArgs, in train.ModelInput) (layers.Layer, error) {
	s := in.SampleShape
	if len(s) != 3 || s[1]%4 != 0 || s[2]%4 != 0 {
		return nil, fmt.Errorf("expected images [channels, height, width] with sides divisible by 4, found samples %v", s)
	}
	c, rng := args.Channels, in.Rand
	pad := layers.Conv2dConfig{PadH: 1, PadW: 1}
	pool := func() layers.Layer { return layers.NewMaxPool2d(2, 2, layers.Pool2dConfig{}) }
	n := &shortcutNet{
		features: layers.Named("features", layers.NewSequential(
			layers.NewConv2d(s[0], c, 3, 3, pad, rng), layers.ReLU{}, pool(),
			layers.NewConv2d(c, 2*c, 3, 3, pad, rng), layers.ReLU{}, pool(),
		)),
		head: layers.Named("head", layers.NewSequential(
			layers.NewFlatten(),
			layers.NewLinear(2*c*(s[1]/4)*(s[2]/4), args.Hidden, true, rng), layers.ReLU{},
			layers.NewLinear(args.Hidden, in.Classes, true, rng),
		)),
	}
	if args.Shortcut {
		n.shortcut = layers.Named("shortcut", layers.NewSequential(
			layers.NewFlatten(), layers.NewLinear(s[0]*s[1]*s[2], in.Classes, false, newRand(rng)),
		))
	}
	return n, nil
}

// newRand returns a generator drawn from rng, so that the shortcut's
// initialisation does not shift the rest of the model's.
func newRand(rng *rand.Rand) *rand.Rand { return rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())) }

// Forward returns the logits for the images x.
func (n *shortcutNet) Forward(x *autograd.Var) *autograd.Var {
	y := n.head.Forward(n.features.Forward(x))
	if n.shortcut != nil {
		y = autograd.Add(y, n.shortcut.Forward(x))
	}
	return y
}

// Parameters returns every weight of the model.
func (n *shortcutNet) Parameters() []*autograd.Param {
	ps := append(n.features.Parameters(), n.head.Parameters()...)
	if n.shortcut != nil {
		ps = append(ps, n.shortcut.Parameters()...)
	}
	return ps
}

// Children returns the parts, so that the trainer reaches their modes,
// buffers and devices.
func (n *shortcutNet) Children() []layers.Module {
	ms := []layers.Module{n.features, n.head}
	if n.shortcut != nil {
		ms = append(ms, n.shortcut)
	}
	return ms
}
