package direct

import "fmt"

// RowsPlan is the plan of Block's results stored straight into output
// planes. Block's positions lie in rows of the phase width wq (padding
// included, see package cpu), of which the first ow of each row are
// outputs: position q = i·wq + j is output (i, j) when j < ow and i < oh,
// at i·ow + j of its plane. A vector of Lanes positions then spans at most
// two rows when wq >= Lanes, so its outputs are two masked stores, one per
// row, each at a constant offset from the vector's position. Storing from
// the registers skips the copy of a block out of a scratch buffer: on
// resnet18's 7×7 stem at batch 1 that copy, a pass over 3.2 MB of output
// planes written to memory, took a fifth of the layer's time. The kernel
// prefetches the outputs of the next block while it computes this one: a
// store that misses the cache holds up the stores behind it, and without
// the prefetch the stores cost as much as the copy.
//
// A plan is built once per geometry and may be used by any number of
// goroutines.
type RowsPlan struct {
	oh, ow, wq int
	// offs holds, for vector v (positions v·Lanes…), the output offsets of
	// its lanes in the row of its first position (2v) and in the next row
	// (2v+1): lane l of the vector goes to offs[…]+l.
	offs []int
	// masks holds the lanes of vector v stored at offs[2v] and offs[2v+1].
	masks []uint16
}

// NewRowsPlan returns the plan of oh output rows of ow outputs each, laid
// out in rows of wq positions. It panics unless 0 < ow <= wq, wq >= Lanes
// and oh > 0.
func NewRowsPlan(oh, ow, wq int) *RowsPlan {
	if oh <= 0 || ow <= 0 || ow > wq || wq < Lanes {
		panic(fmt.Sprintf("direct: NewRowsPlan(%d, %d, %d) out of range", oh, ow, wq))
	}
	p := &RowsPlan{oh: oh, ow: ow, wq: wq}
	nvec := p.Blocks() * Cols / Lanes
	p.offs = make([]int, 2*(nvec+Cols/Lanes)) // and a block past the last, whose outputs the kernel prefetches
	p.masks = make([]uint16, 2*nvec)
	for v := range nvec + Cols/Lanes {
		q := v * Lanes
		i := q / wq
		for k := range 2 {
			row := i + k
			p.offs[2*v+k] = q - row*(wq-ow) // position q+l of row `row` is output row·ow + (q+l-row·wq)
			for l := range Lanes * min(1, nvec-v) {
				if qq := q + l; qq/wq == row && qq%wq < ow && row < oh {
					p.masks[2*v+k] |= 1 << l
				}
			}
		}
	}
	return p
}

// Blocks returns the number of blocks of Cols positions that cover the
// plan's oh·wq positions.
func (p *RowsPlan) Blocks() int { return (p.oh*p.wq + Cols - 1) / Cols }

// BlockRange computes blocks [b0, b1), block b being positions q = b·Cols …
// b·Cols+Cols-1, as Block does with in[b·Cols:], and stores
//
//	out[r·ldo + i·ow + j] = min(max(sum + bias[r], lo), hi)
//
// for r < Rows and each q = i·wq + j that is an output; with bias nil the
// sums are stored as they are (no clamp). lo, hi = -Inf, +Inf for no
// activation, 0 and +Inf for ReLU, 0 and 6 for ReLU6; NaN stays NaN. The
// other positions of out are left alone. It panics if a slice is too
// short. The arguments are checked once for the range: with a call and
// its checks per block, mobilenet_v2's stem (264 blocks for each 8
// channels) took 161–176 µs at batch 1 on 2 Zen 4 threads, 148–159 µs
// with one call per range (BenchmarkConvSingleImage, alternating runs).
func (p *RowsPlan) BlockRange(out []float32, ldo int, in []float32, cstride int, taps []int, w []float32, channels, b0, b1 int, bias []float32, lo, hi float32) {
	if b0 < 0 || b1 > p.Blocks() || b0 > b1 || ldo < p.oh*p.ow || len(out) < (Rows-1)*ldo+p.oh*p.ow || (bias != nil && len(bias) < Rows) {
		panic(fmt.Sprintf("direct: RowsPlan.BlockRange [%d, %d) of %d into %d outputs %d apart (%d×%d planes), %d biases", b0, b1, p.Blocks(), len(out), ldo, p.oh, p.ow, len(bias)))
	}
	if channels <= 0 || len(taps) == 0 || len(w) < channels*len(taps)*Rows {
		panic("direct: RowsPlan.BlockRange needs a channel, a tap and their weights")
	}
	if b0 == b1 {
		return
	}
	maxTap := 0
	for _, t := range taps {
		if t < 0 {
			panic("direct: negative tap offset")
		}
		maxTap = max(maxTap, t)
	}
	if len(in) < (b1-1)*Cols+(channels-1)*cstride+maxTap+Cols {
		panic("direct: input too short for the blocks")
	}
	if haveAsm {
		var bp *float32
		if bias != nil {
			bp = &bias[0]
		}
		for b := b0; b < b1; b++ {
			v := b * Cols / Lanes
			blockRowsAVX512(&out[0], ldo, &in[b*Cols], cstride, &taps[0], len(taps), &w[0], channels, &p.offs[2*v], &p.masks[2*v], bp, lo, hi)
		}
		return
	}
	for b := b0; b < b1; b++ {
		p.blockGo(out, ldo, in[b*Cols:], cstride, taps, w, channels, b, bias, lo, hi)
	}
}

// blockGo is BlockRange for block b without the assembly, in the block's own
// input.
func (p *RowsPlan) blockGo(out []float32, ldo int, in []float32, cstride int, taps []int, w []float32, channels, b int, bias []float32, lo, hi float32) {
	v := b * Cols / Lanes
	var acc [Rows * Cols]float32
	Block(acc[:], Cols, in, cstride, taps, w, channels)
	for r := range Rows {
		for k := range Cols {
			s := acc[r*Cols+k]
			if bias != nil {
				s = min(max(s+bias[r], lo), hi) // NaN: Go's min and max keep it, as the assembly
			}
			vv, l := v+k/Lanes, k%Lanes
			for h := range 2 {
				if p.masks[2*vv+h]&(1<<l) != 0 {
					out[r*ldo+p.offs[2*vv+h]+l] = s
				}
			}
		}
	}
}
