//go:build amd64 && !noasm

#include "textflag.h"

// Micro-kernels. Each computes C = alpha*(Ã·B̃) + beta*C on a tile of C from
// one packed micro-panel Ã of op(A) (kc steps of MR floats) and one packed
// micro-panel B̃ of op(B) (kc steps of NR floats). C has row stride ldc (in
// floats). With beta == 0 (or -0) C is only written, never read, so NaNs in
// it do not survive.
//
// Registers: SI = Ã, DI = B̃, DX = C, R8 = ldc in bytes, R9 = current C row,
// CX/BX = loop counters, AX = scratch.

// ---------------------------------------------------------------- AVX-512
//
// The AVX-512 kernels use Ã packed for 14 rows (56 bytes per k step) and B̃
// packed for 32 columns (128 bytes per k step, two zmm). kernelAVX512x14
// computes the full 14×32 tile; kernelAVX512x8, x4, x2 and x1 compute the
// first 8, 4, 2 or 1 rows of it (from the same Ã layout), for the last rows
// of a matrix whose height is not a multiple of 14. mask selects the columns
// written (bit j for column j): the last columns of a matrix whose width is
// not a multiple of 32 are not touched, and masked loads and stores do not
// fault on the masked-out lanes.
//
// Only the first rows rows are written (rows from 1 to the kernel's height).
// All five kernels compute each element with the same sequence of FMAs, so
// results do not depend on which of them handled a row.
//
// Register use, with h rows: row i is accumulated in Z(2i) (columns 0..15)
// and Z(2i+1) (columns 16..31); Z28, Z29 hold B̃'s 32 floats of the current
// k step, Z30, Z31 the broadcast elements of Ã (alternating, so that
// consecutive rows overlap). After the k loop Z30 = alpha, Z31 = beta,
// K1/K2 = mask of columns 0..15/16..31, BX = rows left to write.

// Prefetches the (up to three) cache lines of a 128-byte C row.
#define PREFETCH_ROW512 \
	PREFETCHT0 (R9); \
	PREFETCHT0 64(R9); \
	PREFETCHT0 127(R9); \
	ADDQ       R8, R9

// Write-back of one row, beta == 0: C = alpha*acc.
#define ROW512_B0(r0, r1) \
	VMULPS  Z30, r0, r0; \
	VMULPS  Z30, r1, r1; \
	VMOVUPS r0, K1, (R9); \
	VMOVUPS r1, K2, 64(R9); \
	ADDQ    R8, R9

// Write-back of one row: C = alpha*acc + beta*C.
#define ROW512(r0, r1) \
	VMOVUPS.Z   (R9), K1, Z28; \
	VMOVUPS.Z   64(R9), K2, Z29; \
	VMULPS      Z31, Z28, Z28; \
	VMULPS      Z31, Z29, Z29; \
	VFMADD231PS Z30, r0, Z28; \
	VFMADD231PS Z30, r1, Z29; \
	VMOVUPS     Z28, K1, (R9); \
	VMOVUPS     Z29, K2, 64(R9); \
	ADDQ        R8, R9

