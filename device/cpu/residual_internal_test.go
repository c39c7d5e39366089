package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/direct"
	"github.com/hora-dl/hora/device/cpu/internal/winograd"
)

// TestConvResidualSameBits checks that Conv2DBiasAddAct gives the bits of
// the two calls it replaces, Conv2DBiasAct without activation then
// AddAct, on every forward path: Winograd, im2col with several images per
// GEMM and with one, a single image split by bands of positions and by
// blocks of channels, with weights read in place and in bands, and the
// direct and depthwise convolutions, which add the residual in a pass of
// their own (as do planes under residualBlocks positions, which the test
// also runs in blocks).
func TestConvResidualSameBits(t *testing.T) {
	for _, least := range []int{residualBlocks, 0} {
		saved := residualBlocks
		residualBlocks = least
		convResidualSameBits(t)
		residualBlocks = saved
	}
}

func convResidualSameBits(t *testing.T) {
	dev := New()
	k := dev.Kernels().(kernels)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name string
		p    device.ConvParams
		path func(s convShape) bool // (Winograd and direct: where the vector kernels are built)
	}{
		{"winograd", convCase(8, 64, 8, 8, 64, 3, 1, 1, 1), func(s convShape) bool { return useWinograd(s, false) || !winograd.Fast() }},
		{"im2col, images per GEMM", convCase(6, 80, 7, 7, 96, 3, 1, 1, 1), func(s convShape) bool { return s.imagesPerGEMM() > 1 || s.l*s.imagesPerGEMM() < 128 }},
		{"im2col, 1×1, one image per GEMM", convCase(4, 48, 9, 9, 72, 1, 1, 0, 1), convShape.pointwise},
		{"split by positions", convCase(1, 24, 14, 14, 20, 1, 1, 0, 1), func(s convShape) bool { return s.l >= s.ocg }},
		{"split by channels", convCase(1, 24, 7, 7, 150, 3, 1, 1, 1), func(s convShape) bool { return s.l < s.ocg && s.ckk < minPositionsMajorDepth }},
		{"positions-major", convCase(1, 80, 7, 7, 150, 3, 1, 1, 1), func(s convShape) bool {
			// positionsMajor leaves the product to a BLAS the GEMM choice
			// measured faster for its class (skinny, without AVX-512).
			return positionsMajor(dev, s, constantBuffer(dev)) || dev.Float32GEMM(false, true, s.l, s.OutC, s.ckk) != "hora"
		}},
		{"split, groups and stride 2", convCase(1, 8, 20, 17, 12, 3, 2, 1, 2), func(s convShape) bool { return s.Groups == 2 }},
		{"direct", convCase(2, 16, 12, 12, 16, 3, 1, 1, 1), func(s convShape) bool { return useDirect(s) || !direct.Fast() }},
		{"depthwise", convCase(2, 32, 12, 12, 32, 3, 1, 1, 32), convShape.depthwise},
	} {
		s := newConvShape(tc.p)
		if !tc.path(s) {
			t.Fatalf("%s: %+v does not take that path", tc.name, tc.p)
		}
		x := dev.bufferOf(randSlice(rng, s.N*s.imgIn))
		res := dev.bufferOf(randSlice(rng, s.N*s.imgOut))
		bias := dev.bufferOf(randSlice(rng, s.OutC))
		for _, constant := range []bool{false, true} {
			w := dev.bufferOf(randSlice(rng, s.OutC*s.ckk))
			if constant {
				dev.MarkConstant(w)
			}
			for _, act := range []device.Activation{device.ActNone, device.ActReLU, device.ActReLU6} {
				for _, b := range []device.Buffer{nil, bias} {
					name := fmt.Sprintf("%s, constant %v, %v, bias %v", tc.name, constant, act, b != nil)
					want := dev.bufferOf(make([]float32, s.N*s.imgOut))
					k.Conv2DBiasAct(tc.p, device.ActNone, want, x, w, b)
					k.AddAct(act, want, want, res, len(want.f32))
					got := dev.bufferOf(make([]float32, s.N*s.imgOut))
					k.Conv2DBiasAddAct(tc.p, act, got, x, w, b, res)
					if !slices.Equal(got.f32, want.f32) {
						t.Fatalf("%s: the fused residual gives other bits", name)
					}
				}
			}
		}
	}
}

// TestConvResidualFloat64 checks Conv2DBiasAddAct in float64 (im2col).
func TestConvResidualFloat64(t *testing.T) {
	dev := New()
	k := dev.Kernels().(kernels)
	rng := rand.New(rand.NewPCG(5, 6))
	p := convCase(3, 5, 9, 9, 7, 3, 1, 1, 1)
	s := newConvShape(p)
	buf64 := func(n int) *Buffer {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.Float64()*2 - 1
		}
		return &Buffer{dev: dev, dt: device.Float64, f64: v}
	}
	x, w, bias, res := buf64(s.N*s.imgIn), buf64(s.OutC*s.ckk), buf64(s.OutC), buf64(s.N*s.imgOut)
	want, got := buf64(s.N*s.imgOut), buf64(s.N*s.imgOut)
	k.Conv2DBiasAct(p, device.ActNone, want, x, w, bias)
	k.AddAct(device.ActReLU, want, want, res, len(want.f64))
	k.Conv2DBiasAddAct(p, device.ActReLU, got, x, w, bias, res)
	if !slices.Equal(got.f64, want.f64) {
		t.Fatal("the fused residual gives other bits in float64")
	}
}
