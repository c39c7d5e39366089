// Command hora-bench measures Hora on the workloads of `make bench` and
// prints one JSON object per line, the same lines bench/pytorch_bench.py
// prints for PyTorch:
//
//	{"framework":"hora","workload":"sgemm 1024","unit":"GFLOP/s","value":123.4}
//
// Usage (from the repository root, after `make build`):
//
//	hora-bench [-min-time 0.5s] [-zoo-time 3s] [-zoo-model NAME,...] [-zoo-in-process] [-train bin/train] [-configs configs] [GROUP ...]
//	hora-bench -round-trip
//	hora-bench -host-state
//
// The groups are sgemm, mlp-gemm, train-step, inference, mlp-epoch,
// cnn-epoch and zoo; none named runs them all. The epoch groups run the
// real trainer (bin/train) for one epoch and read samples_per_sec and
// test_accuracy from its metrics.jsonl. The train-step group measures one
// steady-state training step with testing.Benchmark (samples/s,
// allocations and bytes per step); the same benchmarks run under
// `go test -bench . ./bench/hora`. The zoo group measures the trainer's
// step of each zoo config (LeNet-5, ResNet-8, ResNet-20, MobileNet, the
// Transformer classifier, the character-level language model) at the
// config's batch size, and prints each model's parameter count and the
// peak resident memory of a process that trains it alone (each model runs
// in a process of its own; -zoo-model picks models, -zoo-in-process runs
// them in this process), against the PyTorch twins of bench/zoo_twins.py.
// -round-trip prints a cache line's round trip between two threads
// (package roundtrip), which bench/run.sh shows after each measurement,
// and -host-state the state it tells (roundtrip.State), which bench/run.sh
// compares before, between and after the two sides of a pair.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hora-dl/hora/bench/internal/roundtrip"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/internal/hostcpu"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/tensor"
)

// groups lists the workload groups in the order they run.
var groups = []string{"sgemm", "mlp-gemm", "train-step", "inference", "mlp-epoch", "cnn-epoch", "zoo"}

// row is one measurement, one line of output.
type row struct {
	Framework string  `json:"framework"`
	Workload  string  `json:"workload"`
	Unit      string  `json:"unit"`
	Value     float64 `json:"value"`
}

// info is a fact about the run (the GEMM backend, the CPU), one line of
// output.
type info struct {
	Framework string `json:"framework"`
	Info      string `json:"info"`
	Value     string `json:"value"`
}

