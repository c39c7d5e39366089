//go:build !amd64 || noasm

package winograd

// Without assembly (another architecture, or the noasm build tag) the
// transforms run in Go.
const (
	asmNone = iota
	asmAVX2
	asmAVX512
)

var asmLevel = asmNone

func input2AVX512(v *float32, stride int, r0, r1, r2, r3 *float32, blocks int) {
	panic("winograd: no assembly on this platform")
}

func output2AVX512(y0, y1, m *float32, stride int, blocks int) {
	panic("winograd: no assembly on this platform")
}

func input4AVX512(v *float32, stride int, r0, r1, r2, r3, r4, r5, tmp *float32, blocks int) {
	panic("winograd: no assembly on this platform")
}

func output4AVX512(y0, y1, y2, y3, m *float32, stride int, tmp *float32, blocks int) {
	panic("winograd: no assembly on this platform")
}

func input2AVX2(v *float32, stride int, r0, r1, r2, r3 *float32, blocks int) {
	panic("winograd: no assembly on this platform")
}

func output2AVX2(y0, y1, m *float32, stride int, blocks int) {
	panic("winograd: no assembly on this platform")
}

func input4AVX2(v *float32, stride int, r0, r1, r2, r3, r4, r5, tmp *float32, blocks int) {
	panic("winograd: no assembly on this platform")
}

func output4AVX2(y0, y1, y2, y3, m *float32, stride int, tmp *float32, blocks int) {
	panic("winograd: no assembly on this platform")
}
