package tensor_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/tensor"
)

func TestConstructors(t *testing.T) {
	t.Parallel()
	z := tensor.Zeros(2, 3)
	assert.Equal(t, []int{2, 3}, z.Shape())
	assert.Equal(t, device.Float32, z.DType())
	assert.Equal(t, 6, z.Len())
	assert.Equal(t, 2, z.Rank())
	assert.Equal(t, 3, z.Dim(-1))
	assert.Equal(t, 2, z.Dim(0))
	assert.Equal(t, []float64{0, 0, 0, 0, 0, 0}, z.Values())
	assert.True(t, z.Device() == tensor.CPU())
	assert.True(t, z.IsContiguous())

	f := tensor.Full(tensor.CPU(), device.Float64, 2.5, 2, 2)
	assert.Equal(t, device.Float64, f.DType())
	assert.Equal(t, []float64{2.5, 2.5, 2.5, 2.5}, f.Float64s())
	i := tensor.Full(tensor.CPU(), device.Int64, 3, 3)
	assert.Equal(t, []int64{3, 3, 3}, i.Int64s())
	assertValues(t, tensor.ZerosLike(f), []int{2, 2}, []float64{0, 0, 0, 0}, 0)
	assert.Equal(t, device.Float64, tensor.FullLike(f, 1).DType())
	assertValues(t, tensor.FullLike(i, -1), []int{3}, []float64{-1, -1, -1}, 0)

	s := tensor.Scalar(4)
	assert.Equal(t, 0, s.Rank())
	assert.Equal(t, 1, s.Len())
	assert.Equal(t, 4.0, s.Item())
	assert.Equal(t, []int{3}, tensor.FromFloat32([]float32{1, 2, 3}).Shape(), "no shape means 1-D")
	assert.Equal(t, []int{0}, tensor.FromFloat64(nil).Shape())
	assert.Equal(t, []int64{5, 6}, tensor.FromInt64([]int64{5, 6}, 2, 1).Int64s())

	assertPanicsWith(t, func() { tensor.Zeros(2, -1) }, "[2 -1]")
	assertPanicsWith(t, func() { tensor.FromFloat32([]float32{1, 2, 3}, 2, 2) }, "3", "[2 2]")
	assertPanicsWith(t, func() { arange(2).Item() }, "[2]")
	assertPanicsWith(t, func() { arange(2).Dim(2) }, "[2]")
	assertPanicsWith(t, func() { arange(2).Float64s() }, "float32", "float64")
}

func TestFromSlice(t *testing.T) {
	t.Parallel()
	x, err := tensor.FromSlice(tensor.CPU(), []float64{1, 2, 3, 4}, 2, 2)
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 2, 3, 4}, x.Float64s())
	_, err = tensor.FromSlice(tensor.CPU(), []float32{1, 2, 3}, 2, 2)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "[2 2]")
	_, err = tensor.FromSlice(tensor.CPU(), []int{1}, 1)
	assert.Error(t, err)
	// The data is copied.
	data := []int64{1, 2}
	y, err := tensor.FromSlice(tensor.CPU(), data, 2)
	require.NoError(t, err)
	data[0] = 9
	assert.Equal(t, []int64{1, 2}, y.Int64s())
}

func TestShapeAccessorsCopy(t *testing.T) {
	t.Parallel()
	x := arange(2, 3)
	x.Shape()[0] = 7
	x.Strides()[0] = 7
	l := x.Layout()
	l.Shape[0], l.Strides[0] = 9, 9
	assert.Equal(t, []int{2, 3}, x.Shape())
	assert.Equal(t, []int{3, 1}, x.Strides())
	s := x.Slice(1, 1, 3)
	assert.Equal(t, device.Layout{Shape: []int{2, 2}, Strides: []int{3, 1}, Offset: 1}, s.Layout())
}

func TestIsContiguous(t *testing.T) {
	t.Parallel()
	x := arange(2, 3, 4)
	assert.True(t, x.IsContiguous())
	assert.False(t, x.Slice(0, 1, 2).IsContiguous(), "offset view")
	assert.False(t, x.Slice(2, 0, 2).IsContiguous(), "gaps")
	assert.False(t, x.Transpose(0, 1).IsContiguous())
	assert.False(t, arange(3, 1).Expand(3, 4).IsContiguous())
	assert.True(t, x.Unsqueeze(1).IsContiguous())
	assert.True(t, arange(3, 1).Transpose(0, 1).IsContiguous(), "swapping a unit axis keeps the order")
	assert.True(t, tensor.Zeros(0, 3).IsContiguous())
}

func TestCastCloneValues(t *testing.T) {
	t.Parallel()
	x := tensor.FromFloat32([]float32{-2.7, -0.5, 0, 1.5, 3.99}, 5)
	i := x.Cast(device.Int64)
	assert.Equal(t, device.Int64, i.DType())
	assert.Equal(t, []int64{-2, 0, 0, 1, 3}, i.Int64s(), "float to int64 truncates toward zero")
	d := i.Cast(device.Float64)
	assert.Equal(t, []float64{-2, 0, 0, 1, 3}, d.Float64s())
	assert.True(t, x.Cast(device.Float32) == x, "Cast to the same type returns t")
	f64 := x.Cast(device.Float64)
	assert.InDelta(t, -2.7, f64.Float64s()[0], 1e-6)

	// Cast of a view takes the view's elements.
	m := arange(2, 3)
	assertValues(t, m.T().Cast(device.Int64), []int{3, 2}, []float64{0, 3, 1, 4, 2, 5}, 0)
	assertValues(t, m.Slice(1, 1, 2).Cast(device.Float64), []int{2, 1}, []float64{1, 4}, 0)

	c := m.T().Clone()
	assert.True(t, c.IsContiguous())
	assert.False(t, c.Buffer() == m.Buffer())
	assertValues(t, c, []int{3, 2}, []float64{0, 3, 1, 4, 2, 5}, 0)
}

