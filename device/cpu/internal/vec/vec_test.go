package vec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// forKernels runs f once for every kernel available (always "go").
func forKernels(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, k := range Kernels() {
		t.Run(k, func(t *testing.T) {
			prev, err := SetKernel(k)
			require.NoError(t, err)
			defer SetKernel(prev)
			require.Equal(t, k, Kernel())
			f(t)
		})
	}
}

// testLengths are the lengths every function is tested on.
var testLengths = func() []int {
	var ls []int
	for n := 0; n <= 70; n++ {
		ls = append(ls, n)
	}
	return append(ls, 127, 128, 129, 255, 1000, 4099, 100003)
}()

const guardN = 16

var guardVal = float32(-12345.5)

// guarded is a slice with sentinel elements around it, shifted by off
// elements (off = 1: not 8-byte aligned) from a 64-byte offset.
type guarded struct {
	full []float32
	s    []float32
	off  int
}

func newGuarded(n, off int) guarded {
	full := make([]float32, n+2*guardN+off)
	for i := range full {
		full[i] = guardVal
	}
	return guarded{full: full, s: full[guardN+off : guardN+off+n], off: off}
}

func (g guarded) check(t *testing.T) {
	t.Helper()
	n := len(g.s)
	for i, v := range g.full {
		if i >= guardN+g.off && i < guardN+g.off+n {
			continue
		}
		if v != guardVal {
			t.Fatalf("element %d outside the slice (of %d at %d) was written: %v", i, n, guardN+g.off, v)
		}
	}
}

// randSlice returns a guarded slice of n random values in [-scale, scale);
// with specials, about one element in 16 is NaN, ±Inf, ±0 or huge.
func randSlice(rng *rand.Rand, n, off int, scale float64, specials bool) guarded {
	g := newGuarded(n, off)
	for i := range g.s {
		g.s[i] = float32((rng.Float64()*2 - 1) * scale)
		if specials && rng.IntN(16) == 0 {
			sp := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 3e38, -3e38, 1e-40}
			g.s[i] = sp[rng.IntN(len(sp))]
		}
	}
	return g
}

