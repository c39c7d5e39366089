package cpu

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/gemm"
)

// conv2dSplit is conv2dIm2col for a batch with fewer GEMMs than workers (a
// single image): each image's GEMM is split across the workers instead.
//
// When the output plane has at least as many positions as the group has
// output channels (the early, large layers), the workers take bands of
// output rows: a band's column matrix is the im2col of a shorter image,
// which its worker unfolds into a small, cache-resident buffer and
// multiplies into the band's columns of y. Otherwise (the late layers,
// with many channels and small planes) the workers take blocks of output
// channels, each unfolding the whole image itself: a column matrix that
// another core has just written costs more to read than to unfold again
// (resnet18's 14×14×256 layer at batch 1 on 2 Zen 5 cores, one run: 1.47
// ms with one unfolding shared, by channels in parallel, 1.01 ms in
// bands, 0.87 ms unfolded by each worker; 7×7×512: 1.25, 1.14, 1.01 ms).
// Either way each block of y gets the bias and activation as soon as its
// GEMM has written it, and, since every element of a GEMM's output goes
// through the same operations however the output is split, the result is
// that of the image-parallel path.
func conv2dSplit[T float](dev *Device, s convShape, act device.Activation, y, x, w, bias, res []T, panels []float32) {
	if s.l >= s.ocg {
		// The worker count, read once: GOMAXPROCS takes the scheduler's lock.
		if workers := dev.numWorkers(); !pointwiseByChannels(dev, s, workers) {
			rows := s.bandRows(workers)
			nb := (s.oh + rows - 1) / rows
			cols := 0
			if s.pointwise() {
				// Bands of whole vectors of positions: no cache line of y is
				// written by two workers.
				cols = ((s.l+nb-1)/nb + bandAlign - 1) / bandAlign * bandAlign
				nb = (s.l + cols - 1) / cols
			}
			launch(dev, s.N*s.Groups*nb, rows*s.ow*s.ocg*s.ckk,
				convBandArgs[T]{s: s, dev: dev, y: y, x: x, w: w, bias: bias, res: res, act: act, rows: rows, nb: nb, cols: cols, panels: panels})
			return
		}
	}
	unit := channelUnit(dev, s) // output channels per task index
	for n := 0; n < s.N; n++ {
		for g := 0; g < s.Groups; g++ {
			at := n*s.imgOut + g*s.ocg*s.l
			launch(dev, (s.ocg+unit-1)/unit, unit*s.l*s.ckk, convRowsArgs[T]{s: s, dev: dev,
				y: y[at:], x: x[n*s.imgIn:], w: w[g*s.wGroup:], bias: bias, res: offset(res, at), act: act, g: g, unit: unit,
				panels: groupPanels(panels, s, g, 0)})
		}
	}
}

// pointwiseByChannels reports whether conv2dSplit splits a 1×1
// convolution whose plane has more positions than output channels by
// channels all the same: a plane smaller than depthwiseBands takes, whose
// depthwise layer (after an expansion) splits by channels too, and at
// least four tiles of output channels for each of the workers.
// mobilenet_v2's 32 → 192 layer on 28×28, 2 Zen 4 threads: 80 µs by bands
// of positions, 60 µs by channels (106 µs on one thread); 24 → 144 on
// 56×56 141 and 135 µs, where the depthwise layer splits by bands.
func pointwiseByChannels(dev *Device, s convShape, workers int) bool {
	return s.pointwise() && s.l < bandPositions && s.ocg >= 4*channelUnit(dev, s)*workers
}

// channelUnit is the number of output channels of a task of conv2dSplit's
// split by channels: the rows of a tile of Hora's float32 kernel (14 with
// AVX-512), so that no task ends in a short tile (16 channels, one tile of
// 14 and one of 2, took 15% longer on MobileNet's 7×7×960 layer), else 16.
func channelUnit(dev *Device, s convShape) int {
	if dev.Float32GEMM(false, false, s.ocg, s.l, s.ckk) == "hora" {
		if mr := gemm.Blocking().MR; mr >= 8 {
			return mr
		}
	}
	return 16
}

