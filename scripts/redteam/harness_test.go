package redteam

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Limits every case runs under.
const (
	// memLimitKB is the virtual memory limit (ulimit -v) of each command.
	// Go reserves address space beyond what it uses: the tiny runs need
	// 1.4 GB of it (the language model 1.7 GB), so 3 GiB leaves room,
	// and still stops every bomb of the corpus (each asks for 3.8 GB or
	// more) long before the machine's memory.
	memLimitKB = 3 << 20
	// caseTimeout is the default time limit of a case.
	caseTimeout = 30 * time.Second
	// parallel is how many cases run at once.
	parallel = 2
	// promptExit is how soon a command must end after a SIGTERM.
	promptExit = 5 * time.Second
)

// The verdicts.
type verdict string

const (
	clearError verdict = "clear error"
	correct    verdict = "correct"
	unclear    verdict = "unclear"
	panicked   verdict = "panic"
	hang       verdict = "hang"
	oom        verdict = "OOM"
	silent     verdict = "silent"
	dataLoss   verdict = "data loss"
)

// verdicts lists the verdicts in the order of the report.
var verdicts = []verdict{clearError, correct, unclear, panicked, hang, oom, silent, dataLoss}

// tcase is one case of the corpus.
type tcase struct {
	name string
	// setup builds the case's inputs in e.dir and returns its command
	// line; its first word, "train" or "onnxcheck", names the binary.
	// It may set e.cwd (default e.dir) and add to e.env.
	setup func(e *env) []string
	// msg, when set, makes a clear error what the case wants: an exit
	// status among exits (default 2) and a message matching every
	// regular expression of msg, in any order (on stderr; for onnxcheck
	// on stdout or stderr, where it reports cases). One names the file,
	// key or tensor, another the problem.
	msg   []string
	exits []int
	// ok, when set, makes a correct result what the case wants (with
	// msg too, either is accepted): exit status okExit (default 0) and
	// ok returning nil.
	ok     func(e *env, r *result) error
	okExit int
	// keep lists files or folders (relative to e.dir) that must not
	// change: they are hashed before and after the command.
	keep []string
	// sigterm, when set, sends the command one SIGTERM after this long;
	// it must then end within promptExit.
	sigterm time.Duration
	// timeout is the time limit (default caseTimeout).
	timeout time.Duration
	// root marks a case that needs root (mknod); others skip it.
	root bool
}

// result is what a command did.
type result struct {
	exit           int    // exit status; -1 when killed by a signal
	signal         string // the signal that killed it, if any
	stdout, stderr string
	elapsed        time.Duration
	timedOut       bool // killed at the time limit
	lateExit       bool // still running promptExit after the SIGTERM
	changed        []string
}

// outcome is a case's verdict, for the report.
type outcome struct {
	name    string
	got     verdict
	want    []verdict
	note    string
	r       *result
	skipped bool
}

// harness holds what the cases share: the binaries, the environment and
// the runs trained once and copied by the cases.
type harness struct {
	dir       string // the test's temporary folder
	train     string // binary of cmd/train
	onnxcheck string // binary of cmd/onnxcheck
	env       []string

	runOnce sync.Once
	run     string // a tiny finished run (see sharedRun)
	runErr  error

	lmOnce sync.Once
	lmRun  string // a tiny language model run (see sharedLMRun)
	lmErr  error

	slots chan struct{}

	mu       sync.Mutex
	outcomes []outcome
}

// repoRoot is the module's root, from this package's folder.
const repoRoot = "../.."

// newHarness builds the binaries and the environment of the commands.
func newHarness(t *testing.T) *harness {
	h := &harness{dir: t.TempDir(), slots: make(chan struct{}, parallel)}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(h.dir, "bin")
	h.train = filepath.Join(bin, "train")
	h.onnxcheck = filepath.Join(bin, "onnxcheck")
	for _, b := range []struct{ out, pkg string }{{h.train, "./cmd/train"}, {h.onnxcheck, "./cmd/onnxcheck"}} {
		// Without -tags mpi: the cases run one process, no mpirun.
		cmd := exec.Command(goTool, "build", "-o", b.out, b.pkg)
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	cache := filepath.Join(h.dir, "cache")
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "GOMAXPROCS" || k == "GOTRACEBACK" || k == "OPENBLAS_NUM_THREADS" || strings.HasPrefix(k, "HORA_") {
			continue
		}
		h.env = append(h.env, kv)
	}
	// HORA_CACHE_DIR keeps the GEMM choice the first run measures out of
	// the user's cache folder. OpenBLAS, which Hora calls with one thread,
	// would otherwise reserve buffers for a thread per core at load time
	// (address space that ulimit -v counts, more on bigger machines).
	h.env = append(h.env, "GOMAXPROCS=2", "HORA_CACHE_DIR="+cache, "OPENBLAS_NUM_THREADS=1")
	return h
}

