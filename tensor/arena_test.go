package tensor_test

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// step computes a few operations from x, as a training step would.
func arenaStep(x, w *tensor.Tensor) *tensor.Tensor {
	y := tensor.MatMul(x, w.T()).Relu()
	return y.Mul(y).Sum(1, false).Reshape(-1, 1)
}

func TestArenaRecyclesBuffers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, w := tensor.RandNormal(rng, 0, 1, 8, 5), tensor.RandNormal(rng, 0, 1, 3, 5)
	want := arenaStep(x, w).Float32s()

	a := tensor.NewArena()
	first := arenaStep(x.WithArena(a), w)
	assert.Same(t, a, first.Arena(), "results carry the arena")
	assert.Equal(t, want, first.Float32s(), "an arena changes no value")
	held := a.Bytes()
	require.Positive(t, held)
	firstBuf := first.Buffer()
	a.Reset()

	second := arenaStep(x.WithArena(a), w)
	assert.Equal(t, want, second.Float32s())
	assert.Same(t, firstBuf, second.Buffer(), "the same step reuses the same buffers")
	assert.Equal(t, held, a.Bytes(), "and needs no more memory")

	assert.Nil(t, arenaStep(x, w).Arena(), "tensors without an arena never take one")
	assert.Nil(t, w.T().Arena())
}

func TestArenaStaleTensorPanics(t *testing.T) {
	a := tensor.NewArena()
	x := arange(2, 3).WithArena(a)
	y := x.AddScalar(1)
	a.Reset()
	for name, f := range map[string]func(){
		"operation": func() { y.AddScalar(1) },
		"view":      func() { y.T() },
		"input":     func() { arange(2, 3).Add(y) },
	} {
		assert.Contains(t, panicMessage(f), "used after its Arena was Reset", name)
	}
}

func TestArenaSteadyStateAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	x, w := tensor.RandNormal(rng, 0, 1, 64, 32), tensor.RandNormal(rng, 0, 1, 16, 32)
	a := tensor.NewArena()
	run := func() {
		arenaStep(x.WithArena(a), w)
		a.Reset()
	}
	run()
	// Each step allocates only small bookkeeping (the WithArena view, a
	// few shape slices), never tensor memory (4 KiB for the product alone).
	// The least of a few rounds: a garbage collection in between empties
	// sync.Pools (the GEMM's packing buffers), which then fill again.
	const runs = 20
	least := uint64(math.MaxUint64)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			run()
		}
		runtime.ReadMemStats(&after)
		least = min(least, (after.TotalAlloc-before.TotalAlloc)/runs)
	}
	assert.Less(t, least, uint64(1024), "bytes per step")
	assert.LessOrEqual(t, testing.AllocsPerRun(runs, run), 12.0)
}

func TestArenaFromSlice(t *testing.T) {
	a := tensor.NewArena()
	x, err := a.FromSlice(tensor.CPU(), []float32{1, 2, 3, 4}, 2, 2)
	require.NoError(t, err)
	assert.Same(t, a, x.Arena())
	assert.Equal(t, []float32{2, 3, 4, 5}, x.AddScalar(1).Float32s())
	_, err = a.FromSlice(tensor.CPU(), []float32{1, 2, 3}, 2, 2)
	assert.ErrorContains(t, err, "3 values do not fill shape [2 2]")
	_, err = a.FromSlice(tensor.CPU(), []int{1}, 1)
	assert.ErrorContains(t, err, "unsupported data type []int")
}

func TestEmpty(t *testing.T) {
	x := arange(2, 3)
	e := tensor.Empty(device.Int64, []int{4}, x)
	assert.Equal(t, []int{4}, e.Shape())
	assert.Equal(t, device.Int64, e.DType())
	assert.Same(t, x.Device(), e.Device())
	assert.Nil(t, e.Arena(), "no input has an arena")

	a := tensor.NewArena()
	y := tensor.Empty(device.Float64, []int{3, 2}, x, x.WithArena(a))
	assert.Same(t, a, y.Arena(), "the arena of the first input that has one")
	assert.True(t, y.IsContiguous())
	b := y.Buffer()
	a.Reset()
	assert.Same(t, b, tensor.Empty(device.Float64, []int{6}, x.WithArena(a)).Buffer(), "the arena's memory is reused")

	assert.Equal(t, "tensor: Empty needs at least one input to take the device from", panicMessage(func() { tensor.Empty(device.Float32, []int{1}) }))
}