// One k step of the 14-row kernel: ao and bo are the byte offsets of the
// step in Ã and B̃.
#define STEP14(ao, bo) \
	VMOVUPS      bo(DI), Z28; \
	VMOVUPS      bo+64(DI), Z29; \
	VBROADCASTSS ao(SI), Z30; \
	VFMADD231PS  Z30, Z28, Z0; \
	VFMADD231PS  Z30, Z29, Z1; \
	VBROADCASTSS ao+4(SI), Z31; \
	VFMADD231PS  Z31, Z28, Z2; \
	VFMADD231PS  Z31, Z29, Z3; \
	VBROADCASTSS ao+8(SI), Z30; \
	VFMADD231PS  Z30, Z28, Z4; \
	VFMADD231PS  Z30, Z29, Z5; \
	VBROADCASTSS ao+12(SI), Z31; \
	VFMADD231PS  Z31, Z28, Z6; \
	VFMADD231PS  Z31, Z29, Z7; \
	VBROADCASTSS ao+16(SI), Z30; \
	VFMADD231PS  Z30, Z28, Z8; \
	VFMADD231PS  Z30, Z29, Z9; \
	VBROADCASTSS ao+20(SI), Z31; \
	VFMADD231PS  Z31, Z28, Z10; \
	VFMADD231PS  Z31, Z29, Z11; \
	VBROADCASTSS ao+24(SI), Z30; \
	VFMADD231PS  Z30, Z28, Z12; \
	VFMADD231PS  Z30, Z29, Z13; \
	VBROADCASTSS ao+28(SI), Z31; \
	VFMADD231PS  Z31, Z28, Z14; \
	VFMADD231PS  Z31, Z29, Z15; \
	VBROADCASTSS ao+32(SI), Z30; \
	VFMADD231PS  Z30, Z28, Z16; \
	VFMADD231PS  Z30, Z29, Z17; \
	VBROADCASTSS ao+36(SI), Z31; \
	VFMADD231PS  Z31, Z28, Z18; \
	VFMADD231PS  Z31, Z29, Z19; \
	VBROADCASTSS ao+40(SI), Z30; \
	VFMADD231PS  Z30, Z28, Z20; \
	VFMADD231PS  Z30, Z29, Z21; \
	VBROADCASTSS ao+44(SI), Z31; \
	VFMADD231PS  Z31, Z28, Z22; \
	VFMADD231PS  Z31, Z29, Z23; \
	VBROADCASTSS ao+48(SI), Z30; \
	VFMADD231PS  Z30, Z28, Z24; \
	VFMADD231PS  Z30, Z29, Z25; \
	VBROADCASTSS ao+52(SI), Z31; \
	VFMADD231PS  Z31, Z28, Z26; \
	VFMADD231PS  Z31, Z29, Z27

// One k step of the 8-row kernel.
#define STEP8(ao, bo) \
	VMOVUPS      bo(DI), Z28; \
	VMOVUPS      bo+64(DI), Z29; \
	VBROADCASTSS ao(SI), Z30; \
	VFMADD231PS  Z30, Z28, Z0; \
	VFMADD231PS  Z30, Z29, Z1; \
	VBROADCASTSS ao+4(SI), Z31; \
	VFMADD231PS  Z31, Z28, Z2; \
	VFMADD231PS  Z31, Z29, Z3; \
	VBROADCASTSS ao+8(SI), Z30; \
	VFMADD231PS  Z30, Z28, Z4; \
	VFMADD231PS  Z30, Z29, Z5; \
	VBROADCASTSS ao+12(SI), Z31; \
	VFMADD231PS  Z31, Z28, Z6; \
	VFMADD231PS  Z31, Z29, Z7; \
	VBROADCASTSS ao+16(SI), Z30; \
	VFMADD231PS  Z30, Z28, Z8; \
	VFMADD231PS  Z30, Z29, Z9; \
	VBROADCASTSS ao+20(SI), Z31; \
	VFMADD231PS  Z31, Z28, Z10; \
	VFMADD231PS  Z31, Z29, Z11; \
	VBROADCASTSS ao+24(SI), Z30; \
	VFMADD231PS  Z30, Z28, Z12; \
	VFMADD231PS  Z30, Z29, Z13; \
	VBROADCASTSS ao+28(SI), Z31; \
	VFMADD231PS  Z31, Z28, Z14; \
	VFMADD231PS  Z31, Z29, Z15

// One k step of the 4-row kernel.
#define STEP4(ao, bo) \
	VMOVUPS      bo(DI), Z28; \
	VMOVUPS      bo+64(DI), Z29; \
	VBROADCASTSS ao(SI), Z30; \
	VFMADD231PS  Z30, Z28, Z0; \
	VFMADD231PS  Z30, Z29, Z1; \
	VBROADCASTSS ao+4(SI), Z31; \
	VFMADD231PS  Z31, Z28, Z2; \
	VFMADD231PS  Z31, Z29, Z3; \
	VBROADCASTSS ao+8(SI), Z30; \
	VFMADD231PS  Z30, Z28, Z4; \
	VFMADD231PS  Z30, Z29, Z5; \
	VBROADCASTSS ao+12(SI), Z31; \
	VFMADD231PS  Z31, Z28, Z6; \
	VFMADD231PS  Z31, Z29, Z7

