//go:build amd64 && !noasm

#include "textflag.h"

// Packing routines for the AVX-512 kernel (see pack.go for the layout).

// func transpose16AVX512(d, src *float32, ld, chunks, wbytes, rows int)
//
// For each of chunks blocks of 16 columns, loads 16 floats from each of the
// first rows (0 to 16) rows of src (row stride ld floats; the rows from
// rows on are zero, and src is not read when rows is 0), transposes the
// 16×16 block in registers and
// stores column p of the block as 16 floats at d + p*wbytes. With
// wbytes < 64 a store runs into the next column's place, which the next
// store overwrites; the last one writes 64-wbytes bytes past the block.
//
// Transpose: 32-bit then 64-bit interleaves within 128-bit lanes give, in
// Z(4g+c), the 4-float pieces of column 4L+c of rows 4g..4g+3 in lane L;
// two rounds of VSHUFF32X4 then gather the four lanes L of Z(c), Z(4+c),
// Z(8+c), Z(12+c) into column 4L+c, left in Z(4L+c).
TEXT ·transpose16AVX512(SB), NOSPLIT, $0-48
	MOVQ d+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	LEAQ (R8*4), R12
	MOVQ chunks+24(FP), CX
	MOVQ wbytes+32(FP), DX
	MOVQ rows+40(FP), BX

trloop:
	MOVQ    SI, R11
	CMPQ    BX, $1
	JLT     trzero0
	VMOVUPS (R11), Z0
	CMPQ    BX, $2
	JLT     trzero1
	VMOVUPS (R11)(R8*1), Z1
	CMPQ    BX, $3
	JLT     trzero2
	VMOVUPS (R11)(R8*2), Z2
	CMPQ    BX, $4
	JLT     trzero3
	VMOVUPS (R11)(R9*1), Z3
	ADDQ    R12, R11
	CMPQ    BX, $5
	JLT     trzero4
	VMOVUPS (R11), Z4
	CMPQ    BX, $6
	JLT     trzero5
	VMOVUPS (R11)(R8*1), Z5
	CMPQ    BX, $7
	JLT     trzero6
	VMOVUPS (R11)(R8*2), Z6
	CMPQ    BX, $8
	JLT     trzero7
	VMOVUPS (R11)(R9*1), Z7
	ADDQ    R12, R11
	CMPQ    BX, $9
	JLT     trzero8
	VMOVUPS (R11), Z8
	CMPQ    BX, $10
	JLT     trzero9
	VMOVUPS (R11)(R8*1), Z9
	CMPQ    BX, $11
	JLT     trzero10
	VMOVUPS (R11)(R8*2), Z10
	CMPQ    BX, $12
	JLT     trzero11
	VMOVUPS (R11)(R9*1), Z11
	ADDQ    R12, R11
	CMPQ    BX, $13
	JLT     trzero12
	VMOVUPS (R11), Z12
	CMPQ    BX, $14
	JLT     trzero13
	VMOVUPS (R11)(R8*1), Z13
	CMPQ    BX, $15
	JLT     trzero14
	VMOVUPS (R11)(R8*2), Z14
	CMPQ    BX, $16
	JLT     trzero15
	VMOVUPS (R11)(R9*1), Z15
	JMP     trshuffle

// Rows from rows on are zero: a jump to trzeroR clears ZR..Z15.
trzero0:
	VPXORD Z0, Z0, Z0
trzero1:
	VPXORD Z1, Z1, Z1
trzero2:
	VPXORD Z2, Z2, Z2
trzero3:
	VPXORD Z3, Z3, Z3
trzero4:
	VPXORD Z4, Z4, Z4
trzero5:
	VPXORD Z5, Z5, Z5
trzero6:
	VPXORD Z6, Z6, Z6
trzero7:
	VPXORD Z7, Z7, Z7
trzero8:
	VPXORD Z8, Z8, Z8
trzero9:
	VPXORD Z9, Z9, Z9
trzero10:
	VPXORD Z10, Z10, Z10
trzero11:
	VPXORD Z11, Z11, Z11
trzero12:
	VPXORD Z12, Z12, Z12
trzero13:
	VPXORD Z13, Z13, Z13
trzero14:
	VPXORD Z14, Z14, Z14
trzero15:
	VPXORD Z15, Z15, Z15

