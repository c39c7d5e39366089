//go:build amd64 && !noasm

#include "textflag.h"

// MASKS4 loads K1…K4 with the four lane masks at r (uint16s side by
// side): a step's masks in the plans' tables.
#define MASKS4(r) \
	KMOVW (r), K1; \
	KMOVW 2(r), K2; \
	KMOVW 4(r), K3; \
	KMOVW 6(r), K4

// BLOCKZERO clears Z0…Z23, the accumulators of the block kernels.
#define BLOCKZERO \
	VXORPS Z0, Z0, Z0; \
	VXORPS Z1, Z1, Z1; \
	VXORPS Z2, Z2, Z2; \
	VXORPS Z3, Z3, Z3; \
	VXORPS Z4, Z4, Z4; \
	VXORPS Z5, Z5, Z5; \
	VXORPS Z6, Z6, Z6; \
	VXORPS Z7, Z7, Z7; \
	VXORPS Z8, Z8, Z8; \
	VXORPS Z9, Z9, Z9; \
	VXORPS Z10, Z10, Z10; \
	VXORPS Z11, Z11, Z11; \
	VXORPS Z12, Z12, Z12; \
	VXORPS Z13, Z13, Z13; \
	VXORPS Z14, Z14, Z14; \
	VXORPS Z15, Z15, Z15; \
	VXORPS Z16, Z16, Z16; \
	VXORPS Z17, Z17, Z17; \
	VXORPS Z18, Z18, Z18; \
	VXORPS Z19, Z19, Z19; \
	VXORPS Z20, Z20, Z20; \
	VXORPS Z21, Z21, Z21; \
	VXORPS Z22, Z22, Z22; \
	VXORPS Z23, Z23, Z23

// BIASROW adds the bias at b (broadcast) to one row's three vectors of the
// block and clamps them to [Z28, Z29] (lo, hi; the operand order keeps
// NaN).
#define BIASROW(b, za, zb, zc) \
	VADDPS.BCST b, za, za; \
	VADDPS.BCST b, zb, zb; \
	VADDPS.BCST b, zc, zc; \
	VMAXPS      za, Z28, za; \
	VMAXPS      zb, Z28, zb; \
	VMAXPS      zc, Z28, zc; \
	VMINPS      za, Z29, za; \
	VMINPS      zb, Z29, zb; \
	VMINPS      zc, Z29, zc

// ROWSTORE stores one row's three vectors of blockRowsAVX512's block
// twice each, under RowsPlan's masks: the lanes of a vector's first output
// row at offset R9, R11 or R13 (masks K1, K3, K5), those of the next row
// at R10, R12 or R14 (K2, K4, K6), from DI.
#define ROWSTORE(za, zb, zc) \
	VMOVUPS za, K1, (DI)(R9*4); \
	VMOVUPS za, K2, (DI)(R10*4); \
	VMOVUPS zb, K3, (DI)(R11*4); \
	VMOVUPS zb, K4, (DI)(R12*4); \
	VMOVUPS zc, K5, (DI)(R13*4); \
	VMOVUPS zc, K6, (DI)(R14*4)

// PREFETCHROW prefetches the 48 outputs of one row of a block from R15
// (4 lines: 188 bytes past its first output ends the block's last).
#define PREFETCHROW \
	PREFETCHT0 0(R15); \
	PREFETCHT0 64(R15); \
	PREFETCHT0 128(R15); \
	PREFETCHT0 188(R15)

// PREFETCH3 prefetches the three cache lines of a block's 48 positions
// from r (the lines a row of the block reads or writes when they start a
// line).
#define PREFETCH3(r) \
	PREFETCHT0 (r); \
	PREFETCHT0 64(r); \
	PREFETCHT0 128(r)

// BLOCKTAP adds one channel's tap to the 8×48 block of blockAVX512 and
// blockRowsAVX512: the tap's offset from (R11), three loads of the input
// (SI) at it, then per row one broadcast weight (DX) and three
// multiply-adds into Z(3r+v); DX and R11 move to the next tap.
#define BLOCKTAP \
	MOVQ    (R11), R12; \
	LEAQ    (SI)(R12*4), R13; \
	VMOVUPS (R13), Z24; \
	VMOVUPS 64(R13), Z25; \
	VMOVUPS 128(R13), Z26; \
	VBROADCASTSS 0(DX), Z27; \
	VFMADD231PS Z24, Z27, Z0; \
	VFMADD231PS Z25, Z27, Z1; \
	VFMADD231PS Z26, Z27, Z2; \
	VBROADCASTSS 4(DX), Z27; \
	VFMADD231PS Z24, Z27, Z3; \
	VFMADD231PS Z25, Z27, Z4; \
	VFMADD231PS Z26, Z27, Z5; \
	VBROADCASTSS 8(DX), Z27; \
	VFMADD231PS Z24, Z27, Z6; \
	VFMADD231PS Z25, Z27, Z7; \
	VFMADD231PS Z26, Z27, Z8; \
	VBROADCASTSS 12(DX), Z27; \
	VFMADD231PS Z24, Z27, Z9; \
	VFMADD231PS Z25, Z27, Z10; \
	VFMADD231PS Z26, Z27, Z11; \
	VBROADCASTSS 16(DX), Z27; \
	VFMADD231PS Z24, Z27, Z12; \
	VFMADD231PS Z25, Z27, Z13; \
	VFMADD231PS Z26, Z27, Z14; \
	VBROADCASTSS 20(DX), Z27; \
	VFMADD231PS Z24, Z27, Z15; \
	VFMADD231PS Z25, Z27, Z16; \
	VFMADD231PS Z26, Z27, Z17; \
	VBROADCASTSS 24(DX), Z27; \
	VFMADD231PS Z24, Z27, Z18; \
	VFMADD231PS Z25, Z27, Z19; \
	VFMADD231PS Z26, Z27, Z20; \
	VBROADCASTSS 28(DX), Z27; \
	VFMADD231PS Z24, Z27, Z21; \
	VFMADD231PS Z25, Z27, Z22; \
	VFMADD231PS Z26, Z27, Z23; \
	ADDQ $32, DX; \
	ADDQ $8, R11

// func blockAVX512(out *float32, ldo int, in *float32, cstride int, taps *int, ntaps int, w *float32, channels int)
//
// Z(3r+v) accumulates row r, positions 16v…16v+15. For each channel and
// tap: three loads of the input at the tap's offset, then per row one
// broadcast weight and three multiply-adds (Go's a += w·v in float32, each
// rounded once by the FMA).
TEXT ·blockAVX512(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), DI
	MOVQ ldo+8(FP), R8
	SHLQ $2, R8
	MOVQ in+16(FP), SI
	MOVQ cstride+24(FP), R9
	SHLQ $2, R9
	MOVQ taps+32(FP), R10
	MOVQ ntaps+40(FP), BX
	MOVQ w+48(FP), DX
	MOVQ channels+56(FP), CX

	BLOCKZERO

cloop:
	MOVQ R10, R11
	MOVQ BX, R14

tloop:
	BLOCKTAP
	DECQ R14
	JNZ  tloop
	ADDQ R9, SI
	DECQ CX
	JNZ  cloop

	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	ADDQ    R8, DI
	VMOVUPS Z3, 0(DI)
	VMOVUPS Z4, 64(DI)
	VMOVUPS Z5, 128(DI)
	ADDQ    R8, DI
	VMOVUPS Z6, 0(DI)
	VMOVUPS Z7, 64(DI)
	VMOVUPS Z8, 128(DI)
	ADDQ    R8, DI
	VMOVUPS Z9, 0(DI)
	VMOVUPS Z10, 64(DI)
	VMOVUPS Z11, 128(DI)
	ADDQ    R8, DI
	VMOVUPS Z12, 0(DI)
	VMOVUPS Z13, 64(DI)
	VMOVUPS Z14, 128(DI)
	ADDQ    R8, DI
	VMOVUPS Z15, 0(DI)
	VMOVUPS Z16, 64(DI)
	VMOVUPS Z17, 128(DI)
	ADDQ    R8, DI
	VMOVUPS Z18, 0(DI)
	VMOVUPS Z19, 64(DI)
	VMOVUPS Z20, 128(DI)
	ADDQ    R8, DI
	VMOVUPS Z21, 0(DI)
	VMOVUPS Z22, 64(DI)
	VMOVUPS Z23, 128(DI)
	VZEROUPPER
	RET

// HSUM stores the sum of the 16 float32 lanes of z (y its lower half),
// converted to float64 and added in a tree, at off(DI).
#define HSUM(z, y, off) \
	VEXTRACTF64X4 $1, z, Y28; \
	VCVTPS2PD     y, Z29; \
	VCVTPS2PD     Y28, Z30; \
	VADDPD        Z30, Z29, Z29; \
	VEXTRACTF64X4 $1, Z29, Y30; \
	VADDPD        Y30, Y29, Y29; \
	VEXTRACTF32X4 $1, Y29, X30; \
	VADDPD        X30, X29, X29; \
	VPERMILPD     $1, X29, X30; \
	VADDSD        X30, X29, X29; \
	VMOVSD        X29, off(DI)

// func gradBlockAVX512(sums *[24]float64, dy *float32, ldy int, in *float32, offs *[6]int, n int)
//
// Z(6r+j) accumulates row r, pair j; Z24…Z27 hold the output gradient of
// the four rows at position k (rows at SI, DI, R15, BX), Z28 the input of
// pair j (at R8…R13). AX is the byte offset of position k. The lanes of
// each sum are added up at the end (HSUM).
TEXT ·gradBlockAVX512(SB), NOSPLIT, $0-48
	MOVQ dy+8(FP), SI
	MOVQ ldy+16(FP), DX
	SHLQ $2, DX
	MOVQ in+24(FP), BX
	MOVQ offs+32(FP), CX
	MOVQ n+40(FP), R14
	SHLQ $2, R14
	MOVQ 0(CX), R8
	LEAQ (BX)(R8*4), R8
	MOVQ 8(CX), R9
	LEAQ (BX)(R9*4), R9
	MOVQ 16(CX), R10
	LEAQ (BX)(R10*4), R10
	MOVQ 24(CX), R11
	LEAQ (BX)(R11*4), R11
	MOVQ 32(CX), R12
	LEAQ (BX)(R12*4), R12
	MOVQ 40(CX), R13
	LEAQ (BX)(R13*4), R13
	LEAQ (SI)(DX*1), DI
	LEAQ (DI)(DX*1), R15
	LEAQ (R15)(DX*1), BX
	BLOCKZERO
	XORQ AX, AX

