package devicetest

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hora-dl/hora/device"
)

// unaryOps lists every UnaryOp with its name and the scalars to try.
var unaryOps = []struct {
	name    string
	op      device.UnaryOp
	scalars []float64
}{
	{"Neg", device.Neg, []float64{0}},
	{"Exp", device.Exp, []float64{0}},
	{"Log", device.Log, []float64{0}},
	{"Sqrt", device.Sqrt, []float64{0}},
	{"Abs", device.Abs, []float64{0}},
	{"Sign", device.Sign, []float64{0}},
	{"Tanh", device.Tanh, []float64{0}},
	{"Sigmoid", device.Sigmoid, []float64{0}},
	{"Relu", device.Relu, []float64{0}},
	{"Erf", device.Erf, []float64{0}},
	{"Recip", device.Recip, []float64{0}},
	{"AddScalar", device.AddScalar, []float64{0, 2.5, -1e4}},
	{"MulScalar", device.MulScalar, []float64{0, -3, 0.5}},
	{"PowScalar", device.PowScalar, []float64{2, 3, 0.5, -1, 0, 1.5}},
	{"MaxScalar", device.MaxScalar, []float64{0, -1, 2.5}},
	{"MinScalar", device.MinScalar, []float64{0, -1, 2.5}},
	{"GtScalar", device.GtScalar, []float64{0, 0.5, -1}},
	{"Floor", device.Floor, []float64{0}},
	{"Ceil", device.Ceil, []float64{0}},
	{"Round", device.Round, []float64{0}},
	{"Sin", device.Sin, []float64{0}},
	{"Cos", device.Cos, []float64{0}},
	{"Tan", device.Tan, []float64{0}},
	{"Asin", device.Asin, []float64{0}},
	{"Acos", device.Acos, []float64{0}},
	{"Atan", device.Atan, []float64{0}},
	{"Sinh", device.Sinh, []float64{0}},
	{"Cosh", device.Cosh, []float64{0}},
	{"Asinh", device.Asinh, []float64{0}},
	{"Acosh", device.Acosh, []float64{0}},
	{"Atanh", device.Atanh, []float64{0}},
	{"IsNaN", device.IsNaN, []float64{0}},
	{"IsInf", device.IsInf, []float64{0}},
}

// unaryRef is the reference of UnaryOp op (see device.UnaryOp).
func unaryRef(op device.UnaryOp, x, s float64) float64 {
	switch op {
	case device.Neg:
		return -x
	case device.Exp:
		return math.Exp(x)
	case device.Log:
		return math.Log(x)
	case device.Sqrt:
		return math.Sqrt(x)
	case device.Abs:
		return math.Abs(x)
	case device.Sign:
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return 0
	case device.Tanh:
		return math.Tanh(x)
	case device.Sigmoid:
		return 1 / (1 + math.Exp(-x))
	case device.Relu:
		return math.Max(x, 0)
	case device.Erf:
		return math.Erf(x)
	case device.Recip:
		return 1 / x
	case device.AddScalar:
		return x + s
	case device.MulScalar:
		return x * s
	case device.PowScalar:
		return math.Pow(x, s)
	case device.MaxScalar:
		return math.Max(x, s)
	case device.MinScalar:
		return math.Min(x, s)
	case device.GtScalar:
		if x > s {
			return 1
		}
		return 0
	case device.Floor:
		return math.Floor(x)
	case device.Ceil:
		return math.Ceil(x)
	case device.Round:
		return math.RoundToEven(x)
	case device.Sin:
		return math.Sin(x)
	case device.Cos:
		return math.Cos(x)
	case device.Tan:
		return math.Tan(x)
	case device.Asin:
		return math.Asin(x)
	case device.Acos:
		return math.Acos(x)
	case device.Atan:
		return math.Atan(x)
	case device.Sinh:
		return math.Sinh(x)
	case device.Cosh:
		return math.Cosh(x)
	case device.Asinh:
		return math.Asinh(x)
	case device.Acosh:
		return math.Acosh(x)
	case device.Atanh:
		return math.Atanh(x)
	case device.IsNaN:
		return b2f(math.IsNaN(x))
	case device.IsInf:
		return b2f(math.IsInf(x, 0))
	}
	panic(fmt.Sprintf("devicetest: unknown unary op %d", op))
}

