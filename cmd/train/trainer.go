package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/checkpoint"
	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu" // importing it registers "cpu"
	"github.com/hora-dl/hora/device/cuda"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/mpi"
	"github.com/hora-dl/hora/dist/nccl"
	"github.com/hora-dl/hora/internal/hostcpu"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// EpochMetrics is one line of metrics.jsonl.
type EpochMetrics struct {
	Epoch         int     `json:"epoch"`
	TrainLoss     float64 `json:"train_loss"`
	TrainAccuracy float64 `json:"train_accuracy"`
	TestLoss      float64 `json:"test_loss"`
	TestAccuracy  float64 `json:"test_accuracy"`
	SamplesPerSec float64 `json:"samples_per_sec"`
	Seconds       float64 `json:"seconds"`
	LR            float64 `json:"lr"`
}

// run state of one training job.
type trainer struct {
	cfg    *Config
	dev    device.Device
	model  layers.Layer
	opt    *dist.DistributedOptimizer
	sched  optim.Schedule
	train  *data.Loader
	test   *data.Loader
	stderr io.Writer
	// arena recycles the memory of each step (batch, activations,
	// gradients) for the next one.
	arena *tensor.Arena

	// Data parallelism: this rank's engine, its shard of the training
	// set, and rank 0's timeline (nil when off or on other ranks).
	engine   *dist.Engine
	scaler   *optim.GradScaler // loss scaling, for precision fp16
	sampler  *dist.DistributedSampler
	timeline *dist.Timeline
	testLen  int
}

