package autograd_test

import (
	"math/rand/v2"
	"testing"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

// BenchmarkBatchNorm runs the forward and backward pass of batch
// normalisation of a CNN's activations (a batch of 128 32-channel 14×14
// float32 maps) with an affine weight and bias, results in an arena as in
// training.
func BenchmarkBatchNorm(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := tensor.RandNormal(rng, 0, 1, 128, 32, 14, 14)
	dy := tensor.RandNormal(rng, 0, 1, 128, 32, 14, 14)
	w := autograd.Leaf(tensor.RandUniform(rng, 0.5, 1.5, 32))
	bias := autograd.Leaf(tensor.RandUniform(rng, -1, 1, 32))
	arena := tensor.NewArena()
	for b.Loop() {
		xv := autograd.Leaf(x.WithArena(arena))
		y, _, _ := autograd.BatchNorm(xv, w, bias, 1e-5)
		if err := autograd.BackwardWith(y, dy.WithArena(arena)); err != nil {
			b.Fatal(err)
		}
		w.ZeroGrad()
		bias.ZeroGrad()
		arena.Reset()
	}
}
