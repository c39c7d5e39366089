//go:build amd64 && !noasm

#include "textflag.h"

// The AVX2 kernels, for CPUs without AVX-512: vectors of 8 lanes, no
// masks (their callers leave the last few values to Go).

// func depthwiseAVX2(out, in *float32, taps *int, ntaps int, w *float32, n int, bias, lo, hi float32)
//
// depthwiseAVX512 in vectors of 8: steps of 32 outputs (4 vectors) in
// Y0…Y3, then of 8 (n is a multiple of 16); per tap one broadcast weight
// (Y4); then the bias, the clamp (operand order keeps NaN) and the stores.
TEXT ·depthwiseAVX2(SB), NOSPLIT, $0-60
	MOVQ         out+0(FP), DI
	MOVQ         in+8(FP), SI
	MOVQ         taps+16(FP), R8
	MOVQ         ntaps+24(FP), R9
	MOVQ         w+32(FP), R10
	MOVQ         n+40(FP), CX
	SHLQ         $2, CX // bytes
	VBROADCASTSS bias+48(FP), Y5
	VBROADCASTSS lo+52(FP), Y6
	VBROADCASTSS hi+56(FP), Y7
	XORQ         AX, AX // byte offset of the positions

d32:
	MOVQ   CX, DX
	SUBQ   AX, DX
	CMPQ   DX, $128
	JLT    d8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   BX, BX

d32tap:
	MOVQ         (R8)(BX*8), R11
	LEAQ         (SI)(R11*4), R11
	ADDQ         AX, R11
	VBROADCASTSS (R10)(BX*4), Y4
	VFMADD231PS  (R11), Y4, Y0
	VFMADD231PS  32(R11), Y4, Y1
	VFMADD231PS  64(R11), Y4, Y2
	VFMADD231PS  96(R11), Y4, Y3
	INCQ         BX
	CMPQ         BX, R9
	JLT          d32tap
	VADDPS       Y5, Y0, Y0
	VADDPS       Y5, Y1, Y1
	VADDPS       Y5, Y2, Y2
	VADDPS       Y5, Y3, Y3
	VMAXPS       Y0, Y6, Y0
	VMAXPS       Y1, Y6, Y1
	VMAXPS       Y2, Y6, Y2
	VMAXPS       Y3, Y6, Y3
	VMINPS       Y0, Y7, Y0
	VMINPS       Y1, Y7, Y1
	VMINPS       Y2, Y7, Y2
	VMINPS       Y3, Y7, Y3
	VMOVUPS      Y0, (DI)(AX*1)
	VMOVUPS      Y1, 32(DI)(AX*1)
	VMOVUPS      Y2, 64(DI)(AX*1)
	VMOVUPS      Y3, 96(DI)(AX*1)
	ADDQ         $128, AX
	JMP          d32

d8:
	CMPQ   AX, CX
	JGE    ddone
	VXORPS Y0, Y0, Y0
	XORQ   BX, BX

d8tap:
	MOVQ         (R8)(BX*8), R11
	LEAQ         (SI)(R11*4), R11
	ADDQ         AX, R11
	VBROADCASTSS (R10)(BX*4), Y4
	VFMADD231PS  (R11), Y4, Y0
	INCQ         BX
	CMPQ         BX, R9
	JLT          d8tap
	VADDPS       Y5, Y0, Y0
	VMAXPS       Y0, Y6, Y0
	VMINPS       Y0, Y7, Y0
	VMOVUPS      Y0, (DI)(AX*1)
	ADDQ         $32, AX
	JMP          d8

ddone:
	VZEROUPPER
	RET

// func splitColumnsAVX2(even *float32, lde int, odd *float32, ldo int, src *float32, lds, rows, chunks int)
//
// The first 16·chunks values of each row: per 16 source values (Y0, Y1),
// VSHUFPS picks the even (odd) ones of each 128-bit lane and VPERMPD puts
// the lanes' halves in order; 8 even and 8 odd values are stored.
TEXT ·splitColumnsAVX2(SB), NOSPLIT, $0-64
	MOVQ even+0(FP), DI
	MOVQ lde+8(FP), R8
	SHLQ $2, R8
	MOVQ odd+16(FP), DX
	MOVQ ldo+24(FP), R9
	SHLQ $2, R9
	MOVQ src+32(FP), SI
	MOVQ lds+40(FP), R10
	SHLQ $2, R10
	MOVQ rows+48(FP), R11
	MOVQ chunks+56(FP), R12
	TESTQ R12, R12
	JZ    sdone

