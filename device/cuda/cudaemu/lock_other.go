//go:build !unix

package cudaemu

// lockFile does nothing where there is no flock (the emulator runs on
// Linux only).
func lockFile(string) func() { return func() {} }
