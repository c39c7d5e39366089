//go:build !amd64

package blas

// cpuVendor returns "" on processors other than x86-64.
func cpuVendor() string { return "" }

// hasAVX512 is false on processors other than x86-64.
func hasAVX512() bool { return false }
