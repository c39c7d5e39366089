package cpu

import (
	"math"
	"slices"
	"sync"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/direct"
	"github.com/hora-dl/hora/device/cpu/internal/vec"
)

// depthwise reports whether s is a depthwise convolution (MobileNet's):
// groups of one input and one output channel. It runs directly, plane by
// plane, rather than as one tiny im2col and GEMM per group.
func (s convShape) depthwise() bool {
	return s.Groups > 1 && s.cg == 1 && s.ocg == 1
}

// conv2dDepthwise computes y = act(conv(x, w) + bias) for a depthwise
// convolution (bias may be nil), one N×C plane per task index. Its
// reference loop, per plane (n, c) and output position (i, j), is
//
//	acc := 0
//	for kh, kw: if the input (i*StrideH-PadH+kh*DilH, j*StrideW-PadW+kw*DilW) is inside the image:
//		acc += w[c,0,kh,kw] * x[n,c,ih,iw]
//	y[n,c,i,j] = act(acc + bias[c])
//
// accumulated in the element type in (kh, kw) order, a row of outputs at a
// time.
//
// One large image (planes of bandPositions outputs or more) that the
// in-place kernels take is split by bands of output rows, all channels
// each, one band per worker, instead of by planes (see depthwiseBands).
func conv2dDepthwise[T float](dev *Device, s convShape, act device.Activation, y, x, w, bias []T) {
	if y32, ok := any(y).([]float32); ok && depthwiseBands(s) {
		nb := dev.numWorkers()
		launch(dev, nb, s.imgOut*s.KH*s.KW/nb, depthwiseBandArgs{s: s, act: act, y: y32, x: any(x).([]float32), w: any(w).([]float32), bias: any(bias).([]float32), bands: nb})
		return
	}
	launch(dev, s.N*s.C, s.l*s.KH*s.KW, depthwiseArgs[T]{s: s, act: act, y: y, x: x, w: w, bias: bias})
}

// depthwiseBands reports whether conv2dDepthwise splits s by bands of
// output rows: one image whose output planes have at least bandPositions
// positions, in-place kernels. At batch 1 the 1×1 layers around a
// depthwise one split their image by bands of positions (conv2dSplit), so
// each worker finds the rows of its band in its own cache where a worker
// taking half the channels reads half of each plane from the other's.
// mobilenet_v2 at batch 1 (its 112×112 and 56×56 layers), 2 Zen 5
// vCPUs, 6 alternating pairs: 2.60 → 2.445 ms while the two ran on cores
// that share no cache (a cache line's round trip between them 380–400 ns
// against 80 ns otherwise; onnxruntime too takes 35% longer then), the
// same while they shared one (1.92 and 1.93 ms). With 28×28 planes too it
// ran 4% slower (2.46 → 2.56 ms).
func depthwiseBands(s convShape) bool {
	return s.N == 1 && s.l >= bandPositions && direct.Fast() && inPlaceDepthwise(s)
}

// bandPositions is the least output plane that depthwiseBands splits by
// bands of rows.
const bandPositions = 56 * 56

// depthwiseBandArgs are the arguments of conv2dDepthwise by bands: task
// index b is band b of bands, output rows [b·oh/bands, (b+1)·oh/bands).
type depthwiseBandArgs struct {
	s             convShape
	act           device.Activation
	y, x, w, bias []float32
	bands         int
}

func (a *depthwiseBandArgs) run(lo, hi int) {
	s := a.s
	for b := lo; b < hi; b++ {
		r0, r1 := b*s.oh/a.bands, (b+1)*s.oh/a.bands
		if r1 > r0 {
			depthwiseBand(s, a.act, a.y[r0*s.ow:], s.l, a.x, a.w, a.bias, r0, r1)
		}
	}
}

// depthwiseArgs are the arguments of conv2dDepthwise.
type depthwiseArgs[T float] struct {
	s             convShape
	act           device.Activation
	y, x, w, bias []T
}

func (a *depthwiseArgs[T]) run(lo, hi int) {
	if y32, ok := any(a.y).([]float32); ok && direct.Fast() && inPlaceDepthwise(a.s) {
		depthwiseInPlace(a.s, a.act, y32, any(a.x).([]float32), any(a.w).([]float32), any(a.bias).([]float32), lo, hi)
		return
	}
	depthwisePhases(a, lo, hi)
}

