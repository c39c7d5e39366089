package redteam

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"
)

// allCases is the corpus.
func allCases() []tcase {
	var all []tcase
	for _, group := range [][]tcase{
		writeCases(), checkpointCases(), configCases(), dataCases(),
		predictCases(), onnxCases(), processCases(),
	} {
		all = append(all, group...)
	}
	return all
}

// TestRedteam runs every case of the corpus (see the package comment).
func TestRedteam(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the commands and runs them on about a hundred inputs: skipped with -short")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the corpus uses Linux features (named pipes, mknod, ulimit -v)")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash, for ulimit -v")
	}
	cases := allCases()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("two cases are named %s", c.name)
		}
		seen[c.name] = true
	}
	reportOnly := os.Getenv("REDTEAM_REPORT_ONLY") != ""
	start := time.Now()
	h := newHarness(t)
	t.Cleanup(func() {
		// After every case (the subtests are parallel, so they run once
		// this function has returned).
		rep := h.report(time.Since(start))
		t.Log("\n" + rep)
		if path := os.Getenv("REDTEAM_REPORT"); path != "" {
			if err := os.WriteFile(path, []byte(rep), 0o644); err != nil {
				t.Errorf("writing the report: %v", err)
			}
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.root && os.Geteuid() != 0 {
				h.record(outcome{name: c.name, skipped: true})
				t.Skip("needs root (mknod)")
			}
			h.slots <- struct{}{}
			defer func() { <-h.slots }()
			o := h.runCase(t, c)
			h.record(o)
			if slices.Contains(o.want, o.got) {
				t.Logf("%s, exit %d after %v\nstdout: %s\nstderr: %s", o.got, o.r.exit,
					o.r.elapsed.Round(10*time.Millisecond), lastBytes(o.r.stdout, 500), lastBytes(o.r.stderr, 1000))
				return
			}
			report := t.Errorf
			if reportOnly {
				report = t.Logf
			}
			report("%s (want %s): exit %d %s after %v: %s\nstdout: %s\nstderr: %s", o.got, joinVerdicts(o.want),
				o.r.exit, o.r.signal, o.r.elapsed.Round(10*time.Millisecond), o.note, lastBytes(o.r.stdout, 1000), lastBytes(o.r.stderr, 2000))
		})
	}
}

// lastBytes returns the end of s, at most n bytes.
func lastBytes(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
