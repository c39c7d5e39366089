package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

func TestConcatStackSplit(t *testing.T) {
	t.Parallel()
	a := arange(2, 3)               // [[0 1 2] [3 4 5]]
	b := arange(1, 3).AddScalar(10) // [[10 11 12]]
	c := arange(2, 2).AddScalar(20) // [[20 21] [22 23]]
	assertValues(t, tensor.Concat(0, a, b), []int{3, 3}, []float64{0, 1, 2, 3, 4, 5, 10, 11, 12}, 0)
	assertValues(t, tensor.Concat(1, a, c), []int{2, 5}, []float64{0, 1, 2, 20, 21, 3, 4, 5, 22, 23}, 0)
	assertValues(t, tensor.Concat(-1, c, a.Slice(1, 1, 2)), []int{2, 3}, []float64{20, 21, 1, 22, 23, 4}, 0)
	assertValues(t, tensor.Concat(0, a.T(), c), []int{5, 2}, []float64{0, 3, 1, 4, 2, 5, 20, 21, 22, 23}, 0)
	single := tensor.Concat(0, a)
	assertValues(t, single, []int{2, 3}, a.Values(), 0)
	assert.False(t, single.Buffer() == a.Buffer(), "Concat copies")
	assert.Equal(t, []int{2, 3}, tensor.Concat(0, a, tensor.Zeros(0, 3)).Shape())
	i := tensor.Concat(0, tensor.FromInt64([]int64{1}, 1), tensor.FromInt64([]int64{2, 3}))
	assert.Equal(t, []int64{1, 2, 3}, i.Int64s())

	assertValues(t, tensor.Stack(0, a, a.MulScalar(2)), []int{2, 2, 3}, []float64{0, 1, 2, 3, 4, 5, 0, 2, 4, 6, 8, 10}, 0)
	assertValues(t, tensor.Stack(1, a, a.MulScalar(2)), []int{2, 2, 3}, []float64{0, 1, 2, 0, 2, 4, 3, 4, 5, 6, 8, 10}, 0)
	assertValues(t, tensor.Stack(-1, a, a.MulScalar(2)), []int{2, 3, 2}, []float64{0, 0, 1, 2, 2, 4, 3, 6, 4, 8, 5, 10}, 0)
	assertValues(t, tensor.Stack(0, tensor.Scalar(1), tensor.Scalar(2)), []int{2}, []float64{1, 2}, 0)

	parts := arange(2, 7).Split(1, 2, 0, 5)
	require.Len(t, parts, 3)
	assertValues(t, parts[0], []int{2, 2}, []float64{0, 1, 7, 8}, 0)
	assert.Equal(t, []int{2, 0}, parts[1].Shape())
	assertValues(t, parts[2], []int{2, 5}, []float64{2, 3, 4, 5, 6, 9, 10, 11, 12, 13}, 0)
	assertValues(t, tensor.Concat(1, parts...), []int{2, 7}, arange(2, 7).Values(), 0)
	assertValues(t, arange(4, 2).Split(-2, 1, 3)[1], []int{3, 2}, []float64{2, 3, 4, 5, 6, 7}, 0)

	assertPanicsWith(t, func() { tensor.Concat(0, a, c) }, "[2 3]", "[2 2]")
	assertPanicsWith(t, func() { tensor.Concat(0, a, arange(3)) }, "[2 3]", "[3]")
	assertPanicsWith(t, func() { tensor.Concat(0, a, arange64(1, 3)) }, "float32", "float64")
	assertPanicsWith(t, func() { tensor.Stack(0, a, b) }, "[2 3]", "[1 3]")
	assertPanicsWith(t, func() { arange(2, 7).Split(1, 2, 2) }, "[2 2]", "[2 7]")
	assertPanicsWith(t, func() { tensor.Concat(0) }, "Concat")
}

