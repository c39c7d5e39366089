package onnx

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// Tests of ops_reduce.go and ops_index.go: forward values against plain
// loops, finite-difference gradients in float64, and errors (not panics)
// for bad attributes and inputs.

// rdMust is rdCall for tests that expect success.
func rdMust(t *testing.T, op string, opset, nOut int, attrs []*onnxpb.AttributeProto, in ...*autograd.Var) []*autograd.Var {
	t.Helper()
	out, err := callOp(op, opset, nOut, attrs, in...)
	require.NoError(t, err)
	return out
}

func rdF64(vals []float64, shape ...int) *autograd.Var {
	return autograd.Constant(tensor.FromFloat64(vals, shape...))
}

func rdI64(vals []int64, shape ...int) *autograd.Var {
	return autograd.Constant(tensor.FromInt64(vals, shape...))
}

func rdRand(seed uint64, shape ...int) *tensor.Tensor {
	rng := rand.New(rand.NewPCG(seed, 7))
	return tensor.RandNormal(rng, 0, 1, shape...).Cast(device.Float64)
}

// rdGrad checks the gradients of op with respect to the float inputs
// (the others, consts, are passed as they are after them).
func rdGrad(t *testing.T, op string, opset int, attrs []*onnxpb.AttributeProto, inputs []*tensor.Tensor, consts ...*autograd.Var) {
	t.Helper()
	f := func(xs []*autograd.Var) *autograd.Var {
		out, err := callOp(op, opset, 1, attrs, append(append([]*autograd.Var(nil), xs...), consts...)...)
		if err != nil {
			panic(err)
		}
		return out[0]
	}
	require.NotPanics(t, func() {
		require.NoError(t, autograd.GradCheck(f, inputs, autograd.GradCheckOptions{}))
	})
}

