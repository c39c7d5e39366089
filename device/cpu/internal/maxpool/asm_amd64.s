//go:build amd64 && !noasm

#include "textflag.h"

// The even and the odd positions of 32 floats (two vectors); the even
// ones are also twice the lane numbers.
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

// func plane2x2AVX512(y []float32, arg []int64, x []float32, oh, ow, w, i, j int) (int, int)
//
// Row after row from window (i, j), per step of 16 windows (the last of a
// row may have fewer, with masked loads and stores): the window corners
// a, b (row 2i) and c, d (row 2i+1) are gathered from the two rows by
// VPERMI2PS. VMAXPS alone differs from Go's max on NaNs (steps holding one
// are left to Go: the function returns there) and on zeros of both signs:
// where the two operands are equal the result is their bitwise AND
// instead, which is +0 for a -0 and a +0 and the value itself otherwise.
// The position offset starts at w+1 and is replaced where c, b, a (in
// that order, so the first wins) equal the maximum.
//
// Registers: R10 the row i, BX the window j in it, R13 ow, R12 w; DI, SI,
// R8 and R9 the starts of row i of y and arg and of input rows 2i and
// 2i+1; DX the plane position of window j's first corner; R11 the windows
// of this step. K4 masks the step's windows (K7 its upper 8), K5 and K6
// the floats of each input row's two vectors.
TEXT ·plane2x2AVX512(SB), NOSPLIT, $0-128
	MOVQ ow+80(FP), R13
	MOVQ w+88(FP), R12
	MOVQ i+96(FP), R10
	MOVQ j+104(FP), BX

	VMOVDQU32 evenIdx<>(SB), Z20
	VMOVDQU32 oddIdx<>(SB), Z21
	VPBROADCASTD R12, Z23       // w
	LEAQ 1(R12), AX
	VPBROADCASTD AX, Z22        // w+1
	MOVL $1, AX
	VPBROADCASTD AX, Z24        // 1
	VPXORD Z25, Z25, Z25        // 0

row:
	CMPQ R10, oh+72(FP)
	JGE done
	MOVQ R10, AX
	IMULQ R13, AX               // i·ow
	MOVQ y_base+0(FP), DI
	LEAQ (DI)(AX*4), DI
	MOVQ arg_base+24(FP), SI
	LEAQ (SI)(AX*8), SI
	MOVQ R10, AX
	IMULQ R12, AX               // i·w
	MOVQ x_base+48(FP), R8
	LEAQ (R8)(AX*8), R8         // input row 2i
	LEAQ (R8)(R12*4), R9        // input row 2i+1
	LEAQ (AX)(AX*1), DX
	LEAQ (DX)(BX*2), DX         // 2i·w + 2j

step:
	MOVQ R13, R11
	SUBQ BX, R11
	JLE nextrow
	CMPQ R11, $16
	JLE masks
	MOVQ $16, R11

masks:
	MOVQ R11, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K4
	KSHIFTRW $8, K4, K7
	SHLQ $1, CX                 // 2·R11 ≤ 32 floats per input row
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K5                // in the first vector
	SHRQ $16, AX
	KMOVW AX, K6                // in the second

	VMOVUPS.Z (R8)(BX*8), K5, Z0
	VMOVUPS.Z 64(R8)(BX*8), K6, Z1
	VMOVUPS.Z (R9)(BX*8), K5, Z2
	VMOVUPS.Z 64(R9)(BX*8), K6, Z3
	VMOVDQA32 Z20, Z4
	VPERMI2PS Z1, Z0, Z4        // a
	VMOVDQA32 Z21, Z5
	VPERMI2PS Z1, Z0, Z5        // b
	VMOVDQA32 Z20, Z6
	VPERMI2PS Z3, Z2, Z6        // c
	VMOVDQA32 Z21, Z7
	VPERMI2PS Z3, Z2, Z7        // d

	VCMPPS $3, Z5, Z4, K1       // unordered: a or b is NaN
	VCMPPS $3, Z7, Z6, K2
	KORW K1, K2, K1
	KORTESTW K1, K1
	JNZ done

	VMAXPS Z5, Z4, Z8           // max(a, b)
	VCMPPS $0, Z5, Z4, K3
	VPANDD Z5, Z4, K3, Z8
	VMAXPS Z7, Z6, Z9           // max(c, d)
	VCMPPS $0, Z7, Z6, K3
	VPANDD Z7, Z6, K3, Z9
	VMAXPS Z9, Z8, Z10          // m
	VCMPPS $0, Z9, Z8, K3
	VPANDD Z9, Z8, K3, Z10
	VMOVUPS Z10, K4, (DI)(BX*4)

	VMOVDQA32 Z22, Z11          // offset w+1 (d)
	VCMPPS $0, Z10, Z6, K3
	VMOVDQA32 Z23, K3, Z11      // c: w
	VCMPPS $0, Z10, Z5, K3
	VMOVDQA32 Z24, K3, Z11      // b: 1
	VCMPPS $0, Z10, Z4, K3
	VMOVDQA32 Z25, K3, Z11      // a: 0
	VPADDD Z20, Z11, Z11        // + 2·lane
	VEXTRACTI64X4 $1, Z11, Y12
	VPMOVSXDQ Y11, Z13
	VPMOVSXDQ Y12, Z14
	VPBROADCASTQ DX, Z15        // 2i·w + 2j
	VPADDQ Z15, Z13, Z13
	VPADDQ Z15, Z14, Z14
	VMOVDQU64 Z13, K4, (SI)(BX*8)
	VMOVDQU64 Z14, K7, 64(SI)(BX*8)

	ADDQ R11, BX
	LEAQ (DX)(R11*2), DX
	JMP step

