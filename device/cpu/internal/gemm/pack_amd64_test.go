//go:build amd64 && !noasm

package gemm

import (
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestPackTransAVX512 checks the in-register transposes against packTrans
// for every panel width the AVX-512 kernel uses, every partial panel
// (v < w: zero-padded) and depths around the 16-column blocks, and that
// nothing is written past the packed panel's slack.
func TestPackTransAVX512(t *testing.T) {
	if !cpu.X86.HasAVX512F {
		t.Skip("no AVX-512 on this CPU")
	}
	checkPackTrans(t, packTransAVX512, []int{14, 16, 32})
}

// TestPackTransAVX2 is TestPackTransAVX512 for the AVX2 kernel's panels
// (6 rows of op(A), 16 columns of op(B)) and its 8×8 transposes.
func TestPackTransAVX2(t *testing.T) {
	if !cpu.X86.HasAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	checkPackTrans(t, packTransAVX2, []int{6, 16})
}

func checkPackTrans(t *testing.T, pack packFunc, widths []int) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, w := range widths {
		for v := 1; v <= w; v++ {
			for _, kb := range []int{1, 7, 8, 9, 15, 16, 17, 33, 48, 70} {
				ld := kb + 3
				src := make([]float32, (v-1)*ld+kb)
				for i := range src {
					src[i] = rng.Float32()*2 - 1
				}
				want := make([]float32, kb*w+packSlack)
				got := make([]float32, kb*w+packSlack+8)
				for i := range got {
					got[i] = -7 // stale values the packing must overwrite
				}
				packTrans(want, src, ld, w, kb, v)
				pack(got, src, ld, w, kb, v)
				for i := 0; i < kb*w; i++ {
					if got[i] != want[i] {
						t.Fatalf("w=%d v=%d kb=%d: element %d (k step %d, row %d) is %v, want %v", w, v, kb, i, i/w, i%w, got[i], want[i])
					}
				}
				for i := kb*w + packSlack; i < len(got); i++ {
					if got[i] != -7 {
						t.Fatalf("w=%d v=%d kb=%d: wrote past the slack at %d", w, v, kb, i)
					}
				}
			}
		}
	}
}
