// Package x86 holds the few x86 instructions that package cpu and its
// kernels ask for directly: CPUID (what the processor has) and the number
// of the CPU the calling thread runs on (RDPID or RDTSCP, which read the
// number Linux keeps in TSC_AUX).
//
// On other architectures, without assembly (the noasm tag) or off Linux,
// CPUNumber reports -1 and CPUID does not exist.
package x86
