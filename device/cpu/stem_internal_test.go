package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/direct"
)

// stemCases are the convolutions TestStemMatchesReference runs: an RGB
// stem on a small and on mobilenet_v2's plane, output channels that leave
// the last block of 16 part empty, one and two input channels, odd sizes,
// no padding, a padding of 2 (a first output row whose kernel rows
// start inside the padding) and of 3 (first and last output rows whose
// kernel rows all lie in it: the bias alone), fewer than 16 output
// channels.
var stemCases = []device.ConvParams{
	convCase(2, 3, 34, 34, 32, 3, 2, 1, 1),
	convCase(1, 3, 224, 224, 32, 3, 2, 1, 1),
	convCase(2, 3, 40, 37, 20, 3, 2, 1, 1),
	convCase(1, 1, 33, 35, 16, 3, 2, 0, 1),
	convCase(3, 2, 37, 40, 48, 3, 2, 2, 1),
	convCase(2, 3, 31, 32, 8, 3, 2, 3, 1),
}

// TestStemMatchesReference runs the stem path with bias and ReLU6 and
// without either against float64 reference loops, on one to three
// workers, with filters packed per call and kept with a constant buffer.
// Every output starts as NaN, so each must be written.
func TestStemMatchesReference(t *testing.T) {
	if !direct.Fast() {
		t.Skip("the stem path needs AVX-512")
	}
	if direct.VecRows != direct.Lanes {
		t.Fatalf("vecFilterBlocks packs blocks of %d output channels, Stride2Plan.RunBlock reads %d", direct.VecRows, direct.Lanes)
	}
	rng := rand.New(rand.NewPCG(61, 62))
	for _, threads := range []int{1, 2, 3} {
		dev := New()
		dev.SetThreads(threads)
		for _, p := range stemCases {
			t.Run(fmt.Sprintf("%d/%+v", threads, p), func(t *testing.T) {
				s := newConvShape(p)
				if !useStem(s) {
					t.Fatalf("%+v does not take the stem path", p)
				}
				x, w, bias := randSlice(rng, s.N*s.imgIn), randSlice(rng, s.OutC*s.ckk), randSlice(rng, s.OutC)
				for i := range x {
					x[i] *= 4 // outputs past 6 too
				}
				want := conv2dNaive(s, x, w, bias)
				for i := range want {
					want[i] = min(max(want[i], 0), 6)
				}
				scale := conv2dNaive(s, absSlice(x), absSlice(w), absSlice(bias))
				wb := dev.bufferOf(w)
				dev.MarkConstant(wb)
				for _, kept := range []*Buffer{nil, wb, wb} { // packed per call, packed once, reused
					y := make([]float32, s.N*s.imgOut)
					for i := range y {
						y[i] = float32(math.NaN())
					}
					conv2dBiasAct(dev, s, device.ActReLU6, y, x, w, bias, nil, kept)
					requireConvClose(t, "forward", y, want, scale, 1e-6)
				}
				plain := make([]float32, s.N*s.imgOut)
				for i := range plain {
					plain[i] = float32(math.NaN())
				}
				conv2dStem(dev, s, device.ActNone, plain, x, w, nil, nil)
				requireConvClose(t, "forward without bias", plain, conv2dNaive(s, x, w, nil), scale, 1e-6)
			})
		}
	}
}
