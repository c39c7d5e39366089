//go:build ignore

// asmgen writes the assembly kernels of package vec and their Go glue:
//
//	zvec_amd64.s    AVX2 (+FMA) and AVX-512 kernels
//	zvec_amd64.go   their declarations and the dispatchers (amd64 && !noasm)
//	zvec_noasm.go   the dispatchers without assembly (!amd64 || noasm)
//
// Run it with `go generate` in this directory.
//
// Every kernel has the same skeleton: an unrolled main loop over U vectors,
// a loop over single vectors, and one masked vector for the n mod W
// remaining elements (W = 8 for AVX2, 16 for AVX-512), so the assembly
// handles every length itself. The masked loads (VMASKMOVPS, or VMOVUPS.Z
// with a K mask) never touch memory past the end of the slices.
//
// Registers: BX is the element index, R13 the loop limit, CX and AX scratch
// (CX holds the remainder for the mask), R12 the row length where there are
// rows, R11 the row count. The AVX2 tail mask lives in Y15, the AVX-512 one
// in K1. R14, R15 and BP are never used.
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"math"
	"os"
	"strings"
)

type isa struct {
	name string // suffix of the kernel names
	v    string // vector register prefix
	w    int    // float32 lanes
}

var (
	avx2   = isa{"AVX2", "Y", 8}
	avx512 = isa{"AVX512", "Z", 16}
)

type gen struct {
	isa
	b bytes.Buffer
}

func (g *gen) in(format string, a ...any) { fmt.Fprintf(&g.b, "\t"+format+"\n", a...) }
func (g *gen) label(l string)             { fmt.Fprintf(&g.b, "%s:\n", l) }
func (g *gen) r(i int) string             { return fmt.Sprintf("%s%d", g.v, i) }
func (g *gen) is512() bool                { return g.w == 16 }

// mem is the address of vector k after the current index BX in the array at ptr.
func (g *gen) mem(ptr string, k int) string { return fmt.Sprintf("%d(%s)(BX*4)", k*g.w*4, ptr) }

func (g *gen) ld(reg, ptr string, k int, masked bool) {
	m := g.mem(ptr, k)
	switch {
	case !masked:
		g.in("VMOVUPS %s, %s", m, reg)
	case g.is512():
		g.in("VMOVUPS.Z %s, K1, %s", m, reg)
	default:
		g.in("VMASKMOVPS %s, Y15, %s", m, reg)
	}
}

func (g *gen) st(reg, ptr string, k int, masked bool) {
	m := g.mem(ptr, k)
	switch {
	case !masked:
		g.in("VMOVUPS %s, %s", reg, m)
	case g.is512():
		g.in("VMOVUPS %s, K1, %s", reg, m)
	default:
		g.in("VMASKMOVPS %s, Y15, %s", reg, m)
	}
}

// src is an operand holding vector k of ptr: the memory itself, or (masked)
// tmp after a masked load.
func (g *gen) src(tmp, ptr string, k int, masked bool) string {
	if !masked {
		return g.mem(ptr, k)
	}
	g.ld(tmp, ptr, k, true)
	return tmp
}

func (g *gen) zero(reg string) {
	if g.is512() {
		g.in("VPXORD %s, %s, %s", reg, reg, reg)
	} else {
		g.in("VXORPS %s, %s, %s", reg, reg, reg)
	}
}

// mask sets the tail mask for CX (1 <= CX < W) lanes; clobbers AX and CX.
func (g *gen) mask() {
	if g.is512() {
		g.in("MOVL $1, AX")
		g.in("SHLL CX, AX")
		g.in("DECL AX")
		g.in("KMOVW AX, K1")
		return
	}
	g.in("NEGQ CX")
	g.in("ADDQ $8, CX")
	g.in("LEAQ maskTab<>(SB), AX")
	g.in("VMOVDQU (AX)(CX*4), Y15")
}

// loop emits the element loop over [BX, nreg): body(k, masked) handles vector
// k after BX (masked: the final partial vector, k == 0). BX must be set.
func (g *gen) loop(pfx, nreg string, unroll int, body func(k int, masked bool)) {
	w := g.w
	if unroll > 1 {
		g.in("MOVQ %s, R13", nreg)
		g.in("SUBQ $%d, R13", unroll*w)
		g.label(pfx + "u")
		g.in("CMPQ BX, R13")
		g.in("JGT %s1s", pfx)
		for k := 0; k < unroll; k++ {
			body(k, false)
		}
		g.in("ADDQ $%d, BX", unroll*w)
		g.in("JMP %su", pfx)
		g.label(pfx + "1s")
	}
	g.in("MOVQ %s, R13", nreg)
	g.in("SUBQ $%d, R13", w)
	g.label(pfx + "1")
	g.in("CMPQ BX, R13")
	g.in("JGT %st", pfx)
	body(0, false)
	g.in("ADDQ $%d, BX", w)
	g.in("JMP %s1", pfx)
	g.label(pfx + "t")
	g.in("MOVQ %s, CX", nreg)
	g.in("SUBQ BX, CX")
	g.in("JZ %sd", pfx)
	g.mask()
	body(0, true)
	g.label(pfx + "d")
}

// ---------------------------------------------------------------- functions

type param struct {
	name, typ string // typ: "*float32", "*sgdConsts", "*adamConsts", "float32", "int"
}

type fn struct {
	name   string  // dispatcher is name+"K", Go fallback name+"Go"
	params []param // of the assembly kernels
	ret    string  // "", "float32", "float64" or "int"
	disp   string  // dispatcher parameters
	call   string  // assembly kernel arguments, in terms of disp's
	gocall string  // Go fallback arguments
	doc    string
	emit   func(g *gen, f *frame)
}

// frame maps parameter names to their FP operands.
type frame struct {
	off  map[string]string
	args int // argument bytes
	ret  string
	size int
}

func newFrame(f *fn) *frame {
	fr := &frame{off: map[string]string{}}
	o := 0
	for _, p := range f.params {
		sz := 8
		if p.typ == "float32" {
			sz = 4
		}
		o = (o + sz - 1) / sz * sz
		fr.off[p.name] = fmt.Sprintf("%s+%d(FP)", p.name, o)
		o += sz
	}
	o = (o + 7) / 8 * 8
	fr.args = o
	fr.size = o
	switch f.ret {
	case "float32":
		fr.ret = fmt.Sprintf("ret+%d(FP)", o)
		fr.size += 4
	case "float64", "int":
		fr.ret = fmt.Sprintf("ret+%d(FP)", o)
		fr.size += 8
	}
	return fr
}

func (f *frame) at(name string) string { return f.off[name] }

func ps(spec string) []param {
	var out []param
	for _, group := range strings.Split(spec, ";") {
		fs := strings.Fields(strings.TrimSpace(group))
		typ := fs[len(fs)-1]
		for _, n := range fs[:len(fs)-1] {
			out = append(out, param{strings.TrimSuffix(n, ","), typ})
		}
	}
	return out
}

// Binary elementwise: dst, a, b; DI, SI, DX.
func binary(op string) func(g *gen, f *frame) { return binaryAct(op, false) }

