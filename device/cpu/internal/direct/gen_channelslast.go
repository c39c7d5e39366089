//go:build ignore

// gen_channelslast writes channelslast_amd64.s, the AVX-512 kernel of
// RowChannelsLast (channelslast.go): go generate, or go run
// gen_channelslast.go, in this directory. The kernel's steps over groups of
// 8, 4 and 1 positions are the same code for different numbers of
// accumulators, written here once.
package main

import (
	"bytes"
	"fmt"
	"os"
)

var b bytes.Buffer

// p writes one instruction line.
func p(format string, args ...any) { fmt.Fprintf(&b, "\t"+format+"\n", args...) }

func label(s string) { fmt.Fprintf(&b, "%s:\n", s) }

// Memory operands: position k of a group's input (R12 is its first
// position, R9 its fifth; R13 bytes between positions, SI three of those)
// and output (R12 and DI; R14 bytes between positions, R9 three of those).
var (
	inAddr  = []string{"(R12)", "(R12)(R13*1)", "(R12)(R13*2)", "(R12)(SI*1)", "(R9)", "(R9)(R13*1)", "(R9)(R13*2)", "(R9)(SI*1)"}
	outAddr = []string{"(R12)", "(R12)(R14*1)", "(R12)(R14*2)", "(R12)(R9*1)", "(DI)", "(DI)(R14*1)", "(DI)(R14*2)", "(DI)(R9*1)"}
)

// wideBias is the register of whole block c's bias in wide steps.
func wideBias(c int) int {
	if c == 0 {
		return 29
	}
	return 24 - c
}

// wide writes the step of a group of n positions over blocks whole
// blocks of 16 channels at a time (n·blocks accumulators, unmasked), taken
// while at least 16·blocks channels are left.
func wide(n, blocks int, name string) {
	label(name)
	p("MOVQ channels+80(FP), R9")
	p("SUBQ DX, R9")
	p("CMPQ R9, $%d", 16*blocks)
	p("JLT  %sDone", name)
	p("MOVQ bias+24(FP), R9")
	for c := range blocks {
		p("VMOVUPS %d(R9)(DX*4), Z%d", 64*c, wideBias(c))
	}
	for k := range n * blocks {
		p("VXORPS Z%d, Z%d, Z%d", k, k, k)
	}
	p("XORQ R15, R15")
	b.WriteString("\n")
	label(name + "Tap")
	p("MOVQ (R11)(R15*8), R9")
	p("ADDQ DX, R9")
	p("LEAQ (R8)(R9*4), R9")
	for c := range blocks {
		p("VMOVUPS %d(R9), Z%d", 64*c, 16+c)
	}
	p("MOVQ (R10)(R15*8), R12")
	p("ADDQ DX, R12")
	p("LEAQ (CX)(R12*4), R12")
	for k := range n {
		for c := range blocks {
			p("VFMADD231PS %d%s, Z%d, Z%d", 64*c, inAddr[k], 16+c, k*blocks+c)
		}
	}
	p("INCQ R15")
	p("CMPQ R15, ntaps+48(FP)")
	p("JLT  %sTap", name)
	b.WriteString("\n")
	for k := range n {
		for c := range blocks {
			z := k*blocks + c
			p("VADDPS Z%d, Z%d, Z%d", wideBias(c), z, z)
			p("VMAXPS Z%d, Z30, Z%d", z, z)
			p("VMINPS Z%d, Z31, Z%d", z, z)
		}
	}
	p("LEAQ (BX)(DX*4), R12")
	p("LEAQ (R14)(R14*2), R9")
	for k := range n {
		for c := range blocks {
			p("VMOVUPS Z%d, %d%s", k*blocks+c, 64*c, outAddr[k])
		}
	}
	p("ADDQ $%d, DX", 16*blocks)
	p("JMP  %s", name)
	b.WriteString("\n")
	label(name + "Done")
}

