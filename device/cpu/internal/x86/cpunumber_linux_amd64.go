//go:build linux && amd64

package x86

// readAux is how CPUNumber reads TSC_AUX: RDPID where the processor has
// it (CPUID leaf 7, ECX bit 22), else RDTSCP (leaf 0x80000001, EDX bit
// 27; it also reads the time stamp counter, a few cycles more), else nil.
var readAux = func() func() uint32 {
	maxLeaf, _, _, _ := CPUID(0, 0)
	if maxLeaf >= 7 {
		if _, _, ecx, _ := CPUID(7, 0); ecx&(1<<22) != 0 {
			return rdpid
		}
	}
	if maxExt, _, _, _ := CPUID(0x80000000, 0); maxExt >= 0x80000001 {
		if _, _, _, edx := CPUID(0x80000001, 0); edx&(1<<27) != 0 {
			return rdtscp
		}
	}
	return nil
}()

// CPUNumber returns the number of the CPU the calling thread runs on (as
// sched_getcpu), or -1 when the processor cannot tell. It takes a few
// nanoseconds; the thread may have moved by the time it returns.
func CPUNumber() int {
	if readAux == nil {
		return -1
	}
	return int(readAux() & 0xfff) // Linux keeps (node << 12) | cpu there
}