// depthwisePhases computes planes [lo, hi) through their padded phases
// (see dwGeom): the vector kernel over blocks of rows for float32, an axpy
// per tap otherwise.
func depthwisePhases[T float](a *depthwiseArgs[T], lo, hi int) {
	g := newDWGeom(a.s)
	var tapBuf [maxStackTaps]int
	taps := g.taps(tapBuf[:0])
	sc := getScratch[T](g.scratch())
	defer putScratch(sc)
	phases := g.phaseLen * g.nPhase
	ph, out := sc.s[:phases+direct.Lanes], sc.s[phases+direct.Lanes:]
	clear(ph[phases:]) // what the last vector of a block reads past the phases
	s, kk := a.s, a.s.KH*a.s.KW
	fast := direct.FastBlocks()
	lower, upper := clampOf(a.act)
	for plane := lo; plane < hi; plane++ {
		c := plane % s.C
		fillPhases(g, ph[:phases], a.x[plane*s.inPlane:(plane+1)*s.inPlane])
		var b T
		if a.bias != nil {
			b = a.bias[c]
		}
		wc := a.w[c*kk : (c+1)*kk]
		yp := a.y[plane*s.l : (plane+1)*s.l]
		if ph32, ok := any(ph).([]float32); ok && fast {
			// The vector kernel: every tap, the bias and the activation
			// in one pass over blocks of rows, wq wide.
			out32 := any(out).([]float32)
			for i0 := 0; i0 < s.oh; i0 += g.rows {
				i1 := min(i0+g.rows, s.oh)
				n := ((i1-i0)*g.wq + direct.Lanes - 1) / direct.Lanes * direct.Lanes
				direct.Depthwise(out32[:n], ph32[i0*g.wq:], taps, any(wc).([]float32), n, float32(b), lower, upper)
				copyRows(yp[i0*s.ow:], s.ow, out, g.wq, i1-i0, s.ow, false)
			}
			continue
		}
		for i0 := 0; i0 < s.oh; i0 += g.rows {
			i1 := min(i0+g.rows, s.oh)
			blk := out[:(i1-i0)*g.wq]
			clear(blk)
			for t, at := range taps {
				at += i0 * g.wq
				axpyT(blk, wc[t], ph[at:at+len(blk)])
			}
			for i := i0; i < i1; i++ {
				row, src := yp[i*s.ow:(i+1)*s.ow], blk[(i-i0)*g.wq:][:s.ow]
				if a.bias != nil || a.act != device.ActNone {
					biasActSlice(a.act, row, src, b)
				} else {
					copy(row, src)
				}
			}
		}
	}
}

// inPlaceDepthwise reports whether the vector kernels that read the input
// plane where it lies and write the output plane directly (no padded
// phases, no block of rows copied out) take s: unit stride with output
// rows as wide as the input's (direct.SamePlan: MobileNet's 3×3 layers,
// and the input gradient of every unit-stride 3×3 one), or a horizontal
// stride of 2 with kernel rows 3 wide and no horizontal dilation
// (direct.Stride2Plan: its downsampling layers). They sum the taps in the
// order, and with the zeros, of the phases' kernel: the same bits, at
// 2.0–3.2× its speed on MobileNet's layers (BenchmarkDepthwise, Zen 5).
func inPlaceDepthwise(s convShape) bool {
	stride2 := s.StrideW == 2 && s.KW == 3 && s.DilW == 1
	return s.sameWidth() || stride2
}

// sameWidth reports whether s has unit stride and output rows as wide as
// the input's: the geometry of direct.SamePlan.
func (s convShape) sameWidth() bool {
	return s.StrideH == 1 && s.StrideW == 1 && s.ow == s.W
}

// depthwiseInPlace computes planes [lo, hi) of a depthwise convolution
// that inPlaceDepthwise takes.
func depthwiseInPlace(s convShape, act device.Activation, y, x, w, bias []float32, lo, hi int) {
	lower, upper := clampOf(act)
	kk := s.KH * s.KW
	if s.sameWidth() {
		// One RunPlanes call per run of consecutive channels of an image.
		p := samePlanFor(s)
		for plane := lo; plane < hi; {
			c := plane % s.C
			n := min(hi-plane, s.C-c)
			var b []float32
			if bias != nil {
				b = bias[c : c+n]
			}
			p.RunPlanes(y[plane*s.l:], s.l, x[plane*s.inPlane:], s.inPlane, w[c*kk:], kk, b, n, lower, upper)
			plane += n
		}
		return
	}
	p := stride2PlanFor(s)
	ld := s.DilH * s.W // consecutive kernel rows
	for plane := lo; plane < hi; plane++ {
		c := plane % s.C
		xp, yp, wc := x[plane*s.inPlane:(plane+1)*s.inPlane], y[plane*s.l:(plane+1)*s.l], w[c*kk:(c+1)*kk]
		stride2Rows(s, p, yp, xp, wc, biasAt(bias, c), lower, upper, 0, s.oh, ld)
	}
}