type bench struct {
	stdout  io.Writer
	out     *json.Encoder
	minTime time.Duration
	zooTime time.Duration // least time each zoo training step is measured
	train   string        // path of bin/train
	configs string        // folder of the shipped configs
	// zooModels are the zoo configs to measure (-zoo-model; all when
	// empty), zooInProcess whether to measure them in this process
	// rather than each in a process of its own.
	zooModels    []string
	zooInProcess bool
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hora-bench:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("hora-bench", flag.ContinueOnError)
	minTime := fs.Duration("min-time", 500*time.Millisecond, "least time each GEMM and inference measurement runs")
	zooTime := fs.Duration("zoo-time", zooMinTime, "least time each zoo training step is measured")
	train := fs.String("train", "bin/train", "the trainer binary, for the epoch groups")
	configs := fs.String("configs", "configs", "folder of fashion-mnist-{mlp,cnn}.yaml, for the epoch groups")
	zooModel := fs.String("zoo-model", "", "the zoo configs to measure, comma separated: files of configs/, their model names, or "+zooNoModel+" (the process without a model) [all]")
	zooInProcess := fs.Bool("zoo-in-process", false, "measure the zoo models in this process (peak memory is then the largest of all so far) instead of each in a process of its own")
	roundTrip := fs.Bool("round-trip", false, "print a cache line's round trip between two threads (the state of a VM's vCPUs) and exit")
	hostState := fs.Bool("host-state", false, "print the state the round trip tells (shared cache, no shared cache, one thread) and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: hora-bench [flags] [GROUP ...]\ngroups: %s (default: all)\n", strings.Join(groups, ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *roundTrip {
		_, err := fmt.Fprintln(stdout, roundtrip.Measure(100000))
		return err
	}
	if *hostState {
		_, err := fmt.Fprintln(stdout, roundtrip.State(roundtrip.Measure(100000)))
		return err
	}
	todo := fs.Args()
	if len(todo) == 0 {
		todo = groups
	}
	for _, g := range todo {
		if !slices.Contains(groups, g) {
			return fmt.Errorf("unknown group %q (known: %s)", g, strings.Join(groups, ", "))
		}
	}
	b := &bench{stdout: stdout, out: json.NewEncoder(stdout), minTime: *minTime, zooTime: *zooTime, train: *train, configs: *configs, zooInProcess: *zooInProcess}
	if *zooModel != "" {
		var err error
		if b.zooModels, err = zooModelsFlag(*zooModel); err != nil {
			return err
		}
	}
	if err := b.out.Encode(info{Framework: "hora", Info: "gemm backend", Value: gemmBackend()}); err != nil {
		return err
	}
	if err := b.out.Encode(info{Framework: "hora", Info: "go", Value: fmt.Sprintf("%s, GOMAXPROCS %d", runtime.Version(), runtime.GOMAXPROCS(0))}); err != nil {
		return err
	}
	if cpu := hostcpu.Describe(); cpu != "" {
		if err := b.out.Encode(info{Framework: "hora", Info: "cpu", Value: cpu}); err != nil {
			return err
		}
	}
	for _, g := range todo {
		var err error
		switch g {
		case "sgemm":
			for _, n := range sgemmSizes {
				if err = b.gemm("sgemm ", sgemm(n)); err != nil {
					break
				}
			}
		case "mlp-gemm":
			for _, s := range mlpGEMMs() {
				if err = b.gemm("mlp gemm ", s); err != nil {
					break
				}
			}
		case "train-step":
			err = b.trainSteps()
		case "inference":
			err = b.inference()
		case "mlp-epoch":
			err = b.epoch("mlp")
		case "cnn-epoch":
			err = b.epoch("cnn")
		case "zoo":
			err = b.zoo()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", g, err)
		}
	}
	return nil
}

func (b *bench) emit(workload, unit string, value float64) error {
	return b.out.Encode(row{Framework: "hora", Workload: workload, Unit: unit, Value: value})
}

func (b *bench) gemm(prefix string, g gemm) error {
	x, y := g.operands()
	// The output's memory is recycled, as in a training step (and as
	// PyTorch's caching allocator does).
	arena := tensor.NewArena()
	perSec := measure(b.minTime, func() {
		g.run(x.WithArena(arena), y)
		arena.Reset()
	})
	return b.emit(prefix+g.name, "GFLOP/s", perSec*g.flops()/1e9)
}

// trainSteps measures one steady-state training step of each model with
// testing.Benchmark, as BenchmarkTrainStepMLP and BenchmarkTrainStepCNN do.
func (b *bench) trainSteps() error {
	for _, name := range []string{"mlp", "cnn"} {
		j, err := newTrainJob(name)
		if err != nil {
			return err
		}
		r := testing.Benchmark(benchTrainStep(j))
		if r.N == 0 {
			return fmt.Errorf("%s train step failed (see the message above)", name)
		}
		w := name + " train step"
		if err := b.emit(w, "samples/s", r.Extra["samples/s"]); err != nil {
			return err
		}
		if err := b.emit(w+" allocs/op", "allocs/op", float64(r.AllocsPerOp())); err != nil {
			return err
		}
		if err := b.emit(w+" bytes/op", "B/op", float64(r.AllocedBytesPerOp())); err != nil {
			return err
		}
	}
	return nil
}

// inference measures the CNN's forward pass on a batch of 128 in
// evaluation mode without gradients.
func (b *bench) inference() error {
	j, err := newTrainJob("cnn")
	if err != nil {
		return err
	}
	layers.Eval(j.Model)
	x, err := tensor.FromSlice(j.Dev, j.Batch.X, j.Batch.Shape...)
	if err != nil {
		return err
	}
	perSec := measure(b.minTime, func() { j.Infer(x) })
	return b.emit(fmt.Sprintf("cnn inference batch %d", batchSize), "samples/s", perSec*batchSize)
}

// epoch trains configs/fashion-mnist-<model>.yaml for one epoch with the
// real trainer and reports its samples/s, its peak resident memory and
// its test accuracy.
func (b *bench) epoch(model string) error {
	dir, err := os.MkdirTemp("", "hora-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(b.train, "-config", filepath.Join(b.configs, "fashion-mnist-"+model+".yaml"),
		"-set", "train.epochs=1", "-set", "output.progress=false", "-out", dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", cmd, err, out.Bytes())
	}
	m, err := lastMetrics(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		return err
	}
	if err := b.emit(model+" train epoch", "samples/s", m.SamplesPerSec); err != nil {
		return err
	}
	if err := b.emit(model+" peak memory (1 epoch)", "MiB", m.PeakRSSMiB); err != nil {
		return err
	}
	return b.emit(model+" test accuracy (1 epoch)", "accuracy", m.TestAccuracy)
}

// epochMetrics holds the fields of the trainer's metrics.jsonl that the
// benchmark reports.
type epochMetrics struct {
	SamplesPerSec float64 `json:"samples_per_sec"`
	TestAccuracy  float64 `json:"test_accuracy"`
	PeakRSSMiB    float64 `json:"peak_rss_mib"`
}

// lastMetrics reads the last epoch record of a metrics.jsonl file (its
// lines of "kind" "epoch"; files written before kinds existed have only
// those).
func lastMetrics(path string) (epochMetrics, error) {
	var m epochMetrics
	f, err := os.Open(path)
	if err != nil {
		return m, err
	}
	defer f.Close()
	var last []byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct {
			Kind string `json:"kind"`
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) > 0 && json.Unmarshal(line, &rec) == nil && (rec.Kind == "" || rec.Kind == "epoch") {
			last = slices.Clone(line)
		}
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	if last == nil {
		return m, fmt.Errorf("%s: no metrics", path)
	}
	if err := json.Unmarshal(last, &m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// gemmBackend describes how the CPU device multiplies matrices (the BLAS
// library it loaded, or its own kernels), with the reason when a BLAS
// library was asked for but could not be used.
func gemmBackend() string {
	d := cpu.Default()
	name := d.Backend()
	if err := d.BackendError(); err != nil && !cpu.IsNoBLAS(err) {
		name += " (" + err.Error() + ")"
	}
	return name
}