func TestReduceGrad(t *testing.T) {
	t.Parallel()
	ops := []string{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
		"ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}
	for _, op := range ops {
		for _, tc := range []struct {
			axes []int64
			keep int64
		}{{[]int64{1}, 1}, {[]int64{0, 2}, 0}, {[]int64{-1, 0}, 1}, {[]int64{2, 1}, 0}, {[]int64{1, 2}, 1}, {nil, 0}} {
			t.Run(fmt.Sprintf("%s%v%d", op, tc.axes, tc.keep), func(t *testing.T) {
				t.Parallel()
				x := rdRand(3, 2, 3, 4)
				if op == "ReduceLogSum" {
					x = x.Abs().AddScalar(0.5) // keep the sums positive
				}
				attrs := []*onnxpb.AttributeProto{attrInt("keepdims", tc.keep)}
				if tc.axes != nil {
					attrs = append(attrs, attrInts("axes", tc.axes...))
				}
				attrOpset := 13
				if op == "ReduceSum" {
					attrOpset = 11
				}
				rdGrad(t, op, attrOpset, attrs, []*tensor.Tensor{x})
				// The same with the axes as an input (opset 18).
				var consts []*autograd.Var
				if tc.axes != nil {
					consts = append(consts, rdI64(tc.axes, len(tc.axes)))
				}
				rdGrad(t, op, 18, attrs[:1], []*tensor.Tensor{x}, consts...)
			})
		}
	}
}

func TestReduceValues(t *testing.T) {
	t.Parallel()
	x := rdF64([]float64{1, -2, 3, 0, 5, -6, 7, 8, -9, 10, 2, 4}, 2, 3, 2)
	axes := []*onnxpb.AttributeProto{attrInts("axes", 0, 2), attrInt("keepdims", 0)}
	// The four values of each group j (axes 0 and 2 reduced).
	group := func(j int) []float64 {
		v := x.Value.Values()
		return []float64{v[2*j], v[2*j+1], v[6+2*j], v[6+2*j+1]}
	}
	fold := func(init float64, f func(acc, v float64) float64, post func(float64) float64) []float64 {
		out := make([]float64, 3)
		for j := range out {
			acc := init
			for _, v := range group(j) {
				acc = f(acc, v)
			}
			out[j] = post(acc)
		}
		return out
	}
	id := func(v float64) float64 { return v }
	want := map[string][]float64{
		"ReduceSum":       fold(0, func(a, v float64) float64 { return a + v }, id),
		"ReduceMean":      fold(0, func(a, v float64) float64 { return a + v }, func(v float64) float64 { return v / 4 }),
		"ReduceMax":       fold(math.Inf(-1), math.Max, id),
		"ReduceMin":       fold(math.Inf(1), math.Min, id),
		"ReduceProd":      fold(1, func(a, v float64) float64 { return a * v }, id),
		"ReduceL1":        fold(0, func(a, v float64) float64 { return a + math.Abs(v) }, id),
		"ReduceL2":        fold(0, func(a, v float64) float64 { return a + v*v }, math.Sqrt),
		"ReduceSumSquare": fold(0, func(a, v float64) float64 { return a + v*v }, id),
		"ReduceLogSum":    fold(100, func(a, v float64) float64 { return a + v }, math.Log),
		"ReduceLogSumExp": fold(0, func(a, v float64) float64 { return a + math.Exp(v) }, math.Log),
	}
	assert.Equal(t, []float64{-112, 0, -240}, want["ReduceProd"])
	for op, w := range want {
		for _, opset := range []int{13, 18} {
			in := []*autograd.Var{x}
			if op == "ReduceLogSum" {
				in[0] = autograd.Constant(x.Value.AddScalar(25))
			}
			at := axes
			if opset == 18 && op != "ReduceSum" || opset >= 13 && op == "ReduceSum" {
				in = append(in, rdI64([]int64{0, 2}, 2))
				at = axes[1:]
			}
			y := rdMust(t, op, opset, 1, at, in...)[0]
			assert.Equal(t, []int{3}, y.Shape(), op)
			assert.InDeltaSlice(t, w, y.Value.Values(), 1e-9, "%s opset %d", op, opset)
		}
	}

	// Integer inputs stay integers.
	xi := rdI64([]int64{1, 2, 3, 4, 5, 6}, 2, 3)
	y := rdMust(t, "ReduceSum", 13, 1, []*onnxpb.AttributeProto{attrInt("keepdims", 1)}, xi, rdI64([]int64{1}, 1))[0]
	assert.Equal(t, device.Int64, y.Value.DType())
	assert.Equal(t, []int64{6, 15}, y.Value.Int64s())
	y = rdMust(t, "ReduceMax", 13, 1, []*onnxpb.AttributeProto{attrInt("keepdims", 0)}, xi)[0]
	assert.Equal(t, []int64{6}, y.Value.Reshape(1).Int64s())
	assert.Empty(t, y.Shape())

	// noop_with_empty_axes keeps the input (after the elementwise part).
	y = rdMust(t, "ReduceSumSquare", 18, 1, []*onnxpb.AttributeProto{attrInt("noop_with_empty_axes", 1)}, x)[0]
	assert.Equal(t, x.Shape(), y.Shape())
	assert.InDelta(t, 36.0, y.Value.Values()[5], 1e-12)
	y = rdMust(t, "ReduceSum", 13, 1, []*onnxpb.AttributeProto{attrInt("noop_with_empty_axes", 1)}, x, rdI64(nil, 0))[0]
	assert.Equal(t, x.Value.Values(), y.Value.Values())
	// ... and without it, empty axes reduce everything.
	y = rdMust(t, "ReduceSum", 13, 1, nil, x, rdI64(nil, 0))[0]
	assert.Equal(t, []int{1, 1, 1}, y.Shape())
	assert.InDelta(t, 23.0, y.Value.Item(), 1e-12)

	// Reductions over nothing give the identity of the operation.
	empty := autograd.Constant(tensor.New(tensor.CPU(), device.Float64, 2, 0))
	for op, w := range map[string]float64{"ReduceSum": 0, "ReduceProd": 1, "ReduceMax": math.Inf(-1), "ReduceMin": math.Inf(1)} {
		y := rdMust(t, op, 11, 1, []*onnxpb.AttributeProto{attrInts("axes", 1), attrInt("keepdims", 0)}, empty)[0]
		assert.Equal(t, []float64{w, w}, y.Value.Values(), op)
	}
}

func TestSoftmaxFamily(t *testing.T) {
	t.Parallel()
	x := rdRand(5, 2, 3, 4)
	for _, op := range []string{"Softmax", "LogSoftmax"} {
		for _, opset := range []int{11, 13} {
			for _, axis := range []int64{0, 1, -1} {
				rdGrad(t, op, opset, []*onnxpb.AttributeProto{attrInt("axis", axis)}, []*tensor.Tensor{x})
			}
		}
	}
	// Opset 11 normalises over all axes from axis on; opset 13 over axis.
	xv := autograd.Constant(x)
	old := rdMust(t, "Softmax", 11, 1, []*onnxpb.AttributeProto{attrInt("axis", 1)}, xv)[0]
	require.Equal(t, []int{2, 3, 4}, old.Shape())
	assert.InDeltaSlice(t, []float64{1, 1}, old.Value.SumAxes([]int{1, 2}, false).Values(), 1e-12)
	assert.True(t, tensor.AllClose(old.Value, x.Reshape(2, 12).Softmax(1).Reshape(2, 3, 4), 1e-12, 1e-12))
	cur := rdMust(t, "Softmax", 13, 1, []*onnxpb.AttributeProto{attrInt("axis", 1)}, xv)[0]
	assert.True(t, tensor.AllClose(cur.Value, x.Softmax(1), 1e-12, 1e-12))
	// The default axis is 1 before opset 13 and -1 from 13 on.
	def := rdMust(t, "LogSoftmax", 1, 1, nil, xv)[0]
	assert.True(t, tensor.AllClose(def.Value, x.Reshape(2, 12).LogSoftmax(1).Reshape(2, 3, 4), 1e-12, 1e-12))
	def = rdMust(t, "LogSoftmax", 13, 1, nil, xv)[0]
	assert.True(t, tensor.AllClose(def.Value, x.LogSoftmax(2), 1e-12, 1e-12))

	h := rdMust(t, "Hardmax", 13, 1, []*onnxpb.AttributeProto{attrInt("axis", 0)},
		rdF64([]float64{1, 5, 3, 5, 2, 5}, 3, 2))[0]
	assert.Equal(t, []float64{0, 1, 1, 0, 0, 0}, h.Value.Values())
	h = rdMust(t, "Hardmax", 11, 1, []*onnxpb.AttributeProto{attrInt("axis", 0)},
		rdF64([]float64{1, 5, 3, 5, 2, 5}, 3, 2))[0]
	assert.Equal(t, []float64{0, 1, 0, 0, 0, 0}, h.Value.Values())
}

// rdCumSumRef is CumSum along the last axis of rows×n values.
func rdCumSumRef(x []float64, n int, exclusive, reverse bool) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x)/n; r++ {
		acc := 0.0
		for k := 0; k < n; k++ {
			j := k
			if reverse {
				j = n - 1 - k
			}
			if exclusive {
				out[r*n+j] = acc
				acc += x[r*n+j]
			} else {
				acc += x[r*n+j]
				out[r*n+j] = acc
			}
		}
	}
	return out
}