// stride2Rows computes output rows [r0, r1) of one plane xp of a
// depthwise convolution with a horizontal stride of 2 (the second kind of
// inPlaceDepthwise) into yp, row r0 first: the rows that read every
// kernel row in one RunRows call, the rows at the edges one at a time.
// ld is the distance between the input rows of consecutive kernel rows.
func stride2Rows(s convShape, p *direct.Stride2Plan, yp, xp, wc []float32, b, lower, upper float32, r0, r1, ld int) {
	kernelRows := func(i int) (ih0, kh0, kh1 int) {
		// Kernel rows [kh0, kh1) read input rows ih0 + kh·DilH inside the image.
		ih0 = i*s.StrideH - s.PadH
		if ih0 < 0 {
			kh0 = (-ih0 + s.DilH - 1) / s.DilH
		}
		if last := s.H - 1 - ih0; last >= 0 {
			kh1 = min(s.KH, last/s.DilH+1)
		}
		return ih0, kh0, kh1
	}
	i0, i1 := r0, r1
	for i0 < r1 {
		if _, kh0, kh1 := kernelRows(i0); kh0 == 0 && kh1 == s.KH {
			break
		}
		i0++
	}
	for i1 > i0 {
		if _, kh0, kh1 := kernelRows(i1 - 1); kh0 == 0 && kh1 == s.KH {
			break
		}
		i1--
	}
	if i1 > i0 {
		ih0, _, _ := kernelRows(i0)
		p.RunRows(yp[(i0-r0)*s.ow:], s.ow, xp[ih0*s.W:], ld, s.StrideH*s.W, s.KH, i1-i0, wc, b, lower, upper)
	}
	for i := r0; i < r1; i++ {
		if i >= i0 && i < i1 {
			continue
		}
		ih0, kh0, kh1 := kernelRows(i)
		out := yp[(i-r0)*s.ow : (i-r0+1)*s.ow]
		if kh1 <= kh0 {
			p.Run(out, nil, ld, 0, nil, b, lower, upper)
			continue
		}
		p.Run(out, xp[(ih0+kh0*s.DilH)*s.W:], ld, kh1-kh0, wc[kh0*3:], b, lower, upper)
	}
}

// depthwiseBand computes output rows [r0, r1) of every channel of one
// image of a depthwise convolution that inPlaceDepthwise takes: channel
// c's rows go to out[c·ldo:], one after the other. They get the bits of
// depthwiseInPlace.
func depthwiseBand(s convShape, act device.Activation, out []float32, ldo int, x, w, bias []float32, r0, r1 int) {
	lower, upper := clampOf(act)
	kk := s.KH * s.KW
	if s.sameWidth() {
		// The band is the convolution of the input rows it reads, as a
		// plane of their own: rows [top, last) of the image, with the
		// padding above them that its first output rows read (none when
		// the band reads only padding below the image).
		top := min(max(0, r0-s.PadH), s.H)
		last := max(top, min(s.H, r1-s.PadH+(s.KH-1)*s.DilH))
		padTop := top - (r0 - s.PadH)
		p := samePlanOf(samePlanKey{last - top, s.W, r1 - r0, s.KH, s.KW, padTop, s.PadW, s.DilH, s.DilW})
		p.RunPlanes(out, ldo, x[top*s.W:], s.inPlane, w, kk, bias, s.C, lower, upper)
		return
	}
	p := stride2PlanFor(s)
	ld := s.DilH * s.W
	for c := range s.C {
		xp, yp, wc := x[c*s.inPlane:(c+1)*s.inPlane], out[c*ldo:], w[c*kk:(c+1)*kk]
		stride2Rows(s, p, yp, xp, wc, biasAt(bias, c), lower, upper, r0, r1, ld)
	}
}

// biasAt returns bias[c], or 0 without a bias.
func biasAt(bias []float32, c int) float32 {
	if bias == nil {
		return 0
	}
	return bias[c]
}

// planCache keeps the plans of the geometries seen (a direct.SamePlan
// costs a pass over the plane's positions to build, a third of a 112×112
// layer's time), up to maxPlans of them; past that, plans are built per
// call. It may be used by any number of goroutines.
type planCache[K comparable, P any] struct {
	mu sync.Mutex
	m  map[K]P
}

const maxPlans = 64

