//go:build amd64 && !noasm

#include "textflag.h"

// The AVX-512 transforms of F(2×2, 3×3) (f2.go): 16 tiles (one zmm register of
// each value) per step, with the operations of input2Go and output2Go in
// the same order.

DATA ·evenIdx+0(SB)/4, $0
DATA ·evenIdx+4(SB)/4, $2
DATA ·evenIdx+8(SB)/4, $4
DATA ·evenIdx+12(SB)/4, $6
DATA ·evenIdx+16(SB)/4, $8
DATA ·evenIdx+20(SB)/4, $10
DATA ·evenIdx+24(SB)/4, $12
DATA ·evenIdx+28(SB)/4, $14
DATA ·evenIdx+32(SB)/4, $16
DATA ·evenIdx+36(SB)/4, $18
DATA ·evenIdx+40(SB)/4, $20
DATA ·evenIdx+44(SB)/4, $22
DATA ·evenIdx+48(SB)/4, $24
DATA ·evenIdx+52(SB)/4, $26
DATA ·evenIdx+56(SB)/4, $28
DATA ·evenIdx+60(SB)/4, $30
GLOBL ·evenIdx(SB), RODATA|NOPTR, $64

DATA ·oddIdx+0(SB)/4, $1
DATA ·oddIdx+4(SB)/4, $3
DATA ·oddIdx+8(SB)/4, $5
DATA ·oddIdx+12(SB)/4, $7
DATA ·oddIdx+16(SB)/4, $9
DATA ·oddIdx+20(SB)/4, $11
DATA ·oddIdx+24(SB)/4, $13
DATA ·oddIdx+28(SB)/4, $15
DATA ·oddIdx+32(SB)/4, $17
DATA ·oddIdx+36(SB)/4, $19
DATA ·oddIdx+40(SB)/4, $21
DATA ·oddIdx+44(SB)/4, $23
DATA ·oddIdx+48(SB)/4, $25
DATA ·oddIdx+52(SB)/4, $27
DATA ·oddIdx+56(SB)/4, $29
DATA ·oddIdx+60(SB)/4, $31
GLOBL ·oddIdx(SB), RODATA|NOPTR, $64

DATA ·loIdx+0(SB)/4, $0
DATA ·loIdx+4(SB)/4, $16
DATA ·loIdx+8(SB)/4, $1
DATA ·loIdx+12(SB)/4, $17
DATA ·loIdx+16(SB)/4, $2
DATA ·loIdx+20(SB)/4, $18
DATA ·loIdx+24(SB)/4, $3
DATA ·loIdx+28(SB)/4, $19
DATA ·loIdx+32(SB)/4, $4
DATA ·loIdx+36(SB)/4, $20
DATA ·loIdx+40(SB)/4, $5
DATA ·loIdx+44(SB)/4, $21
DATA ·loIdx+48(SB)/4, $6
DATA ·loIdx+52(SB)/4, $22
DATA ·loIdx+56(SB)/4, $7
DATA ·loIdx+60(SB)/4, $23
GLOBL ·loIdx(SB), RODATA|NOPTR, $64

DATA ·hiIdx+0(SB)/4, $8
DATA ·hiIdx+4(SB)/4, $24
DATA ·hiIdx+8(SB)/4, $9
DATA ·hiIdx+12(SB)/4, $25
DATA ·hiIdx+16(SB)/4, $10
DATA ·hiIdx+20(SB)/4, $26
DATA ·hiIdx+24(SB)/4, $11
DATA ·hiIdx+28(SB)/4, $27
DATA ·hiIdx+32(SB)/4, $12
DATA ·hiIdx+36(SB)/4, $28
DATA ·hiIdx+40(SB)/4, $13
DATA ·hiIdx+44(SB)/4, $29
DATA ·hiIdx+48(SB)/4, $14
DATA ·hiIdx+52(SB)/4, $30
DATA ·hiIdx+56(SB)/4, $15
DATA ·hiIdx+60(SB)/4, $31
GLOBL ·hiIdx(SB), RODATA|NOPTR, $64

