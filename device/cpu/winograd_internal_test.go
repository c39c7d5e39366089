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

// winogradTolerance bounds the error of a Winograd output relative to the
// sum of the magnitudes of its products. F(4×4, 3×3)'s transforms scale
// values by up to 5 and 8 before they cancel, so its float32 rounding is
// about ten times the direct sum's: the worst of winogradCases measured
// 9.5e-6 (F(2×2, 3×3) and the direct kernels stay within 1e-6).
const winogradTolerance = 2e-5

// TestWinogradMatchesReference runs the Winograd forward convolution,
// with bias and ReLU, and its input gradient on every case, in both
// algorithms, one to three workers, against float64 reference loops. The
// bound is relative to Σ|x·w| of each output, the scale of its rounding
// error.
func TestWinogradMatchesReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(21, 22))
	for _, algo := range []*winogradAlgo{winograd.F2, winograd.F4} {
		for _, threads := range []int{1, 2, 3} {
			dev := New()
			dev.SetThreads(threads)
			for _, p := range winogradCases {
				t.Run(fmt.Sprintf("%v/%d/%+v", algo, threads, p), func(t *testing.T) {
					s := newConvShape(p)
					if !s.winogradShape() {
						t.Fatal("not a Winograd shape")
					}
					x, w, bias := randSlice(rng, s.N*s.imgIn), randSlice(rng, s.OutC*s.ckk), randSlice(rng, s.OutC)
					y := make([]float32, s.N*s.imgOut)
					for i := range y {
						y[i] = float32(math.NaN()) // every output must be written
					}
					winogradForward(dev, s, algo, device.ActReLU, y, x, w, bias, nil, nil)
					want := conv2dNaive(s, x, w, bias)
					scale := conv2dNaive(s, absSlice(x), absSlice(w), absSlice(bias))
					for i := range want {
						want[i] = max(want[i], 0)
					}
					requireConvClose(t, "forward", y, want, scale, winogradTolerance)

					dy := randSlice(rng, s.N*s.imgOut)
					dx := make([]float32, s.N*s.imgIn)
					for i := range dx {
						dx[i] = float32(math.NaN())
					}
					winogradGradInput(dev, s, algo, dx, dy, w)
					wantDx, scaleDx := convGradInputNaive(s, dy, w)
					requireConvClose(t, "input gradient", dx, wantDx, scaleDx, winogradTolerance)
				})
			}
		}
	}
}

// TestConvChoosesWinograd checks the choice of path: resnet18's 3×3
// convolutions (and their input gradients) go through F(4×4, 3×3) where a
// batch has many tiles, through F(2×2, 3×3) at batch 1 on 14×14 planes
// with kept filters, and through neither on its 7×7 planes at batch
// 1, on ResNet-20's 64-channel 7×7 ones, on a single 14×14 image without
// kept filters, with 32 channels, or
// for 5×5, strided, dilated or widely padded convolutions. Without the
// vector transforms nothing does.
func TestConvChoosesWinograd(t *testing.T) {
	want := func(algo *winogradAlgo) *winogradAlgo {
		if !winograd.Fast() {
			return nil
		}
		return algo
	}
	for _, c := range []struct {
		p    device.ConvParams
		kept bool
		want *winogradAlgo
	}{
		{convCase(1, 64, 56, 56, 64, 3, 1, 1, 1), false, winograd.F4},
		{convCase(8, 256, 14, 14, 256, 3, 1, 1, 1), false, winograd.F4},
		{convCase(32, 512, 7, 7, 512, 3, 1, 1, 1), false, winograd.F4},
		{convCase(128, 64, 7, 7, 64, 3, 1, 1, 1), false, nil},
		{convCase(1, 128, 28, 28, 128, 3, 1, 1, 1), true, winograd.F4},
		{convCase(1, 256, 14, 14, 256, 3, 1, 1, 1), true, winograd.F2},
		{convCase(1, 512, 7, 7, 512, 3, 1, 1, 1), true, nil},
		{convCase(1, 256, 14, 14, 256, 3, 1, 1, 1), false, nil},
		{convCase(8, 32, 16, 16, 32, 3, 1, 1, 1), false, nil},
		{convCase(8, 64, 16, 16, 64, 5, 1, 2, 1), false, nil},
		{convCase(8, 64, 16, 16, 64, 3, 2, 1, 1), false, nil},
		{convCase(8, 64, 16, 16, 64, 3, 1, 1, 2), false, nil},
		{convCase(8, 64, 16, 16, 64, 3, 1, 3, 1), false, nil},
	} {
		s := newConvShape(c.p)
		if got := winogradTransform(s, c.kept); got != want(c.want) {
			t.Errorf("%+v, kept filters %v: Winograd %v, want %v", c.p, c.kept, got, want(c.want))
		}
		if c.kept {
			continue
		}
		var got *winogradAlgo
		if s.gradInputIsConv() {
			got = winogradTransform(s.gradInputShape(), false)
		}
		if got != want(c.want) {
			t.Errorf("%+v: Winograd input gradient %v, want %v", c.p, got, want(c.want))
		}
	}
}

// requireConvClose fails the test unless got[i] is want[i] within tol of
// scale[i] (the sum of the magnitudes of its products) plus 1e-7.
func requireConvClose(t *testing.T, what string, got []float32, want, scale []float64, tol float64) {
	t.Helper()
	for i := range got {
		if !(math.Abs(float64(got[i])-want[i]) <= tol*scale[i]+1e-7) {
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