// get returns the plan of k, built by build the first time.
func (c *planCache[K, P]) get(k K, build func() P) P {
	c.mu.Lock()
	p, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return p
	}
	p = build()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[K]P{}
	}
	if len(c.m) < maxPlans {
		c.m[k] = p
	}
	return p
}

// samePlanKey is the geometry of a direct.SamePlan, stride2PlanKey that of
// a direct.Stride2Plan.
type (
	samePlanKey    struct{ h, w, oh, kh, kw, padH, padW, dilH, dilW int }
	stride2PlanKey struct{ width, ow, pad int }
)

var (
	samePlans    planCache[samePlanKey, *direct.SamePlan]
	stride2Plans planCache[stride2PlanKey, *direct.Stride2Plan]
)

// samePlanFor returns the plan of s's planes.
func samePlanFor(s convShape) *direct.SamePlan {
	return samePlanOf(samePlanKey{s.H, s.W, s.oh, s.KH, s.KW, s.PadH, s.PadW, s.DilH, s.DilW})
}

// samePlanOf returns the plan of the geometry k, built the first time.
func samePlanOf(k samePlanKey) *direct.SamePlan {
	return samePlans.get(k, func() *direct.SamePlan {
		return direct.NewSamePlan(k.h, k.w, k.oh, k.kh, k.kw, k.padH, k.padW, k.dilH, k.dilW)
	})
}

// stride2PlanFor returns the plan of s's output rows.
func stride2PlanFor(s convShape) *direct.Stride2Plan {
	k := stride2PlanKey{s.W, s.ow, s.PadW}
	return stride2Plans.get(k, func() *direct.Stride2Plan { return direct.NewStride2Plan(k.width, k.ow, k.pad) })
}

// dwGeom lays out one input plane of a depthwise convolution so that every
// kernel tap is one contiguous multiply-add over a block of output rows:
// the plane, zero-padded, is split into StrideH×StrideW phases (phase
// (rr, rc) holds padded rows rr, rr+StrideH, … and columns rc,
// rc+StrideW, …), each hq×wq. Output (i, j) of tap (kh, kw) then reads
// element (i+qh)·wq + j+qw of phase ((kh·DilH) mod StrideH, (kw·DilW) mod
// StrideW), where qh, qw are the quotients, so a block of output rows of
// width wq (the columns past OW are computed and dropped) is one axpy.
//
// With unit horizontal stride the rows share their padding columns: a row
// is PadW zeros then the W inputs (wq = W+PadW), and the reads past its
// last input, at most PadW of them, land on the next row's leading zeros
// (the spare row's after the last). ResNet-20's 14×14 planes then take 15
// positions per output row instead of 16, its 7×7 ones 8 instead of 9.
// That needs the kernel to reach at least PadW columns ((KW-1)·DilW >=
// PadW, so that the OW outputs still fit a row); otherwise each row keeps
// its own padding on both sides.
type dwGeom struct {
	s                convShape
	hq, wq           int  // phase height and width
	phaseLen, nPhase int  // elements per phase (with a spare row), phases
	rows             int  // output rows per block
	shared           bool // rows share their padding columns (wq = W+PadW)
}

func newDWGeom(s convShape) dwGeom {
	hp, wp := s.H+2*s.PadH, s.W+2*s.PadW
	shared := s.StrideW == 1 && s.PadW > 0 && s.PadW <= (s.KW-1)*s.DilW
	if shared {
		wp = s.W + s.PadW
	}
	g := dwGeom{s: s, hq: (hp + s.StrideH - 1) / s.StrideH, wq: (wp + s.StrideW - 1) / s.StrideW, shared: shared}
	// Reads run up to wq-1+qw past a row start: a spare row (or more, for
	// wide dilated kernels) keeps them inside the phase.
	spare := 1 + ((s.KW-1)*s.DilW/s.StrideW)/max(1, g.wq)
	g.phaseLen = (g.hq + spare) * g.wq
	g.nPhase = s.StrideH * s.StrideW
	g.rows = max(1, min(s.oh, 2048/max(1, g.wq)))
	return g
}

// scratch is the number of elements a worker needs: the phases, a vector
// of slack, and one block of output rows rounded up to whole vectors.
func (g dwGeom) scratch() int {
	return g.phaseLen*g.nPhase + direct.Lanes + (g.rows*g.wq+direct.Lanes-1)/direct.Lanes*direct.Lanes
}

// clampOf returns the bounds direct.Depthwise applies for act.
func clampOf(act device.Activation) (lo, hi float32) {
	inf := float32(math.Inf(1))
	switch act {
	case device.ActReLU:
		return 0, inf
	case device.ActReLU6:
		return 0, 6
	}
	return -inf, inf
}

