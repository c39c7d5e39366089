//go:build amd64 && !noasm

package norm

import "testing"

// TestKernelsGo runs TestKernels' checks on the Go kernels, which the
// assembly ones replace on this machine.
func TestKernelsGo(t *testing.T) {
	if !haveAsm {
		t.Skip("the Go kernels are what TestKernels ran")
	}
	haveAsm = false
	defer func() { haveAsm = true }()
	checkKernels(t)
}
