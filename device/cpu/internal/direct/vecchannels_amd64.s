//go:build amd64 && !noasm

#include "textflag.h"

// func vecBlockAVX2(out, in *float32, pos *[6]int, offs *int, k int, w *float32, add bool)
//
// One block of VecBlocks: Y(2p) and Y(2p+1) accumulate position p's output channels 0–7
// and 8–15. Each pair k loads its offset (DX), the pair's 16 weights
// (Y12, Y13) and, for each position, the input it reads broadcast to all
// lanes (Y14, Y15 in turn): 12 multiply-adds for 2 + 6 loads. R8…R13
// point at each position's first input. With add the sums start from
// out's values, else from zero.
TEXT ·vecBlockAVX2(SB), NOSPLIT, $0-49
	MOVQ in+8(FP), AX
	MOVQ pos+16(FP), BX
	MOVQ 0(BX), R8
	LEAQ (AX)(R8*4), R8
	MOVQ 8(BX), R9
	LEAQ (AX)(R9*4), R9
	MOVQ 16(BX), R10
	LEAQ (AX)(R10*4), R10
	MOVQ 24(BX), R11
	LEAQ (AX)(R11*4), R11
	MOVQ 32(BX), R12
	LEAQ (AX)(R12*4), R12
	MOVQ 40(BX), R13
	LEAQ (AX)(R13*4), R13
	MOVQ offs+24(FP), SI
	MOVQ k+32(FP), CX
	MOVQ w+40(FP), DI
	MOVQ    out+0(FP), AX
	CMPB    add+48(FP), $0
	JEQ     vbzero
	VMOVUPS 0(AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS 64(AX), Y2
	VMOVUPS 96(AX), Y3
	VMOVUPS 128(AX), Y4
	VMOVUPS 160(AX), Y5
	VMOVUPS 192(AX), Y6
	VMOVUPS 224(AX), Y7
	VMOVUPS 256(AX), Y8
	VMOVUPS 288(AX), Y9
	VMOVUPS 320(AX), Y10
	VMOVUPS 352(AX), Y11
	JMP     vbloop

vbzero:
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

vbloop:
	MOVQ         (SI), DX
	VMOVUPS      (DI), Y12
	VMOVUPS      32(DI), Y13
	VBROADCASTSS (R8)(DX*4), Y14
	VFMADD231PS  Y12, Y14, Y0
	VFMADD231PS  Y13, Y14, Y1
	VBROADCASTSS (R9)(DX*4), Y15
	VFMADD231PS  Y12, Y15, Y2
	VFMADD231PS  Y13, Y15, Y3
	VBROADCASTSS (R10)(DX*4), Y14
	VFMADD231PS  Y12, Y14, Y4
	VFMADD231PS  Y13, Y14, Y5
	VBROADCASTSS (R11)(DX*4), Y15
	VFMADD231PS  Y12, Y15, Y6
	VFMADD231PS  Y13, Y15, Y7
	VBROADCASTSS (R12)(DX*4), Y14
	VFMADD231PS  Y12, Y14, Y8
	VFMADD231PS  Y13, Y14, Y9
	VBROADCASTSS (R13)(DX*4), Y15
	VFMADD231PS  Y12, Y15, Y10
	VFMADD231PS  Y13, Y15, Y11
	ADDQ         $8, SI
	ADDQ         $64, DI
	DECQ         CX
	JNZ          vbloop

	MOVQ    out+0(FP), DI
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VMOVUPS Y8, 256(DI)
	VMOVUPS Y9, 288(DI)
	VMOVUPS Y10, 320(DI)
	VMOVUPS Y11, 352(DI)
	VZEROUPPER
	RET