// LOADROW deinterleaves the 34 floats at R into E (columns 0, 2, …, 30),
// O (1, 3, …, 31), E2 (2, 4, …, 32) and O2 (3, 5, …, 33): the columns 2t,
// 2t+1, 2t+2 and 2t+3 of tiles t = 0…15. Z30 and Z31 hold evenIdx and
// oddIdx.
#define LOADROW(R, E, O, E2, O2) \
	VMOVUPS   (R), E;          \
	VMOVAPS   E, O;            \
	VPERMT2PS 64(R), Z30, E;   \
	VPERMT2PS 64(R), Z31, O;   \
	VMOVUPS   8(R), E2;        \
	VMOVAPS   E2, O2;          \
	VPERMT2PS 72(R), Z30, E2;  \
	VPERMT2PS 72(R), Z31, O2

// STORE4 stores Z20…Z23 at R10, R10+R8, … and advances R10 by 4·R8.
#define STORE4 \
	VMOVUPS Z20, (R10); \
	ADDQ    R8, R10;    \
	VMOVUPS Z21, (R10); \
	ADDQ    R8, R10;    \
	VMOVUPS Z22, (R10); \
	ADDQ    R8, R10;    \
	VMOVUPS Z23, (R10); \
	ADDQ    R8, R10

// COLS sets Z20…Z23 to row s = Z16…Z19 times B: s0-s2, s1+s2, s2-s1, s1-s3.
#define COLS \
	VSUBPS Z18, Z16, Z20; \
	VADDPS Z18, Z17, Z21; \
	VSUBPS Z17, Z18, Z22; \
	VSUBPS Z19, Z17, Z23

// func input2AVX512(v *float32, stride int, r0, r1, r2, r3 *float32, blocks int)
//
// d[i][j] (row i, column j of the tiles' patches) is Z(4i+j).
TEXT ·input2AVX512(SB), NOSPLIT, $0-56
	MOVQ    v+0(FP), DI
	MOVQ    stride+8(FP), R8
	SHLQ    $2, R8
	MOVQ    r0+16(FP), AX
	MOVQ    r1+24(FP), BX
	MOVQ    r2+32(FP), CX
	MOVQ    r3+40(FP), DX
	MOVQ    blocks+48(FP), R9
	VMOVUPS ·evenIdx(SB), Z30
	VMOVUPS ·oddIdx(SB), Z31

inloop:
	LOADROW(AX, Z0, Z1, Z2, Z3)
	LOADROW(BX, Z4, Z5, Z6, Z7)
	LOADROW(CX, Z8, Z9, Z10, Z11)
	LOADROW(DX, Z12, Z13, Z14, Z15)
	MOVQ DI, R10


	// row 0 of Bᵀ·d: d0 - d2
	VSUBPS Z8, Z0, Z16
	VSUBPS Z9, Z1, Z17
	VSUBPS Z10, Z2, Z18
	VSUBPS Z11, Z3, Z19
	COLS
	STORE4

	// row 1 of Bᵀ·d: d1 + d2
	VADDPS Z8, Z4, Z16
	VADDPS Z9, Z5, Z17
	VADDPS Z10, Z6, Z18
	VADDPS Z11, Z7, Z19
	COLS
	STORE4

	// row 2 of Bᵀ·d: d2 - d1
	VSUBPS Z4, Z8, Z16
	VSUBPS Z5, Z9, Z17
	VSUBPS Z6, Z10, Z18
	VSUBPS Z7, Z11, Z19
	COLS
	STORE4

	// row 3 of Bᵀ·d: d1 - d3
	VSUBPS Z12, Z4, Z16
	VSUBPS Z13, Z5, Z17
	VSUBPS Z14, Z6, Z18
	VSUBPS Z15, Z7, Z19
	COLS
	STORE4

	ADDQ $64, DI
	ADDQ $128, AX
	ADDQ $128, BX
	ADDQ $128, CX
	ADDQ $128, DX
	DECQ R9
	JNZ  inloop
	VZEROUPPER
	RET

