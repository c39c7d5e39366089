// Command hora-dist-bench measures Hora's distributed training under
// mpirun, for make bench-dist (bench/dist.sh) and the cluster's
// scripts/cluster/bench.sh: allreduce bus bandwidth through Hora's engine
// against a plain chunked MPI_Allreduce in the same run, and training
// steps per second of the MLP.
//
//	mpirun -np 2 hora-dist-bench -mode allreduce [-sizes 1,16,64,256] [-iters 10] [-hierarchical auto]
//	mpirun -np N hora-dist-bench -mode mlp [-batch 128] [-steps 60]
//
// The allreduce mode measures, per size, the plain MPI_Allreduce and then
// the engine on MPI alone and, when mpi.Arrange chooses another transport
// (shared memory on one host, the hierarchical allreduce on several), on
// that one too. Rank 0 prints one JSON object per measurement, naming its
// transport (mpi.Describe). It must be built with -tags mpi to run on more
// than one rank.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/mpi"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// rawAllreducer is the plain MPI baseline dist/mpi offers.
type rawAllreducer interface {
	RawAllreduce(ctx context.Context, buf []float32) error
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hora-dist-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	mode := flag.String("mode", "allreduce", "allreduce or mlp")
	sizes := flag.String("sizes", "1,16,64,256", "allreduce sizes in MB")
	iters := flag.Int("iters", 10, "allreduce repetitions per size (the median is reported)")
	batch := flag.Int("batch", 128, "mlp: samples per rank per step")
	steps := flag.Int("steps", 60, "mlp: timed steps (after 5 warm-up steps)")
	timeline := flag.String("timeline", "", "mlp: write rank 0's timeline to this file")
	threads := flag.Int("threads", 1, "compute threads per rank")
	extra := flag.Int("engine-procs", 0, "extra GOMAXPROCS for the engine goroutine when there are several ranks")
	hier := flag.String("hierarchical", "auto", "hierarchical allreduce between hosts: auto, on or off (mpi.Arrange's mode)")
	flag.StringVar(&label, "label", "", "a name for the ranks' layout (\"2 hosts × 2 ranks\"), copied into every line")
	flag.Parse()

	world, err := mpi.InitWorld()
	if err != nil {
		return err
	}
	comm, err := mpi.Arrange(context.Background(), world, *hier)
	if err != nil {
		return err
	}
	defer comm.Close() // and world
	// The compute threads, plus -engine-procs goroutine slots for the
	// engine when there are several ranks (0 by default: measured faster
	// when every core computes).
	cpu.Default().SetThreads(*threads)
	if comm.Size() > 1 {
		runtime.GOMAXPROCS(*threads + *extra)
	} else {
		runtime.GOMAXPROCS(*threads)
	}
	var runErr error
	switch *mode {
	case "allreduce":
		runErr = benchAllreduce(world, comm, *sizes, *iters)
	case "mlp":
		runErr = benchMLP(comm, *batch, *steps, *timeline)
	default:
		runErr = fmt.Errorf("-mode %q: expected allreduce or mlp", *mode)
	}
	if runErr != nil && comm.Size() > 1 {
		fmt.Fprintf(os.Stderr, "hora-dist-bench: rank %d: %v\n", comm.Rank(), runErr)
		comm.Abort(runErr)
	}
	return runErr
}

// label is the -label flag.
var label string

// report prints v on rank 0, with the communicator's size and transport.
func report(comm dist.Communicator, v map[string]any) {
	if comm.Rank() != 0 {
		return
	}
	if label != "" {
		v["label"] = label
	}
	v["ranks"] = comm.Size()
	v["threads"] = cpu.Default().Threads()
	v["transport"] = mpi.Describe(comm)
	v["shm"] = strings.Contains(v["transport"].(string), "shared memory")
	line, _ := json.Marshal(v)
	fmt.Println(string(line))
}

