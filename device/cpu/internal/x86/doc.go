// Package x86 holds the few x86 instructions that package cpu and its
// kernels ask for directly: CPUID (what the processor has) and the number
// of the CPU the calling thread runs on (RDPID or RDTSCP, which read the
// number Linux keeps in TSC_AUX).
//
// Its assembly is built on every amd64 target, the noasm tag included
// (that tag concerns the compute kernels). On other architectures, and off
// Linux, CPUNumber reports -1; CPUID exists on amd64 only.
package x86
