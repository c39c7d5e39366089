package tensor_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// refReduce reduces the row-major values v of shape over axes with f
// (which receives the reduced values in row-major order).
func refReduce(v []float64, shape []int, axes []int, keep bool, f func([]float64) float64) ([]int, []float64) {
	red := make([]bool, len(shape))
	for _, a := range axes {
		red[a] = true
	}
	var kept, out []int
	for i, d := range shape {
		if red[i] {
			if keep {
				kept = append(kept, 1)
			}
			continue
		}
		kept = append(kept, d)
		out = append(out, d)
	}
	groups := map[int][]float64{}
	forEachIndex(shape, func(idx []int) {
		var o []int
		for i := range shape {
			if !red[i] {
				o = append(o, idx[i])
			}
		}
		k := flat(out, o)
		groups[k] = append(groups[k], v[flat(shape, idx)])
	})
	n := 1
	for _, d := range out {
		n *= d
	}
	res := make([]float64, n)
	for k := range res {
		res[k] = f(groups[k])
	}
	return kept, res
}

func sumF(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func maxF(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

func minF(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = math.Min(m, x)
	}
	return m
}

func argmaxF(v []float64) float64 {
	a := 0
	for i, x := range v {
		if x > v[a] {
			a = i
		}
	}
	return float64(a)
}

func varF(unbiased bool) func([]float64) float64 {
	return func(v []float64) float64 {
		m := sumF(v) / float64(len(v))
		s := 0.0
		for _, x := range v {
			s += (x - m) * (x - m)
		}
		if unbiased {
			return s / float64(len(v)-1)
		}
		return s / float64(len(v))
	}
}

func TestReductions(t *testing.T) {
	t.Parallel()
	shape := []int{2, 3, 4}
	// Values with ties (for ArgMax) and both signs.
	vals := []float64{
		3, -1, 4, 1, -5, 9, 2, 6, 5, 3, 5, 8,
		9, 7, 9, 3, 2, 3, -8, 4, 6, 2, 6, 4,
	}
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		x := tensor.FromFloat64(vals, shape...).Cast(dt)
		xt := x.Permute(2, 0, 1) // a non-contiguous input of shape [4 2 3]
		tv := xt.Values()
		for _, keep := range []bool{false, true} {
			for _, axis := range []int{0, 1, 2, -1} {
				a := (axis + 3) % 3
				check := func(name string, got *tensor.Tensor, f func([]float64) float64, src []float64, srcShape []int) {
					t.Run(fmt.Sprintf("%s/%v/axis=%d/keep=%v", name, dt, axis, keep), func(t *testing.T) {
						wantShape, want := refReduce(src, srcShape, []int{a}, keep, f)
						assertValues(t, got, wantShape, want, 1e-6)
					})
				}
				check("Sum", x.Sum(axis, keep), sumF, vals, shape)
				check("Mean", x.Mean(axis, keep), func(v []float64) float64 { return sumF(v) / float64(len(v)) }, vals, shape)
				check("Max", x.Max(axis, keep), maxF, vals, shape)
				check("Min", x.Min(axis, keep), minF, vals, shape)
				check("ArgMax", x.ArgMax(axis, keep), argmaxF, vals, shape)
				check("Var", x.Var(axis, true, keep), varF(true), vals, shape)
				check("VarBiased", x.Var(axis, false, keep), varF(false), vals, shape)
				check("Sum/view", xt.Sum(axis, keep), sumF, tv, []int{4, 2, 3})
				check("Max/view", xt.Max(axis, keep), maxF, tv, []int{4, 2, 3})
				check("ArgMax/view", xt.ArgMax(axis, keep), argmaxF, tv, []int{4, 2, 3})
				assert.Equal(t, device.Int64, x.ArgMax(axis, keep).DType())
				assert.Equal(t, dt, x.Max(axis, keep).DType())
			}
			for _, axes := range [][]int{{0, 2}, {2, 0}, {1, -1}, {0, 1, 2}, {1}, {2, 0, 2}, nil} {
				norm := axes
				if axes == nil {
					norm = []int{0, 1, 2}
				}
				var resolved []int
				for _, a := range norm {
					resolved = append(resolved, (a+3)%3)
				}
				ws, w := refReduce(vals, shape, resolved, keep, sumF)
				assertValues(t, x.SumAxes(axes, keep), ws, w, 1e-6)
				ws, w = refReduce(vals, shape, resolved, keep, func(v []float64) float64 { return sumF(v) / float64(len(v)) })
				assertValues(t, x.MeanAxes(axes, keep), ws, w, 1e-6)
				ws, w = refReduce(vals, shape, resolved, keep, varF(true))
				assertValues(t, x.VarAxes(axes, true, keep), ws, w, 1e-5)
				ws, w = refReduce(vals, shape, resolved, keep, varF(false))
				assertValues(t, x.VarAxes(axes, false, keep), ws, w, 1e-5)
			}
		}
		assertValues(t, x.SumAll(), nil, []float64{sumF(vals)}, 1e-6)
		assertValues(t, x.MeanAll(), nil, []float64{sumF(vals) / 24}, 1e-6)
		assertValues(t, x.MaxAll(), nil, []float64{9}, 0)
		assertValues(t, xt.SumAll(), nil, []float64{sumF(vals)}, 1e-6)
		// Empty axes: a copy.
		c := x.SumAxes([]int{}, false)
		assert.Equal(t, vals, c.Values())
		assert.False(t, c.Buffer() == x.Buffer())
	}

	// Hand-computed variance: [1 2 3 4] has mean 2.5, squared deviations 5.
	v := tensor.FromFloat32([]float32{1, 2, 3, 4, 2, 2, 2, 2}, 2, 4)
	assertValues(t, v.Var(1, true, false), []int{2}, []float64{5.0 / 3, 0}, 1e-6)
	assertValues(t, v.Var(1, false, true), []int{2, 1}, []float64{1.25, 0}, 1e-6)

	// ArgMax takes the first of equal maxima.
	assertValues(t, tensor.FromFloat32([]float32{1, 3, 3, 0, 3}).ArgMax(0, false), nil, []float64{1}, 0)

	// Max propagates NaN.
	nan := tensor.FromFloat32([]float32{1, float32(math.NaN()), 3})
	assert.True(t, math.IsNaN(nan.Max(0, false).Item()))
	assert.True(t, math.IsNaN(nan.Min(0, false).Item()))
	assert.True(t, math.IsNaN(nan.SumAll().Item()))

	// Sums over empty axes are 0; max over an empty axis panics.
	e := tensor.Zeros(2, 0, 3)
	assertValues(t, e.Sum(1, false), []int{2, 3}, make([]float64, 6), 0)
	assertValues(t, e.SumAxes([]int{1, 2}, true), []int{2, 1, 1}, []float64{0, 0}, 0)
	assertValues(t, e.SumAll(), nil, []float64{0}, 0)
	assert.Equal(t, []int{2, 3}, e.Sum(1, false).Shape())
	assert.Equal(t, []int{0, 3}, e.Sum(0, false).Shape())
	assert.True(t, math.IsNaN(e.MeanAll().Item()))
	assertPanicsWith(t, func() { e.Max(1, false) }, "[2 0 3]")
	assertPanicsWith(t, func() { arange(2, 3).Sum(2, false) }, "[2 3]")
	assertPanicsWith(t, func() { tensor.FromInt64([]int64{1, 2}).Sum(0, false) }, "int64", "[2]")

	// Large reductions (the parallel paths).
	big := tensor.Full(tensor.CPU(), device.Float32, 0.5, 300, 700)
	assertValues(t, big.Sum(1, false).Slice(0, 0, 2), []int{2}, []float64{350, 350}, 1e-6)
	assertValues(t, big.SumAll(), nil, []float64{105000}, 1e-6)
	require.Equal(t, []int{700}, big.Max(0, false).Shape())
}

