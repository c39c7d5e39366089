package train

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// launchConfig describes a job that train starts itself with mpirun
// (-np, -hosts) and supervises (-restarts).
type launchConfig struct {
	restarts int      // how many times a failed job is started again
	np       int      // ranks to start with mpirun; 0 runs one process
	hosts    string   // the OpenMPI hostfile of the hosts (-hosts); "" for this host
	args     []string // the command's arguments (-restarts, -np, -hosts are dropped)
	resume   bool     // the first attempt resumes too
	// overwrite (-overwrite) lets the first attempt replace the run in dir.
	overwrite bool
	dir       string // the run directory
}

// Timing of the supervision of mpirun.
const (
	// abortGrace is how long mpirun may take to end the job after a rank
	// said it aborts. An mpirun whose daemon on another host became
	// unreachable waits for TCP's retransmissions (many minutes) before
	// it gives up on that daemon: the launcher ends it instead.
	abortGrace = 5 * time.Second
	// probeTimeout bounds the check that a host still answers.
	probeTimeout = 20 * time.Second
)

// launch runs the job as a child process (under mpirun with -np) and,
// when it fails, as torchrun and Horovod's elastic launcher do, starts it
// again from its last complete checkpoint, up to restarts times. A bad
// input, a diverged loss, an environment error (a full disk) or Ctrl-C is
// not retried. Each attempt may use
// a different number of ranks: with a hostfile, the hosts that no longer
// answer are left out and the ranks are those the others hold
// (HORA_NP_NEXT also sets the count, for tests); the checkpoint reshards.
// SIGINT and SIGTERM (ctx) are passed on to mpirun, which passes them to
// the ranks: they write a checkpoint and end with status 130.
func launch(ctx context.Context, lc launchConfig, stdout, stderr io.Writer) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "train: launching the job: %v\n", err)
		return exitFailure
	}
	var hosts []hostSlots
	if lc.hosts != "" {
		if hosts, err = readHostfile(lc.hosts); err != nil {
			fmt.Fprintf(stderr, "train: -hosts: %v\n", err)
			return exitInput
		}
	}
	childArgs := dropFlags(lc.args, "restarts", "np", "hosts", "out", "overwrite")
	np := lc.np
	hostfile := lc.hosts
	for attempt := 0; ; attempt++ {
		var args []string
		if !lc.resume && (attempt == 0 || !exists(filepath.Join(lc.dir, configFile))) {
			// A first attempt that died before it wrote the run's
			// config.yaml left nothing to resume: start it again.
			args = append([]string{"train"}, childArgs...)
			args = append(args, "-out", lc.dir)
			if lc.overwrite {
				args = append(args, "-overwrite")
			}
		} else {
			args = restartArgs(lc.dir, childArgs)
		}
		code, err := runJob(ctx, jobCommand(self, np, hostfile, args), stdout, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "train: starting the job: %v\n", err)
			return exitFailure
		}
		if !retryable(code) {
			return code
		}
		if ctx.Err() != nil {
			return exitInterrupted
		}
		if attempt >= lc.restarts {
			if lc.restarts > 0 {
				fmt.Fprintf(stderr, "train: the job failed (exit status %d) %d times; giving up (-restarts %d)\n", code, attempt+1, lc.restarts)
			}
			return exitFailure // mpirun's own statuses (137 for a rank killed) mean the same
		}
		if len(hosts) > 0 {
			alive, lost := probeHosts(ctx, hosts)
			if len(alive) == 0 {
				fmt.Fprintf(stderr, "train: the job failed (exit status %d) and no host of %s answers; giving up\n", code, lc.hosts)
				return exitFailure
			}
			if len(lost) > 0 {
				next := min(np, totalSlots(alive))
				fmt.Fprintf(stderr, "train: host(s) %s do not answer; continuing on %s with %d rank(s) instead of %d\n",
					strings.Join(lost, ", "), hostNames(alive), next, np)
				if hostfile, err = writeHostfile(alive); err != nil {
					fmt.Fprintf(stderr, "train: %v\n", err)
					return exitFailure
				}
				defer os.Remove(hostfile)
				np, hosts = next, alive
			}
		}
		if next, err := strconv.Atoi(os.Getenv("HORA_NP_NEXT")); err == nil && next >= 0 {
			np = next
		}
		fmt.Fprintf(stderr, "train: the job failed (exit status %d); restarting it from the last checkpoint of %s (restart %d of %d)\n",
			code, lc.dir, attempt+1, lc.restarts)
	}
}

// restartArgs are the arguments of a restarted job: resume the run, with
// the -set, -q and -json flags the first attempt had.
func restartArgs(dir string, childArgs []string) []string {
	args := []string{"resume", "-run", dir}
	for i := 0; i < len(childArgs); i++ {
		a := childArgs[i]
		switch {
		case (a == "-set" || a == "--set") && i+1 < len(childArgs):
			args = append(args, a, childArgs[i+1])
			i++
		case strings.HasPrefix(a, "-set=") || a == "-q" || a == "-json":
			args = append(args, a)
		}
	}
	return args
}

// abortLine matches what a rank prints when it ends the job
// (dist/mpi's Abort).
var abortLine = regexp.MustCompile(`^hora: rank \d+: aborting: `)

