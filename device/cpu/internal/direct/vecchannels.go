package direct

import "fmt"

// VecRows and VecCols are the size of the blocks VecBlocks computes:
// output channels (two vectors of 8) and output positions.
const (
	VecRows = 16
	VecCols = 6
)

// VecFast reports whether VecBlocks runs in vector assembly (AVX2) on this
// machine.
func VecFast() bool { return haveAVX2 }

// VecBlocks is the direct convolution with the output channels in the
// vectors, for small planes whose positions fill Block's 48-wide blocks
// badly (a 7×7 plane's 49 outputs). For each output position i <
// len(pos) and channel r < VecRows it sets
//
//	out[i·VecRows + r] = Σ_k w[k·VecRows + r] · in[pos[i] + offs[k]]
//
// the sum running over k < len(offs) in order from zero, one multiply-add
// each. offs lists each (input channel, tap) pair's offset from an output
// position's first input (c·cstride + tap), and pos each position's first
// input, so that positions may lie in different rows or images. The
// positions go VecCols at a time (len(pos) must be a multiple of VecCols:
// a caller with fewer repeats one and ignores the extra outputs). w holds
// the filters packed VecRows output channels per pair (zero past the real
// ones). The caller lays the input out padded, so that every pair of every
// position reads inside in. It panics if a slice is too short or an offset
// out of range.
func VecBlocks(out []float32, in []float32, pos []int, offs []int, w []float32) {
	vecBlocks(out, in, pos, offs, w, false)
}

// VecBlocksAdd is VecBlocks adding to out: each sum starts from out's
// value instead of zero and goes on as VecBlocks's (so that a run of
// offsets cut in two calls gives the bits of one call). With the roles
// swapped it computes a convolution's weight gradient: pos the (input
// channel, tap) pairs' offsets, offs the output positions' first inputs
// and w their output gradients, VecRows channels per position.
func VecBlocksAdd(out []float32, in []float32, pos []int, offs []int, w []float32) {
	vecBlocks(out, in, pos, offs, w, true)
}

func vecBlocks(out []float32, in []float32, pos []int, offs []int, w []float32, add bool) {
	k := len(offs)
	if len(pos)%VecCols != 0 || len(out) < len(pos)*VecRows || len(w) < k*VecRows {
		panic(fmt.Sprintf("direct: VecBlocks of %d positions, %d pairs: %d outputs, %d weights", len(pos), k, len(out), len(w)))
	}
	if k == 0 {
		if !add {
			clear(out[:len(pos)*VecRows])
		}
		return
	}
	lo, hi := offs[0], offs[0]
	for _, o := range offs {
		lo, hi = min(lo, o), max(hi, o)
	}
	for i, q := range pos {
		if q+lo < 0 || q+hi >= len(in) {
			panic(fmt.Sprintf("direct: VecBlocks position %d at %d reads %d to %d: %d inputs", i, q, q+lo, q+hi, len(in)))
		}
	}
	for b := 0; b < len(pos); b += VecCols {
		block := (*[VecCols]int)(pos[b : b+VecCols])
		if haveAVX2 {
			vecBlockAVX2(&out[b*VecRows], &in[0], block, &offs[0], k, &w[0], add)
		} else {
			vecBlockGo(out[b*VecRows:], in, block, offs, w, add)
		}
	}
}

// vecBlockGo is one block of VecBlocks in Go, summing in the assembly's
// order (Go rounds each product, the assembly's fused multiply-add does
// not).
func vecBlockGo(out []float32, in []float32, pos *[VecCols]int, offs []int, w []float32, add bool) {
	var acc [VecCols][VecRows]float32
	if add {
		for p := range VecCols {
			copy(acc[p][:], out[p*VecRows:(p+1)*VecRows])
		}
	}
	for k, o := range offs {
		wk := w[k*VecRows : (k+1)*VecRows]
		for p, q := range pos {
			x := in[q+o]
			for r, v := range wk {
				acc[p][r] += v * x
			}
		}
	}
	for p := range VecCols {
		copy(out[p*VecRows:(p+1)*VecRows], acc[p][:])
	}
}