func same(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

func requireSame(t *testing.T, want, got []float32, msg string, args ...any) {
	t.Helper()
	require.Equal(t, len(want), len(got))
	for i := range want {
		if !same(want[i], got[i]) {
			t.Fatalf("%s: element %d of %d: got %v (%#x), want %v (%#x)", fmt.Sprintf(msg, args...), i, len(want),
				got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// close reports whether got is within tol of want (NaN matching NaN, equal
// infinities matching).
func close(got float32, want, tol float64) bool {
	g := float64(got)
	switch {
	case math.IsNaN(want):
		return g != g
	case math.IsInf(want, 0):
		return g == want
	}
	return math.Abs(g-want) <= tol
}

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// testBinary checks an elementwise function against its float64 reference
// (exact: float32 + - * / of float32 operands rounds the same from float64).
func testBinary(t *testing.T, f func(dst, a, b []float32), ref func(a, b float64) float64) {
	forKernels(t, func(t *testing.T) {
		r := rng(1)
		for _, n := range testLengths {
			for off := 0; off < 2; off++ {
				a := randSlice(r, n, off, 100, true)
				b := randSlice(r, n, 1-off, 100, true)
				want := make([]float32, n)
				for i := range want {
					want[i] = float32(ref(float64(a.s[i]), float64(b.s[i])))
				}
				dst := newGuarded(n, off)
				f(dst.s, a.s, b.s)
				dst.check(t)
				requireSame(t, want, dst.s, "n=%d off=%d", n, off)
				// Aliasing: dst == a, dst == b.
				a2 := append([]float32(nil), a.s...)
				f(a2, a2, b.s)
				requireSame(t, want, a2, "dst == a, n=%d", n)
				b2 := append([]float32(nil), b.s...)
				f(b2, a.s, b2)
				requireSame(t, want, b2, "dst == b, n=%d", n)
			}
		}
	})
}

func TestAdd(t *testing.T) { testBinary(t, Add, func(a, b float64) float64 { return a + b }) }
func TestAddReLU(t *testing.T) {
	testBinary(t, AddReLU, func(a, b float64) float64 {
		if v := float64(float32(a + b)); !(v < 0) {
			return v
		}
		return 0
	})
}
func TestSub(t *testing.T) { testBinary(t, Sub, func(a, b float64) float64 { return a - b }) }
func TestMul(t *testing.T) { testBinary(t, Mul, func(a, b float64) float64 { return a * b }) }
func TestDiv(t *testing.T) { testBinary(t, Div, func(a, b float64) float64 { return a / b }) }

func relu64(v float64) float64 {
	if v < 0 {
		return 0
	}
	return v
}

func TestReLUGrad(t *testing.T) {
	testBinary(t, ReLUGrad, func(g, y float64) float64 {
		if y > 0 {
			return g
		}
		return 0
	})
}

// testUnary checks dst = f(a) (with scalar s) against ref, exactly.
func testUnary(t *testing.T, f func(dst, a []float32, s float32), ref func(a, s float64) float64) {
	forKernels(t, func(t *testing.T) {
		r := rng(2)
		for _, n := range testLengths {
			for off := 0; off < 2; off++ {
				for _, s := range []float32{0, 1.5, -3.25} {
					a := randSlice(r, n, off, 10, true)
					want := make([]float32, n)
					for i := range want {
						want[i] = float32(ref(float64(a.s[i]), float64(s)))
					}
					dst := newGuarded(n, 1-off)
					f(dst.s, a.s, s)
					dst.check(t)
					requireSame(t, want, dst.s, "n=%d off=%d s=%v", n, off, s)
					f(a.s, a.s, s)
					a.check(t)
					requireSame(t, want, a.s, "dst == a, n=%d", n)
				}
			}
		}
	})
}

func TestAddScalar(t *testing.T) {
	testUnary(t, AddScalar, func(a, s float64) float64 { return a + s })
}

func TestMulScalar(t *testing.T) {
	testUnary(t, MulScalar, func(a, s float64) float64 { return a * s })
}

func TestAddScalarReLU(t *testing.T) {
	testUnary(t, AddScalarReLU, func(a, s float64) float64 { return relu64(float64(float32(a + s))) })
}

func maxScalar64(a, s float64) float64 {
	if a > s || a != a {
		return a
	}
	return s
}

func minScalar64(a, s float64) float64 {
	if a < s || a != a {
		return a
	}
	return s
}

func clamp64(v, lo, hi float64) float64 {
	if v < lo {
		v = lo
	}
	if v > hi {
		v = hi
	}
	return v
}

func TestMaxMinScalar(t *testing.T) {
	testUnary(t, MaxScalar, maxScalar64)
	testUnary(t, MinScalar, minScalar64)
	// Signed zeros, NaN bounds and NaN inputs, bit for bit.
	negZero := float32(math.Copysign(0, -1))
	nan := float32(math.NaN())
	in := []float32{negZero, 0, nan, -1, 1, float32(math.Inf(1)), float32(math.Inf(-1)), 6, 7, -7, nan, negZero, 0, 2, -2, 0.5, 3}
	forKernels(t, func(t *testing.T) {
		for _, s := range []float32{0, negZero, nan, 6, -1} {
			for _, n := range []int{len(in), 9, 16} {
				a := in[:n]
				gotMax, gotMin := make([]float32, n), make([]float32, n)
				MaxScalar(gotMax, a, s)
				MinScalar(gotMin, a, s)
				for i, v := range a {
					wantMax := float32(maxScalar64(float64(v), float64(s)))
					wantMin := float32(minScalar64(float64(v), float64(s)))
					require.True(t, same(wantMax, gotMax[i]) && math.Signbit(float64(wantMax)) == math.Signbit(float64(gotMax[i])),
						"max(%v, %v) = %v, want %v", v, s, gotMax[i], wantMax)
					require.True(t, same(wantMin, gotMin[i]) && math.Signbit(float64(wantMin)) == math.Signbit(float64(gotMin[i])),
						"min(%v, %v) = %v, want %v", v, s, gotMin[i], wantMin)
				}
			}
		}
	})
}

func TestClamp(t *testing.T) {
	testUnary(t, func(dst, a []float32, _ float32) { Clamp(dst, a, 0, 6) }, func(a, _ float64) float64 { return clamp64(a, 0, 6) })
	testUnary(t, func(dst, a []float32, s float32) { Clamp(dst, a, s-1, s+2) }, func(a, s float64) float64 {
		return clamp64(a, float64(float32(s-1)), float64(float32(s+2)))
	})
	testUnary(t, func(dst, a []float32, s float32) { AddScalarClamp(dst, a, s, 0, 6) }, func(a, s float64) float64 {
		return clamp64(float64(float32(a+s)), 0, 6)
	})
	// NaN and -0 pass, as in ReLU.
	forKernels(t, func(t *testing.T) {
		negZero := float32(math.Copysign(0, -1))
		a := []float32{float32(math.NaN()), negZero, -1, 2, 6, 7, float32(math.Inf(1)), float32(math.Inf(-1)), 5.5}
		got := make([]float32, len(a))
		Clamp(got, a, 0, 6)
		assert.True(t, got[0] != got[0], "relu6(NaN)")
		assert.Equal(t, math.Float32bits(negZero), math.Float32bits(got[1]), "relu6(-0)")
		assert.Equal(t, []float32{0, 2, 6, 6, 6, 0, 5.5}, got[2:])
	})
}

func TestReLU(t *testing.T) {
	testUnary(t, func(dst, a []float32, _ float32) { ReLU(dst, a) }, func(a, _ float64) float64 { return relu64(a) })
	// NaN and -0 pass unchanged, as in PyTorch.
	forKernels(t, func(t *testing.T) {
		negZero := float32(math.Copysign(0, -1))
		for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 33, 100} {
			a := make([]float32, n)
			for i := range a {
				a[i] = []float32{float32(math.NaN()), negZero, -1, 2, float32(math.Inf(-1)), float32(math.Inf(1))}[i%6]
			}
			ReLU(a, a)
			for i, v := range a {
				switch i % 6 {
				case 0:
					assert.True(t, v != v, "relu(NaN)")
				case 1:
					assert.Equal(t, math.Float32bits(negZero), math.Float32bits(v), "relu(-0)")
				case 2, 4:
					assert.Equal(t, uint32(0), math.Float32bits(v))
				case 3:
					assert.Equal(t, float32(2), v)
				case 5:
					assert.True(t, math.IsInf(float64(v), 1))
				}
			}
		}
	})
}

func TestAxpy(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		r := rng(3)
		for _, n := range testLengths {
			for off := 0; off < 2; off++ {
				alpha := float32(r.Float64()*4 - 2)
				x := randSlice(r, n, off, 10, false)
				dst := randSlice(r, n, 1-off, 10, false)
				want := make([]float64, n)
				for i := range want {
					want[i] = float64(dst.s[i]) + float64(alpha)*float64(x.s[i])
				}
				Axpy(dst.s, alpha, x.s)
				dst.check(t)
				for i := range want {
					tol := 0x1p-23 * (math.Abs(want[i]) + math.Abs(float64(alpha)*float64(x.s[i])))
					require.True(t, close(dst.s[i], want[i], tol), "n=%d i=%d got %v want %v", n, i, dst.s[i], want[i])
				}
				// dst == x: dst = (1+alpha)*dst.
				y := append([]float32(nil), x.s...)
				Axpy(y, alpha, y)
				for i := range y {
					w := float64(x.s[i]) * (1 + float64(alpha))
					require.True(t, close(y[i], w, 0x1p-22*(math.Abs(float64(x.s[i]))*(1+math.Abs(float64(alpha))))), "aliased n=%d i=%d", n, i)
				}
			}
		}
		// Special values.
		inf := float32(math.Inf(1))
		d := []float32{1, inf, 0, 1, float32(math.NaN())}
		Axpy(d, 2, []float32{inf, 1, float32(math.NaN()), -0.5, 1})
		assert.True(t, math.IsInf(float64(d[0]), 1))
		assert.True(t, math.IsInf(float64(d[1]), 1))
		assert.True(t, d[2] != d[2])
		assert.Equal(t, float32(0), d[3])
		assert.True(t, d[4] != d[4])
	})
}

// rowShapes are (rows, n) shapes for the row functions.
var rowShapes = func() [][2]int {
	var s [][2]int
	for _, r := range []int{0, 1, 2, 3, 4, 5, 7, 9} {
		for _, n := range []int{1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 70, 130} {
			s = append(s, [2]int{r, n})
		}
	}
	return append(s, [2]int{0, 0}, [2]int{100, 1003}, [2]int{3, 100003}, [2]int{1000, 10})
}()

func testAddRows(t *testing.T, f func(dst, a, row []float32), relu bool) {
	forKernels(t, func(t *testing.T) {
		r := rng(4)
		for _, sh := range rowShapes {
			rows, n := sh[0], sh[1]
			for off := 0; off < 2; off++ {
				a := randSlice(r, rows*n, off, 10, true)
				row := randSlice(r, n, 1-off, 10, true)
				want := make([]float32, rows*n)
				for i := range want {
					v := float64(float32(float64(a.s[i]) + float64(row.s[i%n])))
					if relu {
						v = relu64(v)
					}
					want[i] = float32(v)
				}
				dst := newGuarded(rows*n, off)
				f(dst.s, a.s, row.s)
				dst.check(t)
				requireSame(t, want, dst.s, "rows=%d n=%d off=%d", rows, n, off)
				f(a.s, a.s, row.s)
				a.check(t)
				row.check(t)
				requireSame(t, want, a.s, "dst == a, rows=%d n=%d", rows, n)
			}
		}
	})
}

func TestAddRows(t *testing.T)     { testAddRows(t, AddRows, false) }
func TestAddRowsReLU(t *testing.T) { testAddRows(t, AddRowsReLU, true) }

func TestSumRows(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		r := rng(5)
		for _, sh := range rowShapes {
			rows, n := sh[0], sh[1]
			for off := 0; off < 2; off++ {
				a := randSlice(r, rows*n, off, 10, false)
				dst := randSlice(r, n, 1-off, 10, false)
				want := make([]float64, n)
				tol := make([]float64, n)
				for j := range want {
					want[j] = float64(dst.s[j])
					tol[j] = math.Abs(want[j])
				}
				for i := 0; i < rows; i++ {
					for j := 0; j < n; j++ {
						want[j] += float64(a.s[i*n+j])
						tol[j] += math.Abs(float64(a.s[i*n+j]))
					}
				}
				SumRows(dst.s, a.s)
				dst.check(t)
				for j := range want {
					require.True(t, close(dst.s[j], want[j], float64(rows+1)*0x1p-24*tol[j]),
						"rows=%d n=%d j=%d: got %v want %v", rows, n, j, dst.s[j], want[j])
				}
			}
		}
		// NaN and Inf propagate.
		d := []float32{0, 0, 0}
		SumRows(d, []float32{1, float32(math.Inf(1)), float32(math.NaN()), 2, 3, 4})
		assert.Equal(t, float32(3), d[0])
		assert.True(t, math.IsInf(float64(d[1]), 1))
		assert.True(t, d[2] != d[2])
	})
}

