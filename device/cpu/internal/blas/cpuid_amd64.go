package blas

import (
	"golang.org/x/sys/cpu"

	"github.com/hora-dl/hora/device/cpu/internal/x86"
)

// cpuVendor returns the CPUID vendor string, e.g. "AuthenticAMD".
func cpuVendor() string {
	_, b, c, d := x86.CPUID(0, 0)
	v := make([]byte, 0, 12)
	for _, r := range [3]uint32{b, d, c} {
		v = append(v, byte(r), byte(r>>8), byte(r>>16), byte(r>>24))
	}
	return string(v)
}

// hasAVX512 reports whether the CPU and the OS support the AVX-512 subsets
// that OpenBLAS's SkylakeX kernels use.
func hasAVX512() bool {
	return cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL
}