// func output2AVX512(y0, y1, m *float32, stride int, blocks int)
//
// m[4i+j] is loaded into Z(4i+j); u0[j] = m0j + m1j + m2j in Z(16+j),
// u1[j] = m1j - m2j - m3j in Z(20+j).
TEXT ·output2AVX512(SB), NOSPLIT, $0-40
	MOVQ    y0+0(FP), DI
	MOVQ    y1+8(FP), SI
	MOVQ    m+16(FP), AX
	MOVQ    stride+24(FP), R8
	SHLQ    $2, R8
	MOVQ    blocks+32(FP), R9
	VMOVUPS ·loIdx(SB), Z30
	VMOVUPS ·hiIdx(SB), Z31

outloop:
	MOVQ AX, R10
	VMOVUPS (R10), Z0
	ADDQ    R8, R10
	VMOVUPS (R10), Z1
	ADDQ    R8, R10
	VMOVUPS (R10), Z2
	ADDQ    R8, R10
	VMOVUPS (R10), Z3
	ADDQ    R8, R10
	VMOVUPS (R10), Z4
	ADDQ    R8, R10
	VMOVUPS (R10), Z5
	ADDQ    R8, R10
	VMOVUPS (R10), Z6
	ADDQ    R8, R10
	VMOVUPS (R10), Z7
	ADDQ    R8, R10
	VMOVUPS (R10), Z8
	ADDQ    R8, R10
	VMOVUPS (R10), Z9
	ADDQ    R8, R10
	VMOVUPS (R10), Z10
	ADDQ    R8, R10
	VMOVUPS (R10), Z11
	ADDQ    R8, R10
	VMOVUPS (R10), Z12
	ADDQ    R8, R10
	VMOVUPS (R10), Z13
	ADDQ    R8, R10
	VMOVUPS (R10), Z14
	ADDQ    R8, R10
	VMOVUPS (R10), Z15
	VADDPS Z4, Z0, Z16
	VADDPS Z8, Z16, Z16
	VSUBPS Z8, Z4, Z20
	VSUBPS Z12, Z20, Z20
	VADDPS Z5, Z1, Z17
	VADDPS Z9, Z17, Z17
	VSUBPS Z9, Z5, Z21
	VSUBPS Z13, Z21, Z21
	VADDPS Z6, Z2, Z18
	VADDPS Z10, Z18, Z18
	VSUBPS Z10, Z6, Z22
	VSUBPS Z14, Z22, Z22
	VADDPS Z7, Z3, Z19
	VADDPS Z11, Z19, Z19
	VSUBPS Z11, Z7, Z23
	VSUBPS Z15, Z23, Z23

	// y00 = u00+u01+u02, y01 = u01-u02-u03, y10 and y11 likewise from u1.
	VADDPS Z17, Z16, Z24
	VADDPS Z18, Z24, Z24
	VSUBPS Z18, Z17, Z25
	VSUBPS Z19, Z25, Z25
	VADDPS Z21, Z20, Z26
	VADDPS Z22, Z26, Z26
	VSUBPS Z22, Z21, Z27
	VSUBPS Z23, Z27, Z27

	// Interleave the columns: y0 = y00[0] y01[0] y00[1] y01[1] …
	VMOVAPS   Z24, Z28
	VPERMT2PS Z25, Z30, Z28
	VPERMT2PS Z25, Z31, Z24
	VMOVUPS   Z28, (DI)
	VMOVUPS   Z24, 64(DI)
	VMOVAPS   Z26, Z29
	VPERMT2PS Z27, Z30, Z29
	VPERMT2PS Z27, Z31, Z26
	VMOVUPS   Z29, (SI)
	VMOVUPS   Z26, 64(SI)

	ADDQ $64, AX
	ADDQ $128, DI
	ADDQ $128, SI
	DECQ R9
	JNZ  outloop
	VZEROUPPER
	RET