func TestSum(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		r := rng(6)
		for _, n := range testLengths {
			for off := 0; off < 2; off++ {
				for _, shift := range []float64{0, 1000} {
					a := randSlice(r, n, off, 1, false)
					for i := range a.s {
						a.s[i] += float32(shift)
					}
					var want, abs float64
					for _, v := range a.s {
						want += float64(v)
						abs += math.Abs(float64(v))
					}
					got := Sum(a.s)
					tol := math.Abs(want)*0x1p-24 + float64(n)*0x1p-52*abs
					require.True(t, close(got, want, tol), "n=%d off=%d shift=%v: got %v want %v", n, off, shift, got, want)
				}
			}
		}
		// Accuracy: ten million ones and 0.1s, where a float32 running sum
		// would be far off.
		a := make([]float32, 10_000_000)
		for i := range a {
			a[i] = 0.1
		}
		assert.Equal(t, float32(10_000_000*float64(float32(0.1))), Sum(a))
		// A sum that cancels exactly.
		assert.Equal(t, float32(1), Sum([]float32{1e10, 1, -1e10}))
		// Specials.
		assert.True(t, math.IsInf(float64(Sum([]float32{1, float32(math.Inf(1))})), 1))
		assert.True(t, isNaN(Sum([]float32{float32(math.Inf(-1)), float32(math.Inf(1))})))
		assert.True(t, isNaN(Sum(append(make([]float32, 100), float32(math.NaN())))))
		assert.True(t, math.IsInf(float64(Sum([]float32{3e38, 3e38})), 1), "overflow of float32 gives +Inf")
		assert.Equal(t, float32(0), Sum(nil))
	})
}

