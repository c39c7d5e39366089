//go:build !amd64 || noasm

package winograd

// haveAsm is false: the transforms run in Go.
const haveAsm = false

func inputAVX512(v *float32, stride int, r0, r1, r2, r3 *float32, blocks int) {
	panic("winograd: no assembly on this platform")
}

func outputAVX512(y0, y1, m *float32, stride int, blocks int) {
	panic("winograd: no assembly on this platform")
}