// env is one case's world: its temporary folder, and the harness.
type env struct {
	t   *testing.T
	h   *harness
	dir string   // the case's temporary folder
	cwd string   // the command's working folder (default dir)
	env []string // added to the command's environment
	// started are processes a setup started (killed at the end of the
	// case).
	started []background
	// msg holds more patterns the message must match, known only once
	// the inputs exist (a PID, say).
	msg []string
}

// runCase runs c and returns its verdict.
func (h *harness) runCase(t *testing.T, c tcase) outcome {
	e := &env{t: t, h: h, dir: t.TempDir()}
	e.cwd = e.dir
	t.Cleanup(e.killStarted)
	args := c.setup(e)
	switch args[0] {
	case "train":
		args[0] = h.train
	case "onnxcheck":
		args[0] = h.onnxcheck
	default:
		t.Fatalf("case %s: command %q is neither train nor onnxcheck", c.name, args[0])
	}
	before := map[string]map[string]string{}
	for _, k := range c.keep {
		before[k] = snapshot(t, filepath.Join(e.dir, k))
	}
	r := h.execute(t, e, c, args)
	for _, k := range c.keep {
		r.changed = append(r.changed, diffSnapshots(k, before[k], snapshot(t, filepath.Join(e.dir, k)))...)
	}
	o := outcome{name: c.name, r: r, want: c.wanted()}
	o.got, o.note = classify(e, c, r, filepath.Base(args[0]) == "onnxcheck")
	return o
}

// wanted lists the verdicts c accepts.
func (c tcase) wanted() []verdict {
	var w []verdict
	if len(c.msg) > 0 {
		w = append(w, clearError)
	}
	if c.ok != nil {
		w = append(w, correct)
	}
	return w
}

// execute runs one command line under the limits.
func (h *harness) execute(t *testing.T, e *env, c tcase, args []string) *result {
	timeout := c.timeout
	if timeout == 0 {
		timeout = caseTimeout
	}
	cmd := e.limited(args)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &limitedBuffer{b: &stdout, max: 1 << 20}
	cmd.Stderr = &limitedBuffer{b: &stderr, max: 1 << 20}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", args, err)
	}
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	r := &result{}
	var err error
	limit := time.NewTimer(timeout)
	defer limit.Stop()
	var term <-chan time.Time
	if c.sigterm > 0 {
		term = time.After(c.sigterm)
	}
	var prompt <-chan time.Time
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-term:
			syscall.Kill(pid, syscall.SIGTERM)
			prompt = time.After(promptExit)
		case <-prompt:
			r.lateExit = true
			syscall.Kill(-pid, syscall.SIGKILL)
			err = <-done
			break wait
		case <-limit.C:
			r.timedOut = true
			syscall.Kill(-pid, syscall.SIGKILL)
			err = <-done
			break wait
		}
	}
	syscall.Kill(-pid, syscall.SIGKILL) // what the command left behind
	r.elapsed = time.Since(start)
	r.stdout, r.stderr = stdout.String(), stderr.String()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.exit, r.signal = -1, ws.Signal().String()
		}
	default:
		t.Fatalf("running %v: %v", args, err)
	}
	if r.exit == 99 && strings.Contains(r.stderr, "ulimit") {
		t.Fatalf("ulimit -v %d failed: %s", memLimitKB, r.stderr)
	}
	return r
}