// One k step of the 2-row kernel.
#define STEP2(ao, bo) \
	VMOVUPS      bo(DI), Z28; \
	VMOVUPS      bo+64(DI), Z29; \
	VBROADCASTSS ao(SI), Z30; \
	VFMADD231PS  Z30, Z28, Z0; \
	VFMADD231PS  Z30, Z29, Z1; \
	VBROADCASTSS ao+4(SI), Z31; \
	VFMADD231PS  Z31, Z28, Z2; \
	VFMADD231PS  Z31, Z29, Z3

// One k step of the 1-row kernel.
#define STEP1(ao, bo) \
	VMOVUPS      bo(DI), Z28; \
	VMOVUPS      bo+64(DI), Z29; \
	VBROADCASTSS ao(SI), Z30; \
	VFMADD231PS  Z30, Z28, Z0; \
	VFMADD231PS  Z30, Z29, Z1

// func kernelAVX512x14(kc int, a, b, c *float32, ldc int, alpha, beta float32, mask uint32, rows int)
TEXT ·kernelAVX512x14(SB), NOSPLIT, $0-64
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8

	// Start fetching the C tile now; it is needed only after the k loop.
	MOVQ DX, R9
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27

	MOVQ CX, BX
	SHRQ $2, BX
	JZ   kernelAVX512x14tail

kernelAVX512x14loop:
	STEP14(0, 0)
	STEP14(56, 128)
	STEP14(112, 256)
	STEP14(168, 384)
	ADDQ $224, SI
	ADDQ $512, DI
	DECQ BX
	JNZ  kernelAVX512x14loop

kernelAVX512x14tail:
	ANDQ $3, CX
	JZ   kernelAVX512x14store

kernelAVX512x14loop1:
	STEP14(0, 0)
	ADDQ $56, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  kernelAVX512x14loop1

kernelAVX512x14store:
	MOVQ  rows+56(FP), BX
	MOVL  mask+48(FP), AX
	KMOVW AX, K1
	SHRL  $16, AX
	KMOVW AX, K2
	MOVQ         DX, R9
	VBROADCASTSS alpha+40(FP), Z30
	MOVL         beta+44(FP), AX
	ANDL         $0x7fffffff, AX
	JZ           kernelAVX512x14beta0

	VBROADCASTSS beta+44(FP), Z31
	ROW512(Z0, Z1)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512(Z2, Z3)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512(Z4, Z5)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512(Z6, Z7)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512(Z8, Z9)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512(Z10, Z11)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512(Z12, Z13)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512(Z14, Z15)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512(Z16, Z17)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512(Z18, Z19)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512(Z20, Z21)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512(Z22, Z23)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512(Z24, Z25)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512(Z26, Z27)
	VZEROUPPER
	RET

kernelAVX512x14beta0:
	ROW512_B0(Z0, Z1)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512_B0(Z2, Z3)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512_B0(Z4, Z5)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512_B0(Z6, Z7)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512_B0(Z8, Z9)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512_B0(Z10, Z11)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512_B0(Z12, Z13)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512_B0(Z14, Z15)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512_B0(Z16, Z17)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512_B0(Z18, Z19)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512_B0(Z20, Z21)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512_B0(Z22, Z23)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512_B0(Z24, Z25)
	DECQ BX
	JZ   kernelAVX512x14done
	ROW512_B0(Z26, Z27)

kernelAVX512x14done:
	VZEROUPPER
	RET

// func kernelAVX512x8(kc int, a, b, c *float32, ldc int, alpha, beta float32, mask uint32, rows int)
TEXT ·kernelAVX512x8(SB), NOSPLIT, $0-64
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8

	// Start fetching the C tile now; it is needed only after the k loop.
	MOVQ DX, R9
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

	MOVQ CX, BX
	SHRQ $2, BX
	JZ   kernelAVX512x8tail

kernelAVX512x8loop:
	STEP8(0, 0)
	STEP8(56, 128)
	STEP8(112, 256)
	STEP8(168, 384)
	ADDQ $224, SI
	ADDQ $512, DI
	DECQ BX
	JNZ  kernelAVX512x8loop

kernelAVX512x8tail:
	ANDQ $3, CX
	JZ   kernelAVX512x8store

