package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/winograd"
)

// BenchmarkWinograd times resnet18's and ResNet-20's 3×3 convolutions
// through im2col and through both Winograd algorithms (forward and input
// gradient), in
// GFLOP/s of the direct convolution's 2·N·OutC·OH·OW·C·9 operations.
func BenchmarkWinograd(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	dev := New()
	for _, p := range []device.ConvParams{
		convCase(32, 64, 56, 56, 64, 3, 1, 1, 1),
		convCase(32, 128, 28, 28, 128, 3, 1, 1, 1),
		convCase(32, 256, 14, 14, 256, 3, 1, 1, 1),
		convCase(32, 512, 7, 7, 512, 3, 1, 1, 1),
		convCase(1, 64, 56, 56, 64, 3, 1, 1, 1),
		convCase(1, 128, 28, 28, 128, 3, 1, 1, 1),
		convCase(128, 16, 28, 28, 16, 3, 1, 1, 1),
		convCase(128, 32, 14, 14, 32, 3, 1, 1, 1),
		convCase(128, 64, 7, 7, 64, 3, 1, 1, 1),
	} {
		s := newConvShape(p)
		x, w := randSlice(rng, s.N*s.imgIn), randSlice(rng, s.OutC*s.ckk)
		y := make([]float32, s.N*s.imgOut)
		flop := 2 * float64(s.N*s.imgOut*s.ckk)
		name := fmt.Sprintf("n%d_c%d_%dx%d", s.N, s.C, s.H, s.W)
		for _, path := range []struct {
			name string
			f    func()
		}{
			{"im2col", func() { conv2dIm2col(dev, s, device.ActReLU, y, x, w, nil, nil, nil) }},
			{"winogradF2", func() { winogradForward(dev, s, winograd.F2, device.ActReLU, y, x, w, nil, nil, nil) }},
			{"winogradF4", func() { winogradForward(dev, s, winograd.F4, device.ActReLU, y, x, w, nil, nil, nil) }},
			{"im2colGradInput", func() { conv2dGradInputIm2col(dev, s, x, y, w) }},
			{"winogradF2GradInput", func() { winogradGradInput(dev, s, winograd.F2, x, y, w) }},
			{"winogradF4GradInput", func() { winogradGradInput(dev, s, winograd.F4, x, y, w) }},
		} {
			b.Run(name+"/"+path.name, func(b *testing.B) {
				for b.Loop() {
					path.f()
				}
				b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
