//go:build amd64 && !noasm

#include "textflag.h"

// The AVX2 kernels, for CPUs without AVX-512: the kernels of
// norm_amd64.s in vectors of 8, each row's last cols mod 8 values under a
// mask (VMASKMOVPS: masked lanes neither load nor store; TAILMASK). The
// row stride is in R8 (bytes), the rows left in R10, the row's values in
// whole vectors in R12, cols mod 8 in R14. Sums are taken in float32
// lanes over chunks of at most 256 values of a row, then converted and
// added to float64 lanes (Y8 and Y9 for the first sum, Y10 and Y11 for the
// second).

DATA tailMasks<>+0(SB)/4, $0
DATA tailMasks<>+4(SB)/4, $0
DATA tailMasks<>+8(SB)/4, $0
DATA tailMasks<>+12(SB)/4, $0
DATA tailMasks<>+16(SB)/4, $0
DATA tailMasks<>+20(SB)/4, $0
DATA tailMasks<>+24(SB)/4, $0
DATA tailMasks<>+28(SB)/4, $0
DATA tailMasks<>+32(SB)/4, $-1
DATA tailMasks<>+36(SB)/4, $0
DATA tailMasks<>+40(SB)/4, $0
DATA tailMasks<>+44(SB)/4, $0
DATA tailMasks<>+48(SB)/4, $0
DATA tailMasks<>+52(SB)/4, $0
DATA tailMasks<>+56(SB)/4, $0
DATA tailMasks<>+60(SB)/4, $0
DATA tailMasks<>+64(SB)/4, $-1
DATA tailMasks<>+68(SB)/4, $-1
DATA tailMasks<>+72(SB)/4, $0
DATA tailMasks<>+76(SB)/4, $0
DATA tailMasks<>+80(SB)/4, $0
DATA tailMasks<>+84(SB)/4, $0
DATA tailMasks<>+88(SB)/4, $0
DATA tailMasks<>+92(SB)/4, $0
DATA tailMasks<>+96(SB)/4, $-1
DATA tailMasks<>+100(SB)/4, $-1
DATA tailMasks<>+104(SB)/4, $-1
DATA tailMasks<>+108(SB)/4, $0
DATA tailMasks<>+112(SB)/4, $0
DATA tailMasks<>+116(SB)/4, $0
DATA tailMasks<>+120(SB)/4, $0
DATA tailMasks<>+124(SB)/4, $0
DATA tailMasks<>+128(SB)/4, $-1
DATA tailMasks<>+132(SB)/4, $-1
DATA tailMasks<>+136(SB)/4, $-1
DATA tailMasks<>+140(SB)/4, $-1
DATA tailMasks<>+144(SB)/4, $0
DATA tailMasks<>+148(SB)/4, $0
DATA tailMasks<>+152(SB)/4, $0
DATA tailMasks<>+156(SB)/4, $0
DATA tailMasks<>+160(SB)/4, $-1
DATA tailMasks<>+164(SB)/4, $-1
DATA tailMasks<>+168(SB)/4, $-1
DATA tailMasks<>+172(SB)/4, $-1
DATA tailMasks<>+176(SB)/4, $-1
DATA tailMasks<>+180(SB)/4, $0
DATA tailMasks<>+184(SB)/4, $0
DATA tailMasks<>+188(SB)/4, $0
DATA tailMasks<>+192(SB)/4, $-1
DATA tailMasks<>+196(SB)/4, $-1
DATA tailMasks<>+200(SB)/4, $-1
DATA tailMasks<>+204(SB)/4, $-1
DATA tailMasks<>+208(SB)/4, $-1
DATA tailMasks<>+212(SB)/4, $-1
DATA tailMasks<>+216(SB)/4, $0
DATA tailMasks<>+220(SB)/4, $0
DATA tailMasks<>+224(SB)/4, $-1
DATA tailMasks<>+228(SB)/4, $-1
DATA tailMasks<>+232(SB)/4, $-1
DATA tailMasks<>+236(SB)/4, $-1
DATA tailMasks<>+240(SB)/4, $-1
DATA tailMasks<>+244(SB)/4, $-1
DATA tailMasks<>+248(SB)/4, $-1
DATA tailMasks<>+252(SB)/4, $0
GLOBL tailMasks<>(SB), RODATA|NOPTR, $256

// TAILMASK sets R12 to cols (R11) rounded down to whole vectors, R14 to
// the rest and ym to the mask of its lanes.
#define TAILMASK(ym) \
	MOVQ    R11, R12; \
	ANDQ    $-8, R12; \
	MOVQ    R11, R14; \
	ANDQ    $7, R14; \
	MOVQ    R14, AX; \
	SHLQ    $5, AX; \
	LEAQ    tailMasks<>(SB), CX; \
	VMOVDQU (CX)(AX*1), ym