// busBandwidth is the NCCL-tests convention: 2(n−1)/n · bytes / time.
func busBandwidth(bytes int, n int, d time.Duration) float64 {
	return 2 * float64(n-1) / float64(n) * float64(bytes) / d.Seconds() / 1e9
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchAllreduce times, per size, the plain chunked MPI_Allreduce on
// world, then Hora's engine on one tensor of that size (reduced in place)
// and on the same bytes as 16 tensors fused, first over world (MPI alone),
// then over arranged when it differs. Every line reports the same plain
// MPI_Allreduce time.
func benchAllreduce(world, arranged dist.Communicator, sizeList string, iters int) error {
	raw, ok := world.(rawAllreducer)
	if !ok {
		return errors.New("allreduce mode needs MPI: build with -tags mpi and run under mpirun with 2 or more ranks")
	}
	comms := []dist.Communicator{world}
	if arranged != world {
		comms = append(comms, arranged)
	}
	ctx := context.Background()
	for _, s := range strings.Split(sizeList, ",") {
		mb, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || mb <= 0 {
			return fmt.Errorf("-sizes: bad size %q", s)
		}
		n := mb << 20 / 4
		buf := make([]float32, n)
		var rawT []time.Duration
		for i := range iters + 1 {
			start := time.Now()
			if err := raw.RawAllreduce(ctx, buf); err != nil {
				return err
			}
			if i > 0 {
				rawT = append(rawT, time.Since(start))
			}
		}
		r := median(rawT)
		bytes := n * 4
		for _, comm := range comms {
			o, f, err := benchEngine(ctx, comm, n, iters)
			if err != nil {
				return err
			}
			report(comm, map[string]any{"workload": "allreduce", "mb": mb,
				"raw_ms": r.Seconds() * 1e3, "hora_ms": o.Seconds() * 1e3, "fused_ms": f.Seconds() * 1e3,
				"raw_busbw": busBandwidth(bytes, comm.Size(), r), "hora_busbw": busBandwidth(bytes, comm.Size(), o),
				"fused_busbw": busBandwidth(bytes, comm.Size(), f)})
		}
	}
	return nil
}

// benchEngine returns the median times of an engine over comm reducing
// one tensor of n float32 and 16 tensors of n/16 fused.
func benchEngine(ctx context.Context, comm dist.Communicator, n, iters int) (one, fused time.Duration, err error) {
	e, err := dist.NewEngine(comm, dist.EngineConfig{})
	if err != nil {
		return 0, 0, err
	}
	t := tensor.Zeros(n)
	const parts = 16
	ts := make([]*tensor.Tensor, parts)
	for i := range ts {
		ts[i] = tensor.Zeros(n / parts)
	}
	var oneT, fusedT []time.Duration
	for i := range iters + 1 {
		start := time.Now()
		if err := e.Allreduce(ctx, "one", t, dist.Sum); err != nil {
			return 0, 0, err
		}
		if i > 0 {
			oneT = append(oneT, time.Since(start))
		}
		start = time.Now()
		hs := make([]*dist.Handle, parts)
		for k, t := range ts {
			hs[k] = e.AllreduceAsync(fmt.Sprint("part", k), t, dist.Sum, false)
		}
		e.Flush()
		for _, h := range hs {
			if err := h.Wait(ctx); err != nil {
				return 0, 0, err
			}
		}
		if i > 0 {
			fusedT = append(fusedT, time.Since(start))
		}
	}
	if err := e.Close(); err != nil {
		return 0, 0, err
	}
	return median(oneT), median(fusedT), nil
}

// benchMLP times training steps of the shipped MLP (784-512-256-10, SGD
// with momentum) on synthetic batches of the given size per rank, with a
// DistributedOptimizer, and reports the global samples per second.
func benchMLP(comm dist.Communicator, batch, steps int, timelinePath string) error {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	model, err := models.NewMLP(models.MLPConfig{In: 784, Hidden: []int{512, 256}, Classes: 10}, rng)
	if err != nil {
		return err
	}
	inner, err := optim.NewSGD(model.Parameters(), optim.SGDConfig{LR: 0.01, Momentum: 0.9})
	if err != nil {
		return err
	}
	var tl *dist.Timeline
	if timelinePath != "" && comm.Rank() == 0 {
		if tl, err = dist.CreateTimeline(timelinePath); err != nil {
			return err
		}
		defer tl.Close()
	}
	e, err := dist.NewEngine(comm, dist.EngineConfig{Timeline: tl})
	if err != nil {
		return err
	}
	defer e.Close()
	opt, err := dist.NewDistributedOptimizer(ctx, inner, e, dist.OptimizerConfig{})
	if err != nil {
		return err
	}
	x := make([]float32, batch*784)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	y := make([]int64, batch)
	for i := range y {
		y[i] = int64(rng.IntN(10))
	}
	arena := tensor.NewArena()
	step := func() error {
		xt, err := arena.FromSlice(tensor.CPU(), x, batch, 784)
		if err != nil {
			return err
		}
		yt, err := arena.FromSlice(tensor.CPU(), y, batch)
		if err != nil {
			return err
		}
		t0 := time.Now()
		loss := layers.CrossEntropy(model.Forward(autograd.Constant(xt)), yt, layers.CrossEntropyOptions{})
		t1 := time.Now()
		if tl != nil {
			tl.Span("phases", "forward", t0, t1)
		}
		if err := autograd.Backward(loss); err != nil {
			return err
		}
		arena.Reset()
		t2 := time.Now()
		if tl != nil {
			tl.Span("phases", "backward", t1, t2)
		}
		if err := opt.Step(); err != nil {
			return err
		}
		opt.ZeroGrad()
		if tl != nil {
			tl.Span("phases", "step", t2, time.Now())
		}
		return nil
	}
	for range 5 {
		if err := step(); err != nil {
			return err
		}
	}
	sync := []float64{0}
	if err := e.AverageFloat64s(ctx, "sync.start", sync); err != nil {
		return err
	}
	start := time.Now()
	for range steps {
		if err := step(); err != nil {
			return err
		}
	}
	if err := e.AverageFloat64s(ctx, "sync.end", sync); err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	report(comm, map[string]any{"workload": "mlp", "batch": batch, "steps": steps,
		"samples_per_sec": float64(comm.Size()*batch*steps) / secs, "ms_per_step": secs / float64(steps) * 1e3,
		"timeline": timelinePath != ""})
	return nil
}
