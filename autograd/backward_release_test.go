package autograd_test

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

// releaseGraph computes a loss from x (4×6) and the parameters through
// the cases where gradients share memory: views (Reshape, Permute,
// Transpose, Split, Slice), a gradient handed to two inputs (Add of a
// value with itself), sums of gradients (h is used three times, w twice),
// a broadcast (Expand) and batched products of non-contiguous operands.
// It also returns the output the loss is computed from.
func releaseGraph(x *autograd.Var, w, v *autograd.Param) (out, loss *autograd.Var) {
	h := autograd.Relu(autograd.MatMul(x, w.Var))         // 4×6
	r := autograd.Reshape(h, 2, 2, 6)                     // a view
	s := autograd.MatMul(autograd.Permute(r, 0, 2, 1), r) // 2×6×6
	parts := autograd.Split(s, 1, 2, 4)                   // views
	c := autograd.Concat(1, parts[1], parts[0])           // 2×6×6
	d := autograd.Add(c, c)                               // one gradient for both inputs
	e := autograd.Mul(d, autograd.Expand(autograd.Reshape(v.Var, 1, 1, 6), 2, 6, 6))
	f := autograd.Sum(e, 2, false) // 2×6
	ht := autograd.Reshape(autograd.Transpose(autograd.Reshape(h, 6, 4), 0, 1), 2, 12)
	g := autograd.Add(f, autograd.Slice(ht, 1, 0, 6))
	u := autograd.MatMul(autograd.Reshape(g, 3, 4), autograd.Slice(w.Var, 0, 0, 4)) // 3×6
	out = autograd.MulScalar(autograd.Relu(u), 0.5)
	return out, autograd.SumAll(autograd.Mul(out, out))
}

// Backward gives the gradients it is done with back to the step's arena
// (tensor.Release) and reuses their memory: the gradients, and the
// values the forward pass computed, are those of a pass without an
// arena, step after step.
func TestArenaBackwardReleasesGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	xv := tensor.RandNormal(rng, 0, 1, 4, 6)
	params := func() (*autograd.Param, *autograd.Param) {
		r := rand.New(rand.NewPCG(7, 8))
		return autograd.NewParam("w", tensor.RandNormal(r, 0, 1, 6, 6)), autograd.NewParam("v", tensor.RandNormal(r, 0, 1, 6))
	}
	w0, v0 := params()
	out0, loss0 := releaseGraph(autograd.Constant(xv), w0, v0)
	require.NoError(t, autograd.Backward(loss0))

	a := tensor.NewArena()
	w, v := params()
	for step := range 3 {
		out, loss := releaseGraph(autograd.Constant(xv.WithArena(a)), w, v)
		require.NoError(t, autograd.Backward(loss))
		assert.Equal(t, out0.Value.Float32s(), out.Value.Float32s(), "step %d: the forward values outlive Backward", step)
		assert.Equal(t, loss0.Value.Float32s(), loss.Value.Float32s(), "step %d", step)
		assert.Equal(t, w0.Grad.Float32s(), w.Grad.Float32s(), "step %d: w", step)
		assert.Equal(t, v0.Grad.Float32s(), v.Grad.Float32s(), "step %d: v", step)
		a.Reset()
		w.ZeroGrad()
		v.ZeroGrad()
	}
}

// A chain of operations whose gradients are the size of the activations
// needs memory for the gradients in flight only, not one per operation.
func TestArenaBackwardReusesGradientMemory(t *testing.T) {
	const n, depth = 1000, 32
	rng := rand.New(rand.NewPCG(9, 10))
	w := autograd.NewParam("w", tensor.RandNormal(rng, 0, 1, n))
	a := tensor.NewArena()
	h := autograd.Mul(autograd.Constant(tensor.RandNormal(rng, 0, 1, n).WithArena(a)), w.Var)
	for i := range depth {
		if i%2 == 0 {
			h = autograd.Relu(h)
		} else {
			h = autograd.MulScalar(h, 1.5)
		}
	}
	loss := autograd.SumAll(h)
	forward := a.Bytes()
	require.NoError(t, autograd.Backward(loss))
	assert.LessOrEqual(t, a.Bytes()-forward, 4*n*4, "about two gradients of %d floats in flight, not %d", n, depth)
	require.NotNil(t, w.Grad)
}

// The gradient of a slice of a parameter (no arena) is computed in the
// arena of the output gradient, not in fresh memory on every step.
func TestSliceOfParameterGradientInArena(t *testing.T) {
	const rows, cols = 300, 200 // 240 kB
	w := autograd.NewParam("w", tensor.RandNormal(rand.New(rand.NewPCG(1, 2)), 0, 1, rows, cols))
	a := tensor.NewArena()
	x := tensor.FromFloat32(make([]float32, cols), 1, cols)
	x.Fill(1)
	step := func() {
		y := autograd.Mul(autograd.Slice(w.Var, 0, 1, 2), autograd.Constant(x.WithArena(a)))
		require.NoError(t, autograd.Backward(autograd.SumAll(y)))
		a.Reset()
		w.ZeroGrad()
	}
	step()
	step()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 4 {
		step()
	}
	runtime.ReadMemStats(&after)
	assert.Less(t, (after.TotalAlloc-before.TotalAlloc)/4, uint64(rows*cols*4/4), "bytes per step")

	y := autograd.Mul(autograd.Slice(w.Var, 0, 1, 2), autograd.Constant(x.WithArena(a)))
	require.NoError(t, autograd.Backward(autograd.SumAll(y)))
	g := w.Grad.Float32s()
	assert.Equal(t, make([]float32, cols), g[:cols])
	assert.Equal(t, x.Float32s(), g[cols:2*cols])
	assert.Equal(t, make([]float32, (rows-2)*cols), g[2*cols:])
}
