//go:build !linux

package shm

import (
	"errors"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

// errUnsupported means this system has no shared file mappings (Hora maps
// them on Linux only); Wrap then leaves the communicator as it is.
var errUnsupported = errors.New("dist/shm: shared memory not supported on this system")

func mmap(f *os.File, size int) ([]byte, error) { return nil, errUnsupported }

func munmap(b []byte) {}

// wait yields until *addr may differ from old (no futex here; Wrap is not
// used on these systems, which cannot map the segment).
func wait(addr *atomic.Uint32, old uint32, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for addr.Load() == old && time.Now().Before(deadline) {
		runtime.Gosched()
	}
}

func wake(addr *atomic.Uint32) {}
