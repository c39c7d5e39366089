//go:build !linux

package train

// peakRSSMiB is 0 where Hora does not read the peak resident memory.
func peakRSSMiB() float64 { return 0 }