// TestSumMiddleAxis checks sums over a middle axis whose inner axes are
// wide (the row-by-row kernel, in blocks of the inner axis split across
// workers) against float64 sums in axis order, to the bit.
func TestSumMiddleAxis(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(41, 42))
	for _, shape := range [][]int{{3, 37, 300}, {2, 5, 17}, {1, 49, 1280}, {4, 1, 16}} {
		outer, n, inner := shape[0], shape[1], shape[2]
		vals := make([]float32, outer*n*inner)
		for i := range vals {
			vals[i] = float32(rng.NormFloat64())
		}
		got := tensor.FromFloat32(vals, shape...).Sum(1, false).Values()
		for o := range outer {
			for i := range inner {
				var acc float64
				for k := range n {
					acc += float64(vals[(o*n+k)*inner+i])
				}
				if want := float32(acc); float32(got[o*inner+i]) != want {
					t.Fatalf("%v: sum (%d, %d) = %v, want %v", shape, o, i, got[o*inner+i], want)
				}
			}
		}
	}
}

func TestSoftmax(t *testing.T) {
	t.Parallel()
	x := tensor.FromFloat64([]float64{1, 2, 3, 0, 0, 0}, 2, 3)
	e := []float64{math.Exp(1), math.Exp(2), math.Exp(3)}
	s := e[0] + e[1] + e[2]
	want := []float64{e[0] / s, e[1] / s, e[2] / s, 1. / 3, 1. / 3, 1. / 3}
	assertValues(t, x.Softmax(1), []int{2, 3}, want, 1e-14)
	assertValues(t, x.Softmax(-1), []int{2, 3}, want, 1e-14)
	logWant := make([]float64, 6)
	for i, w := range want {
		logWant[i] = math.Log(w)
	}
	assertValues(t, x.LogSoftmax(1), []int{2, 3}, logWant, 1e-14)
	// Along axis 0 (columns); the same as the transposed rows.
	assertValues(t, x.T().Softmax(0), []int{3, 2}, x.Softmax(1).T().Values(), 1e-14)
	colSums := x.Softmax(0).Sum(0, false)
	assertValues(t, colSums, []int{3}, []float64{1, 1, 1}, 1e-14)

	// Stability: huge inputs give the same result as shifted ones, no NaN.
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		big := tensor.FromFloat64([]float64{1000, 1001, 1002, -1000, 0, 1000}, 2, 3).Cast(dt)
		small := tensor.FromFloat64([]float64{0, 1, 2}, 1, 3).Cast(dt)
		sm := big.Softmax(1)
		assertValues(t, sm.Slice(0, 0, 1), []int{1, 3}, small.Softmax(1).Values(), 1e-6)
		assertValues(t, sm.Slice(0, 1, 2), []int{1, 3}, []float64{0, 0, 1}, 1e-6)
		ls := big.LogSoftmax(1)
		assertValues(t, ls.Slice(0, 0, 1), []int{1, 3}, small.LogSoftmax(1).Values(), 1e-5)
		assertValues(t, ls.Slice(0, 1, 2), []int{1, 3}, []float64{-2000, -1000, 0}, 1e-6)
		for _, v := range append(sm.Values(), ls.Values()...) {
			assert.False(t, math.IsNaN(v) || math.IsInf(v, 0), "softmax of large inputs: %v", v)
		}
	}
}