// Release gives back memory handed out after the mark, once: the next
// result of its size reuses it, and using the released tensor panics.
func TestArenaRelease(t *testing.T) {
	a := tensor.NewArena()
	x := arange(2, 3).WithArena(a)
	before := x.AddScalar(1)
	m := a.Mark()
	y := x.AddScalar(2)
	held := a.Bytes()
	buf := y.Buffer()

	assert.False(t, before.Release(m), "handed out before the mark")
	assert.False(t, arange(2, 3).Release(m), "no arena")
	assert.False(t, x.AddScalar(3).Release(tensor.NewArena().Mark()), "another arena's mark")
	assert.True(t, y.Release(m))
	assert.False(t, y.Release(m), "already released")
	assert.Contains(t, panicMessage(func() { y.AddScalar(1) }), "after Release")

	z := x.AddScalar(4)
	assert.Same(t, buf, z.Buffer(), "the next result of the size reuses the memory")
	assert.Equal(t, []float32{4, 5, 6, 7, 8, 9}, z.Float32s())
	assert.Equal(t, []float32{1, 2, 3, 4, 5, 6}, before.Float32s(), "what was handed out before the mark is untouched")
	assert.Equal(t, held+6*4, a.Bytes(), "x+3 is the only new memory")

	// A view releases the memory of the tensor it views.
	m = a.Mark()
	w := x.AddScalar(5)
	assert.True(t, w.Reshape(3, 2).Release(m))
	assert.Same(t, w.Buffer(), x.AddScalar(6).Buffer())

	a.Reset()
	assert.Equal(t, held+2*6*4, a.Bytes(), "x+3 and x+5 were new; Reset keeps the memory for the next step")
}

// MatMul gives back the copies it makes of operands the GEMM cannot read
// in place: a second product reuses the first one's copy.
func TestMatMulReleasesItsCopies(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := tensor.RandNormal(rng, 0, 1, 2, 4, 3, 5)
	w := tensor.RandNormal(rng, 0, 1, 2, 5, 3, 4)
	want := tensor.MatMul(x.Permute(0, 2, 1, 3).Contiguous(), w.Permute(0, 2, 1, 3).Contiguous())
	a := tensor.NewArena()
	xa := x.WithArena(a).Permute(0, 2, 1, 3) // not contiguous: MatMul copies it
	first := tensor.MatMul(xa, w.Permute(0, 2, 1, 3))
	held := a.Bytes()
	second := tensor.MatMul(xa, w.Permute(0, 2, 1, 3))
	assert.Equal(t, held+first.Len()*4, a.Bytes(), "the second product needs memory for its result only")
	assert.Equal(t, want.Float32s(), first.Float32s())
	assert.Equal(t, want.Float32s(), second.Float32s())
	m := x.WithArena(a).Reshape(6, 20).T() // 20×6, transposed: read in place
	assert.Equal(t, tensor.MatMul(x.Reshape(6, 20).T().Contiguous(), x.Reshape(6, 20)).Float32s(),
		tensor.MatMul(m, x.Reshape(6, 20)).Float32s())
}

