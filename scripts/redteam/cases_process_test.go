package redteam

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// holderRE is how a message says that another process holds the run.
const holderRE = `(?i)in use|held|lock|another|already|running|\bpid\b|process`

// startLongRun starts, in the background, a training run of the tiny
// config that lasts until it is killed, into run/, and waits until it
// has written a checkpoint. It returns the config and the process ID.
func startLongRun(e *env) (cfg string, pid int) {
	e.t.Helper()
	cfg = e.tinyConfig("c.yaml", "")
	pid = e.startBackground("train", "-config", cfg, "-out", e.path("run"), "-set", "train.epochs=1000000")
	e.waitFor(e.path("run/checkpoints/best.json"))
	e.msg = append(e.msg, `\b`+strconv.Itoa(pid)+`\b`)
	return cfg, pid
}

// processCases are runs that meet other processes and signals.
func processCases() []tcase {
	return []tcase{
		{
			// The same training command started twice into one folder:
			// the second must fail at once, naming the PID of the first.
			name: "two_trainers_same_folder",
			setup: func(e *env) []string {
				cfg, _ := startLongRun(e)
				return []string{"train", "-config", cfg, "-out", e.path("run")}
			},
			msg: []string{holderRE},
		},
		{
			// The second with -overwrite: it must not delete the
			// checkpoints of the run in progress.
			name: "two_trainers_overwrite",
			setup: func(e *env) []string {
				cfg, _ := startLongRun(e)
				return []string{"train", "-config", cfg, "-out", e.path("run"), "-overwrite"}
			},
			msg: []string{holderRE},
		},
		{
			// resume of a run that is still training.
			name: "resume_while_training",
			setup: func(e *env) []string {
				startLongRun(e)
				return []string{"train", "resume", "-run", e.path("run"), "-set", "train.epochs=1000000"}
			},
			msg: []string{holderRE},
		},
		{
			// One SIGTERM during training: the run writes a checkpoint
			// and ends with status 130 at once.
			name:    "sigterm_during_training",
			sigterm: 2 * time.Second,
			setup: func(e *env) []string {
				cfg := e.tinyConfig("c.yaml", "")
				return []string{"train", "-config", cfg, "-out", e.path("run"), "-set", "train.epochs=1000000"}
			},
			okExit: 130,
			ok: func(e *env, r *result) error {
				if err := stderrMatches(`(?i)interrupt`)(e, r); err != nil {
					return err
				}
				found, _ := filepath.Glob(e.path("run/checkpoints/step-*/manifest.json"))
				if len(found) == 0 {
					return fmt.Errorf("no checkpoint in %s", e.path("run/checkpoints"))
				}
				if _, err := os.Stat(e.path("run/config.yaml")); err != nil {
					return err
				}
				return nil
			},
		},
	}
}