// binaryAct is binary followed, with relu, by a ReLU (zero in r13) that
// keeps NaNs, as scalarOp's.
func binaryAct(op string, relu bool) func(g *gen, f *frame) {
	return func(g *gen, f *frame) {
		g.in("MOVQ %s, DI", f.at("dst"))
		g.in("MOVQ %s, SI", f.at("a"))
		g.in("MOVQ %s, DX", f.at("b"))
		g.in("MOVQ %s, R12", f.at("n"))
		if relu {
			g.zero(g.r(13))
		}
		g.in("XORQ BX, BX")
		g.loop("l", "R12", 4, func(k int, m bool) {
			t := g.r(k)
			g.ld(t, "SI", k, m)
			g.in("%s %s, %s, %s", op, g.src(g.r(k+4), "DX", k, m), t, t)
			if relu {
				g.in("VMAXPS %s, %s, %s", t, g.r(13), t)
			}
			g.st(t, "DI", k, m)
		})
	}
}

// Scalar elementwise: dst, a, s; op with the broadcast scalar in r14, then
// optional ReLU (zero in r13).
func scalarOp(op string, relu bool) func(g *gen, f *frame) {
	return func(g *gen, f *frame) {
		g.in("MOVQ %s, DI", f.at("dst"))
		g.in("MOVQ %s, SI", f.at("a"))
		g.in("MOVQ %s, R12", f.at("n"))
		g.in("VBROADCASTSS %s, %s", f.at("s"), g.r(14))
		g.zero(g.r(13))
		g.in("XORQ BX, BX")
		g.loop("l", "R12", 4, func(k int, m bool) {
			t := g.r(k)
			g.ld(t, "SI", k, m)
			g.in("%s %s, %s, %s", op, g.r(14), t, t)
			if relu {
				g.in("VMAXPS %s, %s, %s", t, g.r(13), t)
			}
			g.st(t, "DI", k, m)
		})
	}
}

// Scalar max or min with Go's NaN rule: dst = a > s (a < s for min) or
// a NaN ? a : s. Intel's VMAXPS(src1 = a, src2 = s) is a > s ? a : s, and
// gives s when either is NaN; a NaN a is then merged back in.
func maxMinScalar(op string) func(g *gen, f *frame) {
	return func(g *gen, f *frame) {
		g.in("MOVQ %s, DI", f.at("dst"))
		g.in("MOVQ %s, SI", f.at("a"))
		g.in("MOVQ %s, R12", f.at("n"))
		g.in("VBROADCASTSS %s, %s", f.at("s"), g.r(14))
		g.in("XORQ BX, BX")
		g.loop("l", "R12", 4, func(k int, m bool) {
			t, u := g.r(k), g.r(k+4)
			g.ld(t, "SI", k, m)
			g.in("%s %s, %s, %s", op, g.r(14), t, u)
			if g.is512() {
				g.in("VCMPPS $3, %s, %s, K2", t, t)
				g.in("VMOVAPS %s, K2, %s", t, u)
			} else {
				v := g.r(k + 8)
				g.in("VCMPPS $3, %s, %s, %s", t, t, v)
				g.in("VBLENDVPS %s, %s, %s, %s", v, t, u, u)
			}
			g.st(u, "DI", k, m)
		})
	}
}

// Clamp: dst = min(max(a (+ s), lo), hi) with the reference loop
// v := a[i] + s; if v < lo { v = lo }; if v > hi { v = hi }, so a NaN
// passes: Intel max(src1 = lo, src2 = v) = lo > v ? lo : v, and
// min(src1 = hi, src2 = v) = hi < v ? hi : v.
func clampOp(add bool) func(g *gen, f *frame) {
	return func(g *gen, f *frame) {
		g.in("MOVQ %s, DI", f.at("dst"))
		g.in("MOVQ %s, SI", f.at("a"))
		g.in("MOVQ %s, R12", f.at("n"))
		if add {
			g.in("VBROADCASTSS %s, %s", f.at("s"), g.r(14))
		}
		g.in("VBROADCASTSS %s, %s", f.at("lo"), g.r(13))
		g.in("VBROADCASTSS %s, %s", f.at("hi"), g.r(12))
		g.in("XORQ BX, BX")
		g.loop("l", "R12", 4, func(k int, m bool) {
			t := g.r(k)
			g.ld(t, "SI", k, m)
			if add {
				g.in("VADDPS %s, %s, %s", g.r(14), t, t)
			}
			g.in("VMAXPS %s, %s, %s", t, g.r(13), t)
			g.in("VMINPS %s, %s, %s", t, g.r(12), t)
			g.st(t, "DI", k, m)
		})
	}
}

func relu(g *gen, f *frame) {
	g.in("MOVQ %s, DI", f.at("dst"))
	g.in("MOVQ %s, SI", f.at("a"))
	g.in("MOVQ %s, R12", f.at("n"))
	g.zero(g.r(13))
	g.in("XORQ BX, BX")
	g.loop("l", "R12", 4, func(k int, m bool) {
		t := g.r(k)
		g.ld(t, "SI", k, m)
		// Intel order max(src1 = 0, src2 = t) = 0 > t ? 0 : t: NaN and -0 pass.
		g.in("VMAXPS %s, %s, %s", t, g.r(13), t)
		g.st(t, "DI", k, m)
	})
}

func reluGrad(g *gen, f *frame) {
	g.in("MOVQ %s, DI", f.at("dst"))
	g.in("MOVQ %s, SI", f.at("grad"))
	g.in("MOVQ %s, DX", f.at("y"))
	g.in("MOVQ %s, R12", f.at("n"))
	g.zero(g.r(13))
	g.in("XORQ BX, BX")
	g.loop("l", "R12", 4, func(k int, m bool) {
		t := g.r(k)
		g.ld(t, "DX", k, m)
		if g.is512() {
			// K2 = y > 0 (ordered, so NaN gives 0); masked lanes of the
			// tail are 0, so K2 is within K1 there.
			g.in("VCMPPS $0x1e, %s, %s, K2", g.r(13), t)
			g.in("VMOVUPS.Z %s, K2, %s", g.mem("SI", k), t)
		} else {
			g.in("VCMPPS $0x1e, %s, %s, %s", g.r(13), t, t)
			g.in("VANDPS %s, %s, %s", g.src(g.r(k+4), "SI", k, m), t, t)
		}
		g.st(t, "DI", k, m)
	})
}

// relu6Grad: dst = grad where 0 < y < 6, else 0, as the reference loop
// "if y <= 0 || y >= 6 { g = 0 }", so a NaN y passes its gradient.
func relu6Grad(g *gen, f *frame) {
	g.in("MOVQ %s, DI", f.at("dst"))
	g.in("MOVQ %s, SI", f.at("grad"))
	g.in("MOVQ %s, DX", f.at("y"))
	g.in("MOVQ %s, R12", f.at("n"))
	g.zero(g.r(13))
	g.in("MOVL $0x40c00000, AX") // 6.0
	g.in("MOVL AX, X12")
	g.in("VBROADCASTSS X12, %s", g.r(12))
	g.in("XORQ BX, BX")
	g.loop("l", "R12", 4, func(k int, m bool) {
		t := g.r(k)
		g.ld(t, "DX", k, m)
		if g.is512() {
			// K2 = y <= 0 or y >= 6 (ordered: false for NaN); K3 = the
			// lanes that keep their gradient, within K1 in the tail.
			g.in("VCMPPS $2, %s, %s, K2", g.r(13), t)
			g.in("VCMPPS $0x0d, %s, %s, K3", g.r(12), t)
			g.in("KORW K2, K3, K2")
			g.in("KNOTW K2, K3")
			if m {
				g.in("KANDW K1, K3, K3")
			}
			g.in("VMOVUPS.Z %s, K3, %s", g.mem("SI", k), t)
		} else {
			u := g.r(k + 4)
			g.in("VCMPPS $2, %s, %s, %s", g.r(13), t, u)
			g.in("VCMPPS $0x0d, %s, %s, %s", g.r(12), t, t)
			g.in("VORPS %s, %s, %s", u, t, t)
			// t = ^(y <= 0 or y >= 6) & grad
			g.in("VANDNPS %s, %s, %s", g.src(g.r(k+8), "SI", k, m), t, t)
		}
		g.st(t, "DI", k, m)
	})
}