// edgeValues are the inputs every unary op is tried on: zero, small and
// large magnitudes of both signs.
var edgeValues = []float64{
	0, 1, -1, 0.5, -0.5, 2, -2, 2.5, -3, 1e-3, -1e-3, 1e-20, -1e-20,
	10, -10, 30, -30, 50, -50, 88, -88, 100, -100, 1e4, -1e4, 1e30, -1e30,
}

// TestUnary checks Kernels.Unary for every op on edge values and on a
// large random block, and that elements past n are left alone.
func TestUnary(t *testing.T, dev device.Device) {
	k := dev.Kernels()
	rng := newRand(2)
	random := randFloats(rng, 20_000, -5, 5)
	for _, u := range unaryOps {
		for _, s := range u.scalars {
			for _, dt := range floatTypes {
				name := fmt.Sprintf("%s/s=%g/%v", u.name, s, dt)
				for _, in := range []struct {
					name string
					x    []float64
				}{{"edge", edgeValues}, {"random", random}} {
					t.Run(name+"/"+in.name, func(t *testing.T) {
						n := len(in.x)
						src := Upload(t, dev, dt, append(append([]float64(nil), in.x...), 1, 2))
						xs := Download(t, dev, src)
						dst := Upload(t, dev, dt, sentinel(n+2))
						k.Unary(u.op, dst, src, n, s)
						want := make([]float64, n+2)
						for i := range want {
							if i < n {
								want[i] = roundTo(dt, unaryRef(u.op, xs[i], roundTo(dt, s)))
							} else {
								want[i] = roundTo(dt, sentinel(n + 2)[i])
							}
						}
						checkClose(t, dt, Download(t, dev, dst), want, nil, "%s(x, %g) on %s inputs", u.name, s, in.name)
					})
				}
			}
		}
	}
	// Sigmoid must not overflow into NaN for large |x|.
	for _, dt := range floatTypes {
		t.Run("Sigmoid/large/"+dt.String(), func(t *testing.T) {
			xs := []float64{-1e30, -1e4, -1000, -100, -90, 90, 100, 1000, 1e4, 1e30, math.Inf(1), math.Inf(-1)}
			src := Upload(t, dev, dt, xs)
			dst := Upload(t, dev, dt, make([]float64, len(xs)))
			k.Unary(device.Sigmoid, dst, src, len(xs), 0)
			for i, y := range Download(t, dev, dst) {
				assert.False(t, math.IsNaN(y), "Sigmoid(%g) is NaN", xs[i])
				if xs[i] > 0 {
					assert.Equal(t, 1.0, y, "Sigmoid(%g)", xs[i])
				} else {
					assert.True(t, y >= 0 && y < 1e-30, "Sigmoid(%g) = %g, want ≈ 0", xs[i], y)
				}
			}
		})
	}
	// Special values: NaN and infinities for the predicates, halves for
	// Round (ties go to the even neighbour), signed zeros for Floor/Ceil.
	inf, nan := math.Inf(1), math.NaN()
	special := []float64{nan, inf, -inf, 0, -1.5, -0.5, 0.5, 1.5, 2.5, -2.5, 3, 1e30}
	for _, dt := range floatTypes {
		t.Run("special/"+dt.String(), func(t *testing.T) {
			for _, tc := range []struct {
				op   device.UnaryOp
				want []float64
			}{
				{device.IsNaN, []float64{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
				{device.IsInf, []float64{0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
				{device.Round, []float64{nan, inf, -inf, 0, -2, 0, 0, 2, 2, -2, 3, roundTo(dt, 1e30)}},
				{device.Floor, []float64{nan, inf, -inf, 0, -2, -1, 0, 1, 2, -3, 3, roundTo(dt, 1e30)}},
				{device.Ceil, []float64{nan, inf, -inf, 0, -1, 0, 1, 2, 3, -2, 3, roundTo(dt, 1e30)}},
			} {
				src := Upload(t, dev, dt, special)
				dst := Upload(t, dev, dt, make([]float64, len(special)))
				k.Unary(tc.op, dst, src, len(special), 0)
				checkEqual(t, Download(t, dev, dst), tc.want, "op %d on special values", tc.op)
			}
		})
	}
}

// binaryOps lists every BinaryOp with its name.
var binaryOps = []struct {
	name string
	op   device.BinaryOp
}{
	{"Add", device.Add}, {"Sub", device.Sub}, {"Mul", device.Mul}, {"Div", device.Div},
	{"Pow", device.Pow}, {"Maximum", device.Maximum}, {"Minimum", device.Minimum},
	{"Equal", device.Equal}, {"NotEqual", device.NotEqual}, {"Less", device.Less},
	{"LessEqual", device.LessEqual}, {"Greater", device.Greater}, {"GreaterEqual", device.GreaterEqual},
	{"Mod", device.Mod}, {"Rem", device.Rem},
}

func b2f(c bool) float64 {
	if c {
		return 1
	}
	return 0
}

// binaryRef is the reference of BinaryOp op. Maximum and Minimum propagate NaN.
func binaryRef(op device.BinaryOp, x, y float64) float64 {
	switch op {
	case device.Add:
		return x + y
	case device.Sub:
		return x - y
	case device.Mul:
		return x * y
	case device.Div:
		return x / y
	case device.Pow:
		return math.Pow(x, y)
	case device.Maximum:
		return math.Max(x, y)
	case device.Minimum:
		return math.Min(x, y)
	case device.Equal:
		return b2f(x == y)
	case device.NotEqual:
		return b2f(x != y)
	case device.Less:
		return b2f(x < y)
	case device.LessEqual:
		return b2f(x <= y)
	case device.Greater:
		return b2f(x > y)
	case device.GreaterEqual:
		return b2f(x >= y)
	case device.Mod:
		r := math.Mod(x, y)
		if r != 0 && (r < 0) != (y < 0) {
			r += y
		}
		return r
	case device.Rem:
		return math.Mod(x, y)
	}
	panic(fmt.Sprintf("devicetest: unknown binary op %d", op))
}

// bcastCase is a set of views of one output shape.
type bcastCase struct {
	name string
	ls   []device.Layout // one per operand
}

// broadcastCases returns layouts for n operands viewed with one shape:
// dense, broadcast along various axes (stride 0), permuted and offset.
func broadcastCases(n int) []bcastCase {
	pick := func(ls ...device.Layout) []device.Layout { return ls[:n] }
	return []bcastCase{
		{"dense", pick(dense(0, 2, 3, 4), dense(0, 2, 3, 4), dense(0, 2, 3, 4))},
		{"scalar", pick(dense(0), dense(0), dense(0))},
		{"broadcast-row", pick(dense(0, 3, 4), layout([]int{3, 4}, []int{0, 1}, 0), layout([]int{3, 4}, []int{1, 0}, 0))},
		{"broadcast-col", pick(layout([]int{3, 4}, []int{1, 0}, 0), dense(0, 3, 4), layout([]int{3, 4}, []int{0, 1}, 2))},
		{"broadcast-both", pick(layout([]int{3, 5, 4}, []int{4, 0, 1}, 0), layout([]int{3, 5, 4}, []int{0, 1, 0}, 0), dense(0, 3, 5, 4))},
		{"broadcast-scalar", pick(dense(0, 2, 3), layout([]int{2, 3}, []int{0, 0}, 3), layout([]int{2, 3}, []int{0, 0}, 1))},
		{"permuted-offset", pick(permuted([]int{4, 3}, []int{1, 0}, 2), dense(5, 4, 3), permuted([]int{4, 3}, []int{1, 0}, 1))},
		{"permuted3", pick(permuted([]int{2, 3, 4}, []int{2, 0, 1}, 0), permuted([]int{2, 3, 4}, []int{1, 2, 0}, 3), dense(0, 2, 3, 4))},
		{"unit-axes", pick(layout([]int{2, 1, 3}, []int{3, 17, 1}, 0), layout([]int{2, 1, 3}, []int{0, 9, 1}, 0), dense(0, 2, 1, 3))},
		{"empty", pick(dense(0, 0, 3), dense(0, 0, 3), dense(0, 0, 3))},
		{"large", pick(dense(0, 50, 200), layout([]int{50, 200}, []int{0, 1}, 0), layout([]int{50, 200}, []int{1, 0}, 0))},
		{"large-permuted", pick(permuted([]int{200, 50}, []int{1, 0}, 0), dense(1, 200, 50), layout([]int{200, 50}, []int{0, 1}, 0))},
	}
}

// gridValues returns n values from a coarse grid (multiples of 0.5 in
// [-2, 2]) so that comparisons meet equal operands and divisions meet zero.
func gridValues(rng interface{ IntN(int) int }, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(rng.IntN(9)-4) / 2
	}
	return v
}

// TestBinary checks Kernels.Binary for every op on broadcast layouts.
func TestBinary(t *testing.T, dev device.Device) {
	k := dev.Kernels()
	rng := newRand(3)
	for _, bo := range binaryOps {
		for _, tc := range broadcastCases(2) {
			for _, dt := range floatTypes {
				t.Run(bo.name+"/"+tc.name+"/"+dt.String(), func(t *testing.T) {
					al, bl := tc.ls[0], tc.ls[1]
					av, bv := gridValues(rng, span(al)), gridValues(rng, span(bl))
					if tc.name == "large" || tc.name == "large-permuted" {
						av, bv = randFloats(rng, span(al), -3, 3), randFloats(rng, span(bl), -3, 3)
					}
					a, b := Upload(t, dev, dt, av), Upload(t, dev, dt, bv)
					n := device.NumElements(al.Shape)
					dst := Upload(t, dev, dt, sentinel(n))
					want := make([]float64, 0, n)
					forEach(al.Shape, func(idx []int) {
						want = append(want, roundTo(dt, binaryRef(bo.op, av[at(al, idx)], bv[at(bl, idx)])))
					})
					k.Binary(bo.op, dst, a, al, b, bl)
					checkClose(t, dt, Download(t, dev, dst), want, nil, "%s %v %v", bo.name, al, bl)
				})
			}
		}
	}
	// Mod takes the sign of the divisor, Rem that of the dividend; both
	// are exact and NaN for a zero divisor.
	for _, dt := range floatTypes {
		t.Run("Mod-signs/"+dt.String(), func(t *testing.T) {
			av := []float64{7, -7, 7, -7, 6, -6, 5.5, 1, 0}
			bv := []float64{3, 3, -3, -3, 3, -3, 2, 0, 2}
			nan := math.NaN()
			for _, tc := range []struct {
				op   device.BinaryOp
				want []float64
			}{
				{device.Mod, []float64{1, 2, -2, -1, 0, 0, 1.5, nan, 0}},
				{device.Rem, []float64{1, -1, 1, -1, 0, 0, 1.5, nan, 0}},
			} {
				a, b := Upload(t, dev, dt, av), Upload(t, dev, dt, bv)
				dst := Upload(t, dev, dt, make([]float64, len(av)))
				k.Binary(tc.op, dst, a, dense(0, len(av)), b, dense(0, len(bv)))
				checkEqual(t, Download(t, dev, dst), tc.want, "op %d", tc.op)
			}
		})
	}
	// Maximum and Minimum propagate NaN from either side, as in PyTorch.
	for _, dt := range floatTypes {
		t.Run("NaN/"+dt.String(), func(t *testing.T) {
			nan := math.NaN()
			av := []float64{nan, 1, nan, -1}
			bv := []float64{1, nan, nan, 2}
			a, b := Upload(t, dev, dt, av), Upload(t, dev, dt, bv)
			for _, op := range []device.BinaryOp{device.Maximum, device.Minimum, device.Add} {
				dst := Upload(t, dev, dt, make([]float64, 4))
				k.Binary(op, dst, a, dense(0, 4), b, dense(0, 4))
				got := Download(t, dev, dst)
				for i := 0; i < 3; i++ {
					assert.True(t, math.IsNaN(got[i]), "op %d(%g, %g) = %g, want NaN", op, av[i], bv[i], got[i])
				}
			}
		})
	}
}

// TestWhere checks Kernels.Where on broadcast layouts.
func TestWhere(t *testing.T, dev device.Device) {
	k := dev.Kernels()
	rng := newRand(4)
	conds := []float64{0, 1, 2, -1, 0.5, 0}
	for _, tc := range broadcastCases(3) {
		for _, dt := range floatTypes {
			t.Run(tc.name+"/"+dt.String(), func(t *testing.T) {
				cl, al, bl := tc.ls[2], tc.ls[0], tc.ls[1]
				cv := make([]float64, span(cl))
				for i := range cv {
					cv[i] = conds[rng.IntN(len(conds))]
				}
				av, bv := randFloats(rng, span(al), -3, 3), randFloats(rng, span(bl), -3, 3)
				c, a, b := Upload(t, dev, dt, cv), Upload(t, dev, dt, av), Upload(t, dev, dt, bv)
				n := device.NumElements(al.Shape)
				dst := Upload(t, dev, dt, sentinel(n))
				want := make([]float64, 0, n)
				forEach(al.Shape, func(idx []int) {
					if cv[at(cl, idx)] != 0 {
						want = append(want, av[at(al, idx)])
					} else {
						want = append(want, bv[at(bl, idx)])
					}
				})
				k.Where(dst, c, cl, a, al, b, bl)
				checkEqual(t, Download(t, dev, dst), want, "Where %v %v %v", cl, al, bl)
			})
		}
	}
}