// tapOffset is where tap (kh, kw) reads for output (0, 0).
func (g dwGeom) tapOffset(kh, kw int) int {
	s := g.s
	dh, dw := kh*s.DilH, kw*s.DilW
	phase := (dh%s.StrideH)*s.StrideW + dw%s.StrideW
	return phase*g.phaseLen + (dh/s.StrideH)*g.wq + dw/s.StrideW
}

// maxStackTaps is the number of taps whose offsets the kernels keep in an
// array on the stack (every kernel up to 8×8) rather than on the heap.
const maxStackTaps = 64

// taps appends tapOffset for every tap, in (kh, kw) order, to at (an
// array of maxStackTaps on the caller's stack: a step allocates nothing).
func (g dwGeom) taps(at []int) []int {
	for kh := 0; kh < g.s.KH; kh++ {
		for kw := 0; kw < g.s.KW; kw++ {
			at = append(at, g.tapOffset(kh, kw))
		}
	}
	return at
}

// fillPhases writes the padded phases of g for the H×W plane x into ph.
func fillPhases[T float](g dwGeom, ph, x []T) {
	s := g.s
	if s.StrideH == 1 && s.StrideW == 1 {
		// One phase: zero only the padding around the copied rows.
		if s.H == 0 || s.W == 0 {
			clear(ph)
			return
		}
		first := s.PadH*g.wq + s.PadW
		clear(ph[:first])
		copyRows(ph[first:], g.wq, x, s.W, s.H, s.W, true) // and the padding between them
		clear(ph[first+(s.H-1)*g.wq+s.W:])
		return
	}
	fillPhaseRows(g, ph, x, 0, g.phaseLen/g.wq)
}

// fillPhaseRows writes rows [k0, k1) of every phase of g (rows of the
// phases, not of the plane) for the H×W plane x into ph, zero where they
// hold padding, and leaves the other rows as they were: a worker that
// computes some of a plane's output rows lays out only the rows they read
// (fillPhases lays out all of them). With a horizontal stride of 2 in
// float32, each vertical phase's rows go through direct.SplitColumns in
// one call, and only their padding is zeroed (clearing whole rows first
// took 40% of the layout's time in mobilenet_v2's stem); otherwise the
// rows are cleared, then copied column by column.
func fillPhaseRows[T float](g dwGeom, ph, x []T, k0, k1 int) {
	s := g.s
	ph32, split := any(ph).([]float32)
	split = split && s.StrideW == 2 && s.W > 0
	if !split {
		for p := range g.nPhase {
			clear(ph[p*g.phaseLen+k0*g.wq : p*g.phaseLen+k1*g.wq])
		}
	}
	for rr := range s.StrideH {
		// Phase row k of vertical phase rr holds input row
		// h = k·StrideH + rr - PadH, where 0 <= h < H.
		ka := max(k0, ceilDiv(s.PadH-rr, s.StrideH))
		kb := min(k1, ceilDiv(s.H+s.PadH-rr, s.StrideH))
		if split {
			// The row's even and odd columns in one call for all rows:
			// column w of the input is padded column w+PadW, which lies
			// in column phase (w+PadW) mod 2 at (w+PadW)/2.
			even := ph32[(rr*2+s.PadW%2)*g.phaseLen:][:g.phaseLen]
			odd := ph32[(rr*2+(1+s.PadW)%2)*g.phaseLen:][:g.phaseLen]
			e0, o0 := s.PadW/2, (1+s.PadW)/2
			clearPhasePadding(even, g.wq, k0, k1, ka, kb, e0, (s.W+1)/2)
			clearPhasePadding(odd, g.wq, k0, k1, ka, kb, o0, s.W/2)
			if ka < kb {
				h0 := ka*s.StrideH + rr - s.PadH
				direct.SplitColumns(even[ka*g.wq+e0:], g.wq, odd[ka*g.wq+o0:], g.wq, any(x[h0*s.W:]).([]float32), s.StrideH*s.W, kb-ka, s.W)
			}
			continue
		}
		if ka >= kb || s.W == 0 {
			continue
		}
		rows, h0 := kb-ka, ka*s.StrideH+rr-s.PadH
		src := x[h0*s.W:]
		for k := range rows {
			in := src[k*s.StrideH*s.W:][:s.W]
			for rc := range s.StrideW {
				w0 := ((rc-s.PadW)%s.StrideW + s.StrideW) % s.StrideW // the first column w with (w+PadW) mod StrideW = rc
				if w0 >= s.W {
					continue
				}
				dst := ph[(rr*s.StrideW+rc)*g.phaseLen+(ka+k)*g.wq+(w0+s.PadW)/s.StrideW:]
				for w, j := w0, 0; w < s.W; w, j = w+s.StrideW, j+1 {
					dst[j] = in[w]
				}
			}
		}
	}
}

