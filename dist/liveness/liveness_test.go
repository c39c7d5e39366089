package liveness

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/local"
)

// startAll starts a monitor on each of n goroutine ranks; lost receives
// what each rank's OnLost was called with.
func startAll(t *testing.T, n int, timeout time.Duration) ([]*Monitor, []chan error) {
	t.Helper()
	mons := make([]*Monitor, n)
	lost := make([]chan error, n)
	for r := range lost {
		lost[r] = make(chan error, 1)
	}
	var mu sync.Mutex
	errs := local.Run(n, func(c dist.Communicator) error {
		m, err := Start(context.Background(), c, Config{Timeout: timeout, OnLost: func(err error) { lost[c.Rank()] <- err }})
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
