package direct

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestVecBlocksMatchesSums checks VecBlock against the sums it defines,
// computed in float64, on blocks whose positions lie in different rows
// and repeat, with few and many pairs.
func TestVecBlocksMatchesSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, pairs := range []int{1, 2, 9, 27, 144, 577} {
		in := make([]float32, 4000)
		for i := range in {
			in[i] = rng.Float32()*2 - 1
		}
		offs := make([]int, pairs)
		for k := range offs {
			offs[k] = rng.IntN(2000) - 500
		}
		w := make([]float32, pairs*VecRows)
		for i := range w {
			w[i] = rng.Float32()*2 - 1
		}
		pos := []int{600, 601, 700, 1300, 600, 1999, 1999, 500, 501, 502, 503, 504}
		out := make([]float32, len(pos)*VecRows)
		VecBlocks(out, in, pos, offs, w)
		for p, q := range pos {
			for r := range VecRows {
				var want, mag float64
				for k, o := range offs {
					term := float64(w[k*VecRows+r]) * float64(in[q+o])
					want += term
					mag += math.Abs(term)
				}
				if got := float64(out[p*VecRows+r]); math.Abs(got-want) > 1e-6*mag+1e-7 {
					t.Fatalf("%d pairs: position %d channel %d: %g, want %g", pairs, p, r, got, want)
				}
			}
		}
	}
}

// TestVecBlocksPanicsOutside checks that a position reading outside the
// input panics rather than reading past it.
func TestVecBlocksPanicsOutside(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a position reading past the input")
		}
	}()
	in := make([]float32, 100)
	pos := []int{0, 1, 2, 3, 4, 95}
	VecBlocks(make([]float32, VecCols*VecRows), in, pos, []int{0, 5}, make([]float32, 2*VecRows))
}

// TestVecBlocksAddGoesOn checks that VecBlocksAdd goes on with the sums:
// a run of offsets cut in two calls gives the bits of one VecBlocks call.
func TestVecBlocksAddGoesOn(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	in := make([]float32, 3000)
	for i := range in {
		in[i] = rng.Float32()*2 - 1
	}
	offs := make([]int, 100)
	for k := range offs {
		offs[k] = rng.IntN(2000)
	}
	w := make([]float32, len(offs)*VecRows)
	for i := range w {
		w[i] = rng.Float32()*2 - 1
	}
	pos := []int{0, 7, 99, 500, 3, 990}
	whole := make([]float32, len(pos)*VecRows)
	VecBlocks(whole, in, pos, offs, w)
	cut := make([]float32, len(pos)*VecRows)
	VecBlocks(cut, in, pos, offs[:37], w)
	VecBlocksAdd(cut, in, pos, offs[37:], w[37*VecRows:])
	for i := range whole {
		if whole[i] != cut[i] {
			t.Fatalf("sum %d: %g in one call, %g in two", i, whole[i], cut[i])
		}
	}
}