// CHUNK2 sets CX to the end of the chunk that starts at BX:
// min(BX+256, R12).
#define CHUNK2 \
	LEAQ    256(BX), CX; \
	CMPQ    CX, R12; \
	CMOVQGT R12, CX

// FLUSH2 adds the float32 lanes of ya (xa its lower half) to the float64
// lanes of y0 and y1.
#define FLUSH2(ya, xa, y0, y1) \
	VEXTRACTF128 $1, ya, X14; \
	VCVTPS2PD    xa, Y15; \
	VCVTPS2PD    X14, Y14; \
	VADDPD       Y15, y0, y0; \
	VADDPD       Y14, y1, y1

// REDUCE2 sets X0 to the sum of the float64 lanes of y0 and y1.
#define REDUCE2(y0, y1) \
	VADDPD       y1, y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPD       X1, X0, X0; \
	VPERMILPD    $1, X0, X1; \
	VADDSD       X1, X0, X0

// func sumAVX2(x *float32, ld, rows, cols int) float64
TEXT ·sumAVX2(SB), NOSPLIT, $0-40
	MOVQ   x+0(FP), SI
	MOVQ   ld+8(FP), R8
	SHLQ   $2, R8
	MOVQ   rows+16(FP), R10
	MOVQ   cols+24(FP), R11
	TAILMASK(Y12)
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9

srow:
	XORQ BX, BX
schunk:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	CHUNK2
s4:
	LEAQ   32(BX), AX
	CMPQ   AX, CX
	JGT    s1
	VADDPS (SI)(BX*4), Y0, Y0
	VADDPS 32(SI)(BX*4), Y1, Y1
	VADDPS 64(SI)(BX*4), Y2, Y2
	VADDPS 96(SI)(BX*4), Y3, Y3
	MOVQ   AX, BX
	JMP    s4
s1:
	CMPQ   BX, CX
	JGE    send
	VADDPS (SI)(BX*4), Y0, Y0
	ADDQ   $8, BX
	JMP    s1
send:
	CMPQ       BX, R12
	JLT        sflush // more whole vectors: another chunk
	TESTQ      R14, R14
	JZ         sflush
	VMASKMOVPS (SI)(BX*4), Y12, Y4
	VADDPS     Y4, Y1, Y1
sflush:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	FLUSH2(Y0, X0, Y8, Y9)
	CMPQ   BX, R12
	JLT    schunk
	ADDQ   R8, SI
	DECQ   R10
	JNZ    srow

	REDUCE2(Y8, Y9)
	VMOVSD X0, ret+32(FP)
	VZEROUPPER
	RET

// SQDEV2 adds (x-m)² of the vector at off to acc; m is in Y13.
#define SQDEV2(off, t, acc) \
	VMOVUPS     off(SI)(BX*4), t; \
	VSUBPS      Y13, t, t; \
	VFMADD231PS t, t, acc

// func sumSqDevAVX2(x *float32, ld, rows, cols int, m float32) float64
TEXT ·sumSqDevAVX2(SB), NOSPLIT, $0-48
	MOVQ         x+0(FP), SI
	MOVQ         ld+8(FP), R8
	SHLQ         $2, R8
	MOVQ         rows+16(FP), R10
	MOVQ         cols+24(FP), R11
	TAILMASK(Y12)
	VBROADCASTSS m+32(FP), Y13
	VXORPD       Y8, Y8, Y8
	VXORPD       Y9, Y9, Y9

qrow:
	XORQ BX, BX
qchunk:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	CHUNK2
q4:
	LEAQ 32(BX), AX
	CMPQ AX, CX
	JGT  q1
	SQDEV2(0, Y4, Y0)
	SQDEV2(32, Y5, Y1)
	SQDEV2(64, Y6, Y2)
	SQDEV2(96, Y7, Y3)
	MOVQ AX, BX
	JMP  q4
q1:
	CMPQ BX, CX
	JGE  qend
	SQDEV2(0, Y4, Y0)
	ADDQ $8, BX
	JMP  q1
qend:
	CMPQ        BX, R12
	JLT         qflush
	TESTQ       R14, R14
	JZ          qflush
	VMASKMOVPS  (SI)(BX*4), Y12, Y4
	VSUBPS      Y13, Y4, Y4
	VANDPS      Y12, Y4, Y4 // zero outside the row
	VFMADD231PS Y4, Y4, Y1
