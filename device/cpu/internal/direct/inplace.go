package direct

import "fmt"

// The depthwise kernels of this file read a plane where it lies: a tap
// that falls in the padding loads nothing (a masked vector load gives
// zeros) instead of reading a zero-padded copy of the plane, and the
// results go straight to the output plane. Their sums run over the taps in
// (kh, kw) order from zero, each tap one multiply-add, padding taps
// included, as Depthwise's over a padded copy does: both give the same
// bits.

// SamePlan is the plan of a depthwise convolution with unit stride whose
// output rows are as wide as the input's (OW = W: "same" padding across),
// such as MobileNet's 3×3 layers with a padding of 1. Output position
// q = i·W + j then reads tap (kh, kw) at the constant offset
// (kh·dilH − padH)·W + kw·dilW − padW from q, so a vector of 16 outputs is
// one (masked) load per tap, rows and plane edges included.
//
// A plan is built once per geometry (NewSamePlan costs a pass over the
// plane's positions) and may be used by any number of goroutines.
type SamePlan struct {
	h, w, oh int
	taps     []int // offset of each tap from the output position; may be negative
	// masks holds len(taps)+1 rows of nv4 lane masks: row t, vector v has
	// the lanes of outputs 16v… whose tap t lies inside the image; the
	// last row has the lanes that are outputs (the store mask).
	masks []uint16
	nvec  int // vectors of 16 outputs
	nv4   int // nvec rounded up to a multiple of 12: whole steps of 4 vectors, whole blocks of 3
	// centred: oh = h and the padding centres the kernel on each output
	// (tap t and tap len(taps)-1-t are offsets of opposite sign)
	centred bool
	// rows holds the tables of sameRowsAVX512 when the plan runs on it
	// (rowsKernel and useRows say so); rows.rowIn is nil otherwise
	rows rowsPlan
}

// rowsKernel reports whether sameRowsAVX512 computes kernel rows kw wide
// with padding padW and dilation dilW across: 3 wide, reading columns
// j−1, j, j+1.
func rowsKernel(kw, padW, dilW int) bool { return kw == 3 && padW == 1 && dilW == 1 }

// useRows reports whether a plane w wide with kernel rows 3 wide
// reading columns j−1, j, j+1 runs on sameRowsAVX512: when its rows fill
// at least 80% of that kernel's chunks of 64 columns (w = 56, 64, 112,
// 224; not 14 or 28, whose rows would leave most lanes empty). A chunk
// vector there costs about 0.8 of a vector of the general kernel, which
// fills every lane but loads every tap. MobileNet's 3×3 depthwise layers,
// 2 threads, Zen 4, alternating runs: batch 1 112×112×32 77.6–80.0 →
// 64.1–66.7 µs, 56×56×144 96.3–97.4 → 73.7–77.0 µs; 56×56×144 at batch
// 32 4.4–4.8 → 2.7–3.8 ms; 14×14×384 on the row kernel 19.4–20.1 →
// 47.5–50.9 µs.
func useRows(w int) bool {
	chunks := (w + 4*Lanes - 1) / (4 * Lanes)
	return 4*Lanes*chunks*4 <= 5*w
}

// rowsPlan is what sameRowsAVX512 reads for a SamePlan: for output row i
// and kernel row r, rowIn[i·kh + r] is the offset of the input row it
// reads (−1 when that row lies in the padding), and each chunk of 4
// vectors (64 columns) of a row has six lane masks: the vector before the
// chunk, its 4 vectors and the vector after it, each the lanes inside the
// row.
type rowsPlan struct {
	rowIn      []int
	chunkMasks []uint16
}

