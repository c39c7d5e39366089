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

func TestFloat16CastRoundTrip(t *testing.T) {
	t.Parallel()
	// Values exact in float16 come back unchanged, 65520 and up overflow,
	// the others round to nearest even (0.1 to 0.0999755859375).
	x := tensor.FromFloat32([]float32{0, -1, 0.5, 2049, 65504, 1e5, -0.1, float32(math.Inf(-1))}, 2, 4)
	h := x.Cast(device.Float16)
	assert.Equal(t, device.Float16, h.DType())
	assert.Equal(t, []int{2, 4}, h.Shape())
	assert.Equal(t, []uint16{0x0000, 0xbc00, 0x3800, 0x6800, 0x7bff, 0x7c00, 0xae66, 0xfc00}, h.Float16s())
	back := h.Cast(device.Float32)
	assert.Equal(t, []float32{0, -1, 0.5, 2048, 65504, float32(math.Inf(1)), -0.0999755859375, float32(math.Inf(-1))}, back.Float32s())
	assert.Equal(t, []float64{0, -1, 0.5, 2048, 65504, math.Inf(1), -0.0999755859375, math.Inf(-1)}, h.Values())
	assert.Equal(t, []int64{0, -1, 0, 2048, 65504}, h.Reshape(-1).Slice(0, 0, 5).Cast(device.Int64).Int64s(), "float16 to int64 truncates")

	// A transposed view casts elementwise.
	m := arange(2, 3)
	assertValues(t, m.T().Cast(device.Float16).Cast(device.Float64), []int{3, 2}, []float64{0, 3, 1, 4, 2, 5}, 0)
	assert.Contains(t, h.Slice(0, 0, 1).String(), "float16")
}

func TestFloat16FromSliceAndTo(t *testing.T) {
	t.Parallel()
	h, err := tensor.FromSlice(tensor.CPU(), []uint16{0x3c00, 0x4000, 0xc200}, 3)
	require.NoError(t, err)
	assert.Equal(t, device.Float16, h.DType())
	assert.Equal(t, []float64{1, 2, -3}, h.Values())
	_, err = tensor.FromSlice(tensor.CPU(), []uint16{1, 2}, 3)
	assert.Error(t, err)

	dev := cpu.New() // a distinct device
	moved := h.To(dev)
	assert.True(t, moved.Device() == dev)
	assert.Equal(t, []uint16{0x3c00, 0x4000, 0xc200}, moved.Float16s())
	assertPanicsWith(t, func() { h.Float32s() }, "float16", "float32")
}

func TestFloat16IsNotComputedIn(t *testing.T) {
	t.Parallel()
	h := tensor.FromFloat32([]float32{1, 2, 3, 4}, 2, 2).Cast(device.Float16)
	assertPanicsWith(t, func() { h.Add(h) }, "Add", "float16")
	assertPanicsWith(t, func() { h.Exp() }, "float16")
	assertPanicsWith(t, func() { h.Sum(0, false) }, "float16")
	assertPanicsWith(t, func() { h.ArgMax(0, false) }, "float16")
	assertPanicsWith(t, func() { h.Fill(1) }, "float16 is a storage type")
	assertPanicsWith(t, func() { tensor.Full(tensor.CPU(), device.Float16, 2, 3) }, "float16 is a storage type")
	// Zeros (allocation) and Copy-based operations work.
	z := tensor.New(tensor.CPU(), device.Float16, 2, 2)
	z.CopyFrom(h.T())
	assert.Equal(t, []float64{1, 3, 2, 4}, z.Values())
	assert.Equal(t, []float64{1, 2, 3, 4, 1, 3, 2, 4}, tensor.Concat(0, h, z).Values())
}
