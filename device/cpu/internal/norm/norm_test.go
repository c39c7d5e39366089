package norm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// planesCases are the layouts the tests run on: rows shorter than, equal
// to and longer than a vector, a batch of 7×7 and 14×14 planes, rows past
// a chunk of 256, with and without gaps between rows.
var planesCases = []Planes{
	{1, 1, 1}, {3, 1, 5}, {2, 15, 15}, {3, 16, 16}, {3, 17, 40}, {5, 49, 49 * 6}, {4, 196, 196 * 3},
	{2, 256, 300}, {3, 257, 257}, {2, 300, 333}, {2, 784, 784},
}

// filled returns n values from rng, around a mean far from 0 (so that a
// sum of squares about 0 would lose the variance), and the canary value
// -7 in the gaps between p's rows.
func filled(rng *rand.Rand, p Planes, mean float64) []float32 {
	n := (p.Rows-1)*p.LD + p.Cols + 9
	s := make([]float32, n)
	for i := range s {
		s[i] = -7
	}
	for r := range p.Rows {
		for i := range p.Cols {
			s[r*p.LD+i] = float32(mean + rng.NormFloat64()*2)
		}
	}
	return s
}

// each calls f with each element's index.
func (p Planes) each(f func(i int)) {
	for r := range p.Rows {
		for c := range p.Cols {
			f(r*p.LD + c)
		}
	}
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol) { // a NaN fails too
		t.Fatalf("%s = %.9g, want %.9g (±%g)", what, got, want, tol)
	}
}

// checkKernels checks every kernel against float64 sums and element
// formulas on planesCases.
func checkKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, p := range planesCases {
		name := fmt.Sprintf("%d rows of %d, %d apart", p.Rows, p.Cols, p.LD)
		x, dy := filled(rng, p, 300), filled(rng, p, 0)
		n := float64(p.Rows * p.Cols)
		var sum, absSum float64
		p.each(func(i int) { sum += float64(x[i]); absSum += math.Abs(float64(x[i])) })
		near(t, name+": Sum", Sum(p, x), sum, 1e-6*absSum)
		m := float32(sum / n)
		var ss float64
		p.each(func(i int) { d := float64(x[i]) - float64(m); ss += d * d })
		near(t, name+": SumSqDev", SumSqDev(p, x, m), ss, 1e-5*ss+1e-6)

		for _, act := range []Act{None, ReLU, ReLU6} {
			lo, hi := act.bounds()
			y := filled(rng, p, 0)
			before := append([]float32(nil), y...)
			s, b := float32(0.37), float32(0.5)
			ScaleShift(p, act, y, x, m, s, b)
			p.each(func(i int) {
				want := float32((x[i]-m)*s) + b
				want = min(max(want, lo), hi)
				if y[i] != want {
					t.Fatalf("%s, act %d: ScaleShift [%d] = %g, want %g", name, act, i, y[i], want)
				}
				before[i] = y[i]
			})
			requireSame(t, name+": ScaleShift", y, before)

			var out []float32
			if act != None {
				out = y
			}
			var sg, sgx, mag float64
			g := func(i int) float32 {
				if act != None && !act.passes(out[i]) {
					return 0
				}
				return dy[i]
			}
			p.each(func(i int) {
				sg += float64(g(i))
				sgx += float64(g(i)) * (float64(x[i]) - float64(m))
				mag += math.Abs(float64(g(i)) * (float64(x[i]) - float64(m)))
			})
			gotG, gotGX := GradSums(p, act, dy, out, x, m)
			near(t, name+": GradSums Σg", gotG, sg, 1e-6*n)
			near(t, name+": GradSums Σg·(x-m)", gotGX, sgx, 1e-5*mag+1e-6)

			dx := filled(rng, p, 0)
			before = append(before[:0], dx...)
			k, xs, shift := float32(1.25), float32(-0.03), float32(0.125)
			GradApply(p, act, dx, dy, out, x, k, m, xs, shift)
			p.each(func(i int) {
				want := (float32(k*g(i)) + float32(xs*(x[i]-m))) + shift
				if dx[i] != want {
					t.Fatalf("%s, act %d: GradApply [%d] = %g, want %g", name, act, i, dx[i], want)
				}
				before[i] = dx[i]
			})
			requireSame(t, name+": GradApply", dx, before)
		}
	}
}

// TestKernels runs checkKernels on each set of kernels this machine runs
// (kernelSets).
func TestKernels(t *testing.T) { kernelSets(t, checkKernels) }

// requireSame fails unless got equals want, which is what the kernel
// should have left (its outputs set in want): anything else written is
// outside the planes.
func requireSame(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s wrote [%d], outside the planes", what, i)
		}
	}
}

// TestActEdges checks the activations' clamps and gradients at their
// edges: NaN and -0 pass the clamps; ReLU's gradient stops at 0 and at a
// NaN output, ReLU6's at 0 and 6 but not at NaN.
func TestActEdges(t *testing.T) { kernelSets(t, checkActEdges) }

func checkActEdges(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	x := []float32{nan, negZero, -1, 0.5, 6, 7, inf, -inf, 3, 0, 1, 2, 3, 4, 5, 6, 9}
	p := Planes{Rows: 1, Cols: len(x), LD: len(x)}
	for _, act := range []Act{None, ReLU, ReLU6} {
		y := make([]float32, len(x))
		ScaleShift(p, act, y, x, 0, 1, negZero) // -0 + -0 stays -0
		lo, hi := act.bounds()
		for i, v := range x {
			want := v + negZero
			if v < lo {
				want = lo
			}
			if v > hi {
				want = hi
			}
			if math.Float32bits(y[i]) != math.Float32bits(want) && !(v != v && y[i] != y[i]) {
				t.Fatalf("act %d: ScaleShift(%g) = %g, want %g", act, v, y[i], want)
			}
		}
		if act == None {
			continue
		}
		dy := make([]float32, len(x))
		for i := range dy {
			dy[i] = float32(i + 1)
		}
		dx := make([]float32, len(x))
		GradApply(p, act, dx, dy, x, make([]float32, len(x)), 1, 0, 0, 0)
		var want float64
		for i, v := range x {
			var pass bool
			if act == ReLU {
				pass = v > 0
			} else {
				pass = !(v <= 0) && !(v >= 6)
			}
			g := float32(0)
			if pass {
				g = dy[i]
			}
			want += float64(g)
			if dx[i] != g {
				t.Fatalf("act %d: gradient at output %g = %g, want %g", act, v, dx[i], g)
			}
		}
		if got, _ := GradSums(p, act, dy, x, make([]float32, len(x)), 0); got != want {
			t.Fatalf("act %d: GradSums Σg = %g, want %g", act, got, want)
		}
	}
}

// TestPanics checks that a layout the slices do not hold panics with a
// message instead of reading outside them.
func TestPanics(t *testing.T) {
	for _, c := range []struct {
		p Planes
		n int
	}{{Planes{2, 4, 3}, 100}, {Planes{0, 4, 4}, 100}, {Planes{3, 4, 10}, 23}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("Sum of %+v over %d values did not panic", c.p, c.n)
				}
			}()
			Sum(c.p, make([]float32, c.n))
		}()
	}
}
