package shm

import (
	"errors"
	"math"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// errUnsupported means this system has no shared file mappings.
var errUnsupported = errors.New("dist/shm: shared memory not supported on this system")

func mmap(f *os.File, size int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
}

func munmap(b []byte) { _ = syscall.Munmap(b) }

// wait sleeps until *addr may differ from old (a futex wait on memory
// shared between processes), or for at most timeout.
func wait(addr *atomic.Uint32, old uint32, timeout time.Duration) {
	ts := syscall.NsecToTimespec(int64(timeout))
	const futexWait = 0 // FUTEX_WAIT, not private: the memory is shared
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWait, uintptr(old),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// wake wakes every rank waiting on addr.
func wake(addr *atomic.Uint32) {
	const futexWake = 1
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWake, uintptr(math.MaxInt32), 0, 0, 0)
}
