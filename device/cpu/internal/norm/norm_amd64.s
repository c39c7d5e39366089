//go:build amd64 && !noasm

#include "textflag.h"

// The kernels walk rows rows of cols values, ld·4 bytes apart (R8 holds
// the stride in bytes, R10 the rows left, R11 cols, R12 the values in
// whole vectors of a row), a row in steps of several whole vectors, then
// one vector at a time, then the row's last partial vector under K1 (no
// lanes when cols is a multiple of 16). K7 holds all 16 lanes, the mask of
// a whole vector. Sums are taken in float32 lanes over chunks of at most
// 256 values of a row, then converted and added to float64 lanes (Z16
// and Z17 for the first sum, Z18 and Z19 for the second).

// SETUP sets K1, K7 and R12 from cols (R11).
#define SETUP \
	MOVQ  R11, CX; \
	ANDQ  $15, CX; \
	MOVL  $1, AX; \
	SHLL  CX, AX; \
	DECL  AX; \
	KMOVW AX, K1; \
	MOVL  $0xffff, AX; \
	KMOVW AX, K7; \
	MOVQ  R11, R12; \
	ANDQ  $-16, R12

// CHUNK sets CX to the end of the chunk that starts at BX:
// min(BX+256, R12).
#define CHUNK \
	LEAQ    256(BX), CX; \
	CMPQ    CX, R12; \
	CMOVQGT R12, CX

// FLUSH adds the float32 lanes of za (ya its lower half) to the float64
// lanes of z0 and z1.
#define FLUSH(za, ya, z0, z1) \
	VEXTRACTF64X4 $1, za, Y24; \
	VCVTPS2PD     ya, Z25; \
	VCVTPS2PD     Y24, Z24; \
	VADDPD        Z25, z0, z0; \
	VADDPD        Z24, z1, z1

// REDUCE sets X0 to the sum of the float64 lanes of z0 and z1.
#define REDUCE(z0, z1) \
	VADDPD        z1, z0, Z0; \
	VEXTRACTF64X4 $1, Z0, Y1; \
	VADDPD        Y1, Y0, Y0; \
	VEXTRACTF128  $1, Y0, X1; \
	VADDPD        X1, X0, X0; \
	VPERMILPD     $1, X0, X1; \
	VADDSD        X1, X0, X0

