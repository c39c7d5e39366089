package shm_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/disttest"
	"github.com/hora-dl/hora/dist/local"
	"github.com/hora-dl/hora/dist/shm"
)

// counted counts the Allreduce calls made on a communicator.
type counted struct {
	dist.Communicator
	calls *atomic.Int64
}

func (c counted) Allreduce(ctx context.Context, b device.Buffer, op dist.ReduceOp) error {
	c.calls.Add(1)
	return c.Communicator.Allreduce(ctx, b, op)
}

// fakeCluster is a group of ranks over dist/local laid out as hosts[h]
// ranks on host h, numbered host after host, with the communicators
// Arrange makes over MPI: the world, one per host, and one between the
// hosts per host rank below the fewest ranks any host holds.
type fakeCluster struct {
	levels     []shm.Levels
	worldCalls atomic.Int64 // Allreduce calls on the world communicators
	crossCalls atomic.Int64 // and on the ones between hosts
}

func newFakeCluster(t testing.TB, hosts ...int) *fakeCluster {
	t.Helper()
	fc := &fakeCluster{}
	total, fewest := 0, hosts[0]
	for _, n := range hosts {
		total += n
		fewest = min(fewest, n)
	}
	world, err := local.New(total)
	require.NoError(t, err)
	cross := make([][]dist.Communicator, fewest)
	for j := range cross {
		cross[j], err = local.New(len(hosts))
		require.NoError(t, err)
	}
	for h, n := range hosts {
		host, err := local.New(n)
		require.NoError(t, err)
		for j := range n {
			l := shm.Levels{World: counted{world[len(fc.levels)], &fc.worldCalls}, Host: host[j], Shares: fewest}
			if j < fewest {
				l.Cross = counted{cross[j][h], &fc.crossCalls}
			}
			fc.levels = append(fc.levels, l)
		}
	}
	return fc
}

// wrap makes every rank's hierarchical communicator.
func (fc *fakeCluster) wrap(t testing.TB, segment int) []dist.Communicator {
	t.Helper()
	out := make([]dist.Communicator, len(fc.levels))
	errs := make([]error, len(fc.levels))
	var wg sync.WaitGroup
	for r, l := range fc.levels {
		wg.Go(func() { out[r], errs[r] = shm.WrapHierarchical(context.Background(), l, segment) })
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

func TestHierarchicalConformance(t *testing.T) {
	for _, tc := range []struct {
		hosts   []int
		segment int
	}{
		{[]int{2, 2}, 0},
		{[]int{2, 2}, 1 << 20}, // pieces of 256 KiB: the large cases go in many
		{[]int{3, 1}, 0},       // one share per piece: host 0's leader reduces it across
		{[]int{2, 3}, 1 << 20}, // host 1's third rank owns no share
	} {
		t.Run(fmt.Sprintf("hosts=%v/segment=%d", tc.hosts, tc.segment), func(t *testing.T) {
			comms := newFakeCluster(t, tc.hosts...).wrap(t, tc.segment)
			disttest.RunAll(t, len(comms), func(c disttest.Case) []error {
				return onAll(comms, func(cc dist.Communicator) error { return c.Run(context.Background(), cc) })
			})
		})
	}
}

// TestHierarchicalReducesAcrossHosts checks that float32, float64 and
// int64 reductions go through the communicators between hosts, not the
// world's, that each piece crosses once per share, and that the
// communicator reports the world's ranks and its layout.
func TestHierarchicalReducesAcrossHosts(t *testing.T) {
	fc := newFakeCluster(t, 2, 2, 2)
	comms := fc.wrap(t, 1<<20) // slots of 256 KiB
	for r, c := range comms {
		assert.Equal(t, r, c.Rank())
		assert.Equal(t, 6, c.Size())
		assert.Equal(t, r%2, c.LocalRank())
		assert.Equal(t, 2, c.LocalSize())
		assert.Equal(t, shm.Layout{Hosts: 3, Fewest: 2, Most: 2}, c.(interface{ Layout() shm.Layout }).Layout())
	}
	fc.worldCalls.Store(0)
	const n = 3 * 256 << 10 / 4 // three pieces of float32
	errs := onAll(comms, func(c dist.Communicator) error {
		b, _ := cpu.Default().Alloc(device.Float32, n)
		x := b.(*cpu.Buffer).Float32s()
		for i := range x {
			x[i] = float32(c.Rank()*1000 + i%7)
		}
		if err := c.Allreduce(context.Background(), b, dist.Average); err != nil {
			return err
		}
		for i, v := range x {
			if want := float32(2500 + i%7); v != want {
				return fmt.Errorf("rank %d: element %d = %v, want %v", c.Rank(), i, v, want)
			}
		}
		return nil
	})
	require.NoError(t, errors.Join(errs...))
	assert.Zero(t, fc.worldCalls.Load(), "the world's communicator reduces nothing")
	// 3 pieces × 2 shares × 3 hosts.
	assert.Equal(t, int64(18), fc.crossCalls.Load(), "calls between hosts")

	// Float16 is not reduced in shared memory: the world does it.
	errs = onAll(comms, func(c dist.Communicator) error {
		b, _ := cpu.Default().Alloc(device.Float16, 8)
		return c.Allreduce(context.Background(), b, dist.Sum)
	})
	require.NoError(t, errors.Join(errs...))
	assert.Equal(t, int64(6), fc.worldCalls.Load())
}

// TestHierarchicalRankError checks that a rank that closes makes the
// ranks of its host that wait for it fail with its world rank.
func TestHierarchicalRankError(t *testing.T) {
	comms := newFakeCluster(t, 2, 2).wrap(t, 0)
	errs := onAll(comms[2:], func(c dist.Communicator) error {
		if c.Rank() == 3 {
			return c.Close()
		}
		b, _ := cpu.Default().Alloc(device.Float32, 1000)
		return c.Allreduce(context.Background(), b, dist.Sum)
	})
	var re *dist.RankError
	require.ErrorAs(t, errs[0], &re)
	assert.Equal(t, 3, re.Rank, "the world rank of the rank that closed")
}

func TestHierarchicalBadLevels(t *testing.T) {
	fc := newFakeCluster(t, 2, 2)
	l := fc.levels[1]
	l.Cross = nil // host rank 1 < 2 shares must reduce across hosts
	_, err := shm.WrapHierarchical(context.Background(), l, 0)
	assert.ErrorContains(t, err, "inconsistent")
}
