package autograd_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

// TestMaxPool2DNoGrad checks that MaxPool2D computes the same values when
// nothing is recorded (it then skips the positions of the maxima) as when
// it is, and that the recorded one still has its gradient.
func TestMaxPool2DNoGrad(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(23, 24))
	x := tensor.RandNormal(rng, 0, 1, 2, 3, 15, 14)
	o := tensor.PoolOptions{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}
	leaf := autograd.Leaf(x)
	recorded := autograd.MaxPool2D(leaf, o)
	for _, in := range []*autograd.Var{autograd.NoGrad(leaf), autograd.Constant(x)} {
		y := autograd.MaxPool2D(in, o)
		assert.Equal(t, recorded.Value.Values(), y.Value.Values())
	}
	require.NoError(t, autograd.Backward(autograd.SumAll(recorded)))
	g := leaf.Grad.Values()
	var total float64
	for _, v := range g {
		total += v
	}
	assert.Equal(t, float64(recorded.Value.Len()), total) // one per output, routed to its maximum
}