qflush:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	FLUSH2(Y0, X0, Y8, Y9)
	CMPQ   BX, R12
	JLT    qchunk
	ADDQ   R8, SI
	DECQ   R10
	JNZ    qrow

	REDUCE2(Y8, Y9)
	VMOVSD X0, ret+40(FP)
	VZEROUPPER
	RET

// SCALESHIFT2 sets y = min(max(((x-m)·s)+b, lo), hi) for the vector at
// off, rounding after each operation (m, s, b, lo, hi in Y13, Y12, Y11,
// Y10, Y9); the clamp's operand order keeps NaN and -0.
#define SCALESHIFT2(off, t) \
	VMOVUPS off(SI)(BX*4), t; \
	VSUBPS  Y13, t, t; \
	VMULPS  Y12, t, t; \
	VADDPS  Y11, t, t; \
	VMAXPS  t, Y10, t; \
	VMINPS  t, Y9, t; \
	VMOVUPS t, off(DI)(BX*4)

// func scaleShiftAVX2(y, x *float32, ld, rows, cols int, m, s, b, lo, hi float32)
TEXT ·scaleShiftAVX2(SB), NOSPLIT, $0-60
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         ld+16(FP), R8
	SHLQ         $2, R8
	MOVQ         rows+24(FP), R10
	MOVQ         cols+32(FP), R11
	TAILMASK(Y14)
	VBROADCASTSS m+40(FP), Y13
	VBROADCASTSS s+44(FP), Y12
	VBROADCASTSS b+48(FP), Y11
	VBROADCASTSS lo+52(FP), Y10
	VBROADCASTSS hi+56(FP), Y9

frow:
	XORQ BX, BX
f4:
	LEAQ 32(BX), AX
	CMPQ AX, R12
	JGT  f1
	SCALESHIFT2(0, Y0)
	SCALESHIFT2(32, Y1)
	SCALESHIFT2(64, Y2)
	SCALESHIFT2(96, Y3)
	MOVQ AX, BX
	JMP  f4
f1:
	CMPQ BX, R12
	JGE  fend
	SCALESHIFT2(0, Y0)
	ADDQ $8, BX
	JMP  f1
fend:
	TESTQ      R14, R14
	JZ         fnext
	VMASKMOVPS (SI)(BX*4), Y14, Y0
	VSUBPS     Y13, Y0, Y0
	VMULPS     Y12, Y0, Y0
	VADDPS     Y11, Y0, Y0
	VMAXPS     Y0, Y10, Y0
	VMINPS     Y0, Y9, Y0
	VMASKMOVPS Y0, Y14, (DI)(BX*4)
fnext:
	ADDQ R8, SI
	ADDQ R8, DI
	DECQ R10
	JNZ  frow
	VZEROUPPER
	RET

// GRAD2 sets g (zero where the activation's gradient does not pass) and
// d = x-m for the vector at off: a lane passes where the output (at DX)
// is not ≤ lo (Y7; unordered passes) and, for ReLU (R13 = 1), is a
// number, or else is not ≥ hi (Y6). kp, o are scratch; the labels other
// and done must be new.
#define GRAD2(off, kp, o, g, d, other, done) \
	VMOVUPS off(DX)(BX*4), o; \
	VCMPPS  $0x06, Y7, o, kp; \
	CMPQ    R13, $1; \
	JNE     other; \
	VCMPPS  $0x07, Y7, o, o; \
	JMP     done; \
other: \
	VCMPPS  $0x09, Y6, o, o; \
done: \
	VANDPS  o, kp, kp; \
	VANDPS  off(SI)(BX*4), kp, g; \
	VMOVUPS off(R9)(BX*4), d; \
	VSUBPS  Y13, d, d

// GRADTAIL is GRAD2 for a row's last values under the mask ym: the masked
// lanes load zeros (their output does not pass ReLU's or ReLU6's gradient
// and their dy is 0), and d is zeroed there.
#define GRADTAIL(ym, kp, o, g, d, other, done) \
	VMASKMOVPS (DX)(BX*4), ym, o; \
	VCMPPS     $0x06, Y7, o, kp; \
	CMPQ       R13, $1; \
	JNE        other; \
	VCMPPS     $0x07, Y7, o, o; \
	JMP        done; \
other: \
	VCMPPS     $0x09, Y6, o, o; \
done: \
	VANDPS     o, kp, kp; \
	VMASKMOVPS (SI)(BX*4), ym, g; \
	VANDPS     g, kp, g; \
	VMASKMOVPS (R9)(BX*4), ym, d; \
	VSUBPS     Y13, d, d; \
	VANDPS     ym, d, d