kernelAVX512x8loop1:
	STEP8(0, 0)
	ADDQ $56, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  kernelAVX512x8loop1

kernelAVX512x8store:
	MOVQ  rows+56(FP), BX
	MOVL  mask+48(FP), AX
	KMOVW AX, K1
	SHRL  $16, AX
	KMOVW AX, K2
	MOVQ         DX, R9
	VBROADCASTSS alpha+40(FP), Z30
	MOVL         beta+44(FP), AX
	ANDL         $0x7fffffff, AX
	JZ           kernelAVX512x8beta0

	VBROADCASTSS beta+44(FP), Z31
	ROW512(Z0, Z1)
	DECQ BX
	JZ   kernelAVX512x8done
	ROW512(Z2, Z3)
	DECQ BX
	JZ   kernelAVX512x8done
	ROW512(Z4, Z5)
	DECQ BX
	JZ   kernelAVX512x8done
	ROW512(Z6, Z7)
	DECQ BX
	JZ   kernelAVX512x8done
	ROW512(Z8, Z9)
	DECQ BX
	JZ   kernelAVX512x8done
	ROW512(Z10, Z11)
	DECQ BX
	JZ   kernelAVX512x8done
	ROW512(Z12, Z13)
	DECQ BX
	JZ   kernelAVX512x8done
	ROW512(Z14, Z15)
	VZEROUPPER
	RET

kernelAVX512x8beta0:
	ROW512_B0(Z0, Z1)
	DECQ BX
	JZ   kernelAVX512x8done
	ROW512_B0(Z2, Z3)
	DECQ BX
	JZ   kernelAVX512x8done
	ROW512_B0(Z4, Z5)
	DECQ BX
	JZ   kernelAVX512x8done
	ROW512_B0(Z6, Z7)
	DECQ BX
	JZ   kernelAVX512x8done
	ROW512_B0(Z8, Z9)
	DECQ BX
	JZ   kernelAVX512x8done
	ROW512_B0(Z10, Z11)
	DECQ BX
	JZ   kernelAVX512x8done
	ROW512_B0(Z12, Z13)
	DECQ BX
	JZ   kernelAVX512x8done
	ROW512_B0(Z14, Z15)

kernelAVX512x8done:
	VZEROUPPER
	RET

// func kernelAVX512x4(kc int, a, b, c *float32, ldc int, alpha, beta float32, mask uint32, rows int)
TEXT ·kernelAVX512x4(SB), NOSPLIT, $0-64
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8

	// Start fetching the C tile now; it is needed only after the k loop.
	MOVQ DX, R9
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512
	PREFETCH_ROW512

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

	MOVQ CX, BX
	SHRQ $2, BX
	JZ   kernelAVX512x4tail

kernelAVX512x4loop:
	STEP4(0, 0)
	STEP4(56, 128)
	STEP4(112, 256)
	STEP4(168, 384)
	ADDQ $224, SI
	ADDQ $512, DI
	DECQ BX
	JNZ  kernelAVX512x4loop

kernelAVX512x4tail:
	ANDQ $3, CX
	JZ   kernelAVX512x4store

kernelAVX512x4loop1:
	STEP4(0, 0)
	ADDQ $56, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  kernelAVX512x4loop1

kernelAVX512x4store:
	MOVQ  rows+56(FP), BX
	MOVL  mask+48(FP), AX
	KMOVW AX, K1
	SHRL  $16, AX
	KMOVW AX, K2
	MOVQ         DX, R9
	VBROADCASTSS alpha+40(FP), Z30
	MOVL         beta+44(FP), AX
	ANDL         $0x7fffffff, AX
	JZ           kernelAVX512x4beta0

	VBROADCASTSS beta+44(FP), Z31
	ROW512(Z0, Z1)
	DECQ BX
	JZ   kernelAVX512x4done
	ROW512(Z2, Z3)
	DECQ BX
	JZ   kernelAVX512x4done
	ROW512(Z4, Z5)
	DECQ BX
	JZ   kernelAVX512x4done
	ROW512(Z6, Z7)
	VZEROUPPER
	RET

