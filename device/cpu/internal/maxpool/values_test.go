package maxpool

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestValues3s2MatchesGo checks Values3s2 (assembly where the CPU has it)
// against the Go loop, bit for bit, on rows of 1 to 40 windows (full and
// partial steps), 1 to 3 input rows, with random values, ties of both
// zeros and NaNs; and that nothing past the windows is written.
func TestValues3s2MatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	negZero := float32(math.Copysign(0, -1))
	nan := float32(math.NaN())
	for _, mode := range []string{"random", "zeros", "nans"} {
		for n := 1; n <= 40; n++ {
			for rows := 1; rows <= 3; rows++ {
				ld := 2*n + 1 + r.IntN(3)
				x := make([]float32, (rows-1)*ld+2*n+1)
				for i := range x {
					switch {
					case mode == "zeros" && r.IntN(2) == 0:
						x[i] = negZero
					case mode == "zeros":
						x[i] = float32(r.IntN(2)) * negZero * -1 // +0 or... -0·-1·{0,1}
					case mode == "nans" && r.IntN(10) == 0:
						x[i] = nan
					default:
						x[i] = r.Float32()*2 - 1
					}
				}
				want := make([]float32, n)
				values3s2Go(want, x, ld, rows)
				got := make([]float32, n+17)
				for i := range got {
					got[i] = 99
				}
				Values3s2(got[:n], x, ld, rows)
				for j := range n {
					w, g := want[j], got[j]
					if math.Float32bits(w) != math.Float32bits(g) && !(w != w && g != g) {
						t.Fatalf("%s, %d windows, %d rows: y[%d] = %v (%#x), want %v (%#x)", mode, n, rows, j, g, math.Float32bits(g), w, math.Float32bits(w))
					}
				}
				for j := n; j < len(got); j++ {
					if got[j] != 99 {
						t.Fatalf("%s, %d windows: y[%d] written", mode, n, j)
					}
				}
			}
		}
	}
}

// TestValues3s2ChecksLengths requires too short an input to panic.
func TestValues3s2ChecksLengths(t *testing.T) {
	y, x := make([]float32, 4), make([]float32, 2*9+9)
	Values3s2(y, x, 9, 3) // fits exactly
	for name, f := range map[string]func(){
		"input": func() { Values3s2(y, x[:len(x)-1], 9, 3) },
		"ld":    func() { Values3s2(y, x, 8, 3) },
		"rows":  func() { Values3s2(y, x, 9, 4) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: accepted", name)
				}
			}()
			f()
		}()
	}
}
