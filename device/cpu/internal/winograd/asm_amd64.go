//go:build amd64 && !noasm

package winograd

//go:generate go run gen.go

import "golang.org/x/sys/cpu"

// haveAsm reports whether the AVX-512 transforms run (f2_amd64.s, and
// f4_amd64.s, which gen.go writes).
var haveAsm = cpu.X86.HasAVX512F

//go:noescape
func input2AVX512(v *float32, stride int, r0, r1, r2, r3 *float32, blocks int)

//go:noescape
func output2AVX512(y0, y1, m *float32, stride int, blocks int)

//go:noescape
func input4AVX512(v *float32, stride int, r0, r1, r2, r3, r4, r5, tmp *float32, blocks int)

//go:noescape
func output4AVX512(y0, y1, y2, y3, m *float32, stride int, tmp *float32, blocks int)