// clearPhasePadding zeroes what fillPhaseRows's SplitColumns call leaves
// of rows [k0, k1) of one column phase (rows of wq values): the rows
// outside [ka, kb), which hold no input row, whole, and in the others the
// columns before first and from first+n on (the n values a row gets from
// the input start at column first).
func clearPhasePadding(phase []float32, wq, k0, k1, ka, kb, first, n int) {
	ka, kb = max(k0, min(ka, k1)), max(k0, min(kb, k1))
	if ka >= kb {
		clear(phase[k0*wq : k1*wq])
		return
	}
	clear(phase[k0*wq : ka*wq+first])
	for k := ka; k < kb-1; k++ {
		clear(phase[k*wq+first+n : (k+1)*wq+first])
	}
	clear(phase[(kb-1)*wq+first+n : k1*wq])
}

// copyRows copies rows rows of cols values from src (rows lds apart) to
// dst (rows ldd apart) and, with pad, zeroes dst between the copied rows:
// direct.CopyRows or direct.PadRows for float32 (AVX-512 where the CPU
// has it), a loop otherwise.
func copyRows[T float](dst []T, ldd int, src []T, lds, rows, cols int, pad bool) {
	if d32, ok := any(dst).([]float32); ok {
		if pad {
			direct.PadRows(d32, ldd, any(src).([]float32), lds, rows, cols)
		} else {
			direct.CopyRows(d32, ldd, any(src).([]float32), lds, rows, cols)
		}
		return
	}
	for r := range rows {
		copy(dst[r*ldd:r*ldd+cols], src[r*lds:r*lds+cols])
		if pad && r < rows-1 {
			clear(dst[r*ldd+cols : (r+1)*ldd])
		}
	}
}

// axpyT sets dst[i] += alpha·x[i].
func axpyT[T float](dst []T, alpha T, x []T) {
	if d32, ok := any(dst).([]float32); ok {
		vec.Axpy(d32, float32(alpha), any(x).([]float32))
		return
	}
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += alpha * x[i]
	}
}

// conv2dDepthwiseGradInput computes the input gradient of a depthwise
// convolution, the adjoint of conv2dDepthwise's loop, one N×C plane per
// task index: the plane's output gradient laid out wq wide (zeros past
// OW), each kernel tap one axpy into the gradient of the padded phases,
// which are then gathered back into dx (the padding's share dropped).
//
// With the vector kernel and unit stride, the input gradient is instead
// the depthwise convolution of dy with each channel's filter rotated by
// 180° (conv2dDepthwise on gradInputShape), one vector pass per plane:
// 1.2–1.7× as fast on MobileNet's 14×14 and 7×7 layers
// (BenchmarkDepthwiseGradInput).
func conv2dDepthwiseGradInput[T float](dev *Device, s convShape, dx, dy, w []T) {
	if _, ok := any(dx).([]float32); ok && direct.Fast() && s.gradInputIsConv() {
		kk := s.KH * s.KW
		flipped := getScratch[T](s.C * kk)
		defer putScratch(flipped)
		for c := range s.C {
			for t := range kk {
				flipped.s[c*kk+t] = w[c*kk+kk-1-t]
			}
		}
		conv2dDepthwise(dev, s.gradInputShape(), device.ActNone, dx, dy, flipped.s, nil)
		return
	}
	conv2dDepthwiseGradInputPhases(dev, s, dx, dy, w)
}

// conv2dDepthwiseGradInputPhases is the input gradient through the padded
// phases: an axpy per tap, then the phases gathered back.
func conv2dDepthwiseGradInputPhases[T float](dev *Device, s convShape, dx, dy, w []T) {
	launch(dev, s.N*s.C, s.l*s.KH*s.KW, depthwiseGradArgs[T]{s: s, dx: dx, dy: dy, w: w})
}

