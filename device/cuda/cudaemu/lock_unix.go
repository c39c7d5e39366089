//go:build unix

package cudaemu

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on the file path (created if needed)
// and returns its release. Failing to lock only costs duplicate work, so
// errors are ignored.
func lockFile(path string) func() {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return func() {}
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	return func() { f.Close() }
}
