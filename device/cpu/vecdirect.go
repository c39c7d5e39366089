package cpu

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/direct"
	"github.com/hora-dl/hora/device/cpu/internal/gemm"
)

// The channel-vector direct convolution (direct.VecBlocks): the output
// channels of a position fill the vectors, 16 at a time, and each input
// value a pair (channel, tap) reads is broadcast to them. It reads the
// images' padded phases, as the direct convolution does (directGeom), but
// its blocks are any six output positions, not a run of 48 along the
// phase rows: a small plane's outputs fill them whole, without computing
// the padding columns between rows, and a block may take positions of
// two images. It is the path of small planes on CPUs with AVX2 but not
// AVX-512, where the direct convolution's 48-wide blocks, copied out of
// the phases, and im2col's small products ran at about half of the
// vector units' peak; with AVX-512 the in-place kernels serve them.

// vecTaskPositions is the least number of output positions of a task of
// vecDirectArgs: enough images that their blocks of VecCols positions
// leave little of the last one empty.
const vecTaskPositions = 256

// maxVecPairs is the most (input channel, tap) pairs of a convolution on
// the channel-vector path, a multiple of VecCols: the offsets of its pairs
// and of a task's positions live on the stack.
const maxVecPairs = 96 * 9

// maxVecTaskPositions bounds a task's output positions (a multiple of
// VecCols): vecTaskPositions plus most of one plane of under 100.
const maxVecTaskPositions = 384

// vecShape reports whether the channel-vector kernels can take s on this
// machine: float32 with the AVX2 kernel and without the AVX-512 in-place
// ones, one group, a kernel larger than 1×1, a last block of output
// channels at least half full, and from 16 to 96·9 input channel·taps (a
// block's filters, 64 bytes a pair, 54 KB at most).
func vecShape(s convShape) bool {
	kk, rem := s.KH*s.KW, s.OutC%direct.VecRows
	return direct.VecFast() && !direct.Fast() && s.Groups == 1 && kk > 1 && s.oh > 0 && s.ow > 0 &&
		(rem == 0 || rem >= direct.VecRows/2) && s.C*kk >= 16 && s.C*kk <= maxVecPairs
}

// useVecDirect reports whether s's forward convolution (and, for its
// gradient's shape, the input gradient) takes the channel-vector path: a
// vecShape with output planes under 100 positions (larger ones fill the
// direct convolution's blocks).
func useVecDirect(s convShape) bool { return vecShape(s) && s.oh*s.ow < 100 }

// useVecGradWeight reports whether s's weight gradient takes the
// channel-vector path (conv2dVecGradWeight): a vecShape except unit-stride
// ones with output planes under 100 positions. Measured on Zen 4 with
// AVX-512 hidden (2 threads, BenchmarkDirect, a process per measurement),
// against im2col's weight gradient: ResNet-20's and ResNet-8's layers on
// 28×28 and 14×14 1.05–1.6×, their stride-2 ones 1.05–1.3×; 3×3 layers of
// 64 and 96 channels on 7×7 0.9×.
func useVecGradWeight(s convShape) bool {
	return vecShape(s) && !(s.StrideH == 1 && s.StrideW == 1 && s.oh*s.ow < 100)
}

// conv2dVec computes y = act(conv(x, w) + bias) (bias may be nil) of a
// convolution of one group through direct.VecBlocks; the filters are packed
// once for all calls when wb is constant (see derived).
func conv2dVec(dev *Device, s convShape, act device.Activation, y, x, w, bias []float32, wb *Buffer) {
	g := newDirectGeom(s)
	wp, held := vecFilterBlocks(dev, s, w, wb)
	defer held.release()
	vecRun(dev, s, g, act, y, x, wp, bias)
}

// vecFilterBlocks returns the filters w of s packed in blocks of VecRows
// (= Lanes) output channels, the layout of direct.VecBlocks and
// direct.Stride2Plan.RunBlock (see constantFilterBlocks).
func vecFilterBlocks(dev *Device, s convShape, w []float32, wb *Buffer) ([]float32, heldForm) {
	return constantFilterBlocks(dev, s, w, wb, vecFilters, direct.VecRows)
}

// conv2dVecGradInput computes the input gradient of a unit-stride
// convolution as the channel-vector direct convolution of dy with the
// filters rotated by 180° and their channels swapped (as
// conv2dDirectGradInput does).
func conv2dVecGradInput(dev *Device, s convShape, dx, dy, w []float32) {
	t := s.gradInputShape()
	g := newDirectGeom(t)
	wp := getScratch[float32](filterBlocksLen(t, g.nTaps, direct.VecRows))
	defer putScratch(wp)
	packFilterBlocks(dev, wp.s, w, gradInputFilters(s), t, g.nTaps, direct.VecRows)
	vecRun(dev, t, g, device.ActNone, dx, dy, wp.s, nil)
}

