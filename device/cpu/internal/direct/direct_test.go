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

// TestGradBlockMatchesReference checks GradBlock's sums against the
// float64 dot products they stand for.
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
		var sums [GradRows * GradCols]float64
		GradBlock(&sums, dy, ldy, in, &offs, n)
		for row := range GradRows {
			for j, o := range offs {
				var want, mag float64
				got := sums[row*GradCols+j]
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

// TestDepthwiseMatchesReference checks Depthwise against its float64 sum,
// clamped, for lengths that use the 64- and 16-position steps, and that
// NaN passes the clamp.
func TestDepthwiseMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	taps := []int{0, 1, 2, 20, 21, 22, 40, 41, 42}
	w := make([]float32, len(taps))
	for i := range w {
		w[i] = r.Float32()*2 - 1
	}
	for _, n := range []int{16, 64, 80, 208} {
		in := make([]float32, n+42)
		for i := range in {
			in[i] = (r.Float32()*2 - 1) * 8
		}
		in[5] = float32(math.NaN())
		for _, clamp := range [][2]float32{{float32(math.Inf(-1)), float32(math.Inf(1))}, {0, float32(math.Inf(1))}, {0, 6}} {
			out := make([]float32, n)
			Depthwise(out, in, taps, w, n, 0.25, clamp[0], clamp[1])
			for q := range n {
				var want, mag float64
				for i, off := range taps {
					p := float64(w[i]) * float64(in[off+q])
					want += p
					mag += math.Abs(p)
				}
				want = min(max(want+0.25, float64(clamp[0])), float64(clamp[1]))
				hasNaN := false
				for _, off := range taps {
					if math.IsNaN(float64(in[off+q])) {
						hasNaN = true
					}
				}
				got := float64(out[q])
				if hasNaN {
					if !math.IsNaN(got) {
						t.Fatalf("n %d clamp %v: out[%d] = %g, want NaN", n, clamp, q, got)
					}
					continue
				}
				if math.Abs(got-want) > 1e-6*mag+1e-6 {
					t.Fatalf("n %d clamp %v: out[%d] = %g, want %g", n, clamp, q, got, want)
				}
			}
		}
	}
}