func isNaN(v float32) bool { return v != v }

func TestDot(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		r := rng(7)
		for _, n := range testLengths {
			for off := 0; off < 2; off++ {
				a := randSlice(r, n, off, 3, false)
				b := randSlice(r, n, 1-off, 3, false)
				var want, abs float64
				for i := range a.s {
					p := float64(a.s[i]) * float64(b.s[i])
					want += p
					abs += math.Abs(p)
				}
				got := Dot(a.s, b.s)
				tol := (float64(n)/4 + 2) * 0x1p-24 * abs
				require.True(t, close(got, want, tol), "n=%d: got %v want %v", n, got, want)
			}
		}
		assert.Equal(t, float32(0), Dot(nil, nil))
		assert.True(t, isNaN(Dot([]float32{1, float32(math.NaN())}, []float32{1, 1})))
	})
}

func TestMaxArgMax(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		r := rng(8)
		for _, n := range testLengths {
			for off := 0; off < 2; off++ {
				for _, specials := range []bool{false, true} {
					a := randSlice(r, n, off, 100, specials)
					if n > 3 && r.IntN(2) == 0 {
						a.s[r.IntN(n)] = 1000 // duplicate maxima: first wins
						a.s[r.IntN(n)] = 1000
					}
					wantI, want := -1, float32(math.Inf(-1))
					for i, v := range a.s {
						if v != v {
							wantI, want = i, v
							break
						}
						if v > want || wantI < 0 {
							wantI, want = i, v
						}
					}
					got := Max(a.s)
					require.True(t, same(want, got) || (want == 0 && got == 0), "Max n=%d: got %v want %v", n, got, want)
					require.Equal(t, wantI, ArgMax(a.s), "ArgMax n=%d specials=%v", n, specials)
				}
			}
		}
		// A single NaN anywhere.
		for _, n := range []int{1, 5, 8, 16, 17, 64, 65, 200} {
			for pos := 0; pos < n; pos += 1 + n/7 {
				a := make([]float32, n)
				for i := range a {
					a[i] = float32(i)
				}
				a[pos] = float32(math.NaN())
				require.True(t, isNaN(Max(a)), "n=%d pos=%d", n, pos)
				require.Equal(t, pos, ArgMax(a), "n=%d pos=%d", n, pos)
			}
		}
		ninf := float32(math.Inf(-1))
		assert.Equal(t, ninf, Max(nil))
		assert.Equal(t, -1, ArgMax(nil))
		assert.Equal(t, ninf, Max([]float32{ninf, ninf}))
		assert.Equal(t, 0, ArgMax([]float32{ninf, ninf}))
		assert.Equal(t, 2, ArgMax([]float32{-1, ninf, 3, 3}))
		assert.Equal(t, 0, ArgMax([]float32{float32(math.Copysign(0, -1)), 0}))
	})
}

