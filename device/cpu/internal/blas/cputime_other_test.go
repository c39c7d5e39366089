//go:build !unix

package blas

import "time"

// cpuTime is 0: not measured on this platform.
func cpuTime() time.Duration { return 0 }