gloop:
	VMOVUPS (SI)(AX*1), Z24
	VMOVUPS (DI)(AX*1), Z25
	VMOVUPS (R15)(AX*1), Z26
	VMOVUPS (BX)(AX*1), Z27
	VMOVUPS (R8)(AX*1), Z28
	VFMADD231PS Z24, Z28, Z0
	VFMADD231PS Z25, Z28, Z6
	VFMADD231PS Z26, Z28, Z12
	VFMADD231PS Z27, Z28, Z18
	VMOVUPS (R9)(AX*1), Z28
	VFMADD231PS Z24, Z28, Z1
	VFMADD231PS Z25, Z28, Z7
	VFMADD231PS Z26, Z28, Z13
	VFMADD231PS Z27, Z28, Z19
	VMOVUPS (R10)(AX*1), Z28
	VFMADD231PS Z24, Z28, Z2
	VFMADD231PS Z25, Z28, Z8
	VFMADD231PS Z26, Z28, Z14
	VFMADD231PS Z27, Z28, Z20
	VMOVUPS (R11)(AX*1), Z28
	VFMADD231PS Z24, Z28, Z3
	VFMADD231PS Z25, Z28, Z9
	VFMADD231PS Z26, Z28, Z15
	VFMADD231PS Z27, Z28, Z21
	VMOVUPS (R12)(AX*1), Z28
	VFMADD231PS Z24, Z28, Z4
	VFMADD231PS Z25, Z28, Z10
	VFMADD231PS Z26, Z28, Z16
	VFMADD231PS Z27, Z28, Z22
	VMOVUPS (R13)(AX*1), Z28
	VFMADD231PS Z24, Z28, Z5
	VFMADD231PS Z25, Z28, Z11
	VFMADD231PS Z26, Z28, Z17
	VFMADD231PS Z27, Z28, Z23
	ADDQ $64, AX
	CMPQ AX, R14
	JLT  gloop

	MOVQ sums+0(FP), DI
	HSUM(Z0, Y0, 0)
	HSUM(Z1, Y1, 8)
	HSUM(Z2, Y2, 16)
	HSUM(Z3, Y3, 24)
	HSUM(Z4, Y4, 32)
	HSUM(Z5, Y5, 40)
	HSUM(Z6, Y6, 48)
	HSUM(Z7, Y7, 56)
	HSUM(Z8, Y8, 64)
	HSUM(Z9, Y9, 72)
	HSUM(Z10, Y10, 80)
	HSUM(Z11, Y11, 88)
	HSUM(Z12, Y12, 96)
	HSUM(Z13, Y13, 104)
	HSUM(Z14, Y14, 112)
	HSUM(Z15, Y15, 120)
	HSUM(Z16, Y16, 128)
	HSUM(Z17, Y17, 136)
	HSUM(Z18, Y18, 144)
	HSUM(Z19, Y19, 152)
	HSUM(Z20, Y20, 160)
	HSUM(Z21, Y21, 168)
	HSUM(Z22, Y22, 176)
	HSUM(Z23, Y23, 184)
	VZEROUPPER
	RET

// func depthwiseAVX512(out, in *float32, taps *int, ntaps int, w *float32, n int, bias, lo, hi float32)
//
// 64 positions per step in Z0…Z3 (16 at the end), each tap one broadcast
// weight (Z4) and four multiply-adds; then the bias and the clamp
// max(lo, x), min(hi, x), whose operand order keeps NaN.
TEXT ·depthwiseAVX512(SB), NOSPLIT, $0-60
	MOVQ         out+0(FP), DI
	MOVQ         in+8(FP), SI
	MOVQ         taps+16(FP), R8
	MOVQ         ntaps+24(FP), R9
	MOVQ         w+32(FP), R10
	MOVQ         n+40(FP), CX
	SHLQ         $2, CX // bytes
	VBROADCASTSS bias+48(FP), Z5
	VBROADCASTSS lo+52(FP), Z6
	VBROADCASTSS hi+56(FP), Z7
	XORQ         AX, AX // byte offset of the positions

dw64:
	MOVQ CX, DX
	SUBQ AX, DX
	CMPQ DX, $256
	JLT  dw16
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	XORQ   BX, BX

dw64tap:
	MOVQ         (R8)(BX*8), R11
	LEAQ         (SI)(R11*4), R11
	ADDQ         AX, R11
	VBROADCASTSS (R10)(BX*4), Z4
	VFMADD231PS  (R11), Z4, Z0
	VFMADD231PS  64(R11), Z4, Z1
	VFMADD231PS  128(R11), Z4, Z2
	VFMADD231PS  192(R11), Z4, Z3
	INCQ         BX
	CMPQ         BX, R9
	JLT          dw64tap
	VADDPS       Z5, Z0, Z0
	VADDPS       Z5, Z1, Z1
	VADDPS       Z5, Z2, Z2
	VADDPS       Z5, Z3, Z3
	VMAXPS       Z0, Z6, Z0
	VMAXPS       Z1, Z6, Z1
	VMAXPS       Z2, Z6, Z2
	VMAXPS       Z3, Z6, Z3
	VMINPS       Z0, Z7, Z0
	VMINPS       Z1, Z7, Z1
	VMINPS       Z2, Z7, Z2
	VMINPS       Z3, Z7, Z3
	VMOVUPS      Z0, (DI)(AX*1)
	VMOVUPS      Z1, 64(DI)(AX*1)
	VMOVUPS      Z2, 128(DI)(AX*1)
	VMOVUPS      Z3, 192(DI)(AX*1)
	ADDQ         $256, AX
	JMP          dw64

dw16:
	CMPQ   AX, CX
	JGE    dwdone
	VXORPS Z0, Z0, Z0
	XORQ   BX, BX

dw16tap:
	MOVQ         (R8)(BX*8), R11
	LEAQ         (SI)(R11*4), R11
	ADDQ         AX, R11
	VBROADCASTSS (R10)(BX*4), Z4
	VFMADD231PS  (R11), Z4, Z0
	INCQ         BX
	CMPQ         BX, R9
	JLT          dw16tap
	VADDPS       Z5, Z0, Z0
	VMAXPS       Z0, Z6, Z0
	VMINPS       Z0, Z7, Z0
	VMOVUPS      Z0, (DI)(AX*1)
	ADDQ         $64, AX
	JMP          dw16

dwdone:
	VZEROUPPER
	RET

