package disttest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
)

// TestHalfCodec cross-checks the suite's own half encoder and decoder
// with the CPU device's converters.
func TestHalfCodec(t *testing.T) {
	t.Parallel()
	const lim = 1 << 17 // units: values in [-32768, 32768)
	vals := make([]float32, 2*lim)
	for k := range vals {
		vals[k] = float32(k-lim) / 4
	}
	halves := make([]uint16, len(vals))
	cpu.Float32ToFloat16(halves, vals)
	back := make([]float32, len(vals))
	cpu.Float16ToFloat32(back, halves)
	for k, v := range vals {
		if back[k] != v {
			continue // not a half: halfBits rejects it
		}
		if halfBits(int64(k-lim)) != halves[k] {
			require.Equal(t, halves[k], halfBits(int64(k-lim)), "%v", v)
		}
	}
	assert.Panics(t, func() { halfBits(1<<19 + 1) }, "not a half")
	assert.Panics(t, func() { halfBits(1 << 20) }, "too large")

	all := make([]uint16, 1<<16)
	for h := range all {
		all[h] = uint16(h)
	}
	want := make([]float32, len(all))
	cpu.Float16ToFloat32(want, all)
	for h, w := range want {
		got := halfValue(uint16(h))
		if math.IsNaN(float64(w)) {
			assert.True(t, math.IsNaN(got), "%#04x", h)
			continue
		}
		if math.Float64bits(got) != math.Float64bits(float64(w)) {
			require.Equal(t, float64(w), got, "%#04x", h)
		}
	}
}

// TestValues checks the properties the cases rely on: exact Float16
// values, Averages that divide exactly, rank-dependent values.
func TestValues(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1, 2, 3, 4, 7, 64} {
		g := divisible(size)
		for i := range 5000 {
			sum := int64(0)
			for r := range size {
				v := g(r, i)
				halfBits(v) // panics unless exact in half
				sum += v
			}
			require.Zero(t, sum%int64(size), "size %d index %d", size, i)
			for _, op := range []dist.ReduceOp{dist.Sum, dist.Min, dist.Max} {
				halfBits(reduced(op, std(device.Float16), size)(i))
			}
			halfBits(reduced(dist.Average, g, size)(i))
		}
	}
	// Rank-dependent, with many distinct values.
	seen := map[int64]bool{}
	g := std(device.Int64)
	for i := range 1000 {
		assert.NotEqual(t, [3]int64{g(0, i), g(1, i), g(2, i)}, [3]int64{g(0, i), g(0, i), g(0, i)}, "index %d", i)
		seen[g(0, i)] = true
	}
	assert.Greater(t, len(seen), 50)
	// The period is prime.
	for d := 2; d*d <= period; d++ {
		require.NotZero(t, period%d)
	}
}
