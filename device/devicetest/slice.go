package devicetest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
)

// TestSlice checks the optional device.Slicer: a slice shares its parent's
// elements both ways (Write, Copy), bad bounds are errors, and
// freeing a slice leaves the parent intact. A device that is not a Slicer
// must make device.SliceOf fail with device.ErrNotImplemented.
func TestSlice(t *testing.T, dev device.Device) {
	s, ok := dev.(device.Slicer)
	if !ok {
		b := Upload(t, dev, device.Float32, []float64{1, 2, 3})
		_, err := device.SliceOf(b, 0, 1)
		assert.True(t, errors.Is(err, device.ErrNotImplemented), "SliceOf on %s: %v", dev.Name(), err)
		t.Skipf("%s is not a device.Slicer", dev.Name())
	}
	k := dev.Kernels()
	for _, dt := range storedTypes(dev) {
		t.Run(dt.String(), func(t *testing.T) {
			init := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
			parent := Upload(t, dev, dt, init)
			for _, tc := range []struct{ off, n int }{{0, 10}, {0, 4}, {3, 5}, {9, 1}, {10, 0}, {4, 0}} {
				sub, err := s.Slice(parent, tc.off, tc.n)
				require.NoError(t, err, "Slice(%d, %d)", tc.off, tc.n)
				assert.Equal(t, tc.n, sub.Len(), "Len of Slice(%d, %d)", tc.off, tc.n)
				assert.Equal(t, dt, sub.DType(), "DType")
				assert.True(t, sub.Device() == dev, "Device() of a slice is not the parent's device")
				checkEqual(t, Download(t, dev, sub), init[tc.off:tc.off+tc.n], "Slice(%d, %d) reads", tc.off, tc.n)
				sub.Free()
				sub.Free()
				checkEqual(t, Download(t, dev, parent), init, "parent after freeing Slice(%d, %d)", tc.off, tc.n)
			}

			// Writes through the slice (Write, Copy) reach the parent,
			// and writes to the parent are seen through the slice.
			sub, err := device.SliceOf(parent, 2, 3)
			require.NoError(t, err)
			require.NoError(t, dev.Write(sub, HostSlice(dt, []float64{-1, -2, -3})))
			want := []float64{0, 1, -1, -2, -3, 5, 6, 7, 8, 9}
			checkEqual(t, Download(t, dev, parent), want, "parent after Write to slice [2, 5)")
			src := Upload(t, dev, device.Float32, []float64{20, 30})
			k.Copy(sub, layout([]int{2}, []int{2}, 0), src, dense(0, 2))
			want[2], want[4] = 20, 30
			checkEqual(t, Download(t, dev, parent), want, "parent after Copy into slice [2, 5)")
			require.NoError(t, dev.Write(parent, HostSlice(dt, init)))
			checkEqual(t, Download(t, dev, sub), init[2:5], "slice after Write to parent")
			// A slice of a slice.
			subsub, err := device.SliceOf(sub, 1, 2)
			require.NoError(t, err)
			checkEqual(t, Download(t, dev, subsub), init[3:5], "slice [1, 3) of slice [2, 5)")

			for _, tc := range []struct{ off, n int }{{-1, 2}, {0, -1}, {0, 11}, {11, 0}, {8, 3}, {1, 1 << 62}} {
				_, err := s.Slice(parent, tc.off, tc.n)
				assert.Error(t, err, "Slice(%d, %d) of %d elements", tc.off, tc.n, parent.Len())
				_, err = device.SliceOf(parent, tc.off, tc.n)
				assert.Error(t, err, "SliceOf(%d, %d) of %d elements", tc.off, tc.n, parent.Len())
			}
		})
	}
}