// conv2dDepthwiseGradWeight computes the weight gradient of a depthwise
// convolution, one channel per task index: for each image in order, the
// plane's padded phases and its output gradient laid out wq wide, each
// tap's gradient one dot product of the two. The images' sums are added
// in float64 in image order, whatever the number of workers.
//
// With the vector kernel and unit stride, output rows as wide as the
// input's (inPlaceDepthwise's first kind), each image's sums are instead
// taken by direct.SamePlan.TapDots from x and dy where they lie: 1.2–2.9×
// as fast on MobileNet's layers (BenchmarkDepthwiseGradWeight, Zen 5).
func conv2dDepthwiseGradWeight[T float](dev *Device, s convShape, dw, dy, x []T) {
	if dw32, ok := any(dw).([]float32); ok && direct.Fast() && s.sameWidth() {
		launch(dev, s.C, s.N*s.l*s.KH*s.KW, depthwiseTapDotsArgs{s: s, dw: dw32, dy: any(dy).([]float32), x: any(x).([]float32)})
		return
	}
	launch(dev, s.C, s.N*s.l*s.KH*s.KW, depthwiseGradArgs[T]{s: s, dw: dw, dy: dy, x: x})
}

// tapDotsImages is how many images' planes direct.SamePlan.TapDotsImages
// sums in float32 before adding them to the float64 partial sums, at most:
// on a 7×7 plane one image is one step of four vectors, and adding them up
// after each cost more than their products. Fewer go together where their
// planes of x and dy would pass tapDotsBytes, so that each tap finds them
// in L1 (BenchmarkDepthwiseGradWeight, 2 threads, 3 alternating runs:
// 128×64×7×7 177–189 → 124–126 µs, 128×32×14×14 229–256 → 205–213 µs;
// 8×32×56×56 planes go one at a time, unchanged: four at a time had made
// them 0.83× as fast).
const (
	tapDotsImages = 4
	tapDotsBytes  = 16 << 10
)

// depthwiseTapDotsArgs are the arguments of conv2dDepthwiseGradWeight's
// in-place kernel, one channel per task index.
type depthwiseTapDotsArgs struct {
	s         convShape
	dw, dy, x []float32
}

func (a *depthwiseTapDotsArgs) run(lo, hi int) {
	s, kk := a.s, a.s.KH*a.s.KW
	p := samePlanFor(s)
	var stack [9 * (direct.TapAcc + 1)]float64 // a 3×3 kernel's partial sums and sums
	buf := stack[:]
	if n := kk * (direct.TapAcc + 1); n > len(buf) {
		buf = make([]float64, n)
	}
	acc, sums := buf[:kk*direct.TapAcc], buf[kk*direct.TapAcc:kk*(direct.TapAcc+1)]
	group := max(1, min(tapDotsImages, tapDotsBytes/(4*(s.l+s.inPlane))))
	for c := lo; c < hi; c++ {
		clear(acc)
		for n := 0; n < s.N; n += group {
			plane := n*s.C + c
			p.TapDotsImages(acc, a.dy[plane*s.l:], s.C*s.l, a.x[plane*s.inPlane:], s.C*s.inPlane, min(group, s.N-n))
		}
		direct.TapSums(sums, acc)
		for t, v := range sums {
			a.dw[c*kk+t] = float32(v)
		}
	}
}

// depthwiseGradArgs are the arguments of the depthwise gradients: dx and
// w for the input's, dw and x for the weight's.
type depthwiseGradArgs[T float] struct {
	s                convShape
	dx, dy, w, dw, x []T
}

func (a *depthwiseGradArgs[T]) run(lo, hi int) {
	s, kk := a.s, a.s.KH*a.s.KW
	g := newDWGeom(s)
	var tapBuf [maxStackTaps]int
	taps := g.taps(tapBuf[:0])
	span := s.oh * g.wq // the output rows, wq wide
	if a.dx != nil {
		sc := getScratch[T](g.phaseLen*g.nPhase + span)
		defer putScratch(sc)
		ph, dyq := sc.s[:g.phaseLen*g.nPhase], sc.s[g.phaseLen*g.nPhase:]
		for plane := lo; plane < hi; plane++ {
			c := plane % s.C
			spreadOutGrad(g, dyq, a.dy[plane*s.l:(plane+1)*s.l])
			clear(ph)
			for t, at := range taps {
				axpyT(ph[at:at+span], a.w[c*kk+t], dyq)
			}
			gatherPhases(g, a.dx[plane*s.inPlane:(plane+1)*s.inPlane], ph)
		}
		return
	}
	// The weight gradient of channel c: a group of images' phases side by
	// side, L apart, and their output gradients likewise (zero past each
	// image's output rows), so that a tap's sum over the group is one dot
	// product instead of one per image (7×7 planes: 56 values).
	L := g.phaseLen * g.nPhase
	reach := slices.Max(taps) // how far the last image's taps read past its phases
	group := max(1, min(s.N, depthwiseGradValues/L))
	sc := getScratch[T](2*group*L + reach)
	defer putScratch(sc)
	ph, dyq := sc.s[:group*L+reach], sc.s[group*L+reach:]
	var acc [64]float64 // the taps' sums (a larger kernel allocates them)
	for c := lo; c < hi; c++ {
		sums := acc[:]
		if kk > len(acc) {
			sums = make([]float64, kk)
		}
		sums = sums[:kk]
		clear(sums)
		for n0 := 0; n0 < s.N; n0 += group {
			k := min(group, s.N-n0)
			for j := range k {
				plane := (n0+j)*s.C + c
				fillPhases(g, ph[j*L:(j+1)*L], a.x[plane*s.inPlane:(plane+1)*s.inPlane])
				spreadOutGrad(g, dyq[j*L:(j+1)*L], a.dy[plane*s.l:(plane+1)*s.l])
			}
			clear(ph[k*L : k*L+reach])
			for t, at := range taps {
				sums[t] += dotT(dyq[:k*L], ph[at:at+k*L])
			}
		}
		for t, v := range sums {
			a.dw[c*kk+t] = T(v)
		}
	}
}

