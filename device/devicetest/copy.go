package devicetest

import (
	"testing"

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
// element types. Float to int64 conversion truncates toward zero.
func TestCopy(t *testing.T, dev device.Device) {
	k := dev.Kernels()
	rng := newRand(1)
	for _, tc := range copyCases() {
		for _, sdt := range allTypes {
			for _, ddt := range allTypes {
				t.Run(tc.name+"/"+sdt.String()+"-to-"+ddt.String(), func(t *testing.T) {
					srcVals := make([]float64, span(tc.sl))
					for i := range srcVals {
						if sdt == device.Int64 {
							srcVals[i] = float64(rng.IntN(2001) - 1000)
						} else {
							srcVals[i] = -100 + 200*rng.Float64()
						}
					}
					src := upload(t, dev, sdt, srcVals)
					stored := download(t, dev, src)
					dstInit := sentinel(span(tc.dl) + 2)
					dst := upload(t, dev, ddt, dstInit)
					want := make([]float64, len(dstInit))
					for i, v := range dstInit {
						want[i] = roundTo(ddt, v)
					}
					forEach(tc.sl.Shape, func(idx []int) {
						want[at(tc.dl, idx)] = roundTo(ddt, stored[at(tc.sl, idx)])
					})
					k.Copy(dst, tc.dl, src, tc.sl)
					checkEqual(t, download(t, dev, dst), want, "Copy %v %v to %v %v", sdt, tc.sl, ddt, tc.dl)
					checkEqual(t, download(t, dev, src), stored, "Copy changed its source")
				})
			}
		}
	}
}
