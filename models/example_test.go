package models_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// Example is the README's quick start: a small classifier written in Go,
// trained with SGD on a toy problem.
func Example() {
	rng := rand.New(rand.NewPCG(1, 1)) // every random choice is seeded
	model := layers.NewSequential(
		layers.NewLinear(4, 16, true, rng), layers.ReLU{},
		layers.NewLinear(16, 3, true, rng),
	)
	opt, err := optim.NewSGD(model.Parameters(), optim.SGDConfig{LR: 0.1, Momentum: 0.9})
	if err != nil {
		panic(err)
	}
	x := tensor.RandNormal(rng, 0, 1, 32, 4)                         // 32 samples, 4 features
	y := x.Slice(1, 0, 1).GtScalar(0).Cast(device.Int64).Reshape(32) // label: is feature 0 positive?
	var loss *autograd.Var
	for step := 0; step < 100; step++ {
		logits := model.Forward(autograd.Constant(x))
		loss = layers.CrossEntropy(logits, y, layers.CrossEntropyOptions{})
		if err := autograd.Backward(loss); err != nil {
			panic(err)
		}
		if err := opt.Step(); err != nil {
			panic(err)
		}
		opt.ZeroGrad()
	}
	fmt.Println(model.Parameters()[0].Name) // named as in PyTorch
	fmt.Println("loss below 0.05:", loss.Value.Item() < 0.05)
	// Output:
	// 0.weight
	// loss below 0.05: true
}

// ExampleNewCNN builds the small CNN of configs/fashion-mnist-cnn.yaml and
// runs a batch of two images through it.
func ExampleNewCNN() {
	net := models.NewCNN(10, rand.New(rand.NewPCG(1, 1)))
	images := tensor.Zeros(2, 1, 28, 28)
	logits := net.Forward(autograd.NoGrad(autograd.Constant(images)))
	fmt.Println(logits.Value.Shape(), layers.NumParams(net), net.Parameters()[0].Name)
	// Output: [2 10] 421642 features.0.weight
}
