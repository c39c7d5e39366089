package cpu

import (
	"slices"

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
// measured faster than im2col (BenchmarkDirect: 1.3–3.2× on ResNet-20's,
// ResNet-8's and LeNet-5's layers and a 7×7 stem): at least 6 output
// channels (fewer leave most of the 8-row block empty) and 16 input
// channel·taps (a 3×3 kernel over one channel ran at 0.6× of im2col), and
// at most 64 channels of 3×3 each way, past which the GEMMs of im2col and
// Winograd run closer to peak. A strided convolution needs 27 channel·taps
// (its four phases are filled and its output copied out for few
// multiply-adds per block): mobilenet_v2's stem (3 channels of 3×3,
// stride 2, 224×224) ran 23% faster through im2col once, before the
// in-place and register-storing kernels; with them, 2 Zen 5 threads
// (BenchmarkConvSingleImage), it runs 6% faster direct at batch 1
// (91 → 86 µs) and 12% at batch 32 (4.0–4.3 → 3.5–3.65 ms), 11% and 9%
// with AVX-512 hidden (133 → 118 µs, 4.9 → 4.45 ms); with AVX-512 it
// now takes the stem path first (useStem), and without it, it still
// goes direct. resnet18's 7×7 stem (147) is direct too, 20–29% faster
// than im2col at batch 32.
//
// On CPUs with AVX2 but not AVX-512 Block and GradBlock run in AVX2 but
// the in-place and register-storing kernels do not (every layer lays out
// padded phases and copies its blocks out): there the
// direct path ran at 1.0–1.9× of im2col on the same layers (2 Zen 5
// threads with AVX-512 hidden), except on 7×7 output planes: 72 positions
// computed for 49 outputs, and each image's phases laid out and its
// blocks copied out in runs of 7, against im2col's masked copies
// (SamePlan.Im2col): 0.40–0.55× with 16 to 64 channels, 0.60× for
// ResNet-20's 32→64 stride-2 layer. Planes under 100 outputs go through
// im2col there, and so do strided ones on every CPU: with AVX-512 that
// 32→64 layer (7×7 outputs, four phases laid out per image) ran at 0.46×
// of im2col (2.48 against 1.15 ms).
func useDirect(s convShape) bool {
	kk := s.KH * s.KW
	least := 16
	strided := s.StrideH > 1 || s.StrideW > 1
	if strided {
		least = 27
	}
	if s.oh*s.ow < 100 && (strided || !direct.Fast()) {
		return false
	}
	return direct.FastBlocks() && s.Groups == 1 && kk > 1 && s.oh > 0 && s.ow > 0 &&
		s.OutC >= 6 && s.OutC <= 64 && s.C*kk >= least && s.C*kk <= 64*9
}

// directGeom is the layout of one direct convolution.
type directGeom struct {
	dwGeom
	nTaps     int // kernel taps (their offsets: dwGeom.taps)
	maxTap    int // the largest offset of a tap in a channel's phases
	chanLen   int // a channel's phases, the kernel's cstride
	q, qPad   int // output positions (oh rows of wq), rounded up to whole blocks
	qUsed     int // the positions up to the last output (the last row's past ow are not needed)
	inLen     int // the input of one image, with the slack the last block reads
	ocBlocks  int
	packedLen int // packed weights: ocBlocks × C × taps × direct.Rows
}

func newDirectGeom(s convShape) directGeom {
	g := directGeom{dwGeom: newDWGeom(s)}
	var tapBuf [maxStackTaps]int
	taps := g.taps(tapBuf[:0])
	g.nTaps, g.maxTap = len(taps), slices.Max(taps)
	g.chanLen = g.phaseLen * g.nPhase
	g.q = s.oh * g.wq
	g.qUsed = max(0, (s.oh-1)*g.wq+s.ow)
	g.qPad = (g.q + direct.Cols - 1) / direct.Cols * direct.Cols
	g.inLen = max(s.C*g.chanLen, (s.C-1)*g.chanLen+g.maxTap+g.qPad)
	g.ocBlocks = (s.OutC + direct.Rows - 1) / direct.Rows
	g.packedLen = filterBlocksLen(s, g.nTaps, direct.Rows)
	return g
}

// conv2dDirect computes y = act(conv(x, w) + bias) (bias may be nil) for a
// convolution of one group.
func conv2dDirect(dev *Device, s convShape, act device.Activation, y, x, w, bias []float32, wb *Buffer) {
	g := newDirectGeom(s)
	wp, held := g.packFilters(dev, w, wb)
	defer held.release()
	directRun(dev, s, g, act, y, x, wp, bias)
}

// conv2dDirectGradInput computes the input gradient of a unit-stride
// convolution as the direct convolution of dy with the filters rotated by
// 180° and their channels swapped, dy padded by dil·(k-1) - pad.
func conv2dDirectGradInput(dev *Device, s convShape, dx, dy, w []float32) {
	t := s.gradInputShape()
	g := newDirectGeom(t)
	wp := getScratch[float32](g.packedLen)
	defer putScratch(wp)
	packFilterBlocks(dev, wp.s, w, gradInputFilters(s), t, g.nTaps, direct.Rows)
	directRun(dev, t, g, device.ActNone, dx, dy, wp.s, nil)
}

// directGradInput reports whether s's input gradient takes the direct path.
func (s convShape) directGradInput() bool {
	return s.gradInputIsConv() && useDirect(s.gradInputShape())
}

// packFilters packs the filters w (OutC×C×KH×KW) of the forward
// convolution for the direct kernels (blocks of direct.Rows output
// channels, see constantFilterBlocks); held.release gives the packing
// back.
func (g directGeom) packFilters(dev *Device, w []float32, wb *Buffer) (wp []float32, held heldForm) {
	return constantFilterBlocks(dev, g.s, w, wb, directFilters, direct.Rows)
}

// constantFilterBlocks returns the filters w of s (OutC×C×KH×KW, as
// stored) packed by packFilterBlocks in blocks of rows output channels,
// a derived form of the given kind: once for all calls when wb, the
// buffer holding w, is constant (see derived).
func constantFilterBlocks(dev *Device, s convShape, w []float32, wb *Buffer, kind derivedKind, rows int) ([]float32, heldForm) {
	taps := s.KH * s.KW
	key := derivedKey{kind: kind, outC: s.OutC, inC: s.C, taps: taps, alt: s.Groups}
	return derived(wb, key, filterBlocksLen(s, taps, rows), func(wp []float32) {
		packFilterBlocks(dev, wp, w, forwardFilters(s, taps), s, taps, rows)
	})
}

// filterLayout says where packFilterBlocks finds element (oc, c, t) of
// the filters, output channel oc, input channel c, tap t: at
// w[at + oc·perOut + c·perIn + t·perTap].
type filterLayout struct{ at, perOut, perIn, perTap int }

// forwardFilters is the layout of the filters of s as stored,
// OutC×C×taps.
func forwardFilters(s convShape, taps int) filterLayout {
	return filterLayout{perOut: s.C * taps, perIn: taps, perTap: 1}
}

// gradInputFilters is the layout of the filters of the convolution that
// computes s's input gradient (s.gradInputShape()) inside s's: its filter
// (c, oc) is s's filter (oc, c), the taps in reverse order.
func gradInputFilters(s convShape) filterLayout {
	kk := s.KH * s.KW
	return filterLayout{at: kk - 1, perOut: kk, perIn: s.C * kk, perTap: -1}
}

// packFilterBlocks lays the filters w of s (laid out as l says) out for
// the direct kernels: blocks of rows output channels (direct.Rows for
// Block, direct.VecRows for VecBlocks), then input channels, then taps,
// the block's weights side by side (zero past OutC), the blocks shared
// out between the workers. A training step packs the filters of every
// direct convolution and input gradient again: through a function call
// per element, on the calling goroutine alone, it took 1% of ResNet-20's
// step.
func packFilterBlocks(dev *Device, wp, w []float32, l filterLayout, s convShape, taps, rows int) {
	launch(dev, ceilDiv(s.OutC, rows), s.C*taps*rows, packArgs{wp: wp, w: w, l: l, outC: s.OutC, inC: s.C, taps: taps, rows: rows})
}

// filterBlocksLen is the length of the filters of s packed by
// packFilterBlocks in blocks of rows output channels: ceil(OutC/rows)
// blocks of C × taps × rows.
func filterBlocksLen(s convShape, taps, rows int) int {
	return ceilDiv(s.OutC, rows) * s.C * taps * rows
}

// packArgs are the arguments of packFilterBlocks: task index ob is block
// ob of rows output channels.
type packArgs struct {
	wp, w                 []float32
	l                     filterLayout
	outC, inC, taps, rows int
}

func (a *packArgs) run(lo, hi int) {
	l, per := a.l, a.inC*a.taps*a.rows // floats per block of output channels
	for ob := lo; ob < hi; ob++ {
		i := ob * per
		for c := range a.inC {
			for t := range a.taps {
				for r := range a.rows {
					var v float32
					if oc := ob*a.rows + r; oc < a.outC {
						v = a.w[l.at+oc*l.perOut+c*l.perIn+t*l.perTap]
					}
					a.wp[i] = v
					i++
				}
			}
		}
	}
}

// directRun runs the direct convolution with packed weights wp, one task
// per image and block of output channels, or per image and block of
// positions when the outputs are stored from the registers (storesRows);
// on the in-place path the planes' sparse tails
// (direct.SamePlan.SparseTail) then go through directTails.
func directRun(dev *Device, s convShape, g directGeom, act device.Activation, y, x, wp, bias []float32) {
	a := directArgs{s: s, g: g, act: act, y: y, x: x, wp: wp, bias: bias}
	var q0, nq int
	if a.inPlace() {
		q0, nq = samePlanFor(s).SparseTail()
		a.tailsLater = nq > 0
	}
	if a.storesRows() {
		a.rows = rowsPlanFor(s.oh, s.ow, g.wq)
		launch(dev, s.N*a.rows.Blocks(), direct.Cols*g.ocBlocks*direct.Rows*s.C*g.nTaps, a)
	} else {
		launch(dev, s.N*g.ocBlocks, g.qPad*direct.Rows*s.C*g.nTaps, a)
	}
	if nq > 0 {
		directTails(dev, s, g, act, y, x, wp, bias, q0, nq)
	}
}

// directTails computes outputs [q0, q0+nq) of every output plane of an
// in-place direct convolution, which runInPlace leaves out (see
// direct.SamePlan.SparseTail), for all images at once: one GEMM of the
// filters (unpacked from wp) with the inputs those outputs read, gathered
// side by side, then the bias and clamp as Block applies them. Block
// would spend a vector of 16 lanes per image, output block, channel and
// tap on one or two outputs: a quarter of the work of a 7×7 layer.
func directTails(dev *Device, s convShape, g directGeom, act device.Activation, y, x, wp, bias []float32, q0, nq int) {
	k, cols := s.C*g.nTaps, s.N*nq
	sc := getScratch[float32](s.OutC*k + k*cols + s.OutC*cols)
	defer putScratch(sc)
	t := tailArgs{s: s, g: g, act: act, y: y, x: x, wp: wp, bias: bias, q0: q0, nq: nq,
		a: sc.s[:s.OutC*k], b: sc.s[s.OutC*k:][:k*cols], c: sc.s[s.OutC*k+k*cols:][:s.OutC*cols]}
	// The filters, the gathered inputs and the results are each copied by
	// all workers, by output channels or by images: these copies ran on
	// the calling goroutine alone, 1.2% of ResNet-20's training step.
	t.step = tailFilters
	launch(dev, s.OutC, k, t)
	t.step = tailGather
	launch(dev, s.N, k*nq, t)
	gemmOn(dev, false, false, s.OutC, cols, k, 1, t.a, k, t.b, cols, 0, t.c, cols)
	t.step = tailScatter
	launch(dev, s.N, s.OutC*nq, t)
}

// tailArgs are the arguments of directTails's steps: a holds the filters
// (OutC × (channel, tap)), b the inputs the tails read (a row per (channel,
// tap), column n·nq+e for output q0+e of image n), c their product.
type tailArgs struct {
	s              convShape
	g              directGeom
	act            device.Activation
	y, x, wp, bias []float32
	q0, nq         int
	a, b, c        []float32
	step           tailStep
}

// tailStep is the step of directTails a tailArgs task runs.
type tailStep int

const (
	tailFilters tailStep = iota // output channels [lo, hi) of the filters into a, from the blocks of Rows of wp
	tailGather                  // images [lo, hi) of the inputs into b
	tailScatter                 // images [lo, hi) of the product, biased and clamped, into y
)

func (t *tailArgs) run(lo, hi int) {
	s, nt, nq := t.s, t.g.nTaps, t.nq
	k, cols := s.C*nt, s.N*nq
	switch t.step {
	case tailFilters:
		for oc := lo; oc < hi; oc++ {
			ob, r := oc/direct.Rows, oc%direct.Rows
			for j := range k {
				t.a[oc*k+j] = t.wp[(ob*k+j)*direct.Rows+r]
			}
		}
	case tailGather:
		for j := range k {
			ch, tap := j/nt, j%nt
			row := t.b[j*cols:][:cols]
			for e := range nq {
				q := t.q0 + e
				ih, iw := q/s.W+(tap/s.KW)*s.DilH-s.PadH, q%s.W+(tap%s.KW)*s.DilW-s.PadW
				inside := ih >= 0 && ih < s.H && iw >= 0 && iw < s.W
				for n := lo; n < hi; n++ {
					var v float32
					if inside {
						v = t.x[n*s.imgIn+ch*s.inPlane+ih*s.W+iw]
					}
					row[n*nq+e] = v
				}
			}
		}
	case tailScatter:
		lower, upper := clampOf(t.act)
		clamp := t.bias != nil || t.act != device.ActNone // as runInPlace gives Block a bias
		for oc := range s.OutC {
			var bv float32
			if t.bias != nil {
				bv = t.bias[oc]
			}
			for n := lo; n < hi; n++ {
				for e := range nq {
					v := t.c[oc*cols+n*nq+e]
					if clamp {
						v = min(max(v+bv, lower), upper) // NaN: Go's min and max keep it, as Block
					}
					t.y[n*s.imgOut+oc*s.l+t.q0+e] = v
				}
			}
		}
	}
}

// directArgs are the arguments of directRun: task index i is block
// i%ocBlocks of output channels of image i/ocBlocks (runRows: see there).
// A worker's tasks are consecutive, so it lays out each image's phases
// once.
type directArgs struct {
	s              convShape
	g              directGeom
	act            device.Activation
	y, x, wp, bias []float32
	tailsLater     bool             // runInPlace leaves the planes' sparse tails to directTails
	rows           *direct.RowsPlan // runRows's stores, when storesRows
}

func (a *directArgs) run(lo, hi int) {
	switch {
	case a.inPlace():
		a.runInPlace(lo, hi)
	case a.rows != nil:
		a.runRows(lo, hi)
	default:
		a.runPhases(lo, hi)
	}
}

// storesRows reports whether a convolution that does not go in place
// takes runRows: with the assembly, phase rows of at least a vector
// (direct.NewRowsPlan) and whole blocks of output channels.
func (a *directArgs) storesRows() bool {
	return !a.inPlace() && direct.Fast() && a.g.wq >= direct.Lanes && a.s.OutC%direct.Rows == 0
}

// rowsPlans holds the plans of runRows's stores.
var rowsPlans planCache[[3]int, *direct.RowsPlan]

// rowsPlanFor returns the plan of oh output rows of ow laid out wq apart.
func rowsPlanFor(oh, ow, wq int) *direct.RowsPlan {
	return rowsPlans.get([3]int{oh, ow, wq}, func() *direct.RowsPlan { return direct.NewRowsPlan(oh, ow, wq) })
}

// runRows is run with each block's outputs stored from the registers
// (direct.RowsPlan) rather than copied out of a scratch buffer, task index
// i being block i%Blocks of Cols positions of image i/Blocks. A worker
// lays out the phase rows that its blocks of an image read (all of them
// when it has the whole image), then computes them one block of output
// channels at a time, so that the stores run along Rows planes. On
// resnet18's 7×7 stem at batch 1 (2 threads, inside the model) runPhases
// took 0.72–0.75 ms: each worker laid out the whole 224×224 image (0.1 ms)
// and copied its blocks of channels out to memory (0.15 ms). runRows takes
// 0.62–0.64 ms.
func (a *directArgs) runRows(lo, hi int) {
	s, g, p := a.s, a.g, a.rows
	blocks := p.Blocks()
	sc := getScratch[float32](g.inLen)
	defer putScratch(sc)
	in := sc.s[:g.inLen]
	clear(in[s.C*g.chanLen:]) // the slack past the last channel
	var tapBuf [maxStackTaps]int
	taps, nt := g.taps(tapBuf[:0]), g.nTaps
	var zero [direct.Rows]float32 // the bias of an activation without one
	lower, upper := clampOf(a.act)
	reach := (s.KH - 1) * s.DilH / s.StrideH // phase rows a tap reads below its output row
	if g.shared {
		reach++ // and the leading zeros of the row after those
	}
	for task := lo; task < hi; {
		n, b0 := task/blocks, task%blocks
		b1 := min(blocks, b0+hi-task)
		task += b1 - b0
		r0, r1 := b0*direct.Cols/g.wq, min(s.oh, (b1*direct.Cols-1)/g.wq+1)
		for c := range s.C {
			ph, x := in[c*g.chanLen:(c+1)*g.chanLen], a.x[(n*s.C+c)*s.inPlane:][:s.inPlane]
			if r0 == 0 && r1 == s.oh {
				fillPhases(g.dwGeom, ph, x)
			} else {
				fillPhaseRows(g.dwGeom, ph, x, r0, min(g.phaseLen/g.wq, r1+reach))
			}
		}
		for ob := range g.ocBlocks {
			var bias []float32
			switch {
			case a.bias != nil:
				bias = a.bias[ob*direct.Rows:]
			case a.act != device.ActNone:
				bias = zero[:]
			}
			w := a.wp[ob*s.C*nt*direct.Rows:]
			out := a.y[(n*s.OutC+ob*direct.Rows)*s.l:]
			p.BlockRange(out, s.l, in, g.chanLen, taps, w, s.C, b0, b1, bias, lower, upper)
		}
	}
}

// runPhases is run through each image's padded phases and a block of
// output copied out with its bias and activation (direct.CopyRowsBiasClamp,
// one call per output channel).
func (a *directArgs) runPhases(lo, hi int) {
	s, g := a.s, a.g
	lower, upper := clampOf(a.act)
	sc := getScratch[float32](g.inLen + direct.Rows*g.qPad)
	defer putScratch(sc)
	in, out := sc.s[:g.inLen], sc.s[g.inLen:]
	clear(in[s.C*g.chanLen:]) // the slack past the last channel
	var tapBuf [maxStackTaps]int
	taps, nt := g.taps(tapBuf[:0]), g.nTaps
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
		for q := 0; q < g.qUsed; q += direct.Cols {
			direct.BlockCols(out[q:], g.qPad, in[q:], g.chanLen, taps, w, s.C, min(direct.Cols, g.qUsed-q))
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
			src := out[r*g.qPad:]
			if a.bias == nil && a.act == device.ActNone {
				copyRows(plane, s.ow, src, g.wq, s.oh, s.ow, false)
				continue
			}
			direct.CopyRowsBiasClamp(plane, s.ow, src, g.wq, s.oh, s.ow, b, lower, upper)
		}
	}
}

