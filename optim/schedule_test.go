package optim

import (
	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScheduleValidation(t *testing.T) {
	t.Parallel()
	constant, err := Constant(baseLR(0.1))
	require.NoError(t, err)
	errOf := func(_ Schedule, err error) error { return err }
	cases := []struct {
		name   string
		err    error
		substr []string // empty: no error expected
	}{
		{"constant ok", errOf(Constant(baseLR(1))), nil},
		{"constant zero", errOf(Constant(baseLR(0))), []string{"Constant", "base", "found 0"}},
		{"constant nan", errOf(Constant(baseLR(math.NaN()))), []string{"Constant", "NaN"}},
		{"step ok", errOf(StepLR(baseLR(0.1), 3, 0.5)), nil},
		{"step base", errOf(StepLR(baseLR(-0.1), 3, 0.5)), []string{"StepLR", "-0.1"}},
		{"step size", errOf(StepLR(baseLR(0.1), 0, 0.5)), []string{"StepLR", "stepSize", "found 0"}},
		{"step gamma 0", errOf(StepLR(baseLR(0.1), 3, 0)), []string{"StepLR", "gamma", "found 0"}},
		{"step gamma > 1", errOf(StepLR(baseLR(0.1), 3, 1.5)), []string{"StepLR", "gamma", "1.5"}},
		{"multistep ok", errOf(MultiStepLR(baseLR(0.1), []int{2, 5}, 0.1)), nil},
		{"multistep empty", errOf(MultiStepLR(baseLR(0.1), nil, 0.1)), []string{"MultiStepLR", "milestones", "non-empty"}},
		{"multistep zero", errOf(MultiStepLR(baseLR(0.1), []int{0, 5}, 0.1)), []string{"milestones[0]", "found 0"}},
		{"multistep order", errOf(MultiStepLR(baseLR(0.1), []int{5, 5}, 0.1)), []string{"milestones[1]", "must increase", "found 5"}},
		{"multistep gamma", errOf(MultiStepLR(baseLR(0.1), []int{5}, -1)), []string{"gamma", "-1"}},
		{"cosine ok", errOf(CosineLR(baseLR(0.1), 10, 0)), nil},
		{"cosine tmax", errOf(CosineLR(baseLR(0.1), 0, 0)), []string{"CosineLR", "tMax", "found 0"}},
		{"cosine etamin", errOf(CosineLR(baseLR(0.1), 10, 0.2)), []string{"CosineLR", "etaMin", "0.2"}},
		{"cosine etamin negative", errOf(CosineLR(baseLR(0.1), 10, -0.01)), []string{"etaMin", "-0.01"}},
		{"warmup ok", errOf(WarmupLR(0.1, 4, constant)), nil},
		{"warmup factor 0", errOf(WarmupLR(0, 4, constant)), []string{"WarmupLR", "startFactor", "found 0"}},
		{"warmup factor > 1", errOf(WarmupLR(1.5, 4, constant)), []string{"startFactor", "1.5"}},
		{"warmup epochs", errOf(WarmupLR(0.1, 0, constant)), []string{"warmupEpochs", "found 0"}},
		{"warmup nil", errOf(WarmupLR(0.1, 4, nil)), []string{"WarmupLR", "nil"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assertErrorContains(t, c.err, c.substr)
		})
	}
}

func TestScheduleClosedForms(t *testing.T) {
	t.Parallel()
	must := func(s Schedule, err error) Schedule {
		require.NoError(t, err)
		return s
	}
	cosine := must(CosineLR(baseLR(1), 4, 0))
	cases := []struct {
		name string
		s    Schedule
		want []float64
	}{
		{"constant", must(Constant(baseLR(0.3))), []float64{0.3, 0.3, 0.3}},
		{"step", must(StepLR(baseLR(1), 2, 0.5)), []float64{1, 1, 0.5, 0.5, 0.25}},
		{"multistep", must(MultiStepLR(baseLR(1), []int{1, 3}, 0.1)), []float64{1, 0.1, 0.1, 0.01, 0.01}},
		{"cosine past tMax rises", cosine, []float64{1, (1 + math.Sqrt2/2) / 2, 0.5, (1 - math.Sqrt2/2) / 2, 0, (1 - math.Sqrt2/2) / 2}},
		{"warmup then cosine", must(WarmupLR(0.5, 2, cosine)), []float64{0.5, 0.75, 1, (1 + math.Sqrt2/2) / 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for e, w := range c.want {
				assert.InDelta(t, w, c.s.LR(e), 1e-15, "epoch %d", e)
			}
			assert.Panics(t, func() { c.s.LR(-1) })
		})
	}
}

// baseLR is a base learning rate for building schedules without an
// optimizer.
type baseLR float64

func (b baseLR) BaseLR() float64 { return float64(b) }

func TestScheduleReadsTheOptimizersRate(t *testing.T) {
	p := []*autograd.Param{autograd.NewParam("p", tensor.Zeros(1))}
	opt, err := NewSGD(p, SGDConfig{LR: 0.2})
	require.NoError(t, err)
	s, err := StepLR(opt, 1, 0.5)
	require.NoError(t, err)
	opt.SetLR(0.05) // a rate set later does not change the schedule's base
	assert.Equal(t, 0.2, opt.BaseLR())
	assert.Equal(t, 0.1, s.LR(1))
	Apply(opt, s, 2)
	assert.Equal(t, 0.05, opt.LR())
	assert.Equal(t, 0.2, opt.BaseLR())
}