// bandRows is the number of output rows of a band of conv2dSplit: about
// 64K elements of column matrix (it stays in L2 while the GEMM packs it),
// at least 256 columns (the GEMM repacks the weights per band), and a
// number of bands that is a multiple of the workers.
func (s convShape) bandRows(workers int) int {
	cols := max(256, (1<<17)/max(1, s.ckk))
	rows := min(s.oh, (cols+s.ow-1)/s.ow)
	nb := (s.oh + rows - 1) / rows
	nb = (nb + workers - 1) / workers * workers
	return max(1, (s.oh+nb-1)/nb)
}

// convBandArgs are the arguments of conv2dSplit by bands of output rows:
// task index t is band t%nb of group (t/nb)%Groups of image t/(nb·Groups).
type convBandArgs[T float] struct {
	s                  convShape
	dev                *Device
	y, x, w, bias, res []T // res: the residual added to y, or nil
	act                device.Activation
	rows, nb           int       // output rows per band, bands per image and group
	cols               int       // positions per band of a pointwise convolution (else 0)
	panels             []float32 // w in weightPanels' layout, or nil
}

// bandAlign is the multiple of positions at which the bands of a
// pointwise convolution start: 16 float32 values, a cache line (no line
// of y is written by two workers) and a vector. Bands of whole 32-value
// strips left 14×14 planes in bands of 128 and 68 positions, one worker
// waiting for the other (mobilenet_v2's 1×1 layers at batch 1, 2 Zen 5
// threads: the first bands took 17% longer than the second); with bands
// of 112 and 84 its 384 → 64 and 576 → 96 layers ran 7–10% faster.
const bandAlign = 16

func (a *convBandArgs[T]) run(lo, hi int) {
	s := a.s
	var sc *scratch[T]
	if !s.pointwise() {
		sc = getScratch[T](s.ckk * a.rows * s.ow)
		defer putScratch(sc)
	}
	for t := lo; t < hi; t++ {
		n, g, band := t/(a.nb*s.Groups), t/a.nb%s.Groups, t%a.nb
		r0 := band * a.rows
		r1 := min(r0+a.rows, s.oh)
		p0, bl := r0*s.ow, (r1-r0)*s.ow // first position, positions
		if a.cols > 0 {
			p0 = band * a.cols
			bl = min(a.cols, s.l-p0)
		}
		if bl <= 0 {
			continue
		}
		var col []T
		ldb := bl
		if s.pointwise() {
			col, ldb = a.x[n*s.imgIn+g*s.cg*s.inPlane+p0:], s.l
		} else {
			// The band is the convolution of the image shifted up by
			// r0·StrideH rows, with r1-r0 output rows.
			b := s
			b.oh, b.l = r1-r0, bl
			b.PadH -= r0 * s.StrideH
			col = sc.s
			im2col(b, col, bl, a.x[n*s.imgIn:], g)
		}
		at := n*s.imgOut + g*s.ocg*s.l + p0
		convProduct(a.dev, a.act, a.bias, g*s.ocg, s.ocg, bl, s.ckk, a.w[g*s.wGroup:], groupPanels(a.panels, s, g, 0), col, ldb, a.y[at:], s.l, offset(a.res, at))
	}
}

// convRowsArgs are the arguments of conv2dSplit by blocks of output
// channels: task index i is channels [i·unit, (i+1)·unit) of group g of
// the image x, whose output rows start at y.
type convRowsArgs[T float] struct {
	s                  convShape
	dev                *Device
	y, x, w, bias, res []T // res: the residual added to y (from y's start), or nil
	act                device.Activation
	g, unit            int
	panels             []float32 // group g's weights in weightPanels' layout, or nil
}

// run unfolds the image into the worker's own buffer (a 1×1 convolution
// with unit stride reads it where it is) and computes its block of output
// channels.
func (a *convRowsArgs[T]) run(lo, hi int) {
	s := a.s
	var col []T
	if s.pointwise() {
		col = a.x[a.g*s.cg*s.inPlane:]
	} else {
		sc := getScratch[T](s.ckk * s.l)
		defer putScratch(sc)
		col = sc.s
		im2col(s, col, s.l, a.x, a.g)
	}
	i0, i1 := lo*a.unit, min(hi*a.unit, s.ocg)
	convProduct(a.dev, a.act, a.bias, a.g*s.ocg+i0, i1-i0, s.l, s.ckk, a.w[i0*s.ckk:], groupPanels(a.panels, s, 0, i0), col, s.l, a.y[i0*s.l:], s.l, offset(a.res, i0*s.l))
}