func TestCumSum(t *testing.T) {
	t.Parallel()
	for _, n := range []int{5, rdCumSumMatMul + 45} {
		for _, ex := range []int64{0, 1} {
			for _, rev := range []int64{0, 1} {
				attrs := []*onnxpb.AttributeProto{attrInt("exclusive", ex), attrInt("reverse", rev)}
				x := rdRand(uint64(n), 2, n)
				// Along axis 0 of the transposed input, to exercise the
				// axis move.
				y := rdMust(t, "CumSum", 14, 1, attrs, autograd.Constant(x.T().Contiguous()), rdI64([]int64{0}))[0]
				want := rdCumSumRef(x.Values(), n, ex == 1, rev == 1)
				assert.InDeltaSlice(t, want, y.Value.T().Contiguous().Values(), 1e-9, "n=%d exclusive=%d reverse=%d", n, ex, rev)
				if n < 10 {
					rdGrad(t, "CumSum", 14, attrs, []*tensor.Tensor{rdRand(1, 3, n)}, rdI64([]int64{-1}))
				} else {
					rdGrad(t, "CumSum", 14, attrs, []*tensor.Tensor{rdRand(1, 1, n)}, rdI64([]int64{1}))
				}
			}
		}
	}
	y := rdMust(t, "CumSum", 11, 1, nil, rdI64([]int64{1, 2, 3}, 3), rdI64([]int64{0}, 1))[0]
	assert.Equal(t, []int64{1, 3, 6}, y.Value.Int64s())
}