// sumSqDev: Σ (a-m)² with float32 FMA into eight accumulators r0..r7,
// reduced in float64; the tail's masked lanes are zeroed after the
// subtraction (they would hold -m).
func sumSqDev(g *gen, f *frame) {
	g.in("MOVQ %s, SI", f.at("a"))
	g.in("MOVQ %s, R12", f.at("n"))
	g.in("VBROADCASTSS %s, %s", f.at("m"), g.r(14))
	for i := 0; i < 8; i++ {
		g.zero(g.r(i))
	}
	g.in("XORQ BX, BX")
	g.loop("l", "R12", 8, func(k int, m bool) {
		t := g.r(8 + k%4)
		g.ld(t, "SI", k, m)
		g.in("VSUBPS %s, %s, %s", g.r(14), t, t)
		if m {
			if g.is512() {
				g.in("VMOVAPS.Z %s, K1, %s", t, t)
			} else {
				g.in("VANDPS Y15, %s, %s", t, t)
			}
		}
		g.in("VFMADD231PS %s, %s, %s", t, t, g.r(k))
	})
	g.reduce8PS(f)
}

// dotDev: Σ b·(a-m), as dot with a-m in place of a (the tail's masked
// lanes of b are 0, so those of a-m do not count).
func dotDev(g *gen, f *frame) {
	g.in("MOVQ %s, SI", f.at("a"))
	g.in("MOVQ %s, DX", f.at("b"))
	g.in("MOVQ %s, R12", f.at("n"))
	g.in("VBROADCASTSS %s, %s", f.at("m"), g.r(14))
	for i := 0; i < 8; i++ {
		g.zero(g.r(i))
	}
	g.in("XORQ BX, BX")
	g.loop("l", "R12", 8, func(k int, m bool) {
		t := g.r(8 + k%4)
		g.ld(t, "SI", k, m)
		g.in("VSUBPS %s, %s, %s", g.r(14), t, t)
		g.in("VFMADD231PS %s, %s, %s", g.src(g.r(12), "DX", k, m), t, g.r(k))
	})
	g.reduce8PS(f)
}

// scaleShift: dst = (a-m)·s + b, three roundings as the reference loop.
func scaleShift(g *gen, f *frame) {
	g.in("MOVQ %s, DI", f.at("dst"))
	g.in("MOVQ %s, SI", f.at("a"))
	g.in("MOVQ %s, R12", f.at("n"))
	g.in("VBROADCASTSS %s, %s", f.at("m"), g.r(14))
	g.in("VBROADCASTSS %s, %s", f.at("s"), g.r(13))
	g.in("VBROADCASTSS %s, %s", f.at("b"), g.r(12))
	g.in("XORQ BX, BX")
	g.loop("l", "R12", 4, func(k int, m bool) {
		t := g.r(k)
		g.ld(t, "SI", k, m)
		g.in("VSUBPS %s, %s, %s", g.r(14), t, t)
		g.in("VMULPS %s, %s, %s", g.r(13), t, t)
		g.in("VADDPS %s, %s, %s", g.r(12), t, t)
		g.st(t, "DI", k, m)
	})
}

// affineDev: dst = (gs·g + xs·(x-m)) + c, rounded after each operation as
// the reference loop.
func affineDev(g *gen, f *frame) {
	g.in("MOVQ %s, DI", f.at("dst"))
	g.in("MOVQ %s, SI", f.at("grad"))
	g.in("MOVQ %s, DX", f.at("x"))
	g.in("MOVQ %s, R12", f.at("n"))
	g.in("VBROADCASTSS %s, %s", f.at("gs"), g.r(8))
	g.in("VBROADCASTSS %s, %s", f.at("m"), g.r(9))
	g.in("VBROADCASTSS %s, %s", f.at("xs"), g.r(10))
	g.in("VBROADCASTSS %s, %s", f.at("c"), g.r(11))
	g.in("XORQ BX, BX")
	g.loop("l", "R12", 4, func(k int, m bool) {
		t, u := g.r(k), g.r(k+4)
		g.ld(t, "DX", k, m)
		g.in("VSUBPS %s, %s, %s", g.r(9), t, t)
		g.in("VMULPS %s, %s, %s", g.r(10), t, t)
		g.ld(u, "SI", k, m)
		g.in("VMULPS %s, %s, %s", g.r(8), u, u)
		g.in("VADDPS %s, %s, %s", t, u, u)
		g.in("VADDPS %s, %s, %s", g.r(11), u, u)
		g.st(u, "DI", k, m)
	})
}

func axpy(g *gen, f *frame) {
	g.in("MOVQ %s, DI", f.at("dst"))
	g.in("MOVQ %s, SI", f.at("x"))
	g.in("MOVQ %s, R12", f.at("n"))
	g.in("VBROADCASTSS %s, %s", f.at("alpha"), g.r(14))
	g.in("XORQ BX, BX")
	g.loop("l", "R12", 4, func(k int, m bool) {
		t := g.r(k)
		g.ld(t, "DI", k, m)
		g.in("VFMADD231PS %s, %s, %s", g.src(g.r(k+4), "SI", k, m), g.r(14), t)
		g.st(t, "DI", k, m)
	})
}

// addRows: for each of rows rows of n, dst = a + row (then ReLU).
func addRows(relu bool) func(g *gen, f *frame) {
	return func(g *gen, f *frame) {
		g.in("MOVQ %s, DI", f.at("dst"))
		g.in("MOVQ %s, SI", f.at("a"))
		g.in("MOVQ %s, DX", f.at("row"))
		g.in("MOVQ %s, R11", f.at("rows"))
		g.in("MOVQ %s, R12", f.at("n"))
		g.zero(g.r(13))
		g.label("row")
		g.in("TESTQ R11, R11")
		g.in("JZ done")
		g.in("XORQ BX, BX")
		g.loop("l", "R12", 4, func(k int, m bool) {
			t := g.r(k)
			g.ld(t, "SI", k, m)
			g.in("VADDPS %s, %s, %s", g.src(g.r(k+4), "DX", k, m), t, t)
			if relu {
				g.in("VMAXPS %s, %s, %s", t, g.r(13), t)
			}
			g.st(t, "DI", k, m)
		})
		g.in("LEAQ (SI)(R12*4), SI")
		g.in("LEAQ (DI)(R12*4), DI")
		g.in("DECQ R11")
		g.in("JMP row")
		g.label("done")
	}
}

