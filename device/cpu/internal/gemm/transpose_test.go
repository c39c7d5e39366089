package gemm

import (
	"fmt"
	"testing"
)

// TestTranspose checks Transpose against its definition on sizes with and
// without whole 16×16 tiles, with padded row strides, and that it writes
// nothing outside the destination matrix.
func TestTranspose(t *testing.T) {
	for _, c := range []struct{ rows, cols, lds, ldd int }{
		{1, 1, 1, 1}, {16, 16, 16, 16}, {16, 16, 64, 16}, {32, 48, 50, 40},
		{17, 33, 33, 17}, {15, 64, 64, 15}, {64, 15, 15, 64}, {100, 37, 40, 101},
		{16, 64, 64, 16}, {3, 200, 200, 3},
	} {
		t.Run(fmt.Sprintf("%dx%d", c.rows, c.cols), func(t *testing.T) {
			src := make([]float32, (c.rows-1)*c.lds+c.cols)
			for i := range src {
				src[i] = float32(i) + 0.5
			}
			const guard = -7
			dst := make([]float32, (c.cols-1)*c.ldd+c.rows+32)
			for i := range dst {
				dst[i] = guard
			}
			Transpose(dst, c.ldd, src, c.lds, c.rows, c.cols)
			for j := range c.cols {
				for i := range c.ldd {
					k := j*c.ldd + i
					if k >= len(dst) {
						break
					}
					want := float32(guard)
					if i < c.rows {
						want = src[i*c.lds+j]
					}
					if dst[k] != want {
						t.Fatalf("dst[%d] (row %d, column %d) = %v, want %v", k, j, i, dst[k], want)
					}
				}
			}
			for k := (c.cols-1)*c.ldd + c.rows; k < len(dst); k++ {
				if dst[k] != guard {
					t.Fatalf("dst[%d], past the matrix, = %v: written", k, dst[k])
				}
			}
		})
	}
}

// TestTransposeShortSlices checks that Transpose refuses strides and slices
// too short for the matrices it is given.
func TestTransposeShortSlices(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Transpose with a short source did not panic")
		}
	}()
	Transpose(make([]float32, 16*16), 16, make([]float32, 16*16-1), 16, 16, 16)
}
