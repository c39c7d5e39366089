package main

import "syscall"

// peakRSSMiB returns the largest resident memory of this process so far,
// in MiB (getrusage's ru_maxrss, which Linux counts in KiB), as the
// trainer's peak_rss_mib; 0 when the system does not say.
func peakRSSMiB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}
