package dist_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/disttest"
	"github.com/hora-dl/hora/dist/local"
	"github.com/hora-dl/hora/dist/shm"
	"github.com/hora-dl/hora/tensor"
)

// runEngines runs fn on every rank of a local group, each with its own
// engine, and fails the test on any rank's error.
func runEngines(t *testing.T, n int, cfg dist.EngineConfig, fn func(e *dist.Engine) error) {
	t.Helper()
	errs := local.Run(n, func(c dist.Communicator) error {
		e, err := dist.NewEngine(c, cfg)
		if err != nil {
			return err
		}
		ferr := fn(e)
		if err := e.Close(); ferr == nil {
			ferr = err
		}
		return ferr
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
}

func TestEngineAllreduceAnyOrder(t *testing.T) {
	t.Parallel()
	for _, fusion := range []int64{0, -1, 100} {
		t.Run(fmt.Sprint("fusion=", fusion), func(t *testing.T) {
			t.Parallel()
			const n, tensors = 3, 12
			runEngines(t, n, dist.EngineConfig{FusionThreshold: fusion}, func(e *dist.Engine) error {
				r := e.Rank()
				ts := make([]*tensor.Tensor, tensors)
				hs := make([]*dist.Handle, tensors)
				// Each rank submits in its own order; shapes and views vary.
				for k := range tensors {
					i := (k + 5*r) % tensors
					if r%2 == 1 {
						i = tensors - 1 - i
					}
					base := tensor.Full(tensor.CPU(), device.Float32, float64(r+1), 2, i+1)
					ts[i] = base
					if i%3 == 0 {
						ts[i] = base.T() // a non-contiguous view
					}
					hs[i] = e.AllreduceAsync(fmt.Sprint("t", i), ts[i], dist.Sum, false)
				}
				for i, h := range hs {
					if err := h.Wait(context.Background()); err != nil {
						return err
					}
					for _, v := range ts[i].Values() {
						if v != 6 { // 1+2+3
							return fmt.Errorf("rank %d: t%d has %v, want 6", r, i, v)
						}
					}
				}
				return nil
			})
		})
	}
}

func TestEngineCompressAndTypes(t *testing.T) {
	t.Parallel()
	runEngines(t, 2, dist.EngineConfig{}, func(e *dist.Engine) error {
		r := float64(e.Rank())
		f := tensor.FromFloat32([]float32{1 + float32(r), 0.1, 1000}, 3)
		g := tensor.FromFloat64([]float64{r, 2.5}, 2)
		i := tensor.FromInt64([]int64{int64(r) * 7, -3}, 2)
		hs := []*dist.Handle{
			e.AllreduceAsync("f", f, dist.Average, true),
			e.AllreduceAsync("g", g, dist.Max, true), // compression only applies to float32
			e.AllreduceAsync("i", i, dist.Min, false),
		}
		for _, h := range hs {
			if err := h.Wait(context.Background()); err != nil {
				return err
			}
		}
		want := []float64{1.5, 0.1, 1000}
		for k, v := range f.Values() {
			if d := v - want[k]; d > 1e-3*want[k] || d < -1e-3*want[k] {
				return fmt.Errorf("f[%d] = %v, want %v within float16 precision", k, v, want[k])
			}
		}
		if got := g.Values(); got[0] != 1 || got[1] != 2.5 {
			return fmt.Errorf("g = %v", got)
		}
		if got := i.Int64s(); got[0] != 0 || got[1] != -3 {
			return fmt.Errorf("i = %v", got)
		}
		return nil
	})
}

func TestEngineBroadcastAndMetrics(t *testing.T) {
	t.Parallel()
	runEngines(t, 3, dist.EngineConfig{}, func(e *dist.Engine) error {
		x := tensor.Full(tensor.CPU(), device.Float64, float64(e.Rank()*10), 4, 3)
		if err := e.Broadcast(context.Background(), "x", x.T(), 2); err != nil {
			return err
		}
		for _, v := range x.Values() {
			if v != 20 {
				return fmt.Errorf("rank %d: broadcast gave %v, want 20", e.Rank(), v)
			}
		}
		m := []float64{float64(e.Rank()), 1}
		if err := e.AverageFloat64s(context.Background(), "metrics", m); err != nil {
			return err
		}
		if m[0] != 1 || m[1] != 1 {
			return fmt.Errorf("metrics %v, want [1 1]", m)
		}
		return nil
	})
}

func TestEngineSubmitErrors(t *testing.T) {
	t.Parallel()
	runEngines(t, 2, dist.EngineConfig{}, func(e *dist.Engine) error {
		ctx := context.Background()
		a := tensor.Zeros(3)
		arena := tensor.NewArena()
		inArena, _ := arena.FromSlice(tensor.CPU(), []float32{1}, 1)
		for _, tc := range []struct {
			h    *dist.Handle
			want string
		}{
			{e.AllreduceAsync("", a, dist.Sum, false), "empty tensor name"},
			{e.AllreduceAsync("n", nil, dist.Sum, false), "nil tensor"},
			{e.AllreduceAsync("n", a, dist.ReduceOp(9), false), "invalid reduce op"},
			{e.BroadcastAsync("n", a, 5), "root 5 out of range"},
			{e.AllreduceAsync("n", inArena, dist.Sum, false), "arena"},
			{e.AllreduceAsync(strings.Repeat("x", 2000), a, dist.Sum, false), "longer than"},
		} {
			err := tc.h.Wait(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				return fmt.Errorf("error %v, want one containing %q", err, tc.want)
			}
		}
		// Twice under one name before the first completes.
		h1 := e.AllreduceAsync("dup", tensor.Zeros(2), dist.Sum, false)
		h2 := e.AllreduceAsync("dup", tensor.Zeros(2), dist.Sum, false)
		err := h2.Wait(ctx)
		if e.Rank() == 0 && (err == nil || !strings.Contains(err.Error(), "submitted again")) {
			// On rank 0 the first may already be done when the second
			// comes (rank 1 could have been faster); only check when not.
			select {
			case <-h1.Done():
			default:
				return fmt.Errorf("duplicate submission: %v", err)
			}
		}
		return h1.Wait(ctx)
	})
}

func TestEngineMismatchFailsEveryRank(t *testing.T) {
	t.Parallel()
	runEngines(t, 3, dist.EngineConfig{}, func(e *dist.Engine) error {
		n := 5
		if e.Rank() == 2 {
			n = 4
		}
		err := e.Allreduce(context.Background(), "w", tensor.Zeros(n), dist.Sum)
		if err == nil || !strings.Contains(err.Error(), "tensor w: rank 0 submitted allreduce (sum) of 5 float32, rank 2 submitted allreduce (sum) of 4 float32") {
			return fmt.Errorf("rank %d: got %v", e.Rank(), err)
		}
		// The engines are still in step.
		x := tensor.Full(tensor.CPU(), device.Float32, 1, 2)
		if err := e.Allreduce(context.Background(), "ok", x, dist.Sum); err != nil {
			return err
		}
		if x.Values()[0] != 3 {
			return fmt.Errorf("after a mismatch: %v", x.Values())
		}
		return nil
	})
}

func TestEngineNameChangesShape(t *testing.T) {
	t.Parallel()
	// "w" is negotiated in full, gets an id, comes back with another
	// length (in full again: the id keeps the newest signature), then by
	// id, then with its first length.
	runEngines(t, 3, dist.EngineConfig{}, func(e *dist.Engine) error {
		for step, n := range []int{3, 4, 4, 3} {
			x := tensor.Full(tensor.CPU(), device.Float32, float64(e.Rank()+1), n)
			if err := e.Allreduce(context.Background(), "w", x, dist.Sum); err != nil {
				return fmt.Errorf("step %d: %w", step, err)
			}
			for i, v := range x.Values() {
				if v != 6 {
					return fmt.Errorf("step %d (length %d): element %d is %v, want 6", step, n, i, v)
				}
			}
		}
		return nil
	})
}

// syncWriter is a bytes.Buffer safe for the engine's goroutine.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func TestEngineStallWarningAndShutdown(t *testing.T) {
	// Not parallel: under the load of the parallel tests, a goroutine
	// held for longer than StallShutdown would stop the engines on a
	// blocked collective rather than on the stalled tensor.
	logs := make([]syncWriter, 3)
	start := time.Now()
	errs := local.Run(3, func(c dist.Communicator) error {
		e, err := dist.NewEngine(c, dist.EngineConfig{
			StallWarning: 100 * time.Millisecond, StallShutdown: 400 * time.Millisecond, Log: &logs[c.Rank()]})
		if err != nil {
			return err
		}
		defer e.Close()
		if c.Rank() == 1 {
			// Rank 1 never submits "fc.weight"; it waits for the shutdown.
			<-time.After(2 * time.Second)
			return e.Err()
		}
		return e.Allreduce(context.Background(), "fc.weight", tensor.Zeros(4), dist.Sum)
	})
	assert.Less(t, time.Since(start), 5*time.Second)
	for r := range 3 {
		var se *dist.StallError
		require.ErrorAs(t, errs[r], &se, "rank %d: every engine stops", r)
		assert.Contains(t, se.Report, "rank 1 has not submitted fc.weight (submitted by rank 0, 2)")
	}
	out := logs[0].String()
	assert.Contains(t, out, "dist: stall: tensors submitted by some ranks have waited")
	assert.Contains(t, out, "rank 1 has not submitted fc.weight")
	assert.Contains(t, out, "the job stops if the stall lasts 400ms")
	assert.Empty(t, logs[1].String(), "only rank 0 reports")
	assert.Empty(t, logs[2].String(), "only rank 0 reports")
}

func TestEngineRankFailureEndsOthers(t *testing.T) {
	t.Parallel()
	start := time.Now()
	boom := errors.New("data file corrupt")
	errs := local.Run(2, func(c dist.Communicator) error {
		e, err := dist.NewEngine(c, dist.EngineConfig{})
		if err != nil {
			return err
		}
		if c.Rank() == 1 {
			return boom // local.Run aborts rank 1's communicator
		}
		err = e.Allreduce(context.Background(), "g", tensor.Zeros(3), dist.Sum)
		e.Close()
		return err
	})
	assert.Less(t, time.Since(start), 3*time.Second)
	var re *dist.RankError
	require.ErrorAs(t, errs[0], &re)
	assert.Equal(t, 1, re.Rank)
	assert.ErrorIs(t, errs[1], boom)
}

func TestEngineSingleRank(t *testing.T) {
	t.Parallel()
	e, err := dist.NewEngine(dist.Single(), dist.EngineConfig{})
	require.NoError(t, err)
	x := tensor.FromFloat32([]float32{1, 2}, 2)
	require.NoError(t, e.Allreduce(context.Background(), "x", x, dist.Average))
	assert.Equal(t, []float32{1, 2}, x.Float32s())
	require.NoError(t, e.Close())
}

func TestTimeline(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	tl := dist.NewTimeline(&buf)
	// Record through an engine on rank 0 only.
	errs := local.Run(2, func(c dist.Communicator) error {
		cfg := dist.EngineConfig{}
		if c.Rank() == 0 {
			cfg.Timeline = tl
		}
		e, err := dist.NewEngine(c, cfg)
		if err != nil {
			return err
		}
		start := time.Now()
		h1 := e.AllreduceAsync("a", tensor.Zeros(2, 3).T(), dist.Sum, false)
		h2 := e.AllreduceAsync("b", tensor.Zeros(5), dist.Sum, false)
		e.Timeline().Span("phases", "backward", start, time.Now())
		if err := errors.Join(h1.Wait(context.Background()), h2.Wait(context.Background())); err != nil {
			return err
		}
		return e.Close()
	})
	require.NoError(t, errors.Join(errs...))
	require.NoError(t, tl.Close())
	var events []map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &events), buf.String())
	names := map[string]bool{}
	rows := map[string]bool{}
	for _, ev := range events {
		if ev["ph"] == "M" {
			if args, ok := ev["args"].(map[string]any); ok && args["name"] != nil {
				rows[args["name"].(string)] = true
			}
			continue
		}
		names[ev["name"].(string)] = true
	}
	for _, want := range []string{"QUEUE", "MEMCPY_IN_FUSION_BUFFER", "ALLREDUCE", "MEMCPY_OUT_FUSION_BUFFER", "backward"} {
		assert.True(t, names[want], "missing %s in %v", want, names)
	}
	for _, want := range []string{"a", "b", "phases"} {
		assert.True(t, rows[want], "missing row %s in %v", want, rows)
	}
	var nilTL *dist.Timeline
	nilTL.Span("x", "y", time.Now(), time.Now()) // a disabled timeline does nothing
	assert.NoError(t, nilTL.Close())
}

