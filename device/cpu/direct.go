package cpu

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/direct"
)

// The direct convolution: each input channel of an image is laid out in
// the padded stride phases of a depthwise convolution (dwGeom), where
// every kernel tap is a constant shift of the flat output position, and
// the micro-kernel of package direct accumulates blocks of 8 output
// channels × 48 positions over all input channels and taps in registers.
// It reads the input once instead of through im2col's copy of it per tap,
// and with few channels (ResNet-20's 16) its blocks stay full where the
// GEMM's 14×32 tiles do not. The positions past each output row (up to
// the phase width) are computed and dropped.

// useDirect reports whether the convolution takes the direct path: float32
// with the vector kernel, one group, a kernel larger than 1×1 (a 1×1
// convolution is a plain GEMM already), and the sizes where it was
// measured faster than im2col (BenchmarkDirect: 1.3–3× on ResNet-20's,
// ResNet-8's and LeNet-5's layers and a 7×7 stem): at least 6 output
// channels (fewer leave most of the 8-row block empty) and 16 input
// channel·taps (a 3×3 kernel over one channel ran at 0.6× of im2col), and
// at most 64 channels of 3×3 each way, past which the GEMMs of im2col and
// Winograd run closer to peak.
func useDirect(s convShape) bool {
	kk := s.KH * s.KW
	return direct.Fast() && s.Groups == 1 && kk > 1 && s.oh > 0 && s.ow > 0 &&
		s.OutC >= 6 && s.OutC <= 64 && s.C*kk >= 16 && s.C*kk <= 64*9
}

// directGeom is the layout of one direct convolution.
type directGeom struct {
	dwGeom
	taps      []int // offset of each tap in a channel's phases
	chanLen   int   // a channel's phases, the kernel's cstride
	q, qPad   int   // output positions (oh rows of wq), rounded up to whole blocks
	inLen     int   // the input of one image, with the slack the last block reads
	ocBlocks  int
	packedLen int // packed weights: ocBlocks × C × taps × direct.Rows
}

func newDirectGeom(s convShape) directGeom {
	g := directGeom{dwGeom: newDWGeom(s)}
	g.taps = g.dwGeom.taps()
	g.chanLen = g.phaseLen * g.nPhase
	g.q = s.oh * g.wq
	g.qPad = (g.q + direct.Cols - 1) / direct.Cols * direct.Cols
	maxTap := 0
	for _, t := range g.taps {
		maxTap = max(maxTap, t)
	}
	g.inLen = max(s.C*g.chanLen, (s.C-1)*g.chanLen+maxTap+g.qPad)
	g.ocBlocks = (s.OutC + direct.Rows - 1) / direct.Rows
	g.packedLen = g.ocBlocks * s.C * len(g.taps) * direct.Rows
	return g
}

// conv2dDirect computes y = act(conv(x, w) + bias) (bias may be nil) for a
// convolution of one group.
func conv2dDirect(dev *Device, s convShape, act device.Activation, y, x, w, bias []float32) {
	g := newDirectGeom(s)
	wp := getScratch[float32](g.packedLen)
	defer putScratch(wp)
	g.packWeights(wp.s, func(oc, c, t int) float32 { return w[(oc*s.C+c)*len(g.taps)+t] })
	directRun(dev, s, g, act, y, x, wp.s, bias)
}

// conv2dDirectGradInput computes the input gradient of a unit-stride
// convolution as the direct convolution of dy with the filters rotated by
// 180° and their channels swapped, dy padded by dil·(k-1) - pad.
func conv2dDirectGradInput(dev *Device, s convShape, dx, dy, w []float32) {
	t := s.gradInputShape()
	g := newDirectGeom(t)
	wp := getScratch[float32](g.packedLen)
	defer putScratch(wp)
	kk := s.KH * s.KW
	g.packWeights(wp.s, func(c, oc, tap int) float32 { return w[(oc*s.C+c)*kk+kk-1-tap] })
	directRun(dev, t, g, device.ActNone, dx, dy, wp.s, nil)
}

// gradInputShape is the convolution that computes s's input gradient: from
// OutC channels of oh×ow to C channels of H×W, unit stride, the padding
// that brings the output back to H×W. It is only meaningful when s has unit
// stride and that padding is not negative (directGradInput says).
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

// directGradInput reports whether s's input gradient takes the direct path.
func (s convShape) directGradInput() bool {
	return s.gradInputIsConv() && useDirect(s.gradInputShape())
}

// packWeights lays the filters out for direct.Block: blocks of Rows output
// channels, then input channels, then taps, the Rows channels' weights
// side by side (zero past OutC). weight(oc, c, t) is the filter element.
func (g directGeom) packWeights(wp []float32, weight func(oc, c, t int) float32) {
	s, nt := g.s, len(g.taps)
	i := 0
	for ob := range g.ocBlocks {
		for c := range s.C {
			for t := range nt {
				for r := range direct.Rows {
					oc := ob*direct.Rows + r
					var v float32
					if oc < s.OutC {
						v = weight(oc, c, t)
					}
					wp[i] = v
					i++
				}
			}
		}
	}
}

// directRun runs the direct convolution with packed weights wp, one task
// per image and block of output channels.
func directRun(dev *Device, s convShape, g directGeom, act device.Activation, y, x, wp, bias []float32) {
	launch(dev, s.N*g.ocBlocks, g.qPad*direct.Rows*s.C*len(g.taps),
		directArgs{s: s, g: g, act: act, y: y, x: x, wp: wp, bias: bias})
}

// directArgs are the arguments of directRun: task index i is block
// i%ocBlocks of output channels of image i/ocBlocks. A worker's tasks are
// consecutive, so it lays out each image's phases once.
type directArgs struct {
	s              convShape
	g              directGeom
	act            device.Activation
	y, x, wp, bias []float32
}

func (a *directArgs) run(lo, hi int) {
	s, g := a.s, a.g
	sc := getScratch[float32](g.inLen + direct.Rows*g.qPad)
	defer putScratch(sc)
	in, out := sc.s[:g.inLen], sc.s[g.inLen:]
	clear(in[s.C*g.chanLen:]) // the slack past the last channel
	nt := len(g.taps)
	image := -1
	for task := lo; task < hi; task++ {
		n, ob := task/g.ocBlocks, task%g.ocBlocks
		if n != image {
			for c := range s.C {
				fillPhases(g.dwGeom, in[c*g.chanLen:(c+1)*g.chanLen], a.x[(n*s.C+c)*s.inPlane:][:s.inPlane])
			}
			image = n
		}
		w := a.wp[ob*s.C*nt*direct.Rows:]
		for q := 0; q < g.qPad; q += direct.Cols {
			direct.Block(out[q:], g.qPad, in[q:], g.chanLen, g.taps, w, s.C)
		}
		for r := range direct.Rows {
			oc := ob*direct.Rows + r
			if oc >= s.OutC {
				break
			}
			var b float32
			if a.bias != nil {
				b = a.bias[oc]
			}
			plane := a.y[(n*s.OutC+oc)*s.l:][:s.l]
			for i := range s.oh {
				biasActSlice(a.act, plane[i*s.ow:(i+1)*s.ow], out[r*g.qPad+i*g.wq:][:s.ow], b)
			}
		}
	}
}
