package direct

// Rows and Cols are the size of the block Block computes: output channels
// and output positions.
const (
	Rows = 8
	Cols = 48
)

// Block sets out[r·ldo + q], r < Rows, q < Cols, to
// Σ_c Σ_t w[(c·len(taps) + t)·Rows + r] · in[c·cstride + taps[t] + q]
// over channels input channels. It panics if a slice is too short for the
// block (in must reach (channels-1)·cstride + max(taps) + Cols) or a tap
// is negative.
func Block(out []float32, ldo int, in []float32, cstride int, taps []int, w []float32, channels int) {
	BlockCols(out, ldo, in, cstride, taps, w, channels, Cols)
}

// BlockCols is Block for a block of which only the first cols positions
// are needed (a plane's last block): the AVX2 kernel then skips the
// second half of the positions when cols <= Cols/2. The others may still
// be computed and stored, so the slices must be as long as Block's.
func BlockCols(out []float32, ldo int, in []float32, cstride int, taps []int, w []float32, channels, cols int) {
	if channels <= 0 || len(taps) == 0 {
		panic("direct: Block needs at least one channel and one tap")
	}
	maxTap := 0
	for _, t := range taps {
		if t < 0 {
			panic("direct: negative tap offset")
		}
		maxTap = max(maxTap, t)
	}
	if ldo < Cols || len(out) < (Rows-1)*ldo+Cols {
		panic("direct: output block too short")
	}
	if len(in) < (channels-1)*cstride+maxTap+Cols {
		panic("direct: input too short for the block")
	}
	if len(w) < channels*len(taps)*Rows {
		panic("direct: weights too short")
	}
	if haveAsm {
		blockAVX512(&out[0], ldo, &in[0], cstride, &taps[0], len(taps), &w[0], channels)
		return
	}
	if haveAVX2 {
		blockAVX2(&out[0], ldo, &in[0], cstride, &taps[0], len(taps), &w[0], channels, cols)
		return
	}
	blockGo(out, ldo, in, cstride, taps, w, channels)
}

// blockGo is Block in Go, accumulating in the order of the assembly (for
// each channel, each tap in turn); the assembly's fused multiply-adds round
// once where Go rounds twice.
func blockGo(out []float32, ldo int, in []float32, cstride int, taps []int, w []float32, channels int) {
	var acc [Rows][Cols]float32
	for c := range channels {
		for t, off := range taps {
			src := in[c*cstride+off:][:Cols]
			wt := w[(c*len(taps)+t)*Rows:][:Rows]
			for r, wv := range wt {
				a := &acc[r]
				for q, v := range src {
					a[q] += wv * v
				}
			}
		}
	}
	for r := range Rows {
		copy(out[r*ldo:r*ldo+Cols], acc[r][:])
	}
}

// Fast reports whether the direct kernels run in AVX-512 assembly on this
// machine: Block, GradBlock, the in-place plans and RowsPlan.
func Fast() bool { return haveAsm }

// FastBlocks reports whether Block, GradBlock, Depthwise and
// SamePlan.Im2col run in vector assembly on this machine: AVX-512, or AVX2
// on CPUs without it (the other kernels of Fast run in Go there).
func FastBlocks() bool { return haveAsm || haveAVX2 }

// HaveCol2im reports whether SamePlan.Col2im runs in AVX2 assembly on this
// machine (with or without AVX-512).
func HaveCol2im() bool { return haveAVX2 }

// GradRows and GradCols are the size of the block of weight gradients
// GradBlock computes: output channels and (input channel, tap) pairs.
const (
	GradRows = 4
	GradCols = 6
)

// GradBlock computes a block of weight gradients' sums over n positions:
// for r < GradRows and j < GradCols it sets sums[r·GradCols + j] to
// Σ_k dy[r·ldy + k] · in[offs[j] + k] over k < n (n a multiple of 16): the
// output gradient of channel r times the input that tap pair j reads. The
// products are summed in float32, in 16 lanes (position k in lane k mod
// 16), and the lanes added in float64. It panics if a slice is too short.
func GradBlock(sums *[GradRows * GradCols]float64, dy []float32, ldy int, in []float32, offs *[GradCols]int, n int) {
	if n <= 0 || n%16 != 0 {
		panic("direct: GradBlock needs a positive multiple of 16 positions")
	}
	if len(dy) < (GradRows-1)*ldy+n {
		panic("direct: GradBlock output gradient too short")
	}
	for _, o := range offs {
		if o < 0 || len(in) < o+n {
			panic("direct: GradBlock input too short for its offsets")
		}
	}
	if haveAsm {
		gradBlockAVX512(sums, &dy[0], ldy, &in[0], offs, n)
		return
	}
	if haveAVX2 {
		gradBlockAVX2(sums, &dy[0], ldy, &in[0], offs, n)
		return
	}
	gradBlockGo(sums, dy, ldy, in, offs, n)
}

func gradBlockGo(sums *[GradRows * GradCols]float64, dy []float32, ldy int, in []float32, offs *[GradCols]int, n int) {
	for j, o := range offs {
		for r := range GradRows {
			var lanes [16]float32
			for k := 0; k < n; k += 16 {
				x, d := in[o+k:][:16], dy[r*ldy+k:][:16]
				for l := range 16 {
					lanes[l] += d[l] * x[l]
				}
			}
			var s float64
			for _, v := range lanes {
				s += float64(v)
			}
			sums[r*GradCols+j] = s
		}
	}
}

// Lanes is the vector width of Depthwise: its n is a multiple of it.
const Lanes = 16

// Depthwise sets out[q] = min(max(Σ_t w[t]·in[taps[t]+q] + bias, lo), hi)
// for q < n, n a multiple of 16: one plane of a depthwise convolution laid
// out as for Block, with its bias and a clamp (lo, hi = ±Inf for none, 0
// and +Inf for ReLU, 0 and 6 for ReLU6; NaN stays NaN). The sum runs over
// the taps in order. It panics if a slice is too short or a tap negative.
func Depthwise(out, in []float32, taps []int, w []float32, n int, bias, lo, hi float32) {
	if n < 0 || n%16 != 0 || len(taps) == 0 || len(w) < len(taps) || len(out) < n {
		panic("direct: Depthwise arguments out of range")
	}
	for _, t := range taps {
		if t < 0 || len(in) < t+n {
			panic("direct: Depthwise input too short for its taps")
		}
	}
	if n == 0 {
		return
	}
	if haveAsm {
		depthwiseAVX512(&out[0], &in[0], &taps[0], len(taps), &w[0], n, bias, lo, hi)
		return
	}
	if haveAVX2 {
		depthwiseAVX2(&out[0], &in[0], &taps[0], len(taps), &w[0], n, bias, lo, hi)
		return
	}
	for q := range n {
		var acc float32
		for t, off := range taps {
			acc += w[t] * in[off+q]
		}
		out[q] = clamp(acc+bias, lo, hi)
	}
}