srow:
	XORQ AX, AX // source byte offset
	XORQ BX, BX // destination byte offset
	MOVQ R12, CX

sstep:
	VMOVUPS (SI)(AX*1), Y0
	VMOVUPS 32(SI)(AX*1), Y1
	VSHUFPS $0x88, Y1, Y0, Y2
	VSHUFPS $0xDD, Y1, Y0, Y3
	VPERMPD $0xD8, Y2, Y2
	VPERMPD $0xD8, Y3, Y3
	VMOVUPS Y2, (DI)(BX*1)
	VMOVUPS Y3, (DX)(BX*1)
	ADDQ    $64, AX
	ADDQ    $32, BX
	DECQ    CX
	JNZ     sstep

	DECQ R11
	JZ   sdone
	ADDQ R8, DI
	ADDQ R9, DX
	ADDQ R10, SI
	JMP  srow

sdone:
	VZEROUPPER
	RET

// func splitColumns8AVX2(even *float32, lde int, odd *float32, ldo int, src *float32, lds, rows int)
//
// The first 8 values of each row: VSHUFPS picks the even and the odd ones
// of the two 128-bit halves of Y0; 4 even and 4 odd values are stored.
TEXT ·splitColumns8AVX2(SB), NOSPLIT, $0-56
	MOVQ even+0(FP), DI
	MOVQ lde+8(FP), R8
	SHLQ $2, R8
	MOVQ odd+16(FP), DX
	MOVQ ldo+24(FP), R9
	SHLQ $2, R9
	MOVQ src+32(FP), SI
	MOVQ lds+40(FP), R10
	SHLQ $2, R10
	MOVQ rows+48(FP), R11
	TESTQ R11, R11
	JZ    s8done

s8row:
	VMOVUPS      (SI), Y0
	VEXTRACTF128 $1, Y0, X1
	VSHUFPS      $0x88, X1, X0, X2
	VSHUFPS      $0xDD, X1, X0, X3
	VMOVUPS      X2, (DI)
	VMOVUPS      X3, (DX)
	ADDQ         R8, DI
	ADDQ         R9, DX
	ADDQ         R10, SI
	DECQ         R11
	JNZ          s8row

s8done:
	VZEROUPPER
	RET

// func blockAVX2(out *float32, ldo int, in *float32, cstride int, taps *int, ntaps int, w *float32, channels int)
//
// blockAVX512's 8×48 block in four passes of 4 rows × 24 positions (R15:
// the pass; rows 4·(R15>>1), positions 24·(R15&1)), each summing every
// channel and tap into Y(3r+v), r < 4 rows, v < 3 vectors of 8: three
// loads of the input, then per row one broadcast weight and three
// multiply-adds, in blockAVX512's order (the same bits). With cols <= 24
// the passes of positions 24…47 are skipped.
TEXT ·blockAVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ ldo+8(FP), R8
	SHLQ $2, R8
	MOVQ in+16(FP), SI
	MOVQ cstride+24(FP), R9
	SHLQ $2, R9
	MOVQ w+48(FP), DX
	XORQ R15, R15

bapass:
	MOVQ R15, CX
	ANDQ $1, CX
	JZ   bacols
	CMPQ cols+64(FP), $24
	JLE  banext // positions 24…47 are not needed

bacols:
	IMULQ $96, CX // the positions' byte offset
	MOVQ R15, R10
	SHRQ $1, R10 // the half of the rows
	LEAQ (SI)(CX*1), R14
	MOVQ R10, R12
	SHLQ $4, R12
	ADDQ DX, R12 // the weights of the rows
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	MOVQ channels+56(FP), R11
bacloop:
	MOVQ taps+32(FP), R13
	MOVQ ntaps+40(FP), AX
