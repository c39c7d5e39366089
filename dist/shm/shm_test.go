package shm_test

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
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/disttest"
	"github.com/hora-dl/hora/dist/local"
	"github.com/hora-dl/hora/dist/shm"
)

// wrapped returns n local ranks wrapped in shared memory of the given
// size (small segments make large buffers go in several pieces).
func wrapped(t testing.TB, n, segment int) []dist.Communicator {
	t.Helper()
	comms, err := local.New(n)
	require.NoError(t, err)
	out := make([]dist.Communicator, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range comms {
		wg.Go(func() { out[r], errs[r] = shm.Wrap(context.Background(), comms[r], segment) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	t.Cleanup(func() {
		for _, c := range out {
			c.Close()
		}
	})
	return out
}

// onAll runs fn on every rank and returns the errors.
func onAll(comms []dist.Communicator, fn func(c dist.Communicator) error) []error {
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() { errs[r] = fn(c) })
	}
	wg.Wait()
	return errs
}

func TestConformance(t *testing.T) {
	for _, n := range []int{2, 3} {
		for _, segment := range []int{0, 1 << 20} {
			t.Run(fmt.Sprintf("ranks=%d/segment=%d", n, segment), func(t *testing.T) {
				comms := wrapped(t, n, segment)
				disttest.RunAll(t, n, func(c disttest.Case) []error {
					return onAll(comms, func(cc dist.Communicator) error { return c.Run(context.Background(), cc) })
				})
			})
		}
	}
}

func TestSingleRankIsUnwrapped(t *testing.T) {
	c := dist.Single()
	w, err := shm.Wrap(context.Background(), c, 0)
	require.NoError(t, err)
	assert.Same(t, c, w)
}

func TestAbortAndCloseWakeWaitingRanks(t *testing.T) {
	for _, how := range []string{"abort", "close"} {
		t.Run(how, func(t *testing.T) {
			comms := wrapped(t, 3, 0)
			start := time.Now()
			errs := onAll(comms, func(c dist.Communicator) error {
				if c.Rank() == 2 {
					time.Sleep(50 * time.Millisecond)
					if how == "abort" {
						c.Abort(errors.New("bad data"))
					} else {
						c.Close()
					}
					return nil
				}
				b, _ := cpu.Default().Alloc(device.Float32, 1000)
				return c.Allreduce(context.Background(), b, dist.Sum)
			})
			assert.Less(t, time.Since(start), 5*time.Second)
			for r := range 2 {
				var re *dist.RankError
				require.ErrorAs(t, errs[r], &re, "rank %d", r)
				assert.Equal(t, 2, re.Rank)
			}
		})
	}
}

func TestContextEndsWait(t *testing.T) {
	comms := wrapped(t, 2, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	b, _ := cpu.Default().Alloc(device.Float32, 10)
	err := comms[0].Allreduce(ctx, b, dist.Sum) // rank 1 never comes
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, comms[0].Allreduce(context.Background(), b, dist.Sum), dist.ErrBroken)
}

func BenchmarkAllreduce(b *testing.B) {
	for _, mb := range []int{2, 64} {
		b.Run(fmt.Sprintf("ranks=2/%dMB", mb), func(b *testing.B) {
			comms := wrapped(b, 2, 0)
			n := mb << 20 / 4
			bufs := make([]device.Buffer, 2)
			for r := range bufs {
				bufs[r], _ = cpu.Default().Alloc(device.Float32, n)
			}
			b.SetBytes(int64(n * 4))
			b.ResetTimer()
			for range b.N {
				onAll(comms, func(c dist.Communicator) error {
					return c.Allreduce(context.Background(), bufs[c.Rank()], dist.Sum)
				})
			}
		})
	}
}

func TestAllreduceMany(t *testing.T) {
	// A 1 MB segment makes the 3 × 40,000 elements go in several pieces
	// that cross the buffers' boundaries.
	comms := wrapped(t, 3, 1<<20)
	lengths := []int{40000, 1, 0, 39999, 40000}
	errs := onAll(comms, func(c dist.Communicator) error {
		bufs := make([]device.Buffer, len(lengths))
		for i, n := range lengths {
			b, _ := cpu.Default().Alloc(device.Float32, n)
			for j := range n {
				b.(*cpu.Buffer).Float32s()[j] = float32(c.Rank()*1000 + i*7 + j%13)
			}
			bufs[i] = b
		}
		if err := c.(dist.MultiAllreducer).AllreduceMany(context.Background(), bufs, dist.Sum); err != nil {
			return err
		}
		for i, b := range bufs {
			for j, v := range b.(*cpu.Buffer).Float32s() {
				if want := float32(3000 + 3*(i*7+j%13)); v != want {
					return fmt.Errorf("rank %d: buffer %d element %d = %v, want %v", c.Rank(), i, j, v, want)
				}
			}
		}
		return nil
	})
	require.NoError(t, errors.Join(errs...))
}

// TestCloseRightAfterLastCollective has one rank close as soon as its
// last collective returns, as a run's rank 0 does at the end of training:
// the rank still finishing that collective must not take the close for a
// rank that left before arriving.
func TestCloseRightAfterLastCollective(t *testing.T) {
	for i := range 200 {
		comms := wrapped(t, 2, 0)
		errs := onAll(comms, func(c dist.Communicator) error {
			b, _ := cpu.Default().Alloc(device.Float32, 10)
			if c.Rank() == 0 {
				time.Sleep(time.Duration(i%20) * 100 * time.Microsecond) // rank 1 waits
				err := c.Allreduce(context.Background(), b, dist.Sum)
				c.Close()
				return err
			}
			return c.Allreduce(context.Background(), b, dist.Sum)
		})
		require.NoError(t, errors.Join(errs...), "round %d", i)
	}
}
