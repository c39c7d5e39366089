package tensor_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// unaryCase is one unary operation's result and the expected values.
type unaryCase struct {
	name string
	got  *tensor.Tensor
	want []float64
}

// checkUnary applies the operations cases builds to in, as float32 and as
// float64, and compares them with the expected values. apply maps a
// scalar function over in, for the expectations.
func checkUnary(t *testing.T, in []float64, cases func(x *tensor.Tensor, apply func(func(float64) float64) []float64) []unaryCase) {
	t.Helper()
	apply := func(f func(float64) float64) []float64 {
		out := make([]float64, len(in))
		for i, v := range in {
			out[i] = f(v)
		}
		return out
	}
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		tol := 1e-6
		if dt == device.Float64 {
			tol = 1e-14
		}
		for _, tc := range cases(tensor.FromFloat64(in).Cast(dt), apply) {
			t.Run(tc.name+"/"+dt.String(), func(t *testing.T) {
				assert.Equal(t, dt, tc.got.DType())
				assertValues(t, tc.got, []int{len(in)}, tc.want, tol)
			})
		}
	}
}

func TestUnaryOps(t *testing.T) {
	t.Parallel()
	checkUnary(t, []float64{-2, -0.5, 0, 0.5, 2}, func(x *tensor.Tensor, apply func(func(float64) float64) []float64) []unaryCase {
		return []unaryCase{
			{"Neg", x.Neg(), []float64{2, 0.5, 0, -0.5, -2}},
			{"Abs", x.Abs(), []float64{2, 0.5, 0, 0.5, 2}},
			{"Sign", x.Sign(), []float64{-1, -1, 0, 1, 1}},
			{"Relu", x.Relu(), []float64{0, 0, 0, 0.5, 2}},
			{"Recip", x.Recip(), []float64{-0.5, -2, math.Inf(1), 2, 0.5}},
			{"AddScalar", x.AddScalar(1.5), []float64{-0.5, 1, 1.5, 2, 3.5}},
			{"MulScalar", x.MulScalar(-2), []float64{4, 1, 0, -1, -4}},
			{"PowScalar", x.PowScalar(2), []float64{4, 0.25, 0, 0.25, 4}},
			{"MaxScalar", x.MaxScalar(0.25), []float64{0.25, 0.25, 0.25, 0.5, 2}},
			{"MinScalar", x.MinScalar(0.25), []float64{-2, -0.5, 0, 0.25, 0.25}},
			{"GtScalar", x.GtScalar(0), []float64{0, 0, 0, 1, 1}},
			{"Exp", x.Exp(), apply(math.Exp)},
			{"Log", x.Abs().Log(), apply(func(v float64) float64 { return math.Log(math.Abs(v)) })},
			{"Sqrt", x.Abs().Sqrt(), apply(func(v float64) float64 { return math.Sqrt(math.Abs(v)) })},
			{"Tanh", x.Tanh(), apply(math.Tanh)},
			{"Sigmoid", x.Sigmoid(), apply(func(v float64) float64 { return 1 / (1 + math.Exp(-v)) })},
			{"Erf", x.Erf(), apply(math.Erf)},
		}
	})
	// On a view: the result is dense and follows the view's order.
	m := arange(2, 3)
	assertValues(t, m.T().MulScalar(2), []int{3, 2}, []float64{0, 6, 2, 8, 4, 10}, 0)
	assertValues(t, m.Slice(1, 1, 3).AddScalar(1), []int{2, 2}, []float64{2, 3, 5, 6}, 0)
	assertValues(t, m.Index(1, 0).Expand(2, 2).Neg(), []int{2, 2}, []float64{0, -3, 0, -3}, 0)
	// Stability at large |x|.
	big := tensor.FromFloat32([]float32{-1000, 1000, -88, 88})
	assertValues(t, big.Sigmoid(), []int{4}, []float64{0, 1, 1 / (1 + math.Exp(88)), 1 / (1 + math.Exp(-88))}, 1e-6)
	assertValues(t, big.Tanh(), []int{4}, []float64{-1, 1, -1, 1}, 0)

	assertPanicsWith(t, func() { tensor.FromInt64([]int64{1}).Neg() }, "Neg", "int64")
}