// directGradWeight reports whether s's weight gradient takes the direct
// path: a direct convolution with unit stride, output planes of 100
// positions or more, and at most 24·24·9 weights. Smaller planes and
// strided convolutions lay out far more phase positions than they have
// outputs (7×7: 90 for 49; stride 2: four phases), and ran at 0.5–0.6× of
// im2col (BenchmarkDirect); so did 32→64 channels (0.7×), whose many
// blocks each re-read the chunk from L2. Against im2col's weight gradient
// (see gradWeightArgs.run), 2 Zen 5 threads: 16→16 channels on 28×28
// 1.2–1.3× with AVX-512 and 1.0–1.1× with AVX2 (GradBlock in four passes
// there), 24→24 1.45× and 1.0–1.05×, LeNet-5's 1.85–2.2× and 1.1–1.8×;
// 32→32 on 14×14 0.7–0.75× on both. Since im2col's weight gradient
// became col·dyᵀ and the rows of phases share their padding, AVX2 (with
// AVX-512 hidden) ran 16→16 and 24→24 channels at 0.90–0.91× and
// 0.95–0.96× of im2col and LeNet-5's 1→6 and 6→16 at 1.4× and 1.06×:
// without AVX-512 the direct path takes fewer than 16 input channels only.
func (s convShape) directGradWeight() bool {
	if !direct.Fast() && s.C >= 16 {
		return false
	}
	return useDirect(s) && s.StrideH == 1 && s.StrideW == 1 && s.l >= 100 && s.OutC*s.ckk <= 24*24*9
}