kernelAVX512x4beta0:
	ROW512_B0(Z0, Z1)
	DECQ BX
	JZ   kernelAVX512x4done
	ROW512_B0(Z2, Z3)
	DECQ BX
	JZ   kernelAVX512x4done
	ROW512_B0(Z4, Z5)
	DECQ BX
	JZ   kernelAVX512x4done
	ROW512_B0(Z6, Z7)

kernelAVX512x4done:
	VZEROUPPER
	RET

// func kernelAVX512x2(kc int, a, b, c *float32, ldc int, alpha, beta float32, mask uint32, rows int)
TEXT ·kernelAVX512x2(SB), NOSPLIT, $0-64
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8

	// Start fetching the C tile now; it is needed only after the k loop.
	MOVQ DX, R9
	PREFETCH_ROW512
	PREFETCH_ROW512

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

	MOVQ CX, BX
	SHRQ $2, BX
	JZ   kernelAVX512x2tail

kernelAVX512x2loop:
	STEP2(0, 0)
	STEP2(56, 128)
	STEP2(112, 256)
	STEP2(168, 384)
	ADDQ $224, SI
	ADDQ $512, DI
	DECQ BX
	JNZ  kernelAVX512x2loop

kernelAVX512x2tail:
	ANDQ $3, CX
	JZ   kernelAVX512x2store

kernelAVX512x2loop1:
	STEP2(0, 0)
	ADDQ $56, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  kernelAVX512x2loop1

kernelAVX512x2store:
	MOVQ  rows+56(FP), BX
	MOVL  mask+48(FP), AX
	KMOVW AX, K1
	SHRL  $16, AX
	KMOVW AX, K2
	MOVQ         DX, R9
	VBROADCASTSS alpha+40(FP), Z30
	MOVL         beta+44(FP), AX
	ANDL         $0x7fffffff, AX
	JZ           kernelAVX512x2beta0

	VBROADCASTSS beta+44(FP), Z31
	ROW512(Z0, Z1)
	DECQ BX
	JZ   kernelAVX512x2done
	ROW512(Z2, Z3)
	VZEROUPPER
	RET

kernelAVX512x2beta0:
	ROW512_B0(Z0, Z1)
	DECQ BX
	JZ   kernelAVX512x2done
	ROW512_B0(Z2, Z3)

kernelAVX512x2done:
	VZEROUPPER
	RET

// func kernelAVX512x1(kc int, a, b, c *float32, ldc int, alpha, beta float32, mask uint32, rows int)
TEXT ·kernelAVX512x1(SB), NOSPLIT, $0-64
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8

	// Start fetching the C tile now; it is needed only after the k loop.
	MOVQ DX, R9
	PREFETCH_ROW512

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1

	MOVQ CX, BX
	SHRQ $2, BX
	JZ   kernelAVX512x1tail

kernelAVX512x1loop:
	STEP1(0, 0)
	STEP1(56, 128)
	STEP1(112, 256)
	STEP1(168, 384)
	ADDQ $224, SI
	ADDQ $512, DI
	DECQ BX
	JNZ  kernelAVX512x1loop

kernelAVX512x1tail:
	ANDQ $3, CX
	JZ   kernelAVX512x1store

kernelAVX512x1loop1:
	STEP1(0, 0)
	ADDQ $56, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  kernelAVX512x1loop1

kernelAVX512x1store:
	MOVQ  rows+56(FP), BX
	MOVL  mask+48(FP), AX
	KMOVW AX, K1
	SHRL  $16, AX
	KMOVW AX, K2
	MOVQ         DX, R9
	VBROADCASTSS alpha+40(FP), Z30
	MOVL         beta+44(FP), AX
	ANDL         $0x7fffffff, AX
	JZ           kernelAVX512x1beta0

	VBROADCASTSS beta+44(FP), Z31
	ROW512(Z0, Z1)
	VZEROUPPER
	RET

kernelAVX512x1beta0:
	ROW512_B0(Z0, Z1)

kernelAVX512x1done:
	VZEROUPPER
	RET

// ---------------------------------------------------------------- AVX2
//
// kernelAVX2 computes a full 6×16 tile (Ã: 24 bytes, B̃: 64 bytes per k
// step) with 12 accumulators: row i in Y(2i) (columns 0..7) and Y(2i+1)
// (8..15); Y12, Y13 hold B̃, Y14, Y15 the broadcasts, then alpha and beta.
// The write-back rounds alpha*acc and beta*C before adding them (no FMA), as
// writeTile does for the edge tiles, so that every element of C gets the
// same operations.

