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
	for ir := 0; ir < mb; ir += mr {
		v := min(mr, mb-ir)
		d := dst[ir*kb:] // with the room after the panel that trans may use
		if transA {
			// op(A)[i][p] = A[p][i]: each k step is a piece of a row of A.
			packCopy(d, a[p0*lda+i0+ir:], lda, mr, kb, v)
		} else {
			// op(A)[i][p] = A[i][p]: each row of A becomes a column of the panel.
			trans(d, a[(i0+ir)*lda+p0:], lda, mr, kb, v)
		}
	}
}

// packB packs the kb×nb block of op(B) at row p0, column j0 into
// micro-panels of nr columns, the panel starting at column jr at dst[jr*kb:].
func packB(dst []float32, transB bool, b []float32, ldb, p0, j0, kb, nb, nr int, trans packFunc) {
	for jr := 0; jr < nb; jr += nr {
		v := min(nr, nb-jr)
		d := dst[jr*kb:]
		if transB {
			// op(B)[p][j] = B[j][p]
			trans(d, b[(j0+jr)*ldb+p0:], ldb, nr, kb, v)
		} else {
			packCopy(d, b[p0*ldb+j0+jr:], ldb, nr, kb, v)
		}
	}
}

// packCopy packs a micro-panel whose k steps are rows of the source: step p
// is src[p*ld : p*ld+v], stored at d[p*w:], zero-padded to w floats.
func packCopy(d, src []float32, ld, w, kb, v int) {
	for p := range kb {
		row := d[p*w : p*w+w]
		copy(row[:v], src[p*ld:p*ld+v])
		clear(row[v:])
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
