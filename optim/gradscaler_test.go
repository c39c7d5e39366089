package optim

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

// scalerSetup returns a parameter, an SGD over it and the scaled and
// plain versions of one loss.
func scalerSetup(t *testing.T) (*autograd.Param, *SGD) {
	t.Helper()
	w := autograd.NewParam("w", tensor.FromFloat32([]float32{1, -2, 3}, 3))
	opt, err := NewSGD([]*autograd.Param{w}, SGDConfig{LR: 0.1, Momentum: 0.9})
	require.NoError(t, err)
	return w, opt
}

func lossOf(w *autograd.Param) *autograd.Var {
	x := autograd.Constant(tensor.FromFloat32([]float32{0.5, 0.25, -1}, 3))
	return autograd.SumAll(autograd.Mul(w.Var, x))
}

// TestGradScalerStepEqualsUnscaled checks that scaling the loss and
// unscaling the gradients gives the unscaled update exactly (the scale is
// a power of two).
func TestGradScalerStepEqualsUnscaled(t *testing.T) {
	ref, refOpt := scalerSetup(t)
	w, opt := scalerSetup(t)
	s, err := NewGradScaler(opt, GradScalerConfig{GrowthInterval: 3})
	require.NoError(t, err)
	assert.Equal(t, 65536.0, s.Scale())
	for step := 1; step <= 4; step++ {
		require.NoError(t, autograd.Backward(lossOf(ref)))
		require.NoError(t, refOpt.Step())
		refOpt.ZeroGrad()

		require.NoError(t, autograd.Backward(s.ScaleLoss(lossOf(w))))
		require.NoError(t, s.Step())
		assert.False(t, s.Skipped())
		s.ZeroGrad()
		assert.Equal(t, ref.Value.Float32s(), w.Value.Float32s(), "step %d", step)
		if step < 3 {
			assert.Equal(t, 65536.0, s.Scale())
		}
	}
	assert.Equal(t, 131072.0, s.Scale(), "the scale doubles after GrowthInterval finite steps")
}

// TestGradScalerSkipsNonFiniteSteps puts an Inf and then a NaN in a
// gradient: the parameters and the optimizer's state stay as they were,
// and the scale backs off each time.
func TestGradScalerSkipsNonFiniteSteps(t *testing.T) {
	w, opt := scalerSetup(t)
	s, err := NewGradScaler(opt, GradScalerConfig{InitScale: 1024, GrowthInterval: 2})
	require.NoError(t, err)
	require.NoError(t, autograd.Backward(s.ScaleLoss(lossOf(w))))
	require.NoError(t, s.Step()) // one good step: growth tracker 1
	s.ZeroGrad()
	before := w.Value.Float32s()
	stepsBefore := s.StateDict()[StepKey].Int64s()[0]
	for i, bad := range []float32{float32(math.Inf(1)), float32(math.NaN())} {
		w.Grad = tensor.FromFloat32([]float32{1, bad, 2}, 3)
		require.NoError(t, s.Step())
		assert.True(t, s.Skipped())
		assert.Equal(t, before, w.Value.Float32s(), "parameters unchanged")
		assert.Equal(t, stepsBefore, s.StateDict()[StepKey].Int64s()[0], "the optimizer did not step")
		assert.Equal(t, 1024*math.Pow(0.5, float64(i+1)), s.Scale())
	}
	s.ZeroGrad()
	// The tracker restarted: two more good steps before the scale grows.
	for i := 0; i < 2; i++ {
		require.NoError(t, autograd.Backward(s.ScaleLoss(lossOf(w))))
		require.NoError(t, s.Step())
		s.ZeroGrad()
	}
	assert.Equal(t, 512.0, s.Scale())
}

func TestGradScalerStateDict(t *testing.T) {
	w, opt := scalerSetup(t)
	s, err := NewGradScaler(opt, GradScalerConfig{InitScale: 8, GrowthInterval: 5})
	require.NoError(t, err)
	require.NoError(t, autograd.Backward(s.ScaleLoss(lossOf(w))))
	require.NoError(t, s.Step())
	sd := s.StateDict()
	assert.Equal(t, 8.0, sd[GradScalerScaleKey].Item())
	assert.Equal(t, int64(1), sd[GradScalerGrowthKey].Int64s()[0])

	w2, opt2 := scalerSetup(t)
	_ = w2
	s2, err := NewGradScaler(opt2, GradScalerConfig{})
	require.NoError(t, err)
	require.NoError(t, s2.LoadStateDict(sd))
	assert.Equal(t, 8.0, s2.Scale())
	assert.Equal(t, s.StateDict()[StepKey].Int64s(), s2.StateDict()[StepKey].Int64s())

	delete(sd, GradScalerGrowthKey)
	assert.ErrorContains(t, s2.LoadStateDict(sd), GradScalerGrowthKey)
	sd[GradScalerGrowthKey] = tensor.FromInt64([]int64{0})
	sd[GradScalerScaleKey] = tensor.FromFloat64([]float64{-1})
	assert.ErrorContains(t, s2.LoadStateDict(sd), "invalid")
	assert.Equal(t, 8.0, s2.Scale(), "a failed load changes nothing")
}

func TestGradScalerConfigErrors(t *testing.T) {
	_, opt := scalerSetup(t)
	for _, cfg := range []GradScalerConfig{
		{InitScale: -1}, {InitScale: math.Inf(1)}, {GrowthFactor: 0.5}, {BackoffFactor: 1.5}, {GrowthInterval: -1},
	} {
		_, err := NewGradScaler(opt, cfg)
		assert.Error(t, err, "%+v", cfg)
	}
	_, err := NewGradScaler(nil, GradScalerConfig{})
	assert.Error(t, err)
}

// TestGradScalerUnscaleBeforeClipping unscales, clips, then steps: the
// gradients are divided once, not twice.
func TestGradScalerUnscaleBeforeClipping(t *testing.T) {
	ref, refOpt := scalerSetup(t)
	w, opt := scalerSetup(t)
	s, err := NewGradScaler(opt, GradScalerConfig{InitScale: 4096})
	require.NoError(t, err)

	require.NoError(t, autograd.Backward(lossOf(ref)))
	ClipGradNorm(refOpt.Params(), 0.5)
	require.NoError(t, refOpt.Step())

	require.NoError(t, autograd.Backward(s.ScaleLoss(lossOf(w))))
	assert.True(t, s.Unscale())
	assert.True(t, s.Unscale(), "a second call does nothing")
	ClipGradNorm(s.Params(), 0.5)
	require.NoError(t, s.Step())
	assert.Equal(t, ref.Value.Float32s(), w.Value.Float32s())
}
