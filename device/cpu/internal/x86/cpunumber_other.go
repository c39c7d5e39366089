//go:build !linux || !amd64

package x86

// CPUNumber returns -1: off x86-64 Linux there is no cheap way to tell
// the CPU the thread runs on.
func CPUNumber() int { return -1 }
