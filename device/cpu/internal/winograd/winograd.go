package winograd

// Lanes is the number of tiles the transforms handle per step: Input and
// Output always process a multiple of Lanes tiles (see their contracts).
const Lanes = 16

// RowLen is the length the four input rows given to Input must have for a
// row of tiles tiles: two columns per tile, rounded up to whole steps of
// Lanes tiles, plus the two columns of the last tile's overlap.
func RowLen(tiles int) int { return 2*roundUp(tiles) + 2 }

// OutLen is the length of the two output rows Output writes for a row of
// tiles tiles.
func OutLen(tiles int) int { return 2 * roundUp(tiles) }

// Span is how many elements of each matrix Input writes (and Output reads)
// for a row of tiles tiles: the tiles rounded up to whole steps.
func Span(tiles int) int { return roundUp(tiles) }

func roundUp(tiles int) int { return (tiles + Lanes - 1) / Lanes * Lanes }

// FilterMatrix returns the 16×9 matrix T (row-major) that maps a 3×3
// filter g, as a vector of its 9 elements in row-major order, to its
// transform: (G·g·Gᵀ)[ξ] = Σₖ T[ξ][k]·g[k], T[4i+j][3a+b] = G[i][a]·G[j][b].
// With flip, T maps g to the transform of g rotated by 180°, the filter of
// the convolution that computes the input gradient. Its entries (0, ±¼,
// ±½, 1) are exact in float32, so the transform of many filters is one
// matrix product.
func FilterMatrix(flip bool) []float32 {
	G := [4][3]float32{{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}}
	t := make([]float32, 16*9)
	for i := range 4 {
		for j := range 4 {
			for a := range 3 {
				for b := range 3 {
					k := 3*a + b
					if flip {
						k = 8 - k
					}
					t[(4*i+j)*9+k] = G[i][a] * G[j][b]
				}
			}
		}
	}
	return t
}

// Input transforms a row of tiles: rows are the four input rows the tiles
// cover, each at least RowLen(tiles) long, tile t reading columns 2t to
// 2t+3 (the caller zero-pads them). It sets v[ξ·stride + t] = (Bᵀ·d_t·B)[ξ]
// for t < Span(tiles), so v must hold 15·stride + Span(tiles) elements;
// the values past tiles come from the padding.
func Input(v []float32, stride int, rows *[4][]float32, tiles int) {
	n := roundUp(tiles)
	if n == 0 {
		return
	}
	need := 2*n + 2
	for _, r := range rows {
		if len(r) < need {
			panic("winograd: Input row shorter than RowLen(tiles)")
		}
	}
	if len(v) < 15*stride+n || stride < n {
		panic("winograd: Input matrices too short")
	}
	if haveAsm {
		inputAVX512(&v[0], stride, &rows[0][0], &rows[1][0], &rows[2][0], &rows[3][0], n/Lanes)
		return
	}
	inputGo(v, stride, rows, n)
}

// inputGo is Input for n tiles, n a multiple of Lanes.
func inputGo(v []float32, stride int, rows *[4][]float32, n int) {
	for t := range n {
		var d [4][4]float32
		for i := range 4 {
			copy(d[i][:], rows[i][2*t:2*t+4])
		}
		for i := range 4 {
			// Row i of Bᵀ·d, then that row times B.
			var s [4]float32
			for j := range 4 {
				switch i {
				case 0:
					s[j] = d[0][j] - d[2][j]
				case 1:
					s[j] = d[1][j] + d[2][j]
				case 2:
					s[j] = d[2][j] - d[1][j]
				case 3:
					s[j] = d[1][j] - d[3][j]
				}
			}
			v[(4*i+0)*stride+t] = s[0] - s[2]
			v[(4*i+1)*stride+t] = s[1] + s[2]
			v[(4*i+2)*stride+t] = s[2] - s[1]
			v[(4*i+3)*stride+t] = s[1] - s[3]
		}
	}
}

// Output transforms a row of tiles back: m[ξ·stride + t] holds position ξ
// of tile t's product matrix, for t < Span(tiles) (15·stride + Span(tiles)
// elements). It sets y0[2t], y0[2t+1] and y1[2t], y1[2t+1] to tile t's
// 2×2 outputs Aᵀ·m_t·A; y0 and y1 must be at least OutLen(tiles) long.
func Output(y0, y1, m []float32, stride int, tiles int) {
	n := roundUp(tiles)
	if n == 0 {
		return
	}
	if len(y0) < 2*n || len(y1) < 2*n {
		panic("winograd: Output rows shorter than OutLen(tiles)")
	}
	if len(m) < 15*stride+n || stride < n {
		panic("winograd: Output matrices too short")
	}
	if haveAsm {
		outputAVX512(&y0[0], &y1[0], &m[0], stride, n/Lanes)
		return
	}
	outputGo(y0, y1, m, stride, n)
}

// outputGo is Output for n tiles, n a multiple of Lanes.
func outputGo(y0, y1, m []float32, stride int, n int) {
	for t := range n {
		var u0, u1 [4]float32
		for j := range 4 {
			m0, m1, m2, m3 := m[j*stride+t], m[(4+j)*stride+t], m[(8+j)*stride+t], m[(12+j)*stride+t]
			u0[j] = m0 + m1 + m2
			u1[j] = m1 - m2 - m3
		}
		y0[2*t] = u0[0] + u0[1] + u0[2]
		y0[2*t+1] = u0[1] - u0[2] - u0[3]
		y1[2*t] = u1[0] + u1[1] + u1[2]
		y1[2*t+1] = u1[1] - u1[2] - u1[3]
	}
}

// Fast reports whether the transforms run in vector assembly on this
// machine; in Go they are too slow for the convolution to gain from them.
func Fast() bool { return haveAsm }