// newRowsPlan returns the rowsPlan of the geometry of NewSamePlan.
func newRowsPlan(h, w, oh, kh, padH, dilH int) rowsPlan {
	var rp rowsPlan
	for i := range oh {
		for r := range kh {
			off := -1
			if ih := i + r*dilH - padH; ih >= 0 && ih < h {
				off = ih * w
			}
			rp.rowIn = append(rp.rowIn, off)
		}
	}
	inside := func(v int) uint16 { // the lanes of vector v inside the row
		if v < 0 {
			return 0
		}
		n := min(max(w-v*Lanes, 0), Lanes)
		return uint16(1<<n - 1)
	}
	for v := 0; v < (w+Lanes-1)/Lanes; v += 4 {
		rp.chunkMasks = append(rp.chunkMasks, inside(v-1), inside(v), inside(v+1), inside(v+2), inside(v+3), inside(v+4))
	}
	return rp
}

// NewSamePlan returns the plan of a depthwise convolution of an h×w plane
// into oh rows of w outputs, with a kh×kw kernel, padding padH, padW and
// dilation dilH, dilW (unit stride). It panics if a size is negative or a
// dilation not positive.
func NewSamePlan(h, w, oh, kh, kw, padH, padW, dilH, dilW int) *SamePlan {
	if h < 0 || w < 0 || oh < 0 || kh < 1 || kw < 1 || dilH < 1 || dilW < 1 {
		panic(fmt.Sprintf("direct: NewSamePlan(%d, %d, %d, %d, %d, %d, %d, %d, %d) out of range", h, w, oh, kh, kw, padH, padW, dilH, dilW))
	}
	n := oh * w
	nvec := (n + Lanes - 1) / Lanes
	p := &SamePlan{h: h, w: w, oh: oh, nvec: nvec, nv4: (nvec + 11) / 12 * 12,
		centred: oh == h && 2*padH == (kh-1)*dilH && 2*padW == (kw-1)*dilW}
	if rowsKernel(kw, padW, dilW) && n > 0 && useRows(w) {
		p.rows = newRowsPlan(h, w, oh, kh, padH, dilH)
	}
	for r := range kh {
		for c := range kw {
			p.taps = append(p.taps, (r*dilH-padH)*w+c*dilW-padW)
		}
	}
	ntaps := kh * kw
	p.masks = make([]uint16, (ntaps+1)*p.nv4)
	rowOK := make([]uint16, kh) // per vector: the lanes whose row i+dh is inside
	colOK := make([]uint16, kw)
	for v := range nvec {
		clear(rowOK)
		clear(colOK)
		var out uint16
		for l := range Lanes {
			q := v*Lanes + l
			if q >= n {
				break
			}
			out |= 1 << l
			i, j := q/w, q%w
			for r := range kh {
				if ih := i + r*dilH - padH; ih >= 0 && ih < h {
					rowOK[r] |= 1 << l
				}
			}
			for c := range kw {
				if iw := j + c*dilW - padW; iw >= 0 && iw < w {
					colOK[c] |= 1 << l
				}
			}
		}
		for r := range kh {
			for c := range kw {
				p.masks[(r*kw+c)*p.nv4+v] = rowOK[r] & colOK[c]
			}
		}
		p.masks[ntaps*p.nv4+v] = out
	}
	return p
}

// Run sets, for every output position q < oh·w,
//
//	out[q] = min(max(Σ_t w[t]·in[q + taps[t]] + bias, lo), hi)
//
// where a tap outside the image reads 0: one plane of the convolution,
// with its bias and clamp (lo, hi = ±Inf for none, 0 and +Inf for ReLU, 0
// and 6 for ReLU6; NaN stays NaN). It panics if a slice is too short.
func (p *SamePlan) Run(out, in, w []float32, bias, lo, hi float32) {
	if len(in) < p.h*p.w || len(out) < p.oh*p.w || len(w) < len(p.taps) {
		panic(fmt.Sprintf("direct: SamePlan.Run of a %d×%d plane into %d×%d with %d taps: %d inputs, %d outputs, %d weights",
			p.h, p.w, p.oh, p.w, len(p.taps), len(in), len(out), len(w)))
	}
	if p.oh*p.w == 0 {
		return
	}
	if haveAsm && p.rows.rowIn != nil {
		p.runRows(out, p.oh*p.w, in, p.h*p.w, w, len(p.taps), &bias, 0, 1, lo, hi)
		return
	}
	if haveAsm {
		sameAVX512(&out[0], &in[0], &p.taps[0], len(p.taps), &w[0], &p.masks[0], p.nv4, bias, lo, hi, p.steps4())
		return
	}
	p.runGo(out, in, w, bias, lo, hi)
}

