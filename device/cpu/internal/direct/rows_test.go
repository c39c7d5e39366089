package direct

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCopyRows checks CopyRows and PadRows (assembly where the CPU has
// it) on row lengths around the vector width, with and without gaps
// between the rows: PadRows zeroes the gaps, CopyRows leaves them, and
// neither touches anything else of dst.
func TestCopyRows(t *testing.T) {
	const sentinel = float32(-7.5)
	for _, pad := range []bool{false, true} {
		for _, rows := range []int{1, 2, 5} {
			for _, cols := range []int{1, 3, 4, 5, 7, 8, 15, 16, 17, 33} {
				for _, gap := range []int{0, 1, 2, 15, 16, 19} {
					t.Run(fmt.Sprintf("pad%v/%dx%d/gap%d", pad, rows, cols, gap), func(t *testing.T) {
						ldd, lds := cols+gap, cols+3
						src := make([]float32, (rows-1)*lds+cols)
						for i := range src {
							src[i] = float32(i) + 0.25
						}
						dst := make([]float32, rows*ldd+5)
						for i := range dst {
							dst[i] = sentinel
						}
						if pad {
							PadRows(dst, ldd, src, lds, rows, cols)
						} else {
							CopyRows(dst, ldd, src, lds, rows, cols)
						}
						for i, v := range dst {
							r, c := i/ldd, i%ldd
							switch {
							case r < rows && c < cols:
								require.Equal(t, src[r*lds+c], v, "row %d column %d", r, c)
							case r < rows-1 && pad:
								require.Equal(t, uint32(0), math.Float32bits(v), "gap after row %d, column %d", r, c)
							default:
								require.Equal(t, sentinel, v, "element %d", i)
							}
						}
					})
				}
			}
		}
	}
}

// TestCopyRowsShort: slices too short for the rows panic with the sizes.
func TestCopyRowsShort(t *testing.T) {
	assert.PanicsWithValue(t, "direct: copy of 2 rows of 4 values from 8 values (rows 4 apart) to 7 values (rows 4 apart)", func() {
		CopyRows(make([]float32, 7), 4, make([]float32, 8), 4, 2, 4)
	})
	assert.Panics(t, func() { CopyRows(make([]float32, 8), 3, make([]float32, 8), 4, 2, 4) }, "row longer than dst's stride")
	assert.NotPanics(t, func() { CopyRows(nil, 0, nil, 0, 0, 5) })
}

// BenchmarkCopyRows lays out planes as the depthwise and direct kernels
// do (rows of 7 to 56 values, padded by 2 or 4), with PadRows and with a
// loop of copy and clear per row.
func BenchmarkCopyRows(b *testing.B) {
	for _, c := range [][2]int{{7, 2}, {14, 2}, {28, 4}, {56, 2}} {
		n, gap := c[0], c[1]
		src := make([]float32, n*n)
		dst := make([]float32, n*(n+gap))
		for _, impl := range []string{"loop", "PadRows"} {
			b.Run(fmt.Sprintf("%dx%d+%d/%s", n, n, gap, impl), func(b *testing.B) {
				for b.Loop() {
					if impl == "loop" {
						copyRowsGo(dst, n+gap, src, n, n, n, true)
					} else {
						PadRows(dst, n+gap, src, n, n, n)
					}
				}
			})
		}
	}
}

// TestSplitColumns checks SplitColumns (assembly where the CPU has it)
// against its definition on row lengths around the 32-value steps (and
// the AVX2 kernel's 16- and 8-value ones), writing nothing but the split
// columns.
func TestSplitColumns(t *testing.T) {
	const sentinel = float32(-7.5)
	for _, rows := range []int{1, 3} {
		for _, cols := range []int{1, 2, 3, 7, 8, 9, 14, 15, 16, 17, 28, 30, 31, 32, 33, 64, 65, 113} {
			t.Run(fmt.Sprintf("%dx%d", rows, cols), func(t *testing.T) {
				ne, no := (cols+1)/2, cols/2
				lds, lde, ldo := cols+1, ne+2, no+3
				src := make([]float32, (rows-1)*lds+cols)
				for i := range src {
					src[i] = float32(i) + 0.5
				}
				even, odd := make([]float32, rows*lde+4), make([]float32, rows*ldo+4)
				for i := range even {
					even[i] = sentinel
				}
				for i := range odd {
					odd[i] = sentinel
				}
				SplitColumns(even, lde, odd, ldo, src, lds, rows, cols)
				for i, v := range even {
					r, k := i/lde, i%lde
					if r < rows && k < ne {
						require.Equal(t, src[r*lds+2*k], v, "even row %d column %d", r, k)
					} else {
						require.Equal(t, sentinel, v, "even element %d", i)
					}
				}
				for i, v := range odd {
					r, k := i/ldo, i%ldo
					if r < rows && k < no {
						require.Equal(t, src[r*lds+2*k+1], v, "odd row %d column %d", r, k)
					} else {
						require.Equal(t, sentinel, v, "odd element %d", i)
					}
				}
			})
		}
	}
}

// TestSplitColumnsShort: slices too short panic with the sizes; a single
// column needs no odd slice.
func TestSplitColumnsShort(t *testing.T) {
	assert.PanicsWithValue(t, "direct: SplitColumns of 2 rows of 5 values from 9 values (rows 5 apart) to 6 and 5 values (rows 3 and 2 apart)", func() {
		SplitColumns(make([]float32, 6), 3, make([]float32, 5), 2, make([]float32, 9), 5, 2, 5)
	})
	even := make([]float32, 2)
	SplitColumns(even, 1, nil, 0, []float32{4, 9}, 1, 2, 1)
	assert.Equal(t, []float32{4, 9}, even)
}

// TestAddRows checks AddRows (assembly where the CPU has it) on row
// lengths around the vector width, with and without gaps between rows:
// each value of a row gets its source added, and nothing else changes.
func TestAddRows(t *testing.T) {
	for _, rows := range []int{1, 3} {
		for _, cols := range []int{1, 3, 4, 5, 7, 8, 13, 14, 16, 17, 40} {
			for _, gap := range []int{0, 3, 16} {
				ldd, lds := cols+gap, cols+5
				src := make([]float32, (rows-1)*lds+cols)
				for i := range src {
					src[i] = float32(i) + 0.5
				}
				dst := make([]float32, rows*ldd+4)
				for i := range dst {
					dst[i] = float32(-i)
				}
				AddRows(dst, ldd, src, lds, rows, cols)
				for i, v := range dst {
					want := float32(-i)
					if r, c := i/ldd, i%ldd; r < rows && c < cols {
						want += src[r*lds+c]
					}
					require.Equal(t, want, v, "%d rows of %d, gap %d: element %d", rows, cols, gap, i)
				}
			}
		}
	}
	assert.Panics(t, func() { AddRows(make([]float32, 7), 4, make([]float32, 8), 4, 2, 4) })
}

// TestMergeColumnsAdd checks that MergeColumnsAdd and MergeColumns undo
// SplitColumns (adding to what dst holds, and replacing it, a negative
// zero kept), on odd and even row lengths around a step of 32, with gaps
// between rows that they must not touch.
func TestMergeColumnsAdd(t *testing.T) {
	for _, add := range []bool{true, false} {
		for _, rows := range []int{1, 4} {
			for _, cols := range []int{1, 2, 3, 7, 8, 9, 14, 15, 16, 17, 28, 31, 32, 33, 64, 65} {
				ldd := cols + 3
				src := make([]float32, rows*ldd)
				for i := range src {
					src[i] = float32(i) + 0.25
				}
				src[0] = float32(math.Copysign(0, -1))
				ne, no := (cols+1)/2, cols/2
				lde, ldo := ne+1, no+2
				even, odd := make([]float32, rows*lde), make([]float32, rows*ldo+1)
				SplitColumns(even, lde, odd, ldo, src, ldd, rows, cols)
				dst := make([]float32, rows*ldd)
				for i := range dst {
					dst[i] = 100
				}
				if add {
					MergeColumnsAdd(dst, ldd, even, lde, odd, ldo, rows, cols)
				} else {
					MergeColumns(dst, ldd, even, lde, odd, ldo, rows, cols)
				}
				for i, v := range dst {
					want := float32(100)
					switch {
					case i%ldd >= cols:
					case add:
						want += src[i]
					default:
						want = src[i]
					}
					require.Equal(t, math.Float32bits(want), math.Float32bits(v), "add %v, %d rows of %d: element %d = %g, want %g", add, rows, cols, i, v, want)
				}
			}
		}
	}
	assert.Panics(t, func() { MergeColumnsAdd(make([]float32, 5), 6, make([]float32, 3), 3, make([]float32, 3), 3, 1, 6) })
}

// TestCopyRowsBiasClamp checks CopyRowsBiasClamp (assembly where the CPU
// has AVX2) against its formula on row lengths around the vector width,
// with NaN, -0 and values past both bounds, and requires the rest of dst
// untouched.
func TestCopyRowsBiasClamp(t *testing.T) {
	const sentinel = float32(-7.5)
	nan, negZero := float32(math.NaN()), float32(math.Copysign(0, -1))
	inf := float32(math.Inf(1))
	for _, b := range []struct{ bias, lo, hi float32 }{{0, -inf, inf}, {negZero, 0, inf}, {0.5, 0, 6}} {
		for _, rows := range []int{1, 2, 5} {
			for _, cols := range []int{1, 7, 8, 9, 15, 17, 33} {
				ldd, lds := cols+3, cols+5
				src := make([]float32, (rows-1)*lds+cols)
				for i := range src {
					src[i] = float32(i%13)*1.25 - 7
				}
				src[0], src[len(src)-1] = nan, negZero
				dst := make([]float32, rows*ldd+5)
				for i := range dst {
					dst[i] = sentinel
				}
				CopyRowsBiasClamp(dst, ldd, src, lds, rows, cols, b.bias, b.lo, b.hi)
				for i, v := range dst {
					r, c := i/ldd, i%ldd
					if r >= rows || c >= cols {
						require.Equal(t, sentinel, v, "%+v %dx%d: element %d", b, rows, cols, i)
						continue
					}
					want := clamp(src[r*lds+c]+b.bias, b.lo, b.hi)
					require.Equal(t, math.Float32bits(want), math.Float32bits(v), "%+v %dx%d: row %d column %d: %v, want %v", b, rows, cols, r, c, v, want)
				}
			}
		}
	}
}