// checkExp checks Exp over xs: relative error <= 2e-7 for normal results,
// absolute error <= the smallest subnormal for subnormal ones, and the special
// values. It returns the largest relative error seen.
func checkExp(t *testing.T, xs []float32) (maxRel float64) {
	t.Helper()
	got := make([]float32, len(xs))
	Exp(got, xs)
	for i, x := range xs {
		want := math.Exp(float64(x))
		g := float64(got[i])
		switch {
		case x != x:
			if g == g {
				t.Fatalf("exp(NaN) = %v", g)
			}
		case want > math.MaxFloat32*(1+0x1p-25):
			if !math.IsInf(g, 1) {
				t.Fatalf("exp(%v) = %v, want +Inf", x, g)
			}
		case want < 0x1p-126:
			if math.Abs(g-want) > 0x1p-149 {
				t.Fatalf("exp(%v) = %v, want %v (subnormal)", x, g, want)
			}
		default:
			rel := math.Abs(g-want) / want
			maxRel = math.Max(maxRel, rel)
			if !(rel <= 2e-7) {
				t.Fatalf("exp(%v) = %v, want %v: relative error %.3g", x, g, want, rel)
			}
		}
	}
	return maxRel
}

func TestExp(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		r := rng(9)
		for _, n := range testLengths {
			for off := 0; off < 2; off++ {
				a := randSlice(r, n, off, 110, true)
				dst := newGuarded(n, 1-off)
				Exp(dst.s, a.s)
				dst.check(t)
				want := append([]float32(nil), dst.s...)
				checkExp(t, a.s)
				Exp(a.s, a.s) // in place
				a.check(t)
				requireSame(t, want, a.s, "dst == a, n=%d", n)
			}
		}
		inf := float32(math.Inf(1))
		xs := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1e-45, -1e-45, 1e-30, 0.5, -0.5,
			0.34657359, -0.34657359, 0.3465736, 10, -10, 50, -50,
			88, 88.5, 88.72, 88.7228, 88.72283, 88.722839, 88.72284, 88.7229, 88.73, 88.8, 88.81, 89, 100, 1e30, inf,
			-80, -87.33, -87.34, -87.4, -90, -100, -103, -103.27, -103.28, -103.9, -103.97, -103.972, -103.98, -104, -104.1, -110, -1e30, -inf,
			float32(math.NaN())}
		rel := checkExp(t, xs)
		t.Logf("special values: max relative error %.3g", rel)
		// A sweep of every 509th float32 in [-104, 89].
		var sweep []float32
		for b := math.Float32bits(89); b >= 509; b -= 509 {
			sweep = append(sweep, math.Float32frombits(b))
		}
		for b := uint32(0x80000000); b < math.Float32bits(-104); b += 509 {
			sweep = append(sweep, math.Float32frombits(b))
		}
		rel = checkExp(t, sweep)
		t.Logf("sweep of %d values: max relative error %.3g (%.2f·2⁻²⁴)", len(sweep), rel, rel/0x1p-24)
	})
}

func TestTanh(t *testing.T) {
	a := []float32{0, 0.5, -0.5, 3, -20, float32(math.NaN()), float32(math.Inf(1))}
	d := make([]float32, len(a))
	Tanh(d, a)
	for i, x := range a {
		assert.True(t, same(float32(math.Tanh(float64(x))), d[i]), "tanh(%v)", x)
	}
}

// softmaxRef is the float64 reference: the loss and the gradient rows.
func softmaxRef(logits []float32, classes int, labels []int64, scale float32) (float64, []float64) {
	grad := make([]float64, len(logits))
	var loss float64
	for r, l := range labels {
		x := logits[r*classes : (r+1)*classes]
		m := math.Inf(-1)
		for _, v := range x {
			m = math.Max(m, float64(v))
		}
		var s float64
		for _, v := range x {
			s += math.Exp(float64(v) - m)
		}
		loss += -(float64(x[l]) - m - math.Log(s))
		for j, v := range x {
			p := math.Exp(float64(v)-m) / s
			if j == int(l) {
				p--
			}
			grad[r*classes+j] = p * float64(scale)
		}
	}
	return loss, grad
}