// train runs the job on this rank: the only one, or one of those mpirun
// started. A failure on one rank of several ends the whole job.
func train(ctx context.Context, cfg *Config, stdout, stderr io.Writer) error {
	comm, err := mpi.Init()
	if err != nil {
		return inputError{err}
	}
	if comm.Size() > 1 {
		if comm.Rank() != 0 {
			stdout = io.Discard // rank 0 alone reports
		}
		if os.Getenv("GOMAXPROCS") == "" {
			// The ranks on this host share its cores: each computes with
			// its share. No extra thread for the engine: with every core
			// computing, it would only take turns with the compute threads
			// (measured slower); it communicates while Step waits.
			threads := rankThreads(comm.LocalSize())
			cpu.Default().SetThreads(threads)
			runtime.GOMAXPROCS(threads)
		}
	}
	err = trainRank(ctx, comm, cfg, stdout, stderr)
	if err != nil && comm.Size() > 1 && !errors.Is(err, context.Canceled) {
		// The other ranks must not wait for this one: Abort prints the
		// error with this rank's number and ends the job.
		comm.Abort(err)
	}
	if cerr := comm.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

func trainRank(ctx context.Context, comm dist.Communicator, cfg *Config, stdout, stderr io.Writer) (err error) {
	defer func() {
		// A device that fails (a GPU out of memory, a kernel that did not
		// run) makes the tensor operation panic with a DeviceError: report
		// it as this run's error. Other panics are bugs and stay panics.
		if r := recover(); r != nil {
			var de *tensor.DeviceError
			if e, ok := r.(error); ok && errors.As(e, &de) {
				err = deviceFailure(de)
				return
			}
			panic(r)
		}
	}()
	rank0 := comm.Rank() == 0
	if rank0 {
		if err := os.MkdirAll(cfg.Output.Dir, 0o755); err != nil {
			return inputError{fmt.Errorf("output.dir: %w", err)}
		}
		if err := checkExportDir(cfg.Export.ONNX); err != nil {
			return inputError{fmt.Errorf("export.onnx: %w", err)}
		}
	}
	dev, err := openDevice(cfg, comm, stdout)
	if err != nil {
		return inputError{fmt.Errorf("%s: device: %w", cfg.File(), err)}
	}
	if err := backendError(dev); err != nil {
		return inputError{fmt.Errorf("device %s: %w", dev.Name(), err)}
	}
	transport := "MPI"
	if g, ok := dev.(*cuda.Device); ok && comm.Size() > 1 {
		// GPU ranks reduce their gradients with NCCL (or, without it,
		// through host memory over MPI).
		gpuComm, err := nccl.New(ctx, comm, g)
		if err != nil {
			return err
		}
		defer gpuComm.Close()
		comm, transport = gpuComm, nccl.Reason(gpuComm)
	}
	trainSet, testSet, err := loadData(cfg)
	if err != nil {
		return inputError{err}
	}
	initRNG := rand.New(rand.NewPCG(cfg.Seed, 1))
	model, err := buildModel(cfg, initRNG)
	if err != nil {
		return inputError{err}
	}
	layers.To(model, dev)
	inner, err := buildOptimizer(cfg, model.Parameters())
	if err != nil {
		return inputError{err}
	}
	sampler, err := dist.NewDistributedSampler(trainSet.Len(), comm.Rank(), comm.Size(),
		dist.SamplerConfig{Shuffle: true, Seed: cfg.Seed, DropLast: cfg.Dist.DropLast})
	if err != nil {
		return inputError{fmt.Errorf("%s: dist: %w", cfg.File(), err)}
	}
	sched, err := buildSchedule(cfg, sampler.Len())
	if err != nil {
		return inputError{err}
	}
	t := &trainer{cfg: cfg, dev: dev, model: model, sched: sched, sampler: sampler,
		stderr: stderr, arena: tensor.NewArena()}
	if rank0 {
		if t.timeline, err = openTimeline(cfg); err != nil {
			return inputError{err}
		}
		defer func() {
			if cerr := t.timeline.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	if t.engine, err = dist.NewEngine(comm, engineConfig(cfg, t.timeline, stderr)); err != nil {
		return err
	}
	defer func() {
		if cerr := t.engine.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if cfg.Precision == "fp16" {
		// Float16 products need loss scaling for small gradients to
		// survive; the scaler sits under the distributed optimizer, so it
		// sees the averaged gradients and every rank skips alike.
		if t.scaler, err = optim.NewGradScaler(inner, optim.GradScalerConfig{}); err != nil {
			return err
		}
		inner = t.scaler
	}
	scaling, _ := dist.ParseScaling(cfg.Dist.LRScaling) // validated with the config
	if t.opt, err = dist.NewDistributedOptimizer(ctx, inner, t.engine, dist.OptimizerConfig{
		Scaling: scaling, WarmupSteps: cfg.Dist.WarmupSteps, Compress: cfg.Dist.Compression == "fp16",
		BackwardPassesPerStep: cfg.Dist.BackwardPassesPerStep}); err != nil {
		return err
	}
	if t.train, err = data.NewLoader(trainSet, data.LoaderConfig{
		BatchSize: cfg.Train.BatchSize, Prefetch: cfg.Train.Prefetch, ReuseMemory: true}); err != nil {
		return inputError{fmt.Errorf("%s: train: %w", cfg.File(), err)}
	}
	t.testLen = testSet.Len()
	if t.test, err = data.NewLoader(testSet, data.LoaderConfig{
		BatchSize: cfg.Train.EvalBatchSize, Prefetch: cfg.Train.Prefetch, ReuseMemory: true}); err != nil {
		return inputError{fmt.Errorf("%s: train: %w", cfg.File(), err)}
	}

	var metrics *os.File
	metricsPath := filepath.Join(cfg.Output.Dir, "metrics.jsonl")
	if rank0 {
		if err := writeConfig(cfg); err != nil {
			return err
		}
		if metrics, err = os.Create(metricsPath); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		defer metrics.Close()
	}

	fmt.Fprintf(stdout, "model %s: %d parameters; %d training and %d test samples on %s%s\n",
		cfg.Model.Name, layers.NumParams(model), trainSet.Len(), testSet.Len(), dev.Name(), backend(dev))
	if n := comm.Size(); n > 1 {
		fmt.Fprintf(stdout, "data-parallel over %d ranks (%s), %d compute threads each: global batch %d, learning rate %g × %.4g (%s scaling)\n",
			n, transport, cpu.Default().Threads(), n*cfg.Train.BatchSize*cfg.Dist.BackwardPassesPerStep,
			cfg.Optimizer.LR, scaling.Factor(n), scaling)
	}
	step := 0
	for epoch := 1; epoch <= cfg.Train.Epochs; epoch++ {
		m, err := t.trainEpoch(ctx, epoch, &step)
		if err != nil {
			return err
		}
		if m.TestLoss, m.TestAccuracy, err = t.evaluate(ctx, comm); err != nil {
			return err
		}
		if !rank0 {
			continue
		}
		line, _ := json.Marshal(m)
		if _, err := metrics.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("%s: %w", metricsPath, err)
		}
		if err := metrics.Sync(); err != nil {
			return fmt.Errorf("%s: %w", metricsPath, err)
		}
		if err := t.save(epoch); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "epoch %d/%d  train loss %.4f acc %.4f  test loss %.4f acc %.4f  %.0f samples/s  %.1fs\n",
			epoch, cfg.Train.Epochs, m.TrainLoss, m.TrainAccuracy, m.TestLoss, m.TestAccuracy, m.SamplesPerSec, m.Seconds)
	}
	fmt.Fprintf(stdout, "wrote metrics.jsonl, model.safetensors, optimizer.safetensors and config.yaml to %s\n", cfg.Output.Dir)
	if rank0 && cfg.Export.ONNX != "" {
		example := tensor.New(dev, device.Float32, 1, 1, 28, 28)
		if err := onnx.ExportFile(cfg.Export.ONNX, model, []*tensor.Tensor{example}); err != nil {
			return fmt.Errorf("export.onnx: %w", err)
		}
		fmt.Fprintf(stdout, "exported the model to %s (ONNX opset 17, input [batch, 1, 28, 28])\n", cfg.Export.ONNX)
	}
	return nil
}

// checkExportDir checks, before training starts, that the folder of the
// export file exists and accepts new files.
func checkExportDir(path string) error {
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".hora-export-check*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// rankThreads returns the compute threads of one of localSize ranks on
// this host: the cores mpirun bound the process to, when it did, else an
// equal share of the host's cores.
func rankThreads(localSize int) int {
	mine := runtime.NumCPU() // the process's affinity mask
	if all := hostcpu.Online(); all > 0 && mine >= all {
		return max(1, all/localSize) // not bound: share the host
	}
	return max(1, mine)
}

// engineConfig turns the dist section of the config into the engine's.
func engineConfig(cfg *Config, tl *dist.Timeline, log io.Writer) dist.EngineConfig {
	d := cfg.Dist
	ec := dist.EngineConfig{
		FusionThreshold: d.FusionThreshold,
		CycleTime:       time.Duration(d.CycleTimeMS * float64(time.Millisecond)),
		StallWarning:    time.Duration(d.StallWarningS * float64(time.Second)),
		StallShutdown:   time.Duration(d.StallShutdownS * float64(time.Second)),
		Timeline:        tl,
		Log:             log,
	}
	// In the config 0 turns these off; in EngineConfig 0 means the default.
	if ec.FusionThreshold == 0 {
		ec.FusionThreshold = -1
	}
	if ec.StallWarning == 0 {
		ec.StallWarning = -1
	}
	if ec.StallShutdown == 0 {
		ec.StallShutdown = -1
	}
	return ec
}

// openTimeline starts the timeline the config or HORA_TIMELINE asks for,
// or returns nil.
func openTimeline(cfg *Config) (*dist.Timeline, error) {
	path := cfg.Timeline
	if env := os.Getenv("HORA_TIMELINE"); env != "" {
		path = env
	}
	if path == "" {
		return nil, nil
	}
	return dist.CreateTimeline(path)
}

// writeConfig saves the configuration in effect (file, defaults and -set
// overrides) as DIR/config.yaml, so a run can be repeated exactly.
func writeConfig(cfg *Config) error {
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("config.yaml: %w", err)
	}
	path := filepath.Join(cfg.Output.Dir, "config.yaml")
	header := fmt.Sprintf("# The configuration of this run: %s with defaults and -set overrides applied.\n", cfg.File())
	if err := os.WriteFile(path, append([]byte(header), out...), 0o644); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// loadData reads the training and test sets named by the config.
func loadData(cfg *Config) (train, test data.Dataset, err error) {
	if cfg.Data.Name != "fashion-mnist" {
		return nil, nil, fmt.Errorf("%s: data.name: unknown data set %q (known: fashion-mnist)", cfg.File(), cfg.Data.Name)
	}
	tr, te, err := data.LoadFashionMNIST(cfg.Data.Dir)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Data.Normalize {
		tr.Normalize(data.FashionMNISTMean, data.FashionMNISTStd)
		te.Normalize(data.FashionMNISTMean, data.FashionMNISTStd)
	}
	train = tr
	if n := cfg.Train.Limit; n > 0 && n < tr.Len() {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		train = data.Subset(tr, idx)
	}
	return train, te, nil
}

// backend describes how a device computes, for devices that say (the CPU
// names its GEMM library), as " (…)".
func backend(dev device.Device) string {
	if b, ok := dev.(interface{ Backend() string }); ok {
		return " (" + b.Backend() + ")"
	}
	return ""
}

// backendError reports a device setting from the environment that cannot
// be honoured, such as HORA_BLAS naming a library that does not open; a
// machine without any BLAS library is fine.
func backendError(dev device.Device) error {
	if b, ok := dev.(interface{ BackendError() error }); ok {
		if err := b.BackendError(); err != nil && !cpu.IsNoBLAS(err) {
			return err
		}
	}
	return nil
}

// batchTensors turns a data batch into device tensors in the step's arena:
// they, and everything computed from them, are valid until the arena's
// next Reset.
func (t *trainer) batchTensors(b data.Batch) (x, y *tensor.Tensor, err error) {
	if x, err = t.arena.FromSlice(t.dev, b.X, b.Shape...); err != nil {
		return nil, nil, err
	}
	if y, err = t.arena.FromSlice(t.dev, b.Y, len(b.Y)); err != nil {
		return nil, nil, err
	}
	return x, y, nil
}

// correct counts the rows of logits whose argmax equals the label.
func correct(logits, y *tensor.Tensor) int {
	pred := logits.ArgMax(1, false).Int64s()
	n := 0
	for i, l := range y.Int64s() {
		if pred[i] == l {
			n++
		}
	}
	return n
}

func (t *trainer) trainEpoch(ctx context.Context, epoch int, step *int) (EpochMetrics, error) {
	layers.Train(t.model)
	m := EpochMetrics{Epoch: epoch}
	if t.cfg.Schedule.Per == "epoch" {
		t.opt.SetLR(t.sched.LR(epoch - 1))
	}
	m.LR = t.opt.LR()
	order := t.sampler.Indices(epoch - 1)
	passes := t.cfg.Dist.BackwardPassesPerStep
	bar := newProgress(t.stderr, t.cfg.Output.Progress && t.engine.Rank() == 0, t.train.NumBatchesOf(len(order)),
		fmt.Sprintf("epoch %d/%d", epoch, t.cfg.Train.Epochs))
	tl := t.timeline
	var lossSum float64
	seen, right, pass := 0, 0, 0
	start := time.Now()
	for b := range t.train.BatchesOf(ctx, order) {
		if t.cfg.Schedule.Per == "step" && pass == 0 {
			t.opt.SetLR(t.sched.LR(*step))
		}
		var t0 time.Time
		if tl != nil {
			t0 = time.Now()
		}
		x, y, err := t.batchTensors(b)
		if err != nil {
			return m, err
		}
		logits := t.model.Forward(autograd.Constant(x))
		loss := layers.CrossEntropy(logits, y, layers.CrossEntropyOptions{LabelSmoothing: t.cfg.Train.LabelSmoothing})
		l := loss.Value.Item()
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return m, fmt.Errorf("epoch %d step %d: loss is %v; lower optimizer.lr or set optimizer.clip_norm", epoch, *step+1, l)
		}
		var t1 time.Time
		if tl != nil {
			t1 = time.Now()
			tl.Span("phases", "forward", t0, t1)
		}
		if t.scaler != nil {
			loss = t.scaler.ScaleLoss(loss)
		}
		if err := autograd.Backward(loss); err != nil {
			return m, err
		}
		lossSum += l * float64(b.Len())
		seen += b.Len()
		right += correct(logits.Value, y)
		t.arena.Reset()
		if tl != nil {
			t0 = time.Now()
			tl.Span("phases", "backward", t1, t0)
		}
		if pass++; pass == passes {
			if err := t.step(ctx); err != nil {
				return m, err
			}
			pass = 0
			*step++
			if tl != nil {
				tl.Span("phases", "step", t0, time.Now())
			}
		}
		bar.step(fmt.Sprintf("loss %.4f  %.0f samples/s", lossSum/float64(seen), float64(seen*t.engine.Size())/time.Since(start).Seconds()))
	}
	if err := ctx.Err(); err != nil {
		return m, err
	}
	if pass > 0 { // the epoch's last, shorter accumulation
		if err := t.step(ctx); err != nil {
			return m, err
		}
		*step++
	}
	bar.finish()
	// Global metrics: sums over all ranks.
	sums := []float64{lossSum, float64(seen), float64(right)}
	if err := t.engine.AllreduceFloat64s(ctx, "metrics.train", sums, dist.Sum); err != nil {
		return m, err
	}
	m.Seconds = time.Since(start).Seconds()
	m.TrainLoss = sums[0] / max(sums[1], 1)
	m.TrainAccuracy = sums[2] / max(sums[1], 1)
	m.SamplesPerSec = sums[1] / m.Seconds
	return m, nil
}

// step averages the gradients across ranks, clips them if configured, and
// applies the optimizer.
func (t *trainer) step(ctx context.Context) error {
	if err := t.opt.Synchronize(ctx); err != nil {
		return err
	}
	if c := t.cfg.Optimizer.ClipNorm; c > 0 {
		if t.scaler != nil && !t.scaler.Unscale() {
			c = 0 // the step will be skipped: nothing to clip
		}
		if c > 0 {
			optim.ClipGradNorm(t.opt.Params(), c)
		}
	}
	if err := t.opt.Step(); err != nil {
		return err
	}
	t.opt.ZeroGrad()
	return nil
}

// evaluate returns the mean loss and accuracy on the test set; each rank
// evaluates every Size-th sample and the sums are combined.
func (t *trainer) evaluate(ctx context.Context, comm dist.Communicator) (loss, accuracy float64, err error) {
	layers.Eval(t.model)
	var shard []int
	for i := comm.Rank(); i < t.testLen; i += comm.Size() {
		shard = append(shard, i)
	}
	seen, right := 0, 0
	for b := range t.test.BatchesOf(ctx, shard) {
		x, y, err := t.batchTensors(b)
		if err != nil {
			return 0, 0, err
		}
		logits := t.model.Forward(autograd.NoGrad(autograd.Constant(x)))
		l := layers.CrossEntropy(logits, y, layers.CrossEntropyOptions{Reduction: layers.ReduceSum})
		loss += l.Value.Item()
		right += correct(logits.Value, y)
		seen += b.Len()
		t.arena.Reset()
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	sums := []float64{loss, float64(seen), float64(right)}
	if err := t.engine.AllreduceFloat64s(ctx, "metrics.test", sums, dist.Sum); err != nil {
		return 0, 0, err
	}
	return sums[0] / max(sums[1], 1), sums[2] / max(sums[1], 1), nil
}

// save writes the model weights and the optimizer state, each atomically,
// after an epoch.
func (t *trainer) save(epoch int) error {
	meta := map[string]string{"model": t.cfg.Model.Name, "epoch": fmt.Sprint(epoch), "format": "pt"}
	for name, state := range map[string]map[string]*tensor.Tensor{
		"model.safetensors":     layers.StateDict(t.model),
		"optimizer.safetensors": t.opt.StateDict(),
	} {
		path := filepath.Join(t.cfg.Output.Dir, name)
		if err := checkpoint.Save(path, state, meta); err != nil {
			return fmt.Errorf("saving %s: %w", path, err)
		}
	}
	return nil
}