// vecRun runs the channel-vector direct convolution with packed filters
// wp, one task per run of the batch's output positions: whole images of
// at least vecTaskPositions outputs in all, or maxVecTaskPositions where
// that is fewer.
func vecRun(dev *Device, s convShape, g directGeom, act device.Activation, y, x, wp, bias []float32) {
	run := min(ceilDiv(vecTaskPositions, s.l)*s.l, maxVecTaskPositions)
	tasks := ceilDiv(s.N*s.l, run)
	launch(dev, tasks, run*s.OutC*s.ckk, vecDirectArgs{s: s, g: g, act: act, y: y, x: x, wp: wp, bias: bias, span: run})
}

// vecPairs returns dst with each (input channel, tap) pair's offset from an
// output position's first input in an image's phases appended, in the
// order of the packed filters, then the last one repeated to a multiple of
// round.
func vecPairs(dst []int, s convShape, g directGeom, round int) []int {
	var tapBuf [maxStackTaps]int
	taps := g.taps(tapBuf[:0])
	for c := range s.C {
		for _, t := range taps {
			dst = append(dst, c*g.chanLen+t)
		}
	}
	for len(dst)%round != 0 {
		dst = append(dst, dst[len(dst)-1])
	}
	return dst
}

// vecPositions sets dst[i] to the first input, in phases of images inLen
// apart, of output position e0+i of a run of images (e counting the
// images' positions one after the other), for i < len(dst); positions past
// nq repeat the last one.
func vecPositions(dst []int, s convShape, g directGeom, e0, nq int) {
	e := min(e0, nq-1)
	n, q := e/s.l, e%s.l
	i, j := q/s.ow, q%s.ow
	for k := range dst {
		dst[k] = n*g.inLen + i*g.wq + j
		if e0+k+1 >= nq {
			continue // the last position again
		}
		if j++; j == s.ow {
			j = 0
			if i++; i == s.oh {
				i = 0
				n++
			}
		}
	}
}

// vecFillImages lays images [n0, n1) of the batch x out in padded phases
// into in, image n at (n-n0)·g.inLen, each channel g.chanLen long and the
// slack past the last channel zero.
func vecFillImages(g directGeom, in, x []float32, n0, n1 int) {
	s := g.s
	for n := n0; n < n1; n++ {
		img := in[(n-n0)*g.inLen:][:g.inLen]
		clear(img[s.C*g.chanLen:])
		for c := range s.C {
			fillPhases(g.dwGeom, img[c*g.chanLen:(c+1)*g.chanLen], x[(n*s.C+c)*s.inPlane:][:s.inPlane])
		}
	}
}

// vecDirectArgs are the arguments of vecRun: task i computes the output
// positions [i·span, (i+1)·span) of the batch, counting each image's after
// the previous one's.
type vecDirectArgs struct {
	s              convShape
	g              directGeom
	act            device.Activation
	y, x, wp, bias []float32
	span           int // at most maxVecTaskPositions
}

func (a *vecDirectArgs) run(lo, hi int) {
	s, g := a.s, a.g
	images := ceilDiv(a.span-1, s.l) + 1 // the most images a run of positions touches
	tileLen := ceilDiv(a.span, direct.VecCols) * direct.VecCols * direct.VecRows
	sc := getScratch[float32](images*g.inLen + tileLen)
	defer putScratch(sc)
	in, tile := sc.s[:images*g.inLen], sc.s[images*g.inLen:][:tileLen]
	var offsBuf [maxVecPairs]int
	offs := vecPairs(offsBuf[:0], s, g, 1)
	var posBuf [maxVecTaskPositions]int // each output's first input in in
	clampOut := a.bias != nil || a.act != device.ActNone
	for task := lo; task < hi; task++ {
		e0, e1 := task*a.span, min((task+1)*a.span, s.N*s.l)
		n0, n1 := e0/s.l, (e1-1)/s.l+1 // the images of the run
		vecFillImages(g, in, a.x, n0, n1)
		pos := posBuf[:ceilDiv(e1-e0, direct.VecCols)*direct.VecCols]
		vecPositions(pos, s, g, e0-n0*s.l, e1-n0*s.l)
		for ob := range ceilDiv(s.OutC, direct.VecRows) {
			w := a.wp[ob*s.C*g.nTaps*direct.VecRows:]
			direct.VecBlocks(tile, in, pos, offs, w)
			rows := min(direct.VecRows, s.OutC-ob*direct.VecRows)
			for n := n0; n < n1; n++ {
				q0, q1 := max(e0-n*s.l, 0), min(e1-n*s.l, s.l) // the image's outputs in the run
				planes := a.y[(n*s.OutC+ob*direct.VecRows)*s.l:]
				gemm.Transpose(planes[q0:], s.l, tile[(n*s.l+q0-e0)*direct.VecRows:], direct.VecRows, q1-q0, rows)
				if !clampOut {
					continue
				}
				for r := range rows {
					var bv float32
					if a.bias != nil {
						bv = a.bias[ob*direct.VecRows+r]
					}
					plane := planes[r*s.l+q0 : r*s.l+q1]
					biasActSlice(a.act, plane, plane, bv)
				}
			}
		}
	}
}