// limited returns the command that runs args (a binary and its
// arguments) in e.cwd under the memory limit, through bash's ulimit -v,
// in a process group of its own (so that it can be killed with what it
// started).
func (e *env) limited(args []string) *exec.Cmd {
	script := fmt.Sprintf(`ulimit -v %d || exit 99; exec "$@"`, memLimitKB)
	cmd := exec.Command("bash", append([]string{"-c", script, "redteam"}, args...)...)
	cmd.Dir = e.cwd
	cmd.Env = append(slices.Clone(e.h.env), e.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Runtime failures on stderr.
var (
	// traceRE finds a Go panic or fatal error.
	traceRE = regexp.MustCompile(`(?m)^(panic: |fatal error: |goroutine \d+ \[|SIGSEGV|SIGABRT|runtime: goroutine stack exceeds)`)
	// oomRE finds running out of memory.
	oomRE = regexp.MustCompile(`(?i)out of memory|cannot allocate memory`)
)

// classify gives r its verdict for case c, and a note saying why.
func classify(e *env, c tcase, r *result, onnxcheck bool) (verdict, string) {
	msg := r.stderr
	if onnxcheck {
		msg = r.stdout + r.stderr
	}
	switch {
	case len(r.changed) > 0:
		return dataLoss, "changed: " + strings.Join(r.changed, "; ")
	case r.timedOut:
		return hang, fmt.Sprintf("still running at the time limit (%v)", r.elapsed.Round(time.Second))
	case r.lateExit:
		return hang, fmt.Sprintf("still running %v after its SIGTERM", promptExit)
	case traceRE.MatchString(r.stderr) && oomRE.MatchString(r.stderr):
		return oom, "the Go runtime ran out of memory"
	case traceRE.MatchString(r.stderr):
		return panicked, "a Go panic or fatal error"
	case r.signal == "killed":
		return oom, "killed by SIGKILL (out of memory?)"
	case r.signal != "" && c.sigterm > 0 && r.signal == "terminated":
		return unclear, "killed by the SIGTERM it was sent, without a word"
	case r.signal != "":
		return panicked, "killed by signal " + r.signal
	}
	okExit := c.okExit
	if c.ok != nil && r.exit == okExit {
		if err := c.ok(e, r); err != nil {
			return silent, "exit " + strconv.Itoa(r.exit) + " but wrong: " + err.Error()
		}
		return correct, ""
	}
	if r.exit == 0 {
		if oomRE.MatchString(msg) {
			return oom, "exit 0 after running out of memory"
		}
		return silent, "exit 0 where an error was due"
	}
	if len(c.msg) > 0 {
		exits := c.exits
		if len(exits) == 0 {
			exits = []int{2}
		}
		var unmatched []string
		for _, re := range append(slices.Clone(c.msg), e.msg...) {
			if !regexp.MustCompile(re).MatchString(msg) {
				unmatched = append(unmatched, strconv.Quote(re))
			}
		}
		if slices.Contains(exits, r.exit) && len(unmatched) == 0 {
			return clearError, ""
		}
		if len(unmatched) > 0 && oomRE.MatchString(msg) {
			return oom, "an out-of-memory error"
		}
		note := fmt.Sprintf("exit %d (want %v)", r.exit, exits)
		if len(unmatched) > 0 {
			note += "; the message does not match " + strings.Join(unmatched, ", ")
		}
		return unclear, note
	}
	if oomRE.MatchString(msg) {
		return oom, "an out-of-memory error"
	}
	return unclear, fmt.Sprintf("exit %d, a correct result (exit %d) was due", r.exit, okExit)
}

// lockName is the lock file a train or resume process keeps in its run
// folder, rewritten (its PID) by each: no data, so snapshots skip it.
const lockName = ".lock"

// snapshot describes a file, or every entry of a folder, without
// following symbolic links: a SHA-256 per regular file, the target of a
// link, the kind of other entries (lock files aside).
func snapshot(t *testing.T, path string) map[string]string {
	s := map[string]string{}
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(path, p)
		if errors.Is(err, fs.ErrNotExist) {
			s[rel] = "missing"
			return nil
		}
		if err != nil {
			return err
		}
		if p != path && d.Name() == lockName {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch m := fi.Mode(); {
		case m.IsRegular():
			sum, err := fileSHA256(p)
			if err != nil {
				return err
			}
			s[rel] = fmt.Sprintf("file %d bytes %s", fi.Size(), sum)
		case m&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			s[rel] = "symlink to " + target
		case m.IsDir():
			s[rel] = "folder"
		default:
			desc := "special " + m.Type().String()
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				desc += fmt.Sprintf(" rdev %d", st.Rdev)
			}
			s[rel] = desc
		}
		return nil
	})
	if err != nil {
		t.Fatalf("hashing %s: %v", path, err)
	}
	return s
}

// fileSHA256 returns the SHA-256 of a regular file, in hex.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// diffSnapshots lists what changed under the kept path name.
func diffSnapshots(name string, before, after map[string]string) []string {
	var out []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			a = "missing"
			fallthrough
		case a != b:
			out = append(out, fmt.Sprintf("%s: %s, was %s", filepath.Join(name, p), a, b))
		}
	}
	for p, a := range after {
		if _, ok := before[p]; !ok {
			out = append(out, fmt.Sprintf("%s: new %s", filepath.Join(name, p), a))
		}
	}
	slices.Sort(out)
	return out
}

// background is a process a setup started.
type background struct {
	pid  int
	done chan struct{} // closed when it has ended
}

// killStarted ends the processes a setup started that still run (with
// their process groups), and waits for them.
func (e *env) killStarted() {
	for _, b := range e.started {
		select {
		case <-b.done:
		default:
			syscall.Kill(-b.pid, syscall.SIGKILL)
			<-b.done
		}
	}
}