trshuffle:
	VUNPCKLPS Z1, Z0, Z16
	VUNPCKHPS Z1, Z0, Z17
	VUNPCKLPS Z3, Z2, Z18
	VUNPCKHPS Z3, Z2, Z19
	VUNPCKLPS Z5, Z4, Z20
	VUNPCKHPS Z5, Z4, Z21
	VUNPCKLPS Z7, Z6, Z22
	VUNPCKHPS Z7, Z6, Z23
	VUNPCKLPS Z9, Z8, Z24
	VUNPCKHPS Z9, Z8, Z25
	VUNPCKLPS Z11, Z10, Z26
	VUNPCKHPS Z11, Z10, Z27
	VUNPCKLPS Z13, Z12, Z28
	VUNPCKHPS Z13, Z12, Z29
	VUNPCKLPS Z15, Z14, Z30
	VUNPCKHPS Z15, Z14, Z31
	VUNPCKLPD Z18, Z16, Z0
	VUNPCKHPD Z18, Z16, Z1
	VUNPCKLPD Z19, Z17, Z2
	VUNPCKHPD Z19, Z17, Z3
	VUNPCKLPD Z22, Z20, Z4
	VUNPCKHPD Z22, Z20, Z5
	VUNPCKLPD Z23, Z21, Z6
	VUNPCKHPD Z23, Z21, Z7
	VUNPCKLPD Z26, Z24, Z8
	VUNPCKHPD Z26, Z24, Z9
	VUNPCKLPD Z27, Z25, Z10
	VUNPCKHPD Z27, Z25, Z11
	VUNPCKLPD Z30, Z28, Z12
	VUNPCKHPD Z30, Z28, Z13
	VUNPCKLPD Z31, Z29, Z14
	VUNPCKHPD Z31, Z29, Z15
	VSHUFF32X4 $0x44, Z4, Z0, Z16
	VSHUFF32X4 $0xEE, Z4, Z0, Z17
	VSHUFF32X4 $0x44, Z12, Z8, Z18
	VSHUFF32X4 $0xEE, Z12, Z8, Z19
	VSHUFF32X4 $0x44, Z5, Z1, Z20
	VSHUFF32X4 $0xEE, Z5, Z1, Z21
	VSHUFF32X4 $0x44, Z13, Z9, Z22
	VSHUFF32X4 $0xEE, Z13, Z9, Z23
	VSHUFF32X4 $0x44, Z6, Z2, Z24
	VSHUFF32X4 $0xEE, Z6, Z2, Z25
	VSHUFF32X4 $0x44, Z14, Z10, Z26
	VSHUFF32X4 $0xEE, Z14, Z10, Z27
	VSHUFF32X4 $0x44, Z7, Z3, Z28
	VSHUFF32X4 $0xEE, Z7, Z3, Z29
	VSHUFF32X4 $0x44, Z15, Z11, Z30
	VSHUFF32X4 $0xEE, Z15, Z11, Z31
	VSHUFF32X4 $0x88, Z18, Z16, Z0
	VSHUFF32X4 $0xDD, Z18, Z16, Z4
	VSHUFF32X4 $0x88, Z19, Z17, Z8
	VSHUFF32X4 $0xDD, Z19, Z17, Z12
	VSHUFF32X4 $0x88, Z22, Z20, Z1
	VSHUFF32X4 $0xDD, Z22, Z20, Z5
	VSHUFF32X4 $0x88, Z23, Z21, Z9
	VSHUFF32X4 $0xDD, Z23, Z21, Z13
	VSHUFF32X4 $0x88, Z26, Z24, Z2
	VSHUFF32X4 $0xDD, Z26, Z24, Z6
	VSHUFF32X4 $0x88, Z27, Z25, Z10
	VSHUFF32X4 $0xDD, Z27, Z25, Z14
	VSHUFF32X4 $0x88, Z30, Z28, Z3
	VSHUFF32X4 $0xDD, Z30, Z28, Z7
	VSHUFF32X4 $0x88, Z31, Z29, Z11
	VSHUFF32X4 $0xDD, Z31, Z29, Z15
	VMOVUPS Z0, (DI)
	ADDQ    DX, DI
	VMOVUPS Z1, (DI)
	ADDQ    DX, DI
	VMOVUPS Z2, (DI)
	ADDQ    DX, DI
	VMOVUPS Z3, (DI)
	ADDQ    DX, DI
	VMOVUPS Z4, (DI)
	ADDQ    DX, DI
	VMOVUPS Z5, (DI)
	ADDQ    DX, DI
	VMOVUPS Z6, (DI)
	ADDQ    DX, DI
	VMOVUPS Z7, (DI)
	ADDQ    DX, DI
	VMOVUPS Z8, (DI)
	ADDQ    DX, DI
	VMOVUPS Z9, (DI)
	ADDQ    DX, DI
	VMOVUPS Z10, (DI)
	ADDQ    DX, DI
	VMOVUPS Z11, (DI)
	ADDQ    DX, DI
	VMOVUPS Z12, (DI)
	ADDQ    DX, DI
	VMOVUPS Z13, (DI)
	ADDQ    DX, DI
	VMOVUPS Z14, (DI)
	ADDQ    DX, DI
	VMOVUPS Z15, (DI)
	ADDQ    DX, DI
	ADDQ $64, SI
	DECQ CX
	JNZ  trloop
	VZEROUPPER
	RET