batloop:
	MOVQ (R13), BX
	LEAQ (R14)(BX*4), BX
	VMOVUPS (BX), Y12
	VMOVUPS 32(BX), Y13
	VMOVUPS 64(BX), Y14
	VBROADCASTSS 0(R12), Y15
	VFMADD231PS Y12, Y15, Y0
	VFMADD231PS Y13, Y15, Y1
	VFMADD231PS Y14, Y15, Y2
	VBROADCASTSS 4(R12), Y15
	VFMADD231PS Y12, Y15, Y3
	VFMADD231PS Y13, Y15, Y4
	VFMADD231PS Y14, Y15, Y5
	VBROADCASTSS 8(R12), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VFMADD231PS Y14, Y15, Y8
	VBROADCASTSS 12(R12), Y15
	VFMADD231PS Y12, Y15, Y9
	VFMADD231PS Y13, Y15, Y10
	VFMADD231PS Y14, Y15, Y11
	ADDQ $32, R12
	ADDQ $8, R13
	DECQ AX
	JNZ  batloop
	ADDQ R9, R14
	DECQ R11
	JNZ  bacloop
	MOVQ R10, BX
	SHLQ $2, BX
	IMULQ R8, BX
	ADDQ DI, BX
	ADDQ CX, BX // the pass's first output
	VMOVUPS Y0, 0(BX)
	VMOVUPS Y1, 32(BX)
	VMOVUPS Y2, 64(BX)
	ADDQ R8, BX
	VMOVUPS Y3, 0(BX)
	VMOVUPS Y4, 32(BX)
	VMOVUPS Y5, 64(BX)
	ADDQ R8, BX
	VMOVUPS Y6, 0(BX)
	VMOVUPS Y7, 32(BX)
	VMOVUPS Y8, 64(BX)
	ADDQ R8, BX
	VMOVUPS Y9, 0(BX)
	VMOVUPS Y10, 32(BX)
	VMOVUPS Y11, 64(BX)

banext:
	INCQ R15
	CMPQ R15, $4
	JLT  bapass
	VZEROUPPER
	RET

// HSUM2 stores at off(DI) the sum of the 16 float32 lanes of a GradBlock
// sum held in ylo (lanes 0–7, xlo its lower half) and yhi (lanes 8–15),
// converted to float64 and added in gradBlockAVX512's tree (HSUM): lane i
// plus lane i+8, then the halves of those, and so on (Y12–Y15 scratch).
#define HSUM2(ylo, xlo, yhi, xhi, off) \
	VCVTPS2PD    xlo, Y14; \
	VEXTRACTF128 $1, ylo, X15; \
	VCVTPS2PD    X15, Y15; \
	VCVTPS2PD    xhi, Y12; \
	VEXTRACTF128 $1, yhi, X13; \
	VCVTPS2PD    X13, Y13; \
	VADDPD       Y12, Y14, Y14; \
	VADDPD       Y13, Y15, Y15; \
	VADDPD       Y15, Y14, Y14; \
	VEXTRACTF128 $1, Y14, X15; \
	VADDPD       X15, X14, X14; \
	VPERMILPD    $1, X14, X15; \
	VADDSD       X15, X14, X14; \
	VMOVSD       X14, off(DI)

// HSUMLANES is HSUM2 of the sum whose lanes wait at lanes(SP) and
// lanes+32(SP), stored at off(DI).
#define HSUMLANES(lanes, off) \
	VMOVUPS lanes(SP), Y0; \
	VMOVUPS lanes+32(SP), Y1; \
	HSUM2(Y0, X0, Y1, X1, off)

// GAPASS is one pass's pointers, at 1536+40·pass(SP): the two rows of the
// output gradient and the three input runs it reads.
#define GAPASS(pass, pairs) \
	MOVQ SI, BX; \
	MOVQ BX, 1536+40*pass(SP); \
	ADDQ DX, BX; \
	MOVQ BX, 1544+40*pass(SP); \
	MOVQ pairs(CX), BX; \
	LEAQ (R8)(BX*4), BX; \
	MOVQ BX, 1552+40*pass(SP); \
	MOVQ pairs+8(CX), BX; \
	LEAQ (R8)(BX*4), BX; \
	MOVQ BX, 1560+40*pass(SP); \
	MOVQ pairs+16(CX), BX; \
	LEAQ (R8)(BX*4), BX; \
	MOVQ BX, 1568+40*pass(SP)