// RunPlanes is Run for planes planes of the plan's geometry: plane k
// reads in[k·ldi:] and writes out[k·ldo:] with the weights w[k·ldw:] and
// the bias bias[k] (0 for all when bias is nil). Each plane gets Run's
// bits; in assembly the planes go two at a time, their multiply-add
// chains overlapping, without a call per plane. It panics if a slice is
// too short.
func (p *SamePlan) RunPlanes(out []float32, ldo int, in []float32, ldi int, w []float32, ldw int, bias []float32, planes int, lo, hi float32) {
	if planes <= 0 {
		return
	}
	n, nt := p.oh*p.w, len(p.taps)
	if ldo < n || ldi < p.h*p.w || ldw < nt || len(out) < (planes-1)*ldo+n || len(in) < (planes-1)*ldi+p.h*p.w ||
		len(w) < (planes-1)*ldw+nt || (bias != nil && len(bias) < planes) {
		panic(fmt.Sprintf("direct: SamePlan.RunPlanes of %d planes of %d×%d (%d and %d apart) into %d×%d (%d apart): %d inputs, %d outputs, %d weights (%d apart), %d biases",
			planes, p.h, p.w, ldi, ldo, p.oh, p.w, ldo, len(in), len(out), len(w), ldw, len(bias)))
	}
	biasOf := func(k int) float32 {
		if bias == nil {
			return 0
		}
		return bias[k]
	}
	if haveAsm && n > 0 && p.rows.rowIn != nil {
		var zero float32
		bp, bstride := &zero, 0
		if bias != nil {
			bp, bstride = &bias[0], 1
		}
		p.runRows(out, ldo, in, ldi, w, ldw, bp, bstride, planes, lo, hi)
		return
	}
	done := 0
	if haveAsm && n > 0 && planes >= 2 {
		done = planes / 2 * 2
		var zero float32
		bp, bstride := &zero, 0
		if bias != nil {
			bp, bstride = &bias[0], 1
		}
		samePlanesAVX512(&out[0], ldo, &in[0], ldi, &p.taps[0], nt, &w[0], ldw, bp, bstride, &p.masks[0], p.nv4, p.steps4(), lo, hi, done)
	}
	for k := done; k < planes; k++ {
		p.Run(out[k*ldo:][:n], in[k*ldi:][:p.h*p.w], w[k*ldw:][:nt], biasOf(k), lo, hi)
	}
}

// runRows runs sameRowsAVX512 on planes planes (the arguments of
// RunPlanes, checked; bias the first plane's bias, bstride values apart).
func (p *SamePlan) runRows(out []float32, ldo int, in []float32, ldi int, w []float32, ldw int, bias *float32, bstride, planes int, lo, hi float32) {
	kh := len(p.taps) / 3
	sameRowsAVX512(&out[0], ldo, &in[0], ldi, &p.rows.rowIn[0], kh, p.oh, p.w, &w[0], ldw, bias, bstride,
		&p.rows.chunkMasks[0], len(p.rows.chunkMasks)/6, lo, hi, planes)
}

// inside reports whether tap t of output position q reads inside the
// image (its mask bit).
func (p *SamePlan) inside(t, q int) bool { return p.masks[t*p.nv4+q/Lanes]&(1<<(q%Lanes)) != 0 }

// steps4 returns the plane's vectors rounded up to whole steps of 4, as
// many as the kernels that step by 4 vectors compute (the masks of the
// vectors past nvec are empty).
func (p *SamePlan) steps4() int { return (p.nvec + 3) / 4 * 4 }

