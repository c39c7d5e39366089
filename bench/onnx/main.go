// Command onnx-bench times CNN inference of ONNX models in Hora (imported
// with onnx.Load) and in onnxruntime, in the same run on the same machine,
// and prints one table: model, batch, Hora ms, onnxruntime ms, Hora's
// speed (onnxruntime's time over Hora's) and the speed issue's target
// (at least 1×), headed by the processor's model and generation.
//
// Usage (from the repository root):
//
//	go run ./bench/onnx [-models DIR] [-batch 1,32] [-min-time 2s] [-repeat 1] [-threads N]
//		[-hora-only] [-cpuprofile FILE] [MODEL ...]
//
// The models are torchvision's resnet18 and mobilenet_v2 (random seeded
// weights, 3×224×224 input, 1000 classes, opset 17, dynamic batch) as
// scripts/onnx_models.py --bench exports them; they are written to DIR
// (default: hora-onnx-bench in the temporary folder) on the first run,
// which needs Debian's python3-torch, python3-torchvision and python3-onnx,
// and reused afterwards. onnxruntime runs in Node.js through
// bench/onnx/ort_time.js, which loads onnxruntime-node from scripts/ort
// (cd scripts/ort && npm install --ignore-scripts); where there is no
// Node.js, -ort bench/onnx/ort_time.py times it with onnxruntime's Python
// package instead, measuring the same way.
//
// Each measurement runs the model 3 times to warm up, then until -min-time
// has passed (and at least 5 times), and takes the median time of one run;
// Hora and onnxruntime take turns (the first swaps on every repetition) and
// with -repeat N the table reports the median of the N measurements; the
// line of each pair of measurements ends with the cache-line round trip
// between two of the process's threads timed after it (roundtrip.Measure),
// which tells a virtual machine's states apart, and a pair during which
// the state changed is measured again (see measurePair). Both
// use -threads threads (default GOMAXPROCS): Hora's CPU device and
// onnxruntime's intraOpNumThreads. Hora loads the model for inference
// (onnx.Frozen: constants, BatchNorm folded into the convolutions), runs
// it in inference mode (layers.Eval) with no gradient recorded
// (autograd.NoGrad) and recycles the memory of each run with a
// tensor.Arena, as a serving loop would.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/bench/internal/roundtrip"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/internal/hostcpu"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/tensor"
)

// models lists the benchmark models, the names scripts/onnx_models.py
// --bench knows.
var models = []string{"resnet18", "mobilenet_v2"}

// roundTrips is how many cache-line round trips roundtrip.Measure times
// after each measurement (a few tens of milliseconds).
const roundTrips = 100000

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "onnx-bench:", err)
		os.Exit(1)
	}
}

type config struct {
	dir     string
	batches []int
	minTime time.Duration
	repeat  int
	threads int
	python  string
	node    string
	ortJS   string
	script  string
	// horaOnly skips onnxruntime.
	horaOnly bool
}

// result is the median time of one run of a model at one batch size.
type result struct {
	model      string
	batch      int
	hora, ort  []float64 // ms, one per repetition
	horaMedian float64
	ortMedian  float64
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("onnx-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var batches string
	fs.StringVar(&c.dir, "models", filepath.Join(os.TempDir(), "hora-onnx-bench"), "folder of the .onnx files (written on the first run)")
	fs.StringVar(&batches, "batch", "1,32", "comma-separated batch sizes")
	fs.DurationVar(&c.minTime, "min-time", 2*time.Second, "least time of one measurement")
	fs.IntVar(&c.repeat, "repeat", 1, "measurements per model and batch; the median is reported")
	fs.IntVar(&c.threads, "threads", runtime.GOMAXPROCS(0), "threads for Hora and onnxruntime")
	fs.StringVar(&c.python, "python", "/usr/bin/python3", "the Python with torch and torchvision, to export the models (and with onnxruntime, for -ort ort_time.py)")
	fs.StringVar(&c.node, "node", "node", "the Node.js binary, for onnxruntime")
	fs.StringVar(&c.ortJS, "ort", filepath.Join("bench", "onnx", "ort_time.js"), "the onnxruntime timing script: ort_time.js runs in -node, ort_time.py (onnxruntime's Python package) in -python")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the Hora runs to this file")
	fs.BoolVar(&c.horaOnly, "hora-only", false, "time Hora alone (no onnxruntime column), e.g. with -cpuprofile")
	fs.StringVar(&c.script, "script", filepath.Join("scripts", "onnx_models.py"), "the export script")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: onnx-bench [flags] [MODEL ...]\nmodels: %s (default: all)\n", strings.Join(models, ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if c.batches, err = parseBatches(batches); err != nil {
		return err
	}
	if c.repeat < 1 {
		return fmt.Errorf("-repeat %d: expected at least 1", c.repeat)
	}
	if c.threads < 1 {
		return fmt.Errorf("-threads %d: expected at least 1", c.threads)
	}
	todo := fs.Args()
	if len(todo) == 0 {
		todo = models
	}
	for _, m := range todo {
		if !slices.Contains(models, m) {
			return fmt.Errorf("unknown model %q (known: %s)", m, strings.Join(models, ", "))
		}
	}
	if err := c.ensureModels(todo, stderr); err != nil {
		return err
	}
	cpu.Default().SetThreads(c.threads)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	var results []*result
	for _, name := range todo {
		path := filepath.Join(c.dir, name+".onnx")
		m, err := onnx.Load(path, onnx.Frozen()) // inference only
		if err != nil {
			return err
		}
		layers.Eval(m)
		for _, batch := range c.batches {
			r := &result{model: name, batch: batch}
			for i := range c.repeat {
				hora, ort, trip, err := c.measurePair(m, path, batch, i%2 == 0, stderr)
				if err != nil {
					return fmt.Errorf("%s batch %d: %w", name, batch, err)
				}
				r.hora, r.ort = append(r.hora, hora), append(r.ort, ort)
				fmt.Fprintf(stderr, "onnx-bench: %s batch %d, run %d/%d: hora %.2f ms, ort %.2f ms (cache-line round trip between two threads %v)\n",
					name, batch, i+1, c.repeat, hora, ort, trip)
			}
			r.horaMedian, r.ortMedian = median(r.hora), median(r.ort)
			results = append(results, r)
		}
	}
	return c.table(stdout, results)
}

