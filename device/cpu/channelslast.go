package cpu

import (
	"fmt"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/direct"
	"github.com/hora-dl/hora/device/cpu/internal/gemm"
	"github.com/hora-dl/hora/device/cpu/internal/vec"
)

// Convolutions in channels-last order (device.ChannelsLastConvKernels):
// an image's positions one after another, each holding its channels side
// by side. MobileNet's blocks are a 1×1 convolution, a depthwise one and
// a 1×1 one; in this order a depthwise convolution multiplies 16 channels
// of a position by a tap's 16 weights in one vector operation, with no
// masks at the edges of a 14×14 or 7×7 plane (whose rows fill a vector of
// the plane kernels badly), and a 1×1 convolution is the product
// positions × channels that positions-major computes, without the
// transpose into planes. A chain of such layers passes the order on, so
// only its first layer reads planes (an N×C×H×W image unfolds into a
// column matrix read transposed, any one-group convolution) and its last
// writes them.

var (
	_ device.ChannelsLastConvKernels = kernels{}
	_ device.ChannelsLastPoolKernels = kernels{}
)

// maxChannelsLastTaps is the most taps (KH·KW) of a depthwise convolution
// in channels-last order: a row's list of the taps inside the image lives
// on the stack.
const maxChannelsLastTaps = 25

// maxChannelsLastPlane is the largest output plane (OH·OW) written in
// channels-last order. On larger planes the N×C×H×W kernels fill their
// vectors and were faster: MobileNetV2 at batch 1, one Zen 5 thread, its
// 112×112 and 56×56 layers took 0.79 ms more in channels-last order, its
// 28×28 ones 0.06 ms more, its 14×14 and 7×7 ones 0.19 ms less.
const maxChannelsLastPlane = 256

// ChannelsLastConv implements device.ChannelsLastConvKernels: float32
// only; depthwise convolutions of up to maxChannelsLastTaps taps from and
// to channels-last order; 1×1 convolutions (unit stride, no padding) from
// channels-last order to either; any one-group convolution from
// N×C×H×W images into channels-last order.
func (k kernels) ChannelsLastConv(p device.ConvParams, w device.Buffer, inCL, outCL bool) bool {
	wb, ok := w.(*Buffer)
	if !ok || wb.dt != device.Float32 || !(inCL || outCL) {
		return false
	}
	s := newConvShape(p)
	if outCL && s.l > maxChannelsLastPlane {
		return false
	}
	switch {
	case s.depthwise():
		return inCL && outCL && s.KH*s.KW <= maxChannelsLastTaps
	case s.Groups != 1:
		return false
	case inCL:
		return s.pointwise()
	}
	return true
}

// Conv2DChannelsLast implements device.ChannelsLastConvKernels. It panics
// on a convolution ChannelsLastConv does not take or on buffers of
// another type.
func (k kernels) Conv2DChannelsLast(p device.ConvParams, inCL, outCL bool, act device.Activation, y, x, w, bias, res device.Buffer) {
	if !k.ChannelsLastConv(p, w, inCL, outCL) {
		panic(fmt.Sprintf("cpu: Conv2DChannelsLast of %+v (input channels-last %v, output %v) on %v weights: not a convolution ChannelsLastConv takes",
			p, inCL, outCL, buf(w).dt))
	}
	for _, b := range []device.Buffer{y, x, bias, res} {
		if b != nil && buf(b).dt != device.Float32 {
			panic(fmt.Sprintf("cpu: Conv2DChannelsLast of float32 weights with a %v buffer", buf(b).dt))
		}
	}
	s := newConvShape(p)
	if s.N == 0 || s.l == 0 || s.OutC == 0 {
		return
	}
	var b, r []float32
	if bias != nil {
		b = buf(bias).f32[:s.OutC]
	}
	if res != nil {
		r = buf(res).f32[:s.N*s.imgOut]
	}
	if s.depthwise() {
		depthwiseChannelsLast(k.d, s, act, buf(y).f32, buf(x).f32, buf(w), b, r)
		return
	}
	conv2dPositionsMajor(k.d, s, pmLayout{inCL: inCL, outCL: outCL}, act, buf(y).f32, buf(x).f32, b, r, buf(w))
}

