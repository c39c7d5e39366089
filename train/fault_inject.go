//go:build horafault

package train

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// faultInjection says whether HORA_FAULT is read (build tag horafault).
const faultInjection = true

// Fault injection for the resume tests: HORA_FAULT=crash-at-step:N[:RANK]
// kills the process (SIGKILL) before optimizer step N (on one rank, or on
// all), HORA_FAULT=crash-at-start:1 as soon as the run folder is claimed
// (before config.yaml is written), HORA_FAULT=kill-in-checkpoint:N kills it in the middle of writing
// the checkpoint of step N (after its model file, before its manifest).
// Only the first attempt of a run is affected when HORA_FAULT_ONCE names
// a file: the fault fires only if that file does not exist yet, and
// creates it.
func init() {
	spec := os.Getenv("HORA_FAULT")
	if spec == "" {
		return
	}
	parts := strings.Split(spec, ":")
	if len(parts) < 2 {
		return
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 1 {
		return
	}
	switch parts[0] {
	case "crash-at-step":
		faultStep = n
		if len(parts) > 2 {
			if r, err := strconv.Atoi(parts[2]); err == nil {
				faultRank = r
			}
		}
	case "crash-at-start":
		faultAtStart = true
	case "kill-in-checkpoint":
		faultHook = func(step int, phase string) {
			if step == n && phase == "wrote "+modelFile {
				faultCrash()
			}
		}
	}
}

// faultCrash kills this process as kill -9 would, unless HORA_FAULT_ONCE
// names a file that exists (the fault already fired once).
func faultCrash() {
	if once := os.Getenv("HORA_FAULT_ONCE"); once != "" {
		if _, err := os.Stat(once); err == nil {
			return
		}
		os.WriteFile(once, nil, 0o644)
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
