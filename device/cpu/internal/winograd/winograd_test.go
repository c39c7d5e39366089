package winograd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTransformsConvolve checks the three transforms against the direct
// 3×3 correlation in float64: for a row of tiles over random rows and a
// random filter, Aᵀ·(U ⊙ V)·A must be each tile's 2×2 outputs, for the
// filter and for its 180° rotation.
func TestTransformsConvolve(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tiles := range []int{1, 5, 16, 17, 40} {
		for _, flip := range []bool{false, true} {
			var rows [4][]float32
			for i := range rows {
				rows[i] = make([]float32, RowLen(tiles))
				for j := range 2*tiles + 2 {
					rows[i][j] = r.Float32()*2 - 1
				}
			}
			g := make([]float32, 9)
			for i := range g {
				g[i] = r.Float32()*2 - 1
			}
			stride := Span(tiles) + 3
			u := make([]float32, 16)
			T := FilterMatrix(flip)
			for x := range 16 {
				for k := range 9 {
					u[x] += T[x*9+k] * g[k]
				}
			}
			v := make([]float32, 16*stride)
			Input(v, stride, &rows, tiles)
			for x := range 16 {
				for tt := range Span(tiles) {
					v[x*stride+tt] *= u[x]
				}
			}
			y0, y1 := make([]float32, OutLen(tiles)), make([]float32, OutLen(tiles))
			Output(y0, y1, v, stride, tiles)
			for tt := range tiles {
				for dy := range 2 {
					for dx := range 2 {
						want := 0.0
						for kh := range 3 {
							for kw := range 3 {
								k := kh*3 + kw
								if flip {
									k = 8 - k
								}
								want += float64(rows[dy+kh][2*tt+dx+kw]) * float64(g[k])
							}
						}
						got := []float32{y0[2*tt+dx], y1[2*tt+dx]}[dy]
						if math.Abs(float64(got)-want) > 1e-5 {
							t.Fatalf("tiles %d flip %v: tile %d output (%d,%d) = %g, want %g", tiles, flip, tt, dy, dx, got, want)
						}
					}
				}
			}
		}
	}
}

// TestAssemblyMatchesGo requires the assembly transforms to give the Go
// code's bits.
func TestAssemblyMatchesGo(t *testing.T) {
	if !haveAsm {
		t.Skip("no assembly transforms on this machine")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, tiles := range []int{1, 16, 33, 64} {
		n := Span(tiles)
		var rows [4][]float32
		for i := range rows {
			rows[i] = make([]float32, RowLen(tiles))
			for j := range rows[i] {
				rows[i][j] = r.Float32()*2 - 1
			}
		}
		stride := n + 5
		got, want := make([]float32, 16*stride), make([]float32, 16*stride)
		Input(got, stride, &rows, tiles)
		inputGo(want, stride, &rows, n)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("Input, %d tiles: element %d = %g, Go gives %g", tiles, i, got[i], want[i])
			}
		}
		for i := range got {
			got[i] = r.Float32()*2 - 1
		}
		a0, a1 := make([]float32, OutLen(tiles)), make([]float32, OutLen(tiles))
		b0, b1 := make([]float32, OutLen(tiles)), make([]float32, OutLen(tiles))
		Output(a0, a1, got, stride, tiles)
		outputGo(b0, b1, got, stride, n)
		for i := range a0 {
			if a0[i] != b0[i] || a1[i] != b1[i] {
				t.Fatalf("Output, %d tiles: column %d = %g %g, Go gives %g %g", tiles, i, a0[i], a1[i], b0[i], b1[i])
			}
		}
	}
}

// TestShortBuffersPanic checks that the transforms refuse buffers too
// short for the tiles instead of writing past them.
func TestShortBuffersPanic(t *testing.T) {
	var rows [4][]float32
	for i := range rows {
		rows[i] = make([]float32, RowLen(16)-1)
	}
	mustPanic(t, "short rows", func() { Input(make([]float32, 16*16), 16, &rows, 16) })
	mustPanic(t, "short output", func() { Output(make([]float32, 31), make([]float32, 32), make([]float32, 16*16), 16, 16) })
	mustPanic(t, "short products", func() { Output(make([]float32, 32), make([]float32, 32), make([]float32, 15*16), 16, 16) })
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	f()
}
