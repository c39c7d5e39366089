//go:build amd64 && !noasm

#include "textflag.h"

// func rowChannelsLastAVX512(out, in, w, bias *float32, inOff, wOff *int, ntaps, n, inStep, ldo, channels int, lo, hi float32)
//
// RowChannelsLast in AVX-512: the positions eight, then four, then one at
// a time, and for each group every block of 16 channels (the last one
// masked), each position's taps summed in one register in tap order, then
// the bias and the clamp. Groups of four take two whole blocks, single
// positions four, at a time while that many channels are left, so that
// more multiply-add chains overlap (a 7×7 row is one group of four and
// three single positions). Going through a group's channels before the
// next group reads the input position after position, each position's
// channels one run of memory, which the hardware prefetcher follows from
// L3; a sweep of one block of 16 channels over every position at a time
// left the loads waiting (MobileNetV2's 56×56×144 layer, one Zen 5
// thread: 98 µs with its input in L2, 178 µs from L3). Groups of eight
// also prefetch the next group's row below.
//
// Registers: R8 w, R10 inOff, R11 wOff, R13 input bytes per position, SI
// three of those, R14 output bytes per position, AX positions left, BX the
// group's first output, CX its first input (before the taps' offsets), DX
// the block's first channel, R15 the tap, K1 the block's mask, K2 the last
// block's, K3 all lanes; Z29 (Z21–Z23 for the other whole blocks) the
// bias, Z30 and Z31 the clamp.
TEXT ·rowChannelsLastAVX512(SB), NOSPLIT, $0-96
	MOVQ         w+16(FP), R8
	MOVQ         inOff+32(FP), R10
	MOVQ         wOff+40(FP), R11
	MOVQ         inStep+64(FP), R13
	SHLQ         $2, R13
	LEAQ         (R13)(R13*2), SI
	MOVQ         ldo+72(FP), R14
	SHLQ         $2, R14
	VBROADCASTSS lo+88(FP), Z30
	VBROADCASTSS hi+92(FP), Z31
	MOVL         $0xFFFF, BX
	KMOVW        BX, K3
	MOVQ         channels+80(FP), CX
	ANDQ         $15, CX
	JZ           lastMask
	MOVL         $1, BX
	SHLL         CX, BX
	DECL         BX

lastMask:
	KMOVW BX, K2
	MOVQ  out+0(FP), BX
	MOVQ  in+8(FP), CX
	MOVQ  n+56(FP), AX

eight:
	CMPQ AX, $8
	JLT  four
	XORQ DX, DX

eightBlock:
	MOVQ  channels+80(FP), R9
	SUBQ  DX, R9
	JLE   eightNext
	KMOVW K3, K1
	CMPQ  R9, $16
	JGE   eightWhole
	KMOVW K2, K1

eightWhole:
	// Prefetch the next group's inputs of the last tap (the row
	// below, which the rows above have not read yet).
	MOVQ       ntaps+48(FP), R9
	MOVQ       -8(R10)(R9*8), R12
	ADDQ       DX, R12
	LEAQ       (CX)(R12*4), R12
	LEAQ       (R12)(R13*8), R12
	LEAQ       (R12)(R13*4), R9
	PREFETCHT0 (R12)
	PREFETCHT0 (R12)(R13*1)
	PREFETCHT0 (R12)(R13*2)
	PREFETCHT0 (R12)(SI*1)
	PREFETCHT0 (R9)
	PREFETCHT0 (R9)(R13*1)
	PREFETCHT0 (R9)(R13*2)
	PREFETCHT0 (R9)(SI*1)
	MOVQ      bias+24(FP), R9
	VMOVUPS.Z (R9)(DX*4), K1, Z29
	VXORPS    Z0, Z0, Z0
	VXORPS    Z1, Z1, Z1
	VXORPS    Z2, Z2, Z2
	VXORPS    Z3, Z3, Z3
	VXORPS    Z4, Z4, Z4
	VXORPS    Z5, Z5, Z5
	VXORPS    Z6, Z6, Z6
	VXORPS    Z7, Z7, Z7
	XORQ      R15, R15

