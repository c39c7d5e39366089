package devicetest

import (
	"math"
	"testing"

	"github.com/hora-dl/hora/device"
)

// convTaps calls fn for every (output, input, weight) position triple of
// the convolution p whose input position lies inside the image: the terms
// of y[yi] = Σ x[xi]·w[wi].
func convTaps(p device.ConvParams, fn func(yi, xi, wi int)) {
	oh, ow := p.OutH(), p.OutW()
	cg, ocg := p.C/p.Groups, p.OutC/p.Groups
	for n := 0; n < p.N; n++ {
		for oc := 0; oc < p.OutC; oc++ {
			g := oc / ocg
			for i := 0; i < oh; i++ {
				for j := 0; j < ow; j++ {
					yi := ((n*p.OutC+oc)*oh+i)*ow + j
					for c := 0; c < cg; c++ {
						ic := g*cg + c
						for kh := 0; kh < p.KH; kh++ {
							h := i*p.StrideH - p.PadH + kh*p.DilH
							if h < 0 || h >= p.H {
								continue
							}
							for kw := 0; kw < p.KW; kw++ {
								w := j*p.StrideW - p.PadW + kw*p.DilW
								if w < 0 || w >= p.W {
									continue
								}
								xi := ((n*p.C+ic)*p.H+h)*p.W + w
								wi := ((oc*cg+c)*p.KH+kh)*p.KW + kw
								fn(yi, xi, wi)
							}
						}
					}
				}
			}
		}
	}
}

// dot returns Σ a·b and Σ |a·b|.
func dot(a, b []float64) (sum, mag float64) {
	for i := range a {
		sum += a[i] * b[i]
		mag += math.Abs(a[i] * b[i])
	}
	return sum, mag
}