#define STEP6(ao, bo) \
	VMOVUPS      bo(DI), Y12; \
	VMOVUPS      bo+32(DI), Y13; \
	VBROADCASTSS ao(SI), Y14; \
	VFMADD231PS  Y14, Y12, Y0; \
	VFMADD231PS  Y14, Y13, Y1; \
	VBROADCASTSS ao+4(SI), Y15; \
	VFMADD231PS  Y15, Y12, Y2; \
	VFMADD231PS  Y15, Y13, Y3; \
	VBROADCASTSS ao+8(SI), Y14; \
	VFMADD231PS  Y14, Y12, Y4; \
	VFMADD231PS  Y14, Y13, Y5; \
	VBROADCASTSS ao+12(SI), Y15; \
	VFMADD231PS  Y15, Y12, Y6; \
	VFMADD231PS  Y15, Y13, Y7; \
	VBROADCASTSS ao+16(SI), Y14; \
	VFMADD231PS  Y14, Y12, Y8; \
	VFMADD231PS  Y14, Y13, Y9; \
	VBROADCASTSS ao+20(SI), Y15; \
	VFMADD231PS  Y15, Y12, Y10; \
	VFMADD231PS  Y15, Y13, Y11

// Prefetches the (up to two) cache lines of a 64-byte C row.
#define PREFETCH_ROW256 \
	PREFETCHT0 (R9); \
	PREFETCHT0 63(R9); \
	ADDQ       R8, R9

#define ROW256_B0(r0, r1) \
	VMULPS  Y14, r0, r0; \
	VMULPS  Y14, r1, r1; \
	VMOVUPS r0, (R9); \
	VMOVUPS r1, 32(R9); \
	ADDQ    R8, R9

#define ROW256(r0, r1) \
	VMULPS  (R9), Y15, Y12; \
	VMULPS  32(R9), Y15, Y13; \
	VMULPS  Y14, r0, r0; \
	VMULPS  Y14, r1, r1; \
	VADDPS  r0, Y12, Y12; \
	VADDPS  r1, Y13, Y13; \
	VMOVUPS Y12, (R9); \
	VMOVUPS Y13, 32(R9); \
	ADDQ    R8, R9

// func kernelAVX2(kc int, a, b, c *float32, ldc int, alpha, beta float32)
TEXT ·kernelAVX2(SB), NOSPLIT, $0-48
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8

	MOVQ DX, R9
	PREFETCH_ROW256
	PREFETCH_ROW256
	PREFETCH_ROW256
	PREFETCH_ROW256
	PREFETCH_ROW256
	PREFETCH_ROW256

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

	MOVQ CX, BX
	SHRQ $2, BX
	JZ   avx2tail

avx2loop4:
	STEP6(0, 0)
	STEP6(24, 64)
	STEP6(48, 128)
	STEP6(72, 192)
	ADDQ $96, SI
	ADDQ $256, DI
	DECQ BX
	JNZ  avx2loop4

avx2tail:
	ANDQ $3, CX
	JZ   avx2store

avx2loop1:
	STEP6(0, 0)
	ADDQ $24, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  avx2loop1

avx2store:
	MOVQ         DX, R9
	VBROADCASTSS alpha+40(FP), Y14
	MOVL         beta+44(FP), AX
	ANDL         $0x7fffffff, AX
	JZ           avx2beta0

	VBROADCASTSS beta+44(FP), Y15
	ROW256(Y0, Y1)
	ROW256(Y2, Y3)
	ROW256(Y4, Y5)
	ROW256(Y6, Y7)
	ROW256(Y8, Y9)
	ROW256(Y10, Y11)
	VZEROUPPER
	RET

avx2beta0:
	ROW256_B0(Y0, Y1)
	ROW256_B0(Y2, Y3)
	ROW256_B0(Y4, Y5)
	ROW256_B0(Y6, Y7)
	ROW256_B0(Y8, Y9)
	ROW256_B0(Y10, Y11)
	VZEROUPPER
	RET