// conv2dDirectGradWeight computes the weight gradient of a convolution
// that takes the direct path. The images are cut into at most
// gradWeightParts fixed chunks, as conv2dGradWeightIm2col does, whose sums
// (float64) are added in chunk order, whatever the number of workers. A
// chunk's input is laid out channel by channel, each channel's phases of
// every image of the chunk one after the other (chanLen apart), and its
// output gradient likewise, each image chanLen wide with zeros past the
// output rows, so that a (channel, tap) pair reads the whole chunk as one
// run: direct.GradBlock then computes 4 output channels × 6 pairs over all
// of the chunk's positions at once.
func conv2dDirectGradWeight(dev *Device, s convShape, dw, dy, x []float32) {
	g := newDirectGeom(s)
	size := s.OutC * s.C * g.nTaps
	if s.N == 0 {
		clear(dw[:size])
		return
	}
	chunk, nparts := gradWeightChunks(s.N)
	psc := getScratch[float64](nparts * size)
	defer putScratch(psc)
	launch(dev, nparts, chunk*g.qPad*s.OutC*s.C*g.nTaps, directGradArgs{s: s, g: g, dy: dy, x: x, partials: psc.s, chunk: chunk})
	sumPartsInOrder(dev, dw[:size], psc.s, nparts)
}