// sumRows: dst[j] += Σ_i a[i*n+j], four rows at a time:
// dst + ((a0 + a1) + (a2 + a3)).
func sumRows(g *gen, f *frame) {
	g.in("MOVQ %s, DI", f.at("dst"))
	g.in("MOVQ %s, SI", f.at("a"))
	g.in("MOVQ %s, R11", f.at("rows"))
	g.in("MOVQ %s, R12", f.at("n"))
	g.in("MOVQ R12, R10")
	g.in("SHLQ $2, R10")
	g.label("grp4")
	g.in("CMPQ R11, $4")
	g.in("JLT grp1")
	g.in("LEAQ (SI)(R10*1), R8")
	g.in("LEAQ (R8)(R10*1), R9")
	g.in("LEAQ (R9)(R10*1), DX")
	g.in("XORQ BX, BX")
	g.loop("f", "R12", 4, func(k int, m bool) {
		t0, t1, tmp := g.r(k), g.r(k+4), g.r(k+8)
		g.ld(t0, "SI", k, m)
		g.in("VADDPS %s, %s, %s", g.src(tmp, "R8", k, m), t0, t0)
		g.ld(t1, "R9", k, m)
		g.in("VADDPS %s, %s, %s", g.src(tmp, "DX", k, m), t1, t1)
		g.in("VADDPS %s, %s, %s", t1, t0, t0)
		g.in("VADDPS %s, %s, %s", g.src(tmp, "DI", k, m), t0, t0)
		g.st(t0, "DI", k, m)
	})
	g.in("LEAQ (DX)(R10*1), SI")
	g.in("SUBQ $4, R11")
	g.in("JMP grp4")
	g.label("grp1")
	g.in("TESTQ R11, R11")
	g.in("JZ done")
	g.in("XORQ BX, BX")
	g.loop("o", "R12", 4, func(k int, m bool) {
		t0, tmp := g.r(k), g.r(k+4)
		g.ld(t0, "SI", k, m)
		g.in("VADDPS %s, %s, %s", g.src(tmp, "DI", k, m), t0, t0)
		g.st(t0, "DI", k, m)
	})
	g.in("ADDQ R10, SI")
	g.in("DECQ R11")
	g.in("JMP grp1")
	g.label("done")
}

// hsumPD reduces the float64 lanes of r(0) into X0 (clobbers r(1)).
func (g *gen) hsumPD() {
	if g.is512() {
		g.in("VEXTRACTF64X4 $1, Z0, Y1")
		g.in("VADDPD Y1, Y0, Y0")
	}
	g.in("VEXTRACTF128 $1, Y0, X1")
	g.in("VADDPD X1, X0, X0")
	g.in("VPERMILPD $1, X0, X1")
	g.in("VADDSD X1, X0, X0")
}

// hsumPS reduces the float32 lanes of r(0) into X0 as float64 (clobbers
// r(1), r(2)).
func (g *gen) hsumPStoPD() {
	if g.is512() {
		g.in("VEXTRACTF64X4 $1, Z0, Y2")
		g.in("VCVTPS2PD Y0, Z1")
		g.in("VCVTPS2PD Y2, Z2")
		g.in("VADDPD Z2, Z1, Z0")
	} else {
		g.in("VEXTRACTF128 $1, Y0, X2")
		g.in("VCVTPS2PD X0, Y1")
		g.in("VCVTPS2PD X2, Y2")
		g.in("VADDPD Y2, Y1, Y0")
	}
	g.hsumPD()
}

// sum: float64 accumulation in eight vectors r0..r7.
func sum(g *gen, f *frame) {
	g.in("MOVQ %s, SI", f.at("a"))
	g.in("MOVQ %s, R12", f.at("n"))
	for i := 0; i < 8; i++ {
		g.zero(g.r(i))
	}
	g.in("XORQ BX, BX")
	half := g.w / 2 // floats per converted half
	g.loop("l", "R12", 4, func(k int, m bool) {
		a0, a1 := g.r(2*k), g.r(2*k+1)
		t0, t1 := g.r(8+2*(k%2)), g.r(9+2*(k%2))
		if !m {
			base := k * g.w * 4
			g.in("VCVTPS2PD %d(SI)(BX*4), %s", base, t0)
			g.in("VCVTPS2PD %d(SI)(BX*4), %s", base+half*4, t1)
		} else {
			x := g.r(12)
			g.ld(x, "SI", 0, true)
			if g.is512() {
				g.in("VEXTRACTF64X4 $1, Z12, Y13")
				g.in("VCVTPS2PD Y12, %s", t0)
				g.in("VCVTPS2PD Y13, %s", t1)
			} else {
				g.in("VEXTRACTF128 $1, Y12, X13")
				g.in("VCVTPS2PD X12, %s", t0)
				g.in("VCVTPS2PD X13, %s", t1)
			}
		}
		g.in("VADDPD %s, %s, %s", t0, a0, a0)
		g.in("VADDPD %s, %s, %s", t1, a1, a1)
	})
	g.in("VADDPD %s, %s, %s", g.r(1), g.r(0), g.r(0))
	g.in("VADDPD %s, %s, %s", g.r(3), g.r(2), g.r(2))
	g.in("VADDPD %s, %s, %s", g.r(5), g.r(4), g.r(4))
	g.in("VADDPD %s, %s, %s", g.r(7), g.r(6), g.r(6))
	g.in("VADDPD %s, %s, %s", g.r(2), g.r(0), g.r(0))
	g.in("VADDPD %s, %s, %s", g.r(6), g.r(4), g.r(4))
	g.in("VADDPD %s, %s, %s", g.r(4), g.r(0), g.r(0))
	g.hsumPD()
	g.in("MOVSD X0, %s", f.ret)
}

// reduce8PS adds the float32 accumulators r0..r7 pairwise, reduces the
// lanes in float64 and stores the float64 result.
func (g *gen) reduce8PS(f *frame) {
	for _, p := range [][2]int{{1, 0}, {3, 2}, {5, 4}, {7, 6}, {2, 0}, {6, 4}, {4, 0}} {
		g.in("VADDPS %s, %s, %s", g.r(p[0]), g.r(p[1]), g.r(p[1]))
	}
	g.hsumPStoPD()
	g.in("MOVSD X0, %s", f.ret)
}

// dot: float32 FMA into eight accumulators r0..r7, reduced in float64.
func dot(g *gen, f *frame) {
	g.in("MOVQ %s, SI", f.at("a"))
	g.in("MOVQ %s, DX", f.at("b"))
	g.in("MOVQ %s, R12", f.at("n"))
	for i := 0; i < 8; i++ {
		g.zero(g.r(i))
	}
	g.in("XORQ BX, BX")
	g.loop("l", "R12", 8, func(k int, m bool) {
		t := g.r(8 + k%4)
		g.ld(t, "SI", k, m)
		g.in("VFMADD231PS %s, %s, %s", g.src(g.r(12), "DX", k, m), t, g.r(k))
	})
	g.reduce8PS(f)
}

