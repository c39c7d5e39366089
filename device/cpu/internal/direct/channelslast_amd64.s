//go:build amd64 && !noasm

#include "textflag.h"

// func rowChannelsLastAVX512(out, in, w, bias *float32, inOff, wOff *int, ntaps, n, inStep, ldo, channels int, lo, hi float32)
//
// RowChannelsLast in AVX-512: for each block of 16 channels (the last one
// masked), the positions eight, then four, then one at a time, each
// position's taps summed in one register in tap order, then the bias and
// the clamp.
TEXT ·rowChannelsLastAVX512(SB), NOSPLIT, $0-96
	MOVQ         w+16(FP), R8
	MOVQ         inOff+32(FP), R10
	MOVQ         wOff+40(FP), R11
	MOVQ         inStep+64(FP), R13
	SHLQ         $2, R13               // bytes from one position's inputs to the next's
	LEAQ         (R13)(R13*2), SI      // three of those
	MOVQ         ldo+72(FP), R14
	SHLQ         $2, R14               // bytes from one position's outputs to the next's
	VBROADCASTSS lo+88(FP), Z30
	VBROADCASTSS hi+92(FP), Z31
	XORQ         DX, DX                // first channel of the block

block:
	MOVQ channels+80(FP), CX
	SUBQ DX, CX
	JLE  done
	MOVL $0xFFFF, BX
	CMPQ CX, $16
	JGE  full
	MOVL $1, BX
	SHLL CX, BX
	DECL BX

full:
	KMOVW     BX, K1
	MOVQ      bias+24(FP), BX
	VMOVUPS.Z (BX)(DX*4), K1, Z29
	MOVQ      out+0(FP), BX
	LEAQ      (BX)(DX*4), BX           // the block's outputs of position 0
	MOVQ      in+8(FP), CX
	LEAQ      (CX)(DX*4), CX           // its inputs of position 0 (before the taps' offsets)
	MOVQ      n+56(FP), AX             // positions left

eight:
	CMPQ   AX, $8
	JLT    four
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	XORQ   R15, R15

tap8:
	MOVQ        (R11)(R15*8), R9
	ADDQ        DX, R9
	VMOVUPS.Z   (R8)(R9*4), K1, Z16
	MOVQ        (R10)(R15*8), R12
	LEAQ        (CX)(R12*4), R12
	LEAQ        (R12)(R13*4), R9
	VMOVUPS.Z   (R12), K1, Z8
	VMOVUPS.Z   (R12)(R13*1), K1, Z9
	VMOVUPS.Z   (R12)(R13*2), K1, Z10
	VMOVUPS.Z   (R12)(SI*1), K1, Z11
	VMOVUPS.Z   (R9), K1, Z12
	VMOVUPS.Z   (R9)(R13*1), K1, Z13
	VMOVUPS.Z   (R9)(R13*2), K1, Z14
	VMOVUPS.Z   (R9)(SI*1), K1, Z15
	VFMADD231PS Z8, Z16, Z0
	VFMADD231PS Z9, Z16, Z1
	VFMADD231PS Z10, Z16, Z2
	VFMADD231PS Z11, Z16, Z3
	VFMADD231PS Z12, Z16, Z4
	VFMADD231PS Z13, Z16, Z5
	VFMADD231PS Z14, Z16, Z6
	VFMADD231PS Z15, Z16, Z7
	INCQ        R15
	CMPQ        R15, ntaps+48(FP)
	JLT         tap8

	VADDPS  Z29, Z0, Z0
	VADDPS  Z29, Z1, Z1
	VADDPS  Z29, Z2, Z2
	VADDPS  Z29, Z3, Z3
	VADDPS  Z29, Z4, Z4
	VADDPS  Z29, Z5, Z5
	VADDPS  Z29, Z6, Z6
	VADDPS  Z29, Z7, Z7
	VMAXPS  Z0, Z30, Z0
	VMAXPS  Z1, Z30, Z1
	VMAXPS  Z2, Z30, Z2
	VMAXPS  Z3, Z30, Z3
	VMAXPS  Z4, Z30, Z4
	VMAXPS  Z5, Z30, Z5
	VMAXPS  Z6, Z30, Z6
	VMAXPS  Z7, Z30, Z7
	VMINPS  Z0, Z31, Z0
	VMINPS  Z1, Z31, Z1
	VMINPS  Z2, Z31, Z2
	VMINPS  Z3, Z31, Z3
	VMINPS  Z4, Z31, Z4
	VMINPS  Z5, Z31, Z5
	VMINPS  Z6, Z31, Z6
	VMINPS  Z7, Z31, Z7
	LEAQ    (R14)(R14*2), R9
	LEAQ    (BX)(R14*4), R12
	VMOVUPS Z0, K1, (BX)
	VMOVUPS Z1, K1, (BX)(R14*1)
	VMOVUPS Z2, K1, (BX)(R14*2)
	VMOVUPS Z3, K1, (BX)(R9*1)
	VMOVUPS Z4, K1, (R12)
	VMOVUPS Z5, K1, (R12)(R14*1)
	VMOVUPS Z6, K1, (R12)(R14*2)
	VMOVUPS Z7, K1, (R12)(R9*1)
	LEAQ    (BX)(R14*8), BX
	LEAQ    (CX)(R13*8), CX
	SUBQ    $8, AX
	JMP     eight

