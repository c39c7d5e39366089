//go:build unix

package diskcache

import (
	"os"
	"syscall"
)

// Lock takes an exclusive lock on the file path (created if needed),
// waiting while another process holds it, and returns its release. A cache
// is only an optimisation, so failing to lock is not an error: Lock then
// returns at once, and the worst case is work done twice.
func Lock(path string) (unlock func()) {
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
