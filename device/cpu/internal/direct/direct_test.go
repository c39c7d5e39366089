package direct

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBlockMatchesReference checks Block against the float64 sum it
// defines, on random inputs, taps and weights, for one to 70 channels.
func TestBlockMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, channels := range []int{1, 3, 16, 70} {
		taps := []int{0, 1, 2, 31, 32, 33, 62, 63, 64}
		cstride := 64 + 2*Cols + 5
		in := make([]float32, channels*cstride+Cols)
		for i := range in {
			in[i] = r.Float32()*2 - 1
		}
		w := make([]float32, channels*len(taps)*Rows)
		for i := range w {
			w[i] = r.Float32()*2 - 1
		}
		ldo := Cols + 7
		out := make([]float32, Rows*ldo)
		Block(out, ldo, in, cstride, taps, w, channels)
		for row := range Rows {
			for q := range Cols {
				var want, mag float64
				for c := range channels {
					for ti, off := range taps {
						p := float64(w[(c*len(taps)+ti)*Rows+row]) * float64(in[c*cstride+off+q])
						want += p
						mag += math.Abs(p)
					}
				}
				if got := float64(out[row*ldo+q]); math.Abs(got-want) > 1e-6*mag {
					t.Fatalf("%d channels: out[%d][%d] = %g, want %g", channels, row, q, got, want)
				}
			}
		}
	}
}

// TestBlockChecksLengths requires short slices to panic, not to be read
// or written past their ends.
func TestBlockChecksLengths(t *testing.T) {
	taps := []int{0, 3}
	in := make([]float32, 1*10+3+Cols)
	w := make([]float32, 2*2*Rows)
	out := make([]float32, Rows*Cols)
	Block(out, Cols, in, 10, taps, w, 2) // fits exactly
	for name, f := range map[string]func(){
		"input":   func() { Block(out, Cols, in[:len(in)-1], 10, taps, w, 2) },
		"weights": func() { Block(out, Cols, in, 10, taps, w[:len(w)-1], 2) },
		"output":  func() { Block(out[:len(out)-1], Cols, in, 10, taps, w, 2) },
		"tap":     func() { Block(out, Cols, in, 10, []int{-1}, w, 2) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s too short: no panic", name)
				}
			}()
			f()
		}()
	}
}

// TestGradBlockMatchesReference checks GradBlock's lane sums, added up,
// against the float64 dot products they stand for.
func TestGradBlockMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{16, 48, 800} {
		ldy := n + 3
		dy := make([]float32, GradRows*ldy)
		in := make([]float32, n+100)
		for i := range dy {
			dy[i] = r.Float32()*2 - 1
		}
		for i := range in {
			in[i] = r.Float32()*2 - 1
		}
		offs := [GradCols]int{0, 1, 2, 30, 31, 100}
		partial := make([]float32, GradRows*GradCols*16)
		GradBlock(partial, dy, ldy, in, &offs, n)
		for row := range GradRows {
			for j, o := range offs {
				var got, want, mag float64
				for l := range 16 {
					got += float64(partial[(row*GradCols+j)*16+l])
				}
				for k := range n {
					p := float64(dy[row*ldy+k]) * float64(in[o+k])
					want += p
					mag += math.Abs(p)
				}
				if math.Abs(got-want) > 1e-6*mag {
					t.Fatalf("n %d: row %d pair %d = %g, want %g", n, row, j, got, want)
				}
			}
		}
	}
}