// func gradBlockAVX2(sums *[24]float64, dy *float32, ldy int, in *float32, offs *[6]int, n int)
//
// gradBlockAVX512 in four passes, each over two rows of the output
// gradient (at BX, DI) and three of the six pairs (at R8, R9, R10): rows 0–1
// with pairs 0–2, then pairs 3–5, then rows 2–3 likewise. Y(6a+2j) and
// Y(6a+2j+1) accumulate row a and pair j's lanes 0–7 and 8–15 of each 16
// positions (position k in lane k mod 16, as there); Y12 and Y13 hold the
// two rows' 8 values at position k, Y14 a pair's input, each used twice.
// The positions go in chunks of 512 (AX to R15, in bytes), each chunk
// through the four passes before the next, so that the passes after the
// first read the chunk from L1; each pass's 12 accumulators wait between
// chunks in the frame (pass p at 384·p(SP)), its pointers after them
// (GAPASS). The lanes of each sum are then added in float64 in
// gradBlockAVX512's order (the same bits).
TEXT ·gradBlockAVX2(SB), $1696-48
	MOVQ dy+8(FP), SI
	MOVQ ldy+16(FP), DX
	SHLQ $2, DX
	MOVQ in+24(FP), R8
	MOVQ offs+32(FP), CX
	MOVQ n+40(FP), R14
	SHLQ $2, R14
	GAPASS(0, 0)
	GAPASS(1, 24)
	LEAQ (SI)(DX*2), SI
	GAPASS(2, 0)
	GAPASS(3, 24)
	VXORPS Y0, Y0, Y0
	XORQ   CX, CX

gazero:
	VMOVUPS Y0, (SP)(CX*1)
	ADDQ    $32, CX
	CMPQ    CX, $1536
	JLT     gazero
	XORQ    AX, AX

gachunk:
	LEAQ    2048(AX), R15
	CMPQ    R15, R14
	CMOVQGT R14, R15
	XORQ    R13, R13
	XORQ    R12, R12

gapass:
	MOVQ    1536(SP)(R12*1), BX
	MOVQ    1544(SP)(R12*1), DI
	MOVQ    1552(SP)(R12*1), R8
	MOVQ    1560(SP)(R12*1), R9
	MOVQ    1568(SP)(R12*1), R10
	VMOVUPS 0(SP)(R13*1), Y0
	VMOVUPS 32(SP)(R13*1), Y1
	VMOVUPS 64(SP)(R13*1), Y2
	VMOVUPS 96(SP)(R13*1), Y3
	VMOVUPS 128(SP)(R13*1), Y4
	VMOVUPS 160(SP)(R13*1), Y5
	VMOVUPS 192(SP)(R13*1), Y6
	VMOVUPS 224(SP)(R13*1), Y7
	VMOVUPS 256(SP)(R13*1), Y8
	VMOVUPS 288(SP)(R13*1), Y9
	VMOVUPS 320(SP)(R13*1), Y10
	VMOVUPS 352(SP)(R13*1), Y11
	MOVQ    AX, CX

galoop:
	VMOVUPS (BX)(CX*1), Y12
	VMOVUPS (DI)(CX*1), Y13
	VMOVUPS (R8)(CX*1), Y14
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y6
	VMOVUPS (R9)(CX*1), Y14
	VFMADD231PS Y12, Y14, Y2
	VFMADD231PS Y13, Y14, Y8
	VMOVUPS (R10)(CX*1), Y14
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y10
	VMOVUPS 32(BX)(CX*1), Y12
	VMOVUPS 32(DI)(CX*1), Y13
	VMOVUPS 32(R8)(CX*1), Y14
	VFMADD231PS Y12, Y14, Y1
	VFMADD231PS Y13, Y14, Y7
	VMOVUPS 32(R9)(CX*1), Y14
	VFMADD231PS Y12, Y14, Y3
	VFMADD231PS Y13, Y14, Y9
	VMOVUPS 32(R10)(CX*1), Y14
	VFMADD231PS Y12, Y14, Y5
	VFMADD231PS Y13, Y14, Y11
	ADDQ $64, CX
	CMPQ CX, R15
	JLT  galoop
	VMOVUPS Y0, 0(SP)(R13*1)
	VMOVUPS Y1, 32(SP)(R13*1)
	VMOVUPS Y2, 64(SP)(R13*1)
	VMOVUPS Y3, 96(SP)(R13*1)
	VMOVUPS Y4, 128(SP)(R13*1)
	VMOVUPS Y5, 160(SP)(R13*1)
	VMOVUPS Y6, 192(SP)(R13*1)
	VMOVUPS Y7, 224(SP)(R13*1)
	VMOVUPS Y8, 256(SP)(R13*1)
	VMOVUPS Y9, 288(SP)(R13*1)
	VMOVUPS Y10, 320(SP)(R13*1)
	VMOVUPS Y11, 352(SP)(R13*1)
	ADDQ $40, R12
	ADDQ $384, R13
	CMPQ R13, $1536
	JLT  gapass
	MOVQ R15, AX
	CMPQ AX, R14
	JLT  gachunk

	MOVQ sums+0(FP), DI
	HSUMLANES(0, 0)
	HSUMLANES(64, 8)
	HSUMLANES(128, 16)
	HSUMLANES(384, 24)
	HSUMLANES(448, 32)
	HSUMLANES(512, 40)
	HSUMLANES(192, 48)
	HSUMLANES(256, 56)
	HSUMLANES(320, 64)
	HSUMLANES(576, 72)
	HSUMLANES(640, 80)
	HSUMLANES(704, 88)
	HSUMLANES(768, 96)
	HSUMLANES(832, 104)
	HSUMLANES(896, 112)
	HSUMLANES(1152, 120)
	HSUMLANES(1216, 128)
	HSUMLANES(1280, 136)
	HSUMLANES(960, 144)
	HSUMLANES(1024, 152)
	HSUMLANES(1088, 160)
	HSUMLANES(1344, 168)
	HSUMLANES(1408, 176)
	HSUMLANES(1472, 184)
	VZEROUPPER
	RET