// gradWeightChunks returns the images per chunk of a weight gradient
// summed in fixed chunks of the batch (at most gradWeightParts, whatever
// the number of workers), and the number of chunks.
func gradWeightChunks(images int) (chunk, nparts int) {
	chunk = ceilDiv(images, gradWeightParts)
	return chunk, ceilDiv(images, chunk)
}

// sumPartsInOrder sets dw[i] to the sum of the chunks' partial sums
// partials[p·len(dw) + i], p < nparts, added in float64 in chunk order:
// the same bits whatever the number of workers, which share the elements
// out.
func sumPartsInOrder(dev *Device, dw []float32, partials []float64, nparts int) {
	launch(dev, len(dw), nparts, sumPartsArgs{dw: dw, partials: partials, nparts: nparts})
}

// sumPartsArgs are the arguments of sumPartsInOrder: task index i is
// element i of dw.
type sumPartsArgs struct {
	dw       []float32
	partials []float64
	nparts   int
}

func (a *sumPartsArgs) run(lo, hi int) {
	size := len(a.dw)
	for i := lo; i < hi; i++ {
		var v float64
		for p := range a.nparts {
			v += a.partials[p*size+i]
		}
		a.dw[i] = float32(v)
	}
}

// directGradArgs are the arguments of conv2dDirectGradWeight: task index p
// sums images [p·chunk, (p+1)·chunk) into partials[p·size:].
type directGradArgs struct {
	s        convShape
	g        directGeom
	dy, x    []float32
	partials []float64
	chunk    int
}