// pairTries is how many times measurePair measures a pair whose host
// state changed while it ran.
const pairTries = 3

// measurePair times model m (path, for onnxruntime) at batch in Hora and
// in onnxruntime (NaN with -hora-only), Hora first when horaFirst, and
// returns the two times and the cache-line round trip after them. A pair
// is measured again, up to pairTries times in all, when the round trips
// timed before, between and after its two measurements tell different
// host states (roundtrip.State): on a virtual machine whose vCPUs move
// between sharing a cache and not, one framework timed in one state and
// the other in the other differ by up to 1.6× (mobilenet_v2 at batch 1,
// 2 Zen 4 vCPUs: 3.7–4.2 ms against 6.0–6.6), which says nothing of
// either.
func (c *config) measurePair(m *onnx.Model, path string, batch int, horaFirst bool, stderr io.Writer) (hora, ort float64, trip time.Duration, err error) {
	for try := 1; ; try++ {
		trips := []time.Duration{roundtrip.Measure(roundTrips)}
		hora, ort = math.NaN(), math.NaN()
		for k := range 2 {
			if (k == 0) == horaFirst {
				if hora, err = timeHora(m, batch, c.minTime); err != nil {
					return 0, 0, 0, fmt.Errorf("hora: %w", err)
				}
			} else if !c.horaOnly {
				if ort, err = c.timeORT(path, batch); err != nil {
					return 0, 0, 0, fmt.Errorf("onnxruntime: %w", err)
				}
			}
			trips = append(trips, roundtrip.Measure(roundTrips))
		}
		states := make([]string, len(trips))
		for i, d := range trips {
			states[i] = roundtrip.State(d)
		}
		trip = trips[len(trips)-1]
		if c.horaOnly || !slices.ContainsFunc(states, func(s string) bool { return s != states[0] }) {
			return hora, ort, trip, nil
		}
		if try == pairTries {
			fmt.Fprintf(stderr, "onnx-bench: the host state changed during each of %d tries (last: %s); keeping the last pair\n", pairTries, strings.Join(states, " → "))
			return hora, ort, trip, nil
		}
		fmt.Fprintf(stderr, "onnx-bench: the host state changed during the pair (%s: hora %.2f ms, ort %.2f ms); measuring it again\n", strings.Join(states, " → "), hora, ort)
	}
}

func parseBatches(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || b < 1 {
			return nil, fmt.Errorf("-batch %q: %q is not a positive integer", s, f)
		}
		out = append(out, b)
	}
	return out, nil
}

// ensureModels exports the models missing from c.dir.
func (c *config) ensureModels(names []string, stderr io.Writer) error {
	var missing []string
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(c.dir, n+".onnx")); errors.Is(err, os.ErrNotExist) {
			missing = append(missing, n)
		} else if err != nil {
			return err
		}
	}
	if len(missing) == 0 {
		return nil
	}
	fmt.Fprintf(stderr, "onnx-bench: exporting %s to %s with %s\n", strings.Join(missing, ", "), c.dir, c.script)
	cmd := exec.Command(c.python, c.script, "--bench", "--only", strings.Join(missing, ","), c.dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w (needs python3-torch, python3-torchvision and python3-onnx)\n%s", cmd, err, out.Bytes())
	}
	return nil
}

