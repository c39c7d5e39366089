package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// inputError marks an error caused by the user's input (flags, config,
// data files): run reports it with exit status 2.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

// setFlags collects repeated -set key=value flags.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, " ") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// run parses args, trains, and returns the process exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML config `file` (required)")
	out := fs.String("out", "", "output `dir` (overrides output.dir)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile to `file`")
	exportONNX := fs.String("export-onnx", "", "after training, export the model to this ONNX `file` (overrides export.onnx)")
	var sets setFlags
	fs.Var(&sets, "set", "override a config value, e.g. -set train.epochs=1 (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: train -config FILE [-set key=value ...] [-out DIR] [-export-onnx FILE]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "train: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if *configPath == "" {
		fmt.Fprintln(stderr, "train: -config is required")
		fs.Usage()
		return 2
	}
	cfg, err := LoadConfig(*configPath, sets)
	if err != nil {
		fmt.Fprintf(stderr, "train: %v\n", err)
		return 2
	}
	if *out != "" {
		cfg.Output.Dir = *out
	}
	if *exportONNX != "" {
		cfg.Export.ONNX = *exportONNX
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "train: -cpuprofile: %v\n", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "train: -cpuprofile: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	err = train(ctx, cfg, stdout, stderr)
	var ie inputError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ie):
		fmt.Fprintf(stderr, "train: %v\n", err)
		return 2
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "train: interrupted; the last completed epoch's checkpoint is intact")
		return 130
	default:
		fmt.Fprintf(stderr, "train: %v\n", err)
		return 1
	}
}