func (a *directGradArgs) run(lo, hi int) {
	s, g := a.s, a.g
	var tapBuf [maxStackTaps]int
	taps, nt := g.taps(tapBuf[:0]), g.nTaps
	pairs := s.C * nt
	size := s.OutC * pairs
	rows := (s.OutC + direct.GradRows - 1) / direct.GradRows * direct.GradRows
	span := a.chunk * g.chanLen       // one channel of the chunk
	kn := (span + 15) / 16 * 16       // positions GradBlock runs over
	inLen := s.C*span + g.maxTap + kn // the last pairs read up to maxTap+kn past their channel
	sc := getScratch[float32](inLen + rows*kn)
	defer putScratch(sc)
	in := sc.s[:inLen]
	dyq := sc.s[inLen : inLen+rows*kn]
	var offs [direct.GradCols]int
	var sums [direct.GradRows * direct.GradCols]float64
	for p := lo; p < hi; p++ {
		acc := a.partials[p*size : (p+1)*size]
		clear(acc)
		n0, n1 := p*a.chunk, min((p+1)*a.chunk, s.N)
		clear(in[s.C*span:])
		clear(dyq) // the columns past ow, the rows past OutC, the images past n1
		for n := n0; n < n1; n++ {
			at := (n - n0) * g.chanLen
			for c := range s.C {
				fillPhases(g.dwGeom, in[c*span+at:][:g.chanLen], a.x[(n*s.C+c)*s.inPlane:][:s.inPlane])
			}
			for oc := range s.OutC {
				copyRows(dyq[oc*kn+at:], g.wq, a.dy[(n*s.OutC+oc)*s.l:][:s.l], s.ow, s.oh, s.ow, false) // the gaps are zero
			}
		}
		if n1-n0 < a.chunk { // a short last chunk: its missing images' phases are read with zero gradients
			for c := range s.C {
				clear(in[c*span+(n1-n0)*g.chanLen : (c+1)*span])
			}
		}
		for ob := 0; ob < rows; ob += direct.GradRows {
			for p0 := 0; p0 < pairs; p0 += direct.GradCols {
				for j := range offs {
					pair := min(p0+j, pairs-1) // past the end: a repeat, dropped
					offs[j] = pair/nt*span + taps[pair%nt]
				}
				direct.GradBlock(&sums, dyq[ob*kn:], kn, in, &offs, kn)
				for r := range min(direct.GradRows, s.OutC-ob) {
					for j := range min(direct.GradCols, pairs-p0) {
						acc[(ob+r)*pairs+p0+j] += sums[r*direct.GradCols+j]
					}
				}
			}
		}
	}
}

