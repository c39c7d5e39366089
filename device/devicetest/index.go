package devicetest

import (
	"fmt"
	"testing"

	"github.com/hora-dl/hora/device"
)

// TestIndexing checks Gather, ScatterAdd, IndexSelect and IndexAdd for
// every element type, with repeated indices (which ScatterAdd and IndexAdd
// must accumulate).
func TestIndexing(t *testing.T, dev device.Device) {
	k := dev.Kernels()
	rng := newRand(10)
	shapes := [][4]int{ // outer, n, m, inner
		{1, 5, 3, 1}, {2, 4, 6, 3}, {3, 1, 2, 2}, {1, 3, 3, 1}, {4, 7, 2, 5}, {2, 6, 0, 2}, {64, 50, 40, 8},
	}
	values := func(dt device.DType, n int) []float64 {
		if dt == device.Int64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = float64(rng.IntN(200) - 100)
			}
			return v
		}
		return randFloats(rng, n, -1, 1)
	}
	for _, sh := range shapes {
		outer, n, m, inner := sh[0], sh[1], sh[2], sh[3]
		for _, dt := range allTypes {
			name := fmt.Sprintf("%dx%dx%dx%d/%v", outer, n, m, inner, dt)
			perElem := make([]float64, outer*m*inner) // Gather/ScatterAdd indices
			for i := range perElem {
				perElem[i] = float64(rng.IntN(n))
			}
			perSlice := make([]float64, m) // IndexSelect/IndexAdd indices
			for i := range perSlice {
				perSlice[i] = float64(rng.IntN(n))
			}
			bigV, smallV := values(dt, outer*n*inner), values(dt, outer*m*inner)
			bigPos := func(o, t, i int) int { return (o*n+t)*inner + i }
			smallPos := func(o, j, i int) int { return (o*m+j)*inner + i }

			t.Run("Gather/"+name, func(t *testing.T) {
				src, idx := Upload(t, dev, dt, bigV), Upload(t, dev, device.Int64, perElem)
				dst := Upload(t, dev, dt, sentinel(outer*m*inner))
				want := make([]float64, outer*m*inner)
				for o := 0; o < outer; o++ {
					for j := 0; j < m; j++ {
						for i := 0; i < inner; i++ {
							want[smallPos(o, j, i)] = bigV[bigPos(o, int(perElem[smallPos(o, j, i)]), i)]
						}
					}
				}
				k.Gather(dst, src, idx, outer, n, m, inner)
				checkEqual(t, Download(t, dev, dst), want, "Gather")
			})
			t.Run("ScatterAdd/"+name, func(t *testing.T) {
				dst, src, idx := Upload(t, dev, dt, bigV), Upload(t, dev, dt, smallV), Upload(t, dev, device.Int64, perElem)
				want := append([]float64(nil), bigV...)
				mag := make([]float64, len(want))
				for i, v := range bigV {
					mag[i] = abs(v)
				}
				for o := 0; o < outer; o++ {
					for j := 0; j < m; j++ {
						for i := 0; i < inner; i++ {
							want[bigPos(o, int(perElem[smallPos(o, j, i)]), i)] += smallV[smallPos(o, j, i)]
							mag[bigPos(o, int(perElem[smallPos(o, j, i)]), i)] += abs(smallV[smallPos(o, j, i)])
						}
					}
				}
				k.ScatterAdd(dst, src, idx, outer, n, m, inner)
				checkClose(t, dt, Download(t, dev, dst), roundAll(dt, want), mag, "ScatterAdd")
			})
			t.Run("IndexSelect/"+name, func(t *testing.T) {
				src, idx := Upload(t, dev, dt, bigV), Upload(t, dev, device.Int64, perSlice)
				dst := Upload(t, dev, dt, sentinel(outer*m*inner))
				want := make([]float64, outer*m*inner)
				for o := 0; o < outer; o++ {
					for j := 0; j < m; j++ {
						for i := 0; i < inner; i++ {
							want[smallPos(o, j, i)] = bigV[bigPos(o, int(perSlice[j]), i)]
						}
					}
				}
				k.IndexSelect(dst, src, idx, outer, n, m, inner)
				checkEqual(t, Download(t, dev, dst), want, "IndexSelect")
			})
			t.Run("IndexAdd/"+name, func(t *testing.T) {
				dst, src, idx := Upload(t, dev, dt, bigV), Upload(t, dev, dt, smallV), Upload(t, dev, device.Int64, perSlice)
				want := append([]float64(nil), bigV...)
				mag := make([]float64, len(want))
				for i, v := range bigV {
					mag[i] = abs(v)
				}
				for o := 0; o < outer; o++ {
					for j := 0; j < m; j++ {
						for i := 0; i < inner; i++ {
							want[bigPos(o, int(perSlice[j]), i)] += smallV[smallPos(o, j, i)]
							mag[bigPos(o, int(perSlice[j]), i)] += abs(smallV[smallPos(o, j, i)])
						}
					}
				}
				k.IndexAdd(dst, src, idx, outer, n, m, inner)
				checkClose(t, dt, Download(t, dev, dst), roundAll(dt, want), mag, "IndexAdd")
			})
		}
	}
}

// roundAll rounds every value to dt.
func roundAll(dt device.DType, v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = roundTo(dt, x)
	}
	return out
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