// SparseTail returns the outputs [q0, q0+n) of the plane's last block
// when that block is a single vector holding at most 2 outputs (a 7×7
// plane: 49 = 3·16 + 1), which Block would compute with 16 lanes per
// output channel for one or two outputs; otherwise n is 0. A caller may
// compute those outputs otherwise (for all images at once) and leave the
// block out.
func (p *SamePlan) SparseTail() (q0, n int) {
	total := p.oh * p.w
	if p.nvec%3 != 1 || total-(p.nvec-1)*Lanes > 2 {
		return 0, 0
	}
	q0 = (p.nvec - 1) * Lanes
	return q0, total - q0
}

// Blocks returns the number of blocks of Cols output positions of the
// plane (the last may be partial), as Block computes them.
func (p *SamePlan) Blocks() int { return (p.nvec + 2) / 3 }

// BlockRange is Block (the direct convolution's micro-kernel) on this
// plan's geometry for blocks [b0, b1), reading the input planes where they
// lie and writing the output planes directly: for the Rows output channels
// r and the output positions q of block b (positions b·Cols to
// (b+1)·Cols-1 that are outputs),
//
//	out[r·ldo + q] = min(max(Σ_c Σ_t w[(c·len(taps) + t)·Rows + r] · x_c(q + taps[t]) + bias[r], lo), hi)
//
// where x_c is channel c's plane, in[c·cstride:], and a tap outside the
// image reads 0; the sum runs over c, then t, each term one multiply-add,
// as Block's over a zero-padded copy (the same bits). Without a bias (nil)
// the sums are stored as they are.
//
// next, unless nil, holds planes laid out as in's (the next image's), which
// the kernel prefetches as it goes: each block the lines of its own
// positions in each of next's channels, so that a range over a whole plane
// brings next's planes into cache while in's are computed (the kernel also
// prefetches each block's outputs before computing it). ResNet-20's
// 16-channel 28×28 layer at batch 128, whose images come from memory, ran
// at 84–93 GFLOP/s on one Zen 4 thread without both, 97–99 with them (171–190
// and 193–197 on two).
//
// It panics if a slice is too short; the arguments are checked once for
// the range.
func (p *SamePlan) BlockRange(out []float32, ldo int, in, next []float32, cstride int, w []float32, channels, b0, b1 int, bias []float32, lo, hi float32) {
	n, nt, planes := p.oh*p.w, len(p.taps), (channels-1)*cstride+p.h*p.w
	if channels < 1 || b0 < 0 || b1 > p.Blocks() || b0 > b1 || ldo < n || cstride < p.h*p.w || len(out) < (Rows-1)*ldo+n ||
		len(in) < planes || (next != nil && len(next) < planes) || len(w) < channels*nt*Rows || (bias != nil && len(bias) < Rows) {
		panic(fmt.Sprintf("direct: SamePlan.BlockRange [%d, %d) of a %d×%d plane, %d channels %d apart, rows %d apart: %d inputs (%d next), %d outputs, %d weights, %d biases",
			b0, b1, p.h, p.w, channels, cstride, ldo, len(in), len(next), len(out), len(w), len(bias)))
	}
	if !haveAsm {
		for b := b0; b < b1; b++ {
			p.blockGo(out, ldo, in, cstride, w, channels, b, bias, lo, hi)
		}
		return
	}
	var bp *float32
	if bias != nil {
		bp = &bias[0]
	}
	pf := &in[0] // without next, the kernels touch in's own lines
	if next != nil {
		pf = &next[0]
	}
	for b := b0; b < b1; b++ {
		q0 := b * Cols
		if 3*b+1 == p.nvec {
			// A last block of one vector (7×7 planes: 4 vectors) runs
			// one vector's work, not three.
			blockSame1AVX512(&out[q0], ldo, &in[0], q0, cstride, &p.taps[0], nt, &w[0], channels, &p.masks[3*b], 2*p.nv4, bp, lo, hi, pf)
			continue
		}
		blockSameAVX512(&out[q0], ldo, &in[0], q0, cstride, &p.taps[0], nt, &w[0], channels, &p.masks[3*b], 2*p.nv4, bp, lo, hi, pf)
	}
}

