package device_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
)

func TestDType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dt    device.DType
		name  string
		size  int
		float bool
	}{
		{device.Float32, "float32", 4, true},
		{device.Float64, "float64", 8, true},
		{device.Int64, "int64", 8, false},
		{device.Float16, "float16", 2, false}, // a storage type: kernels do not compute in it
		{device.DType(0), "dtype(0)", 0, false},
		{device.DType(42), "dtype(42)", 0, false},
	} {
		assert.Equal(t, tc.name, tc.dt.String())
		assert.Equal(t, tc.size, tc.dt.Size(), tc.name)
		assert.Equal(t, tc.float, tc.dt.IsFloat(), tc.name)
	}
}

func TestLayoutHelpers(t *testing.T) {
	t.Parallel()
	l := device.Contiguous([]int{2, 3, 4})
	assert.Equal(t, device.Layout{Shape: []int{2, 3, 4}, Strides: []int{12, 4, 1}}, l)
	empty := device.Contiguous([]int{})
	assert.Empty(t, empty.Shape)
	assert.Empty(t, empty.Strides)
	assert.Zero(t, empty.Offset)
	shape := []int{5}
	l = device.Contiguous(shape)
	shape[0] = 9
	assert.Equal(t, []int{5}, l.Shape, "Contiguous copies the shape")
	assert.Equal(t, 24, device.NumElements([]int{2, 3, 4}))
	assert.Equal(t, 1, device.NumElements(nil))
	assert.Equal(t, 0, device.NumElements([]int{3, 0}))
}

func TestOutputSizes(t *testing.T) {
	t.Parallel()
	c := device.ConvParams{H: 14, W: 9, KH: 3, KW: 2, StrideH: 1, StrideW: 2, PadH: 1, PadW: 0, DilH: 1, DilW: 3}
	assert.Equal(t, 14, c.OutH())
	assert.Equal(t, 3, c.OutW()) // (9 - 3*1 - 1)/2 + 1
	p := device.PoolParams{H: 7, W: 8, KH: 2, KW: 3, StrideH: 2, StrideW: 3, PadH: 1, PadW: 1}
	assert.Equal(t, 4, p.OutH()) // (7 + 2 - 2)/2 + 1
	assert.Equal(t, 3, p.OutW()) // (8 + 2 - 3)/3 + 1
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	var got []int
	device.Register("devicetest-fake", func(ord int) (device.Device, error) {
		got = append(got, ord)
		return nil, device.ErrUnavailable
	})
	assert.Contains(t, device.Registered(), "devicetest-fake")
	_, err := device.Open("devicetest-fake:3")
	assert.True(t, errors.Is(err, device.ErrUnavailable))
	_, err = device.Open("devicetest-fake")
	assert.True(t, errors.Is(err, device.ErrUnavailable))
	assert.Equal(t, []int{3, 0}, got)

	_, err = device.Open("no-such-device")
	require.Error(t, err)
	assert.True(t, errors.Is(err, device.ErrUnknownDevice))
	assert.Contains(t, err.Error(), "no-such-device")
	assert.Contains(t, err.Error(), "devicetest-fake", "the error lists the registered backends")
	for _, spec := range []string{"devicetest-fake:", "devicetest-fake:-1", "devicetest-fake:x"} {
		_, err = device.Open(spec)
		assert.Error(t, err, spec)
		assert.False(t, errors.Is(err, device.ErrUnavailable), "%s must fail before the backend is called", spec)
	}
	assert.Panics(t, func() { device.Register("devicetest-fake", nil) })
}

// plainDevice is a device that cannot slice its buffers; sliceDevice can.
type plainDevice struct{ device.Device }

func (plainDevice) Name() string { return "plain" }

type sliceDevice struct {
	plainDevice
	calls int
}

func (d *sliceDevice) Slice(b device.Buffer, off, n int) (device.Buffer, error) {
	d.calls++
	return fakeBuf{dev: d, n: n}, nil
}

type fakeBuf struct {
	dev device.Device
	n   int
}

func (b fakeBuf) Device() device.Device { return b.dev }
func (b fakeBuf) DType() device.DType   { return device.Float16 }
func (b fakeBuf) Len() int              { return b.n }
func (b fakeBuf) Free()                 {}

func TestSliceOf(t *testing.T) {
	t.Parallel()
	_, err := device.SliceOf(fakeBuf{dev: plainDevice{}, n: 8}, 0, 4)
	require.Error(t, err)
	assert.True(t, errors.Is(err, device.ErrNotImplemented), "%v", err)
	assert.Contains(t, err.Error(), "plain")

	d := &sliceDevice{}
	for _, tc := range []struct {
		off, n int
		ok     bool
	}{
		{0, 8, true}, {2, 3, true}, {8, 0, true}, {0, 0, true},
		{-1, 1, false}, {0, -1, false}, {0, 9, false}, {9, 0, false}, {5, 4, false}, {1, int(^uint(0) >> 1), false},
	} {
		before := d.calls
		s, err := device.SliceOf(fakeBuf{dev: d, n: 8}, tc.off, tc.n)
		if !tc.ok {
			assert.Error(t, err, "SliceOf(%d, %d) of 8", tc.off, tc.n)
			assert.Equal(t, before, d.calls, "the device is not asked for a bad range")
			continue
		}
		require.NoError(t, err, "SliceOf(%d, %d) of 8", tc.off, tc.n)
		assert.Equal(t, tc.n, s.Len())
		assert.Equal(t, before+1, d.calls, "the device's Slice is used")
	}
}
