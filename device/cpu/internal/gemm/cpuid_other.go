//go:build !amd64 || noasm

package gemm

// cpuidCaches returns the zero Caches: without x86 assembly there is no
// CPUID, and the cache sizes come from sysfs only.
func cpuidCaches() Caches { return Caches{} }
