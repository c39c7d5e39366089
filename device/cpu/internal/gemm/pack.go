package gemm

// Packing copies a block of op(A) or op(B) into the layout the micro-kernel
// reads sequentially: micro-panels of w = MR rows of op(A) (or w = NR
// columns of op(B)), each stored k step after k step, w floats per step,
// zero-padded to w when the matrix has fewer rows (columns) left.

// packSlack is the number of floats a packing routine may write past the
// end of the last panel of a block (packTransAVX512 does); the packing
// buffers of a Workspace have this much room.
const packSlack = 16

// packFunc packs one micro-panel whose k steps are columns of the source;
// packTrans is the reference.
type packFunc func(d, src []float32, ld, w, kb, v int)

// packA packs the mb×kb block of op(A) at row i0, column p0 into
// micro-panels of mr rows, the panel starting at row ir at dst[ir*kb:].
func packA(dst []float32, transA bool, a []float32, lda, i0, p0, mb, kb, mr int, trans packFunc) {
	if transA {
		// op(A)[i][p] = A[p][i]: each k step is a piece of a row of A.
		packRows(dst, a[p0*lda+i0:], lda, mr, kb, mb)
		return
	}
	for ir := 0; ir < mb; ir += mr {
		v := min(mr, mb-ir)
		// op(A)[i][p] = A[i][p]: each row of A becomes a column of the
		// panel (dst with the room after the panel that trans may use).
		trans(dst[ir*kb:], a[(i0+ir)*lda+p0:], lda, mr, kb, v)
	}
}

// packB packs the kb×nb block of op(B) at row p0, column j0 into
// micro-panels of nr columns, the panel starting at column jr at dst[jr*kb:].
func packB(dst []float32, transB bool, b []float32, ldb, p0, j0, kb, nb, nr int, trans packFunc) {
	if !transB {
		// Each k step is a piece of a row of B.
		packRows(dst, b[p0*ldb+j0:], ldb, nr, kb, nb)
		return
	}
	for jr := 0; jr < nb; jr += nr {
		// op(B)[p][j] = B[j][p]
		trans(dst[jr*kb:], b[(j0+jr)*ldb+p0:], ldb, nr, kb, min(nr, nb-jr))
	}
}

// packRows packs the kb×nb block at the start of src (rows ld apart), whose
// k steps are its rows, into micro-panels of w columns, the panel of
// column jr at d[jr*kb:], each k step w floats, zero-padded to w. It reads
// the block row after row, each row once from start to end; packing panel
// after panel instead reads w floats from each of kb rows per panel (a
// 64-byte copy call per row with AVX2's 16-wide panels). A 384×352 block
// of a matrix 2048 wide, one Zen 4 thread: 44–46 → 37–39 µs in 16-wide
// panels, 27 µs either way in 32-wide ones.
func packRows(d, src []float32, ld, w, kb, nb int) {
	full := nb / w * w
	for p := range kb {
		row := src[p*ld : p*ld+nb]
		jr := 0
		switch w {
		case 16:
			for ; jr < full; jr += 16 {
				*(*[16]float32)(d[jr*kb+p*16:]) = *(*[16]float32)(row[jr:])
			}
		case 32:
			for ; jr < full; jr += 32 {
				*(*[32]float32)(d[jr*kb+p*32:]) = *(*[32]float32)(row[jr:])
			}
		default:
			for ; jr < full; jr += w {
				copy(d[jr*kb+p*w:][:w], row[jr:jr+w])
			}
		}
		if jr < nb {
			out := d[jr*kb+p*w:][:w]
			copy(out, row[jr:])
			clear(out[nb-jr:])
		}
	}
}

// packTrans packs a micro-panel whose k steps are columns of the source:
// element i of step p is src[i*ld+p], for i < v; d[p*w+i] is zero for
// v <= i < w.
func packTrans(d, src []float32, ld, w, kb, v int) {
	d = d[:kb*w]
	i := 0
	for ; i+4 <= v; i += 4 {
		s0 := src[i*ld : i*ld+kb]
		s1 := src[(i+1)*ld : (i+1)*ld+kb]
		s2 := src[(i+2)*ld : (i+2)*ld+kb]
		s3 := src[(i+3)*ld : (i+3)*ld+kb]
		dd := d[i:]
		for p := range s0 {
			q := dd[p*w : p*w+4 : p*w+4]
			q[0], q[1], q[2], q[3] = s0[p], s1[p], s2[p], s3[p]
		}
	}
	for ; i < v; i++ {
		s := src[i*ld : i*ld+kb]
		for p, x := range s {
			d[p*w+i] = x
		}
	}
	if v < w {
		for p := range kb {
			clear(d[p*w+v : p*w+w])
		}
	}
}
