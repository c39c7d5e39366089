package cpu

import (
	"math"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/direct"
	"github.com/hora-dl/hora/device/cpu/internal/gemm"
	"github.com/hora-dl/hora/device/cpu/internal/vec"
)

// MatMul computes a batched matrix product with the device's GEMM backend
// (see Device.Backend).
func (k kernels) MatMul(p device.MatMulParams, c, a, b device.Buffer) {
	noHalf("MatMul", c, a, b)
	switch buf(c).dt {
	case device.Float32:
		if pb, ok := packedWeight(k.d, p, buf(b)); ok {
			matmulPackedB(k.d, p, buf(c).f32, buf(a).f32, pb)
			return
		}
		matmul(k.d, p, buf(c).f32, buf(a).f32, buf(b).f32)
	case device.Float64:
		matmul(k.d, p, buf(c).f64, buf(a).f64, buf(b).f64)
	default:
		panic(dtypeMsg("MatMul", buf(c).dt))
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

// gradInputShape is the convolution that computes s's input gradient: from
// OutC channels of oh×ow to C channels of H×W, unit stride, the padding
// that brings the output back to H×W. It is only meaningful when s has unit
// stride and that padding is not negative (gradInputIsConv says).
func (s convShape) gradInputShape() convShape {
	p := s.ConvParams
	p.C, p.OutC = s.OutC, s.C
	p.H, p.W = s.oh, s.ow
	p.PadH, p.PadW = s.DilH*(s.KH-1)-s.PadH, s.DilW*(s.KW-1)-s.PadW
	return newConvShape(p)
}

// gradInputIsConv reports whether s's input gradient is the convolution
// gradInputShape: unit stride and a padding of at most dil·(k-1).
func (s convShape) gradInputIsConv() bool {
	return s.StrideH == 1 && s.StrideW == 1 && s.DilH*(s.KH-1) >= s.PadH && s.DilW*(s.KW-1) >= s.PadW
}

// validCols returns the output columns [lo, hi) whose input column
// ow*StrideW - PadW + kw*DilW lies inside the image.
func validCols(s convShape, kw int) (lo, hi int) {
	shift := kw*s.DilW - s.PadW
	// iw = ow*StrideW + shift must be in [0, W).
	lo = 0
	if shift < 0 {
		lo = (-shift + s.StrideW - 1) / s.StrideW
	}
	hi = 0
	if s.W-shift > 0 {
		hi = (s.W - shift + s.StrideW - 1) / s.StrideW
	}
	return min(lo, s.ow), max(min(hi, s.ow), min(lo, s.ow))
}

// im2col unfolds group g of one image x (C×H×W) into col (ckk × l, rows
// ld elements apart).
func im2col[T float](s convShape, col []T, ld int, x []T, g int) {
	if s.sameSize() {
		if c32, ok := any(col).([]float32); ok && direct.FastBlocks() && s.cg > 0 {
			// One masked vector copy per tap and 16 positions (8 in AVX2).
			x32 := any(x).([]float32)[g*s.cg*s.inPlane:][:s.cg*s.inPlane]
			samePlanFor(s).Im2col(c32[:(s.cg*s.KH*s.KW-1)*ld+s.l], ld, x32, s.inPlane, s.cg)
			return
		}
		im2colShift(s, col, ld, x, g)
		return
	}
	if c32, ok := any(col).([]float32); ok && s.subsample() {
		im2colSubsample(s, c32, ld, any(x).([]float32), g)
		return
	}
	if c32, ok := any(col).([]float32); ok && s.columnSplit() {
		im2colStride2(s, c32, ld, any(x).([]float32), g)
		return
	}
	row := 0
	for c := 0; c < s.cg; c++ {
		plane := x[(g*s.cg+c)*s.inPlane:]
		for kh := 0; kh < s.KH; kh++ {
			for kw := 0; kw < s.KW; kw++ {
				dst := col[row*ld : row*ld+s.l]
				row++
				lo, hi := validCols(s, kw)
				shift := kw*s.DilW - s.PadW
				for oh := 0; oh < s.oh; oh++ {
					ih := oh*s.StrideH - s.PadH + kh*s.DilH
					out := dst[oh*s.ow : (oh+1)*s.ow]
					if ih < 0 || ih >= s.H {
						clear(out)
						continue
					}
					clear(out[:lo])
					switch {
					case lo >= hi:
					case s.StrideW == 1: // one copied run of the input row
						copy(out[lo:hi], plane[ih*s.W+lo+shift:ih*s.W+hi+shift])
					default:
						// Input columns lo·StrideW+shift, … (hi-1)·StrideW+shift.
						src := plane[ih*s.W+lo*s.StrideW+shift : ih*s.W+(hi-1)*s.StrideW+shift+1]
						in := out[lo:hi]
						for i := range in {
							in[i] = src[i*s.StrideW]
						}
					}
					clear(out[hi:])
				}
			}
		}
	}
}

// im2colStride2 is im2col for float32 with a horizontal stride of 2 and
// no horizontal dilation (ResNet's downsampling layers): each input plane
// is split into its even and odd columns (direct.SplitColumns), where a
// row of a kernel column's inputs, every other input column, is a
// contiguous run; then each row of the column matrix is one strided copy
// of those runs (direct.CopyRows), and zeros where the window leaves the
// image. The element loop it replaces read one value at a time. Only the
// input rows [r0, r1) that some output row reads are split: a band of
// conv2dSplit reads a fraction of the plane (resnet18's 64→128 stride-2
// layer at batch 1, in four bands, split every plane four times: 0.36–0.37
// → 0.33–0.35 ms).
func im2colStride2(s convShape, col []float32, ld int, x []float32, g int) {
	r0 := max(0, -s.PadH)
	r1 := min(s.H, (s.oh-1)*s.StrideH-s.PadH+(s.KH-1)*s.DilH+1)
	rows := max(0, r1-r0)
	sc, even, odd := columnPlanes(s, rows)
	defer putScratch(sc)
	we, wo := (s.W+1)/2, s.W/2
	row := 0
	for c := range s.cg {
		plane := x[(g*s.cg+c)*s.inPlane:][:s.inPlane]
		if rows > 0 {
			direct.SplitColumns(even, we, odd, wo, plane[r0*s.W:], s.W, rows, s.W)
		}
		for kh := range s.KH {
			oh0, oh1 := validRows(s, kh)
			for kw := range s.KW {
				dst := col[row*ld:][:s.l]
				row++
				lo, hi := validCols(s, kw)
				clear(dst[:oh0*s.ow])
				clear(dst[oh1*s.ow:])
				if lo >= hi {
					clear(dst[oh0*s.ow : oh1*s.ow])
					continue
				}
				phase, width, at := columnPhase(s, kw, even, odd)
				if oh1 > oh0 {
					ih0 := oh0*s.StrideH - s.PadH + kh*s.DilH - r0 // in the split rows
					direct.CopyRows(dst[oh0*s.ow+lo:], s.ow, phase[ih0*width+lo+at:], s.StrideH*width, oh1-oh0, hi-lo)
				}
				for oh := oh0; oh < oh1 && (lo > 0 || hi < s.ow); oh++ {
					clear(dst[oh*s.ow : oh*s.ow+lo])
					clear(dst[oh*s.ow+hi : (oh+1)*s.ow])
				}
			}
		}
	}
}

// subsample reports whether s is a 1×1 convolution of stride 2 without
// padding (ResNet's downsampling shortcuts): its column matrix is the even
// columns of the even rows of each input plane.
func (s convShape) subsample() bool {
	return s.KH == 1 && s.KW == 1 && s.StrideH == 2 && s.StrideW == 2 && s.PadH == 0 && s.PadW == 0 && s.cg > 0
}

// im2colSubsample is im2col for float32 where s.subsample(): one
// direct.SplitColumns call per channel over the even rows only, the even
// columns going straight to the channel's row of col (the odd ones to
// scratch). im2colStride2 split every row of the plane first: resnet18's
// downsampling layers at batch 32 read twice the input they use.
func im2colSubsample(s convShape, col []float32, ld int, x []float32, g int) {
	wo := s.W / 2
	sc := getScratch[float32](max(1, s.oh*wo))
	defer putScratch(sc)
	for c := range s.cg {
		plane := x[(g*s.cg+c)*s.inPlane:][:s.inPlane]
		direct.SplitColumns(col[c*ld:][:s.l], s.ow, sc.s, wo, plane, 2*s.W, s.oh, s.W)
	}
}

// columnPlanes returns a scratch buffer (for putScratch) holding rows
// rows of an input plane split into their even columns (rows of ⌈W/2⌉)
// and their odd ones (rows of ⌊W/2⌋), as direct.SplitColumns lays them
// out.
func columnPlanes(s convShape, rows int) (sc *scratch[float32], even, odd []float32) {
	we, wo := (s.W+1)/2, s.W/2
	sc = getScratch[float32](max(1, rows*(we+wo)))
	return sc, sc.s[:rows*we], sc.s[rows*we : rows*(we+wo)]
}

// validRows returns the output rows [oh0, oh1) whose input row
// oh·StrideH - PadH + kh·DilH lies inside the image.
func validRows(s convShape, kh int) (oh0, oh1 int) {
	oh0, oh1 = 0, s.oh
	for oh0 < s.oh && oh0*s.StrideH-s.PadH+kh*s.DilH < 0 {
		oh0++
	}
	for oh1 > oh0 && (oh1-1)*s.StrideH-s.PadH+kh*s.DilH >= s.H {
		oh1--
	}
	return oh0, oh1
}

// columnPhase returns where output column ow of kernel column kw reads
// its input column 2·ow + kw - PadW (horizontal stride 2, no dilation) in
// a plane split by direct.SplitColumns: column ow + at of phase (the even
// columns, or the odd ones), whose rows are width apart.
func columnPhase(s convShape, kw int, even, odd []float32) (phase []float32, width, at int) {
	shift := kw - s.PadW
	if shift&1 == 0 {
		return even, (s.W + 1) / 2, shift >> 1 // >> 1: ⌊shift/2⌋, also below 0
	}
	return odd, s.W / 2, (shift - 1) >> 1
}

// col2imPhases reports whether col2im takes col2imStride2: a horizontal
// stride of 2 without dilation, 3 or more kernel columns and output rows
// of 14 or more. On ResNet-20's first downsampling layer (3×3, 28×28 to
// 14×14) the input gradient ran 1.9× as fast; with 7-wide output rows
// (14×14 to 7×7) 0.9×, and 1×1 kernels, whose column matrix covers a
// quarter of the plane, 0.6–0.9×: the split planes' clear and merge cost
// more there than the element loop. Without AVX-512 (AddRows and
// MergeColumnsAdd in AVX2) 7-wide rows gain too: ResNet-20's 32→64 and
// ResNet-8's 48→96 stride-2 layers 1.13–1.16× as fast with AVX-512 hidden,
// 0.94–0.98× with it.
func (s convShape) col2imPhases() bool {
	return s.columnSplit() && s.KW >= 3 && (s.ow >= 14 || (!direct.Fast() && s.ow >= 7))
}

// columnSplit reports whether the convolution's planes can go through
// their even and odd columns (columnPlanes): a horizontal stride of 2
// without dilation, and channels in a group.
func (s convShape) columnSplit() bool {
	return s.StrideW == 2 && s.DilW == 1 && s.cg > 0
}

// col2imStride2 is col2im for float32 with a horizontal stride of 2 and no
// horizontal dilation, im2colStride2 backwards: each row of the column
// matrix is added to a plane's even or odd columns (direct.AddRows, one
// strided call per row), which are then interleaved and added to dx
// (direct.MergeColumnsAdd), where the element loop added one value at a
// time (two thirds of the input gradient of ResNet-20's first
// downsampling layer). col2imPhases says where it pays.
func col2imStride2(s convShape, dx, col []float32, ld int, g int) {
	sc, even, odd := columnPlanes(s, s.H)
	defer putScratch(sc)
	we, wo := (s.W+1)/2, s.W/2
	row := 0
	for c := range s.cg {
		clear(sc.s)
		for kh := range s.KH {
			oh0, oh1 := validRows(s, kh)
			for kw := range s.KW {
				src := col[row*ld:][:s.l]
				row++
				lo, hi := validCols(s, kw)
				if lo >= hi || oh0 >= oh1 {
					continue
				}
				phase, width, at := columnPhase(s, kw, even, odd)
				ih0 := oh0*s.StrideH - s.PadH + kh*s.DilH
				direct.AddRows(phase[ih0*width+lo+at:], s.StrideH*width, src[oh0*s.ow+lo:], s.ow, oh1-oh0, hi-lo)
			}
		}
		plane := dx[(g*s.cg+c)*s.inPlane:][:s.inPlane]
		direct.MergeColumnsAdd(plane, s.W, even, we, odd, wo, s.H, s.W)
	}
}

// sameSize reports whether the output plane has the input's size with
// unit strides and dilations ("same" padding: 3×3 with padding 1, …). Then
// row (c, kh, kw) of the column matrix is the input plane read at a constant
// offset d = (kh-PadH)·W + kw-PadW, except where the window leaves the image:
// whole rows at the top or bottom, and |kw-PadW| columns at one side.
func (s convShape) sameSize() bool {
	return s.StrideH == 1 && s.StrideW == 1 && s.DilH == 1 && s.DilW == 1 && s.oh == s.H && s.ow == s.W
}

// shiftRange returns, for kernel offset (kh, kw) of a same-size
// convolution, the offset d and the range [lo, hi) of output positions
// whose input row is inside the image.
func (s convShape) shiftRange(kh, kw int) (d, lo, hi int) {
	dh, dw := kh-s.PadH, kw-s.PadW
	lo, hi = max(0, -dh)*s.W, min(s.H, s.H-dh)*s.W
	return dh*s.W + dw, lo, max(lo, hi)
}

// edgeCols returns the output columns [c0, c1) of each row whose input
// column falls outside the image for horizontal shift dw.
func (s convShape) edgeCols(dw int) (c0, c1 int) {
	if dw > 0 {
		return s.W - dw, s.W
	}
	return 0, -dw
}

// im2colShift is im2col for same-size convolutions: one copy per row of
// the column matrix, then the image's edges are zeroed.
func im2colShift[T float](s convShape, col []T, ld int, x []T, g int) {
	row := 0
	for c := 0; c < s.cg; c++ {
		plane := x[(g*s.cg+c)*s.inPlane : (g*s.cg+c+1)*s.inPlane]
		for kh := 0; kh < s.KH; kh++ {
			for kw := 0; kw < s.KW; kw++ {
				dst := col[row*ld : row*ld+s.l]
				row++
				d, lo, hi := s.shiftRange(kh, kw)
				// The first and last rows may read one element beyond the
				// plane's ends; those are edge columns, zeroed below.
				a, b := lo+d, hi+d
				ca, cb := max(a, 0), min(b, s.inPlane)
				if ca >= cb { // an image smaller than the kernel: nothing to copy
					clear(dst)
					continue
				}
				zeroShort(dst[:lo+ca-a])
				copy(dst[lo+ca-a:hi-(b-cb)], plane[ca:cb])
				zeroShort(dst[hi-(b-cb):])
				if dw := kw - s.PadW; dw != 0 {
					c0, c1 := s.edgeCols(dw)
					for r := lo; r < hi; r += s.W {
						zeroShort(dst[r+c0 : r+c1])
					}
				}
			}
		}
	}
}

// zeroShort zeroes v: the few values of an image's edge in a loop, which
// costs less than a call to clear's memclr (ResNet-20's 7×7 planes: a
// column-matrix row has 7 edge values and a run of padding).
func zeroShort[T float](v []T) {
	if len(v) > 16 {
		clear(v)
		return
	}
	for i := 0; i < len(v); i++ {
		v[i] = 0
	}
}

// col2imShift is col2im for same-size convolutions: the edge columns of
// each column-matrix row are dropped (zeroed in col), then the row is
// added to the input plane at its offset in one pass.
func col2imShift[T float](s convShape, dx, col []T, ld int, g int) {
	row := 0
	for c := 0; c < s.cg; c++ {
		plane := dx[(g*s.cg+c)*s.inPlane : (g*s.cg+c+1)*s.inPlane]
		for kh := 0; kh < s.KH; kh++ {
			for kw := 0; kw < s.KW; kw++ {
				src := col[row*ld : row*ld+s.l]
				row++
				d, lo, hi := s.shiftRange(kh, kw)
				if dw := kw - s.PadW; dw != 0 {
					c0, c1 := s.edgeCols(dw)
					for r := lo; r < hi; r += s.W {
						clear(src[r+c0 : r+c1])
					}
				}
				a, b := max(lo+d, 0), min(hi+d, s.inPlane)
				if a < b {
					addTo(plane[a:b], src[a-d:b-d])
				}
			}
		}
	}
}

// col2im adds col (ckk × l, rows ld elements apart) back into group g of
// the image dx.
func col2im[T float](s convShape, dx, col []T, ld int, g int) {
	if s.sameSize() {
		if c32, ok := any(col).([]float32); ok && direct.HaveCol2im() && s.cg > 0 {
			// Each input's taps gathered in registers, 8 inputs at a time.
			dx32 := any(dx).([]float32)[g*s.cg*s.inPlane:][:s.cg*s.inPlane]
			samePlanFor(s).Col2im(dx32, s.inPlane, c32[:(s.cg*s.KH*s.KW-1)*ld+s.l], ld, s.cg)
			return
		}
		col2imShift(s, dx, col, ld, g)
		return
	}
	if c32, ok := any(col).([]float32); ok && s.col2imPhases() {
		col2imStride2(s, any(dx).([]float32), c32, ld, g)
		return
	}
	row := 0
	for c := 0; c < s.cg; c++ {
		plane := dx[(g*s.cg+c)*s.inPlane:]
		for kh := 0; kh < s.KH; kh++ {
			for kw := 0; kw < s.KW; kw++ {
				src := col[row*ld : row*ld+s.l]
				row++
				lo, hi := validCols(s, kw)
				shift := kw*s.DilW - s.PadW
				for oh := 0; oh < s.oh; oh++ {
					ih := oh*s.StrideH - s.PadH + kh*s.DilH
					if ih < 0 || ih >= s.H || lo >= hi {
						continue
					}
					in := src[oh*s.ow+lo : oh*s.ow+hi]
					if s.StrideW == 1 { // one run of the input row
						addTo(plane[ih*s.W+lo+shift:ih*s.W+hi+shift], in)
						continue
					}
					dst := plane[ih*s.W+lo*s.StrideW+shift:]
					for i, v := range in {
						dst[i*s.StrideW] += v
					}
				}
			}
		}
	}
}

// addTo adds src to dst elementwise.
func addTo[T float](dst, src []T) {
	if d32, ok := any(dst).([]float32); ok {
		vec.Add(d32, d32, any(src).([]float32))
		return
	}
	for i, v := range src {
		dst[i] += v
	}
}

// Conv2D: per image and group, y_g = W_g × im2col(x_g).
func (k kernels) Conv2D(p device.ConvParams, y, x, w device.Buffer) {
	noHalf("Conv2D", y, x, w)
	switch buf(y).dt {
	case device.Float32:
		conv2dBiasAct(k.d, newConvShape(p), device.ActNone, buf(y).f32, buf(x).f32, buf(w).f32, nil, nil, buf(w))
	case device.Float64:
		conv2dBiasAct(k.d, newConvShape(p), device.ActNone, buf(y).f64, buf(x).f64, buf(w).f64, nil, nil, buf(w))
	default:
		panic(dtypeMsg("Conv2D", buf(y).dt))
	}
}

// conv2dIm2col computes y = act(conv(x, w) + bias + res) (bias and res may
// be nil) through a GEMM per group of images and channels, with the bias,
// residual and activation applied to each block of the GEMM's output as
// it is written.
// A batch with more GEMMs than workers runs them in parallel; a smaller
// one (a single image) splits each image's GEMM across the workers (see
// conv2dSplit).
func conv2dIm2col[T float](dev *Device, s convShape, act device.Activation, y, x, w, bias, res []T, wb *Buffer) {
	// One image per GEMM writes y directly, the bias and activation
	// applied to each tile, where a GEMM of several images writes a
	// scratch matrix that is then copied to y; a 1×1 convolution also
	// reads the image in place as its column matrix. One image per GEMM
	// ran 1.05–2.25× as fast on 10 of 11 of MobileNetV2's and the zoo
	// MobileNet's 1×1 layers (2 threads, 7×7 to 112×112 planes; 0.94× on
	// the eleventh, 576 → 160 channels on 7×7), and, on planes of 128
	// positions or more, 1.5–1.7× on resnet18's 1×1 stride-2 layers at
	// batch 32 and 1.2–2.2× on a 3×3 layer of 1 → 32 channels on 28×28 at
	// batch 128 (2 Zen 5 threads). Smaller planes batch images to fill the
	// GEMM's columns.
	gi := 1
	if !s.pointwise() && s.l > 0 && s.l < 128 {
		if gi = s.imagesPerGEMM(); gi*s.l < 128 {
			gi = smallPlaneImages(s.N, s.l, gemm.Blocking().NR, dev.numWorkers())
		}
	}
	tasks := (s.N + gi - 1) / gi
	split := tasks < dev.numWorkers() && !dev.serial(2, s.imgOut*s.ckk)
	var panels []float32 // for the paths of one image per GEMM
	if gi == 1 || split {
		var held heldForm
		panels, held = weightPanels(dev, s, w, wb)
		defer held.release()
	}
	if split {
		conv2dSplit(dev, s, act, y, x, w, bias, res, panels)
		return
	}
	launch(dev, tasks, gi*s.imgOut*s.ckk, convArgs[T]{dev: dev, s: s, a: y, b: x, c: w, gi: gi, act: act, bias: bias, res: res, panels: panels})
}

// smallPlaneImages is the number of images per GEMM of a batch of n
// images whose output planes have fewer than 128 positions (l), its GEMMs
// split over workers: at least 128 columns, past the cache budget of
// imagesPerGEMM, since a 49-column product leaves a third of the GEMM's
// last strip of nr columns empty (resnet18's 512-channel 7×7 layers, one
// image, ran 7–13% faster with 2 to 4 images per GEMM). Of the first four
// counts from there, it takes the one whose busiest worker has the fewest
// images (Device.parallel hands each worker a contiguous run of GEMMs, and
// a short last GEMM leaves one worker waiting for the other), then the one
// that leaves the fewest columns of that worker's strips empty. resnet18's
// 3×3 layers of 512 channels on 7×7 planes, batch 32, 2 Zen 5 threads:
// 4 images per GEMM (8 GEMMs, 16 images each worker) 16.6–16.9 ms, 5
// (7 GEMMs: 15 and 17 images) 17.8–17.9 ms, 6 (18 and 14) 18.9–19.0 ms.
func smallPlaneImages(n, l, nr, workers int) int {
	least := min(16, (128+l-1)/l)
	best, bestImages, bestStrips := least, math.MaxInt, math.MaxInt
	for gi := least; gi <= min(16, least+3); gi++ {
		images, strips := busiestWorker(n, gi, l, nr, workers)
		if images < bestImages || (images == bestImages && strips*nr-images*l < bestStrips*nr-bestImages*l) {
			best, bestImages, bestStrips = gi, images, strips
		}
	}
	return best
}

// busiestWorker returns the images and the strips of nr columns that the
// busiest of workers multiplies when the GEMMs of n images, gi images of l
// positions each, are split as Device.parallel splits its tasks.
func busiestWorker(n, gi, l, nr, workers int) (images, strips int) {
	tasks := (n + gi - 1) / gi
	w := max(1, min(workers, tasks))
	for i := range w {
		im, st := 0, 0
		for t := tasks * i / w; t < tasks*(i+1)/w; t++ {
			k := min(gi, n-t*gi)
			im += k
			st += (k*l + nr - 1) / nr
		}
		if im > images || (im == images && st > strips) {
			images, strips = im, st
		}
	}
	return images, strips
}

// The CPU device implements the optional fused convolution.
var _ device.ConvBiasActKernels = kernels{}

// Conv2DBiasAct computes y = act(conv(x, w) + bias): a depthwise
// convolution applies the bias and activation to each output row as it is
// computed, other convolutions to each block of the GEMM's output.
func (k kernels) Conv2DBiasAct(p device.ConvParams, act device.Activation, y, x, w, bias device.Buffer) {
	k.conv2d("Conv2DBiasAct", p, act, y, x, w, bias, nil)
}

// The CPU device implements the optional convolution with a residual.
var _ device.ConvAddActKernels = kernels{}

// Conv2DBiasAddAct computes y = act(conv(x, w) + bias + res): Winograd and
// im2col convolutions add the residual to each block of their output as
// they write it (see conv2dBiasAct).
func (k kernels) Conv2DBiasAddAct(p device.ConvParams, act device.Activation, y, x, w, bias, res device.Buffer) {
	k.conv2d("Conv2DBiasAddAct", p, act, y, x, w, bias, res)
}

// conv2d runs conv2dBiasAct, the kernel op, on the buffers' element type;
// bias and res may be nil.
func (k kernels) conv2d(op string, p device.ConvParams, act device.Activation, y, x, w, bias, res device.Buffer) {
	noHalf(op, y, x, w, bias, res)
	s := newConvShape(p)
	switch buf(y).dt {
	case device.Float32:
		var b, r []float32
		if bias != nil {
			b = buf(bias).f32
		}
		if res != nil {
			r = buf(res).f32[:s.N*s.imgOut]
		}
		conv2dBiasAct(k.d, s, act, buf(y).f32, buf(x).f32, buf(w).f32, b, r, buf(w))
	case device.Float64:
		var b, r []float64
		if bias != nil {
			b = buf(bias).f64
		}
		if res != nil {
			r = buf(res).f64[:s.N*s.imgOut]
		}
		conv2dBiasAct(k.d, s, act, buf(y).f64, buf(x).f64, buf(w).f64, b, r, buf(w))
	default:
		panic(dtypeMsg(op, buf(y).dt))
	}
}

// residualBlocks is the least number of positions of an output plane for
// which the residual joins each block of the convolution's output: the
// blocks of smaller planes are short runs scattered over the planes (a
// row of 49 values per channel and image), whose residual comes from
// memory at its latency, where a pass of its own streams it. resnet18 at
// batch 32 on 2 Zen 5 threads: its 56×56 and 28×28 blocks' convolution
// and Add took 3–4% less time fused, its 14×14 and 7×7 ones 1–5% more.
var residualBlocks = 512 // a variable so that the tests can reach the blocks of small planes

// conv2dBiasAct computes y = act(conv(x, w) + bias + res), bias and the
// residual res (y's shape) optional, choosing the forward convolution's
// kernel: depthwise, Winograd (3×3, unit stride, 64 channels or more,
// float32, see useWinograd), the stem path (3×3, stride 2, at most 3
// input channels, see useStem), direct (fewer channels, float32, see
// useDirect) or im2col. Winograd and im2col add the residual to each
// block of their output as they write it, on planes of residualBlocks
// positions or more; otherwise, and after a depthwise or direct
// convolution, it takes a pass of its own. wb is the buffer holding w,
// whose derived forms the kernel may keep when it is constant (nil: none).
func conv2dBiasAct[T float](dev *Device, s convShape, act device.Activation, y, x, w, bias, res []T, wb *Buffer) {
	y32, f32 := any(y).([]float32)
	var wino *winogradAlgo
	if f32 && !s.depthwise() {
		wino = winogradTransform(s, wb.keepsForms())
	}
	winograd := wino != nil
	stem := f32 && !s.depthwise() && !winograd && useStem(s)
	direct := f32 && !s.depthwise() && !winograd && !stem && useDirect(s)
	vec := f32 && !s.depthwise() && !winograd && !stem && !direct && useVecDirect(s)
	positions := f32 && !s.depthwise() && !winograd && !stem && !direct && !vec && positionsMajor(dev, s, wb)
	if res != nil && (s.depthwise() || stem || direct || vec || (s.l < residualBlocks && !positions)) {
		conv2dBiasAct(dev, s, device.ActNone, y, x, w, bias, nil, wb)
		launch(dev, len(y), 1, addActArgs[T]{act, y, y, res})
		return
	}
	switch {
	case s.depthwise():
		conv2dDepthwise(dev, s, act, y, x, w, bias)
	case winograd:
		winogradForward(dev, s, wino, act, y32, any(x).([]float32), any(w).([]float32), any(bias).([]float32), any(res).([]float32), wb)
	case stem:
		conv2dStem(dev, s, act, y32, any(x).([]float32), any(w).([]float32), any(bias).([]float32), wb)
	case direct:
		conv2dDirect(dev, s, act, y32, any(x).([]float32), any(w).([]float32), any(bias).([]float32), wb)
	case vec:
		conv2dVec(dev, s, act, y32, any(x).([]float32), any(w).([]float32), any(bias).([]float32), wb)
	case positions:
		conv2dPositionsMajor(dev, s, pmLayout{}, act, y32, any(x).([]float32), any(bias).([]float32), any(res).([]float32), wb)
	default:
		conv2dIm2col(dev, s, act, y, x, w, bias, res, wb)
	}
}

// convArgs are the arguments of one convolution kernel call: a, b and c
// are its three tensors in the order of the kernel's signature; act, bias
// and the residual res (nil: none) are applied to the convolution's
// output.
type convArgs[T float] struct {
	dev       *Device
	s         convShape
	a, b, c   []T
	gi        int // images per GEMM
	act       device.Activation
	bias, res []T
	panels    []float32 // w in weightPanels' layout, or nil
}

// run computes the convolution of the groups of gi images [lo, hi). With
// one image per GEMM, the GEMM writes straight into y (group g of image n
// is the block of rows g·ocg… of y's OutC×l plane matrix), and a 1×1
// convolution with unit stride and no padding reads the image as its
// column matrix; several images per GEMM go through a scratch output,
// copied to y with the bias and activation.
func (args *convArgs[T]) run(lo, hi int) {
	dev, s, y, x, w, gi := args.dev, args.s, args.a, args.b, args.c, args.gi
	if gi == 1 {
		var sc *scratch[T]
		var col []T
		if !s.pointwise() {
			sc = getScratch[T](s.ckk * s.l)
			defer putScratch(sc)
			col = sc.s
		}
		for n := lo; n < hi; n++ {
			for g := 0; g < s.Groups; g++ {
				if s.pointwise() {
					col = x[n*s.imgIn+g*s.cg*s.inPlane:]
				} else {
					im2col(s, col, s.l, x[n*s.imgIn:], g)
				}
				at := n*s.imgOut + g*s.ocg*s.l
				convProduct(dev, args.act, args.bias, g*s.ocg, s.ocg, s.l, s.ckk, w[g*s.wGroup:], groupPanels(args.panels, s, g, 0), col, s.l, y[at:], s.l, offset(args.res, at))
			}
		}
		return
	}
	sc := getScratch[T](s.ckk*s.l*gi + s.ocg*s.l*gi)
	defer putScratch(sc)
	col, out := sc.s[:s.ckk*s.l*gi], sc.s[s.ckk*s.l*gi:]
	for grp := lo; grp < hi; grp++ {
		n0, n1 := grp*gi, min((grp+1)*gi, s.N)
		ld := (n1 - n0) * s.l
		for g := 0; g < s.Groups; g++ {
			convGroup(dev, s, col, out, x, w, n0, n1, g)
			for oc := 0; oc < s.ocg; oc++ {
				c := g*s.ocg + oc
				var b T
				if args.bias != nil {
					b = args.bias[c]
				}
				for n := n0; n < n1; n++ {
					at := n*s.imgOut + c*s.l
					dst, src := y[at:][:s.l], out[oc*ld+(n-n0)*s.l:][:s.l]
					switch {
					case args.res != nil:
						addActSlice(args.act, dst, withBias(dst, src, args.bias, b), args.res[at:][:s.l])
					case args.bias == nil && args.act == device.ActNone:
						copy(dst, src)
					default:
						biasActSlice(args.act, dst, src, b)
					}
				}
			}
		}
	}
}

// pointwise reports whether the convolution is 1×1 with unit stride and
// no padding: an image's C×H×W planes are then its column matrix.
func (s convShape) pointwise() bool {
	return s.KH == 1 && s.KW == 1 && s.StrideH == 1 && s.StrideW == 1 && s.PadH == 0 && s.PadW == 0
}

// convProduct computes out = act(w·col + bias + res) for m output
// channels (oc0…, rows ldo apart in out and in res, which may be nil) and
// n positions: the GEMM of the m×k filter matrix w with the k×n column
// matrix col (rows ldb apart), then the bias, residual and activation;
// with panels (w in weightPanels' layout; nil: none) the product reads
// the bands (panelProduct). Where Hora's kernel takes the product, it applies the bias and
// activation to each tile (small-product path) or block (packed path) of
// out as it writes it (gemm.SgemmEpilogue), rather than in a pass of their
// own over out, which by then has left the cache; the bits are the same.
// Alone, MobileNetV2's 1×1 layers at batch 1 ran up to 2× as fast (that
// pass had taken a third of their time).
func convProduct[T float](dev *Device, act device.Activation, bias []T, oc0, m, n, k int, w []T, panels []float32, col []T, ldb int, out []T, ldo int, res []T) {
	if panels != nil {
		panelProduct(act, any(bias).([]float32), oc0, m, n, k, panels, any(col).([]float32), ldb, any(out).([]float32), ldo, any(res).([]float32))
		return
	}
	if res != nil {
		convProduct(dev, device.ActNone, bias, oc0, m, n, k, w, nil, col, ldb, out, ldo, nil)
		residualRows(act, out, res, ldo, m, n)
		return
	}
	if b32, ok := any(bias).([]float32); ok && b32 != nil {
		lo, hi := clampOf(act)
		e := gemm.Epilogue{Bias: b32[oc0 : oc0+m], Lo: lo, Hi: hi}
		if sgemmEpilogueOn(dev, m, n, k, any(w).([]float32), k, any(col).([]float32), ldb, any(out).([]float32), ldo, e) {
			return
		}
	} else {
		gemmOn(dev, false, false, m, n, k, 1, w, k, col, ldb, 0, out, ldo)
	}
	convEpilogue(act, bias, out, ldo, m, oc0, 0, n)
}

// convEpilogue sets out = act(out + bias) on columns [c0, c1) of rows
// [0, rows) (rows ld apart), which are output channels oc0…; it does
// nothing without bias and activation.
func convEpilogue[T float](act device.Activation, bias, out []T, ld, rows, oc0, c0, c1 int) {
	if bias == nil && act == device.ActNone {
		return
	}
	for r := 0; r < rows; r++ {
		var b T
		if bias != nil {
			b = bias[oc0+r]
		}
		row := out[r*ld+c0 : r*ld+c1]
		biasActSlice(act, row, row, b)
	}
}

// convGroup computes group g of the convolution of images [n0, n1) into
// out (ocg × (n1-n0)·l, the images side by side), through their column
// matrices in col.
func convGroup[T float](dev *Device, s convShape, col, out, x, w []T, n0, n1, g int) {
	ld := (n1 - n0) * s.l
	for n := n0; n < n1; n++ {
		im2col(s, col[(n-n0)*s.l:], ld, x[n*s.imgIn:], g)
	}
	gemmOn(dev, false, false, s.ocg, ld, s.ckk, 1, w[g*s.wGroup:], s.ckk, col, ld, 0, out, ld)
}

// Conv2DBiasActMaxPool is the convolution, bias, activation and max
// pooling of a CNN block in one pass per group of images: each GEMM's
// output (or, on the direct path, each image's) stays in a worker's
// scratch buffer while it is pooled.
func (k kernels) Conv2DBiasActMaxPool(p device.ConvParams, q device.PoolParams, act device.Activation, y, argmax, x, w, bias device.Buffer) {
	noHalf("Conv2DBiasActMaxPool", y, argmax, x, w, bias)
	s := newConvShape(p)
	gi := s.imagesPerGEMM()
	n := (s.N + gi - 1) / gi
	switch buf(y).dt {
	case device.Float32:
		var b []float32
		if bias != nil {
			b = buf(bias).f32
		}
		if useDirect(s) {
			convPoolDirect(k.d, s, q, act, buf(y).f32, buf(argmax).i64, buf(x).f32, buf(w).f32, b, buf(w))
			return
		}
		launch(k.d, n, gi*s.imgOut*s.ckk, convPoolArgs[float32]{convArgs[float32]{k.d, s, buf(y).f32, buf(x).f32, buf(w).f32, gi, act, b, nil, nil}, q, buf(argmax).i64})
	case device.Float64:
		var b []float64
		if bias != nil {
			b = buf(bias).f64
		}
		launch(k.d, n, gi*s.imgOut*s.ckk, convPoolArgs[float64]{convArgs[float64]{k.d, s, buf(y).f64, buf(x).f64, buf(w).f64, gi, act, b, nil, nil}, q, buf(argmax).i64})
	default:
		panic(dtypeMsg("Conv2DBiasActMaxPool", buf(y).dt))
	}
}

// convPoolArgs are the arguments of Conv2DBiasActMaxPool; a is the pooled
// output.
type convPoolArgs[T float] struct {
	convArgs[T]
	q      device.PoolParams
	argmax []int64
}

func (args *convPoolArgs[T]) run(lo, hi int) {
	dev, s, y, x, w, gi, q := args.dev, args.s, args.a, args.b, args.c, args.gi, args.q
	sc := getScratch[T](s.ckk*s.l*gi + s.ocg*s.l*gi)
	defer putScratch(sc)
	col, out := sc.s[:s.ckk*s.l*gi], sc.s[s.ckk*s.l*gi:]
	pl := q.OutH() * q.OutW() // pooled plane
	for grp := lo; grp < hi; grp++ {
		n0, n1 := grp*gi, min((grp+1)*gi, s.N)
		ld := (n1 - n0) * s.l
		for g := 0; g < s.Groups; g++ {
			convGroup(dev, s, col, out, x, w, n0, n1, g)
			for oc := 0; oc < s.ocg; oc++ {
				c := g*s.ocg + oc
				var b T
				if args.bias != nil {
					b = args.bias[c]
				}
				row := out[oc*ld : (oc+1)*ld] // this channel of every image of the group
				biasActSlice(args.act, row, row, b)
				for n := n0; n < n1; n++ {
					at := (n*s.OutC + c) * pl
					maxPoolPlane(q, y[at:at+pl], args.argmax[at:at+pl], row[(n-n0)*s.l:(n-n0+1)*s.l])
				}
			}
		}
	}
}

// imagesPerGEMM is how many images' column matrices one GEMM call takes:
// side by side, they make the matrices wide enough for the GEMM to run
// near its peak (per-image products of small images are not), while the
// columns stay within about a megabyte of cache.
func (s convShape) imagesPerGEMM() int {
	return max(1, min(16, (256<<10)/max(1, s.ckk*s.l)))
}

// gatherOutGrad copies the output gradients of images [n0, n1), group g,
// side by side into dst (ocg × (n1-n0)·l), one strided copy of ocg rows
// per image (a copy per row took 5% of zoo MobileNet's training step,
// rows of 49 values).
func gatherOutGrad[T float](s convShape, dst, dy []T, n0, n1, g int) {
	ld := (n1 - n0) * s.l
	for n := n0; n < n1; n++ {
		copyRows(dst[(n-n0)*s.l:], ld, dy[n*s.imgOut+g*s.ocg*s.l:], s.l, s.ocg, s.l, false)
	}
}

// Conv2DGradInput: per image and group, dx_g = col2im(W_gᵀ × dy_g).
func (k kernels) Conv2DGradInput(p device.ConvParams, dx, dy, w device.Buffer) {
	noHalf("Conv2DGradInput", dx, dy, w)
	switch buf(dx).dt {
	case device.Float32:
		conv2dGradInput(k.d, newConvShape(p), buf(dx).f32, buf(dy).f32, buf(w).f32)
	case device.Float64:
		conv2dGradInput(k.d, newConvShape(p), buf(dx).f64, buf(dy).f64, buf(w).f64)
	default:
		panic(dtypeMsg("Conv2DGradInput", buf(dx).dt))
	}
}

// conv2dGradInput chooses the input gradient's kernel, as conv2dBiasAct
// does.
func conv2dGradInput[T float](dev *Device, s convShape, dx, dy, w []T) {
	if s.depthwise() {
		conv2dDepthwiseGradInput(dev, s, dx, dy, w)
		return
	}
	if dx32, ok := any(dx).([]float32); ok && s.gradInputIsConv() && useWinograd(s.gradInputShape(), false) {
		winogradGradInput(dev, s, winogradTransform(s.gradInputShape(), false), dx32, any(dy).([]float32), any(w).([]float32))
		return
	}
	if dx32, ok := any(dx).([]float32); ok && s.directGradInput() {
		conv2dDirectGradInput(dev, s, dx32, any(dy).([]float32), any(w).([]float32))
		return
	}
	if dx32, ok := any(dx).([]float32); ok && s.gradInputIsConv() && useVecDirect(s.gradInputShape()) {
		conv2dVecGradInput(dev, s, dx32, any(dy).([]float32), any(w).([]float32))
		return
	}
	conv2dGradInputIm2col(dev, s, dx, dy, w)
}

// conv2dGradInputIm2col computes Conv2DGradInput through a GEMM and col2im
// per group of images and channels.
func conv2dGradInputIm2col[T float](dev *Device, s convShape, dx, dy, w []T) {
	gi := s.imagesPerGEMM()
	launch(dev, (s.N+gi-1)/gi, gi*s.imgOut*s.ckk, convGradInputArgs[T]{convArgs[T]{dev: dev, s: s, a: dx, b: dy, c: w, gi: gi}})
}

// convGradInputArgs are the arguments of Conv2DGradInput (a: dx, b: dy,
// c: w).
type convGradInputArgs[T float] struct{ convArgs[T] }

func (args *convGradInputArgs[T]) run(lo, hi int) {
	dev, s, dx, dy, w, gi := args.dev, args.s, args.a, args.b, args.c, args.gi
	sc := getScratch[T](s.ckk*s.l*gi + s.ocg*s.l*gi)
	defer putScratch(sc)
	col, g2 := sc.s[:s.ckk*s.l*gi], sc.s[s.ckk*s.l*gi:]
	for grp := lo; grp < hi; grp++ {
		n0, n1 := grp*gi, min((grp+1)*gi, s.N)
		ld := (n1 - n0) * s.l
		clear(dx[n0*s.imgIn : n1*s.imgIn])
		for g := 0; g < s.Groups; g++ {
			gatherOutGrad(s, g2, dy, n0, n1, g)
			gemmOn(dev, true, false, s.ckk, ld, s.ocg, 1, w[g*s.wGroup:], s.ckk, g2, ld, 0, col, ld)
			for n := n0; n < n1; n++ {
				col2im(s, dx[n*s.imgIn:(n+1)*s.imgIn], col[(n-n0)*s.l:], ld, g)
			}
		}
	}
}

// Conv2DGradWeight: dW_g = Σ_n dy_g × im2col(x_g)ᵀ. The images are cut
// into at most gradWeightParts fixed chunks whose partial sums are added
// in chunk order, so the result does not depend on the number of workers
// or on their timing.
func (k kernels) Conv2DGradWeight(p device.ConvParams, dw, dy, x device.Buffer) {
	noHalf("Conv2DGradWeight", dw, dy, x)
	switch buf(dw).dt {
	case device.Float32:
		conv2dGradWeight(k.d, newConvShape(p), buf(dw).f32, buf(dy).f32, buf(x).f32)
	case device.Float64:
		conv2dGradWeight(k.d, newConvShape(p), buf(dw).f64, buf(dy).f64, buf(x).f64)
	default:
		panic(dtypeMsg("Conv2DGradWeight", buf(dw).dt))
	}
}

// gradWeightParts bounds the number of partial weight gradients
// Conv2DGradWeight sums; it fixes the summation order independently of
// GOMAXPROCS.
const gradWeightParts = 16

func conv2dGradWeight[T float](dev *Device, s convShape, dw, dy, x []T) {
	if s.depthwise() && s.N > 0 {
		conv2dDepthwiseGradWeight(dev, s, dw, dy, x)
		return
	}
	if dw32, ok := any(dw).([]float32); ok && s.directGradWeight() {
		conv2dDirectGradWeight(dev, s, dw32, any(dy).([]float32), any(x).([]float32))
		return
	}
	if dw32, ok := any(dw).([]float32); ok && useVecGradWeight(s) {
		conv2dVecGradWeight(dev, s, dw32, any(dy).([]float32), any(x).([]float32))
		return
	}
	conv2dGradWeightIm2col(dev, s, dw, dy, x)
}

// conv2dGradWeightIm2col computes Conv2DGradWeight through im2col and a
// GEMM per chunk of images and group.
func conv2dGradWeightIm2col[T float](dev *Device, s convShape, dw, dy, x []T) {
	size := s.Groups * s.wGroup
	out := dw[:size]
	clear(out)
	if s.N == 0 {
		return
	}
	chunk, nparts := gradWeightChunks(s.N)
	gi := min(s.imagesPerGEMM(), chunk)
	// Partial sums of chunks 1.. live in one scratch buffer, each written
	// whole by its chunk; chunk 0 writes out.
	psc := getScratch[T]((nparts - 1) * size)
	defer putScratch(psc)
	launch(dev, nparts, chunk*s.imgOut*s.ckk, gradWeightArgs[T]{convArgs[T]{dev: dev, s: s, a: out, b: dy, c: x, gi: gi}, psc.s, chunk})
	addPartsInOrder(dev, out, psc.s, nparts-1)
}

// addPartsInOrder adds the parts partial sums held one after the other in
// partials (each len(out) long) to out, in their order, each element
// summed alone: the result does not depend on how the elements are split
// between the workers. ResNet-20's weight gradients at batch 128 spent
// 1% of the training step in this loop on the calling goroutine alone,
// one element at a time.
func addPartsInOrder[T float](dev *Device, out, partials []T, parts int) {
	if parts > 0 {
		launch(dev, len(out), parts, addPartsArgs[T]{out: out, partials: partials, parts: parts})
	}
}

// addPartsArgs are the arguments of addPartsInOrder: task index i is
// element i of out.
type addPartsArgs[T float] struct {
	out, partials []T
	parts         int
}

func (a *addPartsArgs[T]) run(lo, hi int) {
	size := len(a.out)
	for p := range a.parts {
		addTo(a.out[lo:hi], a.partials[p*size+lo:p*size+hi])
	}
}

type gradWeightArgs[T float] struct {
	convArgs[T]
	partials []T // partial sums of chunks 1, 2, …
	chunk    int // images per chunk
}

// run sums each chunk's weight gradient transposed, dWᵀ = col·dyᵀ (the
// column matrix's C·KH·KW rows as the GEMM's rows, the output channels as
// its columns), then writes it into the chunk's partial sum, which starts
// at zero, so the sums are those of dW = dy·colᵀ, bit for bit. The GEMM's
// rows then fill its tiles where few output channels would leave them
// part empty, and the transposed B it copies is dy's few rows rather than
// the column matrix: ResNet-20's layers (BenchmarkDirect, 2 Zen 5 threads)
// ran 1.17–1.38× as fast with AVX-512 (16 to 32 channels; 1.06× at 64,
// 0.96–1.02× at 24 and 48), 1.03–1.14× with AVX2.
func (args *gradWeightArgs[T]) run(lo, hi int) {
	dev, s, out, dy, x, gi := args.dev, args.s, args.a, args.b, args.c, args.gi
	size, chunk := s.Groups*s.wGroup, args.chunk
	sc := getScratch[T](s.ckk*s.l*gi + s.ocg*s.l*gi + size)
	defer putScratch(sc)
	col, g2, dwt := sc.s[:s.ckk*s.l*gi], sc.s[s.ckk*s.l*gi:][:s.ocg*s.l*gi], sc.s[s.ckk*s.l*gi+s.ocg*s.l*gi:][:size]
	for p := lo; p < hi; p++ {
		part := out
		if p > 0 {
			part = args.partials[(p-1)*size : p*size]
		}
		clear(dwt)
		for n0 := p * chunk; n0 < min((p+1)*chunk, s.N); n0 += gi {
			n1 := min(n0+gi, (p+1)*chunk, s.N)
			ld := (n1 - n0) * s.l
			for g := 0; g < s.Groups; g++ {
				for n := n0; n < n1; n++ {
					im2col(s, col[(n-n0)*s.l:], ld, x[n*s.imgIn:], g)
				}
				gatherOutGrad(s, g2, dy, n0, n1, g)
				gemmOn(dev, false, true, s.ckk, s.ocg, ld, 1, col, ld, g2, ld, 1, dwt[g*s.wGroup:], s.ocg)
			}
		}
		for g := 0; g < s.Groups; g++ {
			transposeInto(part[g*s.wGroup:], s.ckk, dwt[g*s.wGroup:], s.ocg, s.ckk, s.ocg)
		}
	}
}

// transposeInto writes the transpose of the rows×cols matrix src (row
// stride lds) into dst (row stride ldd): dst[j·ldd + i] = src[i·lds + j].
func transposeInto[T float](dst []T, ldd int, src []T, lds, rows, cols int) {
	if d, ok := any(dst).([]float32); ok {
		gemm.Transpose(d, ldd, any(src).([]float32), lds, rows, cols)
		return
	}
	for i := range rows {
		for j, v := range src[i*lds : i*lds+cols] {
			dst[j*ldd+i] = v
		}
	}
}

// offset returns v[at:] of an optional operand (a residual, weights in
// bands), or nil for a nil v.
func offset[T any](v []T, at int) []T {
	if v == nil {
		return nil
	}
	return v[at:]
}

// residualRows sets out = act(out + res) on the first n values of rows
// [0, rows) of out and res, both ld apart.
func residualRows[T float](act device.Activation, out, res []T, ld, rows, n int) {
	for r := range rows {
		row := out[r*ld : r*ld+n]
		addActSlice(act, row, row, res[r*ld:r*ld+n])
	}
}

// withBias returns src + b written to dst, or src itself when there is no
// bias (src is then read as it is, as the unfused convolution would leave
// it: -0 stays -0).
func withBias[T float](dst, src, bias []T, b T) []T {
	if bias == nil {
		return src
	}
	biasActSlice(device.ActNone, dst, src, b)
	return dst
}
