package winograd

// F4 is F(4×4, 3×3): 36 multiply-adds per 4×4 outputs and channel pair,
// against 144 for the direct sum, with the interpolation points 0, ±1, ±2
// of Lavin and Gray. Its transforms scale values by up to 5 and 8 before
// they cancel, so its float32 results carry about ten times F2's rounding.
var F4 = &Transform{
	Tile: 4, Patch: 6, Matrices: 36,
	name: "F(4×4, 3×3)",
	g: [][3]float64{
		{1.0 / 4, 0, 0},
		{-1.0 / 6, -1.0 / 6, -1.0 / 6},
		{-1.0 / 6, 1.0 / 6, -1.0 / 6},
		{1.0 / 24, 1.0 / 12, 1.0 / 6},
		{1.0 / 24, -1.0 / 12, 1.0 / 6},
		{0, 0, 1},
	},
	input:  input4,
	output: output4,
}

// input4 is F4's Input for n tiles, n a multiple of Lanes.
func input4(v []float32, stride int, rows [][]float32, n int) {
	var tmp [36 * Lanes]float32
	switch asmLevel {
	case asmAVX512:
		input4AVX512(&v[0], stride, &rows[0][0], &rows[1][0], &rows[2][0], &rows[3][0], &rows[4][0], &rows[5][0], &tmp[0], n/Lanes)
	case asmAVX2:
		input4AVX2(&v[0], stride, &rows[0][0], &rows[1][0], &rows[2][0], &rows[3][0], &rows[4][0], &rows[5][0], &tmp[0], n/8)
	default:
		input4Go(v, stride, rows, n)
	}
}

// output4 is F4's Output for n tiles, n a multiple of Lanes.
func output4(y [][]float32, m []float32, stride int, n int) {
	var tmp [(24 + 16) * Lanes]float32
	switch asmLevel {
	case asmAVX512:
		output4AVX512(&y[0][0], &y[1][0], &y[2][0], &y[3][0], &m[0], stride, &tmp[0], n/Lanes)
	case asmAVX2:
		output4AVX2(&y[0][0], &y[1][0], &y[2][0], &y[3][0], &m[0], stride, &tmp[0], n/8)
	default:
		output4Go(y, m, stride, n)
	}
}

// input4Step is the 1-D input transform Bᵀ·d of six values,
//
//	    ⎡4  0 -5  0  1  0⎤
//	    ⎢0 -4 -4  1  1  0⎥
//	Bᵀ= ⎢0  4 -4 -1  1  0⎥
//	    ⎢0 -2 -1  2  1  0⎥
//	    ⎢0  2 -1 -2  1  0⎥
//	    ⎣0  4  0 -5  0  1⎦
//
// in the operations (and roundings) of the assembly: products by 4 and 2
// are exact, those by 5 are rounded before they are added (float32()
// keeps a compiler from fusing them).
func input4Step(d *[6]float32) [6]float32 {
	f2, f3 := float32(5*d[2]), float32(5*d[3])
	t0, t1 := d[4]-4*d[2], d[3]-4*d[1]
	t2, t3 := d[4]-d[2], d[3]-d[1]
	t3 += t3
	return [6]float32{
		(4*d[0] - f2) + d[4],
		t0 + t1,
		t0 - t1,
		t2 + t3,
		t2 - t3,
		(4*d[1] - f3) + d[5],
	}
}

// input4Go is F4's Input in Go, for n tiles, n a multiple of Lanes: the 1-D transform
// along each input row of the patch, then down each column.
func input4Go(v []float32, stride int, rows [][]float32, n int) {
	for t := range n {
		var u [6][6]float32 // u[i] = row i of d, transformed
		for i := range 6 {
			var d [6]float32
			copy(d[:], rows[i][4*t:4*t+6])
			u[i] = input4Step(&d)
		}
		for j := range 6 {
			var d [6]float32
			for i := range 6 {
				d[i] = u[i][j]
			}
			col := input4Step(&d)
			for i := range 6 {
				v[(6*i+j)*stride+t] = col[i]
			}
		}
	}
}

// output4Step is the 1-D output transform Aᵀ·m of six values,
//
//	    ⎡1  1  1  1  1  0⎤
//	Aᵀ= ⎢0  1 -1  2 -2  0⎥
//	    ⎢0  1  1  4  4  0⎥
//	    ⎣0  1 -1  8 -8  1⎦
//
// in the operations of the assembly (its products by 2, 4 and 8 are exact).
func output4Step(m *[6]float32) [4]float32 {
	a, b := m[1]+m[2], m[1]-m[2]
	c, d := m[3]+m[4], m[3]-m[4]
	return [4]float32{
		(m[0] + a) + c,
		b + 2*d,
		a + 4*c,
		(b + 8*d) + m[5],
	}
}

// output4Go is F4's Output in Go, for n tiles, n a multiple of Lanes: the 1-D transform
// along each row of the product, then down each column.
func output4Go(y [][]float32, m []float32, stride int, n int) {
	for t := range n {
		var w [6][4]float32 // w[i] = row i of m, transformed
		for i := range 6 {
			var r [6]float32
			for j := range 6 {
				r[j] = m[(6*i+j)*stride+t]
			}
			w[i] = output4Step(&r)
		}
		for c := range 4 {
			var col [6]float32
			for i := range 6 {
				col[i] = w[i][c]
			}
			out := output4Step(&col)
			for r := range 4 {
				y[r][4*t+c] = out[r]
			}
		}
	}
}
