//go:build !linux

package train

import "syscall"

// jobProcAttr puts the job (mpirun) in a process group of its own, which
// the launcher signals as a whole.
func jobProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