func TestCopyFrom(t *testing.T) {
	t.Parallel()
	x := tensor.Zeros(3, 4)
	// Into a view, with broadcasting and type conversion.
	x.Slice(1, 1, 3).CopyFrom(tensor.FromFloat64([]float64{7, 8}, 2))
	assertValues(t, x, []int{3, 4}, []float64{0, 7, 8, 0, 0, 7, 8, 0, 0, 7, 8, 0}, 0)
	x.T().Index(0, 3).CopyFrom(tensor.FromInt64([]int64{1, 2, 3}))
	assertValues(t, x.Index(1, 3), []int{3}, []float64{1, 2, 3}, 0)
	x.CopyFrom(tensor.Scalar(5))
	assertValues(t, x, []int{3, 4}, []float64{5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, 0)

	// Overlapping views of one buffer: the source is read as before.
	y := arange(3, 3)
	y.CopyFrom(y.T())
	assertValues(t, y, []int{3, 3}, []float64{0, 3, 6, 1, 4, 7, 2, 5, 8}, 0)
	z := arange(6)
	z.Slice(0, 1, 6).CopyFrom(z.Slice(0, 0, 5))
	assertValues(t, z, []int{6}, []float64{0, 0, 1, 2, 3, 4}, 0)

	assertPanicsWith(t, func() { x.CopyFrom(arange(4, 3)) }, "[3 4]", "[4 3]")
	assertPanicsWith(t, func() { x.CopyFrom(arange(2, 3, 4)) }, "[3 4]", "[2 3 4]")
	other := tensor.New(cpu.New(), device.Float32, 3, 4)
	assertPanicsWith(t, func() { x.CopyFrom(other) }, "CopyFrom")
}

func TestFill(t *testing.T) {
	t.Parallel()
	x := arange(3, 4)
	x.Fill(2)
	assert.Equal(t, []float32{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, x.Float32s())
	x = arange(3, 4)
	x.T().Slice(0, 1, 2).Fill(-1) // column 1, a strided view
	assertValues(t, x, []int{3, 4}, []float64{0, -1, 2, 3, 4, -1, 6, 7, 8, -1, 10, 11}, 0)
	x.Slice(0, 2, 3).Fill(0)
	assertValues(t, x.Index(0, 2), []int{4}, []float64{0, 0, 0, 0}, 0)
	i := tensor.FromInt64([]int64{1, 2, 3, 4}, 2, 2)
	i.Index(1, 0).Fill(9)
	assert.Equal(t, []int64{9, 2, 9, 4}, i.Int64s())
}

func TestTo(t *testing.T) {
	t.Parallel()
	x := arange(2, 3).T()
	assert.True(t, x.To(tensor.CPU()) == x, "To the same device returns t")
	dev, err := device.Open("cpu")
	require.NoError(t, err)
	assert.True(t, dev == tensor.CPU(), `device.Open("cpu") is the device of tensor.CPU()`)
	assert.True(t, x.To(dev) == x)
	dev = cpu.New() // a distinct device
	y := x.To(dev)
	assert.True(t, y.Device() == dev)
	assert.True(t, y.IsContiguous())
	assert.Equal(t, x.Values(), y.Values())
	for _, dt := range []device.DType{device.Float64, device.Int64} {
		z := x.Cast(dt).To(dev)
		assert.Equal(t, dt, z.DType())
		assert.Equal(t, x.Values(), z.Values())
	}
}

func TestStringAllClose(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "Tensor([[0, 1, 2], [3, 4, 5]], float32)", arange(2, 3).String())
	assert.Equal(t, "Tensor([[0, 3], [1, 4], [2, 5]], float32)", arange(2, 3).T().String())
	assert.Equal(t, "Tensor(2.5, float64)", tensor.FromFloat64([]float64{2.5}).String())
	assert.Equal(t, "Tensor([], int64)", tensor.FromInt64(nil).String())
	assert.Equal(t, "Tensor([10 10], float32, cpu)", tensor.Zeros(10, 10).String())

	a := tensor.FromFloat64([]float64{1, 2, math.NaN()})
	b := tensor.FromFloat64([]float64{1, 2.0001, math.NaN()})
	assert.True(t, tensor.AllClose(a, b, 1e-3, 0))
	assert.False(t, tensor.AllClose(a, b, 1e-6, 0))
	assert.False(t, tensor.AllClose(a, b.Reshape(3, 1), 1, 1), "shapes differ")
	assert.False(t, tensor.AllClose(a, tensor.FromFloat64([]float64{1, 2, 3}), 1, 1), "NaN vs number")
	assert.True(t, tensor.AllClose(arange(2, 2), arange64(2, 2), 0, 0), "types may differ")
}

func TestStringOfEmptyTensorWithHugeDimension(t *testing.T) {
	t.Parallel()
	e := tensor.New(tensor.CPU(), device.Float32, 1<<40, 0)
	assert.Equal(t, "Tensor([], float32)", e.String())
}