func TestSoftmaxCrossEntropy(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		r := rng(10)
		for _, classes := range []int{1, 2, 3, 7, 8, 9, 10, 16, 17, 33, 100, 1000, 1003} {
			for _, rows := range []int{0, 1, 3, 17} {
				for _, spread := range []float64{1, 30} {
					logits := randSlice(r, rows*classes, 1, spread, false)
					labels := make([]int64, rows)
					for i := range labels {
						labels[i] = int64(r.IntN(classes))
					}
					scale := float32(1) / float32(max(rows, 1))
					wantLoss, wantGrad := softmaxRef(logits.s, classes, labels, scale)
					grad := newGuarded(rows*classes, 0)
					loss := SoftmaxCrossEntropy(logits.s, classes, labels, grad.s, scale)
					grad.check(t)
					require.InDelta(t, wantLoss, loss, 1e-6*math.Max(1, math.Abs(wantLoss)), "classes=%d rows=%d", classes, rows)
					for i := range wantGrad {
						require.True(t, close(grad.s[i], wantGrad[i], 4e-7*float64(scale)),
							"classes=%d rows=%d i=%d: got %v want %v", classes, rows, i, grad.s[i], wantGrad[i])
					}
					// In place: grad == logits.
					loss2 := SoftmaxCrossEntropy(logits.s, classes, labels, logits.s, scale)
					logits.check(t)
					require.Equal(t, loss, loss2)
					requireSame(t, grad.s, logits.s, "in place classes=%d rows=%d", classes, rows)
				}
			}
		}
		// Large logits do not overflow (max subtracted).
		g := make([]float32, 3)
		loss := SoftmaxCrossEntropy([]float32{1000, 1000, -1000}, 3, []int64{0}, g, 1)
		assert.InDelta(t, math.Ln2, loss, 1e-7)
		assert.InDeltaSlice(t, []float32{-0.5, 0.5, 0}, g, 1e-7)
		// A NaN logit gives NaN.
		loss = SoftmaxCrossEntropy([]float32{1, float32(math.NaN()), 0}, 3, []int64{0}, g, 1)
		assert.True(t, math.IsNaN(loss))
	})
}

func TestSoftmaxCrossEntropyPanics(t *testing.T) {
	g := make([]float32, 6)
	x := []float32{1, 2, 3, 4, 5, 6}
	require.PanicsWithValue(t, "vec.SoftmaxCrossEntropy: label 3 of row 1 out of range [0, 3)", func() {
		SoftmaxCrossEntropy(x, 3, []int64{0, 3}, g, 1)
	})
	assert.Equal(t, make([]float32, 6), g, "nothing written before the panic")
	require.Panics(t, func() { SoftmaxCrossEntropy(x, 3, []int64{-1, 0}, g, 1) })
	require.Panics(t, func() { SoftmaxCrossEntropy(x, 3, []int64{0}, g, 1) })
	require.Panics(t, func() { SoftmaxCrossEntropy(x, 3, []int64{0, 0}, g[:5], 1) })
	require.Panics(t, func() { SoftmaxCrossEntropy(x, 0, nil, g, 1) })
}

// dec is Python's view of a float32 hyperparameter (see decimal), computed
// independently.
func dec(x float32) float64 {
	d, err := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	if err != nil {
		panic(err)
	}
	return d
}

// fma32 is a float32 fused multiply-add (x*y exact in float64; the double
// rounding of the sum is harmless at the tolerances used).
func fmaRef(x, y, z float32) float32 { return float32(float64(x)*float64(y) + float64(z)) }

// relClose checks got against want within 1e-6 relative (or 1e-12 absolute
// near 0).
func relClose(t *testing.T, want, got []float32, msg string, args ...any) {
	t.Helper()
	for i := range want {
		w, g := float64(want[i]), float64(got[i])
		if math.IsNaN(w) && math.IsNaN(g) {
			continue
		}
		if !(math.Abs(w-g) <= 1e-6*math.Abs(w)+1e-12) {
			t.Fatalf("%s: element %d: got %v, want %v", fmt.Sprintf(msg, args...), i, g, w)
		}
	}
}

func TestSGDMomentum(t *testing.T) {
	type cfg struct {
		lr, mom, damp, wd float32
		nesterov          bool
	}
	cfgs := []cfg{
		{0.1, 0, 0, 0, false},
		{0.1, 0, 0, 5e-4, false},
		{0.01, 0.9, 0, 0, false},
		{0.01, 0.9, 0, 1e-4, false},
		{0.01, 0.9, 0.1, 1e-4, false},
		{0.05, 0.9, 0, 1e-4, true},
		{0.05, 0.99, 0, 0, true},
	}
	forKernels(t, func(t *testing.T) {
		r := rng(11)
		for _, c := range cfgs {
			for _, n := range testLengths {
				p := randSlice(r, n, 1, 1, false)
				buf := newGuarded(n, 0)
				wantP := append([]float32(nil), p.s...)
				wantB := make([]float32, n)
				for step := 0; step < 3; step++ {
					g := randSlice(r, n, 0, 1, false)
					// PyTorch 1.13 _single_tensor_sgd, vectorised path.
					for i := range wantP {
						d := g.s[i]
						if c.wd != 0 {
							d = fmaRef(wantP[i], c.wd, d)
						}
						if c.mom != 0 {
							if step == 0 {
								wantB[i] = d
							} else {
								wantB[i] = fmaRef(d, float32(1-dec(c.damp)), wantB[i]*c.mom)
							}
							if c.nesterov {
								d = fmaRef(wantB[i], c.mom, d)
							} else {
								d = wantB[i]
							}
						}
						wantP[i] = fmaRef(d, -c.lr, wantP[i])
					}
					b := buf.s
					if c.mom == 0 {
						b = nil
					}
					SGDMomentum(p.s, g.s, b, c.lr, c.mom, c.damp, c.wd, c.nesterov, step == 0)
					p.check(t)
					buf.check(t)
					relClose(t, wantP, p.s, "param %+v n=%d step=%d", c, n, step)
					if c.mom != 0 {
						relClose(t, wantB, buf.s, "buf %+v n=%d step=%d", c, n, step)
					}
				}
			}
		}
	})
	require.Panics(t, func() { SGDMomentum(make([]float32, 3), make([]float32, 3), nil, 0.1, 0.9, 0, 0, false, true) })
	require.Panics(t, func() { SGDMomentum(make([]float32, 3), make([]float32, 2), nil, 0.1, 0, 0, 0, false, true) })
	SGDMomentum(make([]float32, 3), make([]float32, 3), nil, 0.1, 0, 0, 0, false, true) // buf unused
}

