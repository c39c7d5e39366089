package devicetest

import (
	"math"
	"testing"

	"github.com/hora-dl/hora/device"
)

// acts are the activations the fused kernels are checked with.
var acts = []device.Activation{device.ActNone, device.ActReLU, device.ActReLU6}

// actRef is activation a of v (NaN stays NaN).
func actRef(a device.Activation, v float64) float64 {
	switch a {
	case device.ActReLU:
		if v < 0 {
			v = 0
		}
	case device.ActReLU6:
		if v < 0 {
			v = 0
		}
		if v > 6 {
			v = 6
		}
	}
	return v
}

// actGradRef is dy times the derivative of activation a at the output y:
// for ReLU dy where y > 0; for ReLU6, as PyTorch's hardtanh backward, 0
// where y <= 0 or y >= 6 (so at exactly 0 and 6) and dy elsewhere (a NaN
// y included).
func actGradRef(a device.Activation, dy, y float64) float64 {
	switch a {
	case device.ActReLU:
		if y > 0 {
			return dy
		}
		return 0
	case device.ActReLU6:
		if y <= 0 || y >= 6 {
			return 0
		}
	}
	return dy
}

// TestFusedAct checks the activations of the optional fused kernels:
// FusedKernels.BiasAct and ActGrad, and ConvBiasActKernels.Conv2DBiasAct
// (depthwise and ordinary convolutions), for every Activation. It skips
// what dev does not implement.
func TestFusedAct(t *testing.T, dev device.Device) {
	fk, ok := dev.Kernels().(device.FusedKernels)
	if !ok {
		t.Skipf("%s does not implement device.FusedKernels", dev.Name())
	}
	rng := newRand(11)
	nan := math.NaN()
	// Values on and around the bounds of ReLU and ReLU6.
	special := []float64{0, math.Copysign(0, -1), 6, -1e-3, 1e-3, 5.999, 6.001, 7, -7, 3, nan, math.Inf(1), math.Inf(-1)}
	for _, dt := range floatTypes {
		for _, act := range acts {
			name := dt.String() + "/" + act.String()
			t.Run("BiasAct/"+name, func(t *testing.T) {
				for _, inner := range []int{1, 37} {
					outer, channels := 3, 4
					n := outer * channels * inner
					xv := randFloats(rng, n, -9, 9)
					copy(xv, special)
					for _, withBias := range []bool{false, true} {
						bv := randFloats(rng, channels, -2, 2)
						want := make([]float64, n)
						for i, v := range xv {
							if withBias {
								v = roundTo(dt, v+bv[i/inner%channels])
							}
							want[i] = actRef(act, v)
						}
						x, y := Upload(t, dev, dt, xv), Upload(t, dev, dt, sentinel(n))
						var b device.Buffer
						if withBias {
							b = Upload(t, dev, dt, bv)
						}
						fk.BiasAct(act, y, x, b, outer, channels, inner)
						checkClose(t, dt, Download(t, dev, y), want, nil, "BiasAct(%v) inner %d, bias %v", act, inner, withBias)
						fk.BiasAct(act, x, x, b, outer, channels, inner) // in place
						checkClose(t, dt, Download(t, dev, x), want, nil, "BiasAct(%v) in place, inner %d, bias %v", act, inner, withBias)
					}
				}
			})
			t.Run("ActGrad/"+name, func(t *testing.T) {
				n := 100
				yv := randFloats(rng, n, -1, 7)
				copy(yv, special)
				dyv := randFloats(rng, n, -1, 1)
				want := make([]float64, n)
				for i := range want {
					want[i] = actGradRef(act, dyv[i], yv[i])
				}
				y, dy, dx := Upload(t, dev, dt, yv), Upload(t, dev, dt, dyv), Upload(t, dev, dt, sentinel(n))
				fk.ActGrad(act, dx, dy, y, n)
				checkEqual(t, Download(t, dev, dx), want, "ActGrad(%v)", act)
				fk.ActGrad(act, dy, dy, y, n) // in place
				checkEqual(t, Download(t, dev, dy), want, "ActGrad(%v) in place", act)
			})
		}
	}
	ck, ok := dev.Kernels().(device.ConvBiasActKernels)
	if !ok {
		return
	}
	p := func(n, c, h, w, oc, kh, kw, sh, sw, ph, pw, dh, dw, g int) device.ConvParams {
		return device.ConvParams{N: n, C: c, H: h, W: w, OutC: oc, KH: kh, KW: kw,
			StrideH: sh, StrideW: sw, PadH: ph, PadW: pw, DilH: dh, DilW: dw, Groups: g}
	}
	for _, tc := range []struct {
		name string
		p    device.ConvParams
	}{
		{"depthwise-s1", p(2, 6, 9, 12, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6)},
		{"depthwise-s2", p(2, 6, 9, 12, 6, 3, 3, 2, 2, 1, 1, 1, 1, 6)},
		{"depthwise-dil", p(1, 3, 8, 9, 3, 3, 3, 1, 2, 2, 1, 2, 1, 3)},
		{"dense", p(2, 3, 6, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1)},
		{"groups", p(1, 4, 6, 5, 6, 3, 3, 2, 1, 1, 1, 1, 1, 2)},
	} {
		for _, dt := range floatTypes {
			for _, act := range acts {
				t.Run("Conv2DBiasAct/"+tc.name+"/"+dt.String()+"/"+act.String(), func(t *testing.T) {
					p := tc.p
					oh, ow := p.OutH(), p.OutW()
					nx, nw, ny := p.N*p.C*p.H*p.W, p.OutC*(p.C/p.Groups)*p.KH*p.KW, p.N*p.OutC*oh*ow
					// Inputs large enough for ReLU6 to clip.
					xv, wv, bv := randFloats(rng, nx, -3, 3), randFloats(rng, nw, -1.5, 1.5), randFloats(rng, p.OutC, -2, 2)
					x, w := Upload(t, dev, dt, xv), Upload(t, dev, dt, wv)
					for _, withBias := range []bool{false, true} {
						sum, mag := make([]float64, ny), make([]float64, ny)
						convTaps(p, func(yi, xi, wi int) {
							sum[yi] += xv[xi] * wv[wi]
							mag[yi] += math.Abs(xv[xi] * wv[wi])
						})
						var b device.Buffer
						if withBias {
							b = Upload(t, dev, dt, bv)
						}
						want := make([]float64, ny)
						for yi := range want {
							v := sum[yi]
							if withBias {
								c := yi / (oh * ow) % p.OutC
								v += bv[c]
								mag[yi] += math.Abs(bv[c])
							}
							want[yi] = actRef(act, v)
						}
						y := Upload(t, dev, dt, sentinel(ny))
						ck.Conv2DBiasAct(p, act, y, x, w, b)
						checkClose(t, dt, Download(t, dev, y), want, mag, "Conv2DBiasAct(%v) %+v, bias %v", act, p, withBias)
					}
				})
			}
		}
	}
}
