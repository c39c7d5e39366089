package train

import "syscall"

// jobProcAttr puts the job (mpirun) in a process group of its own, which
// the launcher signals as a whole, and has the kernel send it SIGTERM if
// the launcher dies (kill -9 included), so that no orphaned job trains on.
func jobProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