// timeHora returns the median time in ms of one inference of m on a
// random batch.
func timeHora(m *onnx.Model, batch int, minTime time.Duration) (float64, error) {
	if len(m.Inputs) != 1 || len(m.Inputs[0].Shape) != 4 {
		return 0, fmt.Errorf("expected one image input [batch, C, H, W], found %v", m.Inputs)
	}
	shape := slices.Clone(m.Inputs[0].Shape)
	shape[0] = batch
	rng := rand.New(rand.NewPCG(1, uint64(batch)))
	x := tensor.RandNormal(rng, 0, 1, shape...).To(tensor.CPU())
	// The first run, without an arena, is the reference the arena's runs
	// must reproduce (a check that recycling memory is safe here), within
	// float32 rounding: later runs of a batch may run in lanes (see
	// onnx.Model.Run), whose products of a few images may go to another
	// kernel (OpenBLAS for some classes without AVX-512).
	ref, err := m.Run(autograd.NoGrad(autograd.Constant(x)))
	if err != nil {
		return 0, err
	}
	want := ref[0].Value.Values()
	arena := tensor.NewArena()
	infer := func() ([]*autograd.Var, error) {
		return m.Run(autograd.NoGrad(autograd.Constant(x.WithArena(arena))))
	}
	for range 2 {
		outs, err := infer()
		if err != nil {
			return 0, err
		}
		if d := relDiff(outs[0].Value.Values(), want); !(d <= maxRelDiff) {
			return 0, fmt.Errorf("a run with a tensor.Arena gives other outputs than one without: they differ by %.3g of the largest output, expected at most %.0e", d, maxRelDiff)
		}
		arena.Reset()
	}
	return median(measure(minTime, func() {
		_, _ = infer() // a serving loop would read the predictions here
		arena.Reset()
	})), nil
}

// maxRelDiff is the largest difference relDiff accepts between two runs
// of a model on the same input: float32 rounding through a deep network
// (mobilenet_v2 at batch 32 without AVX-512, in lanes against the whole
// batch: 4.3e-7), far below what reading recycled memory too early gives.
const maxRelDiff = 1e-5

// relDiff returns the largest difference between got and want relative
// to want's largest magnitude (+Inf when their lengths differ, NaN where a
// value is NaN).
func relDiff(got, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var d, scale float64
	for i := range got {
		d = max(d, math.Abs(got[i]-want[i]))
		scale = max(scale, math.Abs(want[i]))
	}
	if d == 0 {
		return 0
	}
	return d / scale
}

// measure calls f 3 times to warm up, then until minTime has passed and
// at least 5 calls are timed, and returns the time of each timed call in
// ms.
func measure(minTime time.Duration, f func()) []float64 {
	for range 3 {
		f()
	}
	var times []float64
	start := time.Now()
	for {
		t0 := time.Now()
		f()
		times = append(times, float64(time.Since(t0))/1e6)
		if len(times) >= 5 && time.Since(start) >= minTime {
			return times
		}
	}
}

// timeORT runs ort_time.js and returns its median time in ms.
func (c *config) timeORT(path string, batch int) (float64, error) {
	args := []string{c.ortJS, path, strconv.Itoa(batch),
		strconv.FormatInt(c.minTime.Milliseconds(), 10), strconv.Itoa(c.threads)}
	runner := c.node
	if strings.HasSuffix(c.ortJS, ".py") {
		runner = c.python // ort_time.py: onnxruntime's Python package
	}
	cmd := exec.Command(runner, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s: %w\n%s", cmd, err, stderr.Bytes())
	}
	var r struct {
		MS float64 `json:"ms"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || r.MS <= 0 {
		return 0, fmt.Errorf("%s: unexpected output %q", cmd, stdout.Bytes())
	}
	return r.MS, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// onnxTarget is the speed issue's target for every model and batch: Hora at
// least as fast as onnxruntime on the same cores.
const onnxTarget = 1.0

func (c *config) table(w io.Writer, results []*result) error {
	host, _ := os.Hostname()
	fmt.Fprintf(w, "# %s, %s, %s, %d threads, GEMM backend %s, median of %d run(s) of >= %v each\n",
		cpuName(), host, runtime.Version(), c.threads, cpu.Default().Backend(), c.repeat, c.minTime)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\tbatch\thora ms\tort ms\tspeed (ort/hora)\ttarget\t")
	missed := 0
	for _, r := range results {
		speed := r.ortMedian / r.horaMedian
		verdict := "✔"
		if !(speed >= onnxTarget) { // NaN (no onnxruntime time) is no pass
			verdict = "✘"
			missed++
		}
		if c.horaOnly {
			verdict = "–"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f×\t≥ %g× %s\t\n", r.model, r.batch, r.horaMedian, r.ortMedian, speed, onnxTarget, verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c.horaOnly {
		_, err := fmt.Fprintln(w, "speed: onnxruntime's time over Hora's (above 1: Hora is faster); -hora-only: no target checked")
		return err
	}
	_, err := fmt.Fprintf(w, "speed: onnxruntime's time over Hora's (above 1: Hora is faster); %d target(s) missed\n", missed)
	return err
}

// cpuName is the processor's model and generation for the table's header
// (hostcpu.Describe), "unknown CPU" where the host does not say.
func cpuName() string {
	if d := hostcpu.Describe(); d != "" {
		return d
	}
	return "unknown CPU"
}
