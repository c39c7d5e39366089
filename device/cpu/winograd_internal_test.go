package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/winograd"
)

// winogradCases cover odd and even planes, paddings 0 to 2, channel counts
// that are not multiples of the vector width, planes narrower than one
// step of tiles and wider than two, single images and batches.
var winogradCases = []device.ConvParams{
	convCase(1, 3, 5, 5, 4, 3, 1, 1, 1),
	convCase(2, 5, 7, 9, 6, 3, 1, 0, 1),
	convCase(3, 4, 6, 6, 3, 3, 1, 2, 1),
	convCase(1, 17, 33, 35, 19, 3, 1, 1, 1),
	convCase(4, 16, 14, 14, 32, 3, 1, 1, 1),
	convCase(2, 8, 70, 3, 5, 3, 1, 1, 1),
	{N: 2, C: 6, H: 11, W: 8, OutC: 7, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 2, PadW: 0, DilH: 1, DilW: 1, Groups: 1},
}

// TestWinogradMatchesReference runs the Winograd forward convolution,
// with bias and ReLU, and its input gradient on every case, one to three
// workers, against float64 reference loops. The bound is relative to
// Σ|x·w| of each output, the scale of its rounding error.
func TestWinogradMatchesReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(21, 22))
	for _, threads := range []int{1, 2, 3} {
		dev := New()
		dev.SetThreads(threads)
		for _, p := range winogradCases {
			t.Run(fmt.Sprintf("%d/%+v", threads, p), func(t *testing.T) {
				s := newConvShape(p)
				if !s.winogradShape() {
					t.Fatal("not a Winograd shape")
				}
				x, w, bias := randSlice(rng, s.N*s.imgIn), randSlice(rng, s.OutC*s.ckk), randSlice(rng, s.OutC)
				y := make([]float32, s.N*s.imgOut)
				for i := range y {
					y[i] = float32(math.NaN()) // every output must be written
				}
				winogradForward(dev, s, device.ActReLU, y, x, w, bias, nil, nil)
				want := conv2dNaive(s, x, w, bias)
				scale := conv2dNaive(s, absSlice(x), absSlice(w), absSlice(bias))
				for i := range want {
					want[i] = max(want[i], 0)
				}
				requireConvClose(t, "forward", y, want, scale)

				dy := randSlice(rng, s.N*s.imgOut)
				dx := make([]float32, s.N*s.imgIn)
				for i := range dx {
					dx[i] = float32(math.NaN())
				}
				winogradGradInput(dev, s, dx, dy, w)
				wantDx, scaleDx := convGradInputNaive(s, dy, w)
				requireConvClose(t, "input gradient", dx, wantDx, scaleDx)
			})
		}
	}
}

// TestConvChoosesWinograd checks the choice of path: resnet18's 3×3
// convolutions of 56×56 to 14×14 planes (and their input gradients) go
// through Winograd where the vector transforms exist; its 7×7 ones, a
// single 14×14 image (49 tiles), 32 channels, and 5×5, strided, grouped
// or widely padded convolutions do not.
func TestConvChoosesWinograd(t *testing.T) {
	for _, p := range []device.ConvParams{
		convCase(1, 64, 56, 56, 64, 3, 1, 1, 1),
		convCase(8, 256, 14, 14, 256, 3, 1, 1, 1),
	} {
		s := newConvShape(p)
		if got := useWinograd(s, false); got != winograd.Fast() {
			t.Errorf("%+v: Winograd %v, want %v", p, got, winograd.Fast())
		}
		if got := s.gradInputIsConv() && useWinograd(s.gradInputShape(), false); got != winograd.Fast() {
			t.Errorf("%+v: Winograd input gradient %v, want %v", p, got, winograd.Fast())
		}
	}
	for _, p := range []device.ConvParams{
		convCase(32, 512, 7, 7, 512, 3, 1, 1, 1),
		convCase(1, 256, 14, 14, 256, 3, 1, 1, 1),
		convCase(8, 32, 16, 16, 32, 3, 1, 1, 1),
		convCase(8, 64, 16, 16, 64, 5, 1, 2, 1),
		convCase(8, 64, 16, 16, 64, 3, 2, 1, 1),
		convCase(8, 64, 16, 16, 64, 3, 1, 1, 2),
		convCase(8, 64, 16, 16, 64, 3, 1, 3, 1),
	} {
		s := newConvShape(p)
		if useWinograd(s, false) {
			t.Errorf("%+v: on the Winograd path", p)
		}
	}
	// Kept filters need no batch to spread their transform over.
	if s := newConvShape(convCase(1, 256, 14, 14, 256, 3, 1, 1, 1)); useWinograd(s, true) != winograd.Fast() {
		t.Errorf("resnet18's 14×14 layer at batch 1 with kept filters: on the Winograd path %v, want %v", !winograd.Fast(), winograd.Fast())
	}
}

// requireConvClose fails the test unless got[i] is want[i] within 1e-6 of
// scale[i] (the sum of the magnitudes of its products) plus 1e-7.
func requireConvClose(t *testing.T, what string, got []float32, want, scale []float64) {
	t.Helper()
	for i := range got {
		if !(math.Abs(float64(got[i])-want[i]) <= 1e-6*scale[i]+1e-7) {
			t.Fatalf("%s: element %d = %g, want %g", what, i, got[i], want[i])
		}
	}
}

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = rng.Float32()*2 - 1
	}
	return s
}

func absSlice(s []float32) []float32 {
	a := make([]float32, len(s))
	for i, v := range s {
		a[i] = float32(math.Abs(float64(v)))
	}
	return a
}
