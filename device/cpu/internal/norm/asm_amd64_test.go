//go:build amd64 && !noasm

package norm

import "testing"

// kernelSets runs f once per set of kernels this machine can run: the
// AVX-512 assembly, the AVX2 assembly (with the Go loops for each row's
// last values, as on CPUs without AVX-512) and the Go loops alone.
func kernelSets(t *testing.T, f func(t *testing.T)) {
	asm, avx2 := haveAsm, haveAVX2
	defer func() { haveAsm, haveAVX2 = asm, avx2 }()
	for _, k := range []struct {
		name      string
		asm, avx2 bool
	}{{"avx512", true, avx2}, {"avx2", false, true}, {"go", false, false}} {
		if (k.asm && !asm) || (k.avx2 && !avx2) {
			continue
		}
		haveAsm, haveAVX2 = k.asm, k.avx2
		t.Run(k.name, f)
	}
}
