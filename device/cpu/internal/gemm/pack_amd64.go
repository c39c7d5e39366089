//go:build amd64 && !noasm

package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// transpose16AVX512 packs chunks blocks of 16 columns of rows (0 to 16)
// rows of src (row stride ld) transposed: column p of src goes to the 16
// floats at d + p*wbytes bytes (the floats of rows rows..15 are zeros).
// With wbytes < 64 it writes 64-wbytes bytes past the last column's place.
//
//go:noescape
func transpose16AVX512(d, src *float32, ld, chunks, wbytes, rows int)

// packTransAVX512 is packTrans with 16×16 in-register transposes for the
// panels of the AVX-512 kernel (w = 14, 16 or 32; a partial panel, v < w,
// is zero-padded in registers); the last kb%16 k steps, and panels of
// other widths, go to packTrans. d may be written up to packSlack floats
// past d[kb*w-1], and must have that room.
func packTransAVX512(d, src []float32, ld, w, kb, v int) {
	chunks := kb / 16
	if v < 1 || v > w || (w != 14 && w != 16 && w != 32) || chunks == 0 {
		packTrans(d, src, ld, w, kb, v)
		return
	}
	if len(d) < kb*w+packSlack || len(src) < (v-1)*ld+kb {
		panic("gemm: internal error: packTransAVX512 slices too short")
	}
	if w == 32 {
		transpose16AVX512(&d[0], &src[0], ld, chunks, 4*w, min(v, 16))
		if v > 16 {
			transpose16AVX512(&d[16], &src[16*ld], ld, chunks, 4*w, v-16)
		} else {
			transpose16AVX512(&d[16], &src[0], ld, chunks, 4*w, 0) // zeros
		}
	} else {
		transpose16AVX512(&d[0], &src[0], ld, chunks, 4*w, v)
	}
	if done := chunks * 16; done < kb {
		packTrans(d[done*w:], src[done:], ld, w, kb-done, v)
	}
}

// transpose8AVX2 is transpose16AVX512 for AVX2, in blocks of 8 columns of
// rows (0 to 8) rows of src: column p of src goes to the 8 floats at d +
// p*wbytes bytes (the floats of rows rows..7 are zeros). With wbytes < 32
// it writes 32-wbytes bytes past the last column's place.
//
//go:noescape
func transpose8AVX2(d, src *float32, ld, chunks, wbytes, rows int)

// packTransAVX2 is packTrans with 8×8 in-register transposes for the panels
// of the AVX2 kernel (w = 6, the panels of op(A), or 16, those of op(B); a
// partial panel, v < w, is zero-padded in registers); the last kb%8 k
// steps, and panels of other widths, go to packTrans. d may be written up
// to packSlack floats past d[kb*w-1], and must have that room.
func packTransAVX2(d, src []float32, ld, w, kb, v int) {
	chunks := kb / 8
	if v < 1 || v > w || (w != 6 && w != 16) || chunks == 0 {
		packTrans(d, src, ld, w, kb, v)
		return
	}
	if len(d) < kb*w+packSlack || len(src) < (v-1)*ld+kb {
		panic("gemm: internal error: packTransAVX2 slices too short")
	}
	transpose8AVX2(&d[0], &src[0], ld, chunks, 4*w, min(v, 8))
	if w == 16 {
		if v > 8 {
			transpose8AVX2(&d[8], &src[8*ld], ld, chunks, 4*w, v-8)
		} else {
			transpose8AVX2(&d[8], &src[0], ld, chunks, 4*w, 0) // zeros
		}
	}
	if done := chunks * 8; done < kb {
		packTrans(d[done*w:], src[done:], ld, w, kb-done, v)
	}
}

// transposeTiles transposes 16 rows of chunks·16 columns of src (row
// stride lds) into dst (row stride ldd ≥ 16), for Transpose: in one 16×16
// block at a time with AVX-512, two 8×8 blocks with AVX2; nil where the CPU
// has neither.
var transposeTiles func(dst *float32, ldd int, src *float32, lds, chunks int)

func init() {
	if cpu.X86.HasAVX512F {
		transposeTiles = func(dst *float32, ldd int, src *float32, lds, chunks int) {
			transpose16AVX512(dst, src, lds, chunks, 4*ldd, 16)
		}
	} else if cpu.X86.HasAVX2 {
		transposeTiles = func(dst *float32, ldd int, src *float32, lds, chunks int) {
			transpose8AVX2(dst, src, lds, 2*chunks, 4*ldd, 8)
			transpose8AVX2((*float32)(unsafe.Add(unsafe.Pointer(dst), 32)), (*float32)(unsafe.Add(unsafe.Pointer(src), 32*lds)), lds, 2*chunks, 4*ldd, 8)
		}
	}
}