// rdEinsumRef evaluates an einsum of letter terms by looping over every
// assignment of the labels.
func rdEinsumRef(terms []string, out string, xs []*tensor.Tensor) []float64 {
	size := map[rune]int{}
	var labels []rune
	for i, term := range terms {
		for a, l := range term {
			if _, ok := size[l]; !ok {
				labels = append(labels, l)
			}
			size[l] = xs[i].Dim(a)
		}
	}
	vals := make([][]float64, len(xs))
	for i, x := range xs {
		vals[i] = x.Values()
	}
	outLen := 1
	for _, l := range out {
		outLen *= size[l]
	}
	res := make([]float64, outLen)
	at := map[rune]int{}
	var rec func(k int)
	offset := func(term string, shape []int) int {
		o := 0
		for a, l := range term {
			o = o*shape[a] + at[l]
		}
		return o
	}
	rec = func(k int) {
		if k == len(labels) {
			p := 1.0
			for i, term := range terms {
				p *= vals[i][offset(term, xs[i].Shape())]
			}
			o := 0
			for _, l := range out {
				o = o*size[l] + at[l]
			}
			res[o] += p
			return
		}
		for v := 0; v < size[labels[k]]; v++ {
			at[labels[k]] = v
			rec(k + 1)
		}
	}
	rec(0)
	return res
}

func TestEinsum(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		eq     string
		terms  []string // the equation without ellipses, for the reference
		out    string
		shapes [][]int
	}{
		{"ij,jk->ik", []string{"ij", "jk"}, "ik", [][]int{{2, 3}, {3, 4}}},
		{"bij, bjk -> bik", []string{"bij", "bjk"}, "bik", [][]int{{2, 2, 3}, {2, 3, 2}}},
		{"bhid,bhjd->bhij", []string{"bhid", "bhjd"}, "bhij", [][]int{{1, 2, 3, 2}, {1, 2, 2, 2}}},
		{"...ij,...jk->...ik", []string{"bij", "bjk"}, "bik", [][]int{{2, 2, 3}, {2, 3, 2}}},
		{"ij->ji", []string{"ij"}, "ji", [][]int{{2, 3}}},
		{"ij->i", []string{"ij"}, "i", [][]int{{2, 3}}},
		{"i,i", []string{"i", "i"}, "", [][]int{{4}, {4}}},
		{"i,j->ij", []string{"i", "j"}, "ij", [][]int{{3}, {2}}},
		{"ii->i", []string{"ij"}, "ii", [][]int{{3, 3}}}, // reference: see below
		{"ij,jk,kl->il", []string{"ij", "jk", "kl"}, "il", [][]int{{2, 3}, {3, 2}, {2, 2}}},
		{"ij,ij->ij", []string{"ij", "ij"}, "ij", [][]int{{2, 3}, {2, 3}}},
		{"ji,jk", []string{"ji", "jk"}, "ik", [][]int{{3, 2}, {3, 2}}},
		{"bn,anm,bm->ba", []string{"bn", "anm", "bm"}, "ba", [][]int{{2, 3}, {2, 3, 2}, {2, 2}}},
	} {
		t.Run(tc.eq, func(t *testing.T) {
			xs := make([]*tensor.Tensor, len(tc.shapes))
			vs := make([]*autograd.Var, len(tc.shapes))
			for i, s := range tc.shapes {
				xs[i] = rdRand(uint64(10+i), s...)
				vs[i] = autograd.Constant(xs[i])
			}
			attrs := []*onnxpb.AttributeProto{attrString("equation", tc.eq)}
			y := rdMust(t, "Einsum", 12, 1, attrs, vs...)[0]
			var want []float64
			if tc.eq == "ii->i" {
				v := xs[0].Values()
				want = []float64{v[0], v[4], v[8]}
			} else {
				want = rdEinsumRef(tc.terms, tc.out, xs)
			}
			assert.InDeltaSlice(t, want, y.Value.Values(), 1e-9)
			rdGrad(t, "Einsum", 12, attrs, xs)
		})
	}
	// Ellipsis axes broadcast, and the batch diagonal of the suite.
	a := rdRand(1, 2, 1, 2, 3)
	b := rdRand(2, 3, 3, 2)
	attrs := []*onnxpb.AttributeProto{attrString("equation", "...ij,...jk->...ik")}
	y := rdMust(t, "Einsum", 12, 1, attrs, autograd.Constant(a), autograd.Constant(b))[0]
	assert.Equal(t, []int{2, 3, 2, 2}, y.Shape())
	assert.True(t, tensor.AllClose(y.Value, tensor.MatMul(a, b), 1e-12, 1e-12))
	rdGrad(t, "Einsum", 12, attrs, []*tensor.Tensor{a, b})
	d := rdRand(3, 2, 3, 3)
	attrs = []*onnxpb.AttributeProto{attrString("equation", "...ii ->...i")}
	y = rdMust(t, "Einsum", 12, 1, attrs, autograd.Constant(d))[0]
	dv := d.Values()
	assert.Equal(t, []float64{dv[0], dv[4], dv[8], dv[9], dv[13], dv[17]}, y.Value.Values())
	rdGrad(t, "Einsum", 12, attrs, []*tensor.Tensor{d})
	// Integers.
	y = rdMust(t, "Einsum", 12, 1, []*onnxpb.AttributeProto{attrString("equation", "i,i->")},
		rdI64([]int64{1, 2, 3}, 3), rdI64([]int64{4, 5, 6}, 3))[0]
	assert.Equal(t, []int64{32}, y.Value.Reshape(1).Int64s())
}