// max: four accumulators r0..r3 from -Inf, NaN detection on the side (K3 or
// r12), since VMAXPS does not propagate NaN from both operands.
func maxK(g *gen, f *frame) {
	g.in("MOVQ %s, SI", f.at("a"))
	g.in("MOVQ %s, R12", f.at("n"))
	g.in("VBROADCASTSS negInf<>(SB), %s", g.r(14))
	for i := 0; i < 4; i++ {
		g.in("VMOVAPS %s, %s", g.r(14), g.r(i))
	}
	if g.is512() {
		g.in("KXORW K3, K3, K3")
	} else {
		g.zero(g.r(12))
	}
	g.in("XORQ BX, BX")
	g.loop("l", "R12", 4, func(k int, m bool) {
		t, u := g.r(4+k), g.r(8+k)
		g.ld(t, "SI", k, m)
		if g.is512() {
			g.in("VCMPPS $3, %s, %s, K2", t, t)
			g.in("KORW K2, K3, K3")
			if m {
				g.in("VMAXPS %s, %s, K1, %s", t, g.r(k), g.r(k))
			} else {
				g.in("VMAXPS %s, %s, %s", t, g.r(k), g.r(k))
			}
		} else {
			if m {
				g.in("VBLENDVPS Y15, %s, Y14, %s", t, t)
			}
			g.in("VCMPPS $3, %s, %s, %s", t, t, u)
			g.in("VORPS %s, Y12, Y12", u)
			g.in("VMAXPS %s, %s, %s", t, g.r(k), g.r(k))
		}
	})
	g.in("VMAXPS %s, %s, %s", g.r(1), g.r(0), g.r(0))
	g.in("VMAXPS %s, %s, %s", g.r(3), g.r(2), g.r(2))
	g.in("VMAXPS %s, %s, %s", g.r(2), g.r(0), g.r(0))
	if g.is512() {
		g.in("VEXTRACTF64X4 $1, Z0, Y1")
		g.in("VMAXPS Y1, Y0, Y0")
	}
	g.in("VEXTRACTF128 $1, Y0, X1")
	g.in("VMAXPS X1, X0, X0")
	g.in("VPERMILPS $0x4e, X0, X1")
	g.in("VMAXPS X1, X0, X0")
	g.in("VPERMILPS $0xb1, X0, X1")
	g.in("VMAXPS X1, X0, X0")
	g.in("MOVSS X0, %s", f.ret)
	if g.is512() {
		g.in("KORTESTW K3, K3")
	} else {
		g.in("VPTEST Y12, Y12")
	}
	g.in("JZ done")
	g.in("MOVL $0x7fc00000, %s", f.ret)
	g.label("done")
}

// index returns the first i with a[i] == v (nan == 0) or a[i] NaN (nan != 0),
// or -1.
func index(g *gen, f *frame) {
	g.in("MOVQ %s, SI", f.at("a"))
	g.in("MOVQ %s, R12", f.at("n"))
	g.in("VBROADCASTSS %s, %s", f.at("v"), g.r(14))
	g.in("MOVQ %s, R11", f.at("nan"))
	g.in("XORQ BX, BX")
	var found []string
	for _, mode := range []string{"eq", "nan"} {
		g.label(mode)
		if mode == "eq" {
			g.in("TESTQ R11, R11")
			g.in("JNZ nan")
		}
		g.in("XORQ BX, BX")
		g.loop(mode+"_", "R12", 4, func(k int, m bool) {
			t := g.r(k)
			g.ld(t, "SI", k, m)
			pred, b := "$0", g.r(14) // EQ_OQ against v
			if mode == "nan" {
				pred, b = "$3", t // UNORD_Q with itself
			}
			if g.is512() {
				g.in("VCMPPS %s, %s, %s, K2", pred, b, t)
				if m {
					g.in("KANDW K1, K2, K2")
				}
				g.in("KMOVW K2, AX")
			} else {
				g.in("VCMPPS %s, %s, %s, %s", pred, b, t, t)
				if m {
					g.in("VANDPS Y15, %s, %s", t, t)
				}
				g.in("VMOVMSKPS %s, AX", t)
			}
			g.in("TESTL AX, AX")
			lbl := fmt.Sprintf("found%d", len(found))
			g.in("JNZ %s", lbl)
			found = append(found, fmt.Sprintf("%s:\n\tBSFL AX, AX\n\tADDQ BX, AX\n\tADDQ $%d, AX\n\tMOVQ AX, %s\n\tVZEROUPPER\n\tRET\n", lbl, k*g.w, f.ret))
		})
		g.in("JMP none")
	}
	g.label("none")
	g.in("MOVQ $-1, %s", f.ret)
	g.in("VZEROUPPER")
	g.in("RET")
	for _, l := range found {
		g.b.WriteString(l)
	}
}

// Exp constants, in order (float32 bit patterns; bias is an int32).
var expConsts = []struct {
	name string
	bits uint32
}{
	{"lo", math.Float32bits(-104)},
	{"hi", math.Float32bits(88.8)},
	{"log2e", math.Float32bits(math.Log2E)},
	{"ln2hi", math.Float32bits(float32(math.Ln2))},
	{"ln2lo", math.Float32bits(float32(math.Ln2 - float64(float32(math.Ln2))))},
	{"p5", math.Float32bits(1.9875691500e-4)},
	{"p4", math.Float32bits(1.3981999507e-3)},
	{"p3", math.Float32bits(8.3334519073e-3)},
	{"p2", math.Float32bits(4.1665795894e-2)},
	{"p1", math.Float32bits(1.6666665459e-1)},
	{"p0", math.Float32bits(5.0000001201e-1)},
	{"one", math.Float32bits(1)},
	{"bias", 127},
}

// erfConsts are the clamp bounds and the coefficients of erf's rational
// approximation x·P(x²)/Q(x²) on [-4, 4] (erfGo has the same form; beyond
// ±4, erf is ±1 in float32), each repeated over 32 bytes like expConsts.
var erfConsts = []struct {
	name string
	v    float32
}{
	{"lo", -4}, {"hi", 4},
	{"a13", -2.72614225801306e-10}, {"a11", 2.77068142495902e-08}, {"a9", -2.10102402082508e-06},
	{"a7", -5.69250639462346e-05}, {"a5", -7.34990630326855e-04}, {"a3", -2.95459980854025e-03},
	{"a1", -1.60960333262415e-02},
	{"b8", -1.45660718464996e-05}, {"b6", -2.13374055278905e-04}, {"b4", -1.68282697438203e-03},
	{"b2", -7.37332916720468e-03}, {"b0", -1.42647390514189e-02},
}

// erfK: dst = erf(a) by the rational approximation of erfConsts: the
// input clamped to [-4, 4] (a NaN passes), the odd numerator and the even
// denominator by Horner's rule with FMA, one division.
func erfK(g *gen, f *frame) {
	g.in("MOVQ %s, DI", f.at("dst"))
	g.in("MOVQ %s, SI", f.at("a"))
	g.in("MOVQ %s, R12", f.at("n"))
	cst := map[string]string{}
	unroll := 2
	if g.is512() {
		g.in("LEAQ erfTab<>(SB), AX")
		for i, c := range erfConsts {
			reg := g.r(16 + i)
			g.in("VBROADCASTSS %d(AX), %s", 32*i, reg)
			cst[c.name] = reg
		}
		unroll = 3
	} else {
		for i, c := range erfConsts {
			cst[c.name] = fmt.Sprintf("erfTab<>+%d(SB)", 32*i)
		}
		// The clamps' first operand must be a register.
		g.in("VMOVUPS %s, Y13", cst["lo"])
		g.in("VMOVUPS %s, Y14", cst["hi"])
		cst["lo"], cst["hi"] = "Y13", "Y14"
	}
	g.in("XORQ BX, BX")
	g.loop("l", "R12", unroll, func(k int, m bool) {
		x, x2, p, q := g.r(4*k), g.r(4*k+1), g.r(4*k+2), g.r(4*k+3)
		g.ld(x, "SI", k, m)
		g.in("VMAXPS %s, %s, %s", x, cst["lo"], x)
		g.in("VMINPS %s, %s, %s", x, cst["hi"], x)
		g.in("VMULPS %s, %s, %s", x, x, x2)
		g.in("VMOVUPS %s, %s", cst["a13"], p)
		for _, c := range []string{"a11", "a9", "a7", "a5", "a3", "a1"} {
			g.in("VFMADD213PS %s, %s, %s", cst[c], x2, p)
		}
		g.in("VMULPS %s, %s, %s", x, p, p)
		g.in("VMOVUPS %s, %s", cst["b8"], q)
		for _, c := range []string{"b6", "b4", "b2", "b0"} {
			g.in("VFMADD213PS %s, %s, %s", cst[c], x2, q)
		}
		g.in("VDIVPS %s, %s, %s", q, p, p)
		g.st(p, "DI", k, m)
	})
}

