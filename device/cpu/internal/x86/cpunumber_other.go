//go:build !linux || !amd64 || noasm

package x86

// CPUNumber returns -1: without x86 assembly on Linux there is no cheap
// way to tell the CPU the thread runs on.
func CPUNumber() int { return -1 }
