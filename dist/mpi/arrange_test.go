//go:build mpi && cgo

package mpi

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/shm"
)

// arrangedComm is Init's communicator for the tests that use it, made
// once (it is not closed: that would finalize MPI for the other tests).
var arrangedComm struct {
	once sync.Once
	c    dist.Communicator
	err  error
}

// arranged returns the communicator Init gives this job.
func arranged(t *testing.T) dist.Communicator {
	t.Helper()
	arrangedComm.once.Do(func() { arrangedComm.c, arrangedComm.err = Init() })
	require.NoError(t, arrangedComm.err)
	return arrangedComm.c
}

// jobLayout returns how the job's ranks are spread over hosts.
func jobLayout(t *testing.T, c *Comm) shm.Layout {
	t.Helper()
	l, err := shm.LayoutOf(context.Background(), c, c.LocalRank(), c.LocalSize())
	require.NoError(t, err)
	return l
}

// TestArrangeModes checks the cases where Arrange leaves the MPI
// communicator alone, and its errors.
func TestArrangeModes(t *testing.T) {
	c := needComm(t)
	ctx := context.Background()
	l := jobLayout(t, c)
	if l.Hosts > 1 {
		off, err := Arrange(ctx, c, "off")
		require.NoError(t, err)
		assert.Same(t, c, off, "mode off on several hosts")
		t.Setenv(HierarchicalEnv, "0")
		got, err := Arrange(ctx, c, "on")
		require.NoError(t, err)
		assert.Same(t, c, got, "%s=0 overrides mode on", HierarchicalEnv)
		if l.Most == 1 {
			t.Setenv(HierarchicalEnv, "1")
			got, err := Arrange(ctx, c, "off")
			require.NoError(t, err)
			assert.Same(t, c, got, "one rank per host: nothing to share")
		}
	}
	t.Setenv(HierarchicalEnv, "")
	_, err := Arrange(ctx, c, "sometimes")
	assert.ErrorContains(t, err, `mode "sometimes": want auto, on or off`)
	t.Setenv(HierarchicalEnv, "yes")
	_, err = Arrange(ctx, c, "on")
	assert.ErrorContains(t, err, HierarchicalEnv+` "yes": want auto, on or off`)
	t.Setenv(HierarchicalEnv, "")
	single, err := Arrange(ctx, dist.Single(), "on")
	require.NoError(t, err)
	assert.Equal(t, "one process", Describe(single))
	if c.Size() > 1 {
		assert.Equal(t, "MPI", Describe(c))
	}
}

// TestSplit checks communicators of part of the ranks: their ranks and
// sizes, that their collectives involve only their members, and Close.
func TestSplit(t *testing.T) {
	c := needComm(t)
	ctx := context.Background()
	r, size := c.Rank(), c.Size()
	// Even and odd ranks, ranked in reverse; the last rank of 3 or more
	// joins none.
	joins := func(q int) bool { return q != size-1 || size <= 2 }
	color := r % 2
	if !joins(r) {
		color = -1
	}
	sub, err := c.Split(color, -r)
	require.NoError(t, err)
	if color < 0 {
		assert.Nil(t, sub)
	} else {
		var members []int
		for q := range size {
			if q%2 == r%2 && joins(q) {
				members = append(members, q)
			}
		}
		require.NotNil(t, sub)
		assert.Equal(t, len(members), sub.Size())
		assert.Equal(t, len(members)-1-slices.Index(members, r), sub.Rank(), "ranked by key -rank")
		b := alloc(t, device.Int64, 3*MaxPieceBytes/8/2).(*cpu.Buffer)
		for i := range b.Int64s() {
			b.Int64s()[i] = int64(r*1000 + i%5)
		}
		require.NoError(t, sub.Allreduce(ctx, b, dist.Sum))
		sum := 0
		for _, q := range members {
			sum += q * 1000
		}
		for i, v := range b.Int64s() {
			if want := int64(sum + len(members)*(i%5)); v != want {
				t.Fatalf("element %d = %d, want %d", i, v, want)
			}
		}
		require.NoError(t, sub.Barrier(ctx))
		require.NoError(t, sub.Close())
		assert.ErrorIs(t, sub.Barrier(ctx), dist.ErrClosed)
		assert.NoError(t, sub.Close(), "Close is idempotent")
	}
	host, err := c.SplitHost()
	require.NoError(t, err)
	assert.Equal(t, c.LocalSize(), host.Size())
	assert.Equal(t, c.LocalRank(), host.Rank())
	assert.Equal(t, host.Size(), host.LocalSize())
	require.NoError(t, host.Close())
	require.NoError(t, c.Barrier(ctx), "the world is still usable")
}

// TestAllreduceMany reduces buffers as one, with pieces that lie in one
// buffer (reduced in place) and pieces that span several (staged), for
// float32 sums, float16 averages and int64 maxima.
func TestAllreduceMany(t *testing.T) {
	c := needComm(t)
	ctx := context.Background()
	r, size := c.Rank(), c.Size()
	const m = 1 << 20
	// In float32 elements: pieces of 4 Mi; piece 1 lies in buffer 1, the
	// others span two or more buffers.
	lengths := []int{1000, 9 * m, 7, 0, 5*m + 1, 13}
	value := func(k, i int) int { return (i*7 + k*13) % 1000 }
	bufs := make([]device.Buffer, len(lengths))
	for k, n := range lengths {
		b := alloc(t, device.Float32, n).(*cpu.Buffer)
		for i := range b.Float32s() {
			b.Float32s()[i] = float32(value(k, i) + r)
		}
		bufs[k] = b
	}
	require.NoError(t, c.AllreduceMany(ctx, bufs, dist.Sum))
	for k, b := range bufs {
		for i, v := range b.(*cpu.Buffer).Float32s() {
			if want := float32(size*value(k, i) + size*(size-1)/2); v != want {
				t.Fatalf("float32 buffer %d element %d = %v, want %v", k, i, v, want)
			}
		}
	}

	halves := []device.Buffer{alloc(t, device.Float16, 3*m), alloc(t, device.Float16, 6*m+5), alloc(t, device.Float16, 9)}
	for _, b := range halves {
		h := b.(*cpu.Buffer).Float16s()
		for i := range h {
			h[i] = 0x4000 // 2
		}
	}
	require.NoError(t, c.AllreduceMany(ctx, halves, dist.Average))
	for k, b := range halves {
		for i, v := range b.(*cpu.Buffer).Float16s() {
			if v != 0x4000 {
				t.Fatalf("float16 buffer %d element %d = %#x, want 2 (0x4000)", k, i, v)
			}
		}
	}

	ints := []device.Buffer{alloc(t, device.Int64, m+3), alloc(t, device.Int64, 3*m)}
	for k, b := range ints {
		for i := range b.(*cpu.Buffer).Int64s() {
			b.(*cpu.Buffer).Int64s()[i] = int64((i+k+r)%size) << 40
		}
	}
	require.NoError(t, c.AllreduceMany(ctx, ints, dist.Max))
	for k, b := range ints {
		for i, v := range b.(*cpu.Buffer).Int64s() {
			if want := int64(size-1) << 40; v != want {
				t.Fatalf("int64 buffer %d element %d = %d, want %d", k, i, v, want)
			}
		}
	}

	err := c.AllreduceMany(ctx, []device.Buffer{alloc(t, device.Float32, 2), alloc(t, device.Float64, 2)}, dist.Sum)
	assert.ErrorContains(t, err, "buffers of types float32 and float64")
}