func TestGatherScatter(t *testing.T) {
	t.Parallel()
	x := arange(3, 4) // [[0 1 2 3] [4 5 6 7] [8 9 10 11]]
	// Along axis 1: out[i][j] = x[i][idx[i][j]].
	idx1 := tensor.FromInt64([]int64{3, 0, 1, 1, 2, 2}, 3, 2)
	assertValues(t, x.Gather(1, idx1), []int{3, 2}, []float64{3, 0, 5, 5, 10, 10}, 0)
	// Along axis 0: out[i][j] = x[idx[i][j]][j].
	idx0 := tensor.FromInt64([]int64{2, 0, 1, 0}, 1, 4)
	assertValues(t, x.Gather(0, idx0), []int{1, 4}, []float64{8, 1, 6, 3}, 0)
	assertValues(t, x.Gather(-2, idx0), []int{1, 4}, []float64{8, 1, 6, 3}, 0)
	// On views (non-contiguous input and index).
	assertValues(t, x.T().Gather(1, tensor.FromInt64([]int64{2, 0, 1, 0}, 4, 1)), []int{4, 1}, []float64{8, 1, 6, 3}, 0)
	assertValues(t, x.Gather(1, idx1.T().T()), []int{3, 2}, []float64{3, 0, 5, 5, 10, 10}, 0)
	// int64 data.
	assert.Equal(t, []int64{3, 0, 5, 5, 10, 10}, x.Cast(device.Int64).Gather(1, idx1).Int64s())

	// ScatterAdd is Gather's adjoint: repeated indices accumulate.
	base := tensor.Zeros(3, 4)
	src := tensor.FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 3, 2)
	sa := base.ScatterAdd(1, idx1, src)
	assertValues(t, sa, []int{3, 4}, []float64{2, 0, 0, 1, 0, 7, 0, 0, 0, 0, 11, 0}, 0)
	assertValues(t, base, []int{3, 4}, make([]float64, 12), 0) // the input is untouched
	assertValues(t, x.ScatterAdd(0, idx0, tensor.FromFloat32([]float32{1, 1, 1, 1}, 1, 4)),
		[]int{3, 4}, []float64{0, 2, 2, 4, 4, 5, 7, 7, 9, 9, 10, 11}, 0)
	// <gather(x), y> = <x, scatterAdd(0, y)>.
	y := tensor.FromFloat32([]float32{1, -2, 3, 0.5, -1, 2}, 3, 2)
	lhs := x.Gather(1, idx1).Mul(y).SumAll().Item()
	rhs := x.Mul(tensor.Zeros(3, 4).ScatterAdd(1, idx1, y)).SumAll().Item()
	assert.InDelta(t, lhs, rhs, 1e-5)

	assertPanicsWith(t, func() { x.Gather(1, tensor.FromInt64([]int64{0, 1}, 2, 1)) }, "[2 1]", "[3 4]")
	assertPanicsWith(t, func() { x.Gather(1, tensor.FromInt64([]int64{0, 1, 2}, 3)) }, "[3]", "[3 4]")
	assertPanicsWith(t, func() { x.Gather(1, tensor.FromFloat32([]float32{0, 1, 2}, 3, 1)) }, "int64", "float32")
	assertPanicsWith(t, func() { base.ScatterAdd(1, idx1, arange(2, 3)) }, "[3 2]", "[2 3]")
	assertPanicsWith(t, func() { base.ScatterAdd(1, tensor.FromInt64([]int64{0, 1}, 2, 1), arange(2, 1)) }, "[2 1]", "[3 4]")
	assertPanicsWith(t, func() { base.ScatterAdd(1, idx1, src.Cast(device.Float64)) }, "float32", "float64")
	assertPanicsWith(t, func() { x.Gather(1, tensor.FromInt64([]int64{0, 4, 1, 1, 2, 2}, 3, 2)) }, "4")
}

func TestIndexSelectAdd(t *testing.T) {
	t.Parallel()
	x := arange(3, 4)
	idx := tensor.FromInt64([]int64{2, 0, 2})
	assertValues(t, x.IndexSelect(0, idx), []int{3, 4}, []float64{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}, 0)
	assertValues(t, x.IndexSelect(1, idx), []int{3, 3}, []float64{2, 0, 2, 6, 4, 6, 10, 8, 10}, 0)
	assertValues(t, x.IndexSelect(-1, tensor.FromInt64(nil)), []int{3, 0}, nil, 0)
	assertValues(t, x.T().IndexSelect(0, tensor.FromInt64([]int64{1}, 1)), []int{1, 3}, []float64{1, 5, 9}, 0)

	// IndexAdd accumulates repeated indices.
	src := tensor.FromFloat32([]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 3, 4)
	assertValues(t, tensor.Zeros(3, 4).IndexAdd(0, idx, src), []int{3, 4}, []float64{5, 6, 7, 8, 0, 0, 0, 0, 10, 12, 14, 16}, 0)
	assertValues(t, x.IndexAdd(1, idx, src.Slice(1, 0, 3)), []int{3, 4}, []float64{2, 1, 6, 3, 10, 5, 18, 7, 18, 9, 30, 11}, 0)
	// <indexSelect(x), y> = <x, indexAdd(0, y)>.
	y := src.AddScalar(-6)
	lhs := x.IndexSelect(0, idx).Mul(y).SumAll().Item()
	rhs := x.Mul(tensor.Zeros(3, 4).IndexAdd(0, idx, y)).SumAll().Item()
	assert.InDelta(t, lhs, rhs, 1e-4)

	assertPanicsWith(t, func() { x.IndexSelect(0, tensor.FromInt64([]int64{0, 1}, 1, 2)) }, "[1 2]")
	assertPanicsWith(t, func() { x.IndexSelect(0, tensor.FromFloat32([]float32{0}, 1)) }, "int64", "float32")
	assertPanicsWith(t, func() { x.IndexAdd(0, idx, arange(2, 4)) }, "[2 4]", "[3 4]")
	assertPanicsWith(t, func() { x.IndexAdd(0, idx, arange64(3, 4)) }, "float32", "float64")
	assertPanicsWith(t, func() { x.IndexSelect(0, tensor.FromInt64([]int64{3}, 1)) }, "3")
}
