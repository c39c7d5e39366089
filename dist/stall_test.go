package dist_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/local"
	"github.com/hora-dl/hora/tensor"
)

// stoppable is a communicator whose collectives can be held, as those of
// a rank stopped by SIGSTOP, or slowed down, as those of a slow rank.
type stoppable struct {
	dist.Communicator
	only string // "allreduce": hold only the allreduces; "": every collective

	mu      sync.Mutex
	gate    chan struct{} // non-nil: collectives wait for it to close
	stopped time.Time     // when stop was called
	delay   time.Duration // every collective starts this late
	once    time.Duration // the next collective starts this late
}

// stop holds the later collectives until resume.
func (s *stoppable) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate, s.stopped = make(chan struct{}), time.Now()
}

func (s *stoppable) resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
}

func (s *stoppable) slow(every, once time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay, s.once = every, once
}

// enter holds a collective as configured.
func (s *stoppable) enter(ctx context.Context, kind string) error {
	s.mu.Lock()
	gate, delay := s.gate, s.delay+s.once
	s.once = 0
	s.mu.Unlock()
	time.Sleep(delay)
	if gate == nil || (s.only != "" && kind != s.only) {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *stoppable) Allreduce(ctx context.Context, b device.Buffer, op dist.ReduceOp) error {
	if err := s.enter(ctx, "allreduce"); err != nil {
		return err
	}
	return s.Communicator.Allreduce(ctx, b, op)
}

func (s *stoppable) Broadcast(ctx context.Context, b device.Buffer, root int) error {
	if err := s.enter(ctx, "broadcast"); err != nil {
		return err
	}
	return s.Communicator.Broadcast(ctx, b, root)
}

func (s *stoppable) Allgather(ctx context.Context, dst, src device.Buffer) error {
	if err := s.enter(ctx, "allgather"); err != nil {
		return err
	}
	return s.Communicator.Allgather(ctx, dst, src)
}

// fakePeers is the PeerWatcher of a job whose stopped rank is s's.
type fakePeers struct {
	rank int
	s    *stoppable
}

func (p fakePeers) Silent(d time.Duration) []dist.SilentPeer {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	if p.s.gate == nil || time.Since(p.s.stopped) < d {
		return nil
	}
	return []dist.SilentPeer{{Rank: p.rank, Host: fmt.Sprint("node", p.rank), Silent: time.Since(p.s.stopped)}}
}

// TestEngineStoppedRank stops one rank of three after a first allreduce,
// as SIGSTOP would (its engine does nothing more): the others' engines,
// blocked in a collective it never joins, warn after StallWarning (naming
// the rank when the engine has Peers) and fail their operations with a
// *StallError after StallShutdown, and Close returns.
//
// The timing tests of this file do not run beside the package's parallel
// tests, whose load can hold a goroutine for longer than StallShutdown.
func TestEngineStoppedRank(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stopped int    // the rank that stops
		only    string // the collective it stops in: "" any (a negotiation round)
		peers   bool   // the engines have a PeerWatcher
		printer int    // the rank that prints the warning
		want    string // in the warning and in every running rank's error
	}{
		{"no peers", 2, "", false, 0,
			"for the other ranks in a negotiation round; some rank has not joined it (stopped, or its host unreachable)"},
		{"peers", 2, "", true, 0,
			"for the other ranks in a negotiation round; not answering: rank 2 on host node2 (silent for "},
		{"rank 0 stops", 0, "", true, 1,
			"for the other ranks in a negotiation round; not answering: rank 0 on host node0 (silent for "},
		{"in allreduce", 2, "allreduce", true, 0,
			"for the other ranks in the allreduce of grad; not answering: rank 2 on host node2 (silent for "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const n = 3
			logs := make([]syncWriter, n)
			comms := make([]*stoppable, n)
			for r := range comms {
				comms[r] = &stoppable{only: tc.only}
			}
			opErrs := make([]error, n)
			waited := make([]time.Duration, n)
			closeErrs := make([]error, n)
			var ready, failed sync.WaitGroup // after the first allreduce; after the running ranks' failure
			ready.Add(n)
			failed.Add(n - 1)
			errs := runWithin(t, 10*time.Second, n, func(c dist.Communicator) error {
				r := c.Rank()
				s := comms[r]
				s.Communicator = c
				cfg := dist.EngineConfig{StallWarning: 100 * time.Millisecond, StallShutdown: 500 * time.Millisecond, Log: &logs[r]}
				if tc.peers {
					cfg.Peers = fakePeers{tc.stopped, comms[tc.stopped]}
				}
				if r == tc.stopped {
					cfg.StallWarning = -1 // a stopped process does not watch either
				}
				e, err := dist.NewEngine(s, cfg)
				if err != nil {
					return err
				}
				if err := e.Allreduce(context.Background(), "first", tensor.Zeros(2), dist.Sum); err != nil {
					return fmt.Errorf("before the stop: %w", err)
				}
				ready.Done()
				ready.Wait()
				if r == tc.stopped {
					s.stop()
					if tc.only != "" {
						// It negotiates grad, then stops in its allreduce.
						h := e.AllreduceAsync("grad", tensor.Zeros(3), dist.Sum, false)
						e.Flush()
						defer h.Wait(context.Background())
					}
					failed.Wait() // then it comes back
					s.resume()
					e.Close()
					return nil
				}
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				opErrs[r] = e.Allreduce(ctx, "grad", tensor.Zeros(3), dist.Sum)
				waited[r] = time.Since(start)
				failed.Done()
				failed.Wait() // a rank that returns closes its communicator: the others would see that
				closed := make(chan error, 1)
				go func() { closed <- e.Close() }()
				select {
				case closeErrs[r] = <-closed:
				case <-time.After(3 * time.Second):
					closeErrs[r] = errors.New("Close did not return")
				}
				return nil
			})
			require.NoError(t, errors.Join(errs...))
			for r := range n {
				if r == tc.stopped {
					continue
				}
				var se *dist.StallError
				require.ErrorAs(t, opErrs[r], &se, "rank %d", r)
				assert.Contains(t, se.Error(), "dist: stall shutdown after ")
				assert.Contains(t, se.Report, fmt.Sprintf("rank %d has waited ", r))
				assert.Contains(t, se.Report, tc.want, "rank %d", r)
				assert.GreaterOrEqual(t, se.Waited, 500*time.Millisecond, "rank %d", r)
				assert.Less(t, waited[r], 3*time.Second, "rank %d", r)
				var closeStall *dist.StallError
				assert.ErrorAs(t, closeErrs[r], &closeStall, "rank %d: Close", r)
			}
			for r := range n {
				out := logs[r].String()
				if r != tc.printer {
					assert.NotContains(t, out, "has waited", "rank %d: only rank %d warns", r, tc.printer)
					continue
				}
				t.Logf("rank %d's log:\n%s", r, out)
				assert.Contains(t, out, fmt.Sprintf("dist: stall: rank %d has waited ", r))
				assert.Contains(t, out, tc.want)
				assert.Contains(t, out, "dist: the job stops if the wait lasts 500ms")
			}
		})
	}
}