// func copyRowsAVX2(dst *float32, ldd int, src *float32, lds, rows, cols, zero int)
//
// copyRowsAVX512 in vectors of 8, cols >= 8: per row the whole vectors,
// then the row's last 8 values again (a store overlapping the one before:
// the same values), then, when zero is not 0 and another row follows,
// zeros from column cols to ldd in whole vectors, the last one spilling
// into the next row's first values, which its copy then overwrites.
TEXT ·copyRowsAVX2(SB), NOSPLIT, $0-56
	MOVQ   dst+0(FP), DI
	MOVQ   ldd+8(FP), R8
	MOVQ   src+16(FP), SI
	MOVQ   lds+24(FP), R9
	SHLQ   $2, R9
	MOVQ   rows+32(FP), R10
	MOVQ   cols+40(FP), R11
	MOVQ   zero+48(FP), R12
	LEAQ   -8(R11), R13 // the last 8 values' first column
	VXORPS Y1, Y1, Y1

crow:
	XORQ BX, BX
ccopy:
	LEAQ    8(BX), AX
	CMPQ    AX, R11
	JGT     ctail
	VMOVUPS (SI)(BX*4), Y0
	VMOVUPS Y0, (DI)(BX*4)
	MOVQ    AX, BX
	JMP     ccopy
ctail:
	CMPQ    BX, R11
	JGE     cgap
	VMOVUPS (SI)(R13*4), Y0
	VMOVUPS Y0, (DI)(R13*4)
cgap:
	DECQ  R10
	JZ    cdone
	TESTQ R12, R12
	JZ    cnext
	MOVQ  R11, BX
czero:
	CMPQ    BX, R8
	JGE     cnext
	VMOVUPS Y1, (DI)(BX*4)
	ADDQ    $8, BX
	JMP     czero
cnext:
	LEAQ (DI)(R8*4), DI
	ADDQ R9, SI
	JMP  crow
cdone:
	VZEROUPPER
	RET

// func copyRows4AVX2(dst *float32, ldd int, src *float32, lds, rows, cols, zero int)
//
// copyRowsAVX2 for rows of 4 to 7 values (a 7×7 plane's): per row the
// first 4 values and the last 4 (overlapping) in two 4-lane moves, then,
// with zero set and before the last row, zeros from cols to ldd in
// stores of 4 (the last may reach into the next row, which its copy then
// overwrites).
TEXT ·copyRows4AVX2(SB), NOSPLIT, $0-56
	MOVQ   dst+0(FP), DI
	MOVQ   ldd+8(FP), R8
	MOVQ   src+16(FP), SI
	MOVQ   lds+24(FP), R9
	SHLQ   $2, R9
	MOVQ   rows+32(FP), R10
	MOVQ   cols+40(FP), R11
	MOVQ   zero+48(FP), R12
	LEAQ   -4(R11), R13 // the last 4 values' first column
	VXORPS X1, X1, X1