four:
	CMPQ   AX, $4
	JLT    one
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	XORQ   R15, R15

tap4:
	MOVQ        (R11)(R15*8), R9
	ADDQ        DX, R9
	VMOVUPS.Z   (R8)(R9*4), K1, Z16
	MOVQ        (R10)(R15*8), R12
	LEAQ        (CX)(R12*4), R12
	VMOVUPS.Z   (R12), K1, Z8
	VMOVUPS.Z   (R12)(R13*1), K1, Z9
	VMOVUPS.Z   (R12)(R13*2), K1, Z10
	VMOVUPS.Z   (R12)(SI*1), K1, Z11
	VFMADD231PS Z8, Z16, Z0
	VFMADD231PS Z9, Z16, Z1
	VFMADD231PS Z10, Z16, Z2
	VFMADD231PS Z11, Z16, Z3
	INCQ        R15
	CMPQ        R15, ntaps+48(FP)
	JLT         tap4

	VADDPS  Z29, Z0, Z0
	VADDPS  Z29, Z1, Z1
	VADDPS  Z29, Z2, Z2
	VADDPS  Z29, Z3, Z3
	VMAXPS  Z0, Z30, Z0
	VMAXPS  Z1, Z30, Z1
	VMAXPS  Z2, Z30, Z2
	VMAXPS  Z3, Z30, Z3
	VMINPS  Z0, Z31, Z0
	VMINPS  Z1, Z31, Z1
	VMINPS  Z2, Z31, Z2
	VMINPS  Z3, Z31, Z3
	LEAQ    (R14)(R14*2), R9
	VMOVUPS Z0, K1, (BX)
	VMOVUPS Z1, K1, (BX)(R14*1)
	VMOVUPS Z2, K1, (BX)(R14*2)
	VMOVUPS Z3, K1, (BX)(R9*1)
	LEAQ    (BX)(R14*4), BX
	LEAQ    (CX)(R13*4), CX
	SUBQ    $4, AX
	JMP     four

one:
	CMPQ   AX, $1
	JLT    next
	VXORPS Z0, Z0, Z0
	XORQ   R15, R15

tap1:
	MOVQ        (R11)(R15*8), R9
	ADDQ        DX, R9
	VMOVUPS.Z   (R8)(R9*4), K1, Z16
	MOVQ        (R10)(R15*8), R12
	VMOVUPS.Z   (CX)(R12*4), K1, Z8
	VFMADD231PS Z8, Z16, Z0
	INCQ        R15
	CMPQ        R15, ntaps+48(FP)
	JLT         tap1

	VADDPS  Z29, Z0, Z0
	VMAXPS  Z0, Z30, Z0
	VMINPS  Z0, Z31, Z0
	VMOVUPS Z0, K1, (BX)
	ADDQ    R14, BX
	ADDQ    R13, CX
	DECQ    AX
	JMP     one

next:
	ADDQ $16, DX
	JMP  block

done:
	VZEROUPPER
	RET
