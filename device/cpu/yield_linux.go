package cpu

import "syscall"

// osYield gives the CPU to another runnable thread, if there is one
// (sched_yield); it returns at once otherwise.
func osYield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