// convPoolDirect is Conv2DBiasActMaxPool on the direct path: per image,
// the direct convolution into a worker's scratch buffer, then the max
// pooling of each channel into y and argmax.
func convPoolDirect(dev *Device, s convShape, q device.PoolParams, act device.Activation, y []float32, argmax []int64, x, w, bias []float32, wb *Buffer) {
	g := newDirectGeom(s)
	wp, held := g.packFilters(dev, w, wb)
	defer held.release()
	launch(dev, s.N, s.imgOut*s.ckk, convPoolDirectArgs{s: s, g: g, q: q, act: act, y: y, argmax: argmax, x: x, wp: wp, bias: bias})
}

// convPoolDirectArgs are the arguments of convPoolDirect, one image per
// task index.
type convPoolDirectArgs struct {
	s              convShape
	g              directGeom
	q              device.PoolParams
	act            device.Activation
	y, x, wp, bias []float32
	argmax         []int64
}

func (a *convPoolDirectArgs) run(lo, hi int) {
	s := a.s
	one := s
	one.N = 1
	sc := getScratch[float32](s.imgOut)
	defer putScratch(sc)
	pl := a.q.OutH() * a.q.OutW()
	for n := lo; n < hi; n++ {
		conv := directArgs{s: one, g: a.g, act: a.act, y: sc.s, x: a.x[n*s.imgIn:][:s.imgIn], wp: a.wp, bias: a.bias}
		conv.run(0, a.g.ocBlocks)
		for c := range s.OutC {
			at := (n*s.OutC + c) * pl
			maxPoolPlane(a.q, a.y[at:at+pl], a.argmax[at:at+pl], sc.s[c*s.l:(c+1)*s.l])
		}
	}
}