// exp: dst = exp(a [+ shift]) [and return the float32 sum of dst].
//
// x is clamped to [-104, 88.8] (NaN passes: it is the second source of
// VMAXPS/VMINPS), k = round(x·log2e), r = x - k·ln2 (two FMAs, ln2 split in
// hi+lo), exp(r) by a degree-7 polynomial (Cephes' expf coefficients) and the
// scaling by 2^k: VSCALEFPS for AVX-512, and for AVX2 two multiplications by
// 2^(k>>1) and 2^(k-(k>>1)), so that both factors are normal and subnormal
// results are rounded once.
func expK(shift, withSum bool) func(g *gen, f *frame) {
	return func(g *gen, f *frame) {
		g.in("MOVQ %s, DI", f.at("dst"))
		g.in("MOVQ %s, SI", f.at("a"))
		g.in("MOVQ %s, R12", f.at("n"))
		cst := map[string]string{}
		var unroll int
		var sh, acc string
		if g.is512() {
			g.in("LEAQ expTab<>(SB), AX")
			for i, c := range expConsts {
				reg := g.r(16 + i)
				g.in("VBROADCASTSS %d(AX), %s", 32*i, reg)
				cst[c.name] = reg
			}
			unroll, sh, acc = 3, "Z12", "Z13"
		} else {
			for i, c := range expConsts {
				cst[c.name] = fmt.Sprintf("expTab<>+%d(SB)", 32*i)
			}
			// Operands that must be registers.
			g.in("VMOVUPS %s, Y13", cst["lo"])
			g.in("VMOVUPS %s, Y14", cst["hi"])
			cst["lo"], cst["hi"] = "Y13", "Y14"
			unroll, sh, acc = 2, "Y12", "Y11"
		}
		if shift {
			g.in("VBROADCASTSS %s, %s", f.at("shift"), sh)
		}
		if withSum {
			g.zero(acc)
		}
		g.in("XORQ BX, BX")
		g.loop("l", "R12", unroll, func(k int, m bool) {
			x, n, p, s := g.r(4*k), g.r(4*k+1), g.r(4*k+2), g.r(4*k+3)
			g.ld(x, "SI", k, m)
			if shift {
				g.in("VADDPS %s, %s, %s", sh, x, x)
			}
			g.in("VMAXPS %s, %s, %s", x, cst["lo"], x)
			g.in("VMINPS %s, %s, %s", x, cst["hi"], x)
			g.in("VMULPS %s, %s, %s", cst["log2e"], x, n)
			if g.is512() {
				g.in("VRNDSCALEPS $0, %s, %s", n, n)
			} else {
				g.in("VROUNDPS $0, %s, %s", n, n)
			}
			g.in("VFNMADD231PS %s, %s, %s", cst["ln2hi"], n, x)
			g.in("VFNMADD231PS %s, %s, %s", cst["ln2lo"], n, x)
			g.in("VMOVUPS %s, %s", cst["p5"], p)
			for _, c := range []string{"p4", "p3", "p2", "p1", "p0", "one", "one"} {
				g.in("VFMADD213PS %s, %s, %s", cst[c], x, p)
			}
			if g.is512() {
				// p·2^n, rounded once (subnormals included), Inf on
				// overflow, 0 on underflow.
				g.in("VSCALEFPS %s, %s, %s", n, p, p)
				goto store
			}
			g.in("VCVTPS2DQ %s, %s", n, n)
			g.in("VPSRAD $1, %s, %s", n, s)
			g.in("VPSUBD %s, %s, %s", s, n, n)
			g.in("VPADDD %s, %s, %s", cst["bias"], s, s)
			g.in("VPADDD %s, %s, %s", cst["bias"], n, n)
			g.in("VPSLLD $23, %s, %s", s, s)
			g.in("VPSLLD $23, %s, %s", n, n)
			g.in("VMULPS %s, %s, %s", s, p, p)
			g.in("VMULPS %s, %s, %s", n, p, p)
		store:
			g.st(p, "DI", k, m)
			if withSum {
				switch {
				case !m:
					g.in("VADDPS %s, %s, %s", p, acc, acc)
				case g.is512():
					g.in("VADDPS %s, %s, K1, %s", p, acc, acc)
				default:
					g.in("VANDPS Y15, %s, %s", p, p)
					g.in("VADDPS %s, %s, %s", p, acc, acc)
				}
			}
		})
		if withSum {
			g.in("VMOVAPS %s, %s", acc, g.r(0))
			g.hsumPStoPD()
			g.in("VCVTSD2SS X0, X0, X0")
			g.in("MOVSS X0, %s", f.ret)
		}
	}
}

// sgd: one loop per variant (see sgdConsts and the sgd* bits in generic.go),
// the constants broadcast into r11..r14.
func sgd(g *gen, f *frame) {
	g.in("MOVQ %s, DI", f.at("param"))
	g.in("MOVQ %s, SI", f.at("grad"))
	g.in("MOVQ %s, DX", f.at("buf"))
	g.in("MOVQ %s, AX", f.at("c"))
	g.in("MOVQ %s, R12", f.at("n"))
	wd, mom, omd, neglr := g.r(11), g.r(12), g.r(13), g.r(14)
	for i, r := range []string{wd, mom, omd, neglr} {
		g.in("VBROADCASTSS %d(AX), %s", 4*i, r)
	}
	g.in("MOVQ %s, R11", f.at("variant"))
	var variants []int
	for v := 0; v < 16; v++ {
		if v&sgdMomentum == 0 && v&(sgdFirst|sgdNesterov) != 0 {
			continue
		}
		variants = append(variants, v)
		g.in("CMPQ R11, $%d", v)
		g.in("JEQ v%d", v)
	}
	g.in("JMP done")
	for _, v := range variants {
		g.label(fmt.Sprintf("v%d", v))
		g.in("XORQ BX, BX")
		g.loop(fmt.Sprintf("v%d_", v), "R12", 2, func(k int, m bool) {
			p, gr, b := g.r(5*k), g.r(5*k+1), g.r(5*k+2)
			g.ld(p, "DI", k, m)
			g.ld(gr, "SI", k, m)
			if v&sgdWD != 0 {
				g.in("VFMADD231PS %s, %s, %s", wd, p, gr) // g = p*wd + g
			}
			if v&sgdMomentum != 0 {
				if v&sgdFirst != 0 {
					g.st(gr, "DX", k, m)
					b = gr
				} else {
					g.ld(b, "DX", k, m)
					g.in("VMULPS %s, %s, %s", mom, b, b)
					g.in("VFMADD231PS %s, %s, %s", omd, gr, b) // b = g*omd + b
					g.st(b, "DX", k, m)
				}
				if v&sgdNesterov != 0 {
					g.in("VFMADD231PS %s, %s, %s", mom, b, gr) // g = b*mom + g
				} else {
					gr = b
				}
			}
			g.in("VFMADD231PS %s, %s, %s", neglr, gr, p) // p = g*(-lr) + p
			g.st(p, "DI", k, m)
		})
		g.in("JMP done")
	}
	g.label("done")
}

const (
	sgdWD       = 1
	sgdMomentum = 2
	sgdFirst    = 4
	sgdNesterov = 8
)