// runJob runs cmd (mpirun or one process) in a process group of its own
// and returns its exit status. It copies the job's stderr, watching for
// a rank that aborts: mpirun should then end the job at once, and is
// ended by force after abortGrace. ctx ending (SIGINT, SIGTERM) sends
// SIGTERM to the job; a second signal would kill the launcher, whose
// job then dies with it (Pdeathsig).
func runJob(ctx context.Context, cmd *exec.Cmd, stdout, stderr io.Writer) (int, error) {
	cmd.Stdout = stdout
	cmd.SysProcAttr = jobProcAttr()
	// A pipe of our own rather than StderrPipe: processes that mpirun
	// left behind (its remote shell to an unreachable host) may hold the
	// write end open long after mpirun ended.
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer pr.Close()
	cmd.Stderr = pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return 0, err
	}
	aborted := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		var once sync.Once
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(stderr, line)
			if abortLine.MatchString(line) {
				once.Do(func() { close(aborted) })
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	group := -cmd.Process.Pid
	signalled := false
	var grace <-chan time.Time
	for {
		select {
		case err := <-done:
			select { // the last lines, unless a leftover process holds the pipe
			case <-copied:
			case <-time.After(time.Second):
			}
			var ee *exec.ExitError
			switch {
			case err == nil:
				return exitOK, nil
			case errors.As(err, &ee):
				if code := ee.ExitCode(); code >= 0 {
					return code, nil
				}
				return exitFailure, nil // killed by a signal
			default:
				return 0, err
			}
		case <-ctx.Done():
			if !signalled {
				signalled = true
				syscall.Kill(group, syscall.SIGTERM)
			}
			ctx = context.Background() // once
		case <-aborted:
			aborted = nil
			grace = time.After(abortGrace)
		case <-grace:
			fmt.Fprintf(stderr, "train: mpirun did not end the job within %v of a rank's abort; ending it\n", abortGrace)
			syscall.Kill(group, syscall.SIGKILL)
			grace = nil
		}
	}
}

// jobCommand returns the command that runs train with args on np ranks
// (mpirun, with --hostfile when hostfile is set; HORA_MPIRUN replaces
// "mpirun" and its options), or as one process when np is 0.
func jobCommand(self string, np int, hostfile string, args []string) *exec.Cmd {
	if np <= 0 {
		return exec.Command(self, args...)
	}
	mpirun, custom := mpirunCommand()
	if !custom && hostfile == "" && np > runtime.NumCPU() {
		mpirun = append(mpirun, "--oversubscribe")
	}
	full := mpirun[1:]
	if hostfile != "" {
		full = append(full, "--hostfile", hostfile)
	}
	full = append(full, "-np", strconv.Itoa(np), self)
	return exec.Command(mpirun[0], append(full, args...)...)
}

// mpirunCommand returns mpirun and its options: HORA_MPIRUN's words when
// it is set (custom), else "mpirun", with --allow-run-as-root for root.
func mpirunCommand() (cmd []string, custom bool) {
	if words := strings.Fields(os.Getenv("HORA_MPIRUN")); len(words) > 0 {
		return words, true
	}
	cmd = []string{"mpirun"}
	if os.Getuid() == 0 {
		cmd = append(cmd, "--allow-run-as-root")
	}
	return cmd, false
}

// hostSlots is one line of an OpenMPI hostfile: a host and its slots.
type hostSlots struct {
	name  string
	slots int
	line  string // the line as written, kept when the host is
}

// readHostfile parses an OpenMPI hostfile: one host per line, "name" or
// "name slots=N" (with other options kept as they are), # comments.
func readHostfile(path string) ([]hostSlots, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var hosts []hostSlots
	for i, line := range strings.Split(string(b), "\n") {
		text, _, _ := strings.Cut(line, "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		h := hostSlots{name: fields[0], slots: 1, line: strings.TrimSpace(text)}
		for _, f := range fields[1:] {
			if v, ok := strings.CutPrefix(f, "slots="); ok {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 {
					return nil, fmt.Errorf("%s:%d: slots=%s: expected a count ≥ 1", path, i+1, v)
				}
				h.slots = n
			}
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%s: no host in the file", path)
	}
	return hosts, nil
}

// writeHostfile writes hosts to a new temporary hostfile.
func writeHostfile(hosts []hostSlots) (string, error) {
	f, err := os.CreateTemp("", "hora-hosts-*")
	if err != nil {
		return "", fmt.Errorf("writing the hostfile of the remaining hosts: %w", err)
	}
	for _, h := range hosts {
		fmt.Fprintln(f, h.line)
	}
	return f.Name(), f.Close()
}

func totalSlots(hosts []hostSlots) int {
	n := 0
	for _, h := range hosts {
		n += h.slots
	}
	return n
}

func hostNames(hosts []hostSlots) string {
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = h.name
	}
	return strings.Join(names, ", ")
}

// probeHosts starts a trivial one-rank job on each host (mpirun, as the
// job itself is started, in parallel) and sorts the hosts into those that
// ran it within probeTimeout and those that did not.
func probeHosts(ctx context.Context, hosts []hostSlots) (alive []hostSlots, lost []string) {
	ok := make([]bool, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			mpirun, _ := mpirunCommand()
			args := append(mpirun[1:], "--host", h.name, "-np", "1", "true")
			cmd := exec.CommandContext(pctx, mpirun[0], args...)
			cmd.SysProcAttr = jobProcAttr()
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			ok[i] = cmd.Run() == nil
		})
	}
	wg.Wait()
	for i, h := range hosts {
		if ok[i] {
			alive = append(alive, h)
		} else {
			lost = append(lost, h.name)
		}
	}
	return alive, lost
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

// retryable reports whether a job that ended with exit status code may
// succeed when started again: not when it succeeded, when its input or
// the machine is at fault, when its loss diverged or when it was
// interrupted.
func retryable(code int) bool {
	switch code {
	case exitOK, exitInput, exitDiverged, exitEnvironment, exitInterrupted:
		return false
	}
	return true
}

// exists reports whether path names an existing file or folder.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