// depthwiseChannelsLast computes y = act(conv(x, w) + bias + res) for a
// depthwise convolution from and to channels-last order (bias and res may
// be nil): a task is one output row of an image, all its channels, or a
// group of blocks of 16 of them when the rows do not split evenly among
// the workers (7 rows on 2 workers: 3 and 4), as many groups as make
// them do (BenchmarkDepthwiseChannelsLast, 2 Zen 5 threads: 7×7×960
// 9.5–9.9 → 9.2–9.3 µs; splitting the rows of every 7×7 and 14×14 layer
// by channels cost MobileNetV2 3% at batch 1); its positions
// cut where the taps inside the image change (a 3×3 layer's first and
// last column), each piece one direct.RowChannelsLast call. The weights
// are read tap-major (the KH·KW taps, each C values), kept so with
// constant weights.
func depthwiseChannelsLast(dev *Device, s convShape, act device.Activation, y, x []float32, wb *Buffer, bias, res []float32) {
	kk := s.KH * s.KW
	taps, held := derived(wb, derivedKey{kind: channelsLastTaps, outC: s.C, taps: kk}, kk*s.C, func(f []float32) {
		gemm.Transpose(f, s.C, wb.f32, kk, s.C, kk) // C×KH·KW → KH·KW×C
	})
	defer held.release()
	if bias == nil {
		sc := getScratch[float32](s.C)
		defer putScratch(sc)
		clear(sc.s)
		bias = sc.s
	}
	rows, blocks := s.N*s.oh, (s.C+direct.Lanes-1)/direct.Lanes
	groups := 1
	for w := dev.numWorkers(); groups < blocks && (rows*groups)%w != 0 && rows*groups < 8*w; {
		groups++
	}
	perGroup := (blocks + groups - 1) / groups
	groups = (blocks + perGroup - 1) / perGroup
	convAct := act
	if res != nil {
		convAct = device.ActNone
	}
	launch(dev, rows*groups, s.ow*kk*perGroup*direct.Lanes, depthwiseCLArgs{s: s, act: convAct, y: y, x: x, taps: taps, bias: bias,
		groups: groups, perGroup: perGroup * direct.Lanes})
	if res != nil {
		launch(dev, len(y), 1, addActArgs[float32]{act, y, y, res})
	}
}

// depthwiseCLArgs compute depthwiseChannelsLast: task index u is output
// row u/groups (of all images' rows) for channels [g·perGroup,
// (g+1)·perGroup), g = u%groups.
type depthwiseCLArgs struct {
	s                convShape
	act              device.Activation
	y, x, taps, bias []float32
	groups, perGroup int
}

// clSegment is a run [j0, j1) of an output row's positions whose taps
// inside the image are the columns kw with bit kw of kw set.
type clSegment struct {
	j0, j1 int
	kw     uint64
}

// columnSegments appends to segs the runs of an output row's positions
// that read the same columns of taps.
func columnSegments(s convShape, segs []clSegment) []clSegment {
	for j := range s.ow {
		var m uint64
		for kw := range s.KW {
			if iw := j*s.StrideW + kw*s.DilW - s.PadW; iw >= 0 && iw < s.W {
				m |= 1 << kw
			}
		}
		if k := len(segs); k > 0 && segs[k-1].kw == m {
			segs[k-1].j1 = j + 1
		} else {
			segs = append(segs, clSegment{j, j + 1, m})
		}
	}
	return segs
}