eightTap:
	MOVQ        (R11)(R15*8), R9
	ADDQ        DX, R9
	VMOVUPS.Z   (R8)(R9*4), K1, Z16
	MOVQ        (R10)(R15*8), R12
	ADDQ        DX, R12
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
	JLT         eightTap

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
	LEAQ    (BX)(DX*4), R12
	LEAQ    (R14)(R14*2), R9
	LEAQ    (R12)(R14*4), DI
	VMOVUPS Z0, K1, (R12)
	VMOVUPS Z1, K1, (R12)(R14*1)
	VMOVUPS Z2, K1, (R12)(R14*2)
	VMOVUPS Z3, K1, (R12)(R9*1)
	VMOVUPS Z4, K1, (DI)
	VMOVUPS Z5, K1, (DI)(R14*1)
	VMOVUPS Z6, K1, (DI)(R14*2)
	VMOVUPS Z7, K1, (DI)(R9*1)
	ADDQ    $16, DX
	JMP     eightBlock

eightNext:
	LEAQ (BX)(R14*8), BX
	LEAQ (CX)(R13*8), CX
	SUBQ $8, AX
	JMP  eight
four:
	CMPQ AX, $4
	JLT  one
	XORQ DX, DX
fourWide:
	MOVQ channels+80(FP), R9
	SUBQ DX, R9
	CMPQ R9, $32
	JLT  fourWideDone
	MOVQ bias+24(FP), R9
	VMOVUPS 0(R9)(DX*4), Z29
	VMOVUPS 64(R9)(DX*4), Z23
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	XORQ R15, R15

fourWideTap:
	MOVQ (R11)(R15*8), R9
	ADDQ DX, R9
	LEAQ (R8)(R9*4), R9
	VMOVUPS 0(R9), Z16
	VMOVUPS 64(R9), Z17
	MOVQ (R10)(R15*8), R12
	ADDQ DX, R12
	LEAQ (CX)(R12*4), R12
	VFMADD231PS 0(R12), Z16, Z0
	VFMADD231PS 64(R12), Z17, Z1
	VFMADD231PS 0(R12)(R13*1), Z16, Z2
	VFMADD231PS 64(R12)(R13*1), Z17, Z3
	VFMADD231PS 0(R12)(R13*2), Z16, Z4
	VFMADD231PS 64(R12)(R13*2), Z17, Z5
	VFMADD231PS 0(R12)(SI*1), Z16, Z6
	VFMADD231PS 64(R12)(SI*1), Z17, Z7
	INCQ R15
	CMPQ R15, ntaps+48(FP)
	JLT  fourWideTap

	VADDPS Z29, Z0, Z0
	VMAXPS Z0, Z30, Z0
	VMINPS Z0, Z31, Z0
	VADDPS Z23, Z1, Z1
	VMAXPS Z1, Z30, Z1
	VMINPS Z1, Z31, Z1
	VADDPS Z29, Z2, Z2
	VMAXPS Z2, Z30, Z2
	VMINPS Z2, Z31, Z2
	VADDPS Z23, Z3, Z3
	VMAXPS Z3, Z30, Z3
	VMINPS Z3, Z31, Z3
	VADDPS Z29, Z4, Z4
	VMAXPS Z4, Z30, Z4
	VMINPS Z4, Z31, Z4
	VADDPS Z23, Z5, Z5
	VMAXPS Z5, Z30, Z5
	VMINPS Z5, Z31, Z5
	VADDPS Z29, Z6, Z6
	VMAXPS Z6, Z30, Z6
	VMINPS Z6, Z31, Z6
	VADDPS Z23, Z7, Z7
	VMAXPS Z7, Z30, Z7
	VMINPS Z7, Z31, Z7
	LEAQ (BX)(DX*4), R12
	LEAQ (R14)(R14*2), R9
	VMOVUPS Z0, 0(R12)
	VMOVUPS Z1, 64(R12)
	VMOVUPS Z2, 0(R12)(R14*1)
	VMOVUPS Z3, 64(R12)(R14*1)
	VMOVUPS Z4, 0(R12)(R14*2)
	VMOVUPS Z5, 64(R12)(R14*2)
	VMOVUPS Z6, 0(R12)(R9*1)
	VMOVUPS Z7, 64(R12)(R9*1)
	ADDQ $32, DX
	JMP  fourWide

fourWideDone:

fourBlock:
	MOVQ  channels+80(FP), R9
	SUBQ  DX, R9
	JLE   fourNext
	KMOVW K3, K1
	CMPQ  R9, $16
	JGE   fourWhole
	KMOVW K2, K1