c4row:
	VMOVUPS (SI), X0
	VMOVUPS (SI)(R13*4), X2
	VMOVUPS X0, (DI)
	VMOVUPS X2, (DI)(R13*4)
	DECQ    R10
	JZ      c4done
	TESTQ   R12, R12
	JZ      c4next
	MOVQ    R11, BX

c4zero:
	CMPQ    BX, R8
	JGE     c4next
	VMOVUPS X1, (DI)(BX*4)
	ADDQ    $4, BX
	JMP     c4zero

c4next:
	LEAQ (DI)(R8*4), DI
	ADDQ R9, SI
	JMP  c4row

c4done:
	RET

// func copyRowsBiasClampAVX2(dst *float32, ldd int, src *float32, lds, rows, cols int, bias, lo, hi float32)
//
// Per row, cols >= 8: dst = min(max(src + bias, lo), hi) in whole vectors
// of 8, then the row's last 8 values again (an overlapping store of the
// same values); the clamp's operand order keeps NaN and -0.
TEXT ·copyRowsBiasClampAVX2(SB), NOSPLIT, $0-60
	MOVQ         dst+0(FP), DI
	MOVQ         ldd+8(FP), R8
	SHLQ         $2, R8
	MOVQ         src+16(FP), SI
	MOVQ         lds+24(FP), R9
	SHLQ         $2, R9
	MOVQ         rows+32(FP), R10
	MOVQ         cols+40(FP), R11
	VBROADCASTSS bias+48(FP), Y2
	VBROADCASTSS lo+52(FP), Y3
	VBROADCASTSS hi+56(FP), Y4
	LEAQ         -8(R11), R13 // the last 8 values' first column

brow:
	XORQ BX, BX
bcopy:
	LEAQ    8(BX), AX
	CMPQ    AX, R11
	JGT     btail
	VMOVUPS (SI)(BX*4), Y0
	VADDPS  Y2, Y0, Y0
	VMAXPS  Y0, Y3, Y0
	VMINPS  Y0, Y4, Y0
	VMOVUPS Y0, (DI)(BX*4)
	MOVQ    AX, BX
	JMP     bcopy
btail:
	CMPQ    BX, R11
	JGE     bnext
	VMOVUPS (SI)(R13*4), Y0
	VADDPS  Y2, Y0, Y0
	VMAXPS  Y0, Y3, Y0
	VMINPS  Y0, Y4, Y0
	VMOVUPS Y0, (DI)(R13*4)
bnext:
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ R10
	JNZ  brow
	VZEROUPPER
	RET

// The bit of each lane of a group of 8 positions in its byte of a
// SamePlan mask, one per 32-bit lane.
DATA laneBits<>+0(SB)/4, $1
DATA laneBits<>+4(SB)/4, $2
DATA laneBits<>+8(SB)/4, $4
DATA laneBits<>+12(SB)/4, $8
DATA laneBits<>+16(SB)/4, $16
DATA laneBits<>+20(SB)/4, $32
DATA laneBits<>+24(SB)/4, $64
DATA laneBits<>+28(SB)/4, $128
GLOBL laneBits<>(SB), RODATA|NOPTR, $32

// func im2colSameAVX2(col *float32, ld int, in *float32, cstride, channels int, taps *int, ntaps int, masks *uint16, nv4, groups int)
//
// im2colSameAVX512 in groups of 8 positions (AX: the group's byte offset,
// groups·32 in R14), the last n mod 8 left to the caller: for each channel
// (SI) and tap (R11 walks the offsets, R13 the tap's row of masks), one
// row of col (DI). A group whose byte of the mask (byte g of the row: the
// low byte of vector g/2's 16 bits for even g) has every lane is a plain
// load; the others a VMASKMOVPS load (zeros, and no fault, outside the
// image) under the byte spread to the lanes (Y15: each lane's bit).
TEXT ·im2colSameAVX2(SB), NOSPLIT, $0-80
	MOVQ    col+0(FP), DI
	MOVQ    ld+8(FP), R8
	SHLQ    $2, R8
	MOVQ    in+16(FP), SI
	MOVQ    cstride+24(FP), R9
	SHLQ    $2, R9
	MOVQ    channels+32(FP), CX
	MOVQ    taps+40(FP), R10
	MOVQ    ntaps+48(FP), BX
	LEAQ    (R10)(BX*8), BX // the taps' end
	MOVQ    masks+56(FP), R12
	MOVQ    groups+72(FP), R14
	SHLQ    $5, R14
	VMOVDQU laneBits<>(SB), Y15

