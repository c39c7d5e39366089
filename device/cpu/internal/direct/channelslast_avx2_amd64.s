//go:build amd64 && !noasm

#include "textflag.h"

// func rowChannelsLastAVX2(out, in, w, bias *float32, inOff, wOff *int, ntaps, n, inStep, ldo, channels int, lo, hi float32)
//
// RowChannelsLast in AVX2 for CPUs without AVX-512, over the channels'
// whole vectors of 8 (the caller computes the rest): the positions four,
// then one at a time, and for each group the channels 16 (single
// positions: 32) at a time while that many are left, then 8, each
// position's taps summed in one register in tap order from zero, then the
// bias and the clamp, as the AVX-512 kernel does (the same bits).
//
// Registers: R8 w, R10 inOff, R11 wOff, R13 input bytes per position, SI
// three of those, R14 output bytes per position, AX positions left, BX the
// group's first output, CX its first input (before the taps' offsets), DX
// the chunk's first channel, R15 the tap; Y8–Y11 the tap's weights, Y12–Y13
// (single positions: Y4–Y7) the bias, Y14 and Y15 the clamp.
TEXT ·rowChannelsLastAVX2(SB), NOSPLIT, $0-96
	MOVQ         w+16(FP), R8
	MOVQ         inOff+32(FP), R10
	MOVQ         wOff+40(FP), R11
	MOVQ         inStep+64(FP), R13
	SHLQ         $2, R13
	LEAQ         (R13)(R13*2), SI
	MOVQ         ldo+72(FP), R14
	SHLQ         $2, R14
	VBROADCASTSS lo+88(FP), Y14
	VBROADCASTSS hi+92(FP), Y15
	MOVQ         out+0(FP), BX
	MOVQ         in+8(FP), CX
	MOVQ         n+56(FP), AX
four:
	CMPQ AX, $4
	JLT  one
	XORQ DX, DX
fourWide:
	MOVQ channels+80(FP), R9
	SUBQ DX, R9
	CMPQ R9, $16
	JLT  fourWideDone
	MOVQ bias+24(FP), R9
	VMOVUPS 0(R9)(DX*4), Y12
	VMOVUPS 32(R9)(DX*4), Y13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ R15, R15
fourWideTap:
	MOVQ (R11)(R15*8), R9
	ADDQ DX, R9
	LEAQ (R8)(R9*4), R9
	VMOVUPS 0(R9), Y8
	VMOVUPS 32(R9), Y9
	MOVQ (R10)(R15*8), R12
	ADDQ DX, R12
	LEAQ (CX)(R12*4), R12
	VFMADD231PS 0(R12), Y8, Y0
	VFMADD231PS 32(R12), Y9, Y1
	VFMADD231PS 0(R12)(R13*1), Y8, Y2
	VFMADD231PS 32(R12)(R13*1), Y9, Y3
	VFMADD231PS 0(R12)(R13*2), Y8, Y4
	VFMADD231PS 32(R12)(R13*2), Y9, Y5
	VFMADD231PS 0(R12)(SI*1), Y8, Y6
	VFMADD231PS 32(R12)(SI*1), Y9, Y7
	INCQ R15
	CMPQ R15, ntaps+48(FP)
	JLT  fourWideTap
	VADDPS Y12, Y0, Y0
	VMAXPS Y0, Y14, Y0
	VMINPS Y0, Y15, Y0
	VADDPS Y13, Y1, Y1
	VMAXPS Y1, Y14, Y1
	VMINPS Y1, Y15, Y1
	VADDPS Y12, Y2, Y2
	VMAXPS Y2, Y14, Y2
	VMINPS Y2, Y15, Y2
	VADDPS Y13, Y3, Y3
	VMAXPS Y3, Y14, Y3
	VMINPS Y3, Y15, Y3
	VADDPS Y12, Y4, Y4
	VMAXPS Y4, Y14, Y4
	VMINPS Y4, Y15, Y4
	VADDPS Y13, Y5, Y5
	VMAXPS Y5, Y14, Y5
	VMINPS Y5, Y15, Y5
	VADDPS Y12, Y6, Y6
	VMAXPS Y6, Y14, Y6
	VMINPS Y6, Y15, Y6
	VADDPS Y13, Y7, Y7
	VMAXPS Y7, Y14, Y7
	VMINPS Y7, Y15, Y7
	LEAQ (BX)(DX*4), DI
	LEAQ (R14)(R14*2), R9
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 0(DI)(R14*1)
	VMOVUPS Y3, 32(DI)(R14*1)
	VMOVUPS Y4, 0(DI)(R14*2)
	VMOVUPS Y5, 32(DI)(R14*2)
	VMOVUPS Y6, 0(DI)(R9*1)
	VMOVUPS Y7, 32(DI)(R9*1)
	ADDQ $16, DX
	JMP  fourWide
