package cpu

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/direct"
)

// The stem path: a 3×3 convolution with stride 2 over at most three input
// channels, such as the RGB stem of MobileNet and EfficientNet (3 → 32
// channels, 224×224 → 112×112), reads its input rows where they lie:
// direct.Stride2Plan.RunBlock splits each row's even and odd columns in
// registers once for 16 output channels, whose sums stay in registers.
// The direct path lays the input out in four phases per channel first,
// and im2col copies it nine times into a column matrix, for only 27
// multiply-adds per output.
//
// mobilenet_v2's stem at batch 1, 2 Zen 4 threads: 104 µs against the
// direct path's 137 (208 GFLOP/s, the two cores' peak), 124–127 against
// 170–173 after a 24 MB pass over other memory; the whole model, runs
// alternating between the two paths in one process (600 runs each),
// 2.8–3.1% faster in one host state (6.01–6.12 against 6.18–6.32 ms)
// and 1.6–2.5% in another (4.67–4.74 against 4.79–4.82), 0.9% at batch
// 32 (116.9 against 118.0 ms).

// useStem reports whether the convolution takes the stem path: float32,
// AVX-512 (direct.Fast), one group, a 3×3 kernel with strides of 2 and no
// dilation, at most 3 input channels (27 channel·taps, the direct path's
// least for strided convolutions, see useDirect) and output rows of at
// least one vector.
func useStem(s convShape) bool {
	return direct.Fast() && s.Groups == 1 && s.KH == 3 && s.KW == 3 && s.StrideH == 2 && s.StrideW == 2 &&
		s.DilH == 1 && s.DilW == 1 && s.C*9 <= 27 && s.ow >= direct.Lanes && s.oh > 0 && s.OutC > 0
}

// conv2dStem computes y = act(conv(x, w) + bias) (bias may be nil) for a
// convolution useStem takes: one task per output row of an image, all
// output channels in blocks of 16, whose filters are packed once for all
// calls when wb is constant (vecFilterBlocks).
func conv2dStem(dev *Device, s convShape, act device.Activation, y, x, w, bias []float32, wb *Buffer) {
	wp, held := vecFilterBlocks(dev, s, w, wb)
	defer held.release()
	launch(dev, s.N*s.oh, s.OutC*s.ow*s.ckk, stemArgs{s: s, act: act, y: y, x: x, wp: wp, bias: bias})
}

// stemArgs are the arguments of conv2dStem: task index t is output row
// t%oh of image t/oh.
type stemArgs struct {
	s              convShape
	act            device.Activation
	y, x, wp, bias []float32
}

func (a *stemArgs) run(lo, hi int) {
	s := a.s
	p := stride2PlanFor(s)
	lower, upper := clampOf(a.act)
	blocks := ceilDiv(s.OutC, direct.Lanes)
	perBlock := s.C * 9 * direct.Lanes // packed floats per block of output channels
	var partial *scratch[float32]      // the last block's rows, when OutC is not a multiple of Lanes
	if s.OutC%direct.Lanes != 0 {
		partial = getScratch[float32](direct.Lanes * s.ow)
		defer putScratch(partial)
	}
	for t := lo; t < hi; t++ {
		n, i := t/s.oh, t%s.oh
		ih := i*s.StrideH - s.PadH // the input row of kernel row 0
		kh0, kh1 := max(0, -ih), min(s.KH, s.H-ih)
		for ob := range blocks {
			var bias [direct.Lanes]float32
			oc0 := ob * direct.Lanes
			ocs := min(direct.Lanes, s.OutC-oc0)
			if a.bias != nil {
				copy(bias[:], a.bias[oc0:oc0+ocs])
			}
			out, ldo := a.y[n*s.imgOut+oc0*s.l+i*s.ow:], s.l
			if ocs < direct.Lanes {
				out, ldo = partial.s, s.ow
			}
			if kh0 >= kh1 { // every kernel row in the padding
				for o := range direct.Lanes {
					v := min(max(bias[o], lower), upper)
					for j := range s.ow {
						out[o*ldo+j] = v
					}
				}
			} else {
				in := a.x[n*s.imgIn+(ih+kh0)*s.W:]
				p.RunBlock(out, ldo, in, s.W, s.inPlane, s.C, kh1-kh0, a.wp[ob*perBlock+kh0*3*direct.Lanes:], 9*direct.Lanes, bias[:], lower, upper)
			}
			if ocs < direct.Lanes {
				for o := range ocs {
					copy(a.y[n*s.imgOut+(oc0+o)*s.l+i*s.ow:][:s.ow], partial.s[o*s.ow:][:s.ow])
				}
			}
		}
	}
}
