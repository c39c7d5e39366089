package gemm

// Transpose writes the transpose of the rows×cols matrix src (row stride
// lds) into dst, a cols×rows matrix of row stride ldd:
// dst[j·ldd + i] = src[i·lds + j]. Where the CPU has AVX-512 or AVX2,
// whole 16×16 tiles move through registers (the packing's transpose
// kernels); the edges, and other CPUs, are copied element by element.
// Either way every value is copied exactly.
func Transpose(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	if lds < cols || ldd < rows || len(src) < (rows-1)*lds+cols || len(dst) < (cols-1)*ldd+rows {
		panic("gemm: Transpose: strides or slices too short for the matrices")
	}
	r16, c16 := 0, 0
	if transposeTiles != nil {
		r16, c16 = rows/16*16, cols/16*16
		if c16 == 0 {
			r16 = 0
		}
	}
	for i0 := 0; i0 < r16; i0 += 16 {
		transposeTiles(&dst[i0], ldd, &src[i0*lds], lds, c16/16)
	}
	// The columns the tiles left, for their rows; then the rows they left.
	for i := range r16 {
		for j := c16; j < cols; j++ {
			dst[j*ldd+i] = src[i*lds+j]
		}
	}
	for i := r16; i < rows; i++ {
		s := src[i*lds : i*lds+cols]
		for j, v := range s {
			dst[j*ldd+i] = v
		}
	}
}