func TestArgMaxArgMin(t *testing.T) {
	t.Parallel()
	x := rdF64([]float64{2, 7, 7, 1, 1, 0}, 2, 3)
	for _, tc := range []struct {
		op   string
		last int64
		want []int64
	}{
		{"ArgMax", 0, []int64{1, 0}}, {"ArgMax", 1, []int64{2, 1}},
		{"ArgMin", 0, []int64{0, 2}}, {"ArgMin", 1, []int64{0, 2}},
	} {
		attrs := []*onnxpb.AttributeProto{attrInt("axis", -1), attrInt("keepdims", 0), attrInt("select_last_index", tc.last)}
		y := rdMust(t, tc.op, 13, 1, attrs, x)[0]
		assert.Equal(t, tc.want, y.Value.Int64s(), "%s last=%d", tc.op, tc.last)
	}
	y := rdMust(t, "ArgMin", 13, 1, nil, rdI64([]int64{5, 3, 9, 1}, 2, 2))[0]
	assert.Equal(t, []int{1, 2}, y.Shape())
	assert.Equal(t, []int64{0, 1}, y.Value.Int64s())
}

func TestTopK(t *testing.T) {
	t.Parallel()
	x := rdF64([]float64{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8}, 2, 6)
	out := rdMust(t, "TopK", 11, 2, nil, x, rdI64([]int64{3}, 1))
	assert.Equal(t, []float64{9, 5, 4, 8, 6, 5}, out[0].Value.Values())
	assert.Equal(t, []int64{5, 4, 2, 5, 1, 2}, out[1].Value.Int64s())
	out = rdMust(t, "TopK", 11, 2, []*onnxpb.AttributeProto{attrInt("largest", 0), attrInt("axis", 1)}, x, rdI64([]int64{2}, 1))
	assert.Equal(t, []float64{1, 1, 2, 3}, out[0].Value.Values())
	assert.Equal(t, []int64{1, 3, 0, 3}, out[1].Value.Int64s())
	out = rdMust(t, "TopK", 1, 2, []*onnxpb.AttributeProto{attrInt("k", 1), attrInt("axis", 0)}, x)
	assert.Equal(t, []float64{3, 6, 5, 3, 5, 9}, out[0].Value.Values())
	assert.Equal(t, []int64{0, 1, 1, 1, 0, 0}, out[1].Value.Int64s())
	out = rdMust(t, "TopK", 11, 2, []*onnxpb.AttributeProto{attrInt("largest", 0)}, x, rdI64([]int64{1}, 1))
	assert.Equal(t, []float64{1, 2}, out[0].Value.Values())
	out = rdMust(t, "TopK", 11, 2, nil, rdI64([]int64{4, 9, 1}, 3), rdI64([]int64{2}, 1))
	assert.Equal(t, []int64{9, 4}, out[0].Value.Int64s())
	out = rdMust(t, "TopK", 11, 2, nil, x, rdI64([]int64{0}, 1))
	assert.Equal(t, []int{2, 0}, out[0].Shape())
	assert.Equal(t, []int{2, 0}, out[1].Shape())
	for _, k := range []int64{1, 3} {
		rdGrad(t, "TopK", 11, nil, []*tensor.Tensor{rdRand(4, 3, 5)}, rdI64([]int64{k}, 1))
	}
}