nextrow:
	INCQ R10
	XORQ BX, BX
	JMP row

done:
	MOVQ R10, ret+112(FP)
	MOVQ BX, ret1+120(FP)
	VZEROUPPER
	RET

// GOMAX sets acc = max(acc, v) as Go's max does: VMAXPS returns v where
// either is NaN, so where acc is NaN acc is kept; where the two are equal
// (a -0 and a +0 among them) the result is their bitwise AND (+0 for the
// pair, the value itself otherwise). t is scratch.
#define GOMAX(acc, v, t) \
	VMAXPS  v, acc, t          \
	VCMPPS  $3, acc, acc, K6   \
	VMOVAPS acc, K6, t         \
	VCMPPS  $0, v, acc, K7     \
	VPANDD  v, acc, K7, t      \
	VMOVAPS t, acc

// func values3s2AVX512(y *float32, n int, x *float32, ld, rows int)
//
// Steps of 16 windows: per input row, the 33 columns from 2j0 in Z1, Z2
// (two vectors) and Z3 (its first lane), pooled over the rows into Z10,
// Z11, Z12; then VPERMI2PS splits Z10:Z11 into the even columns (each
// window's first, Z13) and the odd ones (its second, Z14), VALIGND shifts
// the even ones by one (its third, Z15), and their maximum is stored. The
// last step, of k < 16 windows, loads its 2k+1 columns and stores its k
// windows under masks (K1, K2: the columns of the two vectors; K3: the
// windows).
TEXT ·values3s2AVX512(SB), NOSPLIT, $0-40
	MOVQ    y+0(FP), DI
	MOVQ    n+8(FP), DX
	MOVQ    x+16(FP), SI
	MOVQ    ld+24(FP), R8
	SHLQ    $2, R8              // bytes
	MOVQ    rows+32(FP), R9
	VMOVUPS evenIdx<>(SB), Z20
	VMOVUPS oddIdx<>(SB), Z21
	MOVW    $0xffff, AX
	KMOVW   AX, K1
	KMOVW   AX, K2
	KMOVW   AX, K3

vstep:
	CMPQ DX, $16
	JGE  vload
	TESTQ DX, DX
	JZ   vdone
	// The last k = DX windows: 2k+1 columns, min(16, 2k+1) in the
	// first vector, the rest in the second.
	LEAQ  1(DX)(DX*1), BX
	MOVQ  BX, CX
	CMPQ  CX, $16
	JLE   vfirst
	MOVQ  $16, CX
vfirst:
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K1
	MOVQ  BX, CX
	SUBQ  $16, CX
	JGE   vsecond
	XORQ  CX, CX
vsecond:
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K2
	MOVQ  DX, CX
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K3

vload:
	// Prefetch this step's columns of the rows 6 and 7 below the
	// first (those the output row three rows down reads first): the
	// planes of a batch stream from memory, and rows of a few hundred
	// bytes are too short for the hardware prefetcher to follow
	// (resnet18's stem pooling at batch 32, BenchmarkMaxPool3x3:
	// 6.4 → 3.7 ms).
	LEAQ         (R8)(R8*2), R10
	LEAQ         (SI)(R10*2), R10
	PREFETCHT0   (R10)
	PREFETCHT0   64(R10)
	PREFETCHT0   (R10)(R8*1)
	PREFETCHT0   64(R10)(R8*1)
	MOVQ         SI, R11
	VMOVUPS.Z    (R11), K1, Z10
	VMOVUPS.Z    64(R11), K2, Z11
	VBROADCASTSS (R11), Z12     // lane 0 is read only in full steps
	CMPQ         DX, $16
	JLT          vrows
	VBROADCASTSS 128(R11), Z12

vrows:
	MOVQ R9, BX
	DECQ BX
	JZ   vcols

vrow:
	ADDQ         R8, R11
	VMOVUPS.Z    (R11), K1, Z1
	VMOVUPS.Z    64(R11), K2, Z2
	GOMAX(Z10, Z1, Z4)
	GOMAX(Z11, Z2, Z4)
	CMPQ         DX, $16
	JLT          vnext
	VBROADCASTSS 128(R11), Z3
	GOMAX(Z12, Z3, Z4)

vnext:
	DECQ BX
	JNZ  vrow

vcols:
	VMOVAPS   Z20, Z13
	VPERMI2PS Z11, Z10, Z13    // columns 2j
	VMOVAPS   Z21, Z14
	VPERMI2PS Z11, Z10, Z14    // 2j+1
	VALIGND   $1, Z13, Z12, Z15 // 2j+2
	GOMAX(Z13, Z14, Z4)
	GOMAX(Z13, Z15, Z4)
	VMOVUPS   Z13, K3, (DI)
	CMPQ      DX, $16
	JLT       vdone
	ADDQ      $64, DI
	ADDQ      $128, SI
	SUBQ      $16, DX
	JMP       vstep

vdone:
	VZEROUPPER
	RET