// A ShareSizes arena hands out the front of a larger free buffer, up to
// twice the size asked for, the most recently freed first.
func TestArenaShareSizes(t *testing.T) {
	a := tensor.NewArena()
	a.ShareSizes()
	x := arange(4, 4).WithArena(a) // 16 values, not the arena's
	m := a.Mark()
	big := x.AddScalar(1)
	bigBuf := big.Buffer()
	other := x.AddScalar(2)
	held := a.Bytes()
	require.Equal(t, 2*16*4, held)
	require.True(t, other.Release(m))
	require.True(t, big.Release(m)) // freed last: taken first

	small := arange(2, 5).WithArena(a).AddScalar(10) // 10 values: the front of big's buffer
	assert.Equal(t, 10, small.Buffer().Len())
	assert.Equal(t, []float32{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, small.Float32s())
	assert.Equal(t, held, a.Bytes(), "no new memory")
	_, kept := small.Keep(nil)
	assert.False(t, kept, "a front cannot leave the arena")

	seven := arange(7).WithArena(a).AddScalar(0)
	assert.Equal(t, held+7*4, a.Bytes(), "16 values are more than twice 7: a buffer of its own")
	assert.Equal(t, []float32{0, 1, 2, 3, 4, 5, 6}, seven.Float32s())

	m = a.Mark()
	again := arange(2, 5).WithArena(a).AddScalar(0)
	assert.Equal(t, held+7*4, a.Bytes(), "other's buffer, freed, holds the second 10")
	require.True(t, again.Release(m))
	full := x.AddScalar(3)
	assert.NotSame(t, bigBuf, full.Buffer(), "big's buffer is still small's")
	assert.Equal(t, held+7*4, a.Bytes())

}

// From its second run on, a ShareSizes arena hands out slices of a slab
// planned from the run before: as little memory as the run's peak, no
// value's memory shared with a live one, and a run that strays from the
// plan gets correct values and a new plan.
func TestArenaPlannedRuns(t *testing.T) {
	a := tensor.NewArena()
	a.ShareSizes()
	// run takes three 16-value results, the first given back before the
	// third is taken (when release) and two 6-value ones.
	run := func(release bool, extra float32) (first, third *tensor.Tensor, sum []float32) {
		x := arange(4, 4).WithArena(a)
		m := a.Mark()
		first = x.AddScalar(1)
		second := first.AddScalar(float64(extra))
		if release {
			require.True(t, first.Release(m))
		}
		third = second.MulScalar(2)
		y := arange(2, 3).WithArena(a).AddScalar(1)
		return first, third, y.Add(y).Float32s()
	}
	want := func(extra float32) []float32 {
		v := make([]float32, 16)
		for i := range v {
			v[i] = 2 * (float32(i) + 1 + extra)
		}
		return v
	}
	_, third, sum := run(true, 0)
	require.Equal(t, want(0), third.Float32s())
	require.Equal(t, []float32{2, 4, 6, 8, 10, 12}, sum)
	unplanned := a.Bytes()
	assert.Equal(t, (2*16+2*6)*4, unplanned, "two 16-value buffers (the third takes the first's) and two of 6")
	a.Reset()
	planned := a.Bytes()
	assert.Equal(t, (2*16+2*16)*4, planned, "one slab: two 16-value spans (the first's reused by the third) and two of 6, each rounded up to a cache line")

	for range 3 {
		_, third, sum = run(true, 0)
		assert.Equal(t, want(0), third.Float32s())
		assert.Equal(t, []float32{2, 4, 6, 8, 10, 12}, sum)
		assert.Equal(t, planned, a.Bytes(), "the plan needs no new memory")
		a.Reset()
	}

	// The first is not given back: the third may not take its memory.
	first, third, _ := run(false, 1)
	assert.Equal(t, want(1), third.Float32s())
	assert.Equal(t, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, first.Float32s(), "the first is intact")
	a.Reset()
	_, third, _ = run(false, 2)
	assert.Equal(t, want(2), third.Float32s(), "a new plan for the new sequence")
	assert.Equal(t, (3*16+2*16)*4, a.Bytes(), "its slab: nothing given back, five spans")
	a.Reset()
}

// Runs whose buffers change from run to run stop the planning after
// maxPlanMisses of them in a row; values stay right throughout.
func TestArenaStopsPlanning(t *testing.T) {
	a := tensor.NewArena()
	a.ShareSizes()
	run := func(n int) []float32 {
		x := arange(n).WithArena(a)
		return x.AddScalar(1).MulScalar(2).Float32s()
	}
	var sizes []int
	for i := range 8 {
		n := 16 + 16*(i%2) // 16, 32, 16, …: never the plan's sequence
		got := run(n)
		for j, v := range got {
			require.Equal(t, float32(2*(j+1)), v)
		}
		a.Reset()
		sizes = append(sizes, a.Bytes())
	}
	assert.Equal(t, sizes[6], sizes[7], "no new plan (and no new memory) once planning stopped: %v", sizes)
}
