package liveness

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/local"
	"github.com/hora-dl/hora/tensor"
)

// startAll starts a monitor on each of n goroutine ranks; lost receives
// what each rank's OnLost was called with.
func startAll(t *testing.T, n int, timeout time.Duration) ([]*Monitor, []chan error) {
	t.Helper()
	return startAllConfig(t, n, Config{Timeout: timeout})
}

// startAllConfig is startAll with the monitors' config (cfg.OnLost is
// replaced).
func startAllConfig(t *testing.T, n int, cfg Config) ([]*Monitor, []chan error) {
	t.Helper()
	mons := make([]*Monitor, n)
	lost := make([]chan error, n)
	for r := range lost {
		lost[r] = make(chan error, 1)
	}
	var mu sync.Mutex
	errs := local.Run(n, func(c dist.Communicator) error {
		cfg := cfg
		cfg.OnLost = func(err error) { lost[c.Rank()] <- err }
		m, err := Start(context.Background(), c, cfg)
		mu.Lock()
		mons[c.Rank()] = m
		mu.Unlock()
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: Start: %v", r, err)
		}
	}
	return mons, lost
}

func TestQuietWhileAlive(t *testing.T) {
	mons, lost := startAll(t, 3, 500*time.Millisecond)
	time.Sleep(1500 * time.Millisecond) // three timeouts
	for r, m := range mons {
		select {
		case err := <-lost[r]:
			t.Errorf("rank %d reported a loss while every rank was alive: %v", r, err)
		default:
		}
		m.Close()
	}
	// A clean Close on every rank is not a loss either.
	time.Sleep(100 * time.Millisecond)
	for r := range mons {
		select {
		case err := <-lost[r]:
			t.Errorf("rank %d reported a loss after Close: %v", r, err)
		default:
		}
	}
}

