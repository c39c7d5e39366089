//go:build amd64 && !noasm

package gemm

// cpuid executes the CPUID instruction (cpuid_amd64.s).
func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

// cpuidCaches reads the cache sizes with CPUID (see cpuidCachesFrom).
func cpuidCaches() Caches { return cpuidCachesFrom(cpuid) }