// record keeps a case's outcome for the report.
func (h *harness) record(o outcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.outcomes = append(h.outcomes, o)
}

// report formats the table of verdicts and the failing cases.
func (h *harness) report(elapsed time.Duration) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	slices.SortFunc(h.outcomes, func(a, b outcome) int { return strings.Compare(a.name, b.name) })
	counts := map[verdict]int{}
	ran, skipped := 0, 0
	var failing []outcome
	for _, o := range h.outcomes {
		if o.skipped {
			skipped++
			continue
		}
		ran++
		counts[o.got]++
		if !slices.Contains(o.want, o.got) {
			failing = append(failing, o)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "redteam report: %d cases run (%d skipped) in %v, %d at a time, ulimit -v %d KB, %v per case\n",
		ran, skipped, elapsed.Round(time.Second), parallel, memLimitKB, caseTimeout)
	fmt.Fprintf(&b, "  %-12s %5s\n", "verdict", "cases")
	for _, v := range verdicts {
		fmt.Fprintf(&b, "  %-12s %5d\n", v, counts[v])
	}
	fmt.Fprintf(&b, "%d cases end with a verdict they do not want:\n", len(failing))
	for _, o := range failing {
		fmt.Fprintf(&b, "- %s: %s (want %s), exit %d", o.name, o.got, joinVerdicts(o.want), o.r.exit)
		if o.r.signal != "" {
			fmt.Fprintf(&b, " (%s)", o.r.signal)
		}
		fmt.Fprintf(&b, ", %v", o.r.elapsed.Round(10*time.Millisecond))
		if o.note != "" {
			fmt.Fprintf(&b, ": %s", o.note)
		}
		b.WriteByte('\n')
		for _, line := range tail(o.r.stdout, 2) {
			fmt.Fprintf(&b, "    > %s\n", line)
		}
		for _, line := range tail(o.r.stderr, 4) {
			fmt.Fprintf(&b, "    | %s\n", line)
		}
	}
	return b.String()
}

// joinVerdicts formats the verdicts a case wants.
func joinVerdicts(vs []verdict) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, " or ")
}

// tail returns the last n non-empty lines of s, each cut to 300 bytes;
// of a Go panic or fatal error, its first line and the first frame of
// the module's code in its stack instead (where it happened).
func tail(s string, n int) []string {
	var lines []string
	if trace := traceRE.FindStringIndex(s); trace != nil {
		s = s[trace[0]:]
		all := strings.Split(s, "\n")
		lines = append(lines, all[0])
		for i, l := range all {
			if strings.HasPrefix(l, "github.com/hora-dl/hora/") && i+1 < len(all) {
				fn := l
				if k := strings.LastIndex(l, "("); k > 0 {
					fn = l[:k] // the arguments off
				}
				at, _, _ := strings.Cut(strings.TrimSpace(all[i+1]), " ")
				lines = append(lines, "at "+fn+" "+at)
				break
			}
		}
	} else {
		for _, l := range strings.Split(s, "\n") {
			if strings.TrimSpace(l) != "" {
				lines = append(lines, l)
			}
		}
		lines = lines[max(0, len(lines)-n):]
	}
	for i, l := range lines {
		if len(l) > 300 {
			lines[i] = l[:300] + "…"
		}
	}
	return lines
}

// stderrMatches checks that the command's stderr matches re.
func stderrMatches(re string) func(e *env, r *result) error {
	return func(e *env, r *result) error {
		if !regexp.MustCompile(re).MatchString(r.stderr) {
			return fmt.Errorf("stderr does not match %q", re)
		}
		return nil
	}
}

// stdoutMatches checks that the command's stdout matches re.
func stdoutMatches(re string) func(e *env, r *result) error {
	return func(e *env, r *result) error {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			return fmt.Errorf("stdout does not match %q", re)
		}
		return nil
	}
}

// startBackground starts a command line ("train" first) under the
// cases' limits, without waiting for it; it is killed when the case
// ends. It returns its process ID.
func (e *env) startBackground(args ...string) int {
	e.t.Helper()
	args[0] = e.h.train
	cmd := e.limited(args)
	if err := cmd.Start(); err != nil {
		e.fatalf("starting %v: %v", args, err)
	}
	b := background{pid: cmd.Process.Pid, done: make(chan struct{})}
	e.started = append(e.started, b)
	go func() {
		cmd.Wait()
		close(b.done)
	}()
	return b.pid
}

// waitFor waits until path exists, up to 15 s.
func (e *env) waitFor(path string) {
	e.t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	e.fatalf("%s did not appear within 15 s", path)
}
