package vec

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReLU6Grad(t *testing.T) {
	// ref is the float64 form of the reference loop: no gradient at or
	// beyond the bounds, a NaN y passes it.
	testBinary(t, ReLU6Grad, func(g, y float64) float64 {
		if y <= 0 || y >= 6 {
			return 0
		}
		return g
	})
	forKernels(t, func(t *testing.T) {
		g := []float32{1, 2, 3, 4, 5, 6, 7, 8}
		y := []float32{-1, 0, 0.5, 6, 7, 5.5, float32(math.NaN()), float32(math.Inf(1))}
		dst := make([]float32, len(g))
		ReLU6Grad(dst, g, y)
		assert.Equal(t, []float32{0, 0, 3, 0, 0, 6, 7, 0}, dst)
	})
}

// The reductions are checked against float64 references with a bound on
// float32 accumulation: every product is rounded once and each of the
// partial sums (at least four) is rounded as it grows.
func TestSumSqDevDotDev(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		r := rng(31)
		for _, n := range testLengths {
			for off := 0; off < 2; off++ {
				for _, m := range []float32{0, 0.25, 100} {
					a := randSlice(r, n, off, 3, false)
					b := randSlice(r, n, 1-off, 3, false)
					for i := range a.s {
						a.s[i] += m
					}
					var wantSq, absSq, wantDot, absDot float64
					for i := range a.s {
						d := float64(a.s[i] - m) // a-m is rounded in float32 as in the kernels
						wantSq += d * d
						absSq += d * d
						wantDot += d * float64(b.s[i])
						absDot += math.Abs(d * float64(b.s[i]))
					}
					tolSq := (float64(n)/4 + 2) * 0x1p-24 * absSq
					tolDot := (float64(n)/4 + 2) * 0x1p-24 * absDot
					gotSq, gotDot := SumSqDev(a.s, m), DotDev(a.s, b.s, m)
					require.InDelta(t, wantSq, gotSq, tolSq+1e-300, "SumSqDev n=%d off=%d m=%v", n, off, m)
					require.InDelta(t, wantDot, gotDot, tolDot+1e-300, "DotDev n=%d off=%d m=%v", n, off, m)
				}
			}
		}
		assert.Equal(t, 0.0, SumSqDev(nil, 3))
		assert.Equal(t, 0.0, DotDev(nil, nil, 3))
		// The tail's padding lanes must not add (0-m)².
		assert.Equal(t, 3.0, SumSqDev([]float32{6, 4, 6}, 5))
		assert.Equal(t, 3.0, DotDev([]float32{6, 4, 6}, []float32{1, -1, 1}, 5))
		assert.True(t, math.IsNaN(SumSqDev([]float32{1, float32(math.NaN())}, 0)))
		assert.Panics(t, func() { DotDev([]float32{1}, nil, 0) })
	})
}

func TestSumF64(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		a := make([]float32, 1001)
		for i := range a {
			a[i] = 0.1
		}
		assert.InDelta(t, 1001*float64(float32(0.1)), SumF64(a), 1e-9)
		assert.Equal(t, 0.0, SumF64(nil))
	})
}

func TestScaleShiftAffineDev(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		r := rng(32)
		const m, s, b = float32(0.75), float32(-1.5), float32(0.125)
		const gs, xs, c = float32(0.5), float32(-0.25), float32(2)
		for _, n := range testLengths {
			for off := 0; off < 2; off++ {
				a := randSlice(r, n, off, 100, true)
				g := randSlice(r, n, 1-off, 100, true)
				want := make([]float32, n)
				for i, v := range a.s {
					want[i] = (v-m)*s + b
				}
				dst := newGuarded(n, off)
				ScaleShift(dst.s, a.s, m, s, b)
				dst.check(t)
				requireSame(t, want, dst.s, "ScaleShift n=%d off=%d", n, off)
				for i := range want {
					p := gs * g.s[i]
					q := xs * (a.s[i] - m)
					want[i] = p + q + c
				}
				dst = newGuarded(n, off)
				AffineDev(dst.s, g.s, a.s, gs, m, xs, c)
				dst.check(t)
				requireSame(t, want, dst.s, "AffineDev n=%d off=%d", n, off)
				// In place.
				a2 := append([]float32(nil), a.s...)
				AffineDev(a2, g.s, a2, gs, m, xs, c)
				requireSame(t, want, a2, "AffineDev dst == x, n=%d", n)
			}
		}
		assert.Panics(t, func() { ScaleShift(make([]float32, 2), make([]float32, 3), 0, 1, 0) })
		assert.Panics(t, func() { AffineDev(make([]float32, 2), make([]float32, 2), make([]float32, 3), 1, 0, 1, 0) })
	})
}

// TestErf checks the approximation against math.Erf on a fine grid and at
// the specials, for every kernel, and that no element outside dst is
// written.
func TestErf(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		const n = 120001
		a := newGuarded(n, 1)
		for i := range a.s {
			a.s[i] = float32(-6 + 12*float64(i)/(n-1))
		}
		dst := newGuarded(n, 0)
		Erf(dst.s, a.s)
		dst.check(t)
		for i, v := range a.s {
			want := math.Erf(float64(v))
			require.InDelta(t, want, float64(dst.s[i]), 5e-7*math.Max(math.Abs(want), 1e-3), "erf(%v)", v)
		}
		for _, n := range testLengths {
			a := randSlice(rng(40), n, 1, 3, false)
			d := newGuarded(n, 0)
			Erf(d.s, a.s)
			d.check(t)
		}
		sp := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, 1e-30}
		out := make([]float32, len(sp))
		Erf(out, sp)
		assert.True(t, isNaN(out[0]))
		assert.Equal(t, []float32{1, -1, 0}, out[1:4])
		assert.InDelta(t, 2/math.SqrtPi*1e-30, float64(out[4]), 1e-36)
	})
}

// TestSoftmax checks Softmax and SoftmaxGrad against float64 references
// for every kernel and length, and that nothing outside dst is written.
func TestSoftmax(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		r := rng(50)
		for _, n := range testLengths {
			if n == 0 {
				continue
			}
			a := randSlice(r, n, 1, 20, false)
			g := randSlice(r, n, 0, 1, false)
			m := math.Inf(-1)
			for _, v := range a.s {
				m = math.Max(m, float64(v))
			}
			want := make([]float64, n)
			var s float64
			for i, v := range a.s {
				want[i] = math.Exp(float64(v) - m)
				s += want[i]
			}
			for i := range want {
				want[i] /= s
			}
			y := newGuarded(n, 0)
			Softmax(y.s, a.s)
			y.check(t)
			for i := range want {
				require.InDelta(t, want[i], float64(y.s[i]), 1e-5*math.Max(want[i], 1e-2), "softmax n=%d [%d]", n, i)
			}
			var d float64
			for i := range want {
				d += float64(g.s[i]) * float64(y.s[i])
			}
			dx := newGuarded(n, 1)
			SoftmaxGrad(dx.s, g.s, y.s)
			dx.check(t)
			for i := range want {
				w := float64(y.s[i]) * (float64(g.s[i]) - d)
				require.InDelta(t, w, float64(dx.s[i]), 1e-6, "softmax gradient n=%d [%d]", n, i)
			}
		}
		out := make([]float32, 3)
		Softmax(out, []float32{1, float32(math.NaN()), 2})
		assert.True(t, isNaN(out[0]) && isNaN(out[2]))
		Softmax(nil, nil)
	})
}
