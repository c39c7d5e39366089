package train

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/hora-dl/hora/dist"
)

// Main is the whole train command — train, resume, eval, predict, export
// and help, with their flags, mpirun support and -restarts — for a
// program that registers its own models or data sets first:
//
//	func main() {
//		train.RegisterModel("mynet", newMyNet)
//		os.Exit(train.Main(context.Background(), os.Args[1:]))
//	}
//
// args are the command-line arguments without the program name. Main
// writes to the process's stdout and stderr and returns the exit status
// (see Run). The first Ctrl-C (or SIGTERM) makes a training run write a
// checkpoint and end with status 130; a second one ends the process at
// once.
func Main(ctx context.Context, args []string) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal the default action is back, so that a
		// second one ends the process.
		<-ctx.Done()
		stop()
	}()
	defer stop()
	return Run(ctx, args, os.Stdout, os.Stderr)
}

// inputError marks an error caused by the user's input (flags, config,
// data files): run reports it with exit status 2.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

// Exit statuses of the command.
const (
	exitOK          = 0
	exitFailure     = 1   // the run failed (a rank died, a device failed, I/O)
	exitInput       = 2   // bad flags, config or data
	exitDiverged    = 3   // the loss stopped being finite
	exitEnvironment = 4   // the machine refused: a full disk, a read-only file system
	exitInterrupted = 130 // Ctrl-C: a checkpoint was written
)

// setFlags collects repeated -set key=value flags.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, " ") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

const usage = `usage:
  train [train] -config FILE [-set key=value ...] [-out DIR] [flags]   train a model
  train resume -run DIR [-set key=value ...]        continue a run from its last checkpoint
  train eval -run DIR [-checkpoint last|best|step-N] evaluate a checkpoint on the test set (JSON)
  train predict -run DIR [-checkpoint ...] FILE...   classify images (PNG, JPEG, GIF, IDX), JSON lines
  train predict -run DIR -prompt TEXT [-length N]    continue a text with a language model, JSON
  train export -run DIR [-checkpoint ...] -o FILE    write the model as ONNX
  train help config                                  print the configuration reference
Run "train COMMAND -h" for the flags of a command.`

// Run parses args (a command and its flags, as the train command takes
// them), runs the command and returns the process exit status: 0 done,
// 1 failure, 2 bad input (the message names the file, line, key or
// sample), 3 the loss diverged (NaN or Inf), 4 the machine refused (a
// full disk, a read-only file system), 130 interrupted (a checkpoint was
// written, or nothing had been trained yet). Messages go to stderr, results and progress
// to stdout. Cancelling ctx stops a training run as Ctrl-C does.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := "train"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "train":
		return trainCommand(ctx, args, false, stdout, stderr)
	case "resume":
		return trainCommand(ctx, args, true, stdout, stderr)
	case "eval":
		err = evalCommand(ctx, args, stdout, stderr)
	case "predict":
		err = predictCommand(ctx, args, stdout, stderr)
	case "export":
		err = exportCommand(ctx, args, stdout, stderr)
	case "help":
		if len(args) == 1 && args[0] == "config" {
			fmt.Fprint(stdout, ConfigReference())
			return exitOK
		}
		fmt.Fprintln(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "train: unknown command %q\n%s\n", cmd, usage)
		return exitInput
	}
	return exitCode(err, stderr)
}

// exitCode reports err on stderr and returns the exit status for it.
func exitCode(err error, stderr io.Writer) int {
	var ie inputError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ie):
		fmt.Fprintf(stderr, "train: %v\n", err)
		return exitInput
	case isEnvironmentError(err):
		fmt.Fprintf(stderr, "train: %v\n", err)
		return exitEnvironment
	case errors.Is(err, errDiverged):
		fmt.Fprintf(stderr, "train: %v\n", err)
		return exitDiverged
	case errors.Is(err, errInterrupted):
		fmt.Fprintln(stderr, "train: interrupted; the checkpoint of the last step was written")
		return exitInterrupted
	case errors.Is(err, errStoppedEarly):
		fmt.Fprintln(stderr, "train: interrupted while loading the data, before training started; no checkpoint was written")
		return exitInterrupted
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "train: interrupted; the last checkpoint is intact")
		return exitInterrupted
	default:
		fmt.Fprintf(stderr, "train: %v\n", err)
		return exitFailure
	}
}