// adamRef is PyTorch 1.13's _single_tensor_adam(w), vectorised kernels.
func adamRef(param, grad, m, v []float32, lr, beta1, beta2, eps, wd float32, step int, decoupled bool) {
	b1, b2, lrd := dec(beta1), dec(beta2), dec(lr)
	bc1 := 1 - math.Pow(b1, float64(step))
	bc2 := 1 - math.Pow(b2, float64(step))
	stepSize := lrd / bc1
	bc2sqrt := float32(math.Sqrt(bc2))
	for i := range param {
		p, g := param[i], grad[i]
		if decoupled {
			p *= float32(1 - lrd*dec(wd)) // param.mul_(1 - lr*wd)
		} else if wd != 0 {
			g = fmaRef(p, wd, g) // grad.add(param, alpha=wd)
		}
		m[i] = fmaRef(g, float32(1-b1), m[i]*beta1)             // exp_avg.mul_(b1).add_(g, alpha=1-b1)
		v[i] = float32(v[i]*beta2) + float32(float32(1-b2)*g*g) // exp_avg_sq.mul_(b2).addcmul_(g, g, value=1-b2)
		d := float32(math.Sqrt(float64(v[i])))/bc2sqrt + eps    // (sqrt(v)/bc2sqrt).add_(eps)
		param[i] = p + float32(-stepSize)*m[i]/d                // param.addcdiv_(m, d, value=-step_size)
	}
}

func TestAdam(t *testing.T) {
	type cfg struct {
		lr, b1, b2, eps, wd float32
		decoupled           bool
	}
	cfgs := []cfg{
		{1e-3, 0.9, 0.999, 1e-8, 0, false},
		{1e-3, 0.9, 0.999, 1e-8, 1e-2, false},
		{1e-3, 0.9, 0.999, 1e-8, 1e-2, true},
		{3e-4, 0.8, 0.99, 1e-6, 0, true},
	}
	forKernels(t, func(t *testing.T) {
		r := rng(12)
		for _, c := range cfgs {
			for _, n := range testLengths {
				p := randSlice(r, n, 1, 1, false)
				m, v := newGuarded(n, 0), newGuarded(n, 1)
				for i := range m.s {
					m.s[i], v.s[i] = 0, 0
				}
				wantP := append([]float32(nil), p.s...)
				wantM, wantV := make([]float32, n), make([]float32, n)
				for step := 1; step <= 3; step++ {
					g := randSlice(r, n, 0, 1, false)
					adamRef(wantP, g.s, wantM, wantV, c.lr, c.b1, c.b2, c.eps, c.wd, step, c.decoupled)
					Adam(p.s, g.s, m.s, v.s, c.lr, c.b1, c.b2, c.eps, c.wd, step, c.decoupled)
					p.check(t)
					m.check(t)
					v.check(t)
					relClose(t, wantM, m.s, "m %+v n=%d step=%d", c, n, step)
					relClose(t, wantV, v.s, "v %+v n=%d step=%d", c, n, step)
					relClose(t, wantP, p.s, "param %+v n=%d step=%d", c, n, step)
				}
			}
		}
		// The first step moves every parameter by about lr against its
		// gradient's sign, and 1-beta2 is 0.001 exactly as in Python (not
		// 1 - float32(0.999)).
		p, g := []float32{1, 1, 1}, []float32{0.5, -2, 1e-3}
		m, v := make([]float32, 3), make([]float32, 3)
		Adam(p, g, m, v, 0.01, 0.9, 0.999, 1e-8, 0, 1, false)
		assert.InDeltaSlice(t, []float32{0.99, 1.01, 0.99}, p, 1e-5)
		assert.Equal(t, float32(0.001)*0.25, v[0])
	})
	require.Panics(t, func() {
		Adam(make([]float32, 2), make([]float32, 2), make([]float32, 2), make([]float32, 1), 1, 0.9, 0.99, 1e-8, 0, 1, false)
	})
	require.Panics(t, func() { Adam(nil, nil, nil, nil, 1, 0.9, 0.99, 1e-8, 0, 0, false) })
}

