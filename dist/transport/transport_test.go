package transport_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/local"
	"github.com/hora-dl/hora/dist/transport"
)

func TestGuard(t *testing.T) {
	t.Parallel()
	comms, err := local.New(3)
	require.NoError(t, err)
	dev := cpu.Default()
	alloc := func(dt device.DType, n int) device.Buffer {
		b, err := dev.Alloc(dt, n)
		require.NoError(t, err)
		return b
	}
	f32, f32x3 := alloc(device.Float32, 2), alloc(device.Float32, 6)
	broken := errors.New("broken")
	var whats []string
	state := func(what string) error { whats = append(whats, what); return nil }
	g := transport.Guard{Comm: comms[0], State: state}

	cases := []struct {
		name string
		call func() error
		want string // "" for success
	}{
		{"allreduce", func() error { return g.Allreduce(f32, dist.Max) }, ""},
		{"allreduce op 0", func() error { return g.Allreduce(f32, 0) }, "dist: allreduce: invalid reduce op 0"},
		{"allreduce many", func() error { return g.AllreduceMany([]device.Buffer{f32, f32x3}, dist.Sum) }, ""},
		{"allreduce many nil", func() error { return g.AllreduceMany([]device.Buffer{f32, nil}, dist.Sum) }, "dist: allreduce: nil buffer"},
		{"allreduce many none", func() error { return g.AllreduceMany(nil, 0) }, ""},
		{"broadcast", func() error { return g.Broadcast(f32, 2) }, ""},
		{"broadcast root 3", func() error { return g.Broadcast(f32, 3) }, "dist: broadcast: root 3 out of range [0, 3)"},
		{"allgather", func() error { return g.Allgather(f32x3, f32) }, ""},
		{"allgather short", func() error { return g.Allgather(f32, f32) },
			"dist: allgather: destination has 2 elements, want 6 (3 ranks × 2)"},
		{"barrier", func() error { return g.Barrier() }, ""},
	}
	for _, tc := range cases {
		err := tc.call()
		if tc.want == "" {
			assert.NoError(t, err, tc.name)
		} else {
			assert.EqualError(t, err, tc.want, tc.name)
		}
	}
	assert.Equal(t, []string{"allreduce", "allreduce", "allreduce", "allreduce", "allreduce",
		"broadcast", "broadcast", "allgather", "allgather", "barrier"}, whats)

	// The state comes first: a broken communicator fails even bad calls
	// with its own error.
	g.State = func(string) error { return broken }
	assert.ErrorIs(t, g.Allreduce(nil, 0), broken)
	assert.ErrorIs(t, g.AllreduceMany(nil, 0), broken)
	assert.ErrorIs(t, g.Broadcast(nil, -1), broken)
	assert.ErrorIs(t, g.Allgather(nil, nil), broken)
	assert.ErrorIs(t, g.Barrier(), broken)

	// No State: always usable.
	g.State = nil
	assert.NoError(t, g.Barrier())
	assert.EqualError(t, g.Broadcast(nil, 0), "dist: broadcast: nil buffer")
}

func TestCombine(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	for _, tc := range []struct {
		op      dist.ReduceOp
		acc, x  []float64
		want    []float64
		wantNaN []bool
	}{
		{dist.Sum, []float64{1, 2}, []float64{3, -5}, []float64{4, -3}, nil},
		{dist.Min, []float64{1, nan, 3}, []float64{0, 2, nan}, []float64{0, 0, 0}, []bool{false, true, true}},
		{dist.Max, []float64{1, 5, nan}, []float64{2, nan, 0}, []float64{2, 0, 0}, []bool{false, true, true}},
	} {
		transport.Combine(tc.acc, tc.x, tc.op)
		for i, v := range tc.acc {
			if tc.wantNaN != nil && tc.wantNaN[i] {
				assert.True(t, math.IsNaN(v), "%v: element %d is %v, want NaN", tc.op, i, v)
			} else {
				assert.Equal(t, tc.want[i], v, "%v: element %d", tc.op, i)
			}
		}
	}

	// float32 sums take the CPU device's vectorised loop; x may be longer
	// than acc.
	acc := []float32{1, 2, 3}
	transport.Combine(acc, []float32{0.5, 0.25, 0.125, 99}, dist.Sum)
	assert.Equal(t, []float32{1.5, 2.25, 3.125}, acc)

	ints := []int64{7, -7, 9}
	transport.Divide(ints, 2)
	assert.Equal(t, []int64{3, -3, 4}, ints, "truncated toward zero")
}
