package winograd

// F2 is F(2×2, 3×3): 16 multiply-adds per 2×2 outputs and channel pair,
// against 36 for the direct sum. Every entry of its transforms is 0, ±½ or
// ±1, so its rounding is close to the direct sum's.
//
//	    ⎡1   0   0⎤        ⎡1  0 -1  0⎤        ⎡1  1  1  0⎤
//	G = ⎢½   ½   ½⎥   Bᵀ = ⎢0  1  1  0⎥   Aᵀ = ⎣0  1 -1 -1⎦
//	    ⎢½  -½   ½⎥        ⎢0 -1  1  0⎥
//	    ⎣0   0   1⎦        ⎣0  1  0 -1⎦
var F2 = &Transform{
	Tile: 2, Patch: 4, Matrices: 16,
	name:   "F(2×2, 3×3)",
	g:      [][3]float64{{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
	input:  input2,
	output: output2,
}

// input2 is F2's Input for n tiles, n a multiple of Lanes.
func input2(v []float32, stride int, rows [][]float32, n int) {
	switch asmLevel {
	case asmAVX512:
		input2AVX512(&v[0], stride, &rows[0][0], &rows[1][0], &rows[2][0], &rows[3][0], n/Lanes)
	case asmAVX2:
		input2AVX2(&v[0], stride, &rows[0][0], &rows[1][0], &rows[2][0], &rows[3][0], n/8)
	default:
		input2Go(v, stride, rows, n)
	}
}

// output2 is F2's Output for n tiles, n a multiple of Lanes.
func output2(y [][]float32, m []float32, stride int, n int) {
	switch asmLevel {
	case asmAVX512:
		output2AVX512(&y[0][0], &y[1][0], &m[0], stride, n/Lanes)
	case asmAVX2:
		output2AVX2(&y[0][0], &y[1][0], &m[0], stride, n/8)
	default:
		output2Go(y, m, stride, n)
	}
}

// input2Go is F2's Input in Go, for n tiles, n a multiple of Lanes.
func input2Go(v []float32, stride int, rows [][]float32, n int) {
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

// output2Go is F2's Output in Go, for n tiles, n a multiple of Lanes.
func output2Go(y [][]float32, m []float32, stride int, n int) {
	y0, y1 := y[0], y[1]
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