func TestOneHot(t *testing.T) {
	t.Parallel()
	idx := rdI64([]int64{0, -1, 2, 7}, 2, 2)
	depth := rdF64([]float64{3}, 1)
	values := rdF64([]float64{-1, 5}, 2)
	y := rdMust(t, "OneHot", 11, 1, []*onnxpb.AttributeProto{attrInt("axis", 1)}, idx, depth, values)[0]
	require.Equal(t, []int{2, 3, 2}, y.Shape())
	assert.Equal(t, []float64{
		5, -1, -1, -1, -1, 5,
		-1, -1, -1, -1, 5, -1}, y.Value.Values())
	y = rdMust(t, "OneHot", 11, 1, nil, rdF64([]float64{1.7}), rdI64([]int64{2}), rdI64([]int64{0, 1}, 2))[0]
	assert.Equal(t, []int64{0, 1}, y.Value.Int64s())
}

func TestOneHotGradOrder(t *testing.T) {
	t.Parallel()
	// values comes third: check its gradient through a wrapper.
	idx := rdI64([]int64{0, 2}, 2)
	depth := rdF64([]float64{3}, 1)
	f := func(xs []*autograd.Var) *autograd.Var {
		out, err := callOp("OneHot", 11, 1, nil, idx, depth, xs[0])
		if err != nil {
			panic(err)
		}
		return out[0]
	}
	require.NoError(t, autograd.GradCheck(f, []*tensor.Tensor{tensor.FromFloat64([]float64{0.5, 2}, 2)}, autograd.GradCheckOptions{}))
}

func TestRange(t *testing.T) {
	t.Parallel()
	y := rdMust(t, "Range", 11, 1, nil, rdI64([]int64{10}), rdI64([]int64{4}), rdI64([]int64{-3}))[0]
	assert.Equal(t, []int64{10, 7}, y.Value.Int64s())
	y = rdMust(t, "Range", 11, 1, nil, rdI64([]int64{1}), rdI64([]int64{1}), rdI64([]int64{2}))[0]
	assert.Equal(t, []int{0}, y.Shape())
	f := autograd.Constant(tensor.FromFloat32([]float32{1}))
	y = rdMust(t, "Range", 11, 1, nil, f, autograd.Constant(tensor.FromFloat32([]float32{2.2})),
		autograd.Constant(tensor.FromFloat32([]float32{0.5})))[0]
	assert.Equal(t, device.Float32, y.Value.DType())
	assert.Equal(t, []float32{1, 1.5, 2}, y.Value.Float32s())
}

