package autograd_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

func param(name string, v ...float32) *autograd.Param {
	return autograd.NewParam(name, tensor.FromFloat32(v, len(v)))
}

func TestBackwardAccumulatesAcrossUsesAndCalls(t *testing.T) {
	t.Parallel()
	w := param("w", 3)
	// y = w·w + w: dy/dw = 2w + 1 = 7
	y := autograd.Add(autograd.Mul(w.Var, w.Var), w.Var)
	require.NoError(t, autograd.Backward(autograd.SumAll(y)))
	assert.Equal(t, []float32{7}, w.Grad.Float32s())
	// A second backward pass adds to Grad, as in PyTorch.
	y = autograd.Mul(w.Var, w.Var)
	require.NoError(t, autograd.Backward(autograd.SumAll(y)))
	assert.Equal(t, []float32{13}, w.Grad.Float32s())
	w.ZeroGrad()
	assert.Nil(t, w.Grad)
}

func TestBackwardErrors(t *testing.T) {
	t.Parallel()
	x := autograd.Constant(tensor.FromFloat32([]float32{1, 2}, 2))
	err := autograd.Backward(autograd.SumAll(x))
	assert.ErrorIs(t, err, autograd.ErrNoGrad)

	w := param("w", 1, 2)
	err = autograd.Backward(autograd.Mul(w.Var, w.Var))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "[2]")

	err = autograd.BackwardWith(autograd.Mul(w.Var, w.Var), tensor.FromFloat32([]float32{1, 2, 3}, 3))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "[3]")
}

func TestGradientsDoNotAlias(t *testing.T) {
	t.Parallel()
	a, b := param("a", 1, 2), param("b", 3, 4)
	// Add passes the same gradient tensor to both inputs; each Grad must
	// still be its own buffer.
	require.NoError(t, autograd.Backward(autograd.SumAll(autograd.Add(a.Var, b.Var))))
	a.Grad.Fill(5)
	assert.Equal(t, []float32{1, 1}, b.Grad.Float32s())
}

func TestNoGrad(t *testing.T) {
	t.Parallel()
	w := param("w", 2)
	x := autograd.NoGrad(autograd.Constant(tensor.FromFloat32([]float32{3}, 1)))
	y := autograd.Mul(w.Var, x)
	assert.False(t, y.RequiresGrad())
	assert.True(t, y.IsNoGrad())
	assert.ErrorIs(t, autograd.Backward(autograd.SumAll(y)), autograd.ErrNoGrad)
	assert.Nil(t, w.Grad)
}

// TestNoGradIsPerGoroutine runs a no-grad evaluation and a recorded
// training step side by side: neither may change the other's mode.
func TestNoGradIsPerGoroutine(t *testing.T) {
	t.Parallel()
	w := param("w", 2)
	var wg sync.WaitGroup
	recorded := make([]bool, 100)
	for i := range recorded {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := autograd.Constant(tensor.FromFloat32([]float32{1}, 1))
			if i%2 == 0 {
				x = autograd.NoGrad(x)
			}
			recorded[i] = autograd.Mul(w.Var, x).RequiresGrad()
		}()
	}
	wg.Wait()
	for i, r := range recorded {
		assert.Equal(t, i%2 == 1, r, "goroutine %d", i)
	}
}

func TestGradReadyHooksFireInReverseOrderOfUse(t *testing.T) {
	t.Parallel()
	w1, b1, w2, b2 := param("w1", 1, 2), param("b1", 0.5), param("w2", 3, 4), param("b2", 1)
	var fired []string
	var gradsAtFire []float32
	for _, p := range []*autograd.Param{w1, b1, w2, b2} {
		p.OnGradReady(func(p *autograd.Param) {
			fired = append(fired, p.Name)
			gradsAtFire = append(gradsAtFire, p.Grad.Float32s()[0])
		})
	}
	x := autograd.Constant(tensor.FromFloat32([]float32{1, 1}, 2))
	h := autograd.Add(autograd.Mul(w1.Var, x), b1.Var)
	y := autograd.Add(autograd.Mul(w2.Var, h), b2.Var)
	require.NoError(t, autograd.Backward(autograd.SumAll(y)))
	// b2 and w2 are used last, so their gradients are ready first; w1 is
	// used first (in the innermost Mul) and is the last to be ready.
	assert.Equal(t, []string{"b2", "w2", "b1", "w1"}, fired)
	// Each hook sees its final gradient.
	assert.Equal(t, []float32{2, 1.5, 7, 3}, gradsAtFire)
}

func TestDeepGraphDoesNotOverflow(t *testing.T) {
	t.Parallel()
	w := param("w", 1)
	y := w.Var
	for i := 0; i < 100000; i++ {
		y = autograd.AddScalar(y, 0)
	}
	require.NoError(t, autograd.Backward(autograd.SumAll(y)))
	assert.Equal(t, []float32{1}, w.Grad.Float32s())
}

func Example() {
	w := autograd.NewParam("w", tensor.FromFloat32([]float32{2}, 1))
	x := autograd.Constant(tensor.FromFloat32([]float32{3}, 1))
	y := autograd.Mul(w.Var, autograd.Mul(w.Var, x)) // y = w²·x
	if err := autograd.Backward(autograd.SumAll(y)); err != nil {
		panic(err)
	}
	fmt.Println(w.Grad.Float32s()) // dy/dw = 2·w·x
	// Output: [12]
}

// TestArenaGradients checks gradients computed in an arena: they become
// Grad (which outlives Reset), and a hook that changes one parameter's
// Grad in place (as a distributed optimizer's averaging does) changes no
// other parameter's gradient, even where the rules share memory.
func TestArenaGradients(t *testing.T) {
	a := tensor.NewArena()
	p := autograd.NewParam("p", tensor.FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 3))
	q := autograd.NewParam("q", tensor.FromFloat32([]float32{4, 5, 6, 7, 8, 9}, 2, 3))
	w := autograd.NewParam("w", tensor.FromFloat32([]float32{1, 1, 1, 2, 2, 2}, 2, 3))
	w.OnGradReady(func(w *autograd.Param) { w.Grad.CopyFrom(w.Grad.MulScalar(100)) })
	for step := range 3 {
		x := autograd.Constant(tensor.FromFloat32([]float32{1, 0, 2, 1, 1, 1}, 2, 3).WithArena(a))
		// Mul's rule makes a dense gradient in the arena, which each Add's
		// rule hands on to both of its inputs.
		y := autograd.Mul(x, autograd.Add(w.Var, autograd.Add(p.Var, q.Var)))
		require.NoError(t, autograd.Backward(autograd.SumAll(y)))
		a.Reset()
		assert.Equal(t, []float32{1, 0, 2, 1, 1, 1}, p.Grad.Float32s(), "step %d: p", step)
		assert.Equal(t, []float32{1, 0, 2, 1, 1, 1}, q.Grad.Float32s(), "step %d: q", step)
		assert.Equal(t, []float32{100, 0, 200, 100, 100, 100}, w.Grad.Float32s(), "step %d: w (scaled by its hook)", step)
		assert.Nil(t, w.Grad.Arena(), "Grad lives outside the arena")
		for _, v := range []*autograd.Param{p, q, w} {
			v.ZeroGrad()
		}
	}
}
