package devicetest

import (
	"math"
	"testing"

	"github.com/hora-dl/hora/device"
)

func poolCases() []struct {
	name string
	p    device.PoolParams
} {
	p := func(n, c, h, w, kh, kw, sh, sw, ph, pw int) device.PoolParams {
		return device.PoolParams{N: n, C: c, H: h, W: w, KH: kh, KW: kw, StrideH: sh, StrideW: sw, PadH: ph, PadW: pw}
	}
	return []struct {
		name string
		p    device.PoolParams
	}{
		{"2x2-s2", p(2, 3, 6, 6, 2, 2, 2, 2, 0, 0)},
		{"2x2-s2-odd", p(1, 2, 7, 5, 2, 2, 2, 2, 0, 0)},
		{"3x3-s2-pad1", p(2, 2, 7, 8, 3, 3, 2, 2, 1, 1)},
		{"3x3-s1-pad1", p(1, 3, 5, 5, 3, 3, 1, 1, 1, 1)},
		{"nonsquare", p(2, 2, 6, 9, 2, 3, 1, 2, 1, 1)},
		{"global", p(2, 3, 4, 5, 4, 5, 1, 1, 0, 0)},
		{"1x1", p(1, 2, 3, 3, 1, 1, 1, 1, 0, 0)},
		{"parallel", p(16, 32, 14, 14, 2, 2, 2, 2, 0, 0)},
		{"3x3-s2-pad1-big", p(2, 5, 17, 20, 3, 3, 2, 2, 1, 1)},
		{"3x3-s2-nopad", p(1, 3, 9, 12, 3, 3, 2, 2, 0, 0)},
		{"3x3-s1", p(1, 2, 8, 9, 3, 3, 1, 1, 0, 0)},
		{"5x4-s3-pad2", p(2, 2, 13, 11, 5, 4, 3, 2, 2, 1)},
		{"batch1-rows", p(1, 2, 40, 40, 3, 3, 2, 2, 1, 1)},
	}
}

// poolTaps calls fn for every (output, input) pair of p whose input lies
// inside the image, in row-major window order.
func poolTaps(p device.PoolParams, fn func(yi, xi int)) {
	oh, ow := p.OutH(), p.OutW()
	for plane := 0; plane < p.N*p.C; plane++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				yi := (plane*oh+i)*ow + j
				for kh := 0; kh < p.KH; kh++ {
					h := i*p.StrideH - p.PadH + kh
					if h < 0 || h >= p.H {
						continue
					}
					for kw := 0; kw < p.KW; kw++ {
						w := j*p.StrideW - p.PadW + kw
						if w < 0 || w >= p.W {
							continue
						}
						fn(yi, (plane*p.H+h)*p.W+w)
					}
				}
			}
		}
	}
}