achan:
	MOVQ R10, R11
	MOVQ R12, R13

atap:
	MOVQ (R11), DX
	LEAQ (SI)(DX*4), DX
	XORQ AX, AX

agroup:
	CMPQ AX, R14
	JGE  atapdone
	MOVQ AX, R15
	SHRQ $5, R15 // the group
	CMPB (R13)(R15*1), $0xff
	JNE  amasked
	VMOVUPS (DX)(AX*1), Y0
	JMP  astore

amasked:
	VPBROADCASTB (R13)(R15*1), Y1
	VPAND        Y15, Y1, Y1
	VPCMPEQD     Y15, Y1, Y1
	VMASKMOVPS   (DX)(AX*1), Y1, Y0

astore:
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ    $32, AX
	JMP     agroup

atapdone:
	ADDQ R8, DI
	ADDQ $8, R11
	MOVQ nv4+64(FP), R15
	LEAQ (R13)(R15*2), R13
	CMPQ R11, BX
	JLT  atap
	ADDQ R9, SI
	DECQ CX
	JNZ  achan
	VZEROUPPER
	RET

// func col2imSameAVX2(dx *float32, cstride int, col *float32, ld, channels int, taps *int, ntaps int, masks *uint16, nv4, groups int)
//
// The adjoint of im2colSameAVX2 in groups of 8 input positions p (AX: the
// group's byte offset, groups·32 in R14), the last n mod 8 left to the
// caller: for each channel (dx at DI, its rows of col at SI), Y0 holds
// dx's group and, for each tap in order (R11 walks the offsets, DX the
// rows of col), adds col's row at p - offset: the output whose tap reads
// p. That output exists and its tap falls inside the image exactly where
// the mirrored tap of p does (a same-size plan's offsets are symmetric),
// so the mask is the mirrored tap's (R13 walks the rows of masks from the
// last). A group without lanes adds nothing; one with some adds under the
// mask (VBLENDVPS keeps the other lanes as they were, -0 included).
TEXT ·col2imSameAVX2(SB), NOSPLIT, $0-80
	MOVQ    dx+0(FP), DI
	MOVQ    cstride+8(FP), R9
	SHLQ    $2, R9
	MOVQ    col+16(FP), SI
	MOVQ    ld+24(FP), R8
	SHLQ    $2, R8
	MOVQ    channels+32(FP), CX
	MOVQ    taps+40(FP), R10
	MOVQ    ntaps+48(FP), BX
	LEAQ    (R10)(BX*8), BX // the taps' end
	MOVQ    ntaps+48(FP), R12
	DECQ    R12
	IMULQ   nv4+64(FP), R12
	SHLQ    $1, R12
	ADDQ    masks+56(FP), R12 // the last tap's row of masks
	MOVQ    groups+72(FP), R14
	SHLQ    $5, R14
	VMOVDQU laneBits<>(SB), Y15

cchan:
	XORQ AX, AX

cgroup:
	CMPQ    AX, R14
	JGE     cchandone
	VMOVUPS (DI)(AX*1), Y0
	MOVQ    R10, R11
	MOVQ    SI, DX
	MOVQ    R12, R13

ctap:
	MOVQ    AX, R15
	SHRQ    $5, R15 // the group
	MOVBQZX (R13)(R15*1), R15
	TESTQ   R15, R15
	JZ      cnext
	CMPQ    R15, $0xff
	JNE     cmasked
	MOVQ    (R11), R15
	SHLQ    $2, R15
	NEGQ    R15
	ADDQ    DX, R15
	VADDPS  (R15)(AX*1), Y0, Y0
	JMP     cnext

cmasked:
	MOVQ         AX, R15
	SHRQ         $5, R15
	VPBROADCASTB (R13)(R15*1), Y1
	VPAND        Y15, Y1, Y1
	VPCMPEQD     Y15, Y1, Y1
	MOVQ         (R11), R15
	SHLQ         $2, R15
	NEGQ         R15
	ADDQ         DX, R15
	VMASKMOVPS   (R15)(AX*1), Y1, Y2
	VADDPS       Y2, Y0, Y3
	VBLENDVPS    Y1, Y3, Y0, Y0

