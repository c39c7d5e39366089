//go:build ignore

// gen_channelslast writes channelslast_amd64.s and
// channelslast_avx2_amd64.s, the AVX-512 and AVX2 kernels of
// RowChannelsLast (channelslast.go): go generate, or go run
// gen_channelslast.go, in this directory. Each kernel's steps over groups
// of positions are the same code for different numbers of accumulators,
// written here once.
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
	write("channelslast_amd64.s")

	b.WriteString(headAVX2)
	avx2Group(4, 2, "four", "one")
	avx2Group(1, 4, "one", "done")
	label("done")
	p("VZEROUPPER")
	p("RET")
	write("channelslast_avx2_amd64.s")
}

// write writes the kernel in b to file and empties b.
func write(file string) {
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b.Reset()
}

// avx2Group writes the AVX2 kernel's step over groups of n positions (4
// or 1): the channels 8·wide at a time while that many are left (n·wide
// accumulators), then 8 at a time (n), the last cols mod 8 left to Go.
func avx2Group(n, wide int, name, next string) {
	label(name)
	p("CMPQ AX, $%d", n)
	p("JLT  %s", next)
	p("XORQ DX, DX")
	bias := 12 // the bias's registers: Y12, Y13 for groups of four
	if n == 1 {
		bias = 4 // Y4…Y7: a single position's four vectors leave them free
	}
	for _, c := range []struct {
		vectors int
		sub     string
	}{{wide, "Wide"}, {1, "Half"}} {
		l := name + c.sub
		label(l)
		p("MOVQ channels+80(FP), R9")
		p("SUBQ DX, R9")
		p("CMPQ R9, $%d", 8*c.vectors)
		p("JLT  %sDone", l)
		p("MOVQ bias+24(FP), R9")
		for h := range c.vectors {
			p("VMOVUPS %d(R9)(DX*4), Y%d", 32*h, bias+h)
		}
		for k := range n * c.vectors {
			p("VXORPS Y%d, Y%d, Y%d", k, k, k)
		}
		p("XORQ R15, R15")
		label(l + "Tap")
		p("MOVQ (R11)(R15*8), R9")
		p("ADDQ DX, R9")
		p("LEAQ (R8)(R9*4), R9")
		for h := range c.vectors {
			p("VMOVUPS %d(R9), Y%d", 32*h, 8+h)
		}
		p("MOVQ (R10)(R15*8), R12")
		p("ADDQ DX, R12")
		p("LEAQ (CX)(R12*4), R12")
		for k := range n {
			for h := range c.vectors {
				p("VFMADD231PS %d%s, Y%d, Y%d", 32*h, inAddr[k], 8+h, k*c.vectors+h)
			}
		}
		p("INCQ R15")
		p("CMPQ R15, ntaps+48(FP)")
		p("JLT  %sTap", l)
		for k := range n {
			for h := range c.vectors {
				y := k*c.vectors + h
				p("VADDPS Y%d, Y%d, Y%d", bias+h, y, y)
				p("VMAXPS Y%d, Y14, Y%d", y, y)
				p("VMINPS Y%d, Y15, Y%d", y, y)
			}
		}
		p("LEAQ (BX)(DX*4), DI")
		if n == 4 {
			p("LEAQ (R14)(R14*2), R9")
		}
		for k := range n {
			for h := range c.vectors {
				p("VMOVUPS Y%d, %d%s", k*c.vectors+h, 32*h, avx2OutAddr[k])
			}
		}
		p("ADDQ $%d, DX", 8*c.vectors)
		p("JMP  %s", l)
		label(l + "Done")
	}
	if n == 4 {
		p("LEAQ (BX)(R14*4), BX")
		p("LEAQ (CX)(R13*4), CX")
	} else {
		p("ADDQ R14, BX")
		p("ADDQ R13, CX")
	}
	p("SUBQ $%d, AX", n)
	p("JMP  %s", name)
}

// avx2OutAddr are the output memory operands of the AVX2 kernel's
// positions: DI is the group's first output at the chunk's channel, R14
// bytes between positions, R9 three of those.
var avx2OutAddr = []string{"(DI)", "(DI)(R14*1)", "(DI)(R14*2)", "(DI)(R9*1)"}

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

// headAVX2 is the AVX2 kernel's file start: the comment and the prologue.
const headAVX2 = `// Code generated by gen_channelslast.go; DO NOT EDIT.

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

`
