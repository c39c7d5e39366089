package devicetest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hora-dl/hora/device"
)

// copyCase is a strided copy from src to dst.
type copyCase struct {
	name   string
	dl, sl device.Layout
}

func copyCases() []copyCase {
	return []copyCase{
		{"dense", dense(0, 2, 3, 4), dense(0, 2, 3, 4)},
		{"scalar", dense(0), dense(0)},
		{"src-offset", dense(0, 3, 4), dense(5, 3, 4)},
		{"dst-offset-rows", layout([]int{3, 4}, []int{8, 1}, 3), dense(0, 3, 4)},
		{"transpose", dense(0, 3, 4), permuted([]int{3, 4}, []int{1, 0}, 0)},
		{"permute3", permuted([]int{2, 3, 4}, []int{1, 2, 0}, 1), permuted([]int{2, 3, 4}, []int{2, 0, 1}, 2)},
		{"permute4", dense(0, 2, 3, 2, 5), permuted([]int{2, 3, 2, 5}, []int{3, 1, 0, 2}, 0)},
		{"broadcast-rows", dense(0, 3, 4), layout([]int{3, 4}, []int{0, 1}, 0)},
		{"broadcast-cols", dense(0, 3, 4), layout([]int{3, 4}, []int{1, 0}, 1)},
		{"broadcast-middle", dense(0, 2, 3, 4), layout([]int{2, 3, 4}, []int{4, 0, 1}, 0)},
		{"broadcast-all", dense(0, 2, 3, 4), layout([]int{2, 3, 4}, []int{0, 0, 0}, 2)},
		{"step", dense(0, 7), layout([]int{7}, []int{2}, 1)},
		{"unit-axes", layout([]int{1, 3, 1, 4}, []int{5, 4, 3, 1}, 0), layout([]int{1, 3, 1, 4}, []int{99, 4, 77, 1}, 0)},
		{"empty", dense(0, 0, 3), dense(0, 0, 3)},
		{"large-transpose", dense(0, 300, 257), permuted([]int{300, 257}, []int{1, 0}, 0)},
		{"large-dense", dense(7, 1000, 100), dense(3, 1000, 100)},
		{"large-broadcast", permuted([]int{64, 33, 40}, []int{2, 0, 1}, 0), layout([]int{64, 33, 40}, []int{0, 40, 1}, 0)},
	}
}

// TestCopy checks Kernels.Copy between strided views of every pair of
// element types, device.Float16 included when the device stores it. Float
// to int64 conversion truncates toward zero; conversion to float16 rounds
// to nearest even (directly from float64, not through float32).
func TestCopy(t *testing.T, dev device.Device) {
	k := dev.Kernels()
	rng := newRand(1)
	types := storedTypes(dev)
	for _, tc := range copyCases() {
		for _, sdt := range types {
			for _, ddt := range types {
				t.Run(tc.name+"/"+sdt.String()+"-to-"+ddt.String(), func(t *testing.T) {
					srcVals := make([]float64, span(tc.sl))
					for i := range srcVals {
						if sdt == device.Int64 {
							srcVals[i] = float64(rng.IntN(2001) - 1000)
						} else {
							srcVals[i] = -100 + 200*rng.Float64()
						}
					}
					src := Upload(t, dev, sdt, srcVals)
					stored := Download(t, dev, src)
					dstInit := sentinel(span(tc.dl) + 2)
					dst := Upload(t, dev, ddt, dstInit)
					want := make([]float64, len(dstInit))
					for i, v := range dstInit {
						want[i] = roundTo(ddt, v)
					}
					forEach(tc.sl.Shape, func(idx []int) {
						want[at(tc.dl, idx)] = roundTo(ddt, stored[at(tc.sl, idx)])
					})
					k.Copy(dst, tc.dl, src, tc.sl)
					checkEqual(t, Download(t, dev, dst), want, "Copy %v %v to %v %v", sdt, tc.sl, ddt, tc.dl)
					checkEqual(t, Download(t, dev, src), stored, "Copy changed its source")
				})
			}
		}
	}
	t.Run("float16-rounding", func(t *testing.T) {
		if !storesHalf(dev) {
			t.Skipf("%s does not store float16", dev.Name())
		}
		testHalfRounding(t, dev)
	})
}

// testHalfRounding checks Copy into and out of float16 on the values where
// rounding is delicate: ties, subnormals, overflow, NaN and signed zeros.
func testHalfRounding(t *testing.T, dev device.Device) {
	k := dev.Kernels()
	negZero := math.Copysign(0, -1)
	floats := []float64{
		0, negZero, 1, -2, 0.1, -1.0 / 3,
		1 + 0x1p-11, 1 + 3*0x1p-11, -(1 + 0x1p-11 + 0x1p-40), // ties, and just past one
		65504, 65519.9, 65520, -65520, 1e6, math.Inf(1), math.Inf(-1), math.NaN(),
		0x1p-24, 0x1p-25, -3 * 0x1p-25, 0x1p-14 - 0x1p-25, 0x1p-14 - 0x1p-24, 0x1p-26, -0x1p-40,
	}
	ints := []float64{0, 1, -3, 2049, 2051, -2051, 65504, 65520, 70000, -1 << 40}
	for _, sdt := range []device.DType{device.Float32, device.Float64, device.Int64} {
		vals := floats
		if sdt == device.Int64 {
			vals = ints
		}
		for _, tc := range []struct {
			name string
			hl   device.Layout // the float16 view
		}{
			{"dense", dense(0, len(vals))},
			{"step", layout([]int{len(vals)}, []int{2}, 1)},
		} {
			t.Run(sdt.String()+"/"+tc.name, func(t *testing.T) {
				src := Upload(t, dev, sdt, vals)
				stored := Download(t, dev, src)
				sl := dense(0, len(vals))
				h := Upload(t, dev, device.Float16, sentinel(span(tc.hl)))
				k.Copy(h, tc.hl, src, sl)
				got := Download(t, dev, h)
				want := make([]float64, len(vals))
				gotView := make([]float64, len(vals))
				for i, v := range stored {
					want[i] = roundTo(device.Float16, v)
					gotView[i] = got[at(tc.hl, []int{i})]
					if want[i] == 0 {
						assert.Equal(t, math.Signbit(want[i]), math.Signbit(gotView[i]), "sign of zero from %v %g", sdt, v)
					}
				}
				checkEqual(t, gotView, want, "Copy %v to float16 %v", sdt, tc.hl)

				// And back: float16 to every type is exact (int64 truncates).
				for _, ddt := range allTypes {
					back := Upload(t, dev, ddt, make([]float64, len(vals)))
					k.Copy(back, sl, h, tc.hl)
					wantBack := make([]float64, len(vals))
					gotBack := Download(t, dev, back)
					for i, v := range want {
						switch {
						case ddt == device.Int64 && (math.IsInf(v, 0) || math.IsNaN(v)):
							// Go leaves the int64 of ±Inf and NaN to the
							// implementation: compare only finite values.
							gotBack[i] = 0
						case math.IsInf(v, 0) || math.IsNaN(v):
							wantBack[i] = v
						default:
							wantBack[i] = roundTo(ddt, v)
						}
					}
					checkEqual(t, gotBack, wantBack, "Copy float16 %v to %v", tc.hl, ddt)
				}
			})
		}
	}
}