func (a *depthwiseCLArgs) run(lo, hi int) {
	s := a.s
	var segBuf [2*maxChannelsLastTaps + 1]clSegment
	segs := columnSegments(s, segBuf[:0])
	var inOff, wOff [maxChannelsLastTaps]int
	clo, chi := clampOf(a.act)
	for u := lo; u < hi; u++ {
		row, g := u/a.groups, u%a.groups
		n, i := row/s.oh, row%s.oh
		c0 := g * a.perGroup
		c1 := min(s.C, c0+a.perGroup)
		img := a.x[n*s.imgIn:]
		for _, sg := range segs {
			nt := 0
			for kh := range s.KH {
				ih := i*s.StrideH + kh*s.DilH - s.PadH
				if ih < 0 || ih >= s.H {
					continue
				}
				for kw := range s.KW {
					if sg.kw&(1<<kw) == 0 {
						continue
					}
					iw := sg.j0*s.StrideW + kw*s.DilW - s.PadW
					inOff[nt] = (ih*s.W+iw)*s.C + c0
					wOff[nt] = (kh*s.KW+kw)*s.C + c0
					nt++
				}
			}
			out := a.y[((n*s.oh+i)*s.ow+sg.j0)*s.OutC+c0:]
			direct.RowChannelsLast(out, s.OutC, img, s.StrideW*s.C, a.taps, a.bias[c0:], inOff[:nt], wOff[:nt], sg.j1-sg.j0, c1-c0, clo, chi)
		}
	}
}

// rowsEpilogue sets out = act(out + bias + res) on rows [0, rows) of out,
// ld values each, where column c is output channel c (channels-last
// outputs); res (nil: none) is laid out as out. The operations are
// planesEpilogue's, in its order: the bias, the residual, then the
// activation, each one call over the block.
func rowsEpilogue(act device.Activation, bias, out, res []float32, rows, ld int) {
	blk := out[:rows*ld]
	if bias != nil {
		vec.AddRows(blk, blk, bias[:ld])
	}
	if res != nil {
		vec.Add(blk, blk, res[:rows*ld])
	}
	actInPlace(act, blk)
}

// GlobalAvgPoolChannelsLast implements device.ChannelsLastPoolKernels: an
// image's rows of channels summed four at a time (vec.SumRows), then
// scaled, one image per task index. mobilenet_v2's pooling of 7×7×1280 at
// batch 1 takes a few microseconds this way; its planes, one float64 sum
// per channel (Reduce), took 17 µs in the model.
func (k kernels) GlobalAvgPoolChannelsLast(y, x device.Buffer, n, positions, channels int) {
	noHalf("GlobalAvgPoolChannelsLast", y, x)
	if positions <= 0 {
		panic(fmt.Sprintf("cpu: GlobalAvgPoolChannelsLast over %d positions", positions))
	}
	switch buf(y).dt {
	case device.Float32:
		launch(k.d, n, positions*channels, clPoolArgs[float32]{buf(y).f32[:n*channels], buf(x).f32[:n*positions*channels], positions, channels})
	case device.Float64:
		launch(k.d, n, positions*channels, clPoolArgs[float64]{buf(y).f64[:n*channels], buf(x).f64[:n*positions*channels], positions, channels})
	default:
		panic(dtypeMsg("GlobalAvgPoolChannelsLast", buf(y).dt))
	}
}

// clPoolArgs compute GlobalAvgPoolChannelsLast: task index i is image i.
type clPoolArgs[T float] struct {
	y, x                []T
	positions, channels int
}

func (a *clPoolArgs[T]) run(lo, hi int) {
	scale := 1 / T(a.positions)
	for i := lo; i < hi; i++ {
		dst := a.y[i*a.channels : (i+1)*a.channels]
		img := a.x[i*a.positions*a.channels : (i+1)*a.positions*a.channels]
		clear(dst)
		if d32, ok := any(dst).([]float32); ok {
			vec.SumRows(d32, any(img).([]float32))
			vec.MulScalar(d32, d32, float32(scale))
			continue
		}
		for p := range a.positions {
			for c, v := range img[p*a.channels : (p+1)*a.channels] {
				dst[c] += v
			}
		}
		for c := range dst {
			dst[c] *= scale
		}
	}
}
