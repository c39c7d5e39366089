//go:build amd64 && !noasm

package gemm

import "github.com/hora-dl/hora/device/cpu/internal/x86"

// cpuidCaches reads the cache sizes with CPUID (see cpuidCachesFrom).
func cpuidCaches() Caches { return cpuidCachesFrom(x86.CPUID) }
