package peakrss

import "syscall"

// MiB returns the largest resident memory of this process so far, in MiB
// (getrusage's ru_maxrss, which Linux counts in KiB); 0 when the system
// does not say.
func MiB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}