func TestBinaryBroadcast(t *testing.T) {
	t.Parallel()
	a := arange(2, 3)                                 // [[0 1 2] [3 4 5]]
	row := tensor.FromFloat32([]float32{10, 20, 30})  // [3]
	col := tensor.FromFloat32([]float32{1, -1}, 2, 1) // [2 1]
	assertValues(t, a.Add(row), []int{2, 3}, []float64{10, 21, 32, 13, 24, 35}, 0)
	assertValues(t, row.Add(a), []int{2, 3}, []float64{10, 21, 32, 13, 24, 35}, 0)
	assertValues(t, a.Sub(col), []int{2, 3}, []float64{-1, 0, 1, 4, 5, 6}, 0)
	assertValues(t, a.Mul(col), []int{2, 3}, []float64{0, 1, 2, -3, -4, -5}, 0)
	assertValues(t, col.Mul(row), []int{2, 3}, []float64{10, 20, 30, -10, -20, -30}, 0)
	assertValues(t, a.Div(tensor.Scalar(2)), []int{2, 3}, []float64{0, 0.5, 1, 1.5, 2, 2.5}, 0)
	assertValues(t, tensor.Scalar(1).Div(a), []int{2, 3}, []float64{math.Inf(1), 1, 0.5, 1. / 3, 0.25, 0.2}, 1e-7)
	assertValues(t, a.Pow(tensor.FromFloat32([]float32{0, 1, 2})), []int{2, 3}, []float64{1, 1, 4, 1, 4, 25}, 1e-6)
	assertValues(t, a.Maximum(tensor.Scalar(2.5)), []int{2, 3}, []float64{2.5, 2.5, 2.5, 3, 4, 5}, 0)
	assertValues(t, a.Minimum(col.MulScalar(3)), []int{2, 3}, []float64{0, 1, 2, -3, -3, -3}, 0)

	// Comparisons give 1 or 0 in the input type.
	b := tensor.FromFloat32([]float32{0, 4, 2})
	assertValues(t, a.Eq(b), []int{2, 3}, []float64{1, 0, 1, 0, 1, 0}, 0)
	assertValues(t, a.Ne(b), []int{2, 3}, []float64{0, 1, 0, 1, 0, 1}, 0)
	assertValues(t, a.Lt(b), []int{2, 3}, []float64{0, 1, 0, 0, 0, 0}, 0)
	assertValues(t, a.Le(b), []int{2, 3}, []float64{1, 1, 1, 0, 1, 0}, 0)
	assertValues(t, a.Gt(b), []int{2, 3}, []float64{0, 0, 0, 1, 0, 1}, 0)
	assertValues(t, a.Ge(b), []int{2, 3}, []float64{1, 0, 1, 1, 1, 1}, 0)

	// Rank extension on both sides: [4 1 3] with [2 1] gives [4 2 3].
	x := arange(4, 1, 3)
	y := tensor.FromFloat32([]float32{100, 200}, 2, 1)
	s := x.Add(y)
	var want []float64
	forEachIndex([]int{4, 2, 3}, func(i []int) { want = append(want, float64(i[0]*3+i[2])+100*float64(i[1]+1)) })
	assertValues(t, s, []int{4, 2, 3}, want, 0)

	// Views as operands.
	at := arange(3, 2).T() // [[0 2 4] [1 3 5]]
	assertValues(t, at.Add(a), []int{2, 3}, []float64{0, 3, 6, 4, 7, 10}, 0)
	assertValues(t, a.Slice(1, 1, 3).Mul(at.Slice(1, 0, 2)), []int{2, 2}, []float64{0, 4, 4, 15}, 0)

	// float64.
	assertValues(t, arange64(2, 2).Sub(arange64(2)), []int{2, 2}, []float64{0, 0, 2, 2}, 0)
	// Empty.
	assert.Equal(t, []int{0, 3}, tensor.Zeros(0, 1).Add(tensor.Zeros(3)).Shape())

	assertPanicsWith(t, func() { a.Add(arange(2)) }, "Add", "[2 3]", "[2]")
	assertPanicsWith(t, func() { arange(4, 3).Mul(arange(2, 3)) }, "Mul", "[4 3]", "[2 3]")
	assertPanicsWith(t, func() { a.Add(arange64(2, 3)) }, "float32", "float64", "[2 3]")
	assertPanicsWith(t, func() { a.Add(tensor.FromInt64([]int64{1})) }, "int64")
}

func TestWhere(t *testing.T) {
	t.Parallel()
	cond := tensor.FromFloat32([]float32{1, 0, 2}) // [3]
	a := arange(2, 3)
	b := tensor.FromFloat32([]float32{-1, -2}, 2, 1)
	assertValues(t, tensor.Where(cond, a, b), []int{2, 3}, []float64{0, -1, 2, 3, -2, 5}, 0)
	assertValues(t, tensor.Where(cond.Unsqueeze(1), tensor.Scalar(7), tensor.Scalar(8)), []int{3, 1}, []float64{7, 8, 7}, 0)
	assertValues(t, tensor.Where(a.GtScalar(2), a, a.Neg()), []int{2, 3}, []float64{0, -1, -2, 3, 4, 5}, 0)
	assertPanicsWith(t, func() { tensor.Where(arange(4), a, b) }, "[4]", "[2 3]", "[2 1]")
	assertPanicsWith(t, func() { tensor.Where(cond, a, arange(3, 1)) }, "[3]", "[2 3]", "[3 1]")
}

func TestSumTo(t *testing.T) {
	t.Parallel()
	x := arange(2, 3, 4)
	v := x.Values()
	sum := func(shape []int) []float64 {
		n := 1
		for _, d := range shape {
			n *= d
		}
		out := make([]float64, n)
		lead := 3 - len(shape)
		forEachIndex([]int{2, 3, 4}, func(i []int) {
			j := make([]int, len(shape))
			for k := range shape {
				if shape[k] != 1 {
					j[k] = i[k+lead]
				}
			}
			out[flat(shape, j)] += v[flat([]int{2, 3, 4}, i)]
		})
		return out
	}
	for _, shape := range [][]int{{3, 4}, {1, 4}, {3, 1}, {2, 1, 1}, {1, 3, 1}, {4}, {}, {1, 1, 1}, {2, 3, 4}} {
		got := x.SumTo(shape)
		assertValues(t, got, shape, sum(shape), 0)
	}
	assert.True(t, x.SumTo([]int{2, 3, 4}) == x, "SumTo its own shape returns t")
	// SumTo is the adjoint of Expand: <expand(y), x> = <y, sumTo(x)>.
	y := arange(3, 1).AddScalar(1)
	lhs := y.Expand(2, 3, 4).Mul(x).SumAll().Item()
	rhs := y.Mul(x.SumTo([]int{3, 1})).SumAll().Item()
	assert.InDelta(t, lhs, rhs, 1e-3)

	assertPanicsWith(t, func() { x.SumTo([]int{5}) }, "[5]", "[2 3 4]")
	assertPanicsWith(t, func() { x.SumTo([]int{3, 3}) }, "[3 3]", "[2 3 4]")
	assertPanicsWith(t, func() { arange(3).SumTo([]int{2, 3}) }, "[2 3]", "[3]")
}
