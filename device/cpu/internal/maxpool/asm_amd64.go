//go:build amd64 && !noasm

package maxpool

import "golang.org/x/sys/cpu"

// haveAsm reports whether the kernels run in AVX-512 assembly (asm_amd64.s).
var haveAsm = cpu.X86.HasAVX512F

// haveAVX2 reports whether Values3s2's AVX2 kernel (avx2_amd64.s) runs on
// CPUs without AVX-512.
var haveAVX2 = cpu.X86.HasAVX2

// plane2x2AVX512 is Plane2x2 from window (i, j) on, row after row,
// until the end or a step of 16 windows (fewer at the end of a row) that
// holds a NaN; it returns the window where it stopped ((oh, 0) at the
// end).
//
//go:noescape
func plane2x2AVX512(y []float32, arg []int64, x []float32, oh, ow, w, i, j int) (int, int)

// values3s2AVX512 is Values3s2 for n ≥ 1 windows.
//
//go:noescape
func values3s2AVX512(y *float32, n int, x *float32, ld, rows int)

// values3s2AVX2 is Values3s2 for the first n&^7 of n windows.
//
//go:noescape
func values3s2AVX2(y *float32, n int, x *float32, ld, rows int)
