package devicetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
)

// TestMemory checks Alloc, Write, Read, Sync and Buffer.Free, including
// the errors for mismatched types and lengths.
func TestMemory(t *testing.T, dev device.Device) {
	assert.NotEmpty(t, dev.Name(), "Name")
	assert.NoError(t, dev.Sync(), "Sync")

	for _, dt := range storedTypes(dev) {
		t.Run("Alloc/"+dt.String(), func(t *testing.T) {
			for _, n := range []int{0, 1, 7, 1000} {
				b, err := dev.Alloc(dt, n)
				require.NoError(t, err, "Alloc(%v, %d)", dt, n)
				assert.Equal(t, n, b.Len(), "Len")
				assert.Equal(t, dt, b.DType(), "DType")
				assert.True(t, b.Device() == dev, "Device() is not the allocating device")
				got := Download(t, dev, b)
				checkEqual(t, got, make([]float64, n), "Alloc(%v, %d) is not zero-filled", dt, n)
				b.Free()
			}
		})
		t.Run("RoundTrip/"+dt.String(), func(t *testing.T) {
			vals := []float64{0, 1, -2, 3, 1 << 20, -(1 << 20), 42}
			if dt.IsFloat() || dt == device.Float16 {
				vals = append(vals, 0.5, -0.25, 1e-3, 1e30)
			}
			b := Upload(t, dev, dt, vals)
			got := Download(t, dev, b)
			want := make([]float64, len(vals))
			for i, v := range vals {
				want[i] = roundTo(dt, v)
			}
			checkEqual(t, got, want, "Write then Read %v", dt)
		})
	}

	t.Run("AllocErrors", func(t *testing.T) {
		_, err := dev.Alloc(device.Float32, -1)
		assert.Error(t, err, "Alloc of -1 elements")
		_, err = dev.Alloc(device.DType(0), 4)
		assert.Error(t, err, "Alloc of dtype 0")
		_, err = dev.Alloc(device.DType(99), 4)
		assert.Error(t, err, "Alloc of dtype 99")
	})

	t.Run("WriteErrors", func(t *testing.T) {
		f32, err := dev.Alloc(device.Float32, 3)
		require.NoError(t, err)
		defer f32.Free()
		f64, err := dev.Alloc(device.Float64, 3)
		require.NoError(t, err)
		defer f64.Free()
		i64, err := dev.Alloc(device.Int64, 3)
		require.NoError(t, err)
		defer i64.Free()

		assert.Error(t, dev.Write(f32, []float64{1, 2, 3}), "float64 data into float32 buffer")
		assert.Error(t, dev.Write(f32, []int64{1, 2, 3}), "int64 data into float32 buffer")
		assert.Error(t, dev.Write(f64, []float32{1, 2, 3}), "float32 data into float64 buffer")
		assert.Error(t, dev.Write(i64, []float64{1, 2, 3}), "float64 data into int64 buffer")
		assert.Error(t, dev.Write(f32, []float32{1, 2}), "short write")
		assert.Error(t, dev.Write(f32, []float32{1, 2, 3, 4}), "long write")
		assert.Error(t, dev.Write(f32, []int{1, 2, 3}), "[]int data")
		assert.Error(t, dev.Write(f32, "abc"), "string data")
		assert.NoError(t, dev.Write(f32, []float32{1, 2, 3}))
		assert.NoError(t, dev.Write(i64, []int64{1, 2, 3}))
		// A failed write must leave the buffer as it was.
		checkEqual(t, Download(t, dev, f32), []float64{1, 2, 3}, "float32 buffer after failed writes")
	})

	t.Run("ReadErrors", func(t *testing.T) {
		f32 := Upload(t, dev, device.Float32, []float64{1, 2, 3})
		i64 := Upload(t, dev, device.Int64, []float64{1, 2, 3})
		assert.Error(t, dev.Read(make([]float64, 3), f32), "float32 buffer into []float64")
		assert.Error(t, dev.Read(make([]float32, 3), i64), "int64 buffer into []float32")
		assert.Error(t, dev.Read(make([]float32, 2), f32), "short destination")
		assert.Error(t, dev.Read(make([]float32, 4), f32), "long destination")
		assert.Error(t, dev.Read(make([]int, 3), i64), "[]int destination")
		dst := make([]int64, 3)
		assert.NoError(t, dev.Read(dst, i64))
		assert.Equal(t, []int64{1, 2, 3}, dst)
	})

	t.Run("Float16Errors", func(t *testing.T) {
		if !storesHalf(dev) {
			t.Skipf("%s does not store float16", dev.Name())
		}
		f16, err := dev.Alloc(device.Float16, 3)
		require.NoError(t, err)
		defer f16.Free()
		f32 := Upload(t, dev, device.Float32, []float64{1, 2, 3})
		assert.Error(t, dev.Write(f16, []float32{1, 2, 3}), "float32 data into float16 buffer")
		assert.Error(t, dev.Write(f32, []uint16{1, 2, 3}), "uint16 data into float32 buffer")
		assert.Error(t, dev.Write(f16, []uint16{1, 2}), "short write")
		assert.Error(t, dev.Read(make([]float32, 3), f16), "float16 buffer into []float32")
		assert.Error(t, dev.Read(make([]uint16, 3), f32), "float32 buffer into []uint16")
		assert.Error(t, dev.Read(make([]uint16, 4), f16), "long destination")
		require.NoError(t, dev.Write(f16, []uint16{0x3c00, 0xc000, 0x7c00}))
		got := make([]uint16, 3)
		require.NoError(t, dev.Read(got, f16))
		assert.Equal(t, []uint16{0x3c00, 0xc000, 0x7c00}, got, "float16 bits read back")
	})

	t.Run("FreeIdempotent", func(t *testing.T) {
		for _, dt := range storedTypes(dev) {
			b, err := dev.Alloc(dt, 16)
			require.NoError(t, err)
			assert.NotPanics(t, func() {
				b.Free()
				b.Free()
			}, "Free twice on %v", dt)
			empty, err := dev.Alloc(dt, 0)
			require.NoError(t, err)
			assert.NotPanics(t, func() {
				empty.Free()
				empty.Free()
			}, "Free twice on an empty %v buffer", dt)
		}
	})
}

// TestFill checks Kernels.Fill: the first n elements become v, the rest
// keep their values.
func TestFill(t *testing.T, dev device.Device) {
	k := dev.Kernels()
	for _, dt := range allTypes {
		for _, tc := range []struct {
			name   string
			len, n int
			v      float64
		}{
			{"all", 10, 10, 2.5},
			{"prefix", 10, 4, -3},
			{"zero", 6, 6, 0},
			{"none", 5, 0, 9},
			{"large", 100_000, 99_999, 1.25},
		} {
			t.Run(dt.String()+"/"+tc.name, func(t *testing.T) {
				init := sentinel(tc.len)
				b := Upload(t, dev, dt, init)
				k.Fill(b, tc.n, tc.v)
				want := make([]float64, tc.len)
				for i := range want {
					if i < tc.n {
						want[i] = roundTo(dt, tc.v)
					} else {
						want[i] = roundTo(dt, init[i])
					}
				}
				checkEqual(t, Download(t, dev, b), want, "Fill(%d, %g) of %v[%d]", tc.n, tc.v, dt, tc.len)
			})
		}
	}
}
