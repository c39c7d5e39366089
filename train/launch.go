package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// launchConfig describes a job that train -restarts N supervises.
type launchConfig struct {
	restarts int      // how many times a failed job is started again
	np       int      // ranks to start with mpirun; 0 runs one process
	args     []string // the command's arguments (-restarts and -np are dropped)
	resume   bool     // the first attempt resumes too
	dir      string   // the run directory
}

// launch runs the job as a child process (under mpirun with -np) and,
// when it fails, as torchrun and Horovod's elastic launcher do, starts it
// again from its last complete checkpoint, up to restarts times. A bad
// input, a diverged loss or Ctrl-C is not retried. Each attempt may use
// a different number of ranks (HORA_NP_NEXT, for tests and for shrinking
// after a node was lost): the checkpoint reshards.
func launch(ctx context.Context, lc launchConfig, stdout, stderr io.Writer) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "train: -restarts: %v\n", err)
		return exitFailure
	}
	childArgs := dropFlags(lc.args, "restarts", "np", "out", "overwrite")
	np := lc.np
	for attempt := 0; ; attempt++ {
		var args []string
		if attempt == 0 && !lc.resume {
			args = append([]string{"train"}, childArgs...)
			args = append(args, "-out", lc.dir)
		} else {
			args = []string{"resume", "-run", lc.dir}
			for i := 0; i < len(childArgs); i++ { // keep -set, -q, -json
				a := childArgs[i]
				switch {
				case (a == "-set" || a == "--set") && i+1 < len(childArgs):
					args = append(args, a, childArgs[i+1])
					i++
				case strings.HasPrefix(a, "-set=") || a == "-q" || a == "-json":
					args = append(args, a)
				}
			}
		}
		cmd := jobCommand(self, np, args)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		err := cmd.Run()
		code := exitOK
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			code = ee.ExitCode()
			if code < 0 {
				code = exitFailure // killed by a signal
			}
		default:
			fmt.Fprintf(stderr, "train: -restarts: starting %s: %v\n", cmd.Path, err)
			return exitFailure
		}
		switch code {
		case exitOK, exitInput, exitDiverged, exitInterrupted:
			return code
		}
		if ctx.Err() != nil {
			return exitInterrupted
		}
		if attempt >= lc.restarts {
			fmt.Fprintf(stderr, "train: the job failed (exit status %d) %d times; giving up (-restarts %d)\n", code, attempt+1, lc.restarts)
			return code
		}
		if next, err := strconv.Atoi(os.Getenv("HORA_NP_NEXT")); err == nil && next >= 0 {
			np = next
		}
		fmt.Fprintf(stderr, "train: the job failed (exit status %d); restarting it from the last checkpoint of %s (restart %d of %d)\n",
			code, lc.dir, attempt+1, lc.restarts)
	}
}

// jobCommand returns the command that runs train with args on np ranks
// (mpirun; HORA_MPIRUN replaces "mpirun" and its options), or as one
// process when np is 0.
func jobCommand(self string, np int, args []string) *exec.Cmd {
	if np <= 0 {
		return exec.Command(self, args...)
	}
	mpirun := strings.Fields(os.Getenv("HORA_MPIRUN"))
	if len(mpirun) == 0 {
		mpirun = []string{"mpirun"}
		if os.Getuid() == 0 {
			mpirun = append(mpirun, "--allow-run-as-root")
		}
		if np > runtime.NumCPU() {
			mpirun = append(mpirun, "--oversubscribe")
		}
	}
	full := append(mpirun[1:], "-np", strconv.Itoa(np), self)
	return exec.Command(mpirun[0], append(full, args...)...)
}

// dropFlags returns args without the named flags (as -name value,
// -name=value, or a boolean -name).
func dropFlags(args []string, names ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		name, _, hasValue := strings.Cut(name, "=")
		drop := false
		for _, n := range names {
			if strings.HasPrefix(a, "-") && name == n {
				drop = true
			}
		}
		if !drop {
			out = append(out, a)
			continue
		}
		if !hasValue && name != "overwrite" && i+1 < len(args) {
			i++ // the flag's value
		}
	}
	return out
}