fourWideDone:
fourHalf:
	MOVQ channels+80(FP), R9
	SUBQ DX, R9
	CMPQ R9, $8
	JLT  fourHalfDone
	MOVQ bias+24(FP), R9
	VMOVUPS 0(R9)(DX*4), Y12
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ R15, R15
fourHalfTap:
	MOVQ (R11)(R15*8), R9
	ADDQ DX, R9
	LEAQ (R8)(R9*4), R9
	VMOVUPS 0(R9), Y8
	MOVQ (R10)(R15*8), R12
	ADDQ DX, R12
	LEAQ (CX)(R12*4), R12
	VFMADD231PS 0(R12), Y8, Y0
	VFMADD231PS 0(R12)(R13*1), Y8, Y1
	VFMADD231PS 0(R12)(R13*2), Y8, Y2
	VFMADD231PS 0(R12)(SI*1), Y8, Y3
	INCQ R15
	CMPQ R15, ntaps+48(FP)
	JLT  fourHalfTap
	VADDPS Y12, Y0, Y0
	VMAXPS Y0, Y14, Y0
	VMINPS Y0, Y15, Y0
	VADDPS Y12, Y1, Y1
	VMAXPS Y1, Y14, Y1
	VMINPS Y1, Y15, Y1
	VADDPS Y12, Y2, Y2
	VMAXPS Y2, Y14, Y2
	VMINPS Y2, Y15, Y2
	VADDPS Y12, Y3, Y3
	VMAXPS Y3, Y14, Y3
	VMINPS Y3, Y15, Y3
	LEAQ (BX)(DX*4), DI
	LEAQ (R14)(R14*2), R9
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 0(DI)(R14*1)
	VMOVUPS Y2, 0(DI)(R14*2)
	VMOVUPS Y3, 0(DI)(R9*1)
	ADDQ $8, DX
	JMP  fourHalf
fourHalfDone:
	LEAQ (BX)(R14*4), BX
	LEAQ (CX)(R13*4), CX
	SUBQ $4, AX
	JMP  four
one:
	CMPQ AX, $1
	JLT  done
	XORQ DX, DX
oneWide:
	MOVQ channels+80(FP), R9
	SUBQ DX, R9
	CMPQ R9, $32
	JLT  oneWideDone
	MOVQ bias+24(FP), R9
	VMOVUPS 0(R9)(DX*4), Y4
	VMOVUPS 32(R9)(DX*4), Y5
	VMOVUPS 64(R9)(DX*4), Y6
	VMOVUPS 96(R9)(DX*4), Y7
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ R15, R15
oneWideTap:
	MOVQ (R11)(R15*8), R9
	ADDQ DX, R9
	LEAQ (R8)(R9*4), R9
	VMOVUPS 0(R9), Y8
	VMOVUPS 32(R9), Y9
	VMOVUPS 64(R9), Y10
	VMOVUPS 96(R9), Y11
	MOVQ (R10)(R15*8), R12
	ADDQ DX, R12
	LEAQ (CX)(R12*4), R12
	VFMADD231PS 0(R12), Y8, Y0
	VFMADD231PS 32(R12), Y9, Y1
	VFMADD231PS 64(R12), Y10, Y2
	VFMADD231PS 96(R12), Y11, Y3
	INCQ R15
	CMPQ R15, ntaps+48(FP)
	JLT  oneWideTap
	VADDPS Y4, Y0, Y0
	VMAXPS Y0, Y14, Y0
	VMINPS Y0, Y15, Y0
	VADDPS Y5, Y1, Y1
	VMAXPS Y1, Y14, Y1
	VMINPS Y1, Y15, Y1
	VADDPS Y6, Y2, Y2
	VMAXPS Y2, Y14, Y2
	VMINPS Y2, Y15, Y2
	VADDPS Y7, Y3, Y3
	VMAXPS Y3, Y14, Y3
	VMINPS Y3, Y15, Y3
	LEAQ (BX)(DX*4), DI
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $32, DX
	JMP  oneWide
oneWideDone:
oneHalf:
	MOVQ channels+80(FP), R9
	SUBQ DX, R9
	CMPQ R9, $8
	JLT  oneHalfDone
	MOVQ bias+24(FP), R9
	VMOVUPS 0(R9)(DX*4), Y4
	VXORPS Y0, Y0, Y0
	XORQ R15, R15
oneHalfTap:
	MOVQ (R11)(R15*8), R9
	ADDQ DX, R9
	LEAQ (R8)(R9*4), R9
	VMOVUPS 0(R9), Y8
	MOVQ (R10)(R15*8), R12
	ADDQ DX, R12
	LEAQ (CX)(R12*4), R12
	VFMADD231PS 0(R12), Y8, Y0
	INCQ R15
	CMPQ R15, ntaps+48(FP)
	JLT  oneHalfTap
	VADDPS Y4, Y0, Y0
	VMAXPS Y0, Y14, Y0
	VMINPS Y0, Y15, Y0
	LEAQ (BX)(DX*4), DI
	VMOVUPS Y0, 0(DI)
	ADDQ $8, DX
	JMP  oneHalf
oneHalfDone:
	ADDQ R14, BX
	ADDQ R13, CX
	SUBQ $1, AX
	JMP  one
done:
	VZEROUPPER
	RET