func TestReduceOpsErrors(t *testing.T) {
	t.Parallel()
	x := rdRand(1, 2, 3)
	xv := autograd.Constant(x)
	xi := rdI64([]int64{1, 2}, 2)
	eq := func(s string) []*onnxpb.AttributeProto { return []*onnxpb.AttributeProto{attrString("equation", s)} }
	for _, tc := range []struct {
		name, op string
		opset    int
		attrs    []*onnxpb.AttributeProto
		in       []*autograd.Var
		want     string
	}{
		{"axis out of range", "ReduceMean", 13, []*onnxpb.AttributeProto{attrInts("axes", 2)}, []*autograd.Var{xv}, "out of range"},
		{"repeated axes", "ReduceMax", 13, []*onnxpb.AttributeProto{attrInts("axes", 1, -1)}, []*autograd.Var{xv}, "repeats"},
		{"axes attribute at 18", "ReduceMean", 18, []*onnxpb.AttributeProto{attrInts("axes", 1)}, []*autograd.Var{xv}, "second input"},
		{"axes input 2-D", "ReduceSum", 13, nil, []*autograd.Var{xv, rdI64([]int64{0}, 1, 1)}, "1-D"},
		{"no data", "ReduceSum", 13, nil, []*autograd.Var{nil}, "missing"},
		{"softmax int", "Softmax", 13, nil, []*autograd.Var{xi}, "float"},
		{"softmax axis", "LogSoftmax", 13, []*onnxpb.AttributeProto{attrInt("axis", 2)}, []*autograd.Var{xv}, "out of range"},
		{"softmax scalar", "Softmax", 13, nil, []*autograd.Var{rdF64([]float64{1})}, "rank"},
		{"cumsum axis shape", "CumSum", 14, nil, []*autograd.Var{xv, rdI64([]int64{0, 1}, 2)}, "scalar"},
		{"cumsum axis range", "CumSum", 14, nil, []*autograd.Var{xv, rdI64([]int64{-3}, 1)}, "out of range"},
		{"cumsum axis float", "CumSum", 14, nil, []*autograd.Var{xv, rdF64([]float64{0})}, "int"},
		{"cumsum missing axis", "CumSum", 14, nil, []*autograd.Var{xv}, "missing"},
		{"argmax axis", "ArgMax", 13, []*onnxpb.AttributeProto{attrInt("axis", 5)}, []*autograd.Var{xv}, "out of range"},
		{"argmax empty", "ArgMax", 13, []*onnxpb.AttributeProto{attrInt("axis", 1)},
			[]*autograd.Var{autograd.Constant(tensor.New(tensor.CPU(), device.Float64, 2, 0))}, "empty"},
		{"topk k too big", "TopK", 11, nil, []*autograd.Var{xv, rdI64([]int64{4}, 1)}, "out of range"},
		{"topk k negative", "TopK", 11, nil, []*autograd.Var{xv, rdI64([]int64{-1}, 1)}, "out of range"},
		{"topk k shape", "TopK", 11, nil, []*autograd.Var{xv, rdI64([]int64{1, 1}, 2)}, "one value"},
		{"topk no k attr", "TopK", 1, nil, []*autograd.Var{xv}, "attribute k"},
		{"onehot depth", "OneHot", 11, nil, []*autograd.Var{xi, rdI64([]int64{0}), rdI64([]int64{0, 1}, 2)}, "positive"},
		{"onehot values", "OneHot", 11, nil, []*autograd.Var{xi, rdI64([]int64{3}), rdI64([]int64{0, 1, 2}, 3)}, "[2]"},
		{"onehot axis", "OneHot", 11, []*onnxpb.AttributeProto{attrInt("axis", 3)}, []*autograd.Var{xi, rdI64([]int64{3}), rdI64([]int64{0, 1}, 2)}, "out of range"},
		{"range delta 0", "Range", 11, nil, []*autograd.Var{rdI64([]int64{0}), rdI64([]int64{3}), rdI64([]int64{0})}, "delta"},
		{"range float delta 0", "Range", 11, nil, []*autograd.Var{rdF64([]float64{0}), rdF64([]float64{3}), rdF64([]float64{0})}, "delta"},
		{"range types", "Range", 11, nil, []*autograd.Var{rdI64([]int64{0}), rdF64([]float64{3}), rdI64([]int64{1})}, "limit"},
		{"range not scalar", "Range", 11, nil, []*autograd.Var{rdI64([]int64{0, 1}, 2), rdI64([]int64{3}), rdI64([]int64{1})}, "scalar"},
		{"einsum no equation", "Einsum", 12, nil, []*autograd.Var{xv}, "equation"},
		{"einsum terms", "Einsum", 12, eq("ij,jk->ik"), []*autograd.Var{xv}, "2 input terms"},
		{"einsum rank", "Einsum", 12, eq("ijk->i"), []*autograd.Var{xv}, "does not fit"},
		{"einsum char", "Einsum", 12, eq("i1->i"), []*autograd.Var{xv}, "letters"},
		{"einsum output label", "Einsum", 12, eq("ij->k"), []*autograd.Var{xv}, "in no input"},
		{"einsum output repeat", "Einsum", 12, eq("ij->ii"), []*autograd.Var{xv}, "repeats"},
		{"einsum lengths", "Einsum", 12, eq("ij,ij->i"), []*autograd.Var{xv, autograd.Constant(rdRand(2, 3, 2))}, "length"},
		{"einsum diagonal", "Einsum", 12, eq("ii->i"), []*autograd.Var{xv}, "length"},
		{"einsum two ellipses", "Einsum", 12, eq("...i...->i"), []*autograd.Var{xv}, "two ellipses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := callOp(tc.op, tc.opset, 2, tc.attrs, tc.in...)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "panic")
			assert.Contains(t, err.Error(), tc.want)
			assert.False(t, errors.Is(err, ErrUnsupported), "a bad model is not an unsupported one: %v", err)
		})
	}
}