// isEnvironmentError reports whether err comes from the machine rather
// than from the run or its input: a full disk or quota, a read-only file
// system. Running the job again would fail the same way, so -restarts
// does not.
func isEnvironmentError(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS)
}

// trainCommand is "train" (resume false) and "resume".
func trainCommand(ctx context.Context, args []string, resume bool, stdout, stderr io.Writer) int {
	name := "train"
	if resume {
		name = "resume"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML config `file` (required)")
	runDir := fs.String("run", "", "the run `dir` to resume (resume only)")
	out := fs.String("out", "", "output `dir` (overrides output.dir)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile to `file`")
	exportPath := fs.String("export-onnx", "", "after training, export the model to this ONNX `file` (overrides export.onnx)")
	quiet := fs.Bool("q", false, "quiet: print only the start, one line per epoch and the end (output.quiet)")
	jsonOut := fs.Bool("json", false, "print one JSON object per event (output.format json)")
	overwrite := fs.Bool("overwrite", false, "train into output.dir even if it holds the checkpoints of an earlier run (they are deleted)")
	startOver := fs.Bool("start-over", false, "resume: when no checkpoint of the run passes verification, delete them and train from the beginning (without it, resume refuses and changes nothing)")
	restarts := fs.Int("restarts", 0, "restart the job from its last checkpoint up to `N` times when it fails")
	np := fs.Int("np", 0, "start `N` ranks with mpirun and supervise them (0: one process, no mpirun)")
	hosts := fs.String("hosts", "", "with -np: the OpenMPI hostfile `file` of the hosts the ranks run on (a restart leaves out hosts that no longer answer)")
	var sets setFlags
	fs.Var(&sets, "set", "override a config value, e.g. -set train.epochs=1 (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitInput
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "train: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return exitInput
	}
	switch {
	case *np < 0:
		fmt.Fprintf(stderr, "train: -np %d: expected a number of ranks, at least 1 (0, the default, runs one process without mpirun)\n", *np)
		return exitInput
	case *restarts < 0:
		fmt.Fprintf(stderr, "train: -restarts %d: expected how many times to restart a failed job, 0 or more\n", *restarts)
		return exitInput
	case resume && *runDir == "":
		fmt.Fprintln(stderr, "train: resume needs -run DIR (the output.dir of the run)")
		return exitInput
	case !resume && *configPath == "":
		fmt.Fprintln(stderr, "train: -config is required")
		fs.Usage()
		return exitInput
	}
	opts := trainOptions{resume: resume, configPath: *configPath, runDir: *runDir, out: *out,
		exportPath: *exportPath, quiet: *quiet, json: *jsonOut, overwrite: *overwrite, startOver: *startOver,
		restarts: *restarts, np: *np, hosts: *hosts, cpuProfile: *cpuProfile, sets: sets, args: args}
	code, rank := exitOK, 0
	err := inWorld(ctx, func(comm dist.Communicator) error {
		var err error
		rank = comm.Rank()
		code, err = runTrainCommand(ctx, comm, opts, stdout, stderr)
		return err
	})
	var all everyRank
	if errors.As(err, &all) && rank != 0 {
		stderr = io.Discard // rank 0 says it for every rank
	}
	if err != nil {
		return exitCode(err, stderr)
	}
	return code
}

// trainOptions are the flags of train and resume.
type trainOptions struct {
	resume                  bool
	configPath, runDir, out string
	exportPath, cpuProfile  string
	quiet, json, overwrite  bool
	startOver               bool
	restarts, np            int
	hosts                   string // -hosts: the hostfile
	sets                    []string
	args                    []string // as given, for -restarts
}

// runTrainCommand is train and resume on one rank of comm: rank 0 reads
// the config (the run folder's for resume) and chooses the run folder;
// the other ranks receive both (see world.go). It returns the exit status
// of a -restarts launcher, or the run's error.
func runTrainCommand(ctx context.Context, comm dist.Communicator, o trainOptions, stdout, stderr io.Writer) (int, error) {
	path := o.configPath
	if o.resume {
		path = filepath.Join(o.runDir, configFile)
	}
	cfg, err := loadJobConfig(ctx, comm, path, o.sets)
	if err != nil {
		return 0, inputError{err}
	}
	switch {
	case o.resume:
		cfg.Output.Dir = o.runDir
	case o.out != "":
		cfg.Output.Dir = o.out
	}
	if o.exportPath != "" {
		cfg.Export.ONNX = o.exportPath
	}
	if o.quiet {
		cfg.Output.Quiet = true
	}
	if o.json {
		cfg.Output.Format = "json"
	}
	if !o.resume {
		var dir string
		var rank0Err error
		if comm.Rank() == 0 {
			dir, rank0Err = freshRunDir(cfg.Output.Dir, o.overwrite, o.out != "")
		}
		if dir, err = shareString(ctx, comm, dir, rank0Err); err != nil {
			return 0, err
		}
		if dir != cfg.Output.Dir {
			if comm.Rank() == 0 {
				fmt.Fprintf(stderr, "train: %s holds an earlier run (resume it with: train resume -run %s); this run goes to %s\n", cfg.Output.Dir, cfg.Output.Dir, dir)
			}
			cfg.Output.Dir = dir
		}
	}
	if o.hosts != "" && o.np == 0 {
		return 0, everyRank{inputError{errors.New("-hosts needs -np (the number of ranks)")}}
	}
	if o.restarts > 0 || o.np > 0 {
		if comm.Size() > 1 {
			return 0, everyRank{inputError{errors.New("-np and -restarts start the ranks themselves: run train without mpirun")}}
		}
		return launch(ctx, launchConfig{restarts: o.restarts, np: o.np, hosts: o.hosts, args: o.args, resume: o.resume, overwrite: o.overwrite, dir: cfg.Output.Dir}, stdout, stderr), nil
	}
	if o.cpuProfile != "" {
		if err := checkExportTarget(o.cpuProfile, protectedInputs(cfg)...); err != nil {
			return 0, inputError{fmt.Errorf("-cpuprofile: %w", err)}
		}
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return 0, inputError{fmt.Errorf("-cpuprofile: %w", err)}
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return 0, fmt.Errorf("-cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	return 0, train(ctx, comm, &job{cfg: cfg, resume: o.resume, overwrite: o.overwrite, startOver: o.startOver, stdout: stdout, stderr: stderr})
}

// freshRunDir returns the folder a new run writes to: dir, unless it
// holds checkpoints of an earlier run. Then an explicit -out is an error
// (pass -overwrite to replace the old run), and a folder taken from the
// config gets the first free suffix "-2", "-3", … so that nothing is
// lost. It only chooses: claimRunDir checks and claims the folder.
func freshRunDir(dir string, overwrite, explicit bool) (string, error) {
	if explicit {
		// A run in progress there is no earlier run to resume.
		if err := checkNotInUse(dir); err != nil {
			return "", inputError{err}
		}
	}
	if !hasCheckpoints(dir) || overwrite {
		return dir, nil // with overwrite, claimRunDir deletes them once it holds the folder's lock
	}
	if explicit {
		return "", inputError{fmt.Errorf("-out %s holds the checkpoints of an earlier run: continue it with `train resume -run %s`, or pass -overwrite to start over (deleting them)", dir, dir)}
	}
	for i := 2; ; i++ {
		d := fmt.Sprintf("%s-%d", dir, i)
		if !hasCheckpoints(d) {
			return d, nil
		}
	}
}

// hasCheckpoints reports whether the run folder dir holds checkpoints.
func hasCheckpoints(dir string) bool {
	entries, err := os.ReadDir(filepath.Join(dir, checkpointsDir))
	return err == nil && len(entries) > 0
}
