//go:build amd64 && !noasm

package norm

import (
	"math"

	"golang.org/x/sys/cpu"
)

// haveAsm reports whether the kernels run in AVX-512 assembly
// (norm_amd64.s).
var haveAsm = cpu.X86.HasAVX512F

// haveAVX2 reports whether the AVX2 kernels (avx2_amd64.s) run on a CPU
// without AVX-512.
var haveAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// gradMask returns what the assembly gradient kernels compare to find the
// lanes whose gradient passes: the output to compare and the bounds lo
// and hi. A lane passes where out is not ≤ lo and, for ReLU, is a number,
// or else is not ≥ hi; NaN bounds (None, comparing dy to them) pass every
// lane.
func gradMask(act Act, dy, out []float32) (o *float32, lo, hi float32) {
	if act == None {
		nan := float32(math.NaN())
		return &dy[0], nan, nan
	}
	lo, hi = act.bounds()
	return &out[0], lo, hi
}

//go:noescape
func sumAVX512(x *float32, ld, rows, cols int) float64

//go:noescape
func sumSqDevAVX512(x *float32, ld, rows, cols int, m float32) float64

//go:noescape
func scaleShiftAVX512(y, x *float32, ld, rows, cols int, m, s, b, lo, hi float32)

//go:noescape
func gradSumsAVX512(dy, out, x *float32, ld, rows, cols, act int, m, lo, hi float32) (sumG, sumGXc float64)

//go:noescape
func gradApplyAVX512(dx, dy, out, x *float32, ld, rows, cols, act int, k, m, xs, shift, lo, hi float32)

//go:noescape
func sumAVX2(x *float32, ld, rows, cols int) float64

//go:noescape
func sumSqDevAVX2(x *float32, ld, rows, cols int, m float32) float64

//go:noescape
func scaleShiftAVX2(y, x *float32, ld, rows, cols int, m, s, b, lo, hi float32)

//go:noescape
func gradSumsAVX2(dy, out, x *float32, ld, rows, cols, act int, m, lo, hi float32) (sumG, sumGXc float64)

//go:noescape
func gradApplyAVX2(dx, dy, out, x *float32, ld, rows, cols, act int, k, m, xs, shift, lo, hi float32)
