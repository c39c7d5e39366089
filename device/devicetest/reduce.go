package devicetest

import (
	"fmt"
	"math"
	"testing"

	"github.com/hora-dl/hora/device"
)

var reduceOps = []struct {
	name string
	op   device.ReduceOp
}{
	{"Sum", device.ReduceSum}, {"Max", device.ReduceMax}, {"Min", device.ReduceMin}, {"ArgMax", device.ReduceArgMax},
}

// reduceRef reduces src (outer×n×inner) along its middle axis and returns
// the results and, for sums, the magnitude of the summed terms. A NaN wins
// Max, Min and ArgMax (the first NaN, for ArgMax); ArgMax returns the
// first maximum.
func reduceRef(op device.ReduceOp, src []float64, outer, n, inner int) (out, mag []float64) {
	out, mag = make([]float64, outer*inner), make([]float64, outer*inner)
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			j := o*inner + i
			get := func(t int) float64 { return src[(o*n+t)*inner+i] }
			switch op {
			case device.ReduceSum:
				for t := 0; t < n; t++ {
					out[j] += get(t)
					mag[j] += math.Abs(get(t))
				}
			case device.ReduceMax, device.ReduceMin, device.ReduceArgMax:
				best, arg := get(0), 0
				for t := 1; t < n && !math.IsNaN(best); t++ {
					v := get(t)
					if math.IsNaN(v) || (op == device.ReduceMin && v < best) || (op != device.ReduceMin && v > best) {
						best, arg = v, t
					}
				}
				if op == device.ReduceArgMax {
					out[j] = float64(arg)
				} else {
					out[j] = best
				}
			}
		}
	}
	return out, mag
}

// TestReduce checks Kernels.Reduce for every op over several
// outer×n×inner splits, ties, and NaN inputs.
func TestReduce(t *testing.T, dev device.Device) {
	k := dev.Kernels()
	rng := newRand(5)
	shapes := [][3]int{{1, 1, 1}, {1, 7, 1}, {3, 5, 1}, {1, 5, 4}, {2, 3, 4}, {4, 1, 3}, {1, 5000, 1}, {64, 33, 17}, {3, 2000, 7}, {5000, 3, 1}}
	for _, ro := range reduceOps {
		for _, sh := range shapes {
			for _, dt := range floatTypes {
				outer, n, inner := sh[0], sh[1], sh[2]
				for _, vals := range []string{"random", "ties"} {
					t.Run(fmt.Sprintf("%s/%dx%dx%d/%v/%s", ro.name, outer, n, inner, dt, vals), func(t *testing.T) {
						var xs []float64
						if vals == "ties" {
							xs = gridValues(rng, outer*n*inner)
						} else {
							xs = randFloats(rng, outer*n*inner, -1, 1)
						}
						checkReduce(t, dev, k, ro.op, dt, xs, outer, n, inner)
					})
				}
			}
		}
	}
	nan := math.NaN()
	for _, ro := range reduceOps {
		for _, dt := range floatTypes {
			t.Run("NaN/"+ro.name+"/"+dt.String(), func(t *testing.T) {
				// Rows (n=5): NaN in the middle, NaN first, NaN last, two NaNs, none.
				xs := []float64{
					1, 5, nan, 7, 2,
					nan, 3, 9, -1, 0,
					4, -2, 8, 6, nan,
					2, nan, 1, nan, 3,
					-4, 6, 6, -4, 1,
				}
				checkReduce(t, dev, k, ro.op, dt, xs, 5, 5, 1)
				// The same rows seen as columns (inner = 5).
				cols := make([]float64, len(xs))
				for r := 0; r < 5; r++ {
					for c := 0; c < 5; c++ {
						cols[c*5+r] = xs[r*5+c]
					}
				}
				checkReduce(t, dev, k, ro.op, dt, cols, 1, 5, 5)
			})
		}
	}
}

func checkReduce(t *testing.T, dev device.Device, k device.Kernels, op device.ReduceOp, dt device.DType, xs []float64, outer, n, inner int) {
	t.Helper()
	src := Upload(t, dev, dt, xs)
	xs = Download(t, dev, src)
	odt := dt
	if op == device.ReduceArgMax {
		odt = device.Int64
	}
	dst := Upload(t, dev, odt, sentinel(outer*inner))
	k.Reduce(op, dst, src, outer, n, inner)
	want, mag := reduceRef(op, xs, outer, n, inner)
	got := Download(t, dev, dst)
	if op == device.ReduceSum {
		checkClose(t, dt, got, want, mag, "Reduce %d over %d×%d×%d", op, outer, n, inner)
	} else {
		checkEqual(t, got, want, "Reduce %d over %d×%d×%d", op, outer, n, inner)
	}
}