// vecGradRun is the most output positions each direct.VecBlocksAdd call
// of vecGradArgs runs over (a chunk's positions are cut evenly): their
// gradients (VecRows channels, 64 bytes a position) stay in L1 while
// every pair reads them.
const vecGradRun = 384

// conv2dVecGradWeight computes the weight gradient of a convolution of one
// group through direct.VecBlocksAdd, whose roles are then swapped: the
// vectors hold VecRows output channels' gradients at a position, and the
// VecCols sums of a block are (input channel, tap) pairs, each reading the
// input a position's pair reads. The images are cut into at most
// gradWeightParts fixed chunks, as conv2dGradWeightIm2col does; a chunk's
// sums run in float32 over its positions in order, and the chunks' are
// added in float64 in chunk order, whatever the number of workers.
func conv2dVecGradWeight(dev *Device, s convShape, dw, dy, x []float32) {
	g := newDirectGeom(s)
	size := s.OutC * s.ckk
	if s.N == 0 {
		clear(dw[:size])
		return
	}
	chunk, nparts := gradWeightChunks(s.N)
	psc := getScratch[float64](nparts * size)
	defer putScratch(psc)
	launch(dev, nparts, chunk*s.l*size, vecGradArgs{s: s, g: g, dy: dy, x: x, partials: psc.s, chunk: chunk})
	sumPartsInOrder(dev, dw[:size], psc.s, nparts)
}

// vecGradArgs are the arguments of conv2dVecGradWeight: task index p sums
// images [p·chunk, (p+1)·chunk) into partials[p·size:].
type vecGradArgs struct {
	s        convShape
	g        directGeom
	dy, x    []float32
	partials []float64
	chunk    int
}

func (a *vecGradArgs) run(lo, hi int) {
	s, g := a.s, a.g
	pairs := s.C * g.nTaps
	var pairBuf [maxVecPairs]int // each pair's first input in an image's phases; a repeat past the end, dropped
	pairOffs := vecPairs(pairBuf[:0], s, g, direct.VecCols)
	positions := a.chunk * s.l
	sc := getScratch[float32](a.chunk*g.inLen + positions*direct.VecRows + len(pairOffs)*direct.VecRows)
	defer putScratch(sc)
	in := sc.s[:a.chunk*g.inLen]
	dyT := sc.s[a.chunk*g.inLen:][:positions*direct.VecRows] // VecRows channels' gradients per position
	sums := sc.s[a.chunk*g.inLen+positions*direct.VecRows:][:len(pairOffs)*direct.VecRows]
	var posBuf [vecGradRun]int // each output position's first input in in
	for p := lo; p < hi; p++ {
		acc := a.partials[p*s.OutC*pairs : (p+1)*s.OutC*pairs]
		n0, n1 := p*a.chunk, min((p+1)*a.chunk, s.N)
		nq := (n1 - n0) * s.l
		vecFillImages(g, in, a.x, n0, n1)
		for ob := range ceilDiv(s.OutC, direct.VecRows) {
			rows := min(direct.VecRows, s.OutC-ob*direct.VecRows)
			if rows < direct.VecRows {
				clear(dyT[:nq*direct.VecRows]) // the channels past OutC
			}
			for n := n0; n < n1; n++ {
				gemm.Transpose(dyT[(n-n0)*s.l*direct.VecRows:], direct.VecRows, a.dy[(n*s.OutC+ob*direct.VecRows)*s.l:], s.l, rows, s.l)
			}
			clear(sums)
			run := ceilDiv(nq, ceilDiv(nq, vecGradRun))
			for e0 := 0; e0 < nq; e0 += run {
				pos := posBuf[:min(run, nq-e0)]
				vecPositions(pos, s, g, e0, nq)
				direct.VecBlocksAdd(sums, in, pairOffs, pos, dyT[e0*direct.VecRows:])
			}
			for r := range rows {
				row := acc[(ob*direct.VecRows+r)*pairs:][:pairs]
				for j := range row {
					row[j] = float64(sums[j*direct.VecRows+r])
				}
			}
		}
	}
}
