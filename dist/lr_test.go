package dist_test

import (
	"context"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/local"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// TestLearningRateComposition checks that the rate applied at each step
// is the schedule's rate times the world-size factor, ramped over the
// warm-up, that LR reports the rate applied, and that the state dict
// keeps the schedule's rate (so a resume on another number of ranks
// scales it anew).
func TestLearningRateComposition(t *testing.T) {
	const ranks, warmup = 4, 2
	comms, err := local.New(ranks)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			e, err := dist.NewEngine(c, dist.EngineConfig{})
			if !assert.NoError(t, err) {
				return
			}
			defer e.Close()
			w := autograd.NewParam("w", tensor.Zeros(1))
			inner, err := optim.NewSGD([]*autograd.Param{w}, optim.SGDConfig{LR: 0.1})
			require.NoError(t, err)
			d, err := dist.NewDistributedOptimizer(ctx, inner, e, dist.OptimizerConfig{Scaling: dist.ScaleSqrt, WarmupSteps: warmup})
			require.NoError(t, err)
			sched, err := optim.StepLR(d, 1, 0.5) // reads the base rate through d
			require.NoError(t, err)
			full := math.Sqrt(ranks)
			for step := range 4 {
				optim.Apply(d, sched, step)
				factor := full
				if step < warmup {
					factor = 1 + (full-1)*float64(step)/warmup
				}
				want := 0.1 * math.Pow(0.5, float64(step)) * factor
				assert.InDelta(t, want, d.LR(), 1e-15, "rank %d step %d: LR reports the applied rate", r, step)
				assert.InDelta(t, want, inner.LR(), 1e-15, "rank %d step %d: the inner optimizer applies it", r, step)
				assert.Equal(t, 0.1, d.BaseLR())
				assert.InDelta(t, 0.1*math.Pow(0.5, float64(step)), d.ScheduledLR(), 1e-15, "the schedule's rate, before the factor")
				w.Grad = tensor.FromFloat32([]float32{1}, 1)
				require.NoError(t, d.Step())
				d.ZeroGrad()
			}
			sd := d.StateDict()
			assert.InDelta(t, 0.1*math.Pow(0.5, 3), sd[optim.LRKey].Item(), 1e-15, "the state keeps the schedule's rate")
		}()
	}
	wg.Wait()
}