// group writes the step over groups of n positions (8, 4 or 1): first the
// wide step (blocks > 0), then one block of 16 channels at a time, the last
// one masked.
func group(n int, name, next string, blocks int) {
	label(name)
	p("CMPQ AX, $%d", n)
	p("JLT  %s", next)
	p("XORQ DX, DX")
	if blocks > 0 {
		wide(n, blocks, name+"Wide")
	}
	b.WriteString("\n")
	label(name + "Block")
	p("MOVQ  channels+80(FP), R9")
	p("SUBQ  DX, R9")
	p("JLE   %sNext", name)
	p("KMOVW K3, K1")
	p("CMPQ  R9, $16")
	p("JGE   %sWhole", name)
	p("KMOVW K2, K1")
	b.WriteString("\n")
	label(name + "Whole")
	if n == 8 {
		p("// Prefetch the next group's inputs of the last tap (the row")
		p("// below, which the rows above have not read yet).")
		p("MOVQ       ntaps+48(FP), R9")
		p("MOVQ       -8(R10)(R9*8), R12")
		p("ADDQ       DX, R12")
		p("LEAQ       (CX)(R12*4), R12")
		p("LEAQ       (R12)(R13*8), R12")
		p("LEAQ       (R12)(R13*4), R9")
		for _, a := range inAddr {
			p("PREFETCHT0 %s", a)
		}
	}
	p("MOVQ      bias+24(FP), R9")
	p("VMOVUPS.Z (R9)(DX*4), K1, Z29")
	for k := range n {
		p("VXORPS    Z%d, Z%d, Z%d", k, k, k)
	}
	p("XORQ      R15, R15")
	b.WriteString("\n")
	label(name + "Tap")
	p("MOVQ        (R11)(R15*8), R9")
	p("ADDQ        DX, R9")
	p("VMOVUPS.Z   (R8)(R9*4), K1, Z16")
	p("MOVQ        (R10)(R15*8), R12")
	p("ADDQ        DX, R12")
	p("LEAQ        (CX)(R12*4), R12")
	if n == 8 {
		p("LEAQ        (R12)(R13*4), R9")
	}
	for k := range n {
		p("VMOVUPS.Z   %s, K1, Z%d", inAddr[k], 8+k)
	}
	for k := range n {
		p("VFMADD231PS Z%d, Z16, Z%d", 8+k, k)
	}
	p("INCQ        R15")
	p("CMPQ        R15, ntaps+48(FP)")
	p("JLT         %sTap", name)
	b.WriteString("\n")
	for k := range n {
		p("VADDPS  Z29, Z%d, Z%d", k, k)
	}
	for k := range n {
		p("VMAXPS  Z%d, Z30, Z%d", k, k)
	}
	for k := range n {
		p("VMINPS  Z%d, Z31, Z%d", k, k)
	}
	p("LEAQ    (BX)(DX*4), R12")
	if n >= 4 {
		p("LEAQ    (R14)(R14*2), R9")
	}
	if n == 8 {
		p("LEAQ    (R12)(R14*4), DI")
	}
	for k := range n {
		p("VMOVUPS Z%d, K1, %s", k, outAddr[k])
	}
	p("ADDQ    $16, DX")
	p("JMP     %sBlock", name)
	b.WriteString("\n")
	label(name + "Next")
	switch n {
	case 8:
		p("LEAQ (BX)(R14*8), BX")
		p("LEAQ (CX)(R13*8), CX")
	case 4:
		p("LEAQ (BX)(R14*4), BX")
		p("LEAQ (CX)(R13*4), CX")
	default:
		p("ADDQ R14, BX")
		p("ADDQ R13, CX")
	}
	p("SUBQ $%d, AX", n)
	p("JMP  %s", name)
	b.WriteString("\n")
}

func main() {
	b.WriteString(head)
	group(8, "eight", "four", 0)
	group(4, "four", "one", 2)
	group(1, "one", "done", 4)
	label("done")
	p("VZEROUPPER")
	p("RET")
	if err := os.WriteFile("channelslast_amd64.s", b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// head is the file's start: the comment and the kernel's prologue.
const head = `// Code generated by gen_channelslast.go; DO NOT EDIT.

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

`