// TestSumAxesRunRoundsOnce requires a sum over consecutive axes (a global
// average pool's H and W) to be one float64 sum per output rounded once,
// as over one axis, for a tensor and for a permuted view of it, with and
// without the axes kept; and a sum over two separate runs of axes to
// match the float64 reference.
func TestSumAxesRunRoundsOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := tensor.RandNormal(rng, 0, 1, 2, 3, 7, 7)
	vals := x.Values()
	for _, keep := range []bool{true, false} {
		got := x.SumAxes([]int{2, 3}, keep)
		if keep {
			assert.Equal(t, []int{2, 3, 1, 1}, got.Shape())
		} else {
			assert.Equal(t, []int{2, 3}, got.Shape())
		}
		for p, v := range got.Values() {
			var want float64
			for _, e := range vals[p*49 : (p+1)*49] {
				want += float64(float32(e))
			}
			require.Equal(t, float64(float32(want)), v, "plane %d, keep %v", p, keep)
		}
	}
	// A view whose last two axes are not contiguous in memory.
	view := x.Permute(0, 2, 3, 1) // 2×7×7×3
	got := view.SumAxes([]int{1, 2}, false)
	assert.Equal(t, []int{2, 3}, got.Shape())
	ref := x.SumAxes([]int{2, 3}, false)
	assertValues(t, got, []int{2, 3}, ref.Values(), 1e-6)
	// Two runs: axes 0 and 2…3.
	ws, w := refReduce(vals, []int{2, 3, 7, 7}, []int{0, 2, 3}, false, func(v []float64) float64 {
		var s float64
		for _, e := range v {
			s += e
		}
		return s
	})
	assertValues(t, x.SumAxes([]int{0, 2, 3}, false), ws, w, 1e-5)
}