// func sumAVX512(x *float32, ld, rows, cols int) float64
TEXT ·sumAVX512(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ ld+8(FP), R8
	SHLQ $2, R8
	MOVQ rows+16(FP), R10
	MOVQ cols+24(FP), R11
	SETUP
	VXORPD Z16, Z16, Z16
	VXORPD Z17, Z17, Z17

srow:
	XORQ BX, BX
schunk:
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	CHUNK
s4:
	LEAQ   64(BX), AX
	CMPQ   AX, CX
	JGT    s1
	VADDPS (SI)(BX*4), Z0, Z0
	VADDPS 64(SI)(BX*4), Z1, Z1
	VADDPS 128(SI)(BX*4), Z2, Z2
	VADDPS 192(SI)(BX*4), Z3, Z3
	MOVQ   AX, BX
	JMP    s4
s1:
	CMPQ   BX, CX
	JGE    send
	VADDPS (SI)(BX*4), Z0, Z0
	ADDQ   $16, BX
	JMP    s1
send:
	CMPQ      BX, R12
	JLT       sflush // more whole vectors: another chunk
	VMOVUPS.Z (SI)(BX*4), K1, Z4
	VADDPS    Z4, Z1, Z1
sflush:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	FLUSH(Z0, Y0, Z16, Z17)
	CMPQ   BX, R12
	JLT    schunk
	ADDQ   R8, SI
	DECQ   R10
	JNZ    srow

	REDUCE(Z16, Z17)
	VMOVSD X0, ret+32(FP)
	VZEROUPPER
	RET

// SQDEV adds (x-m)² of the vector at off under mask k (zero elsewhere)
// to acc; m is in Z30.
#define SQDEV(off, k, t, acc) \
	VMOVUPS.Z   off(SI)(BX*4), k, t; \
	VSUBPS.Z    Z30, t, k, t; \
	VFMADD231PS t, t, acc

// func sumSqDevAVX512(x *float32, ld, rows, cols int, m float32) float64
TEXT ·sumSqDevAVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ ld+8(FP), R8
	SHLQ $2, R8
	MOVQ rows+16(FP), R10
	MOVQ cols+24(FP), R11
	VBROADCASTSS m+32(FP), Z30
	SETUP
	VXORPD Z16, Z16, Z16
	VXORPD Z17, Z17, Z17

qrow:
	XORQ BX, BX
qchunk:
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	CHUNK
q4:
	LEAQ 64(BX), AX
	CMPQ AX, CX
	JGT  q1
	SQDEV(0, K7, Z4, Z0)
	SQDEV(64, K7, Z5, Z1)
	SQDEV(128, K7, Z6, Z2)
	SQDEV(192, K7, Z7, Z3)
	MOVQ AX, BX
	JMP  q4
q1:
	CMPQ BX, CX
	JGE  qend
	SQDEV(0, K7, Z4, Z0)
	ADDQ $16, BX
	JMP  q1
qend:
	CMPQ BX, R12
	JLT  qflush
	SQDEV(0, K1, Z4, Z1)
qflush:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	FLUSH(Z0, Y0, Z16, Z17)
	CMPQ   BX, R12
	JLT    qchunk
	ADDQ   R8, SI
	DECQ   R10
	JNZ    qrow

	REDUCE(Z16, Z17)
	VMOVSD X0, ret+40(FP)
	VZEROUPPER
	RET

// SCALESHIFT sets y = min(max(((x-m)·s)+b, lo), hi) for the vector at
// off under mask k, rounding after each operation (m, s, b, lo, hi in
// Z30, Z29, Z28, Z27, Z26); the clamp's operand order keeps NaN and -0.
#define SCALESHIFT(off, k, t) \
	VMOVUPS.Z off(SI)(BX*4), k, t; \
	VSUBPS    Z30, t, t; \
	VMULPS    Z29, t, t; \
	VADDPS    Z28, t, t; \
	VMAXPS    t, Z27, t; \
	VMINPS    t, Z26, t; \
	VMOVUPS   t, k, off(DI)(BX*4)

// func scaleShiftAVX512(y, x *float32, ld, rows, cols int, m, s, b, lo, hi float32)
TEXT ·scaleShiftAVX512(SB), NOSPLIT, $0-60
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ ld+16(FP), R8
	SHLQ $2, R8
	MOVQ rows+24(FP), R10
	MOVQ cols+32(FP), R11
	VBROADCASTSS m+40(FP), Z30
	VBROADCASTSS s+44(FP), Z29
	VBROADCASTSS b+48(FP), Z28
	VBROADCASTSS lo+52(FP), Z27
	VBROADCASTSS hi+56(FP), Z26
	SETUP

frow:
	XORQ BX, BX
f4:
	LEAQ 64(BX), AX
	CMPQ AX, R12
	JGT  f1
	SCALESHIFT(0, K7, Z0)
	SCALESHIFT(64, K7, Z1)
	SCALESHIFT(128, K7, Z2)
	SCALESHIFT(192, K7, Z3)
	MOVQ AX, BX
	JMP  f4
f1:
	CMPQ BX, R12
	JGE  fend
	SCALESHIFT(0, K7, Z0)
	ADDQ $16, BX
	JMP  f1
fend:
	SCALESHIFT(0, K1, Z0)
	ADDQ R8, SI
	ADDQ R8, DI
	DECQ R10
	JNZ  frow
	VZEROUPPER
	RET

// GRAD sets g (zero where the activation's gradient does not pass) and
// d = x-m (zero outside k) for the vector at off under mask k: a lane
// passes where the output (at DX) is not ≤ lo (Z31; unordered passes)
// and, for ReLU (R13 = 1), is a number, or else is not ≥ hi (Z26). kp,
// o are scratch; the labels other and done must be new.
#define GRAD(off, k, kp, o, g, d, other, done) \
	VMOVUPS.Z off(DX)(BX*4), k, o; \
	VCMPPS    $0x06, Z31, o, k, kp; \
	CMPQ      R13, $1; \
	JNE       other; \
	VCMPPS    $0x07, Z31, o, kp, kp; \
	JMP       done; \
other: \
	VCMPPS    $0x09, Z26, o, kp, kp; \
done: \
	VMOVUPS.Z off(SI)(BX*4), kp, g; \
	VMOVUPS.Z off(R9)(BX*4), k, d; \
	VSUBPS.Z  Z30, d, k, d

// func gradSumsAVX512(dy, out, x *float32, ld, rows, cols, act int, m, lo, hi float32) (sumG, sumGXc float64)
TEXT ·gradSumsAVX512(SB), NOSPLIT, $0-88
	MOVQ dy+0(FP), SI
	MOVQ out+8(FP), DX
	MOVQ x+16(FP), R9
	MOVQ ld+24(FP), R8
	SHLQ $2, R8
	MOVQ rows+32(FP), R10
	MOVQ cols+40(FP), R11
	MOVQ act+48(FP), R13
	VBROADCASTSS m+56(FP), Z30
	VBROADCASTSS lo+60(FP), Z31
	VBROADCASTSS hi+64(FP), Z26
	SETUP
	VXORPD Z16, Z16, Z16
	VXORPD Z17, Z17, Z17
	VXORPD Z18, Z18, Z18
	VXORPD Z19, Z19, Z19

grow:
	XORQ BX, BX
gchunk:
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	CHUNK
g2:
	LEAQ        32(BX), AX
	CMPQ        AX, CX
	JGT         g1
	GRAD(0, K7, K2, Z2, Z6, Z8, g2a, g2b)
	GRAD(64, K7, K3, Z3, Z7, Z9, g2c, g2d)
	VADDPS      Z6, Z0, Z0
	VADDPS      Z7, Z1, Z1
	VFMADD231PS Z8, Z6, Z4
	VFMADD231PS Z9, Z7, Z5
	MOVQ        AX, BX
	JMP         g2
g1:
	CMPQ        BX, CX
	JGE         gend
	GRAD(0, K7, K2, Z2, Z6, Z8, g1a, g1b)
	VADDPS      Z6, Z0, Z0
	VFMADD231PS Z8, Z6, Z4
	ADDQ        $16, BX
	JMP         g1
gend:
	CMPQ        BX, R12
	JLT         gflush
	GRAD(0, K1, K2, Z2, Z6, Z8, gta, gtb)
	VADDPS      Z6, Z1, Z1
	VFMADD231PS Z8, Z6, Z5
gflush:
	VADDPS Z1, Z0, Z0
	VADDPS Z5, Z4, Z4
	FLUSH(Z0, Y0, Z16, Z17)
	FLUSH(Z4, Y4, Z18, Z19)
	CMPQ   BX, R12
	JLT    gchunk
	ADDQ   R8, SI
	ADDQ   R8, DX
	ADDQ   R8, R9
	DECQ   R10
	JNZ    grow

	REDUCE(Z16, Z17)
	VMOVSD X0, sumG+72(FP)
	REDUCE(Z18, Z19)
	VMOVSD X0, sumGXc+80(FP)
	VZEROUPPER
	RET

// APPLY stores dx = ((k·g) + (xs·d)) + shift for the vector at off under
// mask k, rounding after each operation (k, xs, shift in Z29, Z28, Z27),
// g and d from GRAD.
#define APPLY(off, k, g, d) \
	VMULPS  Z28, d, d; \
	VMULPS  Z29, g, g; \
	VADDPS  d, g, g; \
	VADDPS  Z27, g, g; \
	VMOVUPS g, k, off(DI)(BX*4)

// func gradApplyAVX512(dx, dy, out, x *float32, ld, rows, cols, act int, k, m, xs, shift, lo, hi float32)
TEXT ·gradApplyAVX512(SB), NOSPLIT, $0-88
	MOVQ dx+0(FP), DI
	MOVQ dy+8(FP), SI
	MOVQ out+16(FP), DX
	MOVQ x+24(FP), R9
	MOVQ ld+32(FP), R8
	SHLQ $2, R8
	MOVQ rows+40(FP), R10
	MOVQ cols+48(FP), R11
	MOVQ act+56(FP), R13
	VBROADCASTSS k+64(FP), Z29
	VBROADCASTSS m+68(FP), Z30
	VBROADCASTSS xs+72(FP), Z28
	VBROADCASTSS shift+76(FP), Z27
	VBROADCASTSS lo+80(FP), Z31
	VBROADCASTSS hi+84(FP), Z26
	SETUP

arow:
	XORQ BX, BX
a2:
	LEAQ 32(BX), AX
	CMPQ AX, R12
	JGT  a1
	GRAD(0, K7, K2, Z2, Z6, Z8, a2a, a2b)
	GRAD(64, K7, K3, Z3, Z7, Z9, a2c, a2d)
	APPLY(0, K7, Z6, Z8)
	APPLY(64, K7, Z7, Z9)
	MOVQ AX, BX
	JMP  a2
a1:
	CMPQ BX, R12
	JGE  aend
	GRAD(0, K7, K2, Z2, Z6, Z8, a1a, a1b)
	APPLY(0, K7, Z6, Z8)
	ADDQ $16, BX
	JMP  a1
aend:
	GRAD(0, K1, K2, Z2, Z6, Z8, ata, atb)
	APPLY(0, K1, Z6, Z8)
	ADDQ R8, DI
	ADDQ R8, SI
	ADDQ R8, DX
	ADDQ R8, R9
	DECQ R10
	JNZ  arow
	VZEROUPPER
	RET
