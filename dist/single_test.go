package dist_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/disttest"
)

func TestSingleConformance(t *testing.T) {
	t.Parallel()
	c := dist.Single()
	defer c.Close()
	disttest.RunAll(t, 1, func(cs disttest.Case) []error {
		return []error{cs.Run(context.Background(), c)}
	})
}

func TestSingle(t *testing.T) {
	t.Parallel()
	dev := cpu.Default()
	c := dist.Single()
	assert.Equal(t, []int{0, 1, 0, 1}, []int{c.Rank(), c.Size(), c.LocalRank(), c.LocalSize()})
	b, err := dev.Alloc(device.Float32, 3)
	require.NoError(t, err)
	require.NoError(t, dev.Write(b, []float32{1, 2, 3}))
	dst, err := dev.Alloc(device.Float32, 3)
	require.NoError(t, err)
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel()

	cases := []struct {
		name string
		call func() error
		want string // "" for success
	}{
		{"allreduce", func() error { return c.Allreduce(ctx, b, dist.Average) }, ""},
		{"allreduce op 0", func() error { return c.Allreduce(ctx, b, 0) }, "dist: allreduce: invalid reduce op 0"},
		{"allreduce nil", func() error { return c.Allreduce(ctx, nil, dist.Sum) }, "dist: allreduce: nil buffer"},
		{"allreduce done ctx", func() error { return c.Allreduce(done, b, dist.Sum) }, context.Canceled.Error()},
		{"broadcast", func() error { return c.Broadcast(ctx, b, 0) }, ""},
		{"broadcast root 1", func() error { return c.Broadcast(ctx, b, 1) }, "dist: broadcast: root 1 out of range [0, 1)"},
		{"broadcast root -1", func() error { return c.Broadcast(ctx, b, -1) }, "dist: broadcast: root -1 out of range [0, 1)"},
		{"broadcast done ctx", func() error { return c.Broadcast(done, b, 0) }, context.Canceled.Error()},
		{"allgather", func() error { return c.Allgather(ctx, dst, b) }, ""},
		{"allgather done ctx", func() error { return c.Allgather(done, dst, b) }, context.Canceled.Error()},
		{"barrier", func() error { return c.Barrier(ctx) }, ""},
		{"barrier done ctx", func() error { return c.Barrier(done) }, context.Canceled.Error()},
	}
	for _, tc := range cases {
		err := tc.call()
		if tc.want == "" {
			assert.NoError(t, err, tc.name)
		} else {
			assert.EqualError(t, err, tc.want, tc.name)
		}
	}
	got := make([]float32, 3)
	require.NoError(t, dev.Read(got, b))
	assert.Equal(t, []float32{1, 2, 3}, got, "the collectives leave b as it is")
	require.NoError(t, dev.Read(got, dst))
	assert.Equal(t, []float32{1, 2, 3}, got, "allgather copies src")

	c.Abort(nil) // does nothing
	require.NoError(t, c.Barrier(ctx))
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")
	for _, tc := range cases {
		assert.ErrorIs(t, tc.call(), dist.ErrClosed, tc.name)
	}
	assert.NoError(t, dist.Single().Barrier(ctx), "each Single is independent")
}

func TestSingleAllgatherFloat16(t *testing.T) {
	t.Parallel()
	dev := cpu.Default()
	src, err := dev.Alloc(device.Float16, 2)
	require.NoError(t, err)
	require.NoError(t, dev.Write(src, []uint16{0x3c00, 0xc000})) // 1, -2
	dst, err := dev.Alloc(device.Float16, 2)
	require.NoError(t, err)
	require.NoError(t, dist.Single().Allgather(context.Background(), dst, src))
	got := make([]uint16, 2)
	require.NoError(t, dev.Read(got, dst))
	assert.Equal(t, []uint16{0x3c00, 0xc000}, got)
}

func TestSamplerIndicesFrom(t *testing.T) {
	t.Parallel()
	for _, n := range []int{10, 11, 64} {
		for _, size := range []int{1, 2, 3} {
			for _, dropLast := range []bool{false, true} {
				cfg := dist.SamplerConfig{Shuffle: true, Seed: 7, DropLast: dropLast}
				for rank := range size {
					s, err := dist.NewDistributedSampler(n, rank, size, cfg)
					require.NoError(t, err)
					full := s.Indices(3)
					require.Equal(t, full, s.IndicesFrom(3, 0))
					for k := 1; k*size*2 <= len(full)*size; k++ {
						start := k * size * 2 // two samples per rank per batch
						assert.Equal(t, full[start/size:], s.IndicesFrom(3, start), "n %d size %d rank %d start %d", n, size, rank, start)
					}
				}
				// Resharding: what 2 ranks left of an epoch, 3 ranks cover
				// exactly once (padding aside).
				if !dropLast && size == 3 {
					one, _ := dist.NewDistributedSampler(n, 0, 1, cfg)
					want := map[int]bool{}
					for _, i := range one.Indices(1)[4:] {
						want[i] = true
					}
					seen := map[int]bool{}
					for rank := range 3 {
						s3, _ := dist.NewDistributedSampler(n, rank, 3, cfg)
						for _, i := range s3.IndicesFrom(1, 4) {
							seen[i] = true
						}
					}
					for i := range want {
						assert.True(t, seen[i], "3 ranks cover the rest of the epoch: sample %d", i)
					}
					assert.LessOrEqual(t, len(seen), len(want)+2, "padding adds at most size-1 samples")
				}
			}
		}
	}
}