// adam: variant 0 multiplies param by c.wd first (decay), 1 adds c.wd*param
// to the gradient (L2). PyTorch 1.13's order of float32 operations.
func adam(g *gen, f *frame) {
	g.in("MOVQ %s, DI", f.at("param"))
	g.in("MOVQ %s, SI", f.at("grad"))
	g.in("MOVQ %s, DX", f.at("m"))
	g.in("MOVQ %s, R8", f.at("v"))
	g.in("MOVQ %s, AX", f.at("c"))
	g.in("MOVQ %s, R12", f.at("n"))
	names := []string{"b1", "omb1", "b2", "omb2", "bc2sqrt", "eps", "negStep", "wd"}
	c := map[string]string{}
	base, unroll := 16, 2
	if !g.is512() {
		base, unroll = 6, 1
	}
	for i, nm := range names {
		c[nm] = g.r(base + i)
		g.in("VBROADCASTSS %d(AX), %s", 4*i, c[nm])
	}
	g.in("MOVQ %s, R11", f.at("variant"))
	for _, v := range []int{0, 1} {
		g.label(fmt.Sprintf("v%d", v))
		if v == 0 {
			g.in("CMPQ R11, $0")
			g.in("JNE v1")
		}
		g.in("XORQ BX, BX")
		g.loop(fmt.Sprintf("v%d_", v), "R12", unroll, func(k int, m bool) {
			p, gr, mm, vv, d := g.r(5*k), g.r(5*k+1), g.r(5*k+2), g.r(5*k+3), g.r(5*k+4)
			g.ld(p, "DI", k, m)
			g.ld(gr, "SI", k, m)
			if v == 0 {
				g.in("VMULPS %s, %s, %s", c["wd"], p, p)
			} else {
				g.in("VFMADD231PS %s, %s, %s", c["wd"], p, gr) // g = p*wd + g
			}
			g.ld(mm, "DX", k, m)
			g.in("VMULPS %s, %s, %s", c["b1"], mm, mm)
			g.in("VFMADD231PS %s, %s, %s", c["omb1"], gr, mm) // m = g*(1-b1) + m
			g.st(mm, "DX", k, m)
			g.ld(vv, "R8", k, m)
			g.in("VMULPS %s, %s, %s", c["b2"], vv, vv)
			g.in("VMULPS %s, %s, %s", c["omb2"], gr, d)
			g.in("VMULPS %s, %s, %s", gr, d, d)
			g.in("VADDPS %s, %s, %s", d, vv, vv) // v = v + ((1-b2)*g)*g
			g.st(vv, "R8", k, m)
			g.in("VSQRTPS %s, %s", vv, d)
			g.in("VDIVPS %s, %s, %s", c["bc2sqrt"], d, d)
			g.in("VADDPS %s, %s, %s", c["eps"], d, d)
			g.in("VMULPS %s, %s, %s", c["negStep"], mm, mm)
			g.in("VDIVPS %s, %s, %s", d, mm, mm)
			g.in("VADDPS %s, %s, %s", mm, p, p) // p + (-step*m)/d
			g.st(p, "DI", k, m)
		})
		g.in("JMP done")
	}
	g.label("done")
}

var fns = []*fn{
	{name: "add", params: ps("dst, a, b *float32; n int"), disp: "dst, a, b []float32", call: "&dst[0], &a[0], &b[0], len(dst)", gocall: "dst, a, b", emit: binary("VADDPS")},
	{name: "addReLU", params: ps("dst, a, b *float32; n int"), disp: "dst, a, b []float32", call: "&dst[0], &a[0], &b[0], len(dst)", gocall: "dst, a, b", emit: binaryAct("VADDPS", true)},
	{name: "sub", params: ps("dst, a, b *float32; n int"), disp: "dst, a, b []float32", call: "&dst[0], &a[0], &b[0], len(dst)", gocall: "dst, a, b", emit: binary("VSUBPS")},
	{name: "mul", params: ps("dst, a, b *float32; n int"), disp: "dst, a, b []float32", call: "&dst[0], &a[0], &b[0], len(dst)", gocall: "dst, a, b", emit: binary("VMULPS")},
	{name: "div", params: ps("dst, a, b *float32; n int"), disp: "dst, a, b []float32", call: "&dst[0], &a[0], &b[0], len(dst)", gocall: "dst, a, b", emit: binary("VDIVPS")},
	{name: "addScalar", params: ps("dst, a *float32; s float32; n int"), disp: "dst, a []float32, s float32", call: "&dst[0], &a[0], s, len(dst)", gocall: "dst, a, s", emit: scalarOp("VADDPS", false)},
	{name: "mulScalar", params: ps("dst, a *float32; s float32; n int"), disp: "dst, a []float32, s float32", call: "&dst[0], &a[0], s, len(dst)", gocall: "dst, a, s", emit: scalarOp("VMULPS", false)},
	{name: "addScalarReLU", params: ps("dst, a *float32; s float32; n int"), disp: "dst, a []float32, s float32", call: "&dst[0], &a[0], s, len(dst)", gocall: "dst, a, s", emit: scalarOp("VADDPS", true)},
	{name: "maxScalar", params: ps("dst, a *float32; s float32; n int"), disp: "dst, a []float32, s float32", call: "&dst[0], &a[0], s, len(dst)", gocall: "dst, a, s", emit: maxMinScalar("VMAXPS")},
	{name: "minScalar", params: ps("dst, a *float32; s float32; n int"), disp: "dst, a []float32, s float32", call: "&dst[0], &a[0], s, len(dst)", gocall: "dst, a, s", emit: maxMinScalar("VMINPS")},
	{name: "clamp", params: ps("dst, a *float32; lo, hi float32; n int"), disp: "dst, a []float32, lo, hi float32", call: "&dst[0], &a[0], lo, hi, len(dst)", gocall: "dst, a, lo, hi", emit: clampOp(false)},
	{name: "addScalarClamp", params: ps("dst, a *float32; s, lo, hi float32; n int"), disp: "dst, a []float32, s, lo, hi float32", call: "&dst[0], &a[0], s, lo, hi, len(dst)", gocall: "dst, a, s, lo, hi", emit: clampOp(true)},
	{name: "axpy", params: ps("dst *float32; alpha float32; x *float32; n int"), disp: "dst []float32, alpha float32, x []float32", call: "&dst[0], alpha, &x[0], len(dst)", gocall: "dst, alpha, x", emit: axpy},
	{name: "addRows", params: ps("dst, a, row *float32; rows, n int"), disp: "dst, a, row []float32", call: "&dst[0], &a[0], &row[0], len(dst)/len(row), len(row)", gocall: "dst, a, row", emit: addRows(false)},
	{name: "addRowsReLU", params: ps("dst, a, row *float32; rows, n int"), disp: "dst, a, row []float32", call: "&dst[0], &a[0], &row[0], len(dst)/len(row), len(row)", gocall: "dst, a, row", emit: addRows(true)},
	{name: "relu", params: ps("dst, a *float32; n int"), disp: "dst, a []float32", call: "&dst[0], &a[0], len(dst)", gocall: "dst, a", emit: relu},
	{name: "reluGrad", params: ps("dst, grad, y *float32; n int"), disp: "dst, g, y []float32", call: "&dst[0], &g[0], &y[0], len(dst)", gocall: "dst, g, y", emit: reluGrad},
	{name: "relu6Grad", params: ps("dst, grad, y *float32; n int"), disp: "dst, g, y []float32", call: "&dst[0], &g[0], &y[0], len(dst)", gocall: "dst, g, y", emit: relu6Grad},
	{name: "sumSqDev", params: ps("a *float32; m float32; n int"), ret: "float64", disp: "a []float32, m float32", call: "&a[0], m, len(a)", gocall: "a, m", emit: sumSqDev},
	{name: "dotDev", params: ps("a, b *float32; m float32; n int"), ret: "float64", disp: "a, b []float32, m float32", call: "&a[0], &b[0], m, len(a)", gocall: "a, b, m", emit: dotDev},
	{name: "scaleShift", params: ps("dst, a *float32; m, s, b float32; n int"), disp: "dst, a []float32, m, s, b float32", call: "&dst[0], &a[0], m, s, b, len(dst)", gocall: "dst, a, m, s, b", emit: scaleShift},
	{name: "affineDev", params: ps("dst, grad, x *float32; gs, m, xs, c float32; n int"), disp: "dst, g, x []float32, gs, m, xs, c float32", call: "&dst[0], &g[0], &x[0], gs, m, xs, c, len(dst)", gocall: "dst, g, x, gs, m, xs, c", emit: affineDev},
	{name: "sum", params: ps("a *float32; n int"), ret: "float64", disp: "a []float32", call: "&a[0], len(a)", gocall: "a", emit: sum},
	{name: "dot", params: ps("a, b *float32; n int"), ret: "float64", disp: "a, b []float32", call: "&a[0], &b[0], len(a)", gocall: "a, b", emit: dot},
	{name: "max", params: ps("a *float32; n int"), ret: "float32", disp: "a []float32", call: "&a[0], len(a)", gocall: "a", emit: maxK},
	{name: "index", params: ps("a *float32; v float32; n, nan int"), ret: "int", disp: "a []float32, v float32, nan int", call: "&a[0], v, len(a), nan", gocall: "a, v, nan", emit: index},
	{name: "sumRows", params: ps("dst, a *float32; rows, n int"), disp: "dst, a []float32", call: "&dst[0], &a[0], len(a)/len(dst), len(dst)", gocall: "dst, a", emit: sumRows},
	{name: "erf", params: ps("dst, a *float32; n int"), disp: "dst, a []float32", call: "&dst[0], &a[0], len(dst)", gocall: "dst, a", emit: erfK},
	{name: "exp", params: ps("dst, a *float32; n int"), disp: "dst, a []float32", call: "&dst[0], &a[0], len(dst)", gocall: "dst, a", emit: expK(false, false)},
	{name: "expShiftSum", params: ps("dst, a *float32; shift float32; n int"), ret: "float32", disp: "dst, a []float32, shift float32", call: "&dst[0], &a[0], shift, len(dst)", gocall: "dst, a, shift", emit: expK(true, true)},
	{name: "sgd", params: ps("param, grad, buf *float32; c *sgdConsts; n, variant int"), disp: "param, grad, buf []float32, c *sgdConsts, variant int", call: "&param[0], &grad[0], bufPtr(buf), c, len(param), variant", gocall: "param, grad, buf, c, variant", emit: sgd},
	{name: "adam", params: ps("param, grad, m, v *float32; c *adamConsts; n, variant int"), disp: "param, grad, m, v []float32, c *adamConsts, variant int", call: "&param[0], &grad[0], &m[0], &v[0], c, len(param), variant", gocall: "param, grad, m, v, c, variant", emit: adam},
}

