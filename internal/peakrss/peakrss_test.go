package peakrss

import (
	"runtime"
	"testing"
)

// TestMiBGrows requires the peak to cover memory the process has touched:
// after writing 64 MiB, at least 64 MiB on Linux.
func TestMiBGrows(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("read on Linux only")
	}
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = 1
	}
	if got := MiB(); got < 64 {
		t.Errorf("MiB() = %.1f after touching 64 MiB", got)
	}
	runtime.KeepAlive(b)
}