// TestConv2D checks Kernels.Conv2D, Conv2DGradInput and Conv2DGradWeight
// against direct loops and against the adjoint identities
// <conv(x,w), dy> = <x, gradInput(dy,w)> = <w, gradWeight(dy,x)>.
// Every output is overwritten (its previous contents do not matter).
func TestConv2D(t *testing.T, dev device.Device) {
	k := dev.Kernels()
	rng := newRand(7)
	p := func(n, c, h, w, oc, kh, kw, sh, sw, ph, pw, dh, dw, g int) device.ConvParams {
		return device.ConvParams{N: n, C: c, H: h, W: w, OutC: oc, KH: kh, KW: kw,
			StrideH: sh, StrideW: sw, PadH: ph, PadW: pw, DilH: dh, DilW: dw, Groups: g}
	}
	cases := []struct {
		name string
		p    device.ConvParams
	}{
		{"basic", p(2, 3, 5, 5, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1)},
		{"pad1", p(2, 3, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1)},
		{"stride2-pad1", p(2, 2, 7, 6, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1)},
		{"dilation2", p(1, 2, 8, 9, 3, 3, 3, 1, 1, 0, 2, 2, 2, 1)},
		{"groups2", p(2, 4, 6, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2)},
		{"depthwise", p(2, 3, 5, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 3)},
		{"nonsquare", p(2, 3, 6, 7, 4, 2, 3, 2, 1, 1, 0, 1, 2, 1)},
		{"kernel1x1", p(3, 5, 4, 4, 2, 1, 1, 1, 1, 0, 0, 1, 1, 1)},
		{"stride-gt-kernel", p(1, 2, 9, 8, 2, 2, 2, 3, 3, 0, 0, 1, 1, 1)},
		{"big-pad", p(1, 1, 3, 3, 2, 3, 3, 1, 1, 2, 2, 1, 1, 1)},
		{"mixed", p(2, 6, 9, 7, 4, 3, 2, 2, 3, 2, 1, 2, 1, 2)},
		{"parallel", p(8, 4, 12, 12, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1)},
		{"same5x5", p(3, 2, 6, 7, 3, 5, 5, 1, 1, 2, 2, 1, 1, 1)},
		{"same3x5", p(2, 3, 5, 4, 2, 3, 5, 1, 1, 1, 2, 1, 1, 1)},
		{"same-narrow", p(2, 2, 6, 1, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1)},
		{"same-many-images", p(40, 3, 8, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1)},
		{"parallel-groups", p(9, 8, 10, 11, 8, 3, 3, 1, 2, 1, 1, 1, 1, 4)},
		// Depthwise (MobileNet's 3×3, stride 1 and 2; other geometries).
		{"depthwise-3x3-s1", p(2, 8, 9, 21, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8)},
		{"depthwise-3x3-s2", p(2, 8, 9, 10, 8, 3, 3, 2, 2, 1, 1, 1, 1, 8)},
		{"depthwise-3x3-s2-odd", p(1, 5, 11, 13, 5, 3, 3, 2, 2, 1, 1, 1, 1, 5)},
		{"depthwise-5x3-dil", p(1, 4, 11, 9, 4, 5, 3, 1, 2, 2, 1, 2, 1, 4)},
		{"depthwise-s3", p(2, 3, 10, 11, 3, 3, 3, 3, 3, 0, 1, 1, 1, 3)},
		{"depthwise-big-pad", p(1, 2, 4, 5, 2, 3, 3, 2, 1, 3, 3, 1, 1, 2)},
		{"depthwise-wide-kernel", p(1, 3, 6, 30, 3, 1, 11, 1, 1, 0, 5, 1, 1, 3)},
		{"depthwise-1x1-image", p(3, 6, 1, 1, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6)},
		{"depthwise-multiplier", p(2, 3, 6, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 3)},
	}
	for _, tc := range cases {
		for _, dt := range floatTypes {
			t.Run(tc.name+"/"+dt.String(), func(t *testing.T) {
				p := tc.p
				oh, ow := p.OutH(), p.OutW()
				nx, nw, ny := p.N*p.C*p.H*p.W, p.OutC*(p.C/p.Groups)*p.KH*p.KW, p.N*p.OutC*oh*ow
				xv, wv, dyv := randFloats(rng, nx, -1, 1), randFloats(rng, nw, -1, 1), randFloats(rng, ny, -1, 1)
				x, w, dy := Upload(t, dev, dt, xv), Upload(t, dev, dt, wv), Upload(t, dev, dt, dyv)

				wantY, magY := make([]float64, ny), make([]float64, ny)
				wantDX, magDX := make([]float64, nx), make([]float64, nx)
				wantDW, magDW := make([]float64, nw), make([]float64, nw)
				convTaps(p, func(yi, xi, wi int) {
					wantY[yi] += xv[xi] * wv[wi]
					magY[yi] += math.Abs(xv[xi] * wv[wi])
					wantDX[xi] += dyv[yi] * wv[wi]
					magDX[xi] += math.Abs(dyv[yi] * wv[wi])
					wantDW[wi] += dyv[yi] * xv[xi]
					magDW[wi] += math.Abs(dyv[yi] * xv[xi])
				})

				y := Upload(t, dev, dt, sentinel(ny))
				k.Conv2D(p, y, x, w)
				gotY := Download(t, dev, y)
				checkClose(t, dt, gotY, wantY, magY, "Conv2D %+v", p)

				dx := Upload(t, dev, dt, sentinel(nx))
				k.Conv2DGradInput(p, dx, dy, w)
				gotDX := Download(t, dev, dx)
				checkClose(t, dt, gotDX, wantDX, magDX, "Conv2DGradInput %+v", p)

				dw := Upload(t, dev, dt, sentinel(nw))
				k.Conv2DGradWeight(p, dw, dy, x)
				gotDW := Download(t, dev, dw)
				checkClose(t, dt, gotDW, wantDW, magDW, "Conv2DGradWeight %+v", p)

				// Adjoint identities, from the device's own results.
				lhs, m1 := dot(gotY, dyv)
				mid, m2 := dot(xv, gotDX)
				rhs, m3 := dot(wv, gotDW)
				scale := math.Max(m1, math.Max(m2, m3))
				tol := 10 * relTol(dt) * scale
				if math.Abs(lhs-mid) > tol || math.Abs(lhs-rhs) > tol {
					t.Errorf("adjoint identity fails: <conv(x,w),dy> = %.12g, <x,gradInput> = %.12g, <w,gradWeight> = %.12g (tolerance %.3g)", lhs, mid, rhs, tol)
				}
			})
		}
	}
	t.Run("N0", func(t *testing.T) {
		for _, dt := range floatTypes {
			pp := p(0, 2, 4, 4, 3, 3, 3, 1, 1, 0, 0, 1, 1, 1)
			x, dy := Upload(t, dev, dt, nil), Upload(t, dev, dt, nil)
			dw := Upload(t, dev, dt, sentinel(3*2*9))
			k.Conv2DGradWeight(pp, dw, dy, x)
			checkEqual(t, Download(t, dev, dw), make([]float64, 3*2*9), "Conv2DGradWeight with N=0 on %v", dt)
		}
	})
}
