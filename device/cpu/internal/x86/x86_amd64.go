//go:build amd64

package x86

// CPUID executes the CPUID instruction for leaf and subleaf.
func CPUID(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

// rdpid and rdtscp return TSC_AUX (x86_amd64.s).
func rdpid() uint32
func rdtscp() uint32
