//go:build amd64 && !noasm

package winograd

import "golang.org/x/sys/cpu"

// haveAsm reports whether the AVX-512 transforms run (asm_amd64.s).
var haveAsm = cpu.X86.HasAVX512F

//go:noescape
func inputAVX512(v *float32, stride int, r0, r1, r2, r3 *float32, blocks int)

//go:noescape
func outputAVX512(y0, y1, m *float32, stride int, blocks int)
