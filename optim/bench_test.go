package optim_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// benchParams returns the parameters of a small CNN (float32 on the CPU)
// with random gradients.
func benchParams() []*autograd.Param {
	rng := rand.New(rand.NewPCG(5, 6))
	var ps []*autograd.Param
	for i, shape := range [][]int{{32, 1, 3, 3}, {32}, {64, 32, 3, 3}, {64}, {128, 3136}, {128}, {10, 128}, {10}} {
		p := autograd.NewParam(fmt.Sprintf("p%d", i), tensor.RandNormal(rng, 0, 1, shape...))
		p.Grad = tensor.RandNormal(rng, 0, 1, shape...)
		ps = append(ps, p)
	}
	return ps
}

// BenchmarkSGDStep times one step of SGD with momentum and weight decay
// over benchParams.
func BenchmarkSGDStep(b *testing.B) {
	opt, err := optim.NewSGD(benchParams(), optim.SGDConfig{LR: 1e-3, Momentum: 0.9, WeightDecay: 1e-4})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := opt.Step(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdamStep times one step of Adam over benchParams.
func BenchmarkAdamStep(b *testing.B) {
	opt, err := optim.NewAdam(benchParams(), optim.DefaultAdamConfig())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := opt.Step(); err != nil {
			b.Fatal(err)
		}
	}
}
