//go:build !amd64 || noasm

package norm

import "testing"

// kernelSets runs f on the Go kernels, the only ones on this machine.
func kernelSets(t *testing.T, f func(t *testing.T)) { t.Run("go", f) }