func TestDecimal(t *testing.T) {
	assert.Equal(t, 0.999, decimal(0.999))
	assert.Equal(t, 0.9, decimal(0.9))
	assert.Equal(t, 1e-8, decimal(1e-8))
	assert.Equal(t, 3e-4, decimal(3e-4))
	assert.Equal(t, 0.0, decimal(0))
	assert.Equal(t, float64(float32(1)/3), float64(float32(decimal(float32(1)/3))))
}

func TestLengthPanics(t *testing.T) {
	a, b := make([]float32, 3), make([]float32, 4)
	require.PanicsWithValue(t, "vec.Add: length mismatch: len(dst), len(a), len(b) = [3 3 4]", func() { Add(a, a, b) })
	for name, f := range map[string]func(){
		"Sub":         func() { Sub(a, b, a) },
		"Mul":         func() { Mul(b, a, a) },
		"Div":         func() { Div(a, a, b) },
		"AddScalar":   func() { AddScalar(a, b, 1) },
		"Axpy":        func() { Axpy(a, 1, b) },
		"ReLU":        func() { ReLU(a, b) },
		"ReLUGrad":    func() { ReLUGrad(a, a, b) },
		"Dot":         func() { Dot(a, b) },
		"Exp":         func() { Exp(a, b) },
		"AddRows":     func() { AddRows(b, b, a) },
		"AddRowsReLU": func() { AddRowsReLU(a, b, a) },
		"AddRows0":    func() { AddRows(a, a, nil) },
		"SumRows":     func() { SumRows(a, b) },
		"SumRows0":    func() { SumRows(nil, b) },
	} {
		require.Panics(t, f, name)
	}
	// Empty rows are fine.
	AddRows(nil, nil, nil)
	AddRows(nil, nil, a)
	SumRows(a, nil)
	SumRows(nil, nil)
}

func TestKernels(t *testing.T) {
	ks := Kernels()
	require.Equal(t, "go", ks[len(ks)-1])
	require.Equal(t, ks[0], Kernel(), "the best kernel is the default")
	_, err := SetKernel("sse")
	require.Error(t, err)
	t.Logf("kernels: %v", ks)
}

func TestNoAllocs(t *testing.T) {
	n := 1003
	a, b, c, d := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], b[i] = float32(i%10), float32(i%7)
	}
	labels := make([]int64, 17)
	logits := make([]float32, 17*59)
	grad := make([]float32, 17*59)
	forKernels(t, func(t *testing.T) {
		var sink float32
		allocs := testing.AllocsPerRun(20, func() {
			Add(c, a, b)
			Sub(c, a, b)
			Mul(c, a, b)
			Div(c, a, b)
			AddScalar(c, a, 1)
			MulScalar(c, a, 2)
			AddScalarReLU(c, a, 3)
			Axpy(c, 0.5, a)
			AddRows(c[:1000], a[:1000], b[:10])
			AddRowsReLU(c[:1000], a[:1000], b[:10])
			ReLU(c, a)
			ReLUGrad(c, a, b)
			sink += Sum(a) + Dot(a, b) + Max(a) + float32(ArgMax(a))
			SumRows(c[:10], a[:1000])
			Exp(c, a)
			Tanh(c[:10], a[:10])
			sink += float32(SoftmaxCrossEntropy(logits, 59, labels, grad, 0.1))
			SGDMomentum(d, b, c, 0.01, 0.9, 0.1, 1e-4, true, false)
			SGDMomentum(d, b, nil, 0.01, 0, 0, 0, false, false)
			Adam(d, b, c, a, 1e-3, 0.9, 0.999, 1e-8, 1e-2, 3, true)
		})
		assert.Zero(t, allocs)
		_ = sink
	})
}

// TestIndex checks ArgMax's search kernel directly, including v = 0 (the
// masked-off lanes of the tail are 0 and must not match) and absent values.
func TestIndex(t *testing.T) {
	forKernels(t, func(t *testing.T) {
		r := rng(13)
		for _, n := range testLengths {
			if n == 0 {
				continue
			}
			a := randSlice(r, n, n%2, 10, false)
			for i := range a.s {
				a.s[i] = float32(1 + r.IntN(5))
			}
			require.Equal(t, -1, indexK(a.s, 0, 0), "n=%d v=0", n)
			require.Equal(t, -1, indexK(a.s, 0, 1), "n=%d no NaN", n)
			for _, v := range []float32{1, 2, 3, 4, 5, 6} {
				want := -1
				for i, x := range a.s {
					if x == v {
						want = i
						break
					}
				}
				require.Equal(t, want, indexK(a.s, v, 0), "n=%d v=%v", n, v)
			}
			for _, pos := range []int{0, n / 3, n - 1} {
				b := append([]float32(nil), a.s...)
				b[pos] = 0
				require.Equal(t, pos, indexK(b, 0, 0), "n=%d zero at %d", n, pos)
				b[pos] = float32(math.NaN())
				require.Equal(t, pos, indexK(b, float32(math.NaN()), 1), "n=%d NaN at %d", n, pos)
			}
		}
	})
}
