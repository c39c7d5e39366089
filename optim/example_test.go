package optim_test

import (
	"fmt"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// Example minimises (w-3)² with plain SGD.
func Example() {
	w := autograd.NewParam("w", tensor.FromFloat32([]float32{0}, 1))
	cfg := optim.DefaultSGDConfig()
	cfg.LR = 0.1
	opt, err := optim.NewSGD([]*autograd.Param{w}, cfg)
	if err != nil {
		panic(err)
	}
	for step := 0; step < 100; step++ {
		diff := autograd.AddScalar(w.Var, -3)
		loss := autograd.SumAll(autograd.Mul(diff, diff))
		if err := autograd.Backward(loss); err != nil {
			panic(err)
		}
		if err := opt.Step(); err != nil {
			panic(err)
		}
		opt.ZeroGrad()
	}
	fmt.Printf("w = %.3f\n", w.Value.Item())
	// Output: w = 3.000
}

// ExampleWarmupLR warms up for 2 epochs, then decays by half every 2
// epochs, setting the optimizer's rate at the start of each epoch. The
// schedule reads the base rate, 0.1, from the optimizer.
func ExampleWarmupLR() {
	w := autograd.NewParam("w", tensor.Zeros(1))
	opt, err := optim.NewSGD([]*autograd.Param{w}, optim.SGDConfig{LR: 0.1})
	if err != nil {
		panic(err)
	}
	decay, err := optim.StepLR(opt, 2, 0.5)
	if err != nil {
		panic(err)
	}
	sched, err := optim.WarmupLR(0.1, 2, decay)
	if err != nil {
		panic(err)
	}
	for epoch := 0; epoch < 6; epoch++ {
		optim.Apply(opt, sched, epoch)
		fmt.Printf("epoch %d: lr %.3f\n", epoch, opt.LR())
	}
	// Output:
	// epoch 0: lr 0.010
	// epoch 1: lr 0.055
	// epoch 2: lr 0.100
	// epoch 3: lr 0.100
	// epoch 4: lr 0.050
	// epoch 5: lr 0.050
}

// ExampleClipGradNorm scales gradients whose global norm exceeds 1.
func ExampleClipGradNorm() {
	a := autograd.NewParam("a", tensor.Zeros(1))
	b := autograd.NewParam("b", tensor.Zeros(1))
	a.Grad = tensor.FromFloat32([]float32{3}, 1)
	b.Grad = tensor.FromFloat32([]float32{4}, 1)
	total := optim.ClipGradNorm([]*autograd.Param{a, b}, 1)
	fmt.Printf("norm %.1f, grads %.2f %.2f\n", total, a.Grad.Item(), b.Grad.Item())
	// Output: norm 5.0, grads 0.60 0.80
}