// inPlace reports whether directArgs reads the input planes where they lie
// and writes the output planes directly (direct.SamePlan.BlockRange): unit
// stride with output rows as wide as the input's (ResNet-20's and the CNN's
// 3×3 layers, and their input gradients) and whole blocks of Rows output
// channels, with the AVX-512 kernels (an AVX2 SamePlan.BlockRange, its loads
// masked, ran ResNet-20's step slower than the padded phases). It skips
// laying out each image's padded phases and copying each block out, a
// quarter of ResNet-20's direct convolution time.
func (a *directArgs) inPlace() bool {
	return direct.Fast() && a.s.sameWidth() && a.s.OutC%direct.Rows == 0
}

// runInPlace is run for a directArgs that inPlace takes.
func (a *directArgs) runInPlace(lo, hi int) {
	s, nt := a.s, a.g.nTaps
	p := samePlanFor(s)
	var zero [direct.Rows]float32 // the bias of an activation without one
	lower, upper := clampOf(a.act)
	blocks := p.Blocks()
	if a.tailsLater {
		blocks-- // the last block, a sparse tail: directTails computes it
	}
	for task := lo; task < hi; task++ {
		n, ob := task/a.g.ocBlocks, task%a.g.ocBlocks
		var bias []float32
		switch {
		case a.bias != nil:
			bias = a.bias[ob*direct.Rows : (ob+1)*direct.Rows]
		case a.act != device.ActNone:
			bias = zero[:] // biasActSlice adds 0 too
		}
		w := a.wp[ob*s.C*nt*direct.Rows:]
		out := a.y[(n*s.OutC+ob*direct.Rows)*s.l:][:(direct.Rows-1)*s.l+s.l]
		in := a.x[n*s.imgIn:][:s.imgIn]
		var next []float32 // the next image of this worker's, prefetched with the image's last block of channels
		if ob == a.g.ocBlocks-1 && task+1 < hi {
			next = a.x[(n+1)*s.imgIn:][:s.imgIn]
		}
		p.BlockRange(out, s.l, in, next, s.inPlane, w, s.C, 0, blocks, bias, lower, upper)
	}
}
