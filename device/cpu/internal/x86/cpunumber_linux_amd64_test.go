//go:build linux && amd64

package x86

import (
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// sysGetcpu is getcpu's system call number on linux/amd64 (package
// syscall has no name for it).
const sysGetcpu = 309

// TestCPUNumberMatchesGetcpu checks CPUNumber against the getcpu system
// call on a thread that stays where it is.
func TestCPUNumberMatchesGetcpu(t *testing.T) {
	if CPUNumber() < 0 {
		t.Skip("this processor has neither RDPID nor RDTSCP (or the noasm build)")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	agree := 0
	for range 100 {
		var cpu uint32
		if _, _, e := syscall.RawSyscall(sysGetcpu, uintptr(unsafe.Pointer(&cpu)), 0, 0); e != 0 {
			t.Skipf("getcpu: %v", e)
		}
		got := CPUNumber()
		var after uint32
		syscall.RawSyscall(sysGetcpu, uintptr(unsafe.Pointer(&after)), 0, 0)
		if cpu != after {
			continue // the thread moved between the calls
		}
		if got != int(cpu) {
			t.Fatalf("CPUNumber() = %d, getcpu says %d", got, cpu)
		}
		agree++
	}
	if agree == 0 {
		t.Fatal("the thread moved during every comparison")
	}
}

// BenchmarkCPUNumber times CPUNumber, which package cpu calls at every
// parallel kernel (RDPID: 3 ns on Zen 4, RDTSCP 18).
func BenchmarkCPUNumber(b *testing.B) {
	for b.Loop() {
		CPUNumber()
	}
}
