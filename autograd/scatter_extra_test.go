package autograd_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

func TestIndexAdd(t *testing.T) {
	t.Parallel()
	x := autograd.Constant(tensor.FromFloat64([]float64{1, 2, 3, 4, 5, 6}, 3, 2))
	src := autograd.Constant(tensor.FromFloat64([]float64{10, 20, 30, 40, 50, 60}, 3, 2))
	idx := tensor.FromInt64([]int64{2, 0, 2}, 3)
	y := autograd.IndexAdd(x, 0, idx, src)
	assert.Equal(t, []float64{31, 42, 3, 4, 65, 86}, y.Value.Values())

	rng := rand.New(rand.NewPCG(1, 2))
	inputs := []*tensor.Tensor{tensor.RandNormal(rng, 0, 1, 2, 3, 4), tensor.RandNormal(rng, 0, 1, 2, 5, 4)}
	for i, in := range inputs {
		inputs[i] = tensor.FromFloat64(in.Values(), in.Shape()...)
	}
	idx = tensor.FromInt64([]int64{1, 0, 1, 2, 1}, 5)
	f := func(xs []*autograd.Var) *autograd.Var { return autograd.IndexAdd(xs[0], 1, idx, xs[1]) }
	require.NoError(t, autograd.GradCheck(f, inputs, autograd.GradCheckOptions{}))
}
