package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/gemm"
)

// constantBuffer returns a constant float32 buffer, for the predicates
// that ask whether the weights are constant.
func constantBuffer(dev *Device) *Buffer {
	b := dev.bufferOf(make([]float32, 1))
	dev.MarkConstant(b)
	return b
}

// TestPositionsMajorSameBits checks that convolutions computed
// positions-major (constant weights) give the bits of the same
// convolutions through im2col (the weights as they are): 1×1 layers read
// in place, 3×3 and 5×5 ones through im2col, stride 2, split by positions
// and by channels, a partial panel of channels, batches of images side by
// side, with and without bias,
// residual and activation, on one and two workers.
func TestPositionsMajorSameBits(t *testing.T) {
	if New().Float32GEMM(false, false, 1, 1, 1) != "hora" {
		t.Skip("float32 products run a BLAS library or gonum here: no packed filters")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	cases := []device.ConvParams{
		convCase(1, 640, 7, 7, 1280, 1, 1, 0, 1),  // 1×1, by channels
		convCase(1, 960, 7, 7, 160, 1, 1, 0, 1),   // 1×1, by positions
		convCase(1, 576, 14, 14, 64, 1, 1, 0, 1),  // 14×14 planes
		convCase(1, 64, 7, 7, 300, 3, 1, 1, 1),    // 3×3, a partial panel
		convCase(1, 64, 14, 14, 96, 3, 2, 1, 1),   // stride 2
		convCase(1, 24, 9, 9, 40, 5, 1, 0, 1),     // 5×5 kernels on 5×5 planes
		convCase(1, 512, 14, 14, 256, 1, 2, 0, 1), // 1×1 stride 2
		convCase(3, 64, 7, 7, 96, 3, 1, 1, 1),     // a batch: two images side by side, then one
		convCase(5, 640, 7, 7, 64, 1, 1, 0, 1),    // 1×1 images side by side, the last read in place
		convCase(2, 64, 14, 14, 40, 3, 2, 1, 1),   // stride 2, two images side by side
	}
	taken := 0
	for _, threads := range []int{1, 2} {
		dev := New()
		dev.SetThreads(threads)
		k := dev.Kernels().(kernels)
		for _, p := range cases {
			s := newConvShape(p)
			if !positionsMajor(dev, s, constantBuffer(dev)) {
				// Whether a plane fills rows better than columns
				// depends on the kernel's tile (NEON's differs).
				t.Logf("%+v: not positions-major with the %s kernel", p, gemm.Kernel())
				continue
			}
			taken++
			x := dev.bufferOf(randSlice(rng, s.N*s.imgIn))
			wv := randSlice(rng, s.OutC*s.ckk)
			plain, constant := dev.bufferOf(wv), dev.bufferOf(slices.Clone(wv))
			dev.MarkConstant(constant)
			res := dev.bufferOf(randSlice(rng, s.N*s.imgOut))
			bias := dev.bufferOf(randSlice(rng, s.OutC))
			for _, act := range []device.Activation{device.ActNone, device.ActReLU, device.ActReLU6} {
				for _, b := range []device.Buffer{nil, bias} {
					for _, r := range []device.Buffer{nil, res} {
						name := fmt.Sprintf("%d threads, %+v, %v, bias %v, residual %v", threads, p, act, b != nil, r != nil)
						run := func(w device.Buffer) []float32 {
							y := dev.bufferOf(make([]float32, s.N*s.imgOut))
							if r == nil {
								k.Conv2DBiasAct(p, act, y, x, w, b)
							} else {
								k.Conv2DBiasAddAct(p, act, y, x, w, b, r)
							}
							return y.f32
						}
						if got, want := run(constant), run(plain); !slices.Equal(got, want) {
							t.Fatalf("%s: positions-major gives other bits", name)
						}
					}
				}
			}
		}
	}
	if taken == 0 {
		t.Fatalf("no case is positions-major with the %s kernel", gemm.Kernel())
	}
}
