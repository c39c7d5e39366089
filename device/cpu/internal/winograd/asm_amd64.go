//go:build amd64 && !noasm

package winograd

//go:generate go run gen.go

import "golang.org/x/sys/cpu"

// The vector assembly the transforms run, best first: AVX-512 (f2_amd64.s,
// and f4_amd64.s, which gen.go writes), AVX2 (avx2_amd64.s, gen.go too) or
// none (Go).
const (
	asmNone = iota
	asmAVX2
	asmAVX512
)

// asmLevel is the assembly this CPU runs (tests lower it to check the
// others).
var asmLevel = func() int {
	switch {
	case cpu.X86.HasAVX512F:
		return asmAVX512
	case cpu.X86.HasAVX2:
		return asmAVX2
	}
	return asmNone
}()

//go:noescape
func input2AVX512(v *float32, stride int, r0, r1, r2, r3 *float32, blocks int)

//go:noescape
func output2AVX512(y0, y1, m *float32, stride int, blocks int)

//go:noescape
func input4AVX512(v *float32, stride int, r0, r1, r2, r3, r4, r5, tmp *float32, blocks int)

//go:noescape
func output4AVX512(y0, y1, y2, y3, m *float32, stride int, tmp *float32, blocks int)

//go:noescape
func input2AVX2(v *float32, stride int, r0, r1, r2, r3 *float32, blocks int)

//go:noescape
func output2AVX2(y0, y1, m *float32, stride int, blocks int)

//go:noescape
func input4AVX2(v *float32, stride int, r0, r1, r2, r3, r4, r5, tmp *float32, blocks int)

//go:noescape
func output4AVX2(y0, y1, y2, y3, m *float32, stride int, tmp *float32, blocks int)