// blockGo is BlockRange for block b without the assembly.
func (p *SamePlan) blockGo(out []float32, ldo int, in []float32, cstride int, w []float32, channels, b int, bias []float32, lo, hi float32) {
	n, nt := p.oh*p.w, len(p.taps)
	q0 := b * Cols
	for q := q0; q < min(q0+Cols, n); q++ {
		v, bit := q/Lanes, uint16(1)<<(q%Lanes)
		var acc [Rows]float32
		for c := range channels {
			for t, off := range p.taps {
				var x float32
				if p.masks[t*p.nv4+v]&bit != 0 {
					x = in[c*cstride+q+off]
				}
				for r := range Rows {
					acc[r] += w[(c*nt+t)*Rows+r] * x
				}
			}
		}
		for r := range Rows {
			if bias != nil {
				acc[r] = clamp(acc[r]+bias[r], lo, hi)
			}
			out[r*ldo+q] = acc[r]
		}
	}
}

// Im2col writes the column matrix of channels planes (channel c at
// in[c·cstride:]) for the plane's outputs: row c·len(taps) + t of col
// (rows ld apart) gets x_c(q + taps[t]) for q < oh·w, 0 where the tap
// falls outside the image, and nothing past oh·w is written. It panics if
// a slice is too short.
func (p *SamePlan) Im2col(col []float32, ld int, in []float32, cstride, channels int) {
	n, nt := p.oh*p.w, len(p.taps)
	if channels < 1 || ld < n || cstride < p.h*p.w || len(col) < (channels*nt-1)*ld+n || len(in) < (channels-1)*cstride+p.h*p.w {
		panic(fmt.Sprintf("direct: SamePlan.Im2col of %d channels of a %d×%d plane, %d apart, into rows %d apart: %d inputs, %d column values",
			channels, p.h, p.w, cstride, ld, len(in), len(col)))
	}
	if n == 0 {
		return
	}
	if haveAsm {
		last := p.masks[nt*p.nv4+p.nvec-1]
		im2colSameAVX512(&col[0], ld, &in[0], cstride, channels, &p.taps[0], nt, &p.masks[0], p.nv4, p.nvec, last)
		return
	}
	q0 := 0 // the positions before q0 are written
	if haveAVX2 && n >= 8 {
		// Groups of 8 positions; the last n mod 8 in Go below.
		im2colSameAVX2(&col[0], ld, &in[0], cstride, channels, &p.taps[0], nt, &p.masks[0], p.nv4, n/8)
		q0 = n / 8 * 8
	}
	for c := range channels {
		for t, off := range p.taps {
			row := col[(c*nt+t)*ld:][:n]
			for q := q0; q < n; q++ {
				var v float32
				if p.inside(t, q) {
					v = in[c*cstride+q+off]
				}
				row[q] = v
			}
		}
	}
}

// Col2im is the adjoint of Im2col for a plane whose outputs are its inputs
// (oh = h, an odd kernel centred by its padding, as a same-size
// convolution's): it adds, for each channel and tap t in order, row
// c·len(taps) + t of col at each output q to in[c·cstride + q + taps[t]]
// where the tap falls inside the image. Each input sums its taps in that
// order, as one pass per tap adding rows would. It panics if a slice is
// too short or the plane is not a same-size one.
func (p *SamePlan) Col2im(in []float32, cstride int, col []float32, ld, channels int) {
	n, nt := p.oh*p.w, len(p.taps)
	if channels < 1 || ld < n || cstride < p.h*p.w || len(col) < (channels*nt-1)*ld+n || len(in) < (channels-1)*cstride+p.h*p.w {
		panic(fmt.Sprintf("direct: SamePlan.Col2im of %d channels of a %d×%d plane, %d apart, from rows %d apart: %d inputs, %d column values",
			channels, p.h, p.w, cstride, ld, len(in), len(col)))
	}
	if !p.centred {
		panic("direct: SamePlan.Col2im of a plane whose kernel is not centred on its outputs")
	}
	if n == 0 {
		return
	}
	// Input q gets tap t from output q - taps[t], which exists and reads
	// inside the image exactly where the mirrored tap nt-1-t of q does.
	q0 := 0 // the inputs before q0 are done
	if haveAVX2 && n >= 8 {
		col2imSameAVX2(&in[0], cstride, &col[0], ld, channels, &p.taps[0], nt, &p.masks[0], p.nv4, n/8)
		q0 = n / 8 * 8
	}
	for c := range channels {
		plane := in[c*cstride:][:n]
		for q := q0; q < n; q++ {
			v := plane[q]
			for t, off := range p.taps {
				if p.inside(nt-1-t, q) {
					v += col[(c*nt+t)*ld+q-off]
				}
			}
			plane[q] = v
		}
	}
}

