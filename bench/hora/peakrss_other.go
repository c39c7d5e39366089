//go:build !linux

package main

// peakRSSMiB is 0 where hora-bench does not read the peak resident memory.
func peakRSSMiB() float64 { return 0 }