// TestEngineSlowRank slows one rank down: every collective of it starts
// 20ms late, for longer in all than StallShutdown, and one starts 300ms
// late, beyond StallWarning: rank 0 warns about that one, but nothing
// fails.
func TestEngineSlowRank(t *testing.T) {
	const n = 3
	logs := make([]syncWriter, n)
	start := time.Now()
	errs := runWithin(t, 20*time.Second, n, func(c dist.Communicator) error {
		s := &stoppable{Communicator: c}
		e, err := dist.NewEngine(s, dist.EngineConfig{
			StallWarning: 100 * time.Millisecond, StallShutdown: time.Second, Log: &logs[c.Rank()]})
		if err != nil {
			return err
		}
		if err := e.Allreduce(context.Background(), "first", tensor.Zeros(2), dist.Sum); err != nil {
			return err
		}
		for step := range 40 {
			if c.Rank() == 2 {
				switch step {
				case 0:
					s.slow(20*time.Millisecond, 0)
				case 20:
					s.slow(20*time.Millisecond, 300*time.Millisecond)
				}
			}
			x := tensor.Full(tensor.CPU(), device.Float32, 1, 4)
			if err := e.Allreduce(context.Background(), "grad", x, dist.Sum); err != nil {
				return fmt.Errorf("step %d: %w", step, err)
			}
			if x.Values()[0] != n {
				return fmt.Errorf("step %d: %v", step, x.Values())
			}
		}
		return e.Close()
	})
	require.NoError(t, errors.Join(errs...))
	assert.Greater(t, time.Since(start), time.Second, "the slow steps take longer than StallShutdown in all")
	out := logs[0].String()
	t.Logf("rank 0's log:\n%s", out)
	assert.Contains(t, out, "dist: stall: rank 0 has waited ", "the 300ms wait is reported")
	assert.Contains(t, out, "some rank has not joined it")
	assert.NotContains(t, logs[1].String(), "has waited", "only rank 0 warns")
}

// runWithin is local.Run that fails the test, rather than hanging, when
// the ranks do not all return within limit.
func runWithin(t *testing.T, limit time.Duration, n int, fn func(c dist.Communicator) error) []error {
	t.Helper()
	done := make(chan []error, 1)
	go func() { done <- local.Run(n, fn) }()
	select {
	case errs := <-done:
		return errs
	case <-time.After(limit):
		t.Fatalf("the ranks did not return within %v", limit)
		return nil
	}
}