// depthwiseGradValues is about how many values of phases (and as many of
// output gradients) depthwiseGradArgs lays out side by side for one dot
// product per tap.
const depthwiseGradValues = 1024

// spreadOutGrad lays the output gradient dy of one plane out wq wide into
// dst (the rows of g's phases), zero between and after its rows.
func spreadOutGrad[T float](g dwGeom, dst, dy []T) {
	s := g.s
	if s.oh == 0 || s.ow == 0 {
		clear(dst)
		return
	}
	copyRows(dst, g.wq, dy, s.ow, s.oh, s.ow, true) // and the zeros between the rows
	clear(dst[(s.oh-1)*g.wq+s.ow:])
}

// gatherPhases is the adjoint of fillPhases: it sets the H×W plane dx to
// the elements of the phases ph that hold the input (not the padding).
func gatherPhases[T float](g dwGeom, dx, ph []T) {
	s := g.s
	if s.StrideH == 1 && s.StrideW == 1 {
		copyRows(dx, s.W, ph[s.PadH*g.wq+s.PadW:], g.wq, s.H, s.W, false)
		return
	}
	if dx32, ok := any(dx).([]float32); ok && s.StrideW == 2 {
		// Even columns from one column phase, odd from the other,
		// interleaved by direct.MergeColumns, one call for the rows of
		// each vertical phase (every StrideH-th row, consecutive rows of
		// that phase). MobileNet's stride-2 input gradients: the element
		// loop below took 3.2% of the zoo model's training step.
		ph32 := any(ph).([]float32)
		colPhase := [2]int{s.PadW % 2, (1 + s.PadW) % 2} // of even and odd columns
		colStart := [2]int{s.PadW / 2, (1 + s.PadW) / 2}
		for h0 := 0; h0 < min(s.StrideH, s.H); h0++ {
			hp := h0 + s.PadH
			at := (hp / s.StrideH) * g.wq
			even := ph32[((hp%s.StrideH)*2+colPhase[0])*g.phaseLen+at+colStart[0]:]
			odd := ph32[((hp%s.StrideH)*2+colPhase[1])*g.phaseLen+at+colStart[1]:]
			rows := (s.H - h0 + s.StrideH - 1) / s.StrideH
			direct.MergeColumns(dx32[h0*s.W:], s.StrideH*s.W, even, g.wq, odd, g.wq, rows, s.W)
		}
		return
	}
	for h := 0; h < s.H; h++ {
		hp := h + s.PadH
		out := dx[h*s.W : (h+1)*s.W]
		for rc := 0; rc < s.StrideW; rc++ {
			w0 := ((rc-s.PadW)%s.StrideW + s.StrideW) % s.StrideW
			if w0 >= s.W {
				continue
			}
			phase := (hp%s.StrideH)*s.StrideW + rc
			src := ph[phase*g.phaseLen+(hp/s.StrideH)*g.wq+(w0+s.PadW)/s.StrideW:]
			for w, k := w0, 0; w < s.W; w, k = w+s.StrideW, k+1 {
				out[w] = src[k]
			}
		}
	}
}

// dotT returns Σ a[i]·b[i] (vec.Dot's float32 partial sums for float32).
func dotT[T float](a, b []T) float64 {
	if a32, ok := any(a).([]float32); ok {
		return float64(vec.Dot(a32, any(b).([]float32)[:len(a32)]))
	}
	var s float64
	for i, v := range a {
		s += float64(v) * float64(b[i])
	}
	return s
}
