package gemm

import (
	"math/rand/v2"
	"testing"
)

// TestPackRows checks packRows against the layout written out element by
// element: panel jr of w columns at jr*kb, k step p of it at p*w, columns
// past nb zero (the destination starts as garbage).
func TestPackRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, w := range []int{4, 6, 14, 16, 32} {
		for _, nb := range []int{1, w - 1, w, 3*w + 5} {
			for _, kb := range []int{1, 7} {
				if nb < 1 {
					continue
				}
				const ld = 101
				src := randSlice(rng, kb*ld)
				panels := (nb + w - 1) / w
				got := make([]float32, panels*w*kb)
				for i := range got {
					got[i] = -7
				}
				packRows(got, src, ld, w, kb, nb)
				for jr := 0; jr < panels*w; jr += w {
					for p := range kb {
						for i := range w {
							var want float32
							if jr+i < nb {
								want = src[p*ld+jr+i]
							}
							if g := got[jr*kb+p*w+i]; g != want {
								t.Fatalf("w=%d nb=%d kb=%d: panel %d step %d column %d is %v, want %v", w, nb, kb, jr/w, p, i, g, want)
							}
						}
					}
				}
			}
		}
	}
}
