package cpu_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/device/devicetest"
)

func TestConformance(t *testing.T) {
	devicetest.RunAll(t, cpu.New())
}

func TestConformanceDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("the same kernels as TestConformance")
	}
	t.Run("MatMul", func(t *testing.T) { devicetest.TestMatMul(t, cpu.Default()) })
	t.Run("Conv2D", func(t *testing.T) { devicetest.TestConv2D(t, cpu.Default()) })
}

func TestOpen(t *testing.T) {
	assert.Contains(t, device.Registered(), "cpu")

	d, err := device.Open("cpu")
	require.NoError(t, err)
	assert.Equal(t, "cpu", d.Name())
	assert.NoError(t, d.Close())

	d0, err := device.Open("cpu:0")
	require.NoError(t, err)
	assert.True(t, d0 == d, "Open(\"cpu\") returns one shared device")
	assert.True(t, d == cpu.Default())
	assert.False(t, cpu.New() == cpu.Default())

	_, err = device.Open("cpu:1")
	require.Error(t, err)
	assert.True(t, errors.Is(err, device.ErrUnavailable), "cpu:1: %v", err)
	assert.Contains(t, err.Error(), "cpu:1")

	_, err = device.Open("nope")
	require.Error(t, err)
	assert.True(t, errors.Is(err, device.ErrUnknownDevice), "nope: %v", err)
	assert.Contains(t, err.Error(), "nope")

	for _, spec := range []string{"cpu:", "cpu:-1", "cpu:x", "cpu:1:2"} {
		_, err = device.Open(spec)
		assert.Error(t, err, "Open(%q)", spec)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	assert.PanicsWithValue(t, "device: Register called twice for cpu", func() {
		device.Register("cpu", func(int) (device.Device, error) { return cpu.New(), nil })
	})
}

func TestBufferAccessors(t *testing.T) {
	d := cpu.New()
	b, err := d.Alloc(device.Float32, 3)
	require.NoError(t, err)
	require.NoError(t, d.Write(b, []float32{1, 2, 3}))
	cb := b.(*cpu.Buffer)
	assert.Equal(t, []float32{1, 2, 3}, cb.Float32s())
	assert.Nil(t, cb.Float64s())
	assert.Nil(t, cb.Int64s())
	cb.Float32s()[1] = 7 // writes through
	got := make([]float32, 3)
	require.NoError(t, d.Read(got, b))
	assert.Equal(t, []float32{1, 7, 3}, got)
	b.Free()
	assert.Equal(t, 0, b.Len())
}
