package winograd

// Lanes is the number of tiles the transforms handle per step: Input and
// Output always process a multiple of Lanes tiles (see their contracts).
const Lanes = 16

// A Transform is one Winograd algorithm F(m×m, 3×3): a tile of Tile×Tile
// outputs is computed from a Patch×Patch patch of the input (Tile plus the
// filter's overlap of two); patch and filter are transformed into
// Matrices values each, multiplied value by value and summed over the
// input channels (Matrices matrix products, which the caller computes with
// its GEMM), and transformed back.
type Transform struct {
	Tile, Patch, Matrices int

	name   string
	g      [][3]float64 // the filter transform G, Patch×3
	input  func(v []float32, stride int, rows [][]float32, n int)
	output func(y [][]float32, m []float32, stride int, n int)
}

// String names the algorithm, e.g. "F(4×4, 3×3)".
func (t *Transform) String() string { return t.name }

// RowLen is the length the input rows given to Input must have for a row
// of tiles tiles: Tile columns per tile, rounded up to whole steps of Lanes
// tiles, plus the two columns of the last tile's overlap.
func (t *Transform) RowLen(tiles int) int { return t.Tile*roundUp(tiles) + 2 }

// OutLen is the length of the output rows Output writes for a row of
// tiles tiles.
func (t *Transform) OutLen(tiles int) int { return t.Tile * roundUp(tiles) }

// Span is how many elements of each matrix Input writes (and Output reads)
// for a row of tiles tiles: the tiles rounded up to whole steps.
func Span(tiles int) int { return roundUp(tiles) }

func roundUp(tiles int) int { return (tiles + Lanes - 1) / Lanes * Lanes }

// FilterMatrix returns the Matrices×9 matrix T (row-major) that maps a 3×3
// filter w, as a vector of its 9 elements in row-major order, to its
// transform: (G·w·Gᵀ)[ξ] = Σₖ T[ξ][k]·w[k], T[Patch·i+j][3a+b] =
// G[i][a]·G[j][b], each entry rounded to float32 once. With flip, T maps w
// to the transform of w rotated by 180°, the filter of the convolution
// that computes the input gradient. The transform of many filters is then
// one matrix product.
func (t *Transform) FilterMatrix(flip bool) []float32 {
	m := make([]float32, t.Matrices*9)
	for i := range t.Patch {
		for j := range t.Patch {
			for a := range 3 {
				for b := range 3 {
					k := 3*a + b
					if flip {
						k = 8 - k
					}
					m[(t.Patch*i+j)*9+k] = float32(t.g[i][a] * t.g[j][b])
				}
			}
		}
	}
	return m
}

// Input transforms a row of tiles: rows are the Patch input rows the tiles
// cover, each at least RowLen(tiles) long, tile t reading columns Tile·t to
// Tile·t+Patch-1 (the caller zero-pads them). It sets v[ξ·stride + t] =
// (Bᵀ·d_t·B)[ξ] for t < Span(tiles), so v must hold (Matrices-1)·stride +
// Span(tiles) elements; the values past tiles come from the padding.
func (t *Transform) Input(v []float32, stride int, rows [][]float32, tiles int) {
	n := roundUp(tiles)
	if n == 0 {
		return
	}
	if len(rows) != t.Patch {
		panic("winograd: Input needs Patch rows")
	}
	need := t.RowLen(tiles)
	for _, r := range rows {
		if len(r) < need {
			panic("winograd: Input row shorter than RowLen(tiles)")
		}
	}
	if len(v) < (t.Matrices-1)*stride+n || stride < n {
		panic("winograd: Input matrices too short")
	}
	t.input(v, stride, rows, n)
}

// Output transforms a row of tiles back: m[ξ·stride + t] holds position ξ
// of tile t's product matrix, for t < Span(tiles) ((Matrices-1)·stride +
// Span(tiles) elements). It sets y[r][Tile·t+c] to tile t's output (r, c)
// of Aᵀ·m_t·A; y holds Tile rows, each at least OutLen(tiles) long.
func (t *Transform) Output(y [][]float32, m []float32, stride int, tiles int) {
	n := roundUp(tiles)
	if n == 0 {
		return
	}
	if len(y) != t.Tile {
		panic("winograd: Output needs Tile rows")
	}
	for _, r := range y {
		if len(r) < t.Tile*n {
			panic("winograd: Output rows shorter than OutLen(tiles)")
		}
	}
	if len(m) < (t.Matrices-1)*stride+n || stride < n {
		panic("winograd: Output matrices too short")
	}
	t.output(y, m, stride, n)
}

// Fast reports whether the transforms run in vector assembly (AVX-512 or
// AVX2) on this machine; in Go they are too slow for the convolution to
// gain from them.
func Fast() bool { return asmLevel != asmNone }