func TestSilentRankIsLost(t *testing.T) {
	mons, lost := startAll(t, 3, 400*time.Millisecond)
	defer func() {
		for _, m := range mons {
			m.Close()
		}
	}()
	start := time.Now()
	mons[2].mute.Store(true) // rank 2 stops, as under SIGSTOP
	for _, r := range []int{0, 1} {
		select {
		case err := <-lost[r]:
			var le *LostError
			if !errors.As(err, &le) || le.Rank != 2 || le.Closed {
				t.Fatalf("rank %d: got %v, want rank 2 silent", r, err)
			}
			if le.Host == "" {
				t.Errorf("rank %d: the error names no host: %v", r, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("rank %d did not notice rank 2's silence", r)
		}
	}
	// The silence counts from the last heartbeat, up to one interval
	// (40ms) before the mute.
	if d := time.Since(start); d < 350*time.Millisecond || d > 2*time.Second {
		t.Errorf("the loss was reported after %v, want about the 400ms timeout", d)
	}
}

func TestDeadRankIsLost(t *testing.T) {
	mons, lost := startAll(t, 2, 5*time.Second)
	defer mons[0].Close()
	mons[1].closeConns() // rank 1's process ends: no goodbye
	select {
	case err := <-lost[0]:
		var le *LostError
		if !errors.As(err, &le) || le.Rank != 1 || !le.Closed {
			t.Fatalf("got %v, want rank 1 closed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("rank 0 did not notice that rank 1 died (well before the 5s timeout)")
	}
	mons[1].Close()
}

func TestSingleRank(t *testing.T) {
	m, err := Start(context.Background(), dist.Single(), Config{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(context.Background(), dist.Single(), Config{}); err == nil {
		t.Error("Start accepted a zero timeout")
	}
}

func TestSilent(t *testing.T) {
	mons, lost := startAllConfig(t, 3, Config{Timeout: 5 * time.Second, Interval: 50 * time.Millisecond})
	defer func() {
		for _, m := range mons {
			m.Close()
		}
	}()
	time.Sleep(200 * time.Millisecond)
	for r, m := range mons {
		assert.Empty(t, m.Silent(0), "rank %d: every rank sends heartbeats", r)
	}
	mons[2].mute.Store(true) // rank 2 stops, as under SIGSTOP
	time.Sleep(400 * time.Millisecond)
	host, _ := os.Hostname()
	for _, r := range []int{0, 1} {
		silent := mons[r].Silent(200 * time.Millisecond)
		require.Len(t, silent, 1, "rank %d", r)
		assert.Equal(t, 2, silent[0].Rank)
		assert.Equal(t, host, silent[0].Host)
		assert.GreaterOrEqual(t, silent[0].Silent, 300*time.Millisecond, "silent since the last heartbeat, at most an interval before the mute")
		assert.Empty(t, mons[r].Silent(2*time.Second), "rank %d: not silent that long", r)
	}
	assert.Empty(t, mons[2].Silent(0), "rank 2 still hears the others")
	for r := range lost {
		select {
		case err := <-lost[r]:
			t.Errorf("rank %d: lost %v within the timeout", r, err)
		default:
		}
	}
	one, err := Start(context.Background(), dist.Single(), Config{Timeout: time.Second})
	require.NoError(t, err)
	assert.Empty(t, one.Silent(0))
	one.Close()
}

// TestEngineNamesSilentRank runs engines with their monitor as Peers:
// when rank 2 stops (its heartbeats and its engine), the engines of the
// others warn naming it, with its host, and stop with a *dist.StallError
// long before the monitors' timeout.
func TestEngineNamesSilentRank(t *testing.T) {
	const n = 3
	mons, lost := startAllConfig(t, n, Config{Timeout: 10 * time.Second, Interval: 20 * time.Millisecond})
	defer func() {
		for _, m := range mons {
			m.Close()
		}
	}()
	host, _ := os.Hostname()
	var logs [n]strings.Builder
	var logMu sync.Mutex
	opErrs := make([]error, n)
	var ready, failed sync.WaitGroup
	ready.Add(n)
	failed.Add(n - 1)
	done := make(chan []error, 1)
	go func() {
		done <- local.Run(n, func(c dist.Communicator) error {
			r := c.Rank()
			cfg := dist.EngineConfig{StallWarning: 200 * time.Millisecond, StallShutdown: time.Second,
				Peers: mons[r], Log: lockedWriter{&logMu, &logs[r]}}
			if r == 2 {
				cfg.StallWarning = -1 // stopped below: its engine does nothing more
			}
			e, err := dist.NewEngine(c, cfg)
			if err != nil {
				return err
			}
			if err := e.Allreduce(context.Background(), "first", tensor.Zeros(2), dist.Sum); err != nil {
				return err
			}
			ready.Done()
			ready.Wait()
			if r == 2 {
				mons[2].mute.Store(true)
				failed.Wait()
				e.Close()
				return nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			opErrs[r] = e.Allreduce(ctx, "grad", tensor.Zeros(3), dist.Sum)
			failed.Done()
			failed.Wait()
			e.Close()
			return nil
		})
	}()
	select {
	case errs := <-done:
		require.NoError(t, errors.Join(errs...))
	case <-time.After(8 * time.Second):
		t.Fatal("the ranks did not return")
	}
	want := "not answering: rank 2 on host " + host + " (silent for "
	for _, r := range []int{0, 1} {
		var se *dist.StallError
		require.ErrorAs(t, opErrs[r], &se, "rank %d", r)
		assert.Contains(t, se.Report, want, "rank %d", r)
	}
	logMu.Lock()
	defer logMu.Unlock()
	t.Logf("rank 0's log:\n%s", logs[0].String())
	assert.Contains(t, logs[0].String(), "dist: stall: rank 0 has waited ")
	assert.Contains(t, logs[0].String(), want)
	assert.Empty(t, logs[1].String(), "rank 0 reports")
	for r := range lost {
		select {
		case err := <-lost[r]:
			t.Errorf("rank %d: lost %v within the timeout", r, err)
		default:
		}
	}
}

// lockedWriter serializes the writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