// func copyRowsAVX512(dst *float32, ldd int, src *float32, lds, rows, cols, zero int)
//
// Per row: whole vectors, then the cols mod 16 last values under mask K1;
// between rows, when zero is not 0, zeros from column cols to ldd, whole
// vectors and then the (ldd-cols) mod 16 last under K2. Masked loads and
// stores touch no memory outside their lanes.
TEXT ·copyRowsAVX512(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	MOVQ rows+32(FP), R10
	MOVQ cols+40(FP), R11

	MOVQ R11, CX
	ANDQ $15, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1                // the copy's tail
	MOVQ R8, CX
	SUBQ R11, CX
	ANDQ $15, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K2                // the zeros' tail
	MOVQ R11, R12
	ANDQ $-16, R12              // whole vectors of a row
	LEAQ -16(R8), R13           // the zeros' whole vectors end before
	VPXORD Z31, Z31, Z31

crow:
	XORQ BX, BX
ccopy:
	CMPQ BX, R12
	JGE ctail
	VMOVUPS (SI)(BX*4), Z0
	VMOVUPS Z0, (DI)(BX*4)
	ADDQ $16, BX
	JMP ccopy
ctail:
	CMPQ BX, R11
	JGE cfill
	VMOVUPS.Z (SI)(BX*4), K1, Z0
	VMOVUPS Z0, K1, (DI)(BX*4)
cfill:
	DECQ R10
	JZ cdone
	CMPQ zero+48(FP), $0
	JEQ cnext
	MOVQ R11, BX
czero:
	CMPQ BX, R13
	JGT cztail
	VMOVUPS Z31, (DI)(BX*4)
	ADDQ $16, BX
	JMP czero
cztail:
	CMPQ BX, R8
	JGE cnext
	VMOVUPS Z31, K2, (DI)(BX*4)
cnext:
	LEAQ (DI)(R8*4), DI
	LEAQ (SI)(R9*4), SI
	JMP crow
cdone:
	VZEROUPPER
	RET

// The even and the odd positions of 32 floats (two vectors), for
// VPERMI2PS.
DATA evenIdx<>+0(SB)/4, $0
DATA evenIdx<>+4(SB)/4, $2
DATA evenIdx<>+8(SB)/4, $4
DATA evenIdx<>+12(SB)/4, $6
DATA evenIdx<>+16(SB)/4, $8
DATA evenIdx<>+20(SB)/4, $10
DATA evenIdx<>+24(SB)/4, $12
DATA evenIdx<>+28(SB)/4, $14
DATA evenIdx<>+32(SB)/4, $16
DATA evenIdx<>+36(SB)/4, $18
DATA evenIdx<>+40(SB)/4, $20
DATA evenIdx<>+44(SB)/4, $22
DATA evenIdx<>+48(SB)/4, $24
DATA evenIdx<>+52(SB)/4, $26
DATA evenIdx<>+56(SB)/4, $28
DATA evenIdx<>+60(SB)/4, $30
GLOBL evenIdx<>(SB), RODATA|NOPTR, $64

DATA oddIdx<>+0(SB)/4, $1
DATA oddIdx<>+4(SB)/4, $3
DATA oddIdx<>+8(SB)/4, $5
DATA oddIdx<>+12(SB)/4, $7
DATA oddIdx<>+16(SB)/4, $9
DATA oddIdx<>+20(SB)/4, $11
DATA oddIdx<>+24(SB)/4, $13
DATA oddIdx<>+28(SB)/4, $15
DATA oddIdx<>+32(SB)/4, $17
DATA oddIdx<>+36(SB)/4, $19
DATA oddIdx<>+40(SB)/4, $21
DATA oddIdx<>+44(SB)/4, $23
DATA oddIdx<>+48(SB)/4, $25
DATA oddIdx<>+52(SB)/4, $27
DATA oddIdx<>+56(SB)/4, $29
DATA oddIdx<>+60(SB)/4, $31
GLOBL oddIdx<>(SB), RODATA|NOPTR, $64

// func splitColumnsAVX512(even *float32, lde int, odd *float32, ldo int, src *float32, lds, rows, cols int)
//
// Per row, steps of 32 source values (the last with fewer, n, under masks:
// K5 and K6 for the two source vectors, K3 for the (n+1)/2 even values,
// K4 for the n/2 odd ones): VPERMI2PS gathers the even and the odd
// columns, each stored at half the source index.
TEXT ·splitColumnsAVX512(SB), NOSPLIT, $0-64
	MOVQ even+0(FP), DI
	MOVQ lde+8(FP), R8
	MOVQ odd+16(FP), DX
	MOVQ ldo+24(FP), R9
	MOVQ src+32(FP), SI
	MOVQ lds+40(FP), R10
	MOVQ rows+48(FP), R11
	MOVQ cols+56(FP), R12
	VMOVDQU32 evenIdx<>(SB), Z20
	VMOVDQU32 oddIdx<>(SB), Z21

srow:
	XORQ BX, BX
sstep:
	MOVQ R12, R13
	SUBQ BX, R13                // values left in the row
	JLE snext
	CMPQ R13, $32
	JLE smasks
	MOVQ $32, R13
smasks:
	MOVQ R13, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K5
	SHRQ $16, AX
	KMOVW AX, K6
	INCQ CX
	SHRQ $1, CX                 // (n+1)/2 even values
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K3
	MOVQ R13, CX
	SHRQ $1, CX                 // n/2 odd values
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K4

	VMOVUPS.Z (SI)(BX*4), K5, Z0
	VMOVUPS.Z 64(SI)(BX*4), K6, Z1
	VMOVDQA32 Z20, Z2
	VPERMI2PS Z1, Z0, Z2
	VMOVDQA32 Z21, Z3
	VPERMI2PS Z1, Z0, Z3
	VMOVUPS Z2, K3, (DI)(BX*2)
	VMOVUPS Z3, K4, (DX)(BX*2)
	ADDQ $32, BX
	JMP sstep

snext:
	DECQ R11
	JZ sdone
	LEAQ (DI)(R8*4), DI
	LEAQ (DX)(R9*4), DX
	LEAQ (SI)(R10*4), SI
	JMP srow
sdone:
	VZEROUPPER
	RET

// func sameAVX512(out, in *float32, taps *int, ntaps int, w *float32, masks *uint16, nv4 int, bias, lo, hi float32, nv int)
//
// Steps of 64 outputs (4 vectors) in Z0…Z3, nv vectors in all (rows of
// masks nv4 apart): per tap, one broadcast weight
// (Z4) and four loads under that tap's masks of the four vectors (rows of
// nv4 masks, one per tap, then the store masks); then the bias, the clamp
// (operand order keeps NaN) and four stores under the store masks. Masked
// lanes neither load nor store, so taps may reach before or past the plane.
TEXT ·sameAVX512(SB), NOSPLIT, $0-80
	MOVQ         out+0(FP), DI
	MOVQ         in+8(FP), SI
	MOVQ         taps+16(FP), R8
	MOVQ         ntaps+24(FP), R9
	MOVQ         w+32(FP), R10
	MOVQ         masks+40(FP), R12
	MOVQ         nv4+48(FP), R14
	VBROADCASTSS bias+56(FP), Z5
	VBROADCASTSS lo+60(FP), Z6
	VBROADCASTSS hi+64(FP), Z7
	MOVQ         nv+72(FP), R15 // vectors computed, whole steps
	XORQ         AX, AX // first vector of the step

sstep:
	CMPQ   AX, R15
	JGE    sdone
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	LEAQ   (R12)(AX*2), R13 // the step's masks of tap 0
	MOVQ   AX, DX
	SHLQ   $4, DX           // its first output
	XORQ   BX, BX

stap:
	MOVQ         (R8)(BX*8), R11
	ADDQ         DX, R11
	LEAQ         (SI)(R11*4), R11
	VBROADCASTSS (R10)(BX*4), Z4
	MASKS4(R13)
	VMOVUPS.Z    (R11), K1, Z8
	VMOVUPS.Z    64(R11), K2, Z9
	VMOVUPS.Z    128(R11), K3, Z10
	VMOVUPS.Z    192(R11), K4, Z11
	VFMADD231PS  Z8, Z4, Z0
	VFMADD231PS  Z9, Z4, Z1
	VFMADD231PS  Z10, Z4, Z2
	VFMADD231PS  Z11, Z4, Z3
	LEAQ         (R13)(R14*2), R13
	INCQ         BX
	CMPQ         BX, R9
	JLT          stap

	VADDPS  Z5, Z0, Z0
	VADDPS  Z5, Z1, Z1
	VADDPS  Z5, Z2, Z2
	VADDPS  Z5, Z3, Z3
	VMAXPS  Z0, Z6, Z0
	VMAXPS  Z1, Z6, Z1
	VMAXPS  Z2, Z6, Z2
	VMAXPS  Z3, Z6, Z3
	VMINPS  Z0, Z7, Z0
	VMINPS  Z1, Z7, Z1
	VMINPS  Z2, Z7, Z2
	VMINPS  Z3, Z7, Z3
	MASKS4(R13)
	LEAQ    (DI)(DX*4), R11
	VMOVUPS Z0, K1, (R11)
	VMOVUPS Z1, K2, 64(R11)
	VMOVUPS Z2, K3, 128(R11)
	VMOVUPS Z3, K4, 192(R11)
	ADDQ    $4, AX
	JMP     sstep

sdone:
	VZEROUPPER
	RET

// func stride2AVX512(out, in *float32, ld, rows int, w *float32, masks *uint16, steps, pad int, bias, lo, hi float32)
//
// Steps of 16 outputs in Z0: per input row, the 32 columns from 2j0−pad
// in Z1, Z2 and the next one in Z3 (masks K1, K2, K3 keep the loads inside
// the row); VPERMI2PS splits them into the even columns (tap 0) and the
// odd ones (tap 1), VALIGND shifts the even ones by one column (tap 2);
// then the bias, the clamp and a store under K4.
TEXT ·stride2AVX512(SB), NOSPLIT, $0-76
	MOVQ         out+0(FP), DI
	MOVQ         in+8(FP), SI
	MOVQ         ld+16(FP), R8
	SHLQ         $2, R8 // bytes
	MOVQ         rows+24(FP), R9
	MOVQ         w+32(FP), R10
	MOVQ         masks+40(FP), R12
	MOVQ         steps+48(FP), R14
	MOVQ         pad+56(FP), DX
	SHLQ         $2, DX
	SUBQ         DX, SI // column −pad of the first row
	VBROADCASTSS bias+64(FP), Z5
	VBROADCASTSS lo+68(FP), Z6
	VBROADCASTSS hi+72(FP), Z7
	VMOVUPS      evenIdx<>(SB), Z20
	VMOVUPS      oddIdx<>(SB), Z21

s2step:
	DECQ   R14
	JLT    s2done
	MASKS4(R12)
	VXORPS Z0, Z0, Z0
	MOVQ   SI, R11
	MOVQ   R10, R13
	MOVQ   R9, BX

s2row:
	VMOVUPS.Z    (R11), K1, Z1
	VMOVUPS.Z    64(R11), K2, Z2
	VMOVUPS.Z    128(R11), K3, Z3
	VMOVAPS      Z20, Z8
	VPERMI2PS    Z2, Z1, Z8 // columns 2j−pad
	VMOVAPS      Z21, Z9
	VPERMI2PS    Z2, Z1, Z9 // 2j−pad+1
	VALIGND      $1, Z8, Z3, Z10 // 2j−pad+2
	VBROADCASTSS (R13), Z4
	VFMADD231PS  Z8, Z4, Z0
	VBROADCASTSS 4(R13), Z4
	VFMADD231PS  Z9, Z4, Z0
	VBROADCASTSS 8(R13), Z4
	VFMADD231PS  Z10, Z4, Z0
	ADDQ         R8, R11
	ADDQ         $12, R13
	DECQ         BX
	JNZ          s2row

	VADDPS  Z5, Z0, Z0
	VMAXPS  Z0, Z6, Z0
	VMINPS  Z0, Z7, Z0
	VMOVUPS Z0, K4, (DI)
	ADDQ    $64, DI
	ADDQ    $128, SI
	ADDQ    $8, R12
	JMP     s2step

s2done:
	VZEROUPPER
	RET

// func blockSameAVX512(out *float32, ldo int, in *float32, q0, cstride int, taps *int, ntaps int, w *float32, channels int, masks *uint16, mstride int, bias *float32, lo, hi float32, next *float32)
//
// First a prefetch of the block's outputs (three lines per row), then
// blockAVX512 on a SamePlan's geometry: Z(3r+v) accumulates row r,
// positions q0+16v…, read from the planes where they lie, each tap's three
// loads under that tap's masks of the block's three vectors (AX: tap 0's,
// mstride bytes per tap; zeros in the padding's lanes, the same sums as
// over a zero-padded copy). Then, when bias is not nil, each row gets its
// bias and the clamp (lo, hi) in registers, and the rows are stored
// straight into the output planes under the store masks. Each channel's
// turn first prefetches the three lines at the block's positions in
// next's channel (R15), the planes of the image computed next.
TEXT ·blockSameAVX512(SB), NOSPLIT, $0-112
	MOVQ out+0(FP), DI
	MOVQ ldo+8(FP), R8
	SHLQ $2, R8
	MOVQ in+16(FP), SI
	MOVQ q0+24(FP), R12
	LEAQ (SI)(R12*4), SI
	MOVQ next+104(FP), R15
	LEAQ (R15)(R12*4), R15
	MOVQ cstride+32(FP), R9
	SHLQ $2, R9
	MOVQ taps+40(FP), R10
	MOVQ ntaps+48(FP), BX
	MOVQ w+56(FP), DX
	MOVQ channels+64(FP), CX

	MOVQ DI, R13 // the block's outputs, prefetched while it computes
	MOVQ $8, R14

bsprefetch:
	PREFETCH3(R13)
	ADDQ R8, R13
	DECQ R14
	JNZ  bsprefetch

	BLOCKZERO

bscloop:
	PREFETCH3(R15)
	MOVQ R10, R11
	MOVQ BX, R14
	MOVQ masks+72(FP), AX

bstloop:
	MOVQ      (R11), R12
	LEAQ      (SI)(R12*4), R13
	KMOVW     (AX), K1
	KMOVW     2(AX), K2
	KMOVW     4(AX), K3
	VMOVUPS.Z (R13), K1, Z24
	VMOVUPS.Z 64(R13), K2, Z25
	VMOVUPS.Z 128(R13), K3, Z26
	VBROADCASTSS 0(DX), Z27
	VFMADD231PS Z24, Z27, Z0
	VFMADD231PS Z25, Z27, Z1
	VFMADD231PS Z26, Z27, Z2
	VBROADCASTSS 4(DX), Z27
	VFMADD231PS Z24, Z27, Z3
	VFMADD231PS Z25, Z27, Z4
	VFMADD231PS Z26, Z27, Z5
	VBROADCASTSS 8(DX), Z27
	VFMADD231PS Z24, Z27, Z6
	VFMADD231PS Z25, Z27, Z7
	VFMADD231PS Z26, Z27, Z8
	VBROADCASTSS 12(DX), Z27
	VFMADD231PS Z24, Z27, Z9
	VFMADD231PS Z25, Z27, Z10
	VFMADD231PS Z26, Z27, Z11
	VBROADCASTSS 16(DX), Z27
	VFMADD231PS Z24, Z27, Z12
	VFMADD231PS Z25, Z27, Z13
	VFMADD231PS Z26, Z27, Z14
	VBROADCASTSS 20(DX), Z27
	VFMADD231PS Z24, Z27, Z15
	VFMADD231PS Z25, Z27, Z16
	VFMADD231PS Z26, Z27, Z17
	VBROADCASTSS 24(DX), Z27
	VFMADD231PS Z24, Z27, Z18
	VFMADD231PS Z25, Z27, Z19
	VFMADD231PS Z26, Z27, Z20
	VBROADCASTSS 28(DX), Z27
	VFMADD231PS Z24, Z27, Z21
	VFMADD231PS Z25, Z27, Z22
	VFMADD231PS Z26, Z27, Z23
	ADDQ $32, DX
	ADDQ $8, R11
	ADDQ mstride+80(FP), AX
	DECQ R14
	JNZ  bstloop
	ADDQ R9, SI
	ADDQ R9, R15
	DECQ CX
	JNZ  bscloop

	MOVQ  bias+88(FP), R12
	TESTQ R12, R12
	JZ    bsstore
	VBROADCASTSS lo+96(FP), Z28
	VBROADCASTSS hi+100(FP), Z29
	BIASROW(0(R12), Z0, Z1, Z2)
	BIASROW(4(R12), Z3, Z4, Z5)
	BIASROW(8(R12), Z6, Z7, Z8)
	BIASROW(12(R12), Z9, Z10, Z11)
	BIASROW(16(R12), Z12, Z13, Z14)
	BIASROW(20(R12), Z15, Z16, Z17)
	BIASROW(24(R12), Z18, Z19, Z20)
	BIASROW(28(R12), Z21, Z22, Z23)

bsstore:
	MOVQ  masks+72(FP), AX
	MOVQ  BX, R12
	IMULQ mstride+80(FP), R12
	ADDQ  R12, AX // the store masks
	KMOVW (AX), K1
	KMOVW 2(AX), K2
	KMOVW 4(AX), K3
	VMOVUPS Z0, K1, (DI)
	VMOVUPS Z1, K2, 64(DI)
	VMOVUPS Z2, K3, 128(DI)
	ADDQ    R8, DI
	VMOVUPS Z3, K1, (DI)
	VMOVUPS Z4, K2, 64(DI)
	VMOVUPS Z5, K3, 128(DI)
	ADDQ    R8, DI
	VMOVUPS Z6, K1, (DI)
	VMOVUPS Z7, K2, 64(DI)
	VMOVUPS Z8, K3, 128(DI)
	ADDQ    R8, DI
	VMOVUPS Z9, K1, (DI)
	VMOVUPS Z10, K2, 64(DI)
	VMOVUPS Z11, K3, 128(DI)
	ADDQ    R8, DI
	VMOVUPS Z12, K1, (DI)
	VMOVUPS Z13, K2, 64(DI)
	VMOVUPS Z14, K3, 128(DI)
	ADDQ    R8, DI
	VMOVUPS Z15, K1, (DI)
	VMOVUPS Z16, K2, 64(DI)
	VMOVUPS Z17, K3, 128(DI)
	ADDQ    R8, DI
	VMOVUPS Z18, K1, (DI)
	VMOVUPS Z19, K2, 64(DI)
	VMOVUPS Z20, K3, 128(DI)
	ADDQ    R8, DI
	VMOVUPS Z21, K1, (DI)
	VMOVUPS Z22, K2, 64(DI)
	VMOVUPS Z23, K3, 128(DI)
	VZEROUPPER
	RET

// func blockSame1AVX512(out *float32, ldo int, in *float32, q0, cstride int, taps *int, ntaps int, w *float32, channels int, masks *uint16, mstride int, bias *float32, lo, hi float32, next *float32)
//
// blockSameAVX512 for a block of one vector, positions q0…q0+15: Z(r)
// accumulates row r, each weight broadcast by its multiply-add. A plane
// whose last block holds one vector (7×7: 4 vectors, blocks of 3) runs it
// instead of three vectors' work for one. It prefetches next's lines as
// blockSameAVX512 does, but not its outputs.
TEXT ·blockSame1AVX512(SB), NOSPLIT, $0-112
	MOVQ out+0(FP), DI
	MOVQ ldo+8(FP), R8
	SHLQ $2, R8
	MOVQ in+16(FP), SI
	MOVQ q0+24(FP), R12
	LEAQ (SI)(R12*4), SI
	MOVQ next+104(FP), R15
	LEAQ (R15)(R12*4), R15
	MOVQ cstride+32(FP), R9
	SHLQ $2, R9
	MOVQ taps+40(FP), R10
	MOVQ ntaps+48(FP), BX
	MOVQ w+56(FP), DX
	MOVQ channels+64(FP), CX

	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7

b1cloop:
	PREFETCH3(R15)
	MOVQ R10, R11
	MOVQ BX, R14
	MOVQ masks+72(FP), AX

b1tloop:
	MOVQ      (R11), R12
	KMOVW     (AX), K1
	VMOVUPS.Z (SI)(R12*4), K1, Z24
	VFMADD231PS.BCST 0(DX), Z24, Z0
	VFMADD231PS.BCST 4(DX), Z24, Z1
	VFMADD231PS.BCST 8(DX), Z24, Z2
	VFMADD231PS.BCST 12(DX), Z24, Z3
	VFMADD231PS.BCST 16(DX), Z24, Z4
	VFMADD231PS.BCST 20(DX), Z24, Z5
	VFMADD231PS.BCST 24(DX), Z24, Z6
	VFMADD231PS.BCST 28(DX), Z24, Z7
	ADDQ $32, DX
	ADDQ $8, R11
	ADDQ mstride+80(FP), AX
	DECQ R14
	JNZ  b1tloop
	ADDQ R9, SI
	ADDQ R9, R15
	DECQ CX
	JNZ  b1cloop

	MOVQ  bias+88(FP), R12
	TESTQ R12, R12
	JZ    b1store
	VBROADCASTSS lo+96(FP), Z28
	VBROADCASTSS hi+100(FP), Z29
	VADDPS.BCST 0(R12), Z0, Z0
	VADDPS.BCST 4(R12), Z1, Z1
	VADDPS.BCST 8(R12), Z2, Z2
	VADDPS.BCST 12(R12), Z3, Z3
	VADDPS.BCST 16(R12), Z4, Z4
	VADDPS.BCST 20(R12), Z5, Z5
	VADDPS.BCST 24(R12), Z6, Z6
	VADDPS.BCST 28(R12), Z7, Z7
	VMAXPS Z0, Z28, Z0
	VMAXPS Z1, Z28, Z1
	VMAXPS Z2, Z28, Z2
	VMAXPS Z3, Z28, Z3
	VMAXPS Z4, Z28, Z4
	VMAXPS Z5, Z28, Z5
	VMAXPS Z6, Z28, Z6
	VMAXPS Z7, Z28, Z7
	VMINPS Z0, Z29, Z0
	VMINPS Z1, Z29, Z1
	VMINPS Z2, Z29, Z2
	VMINPS Z3, Z29, Z3
	VMINPS Z4, Z29, Z4
	VMINPS Z5, Z29, Z5
	VMINPS Z6, Z29, Z6
	VMINPS Z7, Z29, Z7

b1store:
	MOVQ  masks+72(FP), AX
	MOVQ  BX, R12
	IMULQ mstride+80(FP), R12
	ADDQ  R12, AX // the store mask
	KMOVW (AX), K1
	VMOVUPS Z0, K1, (DI)
	ADDQ    R8, DI
	VMOVUPS Z1, K1, (DI)
	ADDQ    R8, DI
	VMOVUPS Z2, K1, (DI)
	ADDQ    R8, DI
	VMOVUPS Z3, K1, (DI)
	ADDQ    R8, DI
	VMOVUPS Z4, K1, (DI)
	ADDQ    R8, DI
	VMOVUPS Z5, K1, (DI)
	ADDQ    R8, DI
	VMOVUPS Z6, K1, (DI)
	ADDQ    R8, DI
	VMOVUPS Z7, K1, (DI)
	VZEROUPPER
	RET

// func im2colSameAVX512(col *float32, ld int, in *float32, cstride, channels int, taps *int, ntaps int, masks *uint16, nv4, nvec int, last uint16)
//
// For each channel (SI, cstride bytes R9 apart) and tap (R11 walks the
// offsets, R13 the tap's row of masks), one row of col (DI, ld bytes R8
// apart): per vector AX, a load under the tap's mask (K2, zeros outside
// the image) stored under K7 (all lanes) or, for the plane's last vector,
// K4 (its outputs).
TEXT ·im2colSameAVX512(SB), NOSPLIT, $0-82
	MOVQ  col+0(FP), DI
	MOVQ  ld+8(FP), R8
	SHLQ  $2, R8
	MOVQ  in+16(FP), SI
	MOVQ  cstride+24(FP), R9
	SHLQ  $2, R9
	MOVQ  channels+32(FP), CX
	MOVQ  taps+40(FP), R10
	MOVQ  ntaps+48(FP), BX
	LEAQ  (R10)(BX*8), BX // the taps' end
	MOVQ  masks+56(FP), R12
	MOVQ  nv4+64(FP), R14
	SHLQ  $1, R14
	KMOVW last+80(FP), K4
	MOVL  $0xffff, AX
	KMOVW AX, K7

ichan:
	MOVQ R10, R11
	MOVQ R12, R13
itap:
	MOVQ (R11), DX
	LEAQ (SI)(DX*4), DX
	XORQ AX, AX
ivec:
	KMOVW     (R13)(AX*2), K2
	MOVQ      AX, R15
	SHLQ      $6, R15
	VMOVUPS.Z (DX)(R15*1), K2, Z0
	KMOVW     K7, K3
	INCQ      AX
	CMPQ      AX, nvec+72(FP)
	JLT       istore
	KMOVW     K4, K3
istore:
	VMOVUPS Z0, K3, (DI)(R15*1)
	JLT     ivec // the flags of the CMPQ above
	ADDQ    R8, DI
	ADDQ    $8, R11
	ADDQ    R14, R13
	CMPQ    R11, BX
	JLT     itap
	ADDQ    R9, SI
	DECQ    CX
	JNZ     ichan
	VZEROUPPER
	RET

// The interleaving of mergeColumnsAVX512: output lanes 0…15 of a step
// take even values 0…7 and odd values 0…7 in turn (odd values are the
// second table of VPERMI2PS, indices 16…), lanes 16…31 values 8…15.
DATA mergeLoIdx<>+0(SB)/4, $0
DATA mergeLoIdx<>+4(SB)/4, $16
DATA mergeLoIdx<>+8(SB)/4, $1
DATA mergeLoIdx<>+12(SB)/4, $17
DATA mergeLoIdx<>+16(SB)/4, $2
DATA mergeLoIdx<>+20(SB)/4, $18
DATA mergeLoIdx<>+24(SB)/4, $3
DATA mergeLoIdx<>+28(SB)/4, $19
DATA mergeLoIdx<>+32(SB)/4, $4
DATA mergeLoIdx<>+36(SB)/4, $20
DATA mergeLoIdx<>+40(SB)/4, $5
DATA mergeLoIdx<>+44(SB)/4, $21
DATA mergeLoIdx<>+48(SB)/4, $6
DATA mergeLoIdx<>+52(SB)/4, $22
DATA mergeLoIdx<>+56(SB)/4, $7
DATA mergeLoIdx<>+60(SB)/4, $23
GLOBL mergeLoIdx<>(SB), RODATA|NOPTR, $64

DATA mergeHiIdx<>+0(SB)/4, $8
DATA mergeHiIdx<>+4(SB)/4, $24
DATA mergeHiIdx<>+8(SB)/4, $9
DATA mergeHiIdx<>+12(SB)/4, $25
DATA mergeHiIdx<>+16(SB)/4, $10
DATA mergeHiIdx<>+20(SB)/4, $26
DATA mergeHiIdx<>+24(SB)/4, $11
DATA mergeHiIdx<>+28(SB)/4, $27
DATA mergeHiIdx<>+32(SB)/4, $12
DATA mergeHiIdx<>+36(SB)/4, $28
DATA mergeHiIdx<>+40(SB)/4, $13
DATA mergeHiIdx<>+44(SB)/4, $29
DATA mergeHiIdx<>+48(SB)/4, $14
DATA mergeHiIdx<>+52(SB)/4, $30
DATA mergeHiIdx<>+56(SB)/4, $15
DATA mergeHiIdx<>+60(SB)/4, $31
GLOBL mergeHiIdx<>(SB), RODATA|NOPTR, $64

// func mergeColumnsAVX512(dst *float32, ldd int, even *float32, lde int, odd *float32, ldo int, rows, cols, add int)
//
// SplitColumns backwards: per step of 32 values of a dst row, the step's
// even (K3) and odd (K4) values interleaved by VPERMI2PS and, when add is
// not 0, added to the row, stored under K5 (values 0…15) and K6
// (16…31).
TEXT ·mergeColumnsAVX512(SB), NOSPLIT, $0-72
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	MOVQ even+16(FP), SI
	MOVQ lde+24(FP), R9
	MOVQ odd+32(FP), DX
	MOVQ ldo+40(FP), R10
	MOVQ rows+48(FP), R11
	MOVQ cols+56(FP), R12
	MOVQ add+64(FP), R14
	VMOVDQU32 mergeLoIdx<>(SB), Z20
	VMOVDQU32 mergeHiIdx<>(SB), Z21

mrow:
	XORQ BX, BX
mstep:
	MOVQ R12, R13
	SUBQ BX, R13 // values left in the row
	JLE  mnext
	CMPQ R13, $32
	JLE  mmasks
	MOVQ $32, R13
mmasks:
	MOVQ  R13, CX
	MOVQ  $1, AX
	SHLQ  CX, AX
	DECQ  AX
	KMOVW AX, K5
	SHRQ  $16, AX
	KMOVW AX, K6
	INCQ  CX
	SHRQ  $1, CX // (n+1)/2 even values
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K3
	MOVQ  R13, CX
	SHRQ  $1, CX // n/2 odd values
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K4

	VMOVUPS.Z (SI)(BX*2), K3, Z0
	VMOVUPS.Z (DX)(BX*2), K4, Z1
	VMOVDQA32 Z20, Z2
	VPERMI2PS Z1, Z0, Z2
	VMOVDQA32 Z21, Z3
	VPERMI2PS Z1, Z0, Z3
	TESTQ     R14, R14
	JNZ       madd
	VMOVUPS   Z2, K5, (DI)(BX*4)
	VMOVUPS   Z3, K6, 64(DI)(BX*4)
	ADDQ      $32, BX
	JMP       mstep

madd:
	VMOVUPS.Z (DI)(BX*4), K5, Z4
	VMOVUPS.Z 64(DI)(BX*4), K6, Z5
	VADDPS    Z2, Z4, Z4
	VADDPS    Z3, Z5, Z5
	VMOVUPS   Z4, K5, (DI)(BX*4)
	VMOVUPS   Z5, K6, 64(DI)(BX*4)
	ADDQ      $32, BX
	JMP       mstep

mnext:
	DECQ R11
	JZ   mdone
	LEAQ (DI)(R8*4), DI
	LEAQ (SI)(R9*4), SI
	LEAQ (DX)(R10*4), DX
	JMP  mrow
mdone:
	VZEROUPPER
	RET

// func addRowsAVX512(dst *float32, ldd int, src *float32, lds, rows, cols int)
//
// dst[r·ldd + i] += src[r·lds + i]: per row, whole vectors, then the
// last partial one under K1.
TEXT ·addRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $2, R9
	MOVQ rows+32(FP), R10
	MOVQ cols+40(FP), R11
	MOVQ R11, CX
	ANDQ $15, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	MOVQ R11, R12
	ANDQ $-16, R12

arow:
	XORQ BX, BX
avec:
	CMPQ    BX, R12
	JGE     atail
	VMOVUPS (DI)(BX*4), Z0
	VADDPS  (SI)(BX*4), Z0, Z0
	VMOVUPS Z0, (DI)(BX*4)
	ADDQ    $16, BX
	JMP     avec
atail:
	VMOVUPS.Z (DI)(BX*4), K1, Z0
	VMOVUPS.Z (SI)(BX*4), K1, Z1
	VADDPS    Z1, Z0, Z0
	VMOVUPS   Z0, K1, (DI)(BX*4)
	ADDQ      R8, DI
	ADDQ      R9, SI
	DECQ      R10
	JNZ       arow
	VZEROUPPER
	RET

// S2ROW loads the three source vectors of a step of one input row at r
// under K1…K3 and splits them into the columns of its three taps, as
// stride2AVX512 does: e (2j−pad), o (2j−pad+1), s (2j−pad+2); a, b, c
// are scratch.
#define S2ROW(r, a, b, c, e, o, s) \
	VMOVUPS.Z (r), K1, a; \
	VMOVUPS.Z 64(r), K2, b; \
	VMOVUPS.Z 128(r), K3, c; \
	VMOVAPS   Z20, e; \
	VPERMI2PS b, a, e; \
	VMOVAPS   Z21, o; \
	VPERMI2PS b, a, o; \
	VALIGND   $1, e, c, s

// S2TAPS adds the three taps e, o, s of one input row to acc with the
// weights in wa, wb, wc.
#define S2TAPS(e, o, s, wa, wb, wc, acc) \
	VFMADD231PS e, wa, acc; \
	VFMADD231PS o, wb, acc; \
	VFMADD231PS s, wc, acc

// func stride2RowsAVX512(out *float32, ldo int, in *float32, ld, instep, rows int, w *float32, masks *uint16, steps, pad int, bias, lo, hi float32, nout int)
//
// stride2AVX512 for nout output rows (nout even), two at a time: output
// row o (CX, and CX+ldo for o+1) reads rows input rows from its own
// start (R11; DX = R11 + instep for o+1). Each row's sum runs over the
// same multiply-adds in the same order as stride2AVX512's (the same
// bits); the two rows' chains are independent, so they overlap.
TEXT ·stride2RowsAVX512(SB), NOSPLIT, $0-104
	MOVQ         out+0(FP), DI
	MOVQ         ldo+8(FP), R15
	SHLQ         $2, R15
	MOVQ         in+16(FP), SI
	MOVQ         ld+24(FP), R8
	SHLQ         $2, R8
	MOVQ         instep+32(FP), BX
	SHLQ         $2, BX
	MOVQ         BX, instep+32(FP) // now in bytes
	MOVQ         rows+40(FP), R9
	MOVQ         w+48(FP), R10
	MOVQ         pad+72(FP), DX
	SHLQ         $2, DX
	SUBQ         DX, SI // column −pad of the first row
	VBROADCASTSS bias+80(FP), Z5
	VBROADCASTSS lo+84(FP), Z6
	VBROADCASTSS hi+88(FP), Z7
	VMOVUPS      evenIdx<>(SB), Z20
	VMOVUPS      oddIdx<>(SB), Z21
	// Three kernel rows with a vertical stride of twice their distance
	// (MobileNet's layers): the pair's output rows share an input row,
	// and the steps take the shared body (R9 = 0 says so), the weights in
	// Z22…Z30.
	CMPQ R9, $3
	JNE  rpair
	LEAQ (R8)(R8*1), DX
	CMPQ DX, instep+32(FP)
	JNE  rpair
	XORQ R9, R9
	VBROADCASTSS (R10), Z22
	VBROADCASTSS 4(R10), Z23
	VBROADCASTSS 8(R10), Z24
	VBROADCASTSS 12(R10), Z25
	VBROADCASTSS 16(R10), Z26
	VBROADCASTSS 20(R10), Z27
	VBROADCASTSS 24(R10), Z28
	VBROADCASTSS 28(R10), Z29
	VBROADCASTSS 32(R10), Z30

rpair:
	MOVQ SI, AX
	MOVQ DI, CX
	MOVQ masks+56(FP), R12
	MOVQ steps+64(FP), R14

rstep:
	DECQ   R14
	JLT    rnext
	MASKS4(R12)
	// Prefetch this step's columns of the four rows that the pair of
	// output rows three pairs down reads first (rows 13 to 16 below
	// this pair's first, with a vertical stride of 2): a plane's rows are
	// too short for the hardware prefetcher to follow them. 112×112×96 at
	// batch 32, whose planes come from memory: 10.0 → 3.2–5.3 ms (two
	// or four pairs ahead did no better).
	MOVQ       instep+32(FP), R11
	LEAQ       (R11)(R11*2), R11
	LEAQ       (AX)(R11*2), R11
	ADDQ       R8, R11
	PREFETCHT0 (R11)
	PREFETCHT0 64(R11)
	PREFETCHT0 (R11)(R8*1)
	PREFETCHT0 64(R11)(R8*1)
	LEAQ       (R11)(R8*2), R11
	PREFETCHT0 (R11)
	PREFETCHT0 64(R11)
	PREFETCHT0 (R11)(R8*1)
	PREFETCHT0 64(R11)(R8*1)
	VXORPS Z0, Z0, Z0
	VXORPS Z11, Z11, Z11
	MOVQ   AX, R11
	TESTQ  R9, R9
	JZ     rshared
	MOVQ   AX, DX
	ADDQ   instep+32(FP), DX
	MOVQ   R10, R13
	MOVQ   R9, BX

rrow:
	S2ROW(R11, Z1, Z2, Z3, Z8, Z9, Z10)
	S2ROW(DX, Z12, Z13, Z14, Z15, Z16, Z17)
	VBROADCASTSS (R13), Z4
	VFMADD231PS  Z8, Z4, Z0
	VFMADD231PS  Z15, Z4, Z11
	VBROADCASTSS 4(R13), Z4
	VFMADD231PS  Z9, Z4, Z0
	VFMADD231PS  Z16, Z4, Z11
	VBROADCASTSS 8(R13), Z4
	VFMADD231PS  Z10, Z4, Z0
	VFMADD231PS  Z17, Z4, Z11
	ADDQ         R8, R11
	ADDQ         R8, DX
	ADDQ         $12, R13
	DECQ         BX
	JNZ          rrow
	JMP          rstore

	// The shared body: the pair reads five input rows, not six, each
	// split once, the shared one feeding the first row's last kernel row
	// and the second's first; each sum takes its multiply-adds in the
	// order of the loop above (the same bits).
rshared:
	S2ROW(R11, Z1, Z2, Z3, Z8, Z9, Z10)
	S2TAPS(Z8, Z9, Z10, Z22, Z23, Z24, Z0)
	ADDQ   R8, R11
	S2ROW(R11, Z12, Z13, Z14, Z15, Z16, Z17)
	S2TAPS(Z15, Z16, Z17, Z25, Z26, Z27, Z0)
	ADDQ   R8, R11
	S2ROW(R11, Z1, Z2, Z3, Z8, Z9, Z10)
	S2TAPS(Z8, Z9, Z10, Z28, Z29, Z30, Z0)
	S2TAPS(Z8, Z9, Z10, Z22, Z23, Z24, Z11)
	ADDQ   R8, R11
	S2ROW(R11, Z12, Z13, Z14, Z15, Z16, Z17)
	S2TAPS(Z15, Z16, Z17, Z25, Z26, Z27, Z11)
	ADDQ   R8, R11
	S2ROW(R11, Z1, Z2, Z3, Z8, Z9, Z10)
	S2TAPS(Z8, Z9, Z10, Z28, Z29, Z30, Z11)

rstore:
	VADDPS  Z5, Z0, Z0
	VMAXPS  Z0, Z6, Z0
	VMINPS  Z0, Z7, Z0
	VMOVUPS Z0, K4, (CX)
	VADDPS  Z5, Z11, Z11
	VMAXPS  Z11, Z6, Z11
	VMINPS  Z11, Z7, Z11
	VMOVUPS Z11, K4, (CX)(R15*1)
	ADDQ    $64, CX
	ADDQ    $128, AX
	ADDQ    $8, R12
	JMP     rstep

rnext:
	ADDQ instep+32(FP), SI
	ADDQ instep+32(FP), SI
	LEAQ (DI)(R15*2), DI
	SUBQ $2, nout+96(FP)
	JG   rpair
	VZEROUPPER
	RET

// func samePlanesAVX512(out *float32, ldo int, in *float32, ldi int, taps *int, ntaps int, w *float32, ldw int, bias *float32, bstride int, masks *uint16, nv4, nv int, lo, hi float32, planes int)
//
// sameAVX512 for planes planes (an even count), two at a time: plane A
// (in at SI, out at DI, weights at R10, bias Z5) in Z0…Z3 and plane B
// (CX = ldi bytes further, ldo and ldw bytes further, bias Z25) in
// Z12…Z15, under the same masks. Each plane's sums take sameAVX512's
// multiply-adds in its order (the same bits); the two planes' chains are
// independent, so they overlap. The strides in the argument slots are
// turned into bytes first.
TEXT ·samePlanesAVX512(SB), NOSPLIT, $0-120
	MOVQ         out+0(FP), DI
	MOVQ         ldo+8(FP), AX
	SHLQ         $2, AX
	MOVQ         AX, ldo+8(FP)
	MOVQ         in+16(FP), SI
	MOVQ         ldi+24(FP), CX
	SHLQ         $2, CX
	MOVQ         taps+32(FP), R8
	MOVQ         ntaps+40(FP), R9
	MOVQ         w+48(FP), R10
	MOVQ         ldw+56(FP), AX
	SHLQ         $2, AX
	MOVQ         AX, ldw+56(FP)
	MOVQ         bstride+72(FP), AX
	SHLQ         $2, AX
	MOVQ         AX, bstride+72(FP)
	MOVQ         nv4+88(FP), R14
	MOVQ         nv+96(FP), R15
	VBROADCASTSS lo+104(FP), Z6
	VBROADCASTSS hi+108(FP), Z7

ppair:
	MOVQ         bias+64(FP), R11
	VBROADCASTSS (R11), Z5
	ADDQ         bstride+72(FP), R11
	VBROADCASTSS (R11), Z25
	ADDQ         bstride+72(FP), R11
	MOVQ         R11, bias+64(FP)
	XORQ         AX, AX // first vector of the step

pstep:
	CMPQ   AX, R15
	JGE    pnext
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z12, Z12, Z12
	VXORPS Z13, Z13, Z13
	VXORPS Z14, Z14, Z14
	VXORPS Z15, Z15, Z15
	MOVQ   masks+80(FP), R13
	LEAQ   (R13)(AX*2), R13 // the step's masks of tap 0
	MOVQ   AX, DX
	SHLQ   $4, DX           // its first output
	XORQ   BX, BX
	// Prefetch both planes' inputs 512 bytes (two steps) past the
	// step's first output: in mobilenet_v2 at batch 32 the planes come
	// from memory, and the two planes' streams with their three rows of
	// taps are more than the hardware prefetcher follows (56×56×144 at
	// batch 32: 4.7 → 2.5 ms; 1,024 bytes 2.7, 2,048 3.0).
	LEAQ       (SI)(DX*4), R11
	PREFETCHT0 512(R11)
	PREFETCHT0 576(R11)
	PREFETCHT0 640(R11)
	PREFETCHT0 704(R11)
	ADDQ       CX, R11
	PREFETCHT0 512(R11)
	PREFETCHT0 576(R11)
	PREFETCHT0 640(R11)
	PREFETCHT0 704(R11)

ptap:
	MOVQ         (R8)(BX*8), R11
	ADDQ         DX, R11
	LEAQ         (SI)(R11*4), R11
	VBROADCASTSS (R10)(BX*4), Z4
	MASKS4(R13)
	VMOVUPS.Z    (R11), K1, Z8
	VMOVUPS.Z    64(R11), K2, Z9
	VMOVUPS.Z    128(R11), K3, Z10
	VMOVUPS.Z    192(R11), K4, Z11
	VMOVUPS.Z    (R11)(CX*1), K1, Z16
	VMOVUPS.Z    64(R11)(CX*1), K2, Z17
	VMOVUPS.Z    128(R11)(CX*1), K3, Z18
	VMOVUPS.Z    192(R11)(CX*1), K4, Z19
	VFMADD231PS  Z8, Z4, Z0
	VFMADD231PS  Z9, Z4, Z1
	VFMADD231PS  Z10, Z4, Z2
	VFMADD231PS  Z11, Z4, Z3
	MOVQ         R10, R11
	ADDQ         ldw+56(FP), R11
	VBROADCASTSS (R11)(BX*4), Z24
	VFMADD231PS  Z16, Z24, Z12
	VFMADD231PS  Z17, Z24, Z13
	VFMADD231PS  Z18, Z24, Z14
	VFMADD231PS  Z19, Z24, Z15
	LEAQ         (R13)(R14*2), R13
	INCQ         BX
	CMPQ         BX, R9
	JLT          ptap

	VADDPS  Z5, Z0, Z0
	VADDPS  Z5, Z1, Z1
	VADDPS  Z5, Z2, Z2
	VADDPS  Z5, Z3, Z3
	VMAXPS  Z0, Z6, Z0
	VMAXPS  Z1, Z6, Z1
	VMAXPS  Z2, Z6, Z2
	VMAXPS  Z3, Z6, Z3
	VMINPS  Z0, Z7, Z0
	VMINPS  Z1, Z7, Z1
	VMINPS  Z2, Z7, Z2
	VMINPS  Z3, Z7, Z3
	VADDPS  Z25, Z12, Z12
	VADDPS  Z25, Z13, Z13
	VADDPS  Z25, Z14, Z14
	VADDPS  Z25, Z15, Z15
	VMAXPS  Z12, Z6, Z12
	VMAXPS  Z13, Z6, Z13
	VMAXPS  Z14, Z6, Z14
	VMAXPS  Z15, Z6, Z15
	VMINPS  Z12, Z7, Z12
	VMINPS  Z13, Z7, Z13
	VMINPS  Z14, Z7, Z14
	VMINPS  Z15, Z7, Z15
	MASKS4(R13)
	LEAQ    (DI)(DX*4), R11
	VMOVUPS Z0, K1, (R11)
	VMOVUPS Z1, K2, 64(R11)
	VMOVUPS Z2, K3, 128(R11)
	VMOVUPS Z3, K4, 192(R11)
	ADDQ    ldo+8(FP), R11
	VMOVUPS Z12, K1, (R11)
	VMOVUPS Z13, K2, 64(R11)
	VMOVUPS Z14, K3, 128(R11)
	VMOVUPS Z15, K4, 192(R11)
	ADDQ    $4, AX
	JMP     pstep

pnext:
	ADDQ ldo+8(FP), DI
	ADDQ ldo+8(FP), DI
	LEAQ (SI)(CX*2), SI
	ADDQ ldw+56(FP), R10
	ADDQ ldw+56(FP), R10
	SUBQ $2, planes+112(FP)
	JG   ppair
	VZEROUPPER
	RET

// func sameDotsImagesAVX512(acc *float64, dy *float32, ldy int, in *float32, ldi, images int, taps *int, ntaps int, masks *uint16, nv4, nv int)
//
// TapDotsImages: per tap, steps of 4 vectors, nv vectors in all (rows of
// masks nv4 apart), over images planes (ldy and ldi apart, turned into
// bytes in their slots first): dy and the tap's input loaded under the
// tap's masks (zeros elsewhere, so masked lanes add 0·0), every image's
// products multiplied into the same Z0…Z3 (R13 the tap's row of masks,
// restarted for each image); their sum, 16 lanes, folded to 8 and
// converted to float64, is added to acc[8·tap:] once for all of them.
TEXT ·sameDotsImagesAVX512(SB), NOSPLIT, $0-88
	MOVQ acc+0(FP), DI
	MOVQ ldy+16(FP), AX
	SHLQ $2, AX
	MOVQ AX, ldy+16(FP)
	MOVQ ldi+32(FP), AX
	SHLQ $2, AX
	MOVQ AX, ldi+32(FP)
	MOVQ taps+48(FP), R8
	MOVQ ntaps+56(FP), R9
	MOVQ masks+64(FP), R13
	MOVQ nv4+72(FP), R14
	SHLQ $1, R14 // bytes from a tap's masks to the next tap's
	MOVQ nv+80(FP), R15
	XORQ BX, BX  // tap

itap:
	CMPQ   BX, R9
	JGE    idone
	MOVQ   (R8)(BX*8), DX
	SHLQ   $2, DX
	ADDQ   in+24(FP), DX // the tap's input for output 0 of the first image
	MOVQ   dy+8(FP), SI
	MOVQ   images+40(FP), AX
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3

iimg:
	MOVQ R13, R12
	MOVQ SI, R10
	MOVQ DX, R11
	MOVQ R15, CX

istep:
	MASKS4(R12)
	VMOVUPS.Z   (R10), K1, Z8
	VMOVUPS.Z   64(R10), K2, Z9
	VMOVUPS.Z   128(R10), K3, Z10
	VMOVUPS.Z   192(R10), K4, Z11
	VMOVUPS.Z   (R11), K1, Z12
	VMOVUPS.Z   64(R11), K2, Z13
	VMOVUPS.Z   128(R11), K3, Z14
	VMOVUPS.Z   192(R11), K4, Z15
	VFMADD231PS Z8, Z12, Z0
	VFMADD231PS Z9, Z13, Z1
	VFMADD231PS Z10, Z14, Z2
	VFMADD231PS Z11, Z15, Z3
	ADDQ        $8, R12
	ADDQ        $256, R10
	ADDQ        $256, R11
	SUBQ        $4, CX
	JG          istep
	ADDQ        ldy+16(FP), SI
	ADDQ        ldi+32(FP), DX
	DECQ        AX
	JNZ         iimg

	VADDPS        Z1, Z0, Z0
	VADDPS        Z3, Z2, Z2
	VADDPS        Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y16
	VCVTPS2PD     Y0, Z17
	VCVTPS2PD     Y16, Z18
	VADDPD        Z18, Z17, Z17
	VADDPD        (DI), Z17, Z17
	VMOVUPD       Z17, (DI)
	ADDQ          $64, DI
	ADDQ          R14, R13
	INCQ          BX
	JMP           itap

idone:
	VZEROUPPER
	RET

// func blockRowsAVX512(out *float32, ldo int, in *float32, cstride int, taps *int, ntaps int, w *float32, channels int, offs *int, masks *uint16, bias *float32, lo, hi float32)
//
// First a prefetch of the outputs of the next block (its first vector's
// offset is offs[6]), then blockAVX512's block, then the bias and clamp
// of blockSameAVX512 (bias in R15), then each vector k of each row stored
// twice under the masks of RowsPlan: lanes of its first row at offs[2k]
// (R9, R11, R13 under K1, K3, K5), of the next row at offs[2k+1] (R10,
// R12, R14 under K2, K4, K6).
TEXT ·blockRowsAVX512(SB), NOSPLIT, $0-96
	MOVQ out+0(FP), DI
	MOVQ ldo+8(FP), R8
	SHLQ $2, R8
	MOVQ in+16(FP), SI
	MOVQ cstride+24(FP), R9
	SHLQ $2, R9
	MOVQ taps+32(FP), R10
	MOVQ ntaps+40(FP), BX
	MOVQ w+48(FP), DX
	MOVQ channels+56(FP), CX

	// Prefetch the next block's outputs, which lie within 48 positions of
	// its first one in each of the Rows planes: a store that misses the
	// cache waits for its line at the head of the store queue.
	MOVQ offs+64(FP), R15
	MOVQ 48(R15), R15
	LEAQ (DI)(R15*4), R15
	PREFETCHROW; ADDQ R8, R15
	PREFETCHROW; ADDQ R8, R15
	PREFETCHROW; ADDQ R8, R15
	PREFETCHROW; ADDQ R8, R15
	PREFETCHROW; ADDQ R8, R15
	PREFETCHROW; ADDQ R8, R15
	PREFETCHROW; ADDQ R8, R15
	PREFETCHROW


	BLOCKZERO

brcloop:
	MOVQ R10, R11
	MOVQ BX, R14

brtloop:
	BLOCKTAP
	DECQ R14
	JNZ  brtloop
	ADDQ R9, SI
	DECQ CX
	JNZ  brcloop

	MOVQ  bias+80(FP), R15
	TESTQ R15, R15
	JZ    brstore
	VBROADCASTSS lo+88(FP), Z28
	VBROADCASTSS hi+92(FP), Z29
	BIASROW(0(R15), Z0, Z1, Z2)
	BIASROW(4(R15), Z3, Z4, Z5)
	BIASROW(8(R15), Z6, Z7, Z8)
	BIASROW(12(R15), Z9, Z10, Z11)
	BIASROW(16(R15), Z12, Z13, Z14)
	BIASROW(20(R15), Z15, Z16, Z17)
	BIASROW(24(R15), Z18, Z19, Z20)
	BIASROW(28(R15), Z21, Z22, Z23)

brstore:
	MOVQ  offs+64(FP), AX
	MOVQ  0(AX), R9
	MOVQ  8(AX), R10
	MOVQ  16(AX), R11
	MOVQ  24(AX), R12
	MOVQ  32(AX), R13
	MOVQ  40(AX), R14
	MOVQ  masks+72(FP), AX
	KMOVW 0(AX), K1
	KMOVW 2(AX), K2
	KMOVW 4(AX), K3
	KMOVW 6(AX), K4
	KMOVW 8(AX), K5
	KMOVW 10(AX), K6
	ROWSTORE(Z0, Z1, Z2)
	ADDQ    R8, DI
	ROWSTORE(Z3, Z4, Z5)
	ADDQ    R8, DI
	ROWSTORE(Z6, Z7, Z8)
	ADDQ    R8, DI
	ROWSTORE(Z9, Z10, Z11)
	ADDQ    R8, DI
	ROWSTORE(Z12, Z13, Z14)
	ADDQ    R8, DI
	ROWSTORE(Z15, Z16, Z17)
	ADDQ    R8, DI
	ROWSTORE(Z18, Z19, Z20)
	ADDQ    R8, DI
	ROWSTORE(Z21, Z22, Z23)
	VZEROUPPER
	RET


// func stride2BlockAVX512(out *float32, ldo int, in *float32, ld, cstride, channels, rows int, w *float32, wstride int, masks *uint16, steps, pad int, bias *float32, lo, hi float32)
//
// One output row of 16 output channels (Stride2Plan.RunBlock): for each
// step of 16 outputs, each input channel's rows rows (ld apart, channels
// cstride apart) are loaded from column 2j−pad as S2ROW loads them, their
// three taps split in registers, and each tap multiplies the step's 16
// accumulators (Z0–Z15, one per output channel) by a broadcast weight:
// w holds, per channel (wstride floats apart), per row, per tap, the 16
// output channels' weights. Output channel o's row is stored at out +
// o·ldo with its bias and clamp.
TEXT ·stride2BlockAVX512(SB), NOSPLIT, $0-112
	MOVQ         out+0(FP), DI
	MOVQ         ldo+8(FP), R15
	SHLQ         $2, R15
	MOVQ         in+16(FP), SI
	MOVQ         ld+24(FP), R8
	SHLQ         $2, R8
	MOVQ         cstride+32(FP), R9
	SHLQ         $2, R9
	MOVQ         pad+88(FP), DX
	SHLQ         $2, DX
	SUBQ         DX, SI // column −pad of the first row
	MOVQ         masks+72(FP), R12
	MOVQ         steps+80(FP), R14
	VBROADCASTSS lo+104(FP), Z25
	VBROADCASTSS hi+108(FP), Z26
	VMOVUPS      evenIdx<>(SB), Z20
	VMOVUPS      oddIdx<>(SB), Z21

bstep:
	DECQ  R14
	JLT   bdone
	MASKS4(R12)
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	VXORPS Z8, Z8, Z8
	VXORPS Z9, Z9, Z9
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	VXORPS Z12, Z12, Z12
	VXORPS Z13, Z13, Z13
	VXORPS Z14, Z14, Z14
	VXORPS Z15, Z15, Z15
	MOVQ SI, AX
	MOVQ w+56(FP), R10
	MOVQ channels+40(FP), CX

bchan:
	MOVQ AX, R11
	MOVQ R10, R13
	MOVQ rows+48(FP), BX

brow:
	S2ROW(R11, Z16, Z17, Z18, Z22, Z23, Z24)
	VFMADD231PS.BCST 0(R13), Z22, Z0
	VFMADD231PS.BCST 4(R13), Z22, Z1
	VFMADD231PS.BCST 8(R13), Z22, Z2
	VFMADD231PS.BCST 12(R13), Z22, Z3
	VFMADD231PS.BCST 16(R13), Z22, Z4
	VFMADD231PS.BCST 20(R13), Z22, Z5
	VFMADD231PS.BCST 24(R13), Z22, Z6
	VFMADD231PS.BCST 28(R13), Z22, Z7
	VFMADD231PS.BCST 32(R13), Z22, Z8
	VFMADD231PS.BCST 36(R13), Z22, Z9
	VFMADD231PS.BCST 40(R13), Z22, Z10
	VFMADD231PS.BCST 44(R13), Z22, Z11
	VFMADD231PS.BCST 48(R13), Z22, Z12
	VFMADD231PS.BCST 52(R13), Z22, Z13
	VFMADD231PS.BCST 56(R13), Z22, Z14
	VFMADD231PS.BCST 60(R13), Z22, Z15
	VFMADD231PS.BCST 64(R13), Z23, Z0
	VFMADD231PS.BCST 68(R13), Z23, Z1
	VFMADD231PS.BCST 72(R13), Z23, Z2
	VFMADD231PS.BCST 76(R13), Z23, Z3
	VFMADD231PS.BCST 80(R13), Z23, Z4
	VFMADD231PS.BCST 84(R13), Z23, Z5
	VFMADD231PS.BCST 88(R13), Z23, Z6
	VFMADD231PS.BCST 92(R13), Z23, Z7
	VFMADD231PS.BCST 96(R13), Z23, Z8
	VFMADD231PS.BCST 100(R13), Z23, Z9
	VFMADD231PS.BCST 104(R13), Z23, Z10
	VFMADD231PS.BCST 108(R13), Z23, Z11
	VFMADD231PS.BCST 112(R13), Z23, Z12
	VFMADD231PS.BCST 116(R13), Z23, Z13
	VFMADD231PS.BCST 120(R13), Z23, Z14
	VFMADD231PS.BCST 124(R13), Z23, Z15
	VFMADD231PS.BCST 128(R13), Z24, Z0
	VFMADD231PS.BCST 132(R13), Z24, Z1
	VFMADD231PS.BCST 136(R13), Z24, Z2
	VFMADD231PS.BCST 140(R13), Z24, Z3
	VFMADD231PS.BCST 144(R13), Z24, Z4
	VFMADD231PS.BCST 148(R13), Z24, Z5
	VFMADD231PS.BCST 152(R13), Z24, Z6
	VFMADD231PS.BCST 156(R13), Z24, Z7
	VFMADD231PS.BCST 160(R13), Z24, Z8
	VFMADD231PS.BCST 164(R13), Z24, Z9
	VFMADD231PS.BCST 168(R13), Z24, Z10
	VFMADD231PS.BCST 172(R13), Z24, Z11
	VFMADD231PS.BCST 176(R13), Z24, Z12
	VFMADD231PS.BCST 180(R13), Z24, Z13
	VFMADD231PS.BCST 184(R13), Z24, Z14
	VFMADD231PS.BCST 188(R13), Z24, Z15
	ADDQ $192, R13
	ADDQ R8, R11
	DECQ BX
	JNZ  brow
	MOVQ wstride+64(FP), BX
	LEAQ (R10)(BX*4), R10
	ADDQ R9, AX
	DECQ CX
	JNZ  bchan

	MOVQ bias+96(FP), R13
	MOVQ DI, DX
	VADDPS.BCST 0(R13), Z0, Z0
	VMAXPS      Z0, Z25, Z0
	VMINPS      Z0, Z26, Z0
	VMOVUPS     Z0, K4, (DX)
	ADDQ        R15, DX
	VADDPS.BCST 4(R13), Z1, Z1
	VMAXPS      Z1, Z25, Z1
	VMINPS      Z1, Z26, Z1
	VMOVUPS     Z1, K4, (DX)
	ADDQ        R15, DX
	VADDPS.BCST 8(R13), Z2, Z2
	VMAXPS      Z2, Z25, Z2
	VMINPS      Z2, Z26, Z2
	VMOVUPS     Z2, K4, (DX)
	ADDQ        R15, DX
	VADDPS.BCST 12(R13), Z3, Z3
	VMAXPS      Z3, Z25, Z3
	VMINPS      Z3, Z26, Z3
	VMOVUPS     Z3, K4, (DX)
	ADDQ        R15, DX
	VADDPS.BCST 16(R13), Z4, Z4
	VMAXPS      Z4, Z25, Z4
	VMINPS      Z4, Z26, Z4
	VMOVUPS     Z4, K4, (DX)
	ADDQ        R15, DX
	VADDPS.BCST 20(R13), Z5, Z5
	VMAXPS      Z5, Z25, Z5
	VMINPS      Z5, Z26, Z5
	VMOVUPS     Z5, K4, (DX)
	ADDQ        R15, DX
	VADDPS.BCST 24(R13), Z6, Z6
	VMAXPS      Z6, Z25, Z6
	VMINPS      Z6, Z26, Z6
	VMOVUPS     Z6, K4, (DX)
	ADDQ        R15, DX
	VADDPS.BCST 28(R13), Z7, Z7
	VMAXPS      Z7, Z25, Z7
	VMINPS      Z7, Z26, Z7
	VMOVUPS     Z7, K4, (DX)
	ADDQ        R15, DX
	VADDPS.BCST 32(R13), Z8, Z8
	VMAXPS      Z8, Z25, Z8
	VMINPS      Z8, Z26, Z8
	VMOVUPS     Z8, K4, (DX)
	ADDQ        R15, DX
	VADDPS.BCST 36(R13), Z9, Z9
	VMAXPS      Z9, Z25, Z9
	VMINPS      Z9, Z26, Z9
	VMOVUPS     Z9, K4, (DX)
	ADDQ        R15, DX
	VADDPS.BCST 40(R13), Z10, Z10
	VMAXPS      Z10, Z25, Z10
	VMINPS      Z10, Z26, Z10
	VMOVUPS     Z10, K4, (DX)
	ADDQ        R15, DX
	VADDPS.BCST 44(R13), Z11, Z11
	VMAXPS      Z11, Z25, Z11
	VMINPS      Z11, Z26, Z11
	VMOVUPS     Z11, K4, (DX)
	ADDQ        R15, DX
	VADDPS.BCST 48(R13), Z12, Z12
	VMAXPS      Z12, Z25, Z12
	VMINPS      Z12, Z26, Z12
	VMOVUPS     Z12, K4, (DX)
	ADDQ        R15, DX
	VADDPS.BCST 52(R13), Z13, Z13
	VMAXPS      Z13, Z25, Z13
	VMINPS      Z13, Z26, Z13
	VMOVUPS     Z13, K4, (DX)
	ADDQ        R15, DX
	VADDPS.BCST 56(R13), Z14, Z14
	VMAXPS      Z14, Z25, Z14
	VMINPS      Z14, Z26, Z14
	VMOVUPS     Z14, K4, (DX)
	ADDQ        R15, DX
	VADDPS.BCST 60(R13), Z15, Z15
	VMAXPS      Z15, Z25, Z15
	VMINPS      Z15, Z26, Z15
	VMOVUPS     Z15, K4, (DX)
	ADDQ $64, DI
	ADDQ $128, SI
	ADDQ $8, R12
	JMP  bstep

bdone:
	VZEROUPPER
	RET

// ROWVEC adds one kernel row's three taps for one vector of a step to
// acc, left to right: the row's vector before (prev) and this one (cur)
// shifted a column right, cur, and cur and the vector after (next)
// shifted a column left.
#define ROWVEC(prev, cur, next, acc) \
	VALIGND     $15, prev, cur, Z10; \
	VALIGND     $1, cur, next, Z11; \
	VFMADD231PS Z10, Z16, acc; \
	VFMADD231PS cur, Z17, acc; \
	VFMADD231PS Z11, Z18, acc

// func sameRowsAVX512(out *float32, ldo int, in *float32, ldi int, rowIn *int, kh, oh, w int, wts *float32, ldw int, bias *float32, bstride int, chunkMasks *uint16, chunks int, lo, hi float32, planes int)
//
// SamePlan.RunPlanes for plans whose kernel rows are 3 wide with a
// padding of 1 across (see SamePlan.wide3), row by row: each output row
// in chunks of 4 vectors (64 columns, Z0…Z3), each kernel row's input
// row loaded once per chunk (Z5…Z8, the vector before it Z4 and after it
// Z9, all under the chunk's six masks K1…K6, which leave zeros past the
// row's ends) and shifted a column either way by VALIGND; a kernel row
// outside the image (rowIn −1) adds zeros. The sums take the taps in
// order from zero, padding included (the general kernel's bits). The
// chunk is the outer loop so that its masks stay in registers. The
// strides in the argument slots are turned into bytes first, and chunks
// into the end of the masks.
TEXT ·sameRowsAVX512(SB), NOSPLIT, $0-128
	MOVQ         ldo+8(FP), AX
	SHLQ         $2, AX
	MOVQ         AX, ldo+8(FP)
	MOVQ         ldi+24(FP), AX
	SHLQ         $2, AX
	MOVQ         AX, ldi+24(FP)
	MOVQ         ldw+72(FP), AX
	SHLQ         $2, AX
	MOVQ         AX, ldw+72(FP)
	MOVQ         bstride+88(FP), AX
	SHLQ         $2, AX
	MOVQ         AX, bstride+88(FP)
	MOVQ         chunks+104(FP), AX
	IMULQ        $12, AX
	ADDQ         chunkMasks+96(FP), AX
	MOVQ         AX, chunks+104(FP)
	MOVQ         out+0(FP), DI
	MOVQ         in+16(FP), SI
	MOVQ         rowIn+32(FP), R8
	MOVQ         kh+40(FP), R9
	MOVQ         wts+64(FP), R10
	MOVQ         w+56(FP), R14
	SHLQ         $2, R14             // bytes per row
	VBROADCASTSS lo+112(FP), Z14
	VBROADCASTSS hi+116(FP), Z15

rplane:
	MOVQ         bias+80(FP), R15
	VBROADCASTSS (R15), Z13
	ADDQ         bstride+88(FP), R15
	MOVQ         R15, bias+80(FP)
	MOVQ         chunkMasks+96(FP), DX
	XORQ         CX, CX              // the chunk's first column, in bytes

rchunk:
	KMOVW (DX), K1
	KMOVW 2(DX), K2
	KMOVW 4(DX), K3
	KMOVW 6(DX), K4
	KMOVW 8(DX), K5
	KMOVW 10(DX), K6
	MOVQ  R8, R11        // the kernel rows' input rows of output row 0
	LEAQ  (DI)(CX*1), R13
	XORQ  AX, AX

rrow:
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	XORQ   BX, BX

rtap:
	LEAQ         (BX)(BX*2), R15
	VBROADCASTSS (R10)(R15*4), Z16
	VBROADCASTSS 4(R10)(R15*4), Z17
	VBROADCASTSS 8(R10)(R15*4), Z18
	MOVQ         (R11)(BX*8), R12
	TESTQ        R12, R12
	JS           rzero
	LEAQ         (SI)(R12*4), R12
	ADDQ         CX, R12
	VMOVUPS.Z    -64(R12), K1, Z4
	VMOVUPS.Z    (R12), K2, Z5
	VMOVUPS.Z    64(R12), K3, Z6
	VMOVUPS.Z    128(R12), K4, Z7
	VMOVUPS.Z    192(R12), K5, Z8
	VMOVUPS.Z    256(R12), K6, Z9
	JMP          rfma

rzero:
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	VXORPS Z8, Z8, Z8
	VXORPS Z9, Z9, Z9

rfma:
	ROWVEC(Z4, Z5, Z6, Z0)
	ROWVEC(Z5, Z6, Z7, Z1)
	ROWVEC(Z6, Z7, Z8, Z2)
	ROWVEC(Z7, Z8, Z9, Z3)
	INCQ BX
	CMPQ BX, R9
	JLT  rtap

	VADDPS  Z13, Z0, Z0
	VADDPS  Z13, Z1, Z1
	VADDPS  Z13, Z2, Z2
	VADDPS  Z13, Z3, Z3
	VMAXPS  Z0, Z14, Z0
	VMAXPS  Z1, Z14, Z1
	VMAXPS  Z2, Z14, Z2
	VMAXPS  Z3, Z14, Z3
	VMINPS  Z0, Z15, Z0
	VMINPS  Z1, Z15, Z1
	VMINPS  Z2, Z15, Z2
	VMINPS  Z3, Z15, Z3
	VMOVUPS Z0, K2, (R13)
	VMOVUPS Z1, K3, 64(R13)
	VMOVUPS Z2, K4, 128(R13)
	VMOVUPS Z3, K5, 192(R13)
	ADDQ    R14, R13
	LEAQ    (R11)(R9*8), R11
	INCQ    AX
	CMPQ    AX, oh+48(FP)
	JLT     rrow

	ADDQ $256, CX
	ADDQ $12, DX
	CMPQ DX, chunks+104(FP)
	JLT  rchunk

	ADDQ ldo+8(FP), DI
	ADDQ ldi+24(FP), SI
	ADDQ ldw+72(FP), R10
	DECQ planes+120(FP)
	JG   rplane
	VZEROUPPER
	RET
