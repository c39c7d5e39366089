package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/direct"
)

// BenchmarkDirect times the zoo's small convolutions (ResNet-20, ResNet-8,
// LeNet-5, a resnet18-style stem) through im2col and the direct kernel,
// forward and input gradient, in GFLOP/s of 2·N·OutC·OH·OW·C·KH·KW.
func BenchmarkDirect(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	dev := New()
	for _, p := range []device.ConvParams{
		convCase(128, 16, 28, 28, 16, 3, 1, 1, 1),
		convCase(128, 32, 14, 14, 32, 3, 1, 1, 1),
		convCase(128, 64, 7, 7, 64, 3, 1, 1, 1),
		convCase(128, 32, 7, 7, 32, 3, 1, 1, 1),
		convCase(128, 16, 7, 7, 16, 3, 1, 1, 1),
		convCase(128, 16, 28, 28, 32, 3, 2, 1, 1),
		convCase(128, 32, 14, 14, 64, 3, 2, 1, 1),
		convCase(128, 24, 28, 28, 48, 3, 2, 1, 1), // ResNet-8's stride-2 layers
		convCase(128, 48, 14, 14, 96, 3, 2, 1, 1),
		convCase(128, 24, 28, 28, 24, 3, 1, 1, 1),
		convCase(128, 48, 14, 14, 48, 3, 1, 1, 1),
		convCase(128, 96, 7, 7, 96, 3, 1, 1, 1),
		convCase(128, 1, 28, 28, 16, 3, 1, 1, 1),
		convCase(128, 32, 14, 14, 64, 3, 1, 1, 1),
		convCase(256, 1, 28, 28, 6, 5, 1, 2, 1),
		convCase(256, 6, 14, 14, 16, 5, 1, 0, 1),
		convCase(8, 3, 224, 224, 64, 7, 2, 3, 1),
		convCase(1, 3, 224, 224, 32, 3, 2, 1, 1), // mobilenet_v2's stem at batch 1
	} {
		s := newConvShape(p)
		x, w := randSlice(rng, s.N*s.imgIn), randSlice(rng, s.OutC*s.ckk)
		y := make([]float32, s.N*s.imgOut)
		flop := 2 * float64(s.N*s.imgOut*s.ckk)
		name := fmt.Sprintf("n%d_c%d_oc%d_%dx%d_k%d_s%d", s.N, s.C, s.OutC, s.H, s.W, s.KH, s.StrideH)
		paths := []struct {
			name string
			f    func()
		}{
			{"im2col", func() { conv2dIm2col(dev, s, device.ActReLU, y, x, w, nil, nil, nil) }},
			{"direct", func() { conv2dDirect(dev, s, device.ActReLU, y, x, w, nil, nil) }},
		}
		dw := make([]float32, s.OutC*s.ckk)
		paths = append(paths,
			struct {
				name string
				f    func()
			}{"im2colGradWeight", func() { conv2dGradWeightIm2col(dev, s, dw, y, x) }},
			struct {
				name string
				f    func()
			}{"directGradWeight", func() { conv2dDirectGradWeight(dev, s, dw, y, x) }})
		paths = append(paths, struct {
			name string
			f    func()
		}{"im2colGradInput", func() { conv2dGradInputIm2col(dev, s, x, y, w) }})
		if s.directGradInput() {
			paths = append(paths, struct {
				name string
				f    func()
			}{"directGradInput", func() { conv2dDirectGradInput(dev, s, x, y, w) }})
		}
		if direct.VecFast() && s.Groups == 1 && s.ckk >= 16 {
			paths = append(paths, struct {
				name string
				f    func()
			}{"vec", func() { conv2dVec(dev, s, device.ActReLU, y, x, w, nil, nil) }})
			if s.gradInputIsConv() {
				paths = append(paths, struct {
					name string
					f    func()
				}{"vecGradInput", func() { conv2dVecGradInput(dev, s, x, y, w) }})
			}
			paths = append(paths, struct {
				name string
				f    func()
			}{"vecGradWeight", func() { conv2dVecGradWeight(dev, s, dw, y, x) }})
		}
		for _, path := range paths {
			b.Run(name+"/"+path.name, func(b *testing.B) {
				for b.Loop() {
					path.f()
				}
				b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkDepthwiseGradInput times MobileNet's unit-stride depthwise
// input gradients through the phases (an axpy per tap) and as the vector
// depthwise convolution of the rotated filters, in GB/s of dy and dx.
func BenchmarkDepthwiseGradInput(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	dev := New()
	for _, p := range []device.ConvParams{
		{N: 128, C: 32, H: 14, W: 14, OutC: 32, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 32},
		{N: 128, C: 64, H: 7, W: 7, OutC: 64, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 64},
	} {
		s := newConvShape(p)
		dy, w := randSlice(rng, s.N*s.imgOut), randSlice(rng, s.OutC*s.ckk)
		dx := make([]float32, s.N*s.imgIn)
		bytes := 4 * float64(len(dy)+len(dx))
		for _, path := range []struct {
			name string
			f    func()
		}{
			{"phases", func() { conv2dDepthwiseGradInputPhases(dev, s, dx, dy, w) }},
			{"vector", func() { conv2dDepthwiseGradInput(dev, s, dx, dy, w) }},
		} {
			b.Run(fmt.Sprintf("c%d_%dx%d/%s", s.C, s.H, s.W, path.name), func(b *testing.B) {
				for b.Loop() {
					path.f()
				}
				b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

// BenchmarkDepthwiseGradWeight times MobileNet's unit-stride depthwise
// weight gradients through the padded phases (a dot product per tap) and
// in place (direct.SamePlan.TapDots), in GB/s of x and dy.
func BenchmarkDepthwiseGradWeight(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	dev := New()
	for _, p := range []device.ConvParams{
		{N: 128, C: 32, H: 14, W: 14, OutC: 32, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 32},
		{N: 128, C: 64, H: 7, W: 7, OutC: 64, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 64},
		{N: 8, C: 32, H: 56, W: 56, OutC: 32, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 32},
	} {
		s := newConvShape(p)
		dy, x := randSlice(rng, s.N*s.imgOut), randSlice(rng, s.N*s.imgIn)
		dw := make([]float32, s.OutC*s.ckk)
		bytes := 4 * float64(len(dy)+len(x))
		for _, path := range []struct {
			name string
			f    func()
		}{
			{"phases", func() { launch(dev, s.C, s.N*s.l*9, depthwiseGradArgs[float32]{s: s, dw: dw, dy: dy, x: x}) }},
			{"inplace", func() { conv2dDepthwiseGradWeight(dev, s, dw, dy, x) }},
		} {
			b.Run(fmt.Sprintf("n%d_c%d_%dx%d/%s", s.N, s.C, s.H, s.W, path.name), func(b *testing.B) {
				for b.Loop() {
					path.f()
				}
				b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}
