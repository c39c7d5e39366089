package winograd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// transforms are the algorithms under test, with the Go code of each.
var transforms = []struct {
	t             *Transform
	inputGo       func(v []float32, stride int, rows [][]float32, n int)
	outputGo      func(y [][]float32, m []float32, stride int, n int)
	convolveBound float64
}{
	{F2, input2Go, output2Go, 1e-5},
	{F4, input4Go, output4Go, 2e-5},
}

func newRows(n, length int) [][]float32 {
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = make([]float32, length)
	}
	return rows
}

// TestTransformsConvolve checks the three transforms of each algorithm
// against the direct 3×3 correlation in float64: for a row of tiles over
// random rows and a random filter, Aᵀ·(U ⊙ V)·A must be each tile's
// Tile×Tile outputs, for the filter and for its 180° rotation.
func TestTransformsConvolve(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tr := range transforms {
		w := tr.t
		for _, tiles := range []int{1, 5, 16, 17, 40} {
			for _, flip := range []bool{false, true} {
				rows := newRows(w.Patch, w.RowLen(tiles))
				for i := range rows {
					for j := range w.Tile*tiles + 2 {
						rows[i][j] = r.Float32()*2 - 1
					}
				}
				g := make([]float32, 9)
				for i := range g {
					g[i] = r.Float32()*2 - 1
				}
				stride := Span(tiles) + 3
				u := make([]float32, w.Matrices)
				T := w.FilterMatrix(flip)
				for x := range w.Matrices {
					for k := range 9 {
						u[x] += T[x*9+k] * g[k]
					}
				}
				v := make([]float32, w.Matrices*stride)
				w.Input(v, stride, rows, tiles)
				for x := range w.Matrices {
					for tt := range Span(tiles) {
						v[x*stride+tt] *= u[x]
					}
				}
				y := newRows(w.Tile, w.OutLen(tiles))
				w.Output(y, v, stride, tiles)
				for tt := range tiles {
					for dy := range w.Tile {
						for dx := range w.Tile {
							want := 0.0
							for kh := range 3 {
								for kw := range 3 {
									k := kh*3 + kw
									if flip {
										k = 8 - k
									}
									want += float64(rows[dy+kh][w.Tile*tt+dx+kw]) * float64(g[k])
								}
							}
							if got := y[dy][w.Tile*tt+dx]; math.Abs(float64(got)-want) > tr.convolveBound {
								t.Fatalf("%v, tiles %d flip %v: tile %d output (%d,%d) = %g, want %g", w, tiles, flip, tt, dy, dx, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestAssemblyMatchesGo requires the assembly transforms, AVX-512 and AVX2
// where the CPU has them, to give the Go code's bits.
func TestAssemblyMatchesGo(t *testing.T) {
	if asmLevel == asmNone {
		t.Skip("no assembly transforms on this machine")
	}
	defer func(saved int) { asmLevel = saved }(asmLevel)
	for level := asmLevel; level > asmNone; level-- {
		asmLevel = level
		t.Run([]string{asmAVX2: "avx2", asmAVX512: "avx512"}[level], checkAssembly)
	}
}

func checkAssembly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tr := range transforms {
		w := tr.t
		for _, tiles := range []int{1, 16, 33, 64} {
			n := Span(tiles)
			rows := newRows(w.Patch, w.RowLen(tiles))
			for i := range rows {
				for j := range rows[i] {
					rows[i][j] = r.Float32()*2 - 1
				}
			}
			stride := n + 5
			got, want := make([]float32, w.Matrices*stride), make([]float32, w.Matrices*stride)
			w.Input(got, stride, rows, tiles)
			tr.inputGo(want, stride, rows, n)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v Input, %d tiles: element %d = %g, Go gives %g", w, tiles, i, got[i], want[i])
				}
			}
			for i := range got {
				got[i] = r.Float32()*2 - 1
			}
			a, b := newRows(w.Tile, w.OutLen(tiles)), newRows(w.Tile, w.OutLen(tiles))
			w.Output(a, got, stride, tiles)
			tr.outputGo(b, got, stride, n)
			for r := range a {
				for i := range a[r] {
					if math.Float32bits(a[r][i]) != math.Float32bits(b[r][i]) {
						t.Fatalf("%v Output, %d tiles: row %d column %d = %g, Go gives %g", w, tiles, r, i, a[r][i], b[r][i])
					}
				}
			}
		}
	}
}

// TestShortBuffersPanic checks that the transforms refuse buffers too
// short for the tiles instead of writing past them.
func TestShortBuffersPanic(t *testing.T) {
	for _, tr := range transforms {
		w := tr.t
		rows := newRows(w.Patch, w.RowLen(16)-1)
		mustPanic(t, "short rows", func() { w.Input(make([]float32, w.Matrices*16), 16, rows, 16) })
		mustPanic(t, "too few rows", func() { w.Input(make([]float32, w.Matrices*16), 16, newRows(w.Patch-1, w.RowLen(16)), 16) })
		y := newRows(w.Tile, w.OutLen(16))
		mustPanic(t, "short products", func() { w.Output(y, make([]float32, (w.Matrices-1)*16), 16, 16) })
		y[w.Tile-1] = y[w.Tile-1][:w.OutLen(16)-1]
		mustPanic(t, "short output", func() { w.Output(y, make([]float32, w.Matrices*16), 16, 16) })
	}
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