cnext:
	ADDQ $8, R11
	ADDQ R8, DX
	MOVQ nv4+64(FP), R15
	SHLQ $1, R15
	SUBQ R15, R13
	CMPQ R11, BX
	JLT  ctap
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ    $32, AX
	JMP     cgroup

cchandone:
	ADDQ  R9, DI
	MOVQ  ntaps+48(FP), R15
	IMULQ R8, R15
	ADDQ  R15, SI
	DECQ  CX
	JNZ   cchan
	VZEROUPPER
	RET

// func addRowsAVX2(dst *float32, ldd int, src *float32, lds, rows, cols int)
//
// AddRows: per row, steps of 8 values (Y0), then one of 4 (X0), then
// single values.
TEXT ·addRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $2, R9
	MOVQ rows+32(FP), R10
	MOVQ cols+40(FP), R11
	SHLQ $2, R11 // bytes per row
	TESTQ R10, R10
	JZ    ardone

arrow:
	XORQ AX, AX

ar8:
	MOVQ    R11, DX
	SUBQ    AX, DX
	CMPQ    DX, $32
	JLT     ar4
	VMOVUPS (DI)(AX*1), Y0
	VADDPS  (SI)(AX*1), Y0, Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ    $32, AX
	JMP     ar8

ar4:
	CMPQ    DX, $16
	JLT     ar1
	VMOVUPS (DI)(AX*1), X0
	VADDPS  (SI)(AX*1), X0, X0
	VMOVUPS X0, (DI)(AX*1)
	ADDQ    $16, AX

ar1:
	CMPQ  AX, R11
	JGE   arnext
	VMOVSS (DI)(AX*1), X0
	VADDSS (SI)(AX*1), X0, X0
	VMOVSS X0, (DI)(AX*1)
	ADDQ   $4, AX
	JMP    ar1

arnext:
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ R10
	JNZ  arrow

ardone:
	VZEROUPPER
	RET

// func mergeColumnsAddAVX2(dst *float32, ldd int, even *float32, lde int, odd *float32, ldo, rows, pairs int)
//
// MergeColumnsAdd for the first 2·pairs values of each row (the caller
// adds the rest): steps of 8 pairs (even Y0, odd Y1: VUNPCKLPS and
// VUNPCKHPS interleave each 128-bit half, VPERM2F128 puts the halves in
// order) added to 16 values of dst, then one of 4 pairs (8 values).
TEXT ·mergeColumnsAddAVX2(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ even+16(FP), SI
	MOVQ lde+24(FP), R9
	SHLQ $2, R9
	MOVQ odd+32(FP), DX
	MOVQ ldo+40(FP), R10
	SHLQ $2, R10
	MOVQ rows+48(FP), R11
	MOVQ pairs+56(FP), R12
	SHLQ $2, R12 // bytes of even (and odd) values per row
	TESTQ R11, R11
	JZ    mcdone

mcrow:
	XORQ AX, AX // byte offset in even and odd; twice that in dst

mc8:
	MOVQ       R12, CX
	SUBQ       AX, CX
	CMPQ       CX, $32
	JLT        mc4
	VMOVUPS    (SI)(AX*1), Y0
	VMOVUPS    (DX)(AX*1), Y1
	VUNPCKLPS  Y1, Y0, Y2
	VUNPCKHPS  Y1, Y0, Y3
	VPERM2F128 $0x20, Y3, Y2, Y4
	VPERM2F128 $0x31, Y3, Y2, Y5
	LEAQ       (DI)(AX*2), BX
	VADDPS     (BX), Y4, Y4
	VADDPS     32(BX), Y5, Y5
	VMOVUPS    Y4, (BX)
	VMOVUPS    Y5, 32(BX)
	ADDQ       $32, AX
	JMP        mc8

mc4:
	CMPQ      CX, $16
	JLT       mcnext
	VMOVUPS   (SI)(AX*1), X0
	VMOVUPS   (DX)(AX*1), X1
	VUNPCKLPS X1, X0, X2
	VUNPCKHPS X1, X0, X3
	LEAQ      (DI)(AX*2), BX
	VADDPS    (BX), X2, X2
	VADDPS    16(BX), X3, X3
	VMOVUPS   X2, (BX)
	VMOVUPS   X3, 16(BX)

mcnext:
	ADDQ R8, DI
	ADDQ R9, SI
	ADDQ R10, DX
	DECQ R11
	JNZ  mcrow

mcdone:
	VZEROUPPER
	RET
