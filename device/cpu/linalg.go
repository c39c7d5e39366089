package cpu

import (
	"fmt"

	"github.com/hora-dl/hora/device"
)

// MatMul computes a batched matrix product with the device's GEMM backend
// (see Device.Backend).
func (k kernels) MatMul(p device.MatMulParams, c, a, b device.Buffer) {
	switch buf(c).dt {
	case device.Float32:
		matmul(k.d, p, buf(c).f32, buf(a).f32, buf(b).f32)
	case device.Float64:
		matmul(k.d, p, buf(c).f64, buf(a).f64, buf(b).f64)
	default:
		panic(fmt.Sprintf("cpu: matmul on %v", buf(c).dt))
	}
}

func matmul[T float](dev *Device, p device.MatMulParams, c, a, b []T) {
	lda, ldb := p.K, p.N
	if p.TransA {
		lda = p.M
	}
	if p.TransB {
		ldb = p.K
	}
	if p.Batch == 1 {
		parallelGemm(dev, p.TransA, p.TransB, p.M, p.N, p.K, T(p.Alpha),
			a[p.AOff:], lda, b[p.BOff:], ldb, T(p.Beta), c[p.COff:], p.N)
		return
	}
	dev.parallelFor(p.Batch, p.M*p.N*p.K, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gemmOn(dev, p.TransA, p.TransB, p.M, p.N, p.K, T(p.Alpha),
				a[p.AOff+i*p.AStride:], lda, b[p.BOff+i*p.BStride:], ldb,
				T(p.Beta), c[p.COff+i*p.CStride:], p.N)
		}
	})
}


// convShape holds the derived sizes of one convolution.
type convShape struct {
	device.ConvParams
	oh, ow, l int // output height, width and plane size
	cg, ocg   int // input and output channels per group
	ckk       int // rows of one group's column matrix: cg*KH*KW
	inPlane   int // H*W
	imgIn     int // C*H*W
	imgOut    int // OutC*OH*OW
	wGroup    int // weight elements per group: ocg*ckk
}

func newConvShape(p device.ConvParams) convShape {
	s := convShape{ConvParams: p, oh: p.OutH(), ow: p.OutW()}
	s.l = s.oh * s.ow
	s.cg, s.ocg = p.C/p.Groups, p.OutC/p.Groups
	s.ckk = s.cg * p.KH * p.KW
	s.inPlane = p.H * p.W
	s.imgIn = p.C * s.inPlane
	s.imgOut = p.OutC * s.l
	s.wGroup = s.ocg * s.ckk
	return s
}

// im2col unfolds group g of one image x (C×H×W) into col (ckk × l).
func im2col[T float](s convShape, col, x []T, g int) {
	row := 0
	for c := 0; c < s.cg; c++ {
		plane := x[(g*s.cg+c)*s.inPlane:]
		for kh := 0; kh < s.KH; kh++ {
			for kw := 0; kw < s.KW; kw++ {
				dst := col[row*s.l : (row+1)*s.l]
				row++
				for oh := 0; oh < s.oh; oh++ {
					ih := oh*s.StrideH - s.PadH + kh*s.DilH
					out := dst[oh*s.ow : (oh+1)*s.ow]
					if ih < 0 || ih >= s.H {
						clear(out)
						continue
					}
					src := plane[ih*s.W:]
					for ow := range out {
						iw := ow*s.StrideW - s.PadW + kw*s.DilW
						if iw < 0 || iw >= s.W {
							out[ow] = 0
						} else {
							out[ow] = src[iw]
						}
					}
				}
			}
		}
	}
}

// col2im adds col (ckk × l) back into group g of the image dx.
func col2im[T float](s convShape, dx, col []T, g int) {
	row := 0
	for c := 0; c < s.cg; c++ {
		plane := dx[(g*s.cg+c)*s.inPlane:]
		for kh := 0; kh < s.KH; kh++ {
			for kw := 0; kw < s.KW; kw++ {
				src := col[row*s.l : (row+1)*s.l]
				row++
				for oh := 0; oh < s.oh; oh++ {
					ih := oh*s.StrideH - s.PadH + kh*s.DilH
					if ih < 0 || ih >= s.H {
						continue
					}
					dst := plane[ih*s.W:]
					for ow, v := range src[oh*s.ow : (oh+1)*s.ow] {
						iw := ow*s.StrideW - s.PadW + kw*s.DilW
						if iw >= 0 && iw < s.W {
							dst[iw] += v
						}
					}
				}
			}
		}
	}
}