// TapDots is TapDotsImages for one plane: it adds, for each tap t, the
// products dy[q]·in[q + taps[t]] over the output positions q to
// acc[8t : 8t+8].
func (p *SamePlan) TapDots(acc []float64, dy, in []float32) {
	p.TapDotsImages(acc, dy, p.oh*p.w, in, p.h*p.w, 1)
}

// TapDotsImages adds, for each tap t, the products dy[q]·in[q + taps[t]]
// over the output positions q (a tap outside the image reads 0) of images
// planes to acc[8t : 8t+8]: those planes' share of the convolution's
// weight gradient, dy being the gradient of its output, plane k of dy at
// dy[k·ldy:] and of the input at in[k·ldi:], as eight float64 partial
// sums per tap. The products of all the planes are summed in float32
// first, in 16 lanes, and added to acc once per tap (keep images small, a
// few planes, for float32's sake). TapSums adds them up. It panics if a
// slice is too short.
func (p *SamePlan) TapDotsImages(acc []float64, dy []float32, ldy int, in []float32, ldi, images int) {
	if images <= 0 {
		return
	}
	n := p.oh * p.w
	if ldy < n || ldi < p.h*p.w || len(in) < (images-1)*ldi+p.h*p.w || len(dy) < (images-1)*ldy+n || len(acc) < TapAcc*len(p.taps) {
		panic(fmt.Sprintf("direct: SamePlan.TapDotsImages of %d planes of %d×%d (%d apart) into %d×%d (%d apart): %d inputs, %d gradients, %d partial sums",
			images, p.h, p.w, ldi, p.oh, p.w, ldy, len(in), len(dy), len(acc)))
	}
	if n == 0 {
		return
	}
	if haveAsm {
		sameDotsImagesAVX512(&acc[0], &dy[0], ldy, &in[0], ldi, images, &p.taps[0], len(p.taps), &p.masks[0], p.nv4, p.steps4())
		return
	}
	for t, off := range p.taps {
		var sum float32
		for k := range images {
			for q := range n {
				if p.inside(t, q) {
					sum += dy[k*ldy+q] * in[k*ldi+q+off]
				}
			}
		}
		acc[TapAcc*t] += float64(sum)
	}
}

// TapAcc is the number of partial sums TapDots keeps per tap.
const TapAcc = 8

// TapSums sets sums[t] to the sum of tap t's partial sums acc[8t : 8t+8],
// for t < len(sums).
func TapSums(sums, acc []float64) {
	for t := range sums {
		var s float64
		for _, v := range acc[TapAcc*t : TapAcc*(t+1)] {
			s += v
		}
		sums[t] = s
	}
}

// runGo is Run in Go.
func (p *SamePlan) runGo(out, in, w []float32, bias, lo, hi float32) {
	store := p.masks[len(p.taps)*p.nv4:]
	for q := range p.oh * p.w {
		v, bit := q/Lanes, uint16(1)<<(q%Lanes)
		if store[v]&bit == 0 {
			continue
		}
		var acc float32
		for t, off := range p.taps {
			var x float32
			if p.masks[t*p.nv4+v]&bit != 0 {
				x = in[q+off]
			}
			acc += w[t] * x
		}
		out[q] = clamp(acc+bias, lo, hi)
	}
}

// clamp returns min(max(x, lo), hi), keeping NaN, as the kernels' clamp.
func clamp(x, lo, hi float32) float32 {
	if x < lo {
		x = lo
	}
	if x > hi {
		x = hi
	}
	return x
}