func main() {
	var s bytes.Buffer
	s.WriteString("// Code generated by asmgen.go; DO NOT EDIT.\n\n//go:build amd64 && !noasm\n\n#include \"textflag.h\"\n\n")
	// AVX2 tail masks: 8 ones then 8 zeros; the mask for r lanes is at 4*(8-r).
	for i := 0; i < 16; i++ {
		v := uint32(0)
		if i < 8 {
			v = 0xffffffff
		}
		fmt.Fprintf(&s, "DATA maskTab<>+%d(SB)/4, $0x%08x\n", 4*i, v)
	}
	s.WriteString("GLOBL maskTab<>(SB), RODATA|NOPTR, $64\n\n")
	s.WriteString("DATA negInf<>+0(SB)/4, $0xff800000\nGLOBL negInf<>(SB), RODATA|NOPTR, $4\n\n")
	// Exp constants, each repeated over 32 bytes (AVX2 memory operands).
	for i, c := range expConsts {
		for j := 0; j < 8; j++ {
			fmt.Fprintf(&s, "DATA expTab<>+%d(SB)/4, $0x%08x\n", 32*i+4*j, c.bits)
		}
	}
	fmt.Fprintf(&s, "GLOBL expTab<>(SB), RODATA|NOPTR, $%d\n", 32*len(expConsts))
	for i, c := range erfConsts {
		for j := 0; j < 8; j++ {
			fmt.Fprintf(&s, "DATA erfTab<>+%d(SB)/4, $0x%08x\n", 32*i+4*j, math.Float32bits(c.v))
		}
	}
	fmt.Fprintf(&s, "GLOBL erfTab<>(SB), RODATA|NOPTR, $%d\n", 32*len(erfConsts))

	var goDecl, goDisp, noasm bytes.Buffer
	for _, f := range fns {
		fr := newFrame(f)
		var decl []string
		for _, p := range f.params {
			decl = append(decl, p.name+" "+p.typ)
		}
		for _, is := range []isa{avx2, avx512} {
			g := &gen{isa: is}
			f.emit(g, fr)
			g.in("VZEROUPPER")
			g.in("RET")
			fmt.Fprintf(&s, "\n// func %s%s(%s)%s\nTEXT ·%s%s(SB), NOSPLIT, $0-%d\n", f.name, is.name, strings.Join(decl, ", "), sp(f.ret), f.name, is.name, fr.size)
			s.Write(g.b.Bytes())
			fmt.Fprintf(&goDecl, "//go:noescape\nfunc %s%s(%s)%s\n\n", f.name, is.name, strings.Join(decl, ", "), sp(f.ret))
		}
		ret := ""
		if f.ret != "" {
			ret = "return "
		}
		fmt.Fprintf(&goDisp, "func %sK(%s)%s {\n\tswitch level {\n", f.name, f.disp, sp(f.ret))
		fmt.Fprintf(&goDisp, "\tcase levelAVX512:\n\t\t%s%sAVX512(%s)\n", ret, f.name, f.call)
		fmt.Fprintf(&goDisp, "\tcase levelAVX2:\n\t\t%s%sAVX2(%s)\n", ret, f.name, f.call)
		fmt.Fprintf(&goDisp, "\tdefault:\n\t\t%s%sGo(%s)\n\t}\n", ret, f.name, f.gocall)
		goDisp.WriteString("}\n\n")
		fmt.Fprintf(&noasm, "func %sK(%s)%s { %s%sGo(%s) }\n\n", f.name, f.disp, sp(f.ret), ret, f.name, f.gocall)
	}
	write("zvec_amd64.s", s.Bytes(), false)
	write("zvec_amd64.go", []byte("// Code generated by asmgen.go; DO NOT EDIT.\n\n//go:build amd64 && !noasm\n\npackage vec\n\n"+goDecl.String()+goDisp.String()), true)
	write("zvec_noasm.go", []byte("// Code generated by asmgen.go; DO NOT EDIT.\n\n//go:build !amd64 || noasm\n\npackage vec\n\n"+noasm.String()), true)
}

func sp(ret string) string {
	if ret == "" {
		return ""
	}
	return " " + ret
}

func write(name string, b []byte, gofmt bool) {
	if gofmt {
		var err error
		if b, err = format.Source(b); err != nil {
			fmt.Fprintln(os.Stderr, name, err)
			os.Exit(1)
		}
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
