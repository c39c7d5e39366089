//go:build amd64 && !noasm

#include "textflag.h"

DATA shiftIdx<>+0(SB)/4, $1
DATA shiftIdx<>+4(SB)/4, $2
DATA shiftIdx<>+8(SB)/4, $3
DATA shiftIdx<>+12(SB)/4, $4
DATA shiftIdx<>+16(SB)/4, $5
DATA shiftIdx<>+20(SB)/4, $6
DATA shiftIdx<>+24(SB)/4, $7
DATA shiftIdx<>+28(SB)/4, $7
GLOBL shiftIdx<>(SB), RODATA|NOPTR, $32

// GOMAX2 sets acc = max(acc, v) with Go's max in AVX2 (t, m, e, a
// scratch): the x86 maximum, then acc where acc is a NaN (VMAXPS gives v
// then), then acc AND v where they are equal (a -0 and a +0 give +0).
#define GOMAX2(acc, v, t, m, e, a) \
	VMAXPS    v, acc, t        \
	VCMPPS    $3, acc, acc, m  \
	VBLENDVPS m, acc, t, t     \
	VCMPPS    $0, v, acc, e    \
	VANDPS    v, acc, a        \
	VBLENDVPS e, a, t, t       \
	VMOVAPS   t, acc

// func values3s2AVX2(y *float32, n int, x *float32, ld, rows int)
//
// values3s2AVX512 in vectors of 8 windows, for the first n&^7 windows
// (the caller pools the rest): per input row, the 17 columns from 2j0 in
// Y10, Y11 and Y12 (broadcast), pooled over the rows; then VSHUFPS and
// VPERMPD split Y10:Y11 into the even columns (each window's first, Y13)
// and the odd ones (its second, Y14), VPERMPS shifts the even ones by one
// and VBLENDPS puts column 16 last (its third, Y15), and their maximum is
// stored.
TEXT ·values3s2AVX2(SB), NOSPLIT, $0-40
	MOVQ    y+0(FP), DI
	MOVQ    n+8(FP), DX
	MOVQ    x+16(FP), SI
	MOVQ    ld+24(FP), R8
	SHLQ    $2, R8 // bytes
	MOVQ    rows+32(FP), R9
	VMOVUPS shiftIdx<>(SB), Y9

vstep:
	CMPQ         DX, $8
	JLT          vdone
	MOVQ         SI, R11
	VMOVUPS      (R11), Y10
	VMOVUPS      32(R11), Y11
	VBROADCASTSS 64(R11), Y12
	MOVQ         R9, BX
	DECQ         BX
	JZ           vcols

vrow:
	ADDQ         R8, R11
	VMOVUPS      (R11), Y1
	GOMAX2(Y10, Y1, Y4, Y5, Y6, Y7)
	VMOVUPS      32(R11), Y2
	GOMAX2(Y11, Y2, Y4, Y5, Y6, Y7)
	VBROADCASTSS 64(R11), Y3
	GOMAX2(Y12, Y3, Y4, Y5, Y6, Y7)
	DECQ         BX
	JNZ          vrow

vcols:
	VSHUFPS  $0x88, Y11, Y10, Y13
	VPERMPD  $0xD8, Y13, Y13 // columns 2j
	VSHUFPS  $0xDD, Y11, Y10, Y14
	VPERMPD  $0xD8, Y14, Y14 // 2j+1
	VPERMPS  Y13, Y9, Y15
	VBLENDPS $0x80, Y12, Y15, Y15 // 2j+2
	GOMAX2(Y13, Y14, Y4, Y5, Y6, Y7)
	GOMAX2(Y13, Y15, Y4, Y5, Y6, Y7)
	VMOVUPS  Y13, (DI)
	ADDQ     $32, DI
	ADDQ     $64, SI
	SUBQ     $8, DX
	JMP      vstep

vdone:
	VZEROUPPER
	RET