fourWhole:
	MOVQ      bias+24(FP), R9
	VMOVUPS.Z (R9)(DX*4), K1, Z29
	VXORPS    Z0, Z0, Z0
	VXORPS    Z1, Z1, Z1
	VXORPS    Z2, Z2, Z2
	VXORPS    Z3, Z3, Z3
	XORQ      R15, R15

fourTap:
	MOVQ        (R11)(R15*8), R9
	ADDQ        DX, R9
	VMOVUPS.Z   (R8)(R9*4), K1, Z16
	MOVQ        (R10)(R15*8), R12
	ADDQ        DX, R12
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
	JLT         fourTap

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
	LEAQ    (BX)(DX*4), R12
	LEAQ    (R14)(R14*2), R9
	VMOVUPS Z0, K1, (R12)
	VMOVUPS Z1, K1, (R12)(R14*1)
	VMOVUPS Z2, K1, (R12)(R14*2)
	VMOVUPS Z3, K1, (R12)(R9*1)
	ADDQ    $16, DX
	JMP     fourBlock

fourNext:
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
	CMPQ R9, $64
	JLT  oneWideDone
	MOVQ bias+24(FP), R9
	VMOVUPS 0(R9)(DX*4), Z29
	VMOVUPS 64(R9)(DX*4), Z23
	VMOVUPS 128(R9)(DX*4), Z22
	VMOVUPS 192(R9)(DX*4), Z21
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	XORQ R15, R15

oneWideTap:
	MOVQ (R11)(R15*8), R9
	ADDQ DX, R9
	LEAQ (R8)(R9*4), R9
	VMOVUPS 0(R9), Z16
	VMOVUPS 64(R9), Z17
	VMOVUPS 128(R9), Z18
	VMOVUPS 192(R9), Z19
	MOVQ (R10)(R15*8), R12
	ADDQ DX, R12
	LEAQ (CX)(R12*4), R12
	VFMADD231PS 0(R12), Z16, Z0
	VFMADD231PS 64(R12), Z17, Z1
	VFMADD231PS 128(R12), Z18, Z2
	VFMADD231PS 192(R12), Z19, Z3
	INCQ R15
	CMPQ R15, ntaps+48(FP)
	JLT  oneWideTap

	VADDPS Z29, Z0, Z0
	VMAXPS Z0, Z30, Z0
	VMINPS Z0, Z31, Z0
	VADDPS Z23, Z1, Z1
	VMAXPS Z1, Z30, Z1
	VMINPS Z1, Z31, Z1
	VADDPS Z22, Z2, Z2
	VMAXPS Z2, Z30, Z2
	VMINPS Z2, Z31, Z2
	VADDPS Z21, Z3, Z3
	VMAXPS Z3, Z30, Z3
	VMINPS Z3, Z31, Z3
	LEAQ (BX)(DX*4), R12
	LEAQ (R14)(R14*2), R9
	VMOVUPS Z0, 0(R12)
	VMOVUPS Z1, 64(R12)
	VMOVUPS Z2, 128(R12)
	VMOVUPS Z3, 192(R12)
	ADDQ $64, DX
	JMP  oneWide

oneWideDone:

oneBlock:
	MOVQ  channels+80(FP), R9
	SUBQ  DX, R9
	JLE   oneNext
	KMOVW K3, K1
	CMPQ  R9, $16
	JGE   oneWhole
	KMOVW K2, K1

oneWhole:
	MOVQ      bias+24(FP), R9
	VMOVUPS.Z (R9)(DX*4), K1, Z29
	VXORPS    Z0, Z0, Z0
	XORQ      R15, R15

oneTap:
	MOVQ        (R11)(R15*8), R9
	ADDQ        DX, R9
	VMOVUPS.Z   (R8)(R9*4), K1, Z16
	MOVQ        (R10)(R15*8), R12
	ADDQ        DX, R12
	LEAQ        (CX)(R12*4), R12
	VMOVUPS.Z   (R12), K1, Z8
	VFMADD231PS Z8, Z16, Z0
	INCQ        R15
	CMPQ        R15, ntaps+48(FP)
	JLT         oneTap

	VADDPS  Z29, Z0, Z0
	VMAXPS  Z0, Z30, Z0
	VMINPS  Z0, Z31, Z0
	LEAQ    (BX)(DX*4), R12
	VMOVUPS Z0, K1, (R12)
	ADDQ    $16, DX
	JMP     oneBlock

oneNext:
	ADDQ R14, BX
	ADDQ R13, CX
	SUBQ $1, AX
	JMP  one
done:
	VZEROUPPER
	RET