// func transpose8AVX2(d, src *float32, ld, chunks, wbytes, rows int)
//
// transpose16AVX512 for AVX2, 8×8 blocks: for each of chunks blocks of 8
// columns, loads 8 floats from each of the first rows (0 to 8) rows of src
// (row stride ld floats; the rows from rows on are zero, and src is not
// read when rows is 0), transposes the block in registers and stores
// column p of the block as 8 floats at d + p*wbytes, columns in order
// (with wbytes < 32 a store runs into the next column's place, which the
// next store overwrites; the last one writes 32-wbytes bytes past the
// block).
//
// Transpose: 32-bit interleaves of row pairs (Y8..Y15), then VSHUFPS of
// pairs of those give, in each 128-bit lane, 4-float pieces of a column
// (lane 0: columns 0..3, lane 1: columns 4..7) of rows 0..3 (Y0..Y3) and
// 4..7 (Y4..Y7); VPERM2F128 joins the pieces of rows 0..3 and 4..7.
TEXT ·transpose8AVX2(SB), NOSPLIT, $0-48
	MOVQ d+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	MOVQ chunks+24(FP), CX
	MOVQ wbytes+32(FP), DX
	LEAQ (DX)(DX*2), R13
	MOVQ rows+40(FP), BX
	TESTQ CX, CX
	JZ   t8done

t8chunk:
	LEAQ (SI)(R8*4), R11
	CMPQ BX, $8
	JNE  t8partial
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R8*1), Y1
	VMOVUPS (SI)(R8*2), Y2
	VMOVUPS (SI)(R9*1), Y3
	VMOVUPS (R11), Y4
	VMOVUPS (R11)(R8*1), Y5
	VMOVUPS (R11)(R8*2), Y6
	VMOVUPS (R11)(R9*1), Y7
	JMP  t8transpose

t8partial:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	CMPQ BX, $1
	JLT  t8transpose
	VMOVUPS (SI), Y0
	CMPQ BX, $2
	JLT  t8transpose
	VMOVUPS (SI)(R8*1), Y1
	CMPQ BX, $3
	JLT  t8transpose
	VMOVUPS (SI)(R8*2), Y2
	CMPQ BX, $4
	JLT  t8transpose
	VMOVUPS (SI)(R9*1), Y3
	CMPQ BX, $5
	JLT  t8transpose
	VMOVUPS (R11), Y4
	CMPQ BX, $6
	JLT  t8transpose
	VMOVUPS (R11)(R8*1), Y5
	CMPQ BX, $7
	JLT  t8transpose
	VMOVUPS (R11)(R8*2), Y6

t8transpose:
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	VSHUFPS   $0x44, Y10, Y8, Y0
	VSHUFPS   $0xEE, Y10, Y8, Y1
	VSHUFPS   $0x44, Y11, Y9, Y2
	VSHUFPS   $0xEE, Y11, Y9, Y3
	VSHUFPS   $0x44, Y14, Y12, Y4
	VSHUFPS   $0xEE, Y14, Y12, Y5
	VSHUFPS   $0x44, Y15, Y13, Y6
	VSHUFPS   $0xEE, Y15, Y13, Y7
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15
	LEAQ    (DI)(DX*4), R12
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, (DI)(DX*1)
	VMOVUPS Y10, (DI)(DX*2)
	VMOVUPS Y11, (DI)(R13*1)
	VMOVUPS Y12, (R12)
	VMOVUPS Y13, (R12)(DX*1)
	VMOVUPS Y14, (R12)(DX*2)
	VMOVUPS Y15, (R12)(R13*1)
	ADDQ $32, SI
	LEAQ (R12)(DX*4), DI
	DECQ CX
	JNZ  t8chunk

t8done:
	VZEROUPPER
	RET
