package tensor_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/tensor"
)

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 99)) }

// moments returns the mean and (biased) standard deviation of v.
func moments(v []float64) (mean, std float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v)))
}

func TestRandomDeterminism(t *testing.T) {
	t.Parallel()
	gens := map[string]func(r *rand.Rand) *tensor.Tensor{
		"RandUniform":    func(r *rand.Rand) *tensor.Tensor { return tensor.RandUniform(r, -1, 1, 3, 4) },
		"RandNormal":     func(r *rand.Rand) *tensor.Tensor { return tensor.RandNormal(r, 0, 1, 3, 4) },
		"KaimingUniform": func(r *rand.Rand) *tensor.Tensor { return tensor.KaimingUniform(r, math.Sqrt(5), 3, 4) },
		"KaimingNormal":  func(r *rand.Rand) *tensor.Tensor { return tensor.KaimingNormal(r, 3, 4) },
		"XavierUniform":  func(r *rand.Rand) *tensor.Tensor { return tensor.XavierUniform(r, 3, 4) },
		"XavierNormal":   func(r *rand.Rand) *tensor.Tensor { return tensor.XavierNormal(r, 3, 4) },
	}
	for name, gen := range gens {
		a, b, c := gen(seeded(1)), gen(seeded(1)), gen(seeded(2))
		assert.Equal(t, []int{3, 4}, a.Shape(), name)
		assert.Equal(t, a.Float32s(), b.Float32s(), "%s: same seed, same values", name)
		assert.NotEqual(t, a.Float32s(), c.Float32s(), "%s: different seeds", name)
		// Consecutive draws from one generator differ.
		r := seeded(1)
		assert.NotEqual(t, gen(r).Float32s(), gen(r).Float32s(), name)
	}
}

func TestRandomStatistics(t *testing.T) {
	t.Parallel()
	const n = 200_000
	u := tensor.RandUniform(seeded(3), -2, 4, n).Values()
	for _, v := range u {
		require.True(t, v >= -2 && v < 4, "RandUniform value %g outside [-2, 4)", v)
	}
	mean, std := moments(u)
	assert.InDelta(t, 1, mean, 0.02)
	assert.InDelta(t, 6/math.Sqrt(12), std, 0.02)

	g := tensor.RandNormal(seeded(4), 3, 0.5, n).Values()
	mean, std = moments(g)
	assert.InDelta(t, 3, mean, 0.01)
	assert.InDelta(t, 0.5, std, 0.01)

	// A tiny interval: values stay below hi even after rounding to float32.
	for _, v := range tensor.RandUniform(seeded(5), 1, math.Nextafter(1, 2), 1000).Values() {
		require.True(t, v >= 1 && v < math.Nextafter(1, 2), "value %g", v)
	}
	assert.Equal(t, []int{0, 3}, tensor.RandNormal(seeded(6), 0, 1, 0, 3).Shape())
	assertPanicsWith(t, func() { tensor.RandUniform(seeded(7), 0, 1, 2, -3) }, "[2 -3]")
}

func TestFans(t *testing.T) {
	t.Parallel()
	in, out := tensor.Fans([]int{64, 32})
	assert.Equal(t, [2]int{32, 64}, [2]int{in, out}, "Linear out×in")
	in, out = tensor.Fans([]int{64, 32, 3, 5})
	assert.Equal(t, [2]int{32 * 15, 64 * 15}, [2]int{in, out}, "Conv out×in×kh×kw")
	assertPanicsWith(t, func() { tensor.Fans([]int{5}) }, "[5]")
}

func TestInitBounds(t *testing.T) {
	t.Parallel()
	// PyTorch's default for Linear and Conv2d: kaiming_uniform_(a=√5), whose
	// bound is gain·√(3/fan_in) with gain = √(2/(1+a²)), i.e. 1/√fan_in.
	shape := []int{64, 32, 3, 3}
	fanIn, fanOut := 32*9, 64*9
	w := tensor.KaimingUniform(seeded(8), math.Sqrt(5), shape...).Values()
	bound := 1 / math.Sqrt(float64(fanIn))
	assert.InDelta(t, math.Sqrt(2/(1+5.))*math.Sqrt(3/float64(fanIn)), bound, 1e-15)
	checkUniform(t, "KaimingUniform(√5)", w, bound)

	w = tensor.KaimingUniform(seeded(9), 0, shape...).Values()
	checkUniform(t, "KaimingUniform(0)", w, math.Sqrt(6/float64(fanIn)))

	w = tensor.XavierUniform(seeded(10), shape...).Values()
	checkUniform(t, "XavierUniform", w, math.Sqrt(6/float64(fanIn+fanOut)))

	big := []int{256, 128, 3, 3}
	w = tensor.KaimingNormal(seeded(11), big...).Values()
	mean, std := moments(w)
	assert.InDelta(t, 0, mean, 0.002)
	assert.InDelta(t, math.Sqrt(2/float64(128*9)), std, 0.01*std)

	w = tensor.XavierNormal(seeded(12), big...).Values()
	mean, std = moments(w)
	assert.InDelta(t, 0, mean, 0.002)
	assert.InDelta(t, math.Sqrt(2/float64(128*9+256*9)), std, 0.01*std)
}

// checkUniform checks that w looks like U(-b, b): inside the bounds,
// reaching close to them, with the right mean and standard deviation.
func checkUniform(t *testing.T, name string, w []float64, b float64) {
	t.Helper()
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range w {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	assert.True(t, lo >= -b && hi < b, "%s: values in [%g, %g], want within ±%g", name, lo, hi, b)
	assert.True(t, lo < -0.99*b && hi > 0.99*b, "%s: values in [%g, %g] do not reach ±%g", name, lo, hi, b)
	mean, std := moments(w)
	assert.InDelta(t, 0, mean, 0.02*b, name)
	assert.InDelta(t, b/math.Sqrt(3), std, 0.02*b, name)
}