func TestEquivalenceLocal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		size     int
		opt      string
		compress bool
		passes   int
		tol      float64
		steps    int
		shm      bool
	}{
		{2, "sgd", false, 1, 1e-5, 20, false},
		{3, "sgd", false, 1, 1e-5, 20, false},
		{2, "adam", false, 1, 1e-5, 20, false},
		{3, "adam", false, 1, 1e-5, 20, false},
		{2, "sgd", false, 2, 1e-5, 20, false},
		// Through shared memory (the transport fuses the tensors itself).
		{2, "sgd", false, 1, 1e-5, 20, true},
		{3, "adam", false, 1, 1e-5, 20, true},
		// float16 gradients: one step is within float16 rounding; after
		// 20 steps the two runs drift further apart (a ReLU unit may flip).
		{2, "sgd", true, 1, 5e-2, 20, false},
		{3, "adam", true, 1, 5e-2, 20, false},
		{2, "sgd", true, 1, 1e-3, 1, false},
		{3, "adam", true, 1, 1e-3, 1, false},
	} {
		name := fmt.Sprintf("np=%d/%s/compress=%v/passes=%d/steps=%d/shm=%v", tc.size, tc.opt, tc.compress, tc.passes, tc.steps, tc.shm)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			diffs := make([]float64, tc.size)
			errs := local.Run(tc.size, func(c dist.Communicator) error {
				if tc.shm {
					w, err := shm.Wrap(context.Background(), c, 0)
					if err != nil {
						return err
					}
					c = w
				}
				d, err := disttest.Equivalence(context.Background(), c, disttest.EquivalenceConfig{
					Optimizer: tc.opt, Steps: tc.steps, Batch: 8, Compress: tc.compress, BackwardPassesPerStep: tc.passes})
				diffs[c.Rank()] = d
				return err
			})
			require.NoError(t, errors.Join(errs...))
			for r, d := range diffs {
				assert.LessOrEqual(t, d, tc.tol, "rank %d", r)
				t.Logf("rank %d: max relative difference %.3g", r, d)
			}
		})
	}
}