// Conv2D: per image and group, y_g = W_g × im2col(x_g).
func (k kernels) Conv2D(p device.ConvParams, y, x, w device.Buffer) {
	switch buf(y).dt {
	case device.Float32:
		conv2d(k.d, newConvShape(p), buf(y).f32, buf(x).f32, buf(w).f32)
	case device.Float64:
		conv2d(k.d, newConvShape(p), buf(y).f64, buf(x).f64, buf(w).f64)
	}
}

func conv2d[T float](dev *Device, s convShape, y, x, w []T) {
	dev.parallelFor(s.N, s.imgOut*s.ckk, func(lo, hi int) {
		sc := getScratch[T](s.ckk * s.l)
		defer putScratch(sc)
		col := sc.s
		for n := lo; n < hi; n++ {
			for g := 0; g < s.Groups; g++ {
				im2col(s, col, x[n*s.imgIn:], g)
				gemmOn(dev, false, false, s.ocg, s.l, s.ckk, 1, w[g*s.wGroup:], s.ckk,
					col, s.l, 0, y[n*s.imgOut+g*s.ocg*s.l:], s.l)
			}
		}
	})
}

// Conv2DGradInput: per image and group, dx_g = col2im(W_gᵀ × dy_g).
func (k kernels) Conv2DGradInput(p device.ConvParams, dx, dy, w device.Buffer) {
	switch buf(dx).dt {
	case device.Float32:
		conv2dGradInput(k.d, newConvShape(p), buf(dx).f32, buf(dy).f32, buf(w).f32)
	case device.Float64:
		conv2dGradInput(k.d, newConvShape(p), buf(dx).f64, buf(dy).f64, buf(w).f64)
	}
}

func conv2dGradInput[T float](dev *Device, s convShape, dx, dy, w []T) {
	dev.parallelFor(s.N, s.imgOut*s.ckk, func(lo, hi int) {
		sc := getScratch[T](s.ckk * s.l)
		defer putScratch(sc)
		col := sc.s
		for n := lo; n < hi; n++ {
			img := dx[n*s.imgIn : (n+1)*s.imgIn]
			clear(img)
			for g := 0; g < s.Groups; g++ {
				gemmOn(dev, true, false, s.ckk, s.l, s.ocg, 1, w[g*s.wGroup:], s.ckk,
					dy[n*s.imgOut+g*s.ocg*s.l:], s.l, 0, col, s.l)
				col2im(s, img, col, g)
			}
		}
	})
}

// Conv2DGradWeight: dW_g = Σ_n dy_g × im2col(x_g)ᵀ. The images are cut
// into at most gradWeightParts fixed chunks whose partial sums are added
// in chunk order, so the result does not depend on the number of workers
// or on their timing.
func (k kernels) Conv2DGradWeight(p device.ConvParams, dw, dy, x device.Buffer) {
	switch buf(dw).dt {
	case device.Float32:
		conv2dGradWeight(k.d, newConvShape(p), buf(dw).f32, buf(dy).f32, buf(x).f32)
	case device.Float64:
		conv2dGradWeight(k.d, newConvShape(p), buf(dw).f64, buf(dy).f64, buf(x).f64)
	}
}

// gradWeightParts bounds the number of partial weight gradients
// Conv2DGradWeight sums; it fixes the summation order independently of
// GOMAXPROCS.
const gradWeightParts = 16

func conv2dGradWeight[T float](dev *Device, s convShape, dw, dy, x []T) {
	size := s.Groups * s.wGroup
	out := dw[:size]
	clear(out)
	if s.N == 0 {
		return
	}
	chunk := (s.N + gradWeightParts - 1) / gradWeightParts
	nparts := (s.N + chunk - 1) / chunk
	// Partial sums of chunks 1.. live in one scratch buffer; chunk 0
	// accumulates in place.
	psc := getScratch[T]((nparts - 1) * size)
	defer putScratch(psc)
	clear(psc.s)
	dev.parallelFor(nparts, chunk*s.imgOut*s.ckk, func(lo, hi int) {
		sc := getScratch[T](s.ckk * s.l)
		defer putScratch(sc)
		col := sc.s
		for p := lo; p < hi; p++ {
			part := out
			if p > 0 {
				part = psc.s[(p-1)*size : p*size]
			}
			for n := p * chunk; n < min((p+1)*chunk, s.N); n++ {
				for g := 0; g < s.Groups; g++ {
					im2col(s, col, x[n*s.imgIn:], g)
					gemmOn(dev, false, true, s.ocg, s.ckk, s.l, 1, dy[n*s.imgOut+g*s.ocg*s.l:], s.l,
						col, s.l, 1, part[g*s.wGroup:], s.ckk)
				}
			}
		}
	})
	for p := 1; p < nparts; p++ {
		for i, v := range psc.s[(p-1)*size : p*size] {
			out[i] += v
		}
	}
}