// Stride2Plan is the plan of the rows of a depthwise convolution with a
// horizontal stride of 2 and kernel rows 3 wide (no dilation), such as
// MobileNet's downsampling 3×3 layers: output j of a row reads columns
// 2j−pad, 2j−pad+1 and 2j−pad+2 of each input row, which a step of 16
// outputs takes from two masked vector loads (and one more value),
// splitting their even and odd columns in registers.
//
// A plan is built once per geometry and may be used by any number of
// goroutines.
type Stride2Plan struct {
	width, ow, pad int
	// masks holds four lane masks per step of 16 outputs: the columns of
	// the two source vectors and of the spare value that lie inside the
	// row, and the lanes that are outputs.
	masks []uint16
}

// NewStride2Plan returns the plan of output rows of ow values from input
// rows of width values with a left padding of pad columns. It panics if a
// size is negative.
func NewStride2Plan(width, ow, pad int) *Stride2Plan {
	if width < 0 || ow < 0 || pad < 0 {
		panic(fmt.Sprintf("direct: NewStride2Plan(%d, %d, %d) out of range", width, ow, pad))
	}
	p := &Stride2Plan{width: width, ow: ow, pad: pad}
	inside := func(col0, lanes int) uint16 {
		var m uint16
		for l := range lanes {
			if c := col0 + l; c >= 0 && c < width {
				m |= 1 << l
			}
		}
		return m
	}
	for j0 := 0; j0 < ow; j0 += Lanes {
		base := 2*j0 - pad
		var out uint16
		for l := range min(Lanes, ow-j0) {
			out |= 1 << l
		}
		p.masks = append(p.masks, inside(base, Lanes), inside(base+Lanes, Lanes), inside(base+2*Lanes, 1), out)
	}
	return p
}

// Run sets, for j < ow,
//
//	out[j] = min(max(Σ_{r<rows} Σ_{k<3} w[3r+k]·in[r·ld + 2j − pad + k] + bias, lo), hi)
//
// where a column outside [0, width) reads 0: one output row of the
// convolution from rows input rows ld apart (the kernel rows that fall
// inside the image), with its bias and clamp as SamePlan.Run's. It panics
// if a slice is too short or ld is less than the width.
func (p *Stride2Plan) Run(out, in []float32, ld, rows int, w []float32, bias, lo, hi float32) {
	if rows < 0 || (rows > 0 && (ld < p.width || len(in) < (rows-1)*ld+p.width)) || len(w) < 3*rows || len(out) < p.ow {
		panic(fmt.Sprintf("direct: Stride2Plan.Run of %d rows of %d values (%d apart) into %d outputs: %d inputs, %d weights, %d outputs",
			rows, p.width, ld, p.ow, len(in), len(w), len(out)))
	}
	if p.ow == 0 {
		return
	}
	if haveAsm && rows > 0 && p.width > 0 {
		stride2AVX512(&out[0], &in[0], ld, rows, &w[0], &p.masks[0], len(p.masks)/4, p.pad, bias, lo, hi)
		return
	}
	for j := range p.ow {
		var acc float32
		for r := range rows {
			for k := range 3 {
				var x float32
				if c := 2*j - p.pad + k; c >= 0 && c < p.width {
					x = in[r*ld+c]
				}
				acc += w[3*r+k] * x
			}
		}
		out[j] = clamp(acc+bias, lo, hi)
	}
}