// func gradSumsAVX2(dy, out, x *float32, ld, rows, cols, act int, m, lo, hi float32) (sumG, sumGXc float64)
TEXT ·gradSumsAVX2(SB), NOSPLIT, $0-88
	MOVQ         dy+0(FP), SI
	MOVQ         out+8(FP), DX
	MOVQ         x+16(FP), R9
	MOVQ         ld+24(FP), R8
	SHLQ         $2, R8
	MOVQ         rows+32(FP), R10
	MOVQ         cols+40(FP), R11
	TAILMASK(Y12)
	MOVQ         act+48(FP), R13
	VBROADCASTSS m+56(FP), Y13
	VBROADCASTSS lo+60(FP), Y7
	VBROADCASTSS hi+64(FP), Y6
	VXORPD       Y8, Y8, Y8
	VXORPD       Y9, Y9, Y9
	VXORPD       Y10, Y10, Y10
	VXORPD       Y11, Y11, Y11

grow:
	XORQ BX, BX
gchunk:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	CHUNK2
g1:
	CMPQ        BX, CX
	JGE         gend
	GRAD2(0, Y2, Y3, Y4, Y5, g1a, g1b)
	VADDPS      Y4, Y0, Y0
	VFMADD231PS Y5, Y4, Y1
	ADDQ        $8, BX
	JMP         g1
gend:
	CMPQ        BX, R12
	JLT         gflush
	TESTQ       R14, R14
	JZ          gflush
	GRADTAIL(Y12, Y2, Y3, Y4, Y5, gta, gtb)
	VADDPS      Y4, Y0, Y0
	VFMADD231PS Y5, Y4, Y1
gflush:
	FLUSH2(Y0, X0, Y8, Y9)
	FLUSH2(Y1, X1, Y10, Y11)
	CMPQ   BX, R12
	JLT    gchunk
	ADDQ   R8, SI
	ADDQ   R8, DX
	ADDQ   R8, R9
	DECQ   R10
	JNZ    grow

	REDUCE2(Y8, Y9)
	VMOVSD X0, sumG+72(FP)
	REDUCE2(Y10, Y11)
	VMOVSD X0, sumGXc+80(FP)
	VZEROUPPER
	RET

// APPLY2 stores dx = ((k·g) + (xs·d)) + shift for the vector at off,
// rounding after each operation (k, xs, shift in Y12, Y11, Y10), g and d
// from GRAD2.
#define APPLY2(off, g, d) \
	VMULPS  Y11, d, d; \
	VMULPS  Y12, g, g; \
	VADDPS  d, g, g; \
	VADDPS  Y10, g, g; \
	VMOVUPS g, off(DI)(BX*4)

// func gradApplyAVX2(dx, dy, out, x *float32, ld, rows, cols, act int, k, m, xs, shift, lo, hi float32)
TEXT ·gradApplyAVX2(SB), NOSPLIT, $0-88
	MOVQ         dx+0(FP), DI
	MOVQ         dy+8(FP), SI
	MOVQ         out+16(FP), DX
	MOVQ         x+24(FP), R9
	MOVQ         ld+32(FP), R8
	SHLQ         $2, R8
	MOVQ         rows+40(FP), R10
	MOVQ         cols+48(FP), R11
	TAILMASK(Y14)
	MOVQ         act+56(FP), R13
	VBROADCASTSS k+64(FP), Y12
	VBROADCASTSS m+68(FP), Y13
	VBROADCASTSS xs+72(FP), Y11
	VBROADCASTSS shift+76(FP), Y10
	VBROADCASTSS lo+80(FP), Y7
	VBROADCASTSS hi+84(FP), Y6

arow:
	XORQ BX, BX
a1:
	CMPQ BX, R12
	JGE  aend
	GRAD2(0, Y2, Y3, Y4, Y5, a1a, a1b)
	APPLY2(0, Y4, Y5)
	ADDQ $8, BX
	JMP  a1
aend:
	TESTQ      R14, R14
	JZ         anext
	GRADTAIL(Y14, Y2, Y3, Y4, Y5, ata, atb)
	VMULPS     Y11, Y5, Y5
	VMULPS     Y12, Y4, Y4
	VADDPS     Y5, Y4, Y4
	VADDPS     Y10, Y4, Y4
	VMASKMOVPS Y4, Y14, (DI)(BX*4)
anext:
	ADDQ R8, DI
	ADDQ R8, SI
	ADDQ R8, DX
	ADDQ R8, R9
	DECQ R10
	JNZ  arow
	VZEROUPPER
	RET
