//go:build !linux

package peakrss

// MiB is 0 where Hora does not read the peak resident memory.
func MiB() float64 { return 0 }