// RunRows is Run for nout output rows: output row o, at out[o·ldo:],
// reads rows input rows from in[o·instep:] (ld apart) with the weights w,
// the same for every row (the rows whose kernel rows all lie inside the
// image). Each row gets Run's bits; in assembly the rows go two at a time,
// their multiply-add chains overlapping, without a call per row, and a
// pair whose rows share an input row (3 kernel rows, instep = 2·ld:
// MobileNet's stride-2 layers) loads and splits it once (112×112×96,
// 2 threads, Zen 4: 88–91 → 79–83 µs). It panics if a slice is too
// short.
func (p *Stride2Plan) RunRows(out []float32, ldo int, in []float32, ld, instep, rows, nout int, w []float32, bias, lo, hi float32) {
	if nout <= 0 {
		return
	}
	if rows < 1 || ld < p.width || ldo < p.ow || instep < 0 || len(w) < 3*rows || len(out) < (nout-1)*ldo+p.ow ||
		len(in) < (nout-1)*instep+(rows-1)*ld+p.width {
		panic(fmt.Sprintf("direct: Stride2Plan.RunRows of %d output rows (%d apart) of %d rows of %d values (%d apart, %d between output rows): %d inputs, %d weights, %d outputs",
			nout, ldo, rows, p.width, ld, instep, len(in), len(w), len(out)))
	}
	done := 0
	if haveAsm && p.width > 0 && p.ow > 0 && nout >= 2 {
		done = nout / 2 * 2
		stride2RowsAVX512(&out[0], ldo, &in[0], ld, instep, rows, &w[0], &p.masks[0], len(p.masks)/4, p.pad, bias, lo, hi, done)
	}
	for o := done; o < nout; o++ {
		p.Run(out[o*ldo:][:p.ow], in[o*instep:], ld, rows, w, bias, lo, hi)
	}
}

// RunBlock computes one output row of Lanes output channels of a full
// (not depthwise) convolution with this plan's geometry: for o < Lanes
// and j < ow,
//
//	out[o·ldo + j] = min(max(Σ_{c<channels} Σ_{r<rows} Σ_{k<3} w[c·wstride + (3r+k)·Lanes + o]·in[c·cstride + r·ld + 2j − pad + k] + bias[o], lo), hi)
//
// where a column outside [0, width) reads 0: input channel c's kernel
// rows that fall inside the image, ld apart, its channels cstride apart,
// and the weights of each channel, row and tap side by side for the Lanes
// output channels (a block of packed filters). The sum runs over
// channels, then rows, then taps. In assembly each step of 16 outputs
// splits each row's even and odd columns once for all Lanes output
// channels, whose sums stay in registers: an RGB stem (3 channels, 3×3,
// stride 2) reads its input in place where the direct kernels lay it out
// in phases first. It panics if a slice is too short.
func (p *Stride2Plan) RunBlock(out []float32, ldo int, in []float32, ld, cstride, channels, rows int, w []float32, wstride int, bias []float32, lo, hi float32) {
	if p.ow == 0 || channels <= 0 {
		return
	}
	if rows < 1 || ld < p.width || ldo < p.ow || cstride < 0 || wstride < 3*rows*Lanes || len(bias) < Lanes ||
		len(w) < (channels-1)*wstride+3*rows*Lanes || len(out) < (Lanes-1)*ldo+p.ow ||
		len(in) < (channels-1)*cstride+(rows-1)*ld+p.width {
		panic(fmt.Sprintf("direct: Stride2Plan.RunBlock of %d channels (%d apart) of %d rows of %d values (%d apart) into %d outputs (rows %d apart): %d inputs, %d weights (%d per channel), %d biases, %d outputs",
			channels, cstride, rows, p.width, ld, p.ow, ldo, len(in), len(w), wstride, len(bias), len(out)))
	}
	if haveAsm && p.width > 0 {
		stride2BlockAVX512(&out[0], ldo, &in[0], ld, cstride, channels, rows, &w[0], wstride, &p.masks[0], len(p.masks)/4, p.pad, &bias[0], lo, hi)
		return
	}
	for j := range p.ow {
		var acc [Lanes]float32
		for c := range channels {
			for r := range rows {
				for k := range 3 {
					var x float32
					if col := 2*j - p.pad + k; col >= 0 && col < p.width {
						x = in[c*cstride+r*ld+col]
					}
					wk := w[c*wstride+(3*r+k)*Lanes:][:Lanes]
					for o := range Lanes {
						acc[o] += wk[o] * x
					}
				}
			}
		}
		for o := range Lanes {
			out[o*ldo+j] = clamp(acc[o]+bias[o], lo, hi)
		}
	}
}