// TestMaxPool2D checks MaxPool2D (maxima and their flat positions within
// each plane; padding never wins; NaN wins) and MaxPool2DGrad.
func TestMaxPool2D(t *testing.T, dev device.Device) {
	k := dev.Kernels()
	rng := newRand(8)
	for _, tc := range poolCases() {
		for _, dt := range floatTypes {
			for _, neg := range []bool{false, true} {
				name := tc.name + "/" + dt.String()
				if neg {
					name += "/negative" // all inputs negative: padding (0) must not win
				}
				t.Run(name, func(t *testing.T) {
					p := tc.p
					oh, ow := p.OutH(), p.OutW()
					nx, ny := p.N*p.C*p.H*p.W, p.N*p.C*oh*ow
					lo, hi := -1.0, 1.0
					if neg {
						lo, hi = -2, -1
					}
					xv := randFloats(rng, nx, lo, hi)
					dyv := randFloats(rng, ny, -1, 1)
					x, dy := Upload(t, dev, dt, xv), Upload(t, dev, dt, dyv)
					wantY, wantArg := make([]float64, ny), make([]float64, ny)
					for i := range wantArg {
						wantArg[i] = -1
					}
					poolTaps(p, func(yi, xi int) {
						if wantArg[yi] < 0 || xv[xi] > wantY[yi] {
							wantY[yi], wantArg[yi] = xv[xi], float64(xi%(p.H*p.W))
						}
					})
					y, arg := Upload(t, dev, dt, sentinel(ny)), Upload(t, dev, device.Int64, sentinel(ny))
					k.MaxPool2D(p, y, arg, x)
					checkEqual(t, Download(t, dev, y), wantY, "MaxPool2D %+v", p)
					checkEqual(t, Download(t, dev, arg), wantArg, "MaxPool2D argmax %+v", p)

					wantDX, mag := make([]float64, nx), make([]float64, nx)
					for yi, a := range wantArg {
						xi := yi/(oh*ow)*p.H*p.W + int(a)
						wantDX[xi] += dyv[yi]
						mag[xi] += math.Abs(dyv[yi])
					}
					dx := Upload(t, dev, dt, sentinel(nx))
					k.MaxPool2DGrad(p, dx, dy, arg)
					checkClose(t, dt, Download(t, dev, dx), wantDX, mag, "MaxPool2DGrad %+v", p)
				})
			}
		}
	}
	for _, dt := range floatTypes {
		// Many ties (values from {-1, 0, 1}): the first maximum in row-major
		// window order wins.
		t.Run("ties/"+dt.String(), func(t *testing.T) {
			for _, p := range []device.PoolParams{
				{N: 2, C: 3, H: 11, W: 13, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
				{N: 1, C: 2, H: 9, W: 10, KH: 2, KW: 2, StrideH: 2, StrideW: 2},
				{N: 1, C: 2, H: 9, W: 10, KH: 4, KW: 3, StrideH: 1, StrideW: 2, PadH: 1, PadW: 1},
			} {
				nx, ny := p.N*p.C*p.H*p.W, p.N*p.C*p.OutH()*p.OutW()
				xv := make([]float64, nx)
				for i := range xv {
					xv[i] = float64(rng.IntN(3) - 1)
				}
				wantY, wantArg := make([]float64, ny), make([]float64, ny)
				for i := range wantArg {
					wantArg[i] = -1
				}
				poolTaps(p, func(yi, xi int) {
					if wantArg[yi] < 0 || xv[xi] > wantY[yi] {
						wantY[yi], wantArg[yi] = xv[xi], float64(xi%(p.H*p.W))
					}
				})
				y, arg := Upload(t, dev, dt, sentinel(ny)), Upload(t, dev, device.Int64, sentinel(ny))
				k.MaxPool2D(p, y, arg, Upload(t, dev, dt, xv))
				checkEqual(t, Download(t, dev, y), wantY, "MaxPool2D with ties %+v", p)
				checkEqual(t, Download(t, dev, arg), wantArg, "MaxPool2D argmax with ties %+v", p)
			}
		})
		t.Run("NaN/"+dt.String(), func(t *testing.T) {
			p := device.PoolParams{N: 1, C: 1, H: 2, W: 4, KH: 2, KW: 2, StrideH: 2, StrideW: 2}
			nan := math.NaN()
			x := Upload(t, dev, dt, []float64{1, nan, 5, 6, 7, 2, 8, nan})
			y, arg := Upload(t, dev, dt, sentinel(2)), Upload(t, dev, device.Int64, sentinel(2))
			k.MaxPool2D(p, y, arg, x)
			got, gotArg := Download(t, dev, y), Download(t, dev, arg)
			checkEqual(t, got, []float64{nan, nan}, "MaxPool2D with NaN")
			checkEqual(t, gotArg, []float64{1, 7}, "MaxPool2D argmax with NaN")
		})
	}
}

// TestAvgPool2D checks AvgPool2D and AvgPool2DGrad with CountPad on and
// off, against direct loops and the adjoint identity.
func TestAvgPool2D(t *testing.T, dev device.Device) {
	k := dev.Kernels()
	rng := newRand(9)
	for _, tc := range poolCases() {
		for _, countPad := range []bool{false, true} {
			for _, dt := range floatTypes {
				name := tc.name + "/" + dt.String() + "/CountPad=false"
				if countPad {
					name = tc.name + "/" + dt.String() + "/CountPad=true"
				}
				t.Run(name, func(t *testing.T) {
					p := tc.p
					p.CountPad = countPad
					oh, ow := p.OutH(), p.OutW()
					nx, ny := p.N*p.C*p.H*p.W, p.N*p.C*oh*ow
					xv, dyv := randFloats(rng, nx, -1, 1), randFloats(rng, ny, -1, 1)
					x, dy := Upload(t, dev, dt, xv), Upload(t, dev, dt, dyv)
					count := make([]float64, ny)
					poolTaps(p, func(yi, xi int) { count[yi]++ })
					div := func(yi int) float64 {
						if p.CountPad {
							return float64(p.KH * p.KW)
						}
						return count[yi]
					}
					wantY, magY := make([]float64, ny), make([]float64, ny)
					wantDX, magDX := make([]float64, nx), make([]float64, nx)
					poolTaps(p, func(yi, xi int) {
						wantY[yi] += xv[xi] / div(yi)
						magY[yi] += math.Abs(xv[xi] / div(yi))
						wantDX[xi] += dyv[yi] / div(yi)
						magDX[xi] += math.Abs(dyv[yi] / div(yi))
					})
					y := Upload(t, dev, dt, sentinel(ny))
					k.AvgPool2D(p, y, x)
					gotY := Download(t, dev, y)
					checkClose(t, dt, gotY, wantY, magY, "AvgPool2D %+v", p)
					dx := Upload(t, dev, dt, sentinel(nx))
					k.AvgPool2DGrad(p, dx, dy)
					gotDX := Download(t, dev, dx)
					checkClose(t, dt, gotDX, wantDX, magDX, "AvgPool2DGrad %+v", p)

					lhs, m1 := dot(gotY, dyv)
					rhs, m2 := dot(xv, gotDX)
					if tol := 10 * relTol(dt) * math.Max(m1, m2); math.Abs(lhs-rhs) > tol {
						t.Errorf("adjoint identity fails: <avg(x),dy> = %.12g, <x,grad(dy)> = %.12g", lhs, rhs)
					}
				})
			}
		}
	}
}
