package cpu

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/direct"
	"github.com/hora-dl/hora/device/cpu/internal/gemm"
)

// The channel-vector direct convolution (direct.VecBlock): the output
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

// useVecDirect reports whether s takes the channel-vector direct path:
// float32 with the AVX2 kernel and without the AVX-512 in-place ones, one
// group, a kernel larger than 1×1, output planes under 100 positions
// (larger ones fill the direct convolution's blocks), a last block of
// output channels at least half full, and from 16 to 96·9 input
// channel·taps (a block's filters, 64 bytes a pair, 54 KB at most).
func useVecDirect(s convShape) bool {
	kk, rem := s.KH*s.KW, s.OutC%direct.VecRows
	return direct.VecFast() && !direct.Fast() && s.Groups == 1 && kk > 1 && s.oh > 0 && s.ow > 0 &&
		s.oh*s.ow < 100 && (rem == 0 || rem >= direct.VecRows/2) && s.C*kk >= 16 && s.C*kk <= 96*9
}

// conv2dVec computes y = act(conv(x, w) + bias) (bias may be nil) of a
// convolution of one group through direct.VecBlock; the filters are packed
// once for all calls when wb is constant (see derived).
func conv2dVec(dev *Device, s convShape, act device.Activation, y, x, w, bias []float32, wb *Buffer) {
	g := newDirectGeom(s)
	key := derivedKey{kind: vecFilters, outC: s.OutC, inC: s.C, taps: g.nTaps}
	wp, release := derived(wb, key, vecPackedLen(s, g), func(wp []float32) {
		vecPackWeights(wp, s, g, func(oc, c, t int) float32 { return w[(oc*s.C+c)*g.nTaps+t] })
	})
	defer release()
	vecRun(dev, s, g, act, y, x, wp, bias)
}

// conv2dVecGradInput computes the input gradient of a unit-stride
// convolution as the channel-vector direct convolution of dy with the
// filters rotated by 180° and their channels swapped (as
// conv2dDirectGradInput does).
func conv2dVecGradInput(dev *Device, s convShape, dx, dy, w []float32) {
	t := s.gradInputShape()
	g := newDirectGeom(t)
	wp := getScratch[float32](vecPackedLen(t, g))
	defer putScratch(wp)
	kk := s.KH * s.KW
	vecPackWeights(wp.s, t, g, func(c, oc, tap int) float32 { return w[(oc*s.C+c)*kk+kk-1-tap] })
	vecRun(dev, t, g, device.ActNone, dx, dy, wp.s, nil)
}

// vecPackedLen is the length of the packed filters: blocks of VecRows
// output channels, each C·taps pairs of VecRows weights.
func vecPackedLen(s convShape, g directGeom) int {
	return ceilDiv(s.OutC, direct.VecRows) * s.C * g.nTaps * direct.VecRows
}

// vecPackWeights lays the filters out for direct.VecBlock: blocks of
// VecRows output channels, then input channels, then taps, the block's
// weights side by side (zero past OutC). weight(oc, c, t) is the filter
// element.
func vecPackWeights(wp []float32, s convShape, g directGeom, weight func(oc, c, t int) float32) {
	i := 0
	for ob := range ceilDiv(s.OutC, direct.VecRows) {
		for c := range s.C {
			for t := range g.nTaps {
				for r := range direct.VecRows {
					var v float32
					if oc := ob*direct.VecRows + r; oc < s.OutC {
						v = weight(oc, c, t)
					}
					wp[i] = v
					i++
				}
			}
		}
	}
}

// vecRun runs the channel-vector direct convolution with packed filters
// wp, one task per run of images of at least vecTaskPositions outputs.
func vecRun(dev *Device, s convShape, g directGeom, act device.Activation, y, x, wp, bias []float32) {
	images := min(s.N, ceilDiv(vecTaskPositions, s.l))
	var tapBuf [maxStackTaps]int
	taps := g.taps(tapBuf[:0])
	offs := make([]int, 0, s.C*len(taps))
	for c := range s.C {
		for _, t := range taps {
			offs = append(offs, c*g.chanLen+t)
		}
	}
	tasks := ceilDiv(s.N, images)
	launch(dev, tasks, images*s.l*s.OutC*s.ckk, vecDirectArgs{s: s, g: g, act: act, y: y, x: x, wp: wp, bias: bias, offs: offs, images: images})
}

// vecDirectArgs are the arguments of vecRun: task i computes images
// [i·images, (i+1)·images).
type vecDirectArgs struct {
	s              convShape
	g              directGeom
	act            device.Activation
	y, x, wp, bias []float32
	offs           []int // each (channel, tap) pair's offset in an image's phases
	images         int
}

func (a *vecDirectArgs) run(lo, hi int) {
	s, g := a.s, a.g
	positions := a.images * s.l
	blocks := ceilDiv(positions, direct.VecCols)
	sc := getScratch[float32](a.images*g.inLen + blocks*direct.VecCols*direct.VecRows)
	defer putScratch(sc)
	in, tile := sc.s[:a.images*g.inLen], sc.s[a.images*g.inLen:]
	pos := make([]int, blocks*direct.VecCols) // each output's first input in in
	clampOut := a.bias != nil || a.act != device.ActNone
	for task := lo; task < hi; task++ {
		n0 := task * a.images
		n1 := min(n0+a.images, s.N)
		nq := (n1 - n0) * s.l
		for e := range pos { // the last position repeated to whole blocks
			e1 := min(e, nq-1)
			q := e1 % s.l
			pos[e] = e1/s.l*g.inLen + q/s.ow*g.wq + q%s.ow
		}
		for n := n0; n < n1; n++ {
			img := in[(n-n0)*g.inLen:][:g.inLen]
			clear(img[s.C*g.chanLen:]) // the slack past the last channel
			for c := range s.C {
				fillPhases(g.dwGeom, img[c*g.chanLen:(c+1)*g.chanLen], a.x[(n*s.C+c)*s.inPlane:][:s.inPlane])
			}
		}
		for ob := range ceilDiv(s.OutC, direct.VecRows) {
			w := a.wp[ob*s.C*g.nTaps*direct.VecRows:]
			direct.VecBlocks(tile, in, pos[:ceilDiv(nq, direct.VecCols)*direct.VecCols], a.offs, w)
			rows := min(direct.VecRows, s.OutC-ob*direct.VecRows)
			for n := n0; n < n1; n++ {
				planes := a.y[(n*s.OutC+ob*direct.VecRows)*s.l:]
				gemm.Transpose(planes, s.l, tile[(n-n0)*s.l*direct.VecRows:], direct.VecRows, s.l, rows)
				if !clampOut {
					continue
				}
				for r := range rows {
					var bv float32
					if a.bias != nil {
						bv = a.bias[ob*direct.VecRows+r]
					}
					plane := planes[r*s.l : (r+1)*s.l]
					biasActSlice(a.act, plane, plane, bv)
				}
			}
		}
	}
}
