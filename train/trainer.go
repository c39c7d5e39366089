package train

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/checkpoint"
	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu" // importing it registers "cpu"
	"github.com/hora-dl/hora/device/cuda"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/liveness"
	"github.com/hora-dl/hora/dist/mpi"
	"github.com/hora-dl/hora/dist/nccl"
	"github.com/hora-dl/hora/internal/hostcpu"
	"github.com/hora-dl/hora/internal/peakrss"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// EpochMetrics is the "epoch" record of metrics.jsonl, written at the end
// of each epoch. Losses are means per sample (per character for a
// language model); accuracies are fractions.
type EpochMetrics struct {
	Kind          string  `json:"kind"` // "epoch"
	Epoch         int     `json:"epoch"`
	Step          int     `json:"step"`
	TrainLoss     float64 `json:"train_loss"`
	TrainAccuracy float64 `json:"train_accuracy"`
	TestLoss      float64 `json:"test_loss"`
	TestAccuracy  float64 `json:"test_accuracy"`
	// TestRMSE and TestR2 are a regression's root mean squared error
	// and coefficient of determination on the test set (task
	// "regression", where the accuracies are 0 and the losses are mean
	// squared errors).
	TestRMSE      float64 `json:"test_rmse,omitempty"`
	TestR2        float64 `json:"test_r2,omitempty"`
	SamplesPerSec float64 `json:"samples_per_sec"`
	Seconds       float64 `json:"seconds"`
	LR            float64 `json:"lr"`
	// PeakRSSMiB is the largest resident memory of the process (rank 0's)
	// so far, in MiB, at the end of the epoch: data, model, optimizer and
	// the step's buffers (0 where the system does not say).
	PeakRSSMiB float64 `json:"peak_rss_mib,omitempty"`
}

// stepRecord is the "train" record of metrics.jsonl, written every
// train.log_every_steps steps: rank 0's mean training loss since the
// previous one.
type stepRecord struct {
	Kind  string  `json:"kind"` // "train"
	Step  int     `json:"step"`
	Epoch float64 `json:"epoch"` // fractional: 2.5 is half-way through epoch 3
	Loss  float64 `json:"loss"`
	LR    float64 `json:"lr"`
}

// evalRecord is the "eval" record of metrics.jsonl.
type evalRecord struct {
	Kind         string  `json:"kind"` // "eval"
	Step         int     `json:"step"`
	Epoch        float64 `json:"epoch"`
	TestLoss     float64 `json:"test_loss"`
	TestAccuracy float64 `json:"test_accuracy"`
	TestRMSE     float64 `json:"test_rmse,omitempty"` // regression only
	TestR2       float64 `json:"test_r2,omitempty"`   // regression only
}

// errDiverged marks a run stopped because its loss stopped being finite;
// the launcher does not restart such a run (it would diverge again).
var errDiverged = errors.New("diverged")

// errInterrupted is the error of a run stopped by Ctrl-C (or SIGTERM)
// after it wrote a checkpoint.
var errInterrupted = fmt.Errorf("interrupted: %w", context.Canceled)

// trainer is the state of one rank's training run.
type trainer struct {
	cfg   *Config
	job   *job
	comm  dist.Communicator
	dev   device.Device
	model layers.Layer
	lm    *languageModel  // nil for image classifiers
	inner optim.Optimizer // the optimizer the config names
	opt   *dist.DistributedOptimizer
	sched optim.Schedule
	train *data.Loader
	test  *data.Loader
	// trainLen and testLen count the samples of the data sets.
	trainLen, testLen int
	augment           *data.Augmented    // nil without augmentation
	images            *data.ImageFolder  // the training images of data set "images" (random crops per epoch)
	targets           *regressionTargets // nil for a classifier
	dataInfo          *runData           // written to the run folder as data.json
	dataNotes         []string           // what announce says about the data
	rngSrc            *rand.PCG          // the generator of dropout and other random layers
	ema               *emaWeights        // nil without train.ema
	arena             *tensor.Arena      // recycles the memory of each step

	// Data parallelism: this rank's engine, its sampler, rank 0's
	// timeline (nil when off or on other ranks).
	engine   *dist.Engine
	scaler   *optim.GradScaler // loss scaling, for precision fp16
	sampler  *dist.DistributedSampler
	timeline *dist.Timeline

	// Output, on rank 0 (nil elsewhere).
	con     *console
	metrics *metricsLog
	bar     io.Writer // where the progress bar or lines go
	logW    io.Writer // train.log, for progress lines

	// stop is closed when the user asks the run to stop (Ctrl-C).
	stop <-chan struct{}

	// Position: optimizer steps taken, the epoch in progress (1-based)
	// and how many samples of its global order are done.
	step, epoch, offset int
	sums                [3]float64 // loss sum, samples, correct of the epoch so far
	epochSeconds        float64
	best                *float64
	badEvals            int
	lastEval            map[string]float64
	lastEvalStep        int
	lastCkptStep        int
}

// job is one training run: its config, whether it resumes, and for Fit
// the model and data given in Go (nil: built from the config).
type job struct {
	cfg    *Config
	resume bool
	// overwrite lets a new run replace the run in its folder (deleting
	// its checkpoints) or write into a folder holding other files.
	overwrite bool
	// peers, in a job of several ranks with dist.timeout_s, tells the
	// engine which ranks have stopped answering (dist/liveness).
	peers dist.PeerWatcher
	// startOver lets a resume whose checkpoints all fail verification
	// delete them and train from the beginning.
	startOver bool
	model     layers.Layer
	data      *Data
	callbacks []Callback
	stdout    io.Writer
	stderr    io.Writer
	// history receives the metrics of every epoch trained (for Fit).
	history []EpochMetrics
}

// train runs the job on this rank of world (mpi.InitWorld's): the only
// one, or one of those a launcher started.
func train(ctx context.Context, world dist.Communicator, j *job) (err error) {
	if world.Size() > 1 && world.Rank() != 0 {
		j.stdout = io.Discard // rank 0 alone reports
	}
	// Rank 0 alone writes the run folder: it claims it for this run (and
	// holds its lock to the end) before the ranks go on.
	var claimErr error
	if world.Rank() == 0 {
		var unlock func()
		if unlock, claimErr = claimRunDir(j); claimErr == nil {
			defer unlock()
		}
		if faultAtStart {
			faultCrash()
		}
	}
	if _, err := shareString(ctx, world, "", claimErr); err != nil {
		return err
	}
	// The fastest transport for the ranks' layout: shared memory on one
	// host, hierarchical across hosts (dist.hierarchical), or MPI.
	comm, err := mpi.Arrange(ctx, world, j.cfg.Dist.Hierarchical)
	if err != nil {
		return fmt.Errorf("%s: dist.hierarchical: %w", j.cfg.File(), err)
	}
	if comm != world {
		defer func() {
			// After a failure inWorld aborts the job through world; a
			// Close here would wait for the other ranks.
			if err == nil {
				err = comm.Close() // closes world too; inWorld's Close is then a no-op
			}
		}()
	}
	setThreads(j.cfg, comm)
	if comm.Size() > 1 && j.cfg.Dist.TimeoutS > 0 {
		// A rank that stops answering ends the job (dist.timeout_s).
		mon, err := liveness.Start(ctx, comm, liveness.Config{
			Timeout: time.Duration(j.cfg.Dist.TimeoutS * float64(time.Second)),
			OnLost: func(err error) {
				comm.Abort(fmt.Errorf("%w (dist.timeout_s: %g); ending the job", err, j.cfg.Dist.TimeoutS))
			},
		})
		if err != nil {
			return fmt.Errorf("%s: dist.timeout_s: %w", j.cfg.File(), err)
		}
		defer mon.Close()
		j.peers = mon // the stall reports name the ranks that stopped answering
	}
	return trainRank(ctx, comm, j)
}

// setThreads sets the compute threads of this rank: train.threads, or
// under mpirun the rank's share of the host's cores.
func setThreads(cfg *Config, comm dist.Communicator) {
	if comm.Size() > 1 && os.Getenv("GOMAXPROCS") == "" && cfg.Train.Threads == 0 {
		// The ranks on this host share its cores: each computes with its
		// share. No extra thread for the engine: with every core
		// computing, it would only take turns with the compute threads
		// (measured slower); it communicates while Step waits.
		threads := rankThreads(comm.LocalSize())
		cpu.Default().SetThreads(threads)
		runtime.GOMAXPROCS(threads)
	}
	if n := cfg.Train.Threads; n > 0 {
		cpu.Default().SetThreads(n)
		runtime.GOMAXPROCS(n)
	}
}

// trainRank is one rank's run: open the run folder, find the checkpoint to
// resume from, open the device, build the model, data and optimizer, then
// train and write the results.
func trainRank(ctx context.Context, comm dist.Communicator, j *job) (err error) {
	defer recoverDeviceFailure(&err)
	// The work goes on when the user presses Ctrl-C: the loop notices
	// at the next step, saves a checkpoint, and ends.
	stop := ctx.Done()
	ctx = context.WithoutCancel(ctx)
	cfg := j.cfg
	rank0 := comm.Rank() == 0

	con, closeLog, err := openConsole(cfg, j.resume, rank0, j.stdout)
	if err != nil {
		return err
	}
	defer closeLog()
	from, resume, err := findResumePoint(ctx, comm, cfg, j.resume, j.startOver, con)
	if err != nil {
		return err
	}
	if resume && cfg.Deterministic && from.Manifest.Threads > 0 && cfg.Train.Threads == 0 {
		// The same thread count gives the same sums.
		cpu.Default().SetThreads(from.Manifest.Threads)
		runtime.GOMAXPROCS(from.Manifest.Threads)
	}
	dev, comm, transport, closeComm, err := openDeviceComm(ctx, cfg, comm, j.stdout)
	if err != nil {
		return err
	}
	defer closeComm()

	t, err := newTrainer(ctx, j, comm, dev, from.Manifest.Vocab, stop, con.progress)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := t.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if rank0 {
		t.con, t.bar, t.logW = con, j.stderr, con.log
		if t.timeline, err = openTimeline(cfg); err != nil {
			return inputError{err}
		}
	}
	if err := t.startEngine(ctx, j.stderr); err != nil {
		return err
	}
	if resume {
		if err := t.restore(from); err != nil {
			return err
		}
	}
	if rank0 {
		if err := t.writeRunFiles(resume); err != nil {
			return err
		}
	}
	t.announce(comm.Size(), transport)
	if resume {
		t.announceResume(from, comm.Size())
	}
	if err := t.loop(ctx); err != nil {
		return err
	}
	return t.finish(ctx)
}

// recoverDeviceFailure turns the panic of a failing device (a GPU out of
// memory, a kernel that did not run) into the run's error *err. Other
// panics are bugs and stay panics.
func recoverDeviceFailure(err *error) {
	if r := recover(); r != nil {
		var de *tensor.DeviceError
		if e, ok := r.(error); ok && errors.As(e, &de) {
			*err = deviceFailure(de)
			return
		}
		panic(r)
	}
}

// openConsole creates the run folder and opens train.log on rank 0 (a new
// run truncates it, a resumed one appends), and returns the console that
// prints to stdout and the log.
func openConsole(cfg *Config, resume, rank0 bool, stdout io.Writer) (con *console, closeLog func(), err error) {
	con = &console{out: stdout, json: cfg.Output.Format == "json", quiet: cfg.Output.Quiet}
	if !rank0 {
		con.out = io.Discard
		return con, func() {}, nil
	}
	// claimRunDir has made the folder and locked it: it counts as a
	// run's, whose files are refused as export targets.
	if cfg.Export.ONNX != "" {
		if err := checkExportTarget(cfg.Export.ONNX, protectedInputs(cfg)...); err != nil {
			return nil, nil, inputError{fmt.Errorf("export.onnx: %w", err)}
		}
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if !resume {
		flags |= os.O_TRUNC // a new run (or -overwrite) starts its own log
	}
	log, err := os.OpenFile(filepath.Join(cfg.Output.Dir, logFile), flags, 0o644)
	if err != nil {
		return nil, nil, inputError{fmt.Errorf("output.dir: cannot write in %s: %w", cfg.Output.Dir, err)}
	}
	con.log = log
	return con, func() { log.Close() }, nil
}

// findResumePoint returns the latest complete checkpoint of the run folder
// when the run resumes, read by rank 0 and sent to the other ranks, whose
// hosts may have no copy of the run folder (resume comes back false when
// there is none).
func findResumePoint(ctx context.Context, comm dist.Communicator, cfg *Config, resume, startOver bool, con *console) (from savedCheckpoint, ok bool, err error) {
	if !resume {
		return savedCheckpoint{}, false, nil
	}
	var rank0Err error
	if comm.Rank() == 0 {
		from, ok, rank0Err = latestOnDisk(cfg.Output.Dir, startOver, con)
	}
	return shareResumePoint(ctx, comm, from, ok, rank0Err)
}

// latestOnDisk finds the latest complete checkpoint of the run folder
// with its files read (first removing checkpoints whose writing was
// interrupted); ok is false when the run has none yet. When it has
// checkpoints but none passes verification (a digest differs, a file is
// missing), the run is not thrown away: resume refuses, naming each
// checkpoint's fault, and changes nothing, unless startOver, which
// deletes them and trains from the beginning.
func latestOnDisk(dir string, startOver bool, con *console) (from savedCheckpoint, ok bool, err error) {
	from, ok, skipped, err := latestCheckpoint(dir, true)
	if err != nil {
		return from, false, err
	}
	if !ok && len(skipped) > 0 {
		if !startOver {
			return from, false, inputError{fmt.Errorf("resume: no checkpoint of %s passes verification, so the run cannot continue; nothing was changed:\n  %s\nrepair or remove the broken checkpoints, or pass -start-over to train from the beginning (deleting them)",
				dir, strings.Join(skipped, "\n  "))}
		}
		if err := os.RemoveAll(filepath.Join(dir, checkpointsDir)); err != nil {
			return from, false, err
		}
		con.info(true, "-start-over: deleted the checkpoints of %s, none of which passed verification:\n  %s", dir, strings.Join(skipped, "\n  "))
		skipped = nil
	}
	removed, err := removeIncomplete(dir)
	if err != nil {
		return from, false, err
	}
	for _, r := range removed {
		con.info(true, "removed %s, a checkpoint whose writing was interrupted", filepath.Join(dir, checkpointsDir, r))
	}
	for _, s := range skipped {
		con.info(true, "skipped a checkpoint that does not pass verification: %s", s)
	}
	if !ok {
		con.info(true, "%s has no checkpoint yet: starting from the beginning", dir)
	}
	return from, ok, nil
}

// openDeviceComm opens the config's device and, for GPU ranks of a
// data-parallel run, the communicator that reduces on the GPU (NCCL, or
// through host memory over MPI); transport names the communication.
func openDeviceComm(ctx context.Context, cfg *Config, comm dist.Communicator, out io.Writer) (dev device.Device, _ dist.Communicator, transport string, closeComm func(), err error) {
	if dev, err = openDevice(cfg, comm, out); err != nil {
		return nil, nil, "", nil, inputError{fmt.Errorf("%s: device: %w", cfg.File(), err)}
	}
	if err := backendError(dev); err != nil {
		return nil, nil, "", nil, inputError{fmt.Errorf("device %s: %w", dev.Name(), err)}
	}
	g, ok := dev.(*cuda.Device)
	if !ok || comm.Size() == 1 {
		return dev, comm, mpi.Describe(comm), func() {}, nil
	}
	gpuComm, err := nccl.New(ctx, comm, g)
	if err != nil {
		return nil, nil, "", nil, err
	}
	return dev, gpuComm, nccl.Reason(gpuComm), func() { gpuComm.Close() }, nil
}

// newTrainer builds what the run trains: the data sets, the model (on the
// device), the optimizer, the sampler of this rank's share, the schedule
// and the data loaders. vocab is a resumed language model's vocabulary.
func newTrainer(ctx context.Context, j *job, comm dist.Communicator, dev device.Device, vocab string, stop <-chan struct{}, progress progressFunc) (*trainer, error) {
	cfg := j.cfg
	ds, err := unlessStopped(stop, func() (*datasets, error) { return jobData(j, vocab, progress) })
	if errors.Is(err, context.Canceled) {
		return nil, err
	}
	if err != nil {
		return nil, inputError{err}
	}
	rngSrc := rand.NewPCG(cfg.Seed, 1)
	model := j.model
	if model == nil {
		if model, err = buildModel(cfg, ds.modelInput(cfg, rand.New(rngSrc)), ds.lm); err != nil {
			return nil, inputError{err}
		}
	}
	if err := freeze(cfg, model); err != nil {
		return nil, inputError{err}
	}
	if err := checkData(cfg, ds, model); err != nil {
		return nil, inputError{err}
	}
	if comm.Size() > 1 {
		if err := checkSameData(ctx, comm, dataSource(cfg), fingerprint(ds.train, ds.test)); err != nil {
			return nil, err
		}
	}
	t, err := newStepTrainer(cfg, model, dev, comm)
	if err != nil {
		return nil, err
	}
	t.job, t.lm, t.rngSrc, t.augment, t.images, t.stop = j, ds.lm, rngSrc, ds.augment, ds.images, stop
	t.targets, t.dataInfo, t.dataNotes = ds.targets, ds.info, ds.notes
	t.trainLen, t.testLen = ds.train.Len(), ds.test.Len()
	if comm.Rank() == 0 {
		if err := prepareRunDir(cfg.Output.Dir, checkpointBytes(cfg, model, t.inner)); err != nil {
			return nil, inputError{err}
		}
	}
	if t.sampler, err = dist.NewDistributedSampler(ds.train.Len(), comm.Rank(), comm.Size(),
		dist.SamplerConfig{Shuffle: true, Seed: cfg.Seed, DropLast: cfg.Dist.DropLast}); err != nil {
		return nil, inputError{fmt.Errorf("%s: dist: %w", cfg.File(), err)}
	}
	if t.sched, err = buildSchedule(cfg, t.inner, schedulePeriods(cfg, t.sampler.Len())); err != nil {
		return nil, inputError{err}
	}
	workers := 1
	if ds.images != nil { // decoding and resizing images is worth spreading
		workers = cmp.Or(cfg.Data.Workers, runtime.GOMAXPROCS(0))
	}
	if t.train, err = data.NewLoader(ds.train, data.LoaderConfig{
		BatchSize: cfg.Train.BatchSize, Prefetch: cfg.Train.Prefetch, ReuseMemory: true, Workers: workers}); err != nil {
		return nil, inputError{fmt.Errorf("%s: train: %w", cfg.File(), err)}
	}
	if t.test, err = data.NewLoader(ds.test, data.LoaderConfig{
		BatchSize: cfg.Train.EvalBatchSize, Prefetch: cfg.Train.Prefetch, ReuseMemory: true, Workers: workers}); err != nil {
		return nil, inputError{fmt.Errorf("%s: train: %w", cfg.File(), err)}
	}
	return t, nil
}

// errStoppedEarly is the error of a run stopped by a signal before its
// first step.
var errStoppedEarly = fmt.Errorf("interrupted before training started: %w", context.Canceled)

// unlessStopped returns what load returns, or, as soon as stop closes
// (Ctrl-C, SIGTERM) while load runs, an error that wraps
// context.Canceled: before training starts there is nothing to save, so
// a signal need not wait for a load that may take minutes. An abandoned
// load goes on in the background until it ends.
func unlessStopped[T any](stop <-chan struct{}, load func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := load()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-stop:
		var zero T
		return zero, errStoppedEarly
	}
}

// newStepTrainer returns a trainer that can take steps: model on dev, the
// optimizer the config names, the step's arena. The loop's parts (data,
// sampler, schedule, engine) come later.
func newStepTrainer(cfg *Config, model layers.Layer, dev device.Device, comm dist.Communicator) (*trainer, error) {
	layers.To(model, dev)
	inner, err := buildOptimizer(cfg, trainable(model))
	if err != nil {
		return nil, inputError{err}
	}
	return &trainer{cfg: cfg, job: &job{cfg: cfg}, comm: comm, dev: dev, model: model, inner: inner,
		arena: tensor.NewArena(), rngSrc: rand.NewPCG(cfg.Seed, 1), epoch: 1, con: &console{out: io.Discard}}, nil
}

// jobData returns the data sets of the job: Fit's, or those the config
// names.
func jobData(j *job, vocab string, progress progressFunc) (*datasets, error) {
	if j.data == nil {
		return loadDatasets(j.cfg, vocab, nil, progress)
	}
	if err := checkGivenData(j.data); err != nil {
		return nil, fmt.Errorf("train.Fit: data: %w", err)
	}
	return prepareData(j.cfg, j.data, 0)
}

// startEngine starts the engine that averages gradients across ranks, and
// wraps the optimizer: loss scaling for fp16, then the distributed
// optimizer; the weight average comes last.
func (t *trainer) startEngine(ctx context.Context, log io.Writer) error {
	cfg := t.cfg
	var err error
	ec := engineConfig(cfg, t.timeline, log)
	ec.Peers = t.job.peers
	if t.engine, err = dist.NewEngine(t.comm, ec); err != nil {
		return err
	}
	inner := t.inner
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
	if cfg.Train.EMA > 0 {
		t.ema = newEMA(t.model.Parameters(), cfg.Train.EMA)
	}
	return nil
}

// close stops the engine and closes the timeline and the metrics log.
func (t *trainer) close() error {
	var errs []error
	if t.engine != nil {
		errs = append(errs, t.engine.Close())
	}
	errs = append(errs, t.timeline.Close())
	if t.metrics != nil {
		errs = append(errs, t.metrics.Close())
	}
	return errors.Join(errs...)
}

// writeRunFiles writes, on rank 0, config.yaml, a language model's
// vocab.json, and opens metrics.jsonl (cut back to the checkpoint's step
// on resume).
func (t *trainer) writeRunFiles(resume bool) error {
	cfg := t.cfg
	if err := writeConfig(cfg); err != nil {
		return err
	}
	if t.dataInfo != nil {
		if err := writeRunData(cfg.Output.Dir, t.dataInfo); err != nil {
			return err
		}
	}
	if t.lm != nil {
		if err := writeFileAtomic(filepath.Join(cfg.Output.Dir, vocabFile), t.lm.vocabJSON()); err != nil {
			return fmt.Errorf("vocab.json: %w", err)
		}
	}
	resumeStep := -1
	if resume {
		resumeStep = t.step
	}
	var err error
	t.metrics, err = openMetrics(cfg.Output.Dir, resumeStep, t.epoch)
	return err
}

// announce prints the start of the run: the model, the data, the device
// and, for several ranks, how they share the work.
func (t *trainer) announce(ranks int, transport string) {
	cfg := t.cfg
	what := "samples"
	if t.lm != nil {
		what = fmt.Sprintf("windows of %d characters", cfg.Model.Context)
	}
	t.con.event("start", true, fmt.Sprintf("model %s: %d parameters; %d training and %d test %s on %s%s",
		cfg.Model.Name, layers.NumParams(t.model), t.trainLen, t.testLen, what, t.dev.Name(), backend(t.dev)),
		map[string]any{"model": cfg.Model.Name, "parameters": layers.NumParams(t.model), "train_samples": t.trainLen,
			"test_samples": t.testLen, "device": t.dev.Name(), "ranks": ranks, "run_dir": cfg.Output.Dir})
	for _, note := range t.dataNotes {
		t.con.info(true, "%s", note)
	}
	if t.lm != nil {
		t.con.info(true, "vocabulary of %d characters; unigram entropy of the training text %.4f nats/char (the loss of a model that ignores context)",
			t.lm.vocab.Size(), t.lm.unigram)
	}
	if ranks > 1 {
		t.con.info(true, "data-parallel over %d ranks (%s), %d compute threads each: global batch %d, learning rate %g × %.4g (%s scaling)",
			ranks, transport, cpu.Default().Threads(), ranks*cfg.Train.BatchSize*cfg.Dist.BackwardPassesPerStep,
			t.opt.BaseLR(), t.opt.Scaling().Factor(ranks), t.opt.Scaling())
	}
}

// announceResume says where the run resumes from.
func (t *trainer) announceResume(from savedCheckpoint, ranks int) {
	m := from.Manifest
	msg := fmt.Sprintf("resuming from %s: step %d, epoch %d (%d samples of it done)", from.Dir, m.Step, m.Epoch, m.EpochOffset)
	if m.WorldSize != ranks {
		s := t.opt.Scaling()
		msg += fmt.Sprintf("; written by %d rank(s), now %d: the rest of the epoch is shared among %d, learning rate factor %.4g → %.4g",
			m.WorldSize, ranks, ranks, s.Factor(m.WorldSize), s.Factor(ranks))
	}
	t.con.info(true, "%s", msg)
}

// loop trains from the current position to the last epoch, or until the
// run is stopped early.
func (t *trainer) loop(ctx context.Context) error {
	for t.epoch <= t.cfg.Train.Epochs {
		stopped, err := t.trainEpoch(ctx)
		if err != nil || stopped {
			return err
		}
	}
	return nil
}

// finish writes the final weights, the plot and the exports.
func (t *trainer) finish(ctx context.Context) error {
	var inSync string
	if t.comm.Size() > 1 {
		var err error
		if inSync, err = checkInSync(ctx, t.comm, t.model.Parameters()); err != nil {
			return err
		}
	}
	if t.con.log == nil { // not rank 0
		return nil
	}
	if inSync != "" {
		t.con.info(false, "every rank holds the same weights (digest %s)", inSync)
	}
	cfg := t.cfg
	if t.ema != nil {
		t.ema.swap()
		defer t.ema.swap()
	}
	meta := map[string]string{"model": cfg.Model.Name, "epoch": fmt.Sprint(t.epoch - 1), "step": fmt.Sprint(t.step), "format": "pt"}
	path := filepath.Join(cfg.Output.Dir, modelFile)
	if err := checkpoint.Save(path, layers.StateDict(t.model), meta); err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	if t.offset > 0 {
		t.plot() // stopped early inside an epoch; epochs end with a plot
	}
	plot := ""
	if cfg.Output.Plot {
		plot = " curves.png,"
	}
	t.con.event("end", true, fmt.Sprintf("wrote %s, metrics.jsonl, train.log,%s config.yaml, %s and checkpoints/ to %s", modelFile, plot, dataFile, cfg.Output.Dir),
		map[string]any{"run_dir": cfg.Output.Dir, "step": t.step})
	if cfg.Export.ONNX != "" {
		sample := t.test.Dataset().SampleShape()
		if err := exportONNX(cfg.Export.ONNX, t.model, t.lm, t.dev, sample, t.dataInfo); err != nil {
			return fmt.Errorf("export.onnx: %w", err)
		}
		t.con.info(true, "exported the model to %s (ONNX opset 17%s)", cfg.Export.ONNX, exportShape(t.lm, sample))
	}
	return nil
}

// checkpointBytes estimates the disk space of the checkpoints a run keeps:
// checkpoint.keep of them, the best, one being written, and the final
// weights, each the size of the weights, the optimizer state and the EMA.
func checkpointBytes(cfg *Config, model layers.Module, opt optim.Optimizer) int64 {
	var n int64
	for _, t := range layers.StateDict(model) {
		n += int64(t.Len() * t.DType().Size())
	}
	per := n
	for _, t := range opt.StateDict() {
		per += int64(t.Len() * t.DType().Size())
	}
	if cfg.Train.EMA > 0 {
		per += n
	}
	return per*int64(cfg.Checkpoint.Keep+2) + n + 1<<20
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
	if filepath.Dir(path) == "." {
		path = filepath.Join(cfg.Output.Dir, path) // a bare name goes in the run directory
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
	path := filepath.Join(cfg.Output.Dir, configFile)
	header := fmt.Sprintf("# The configuration of this run: %s with defaults and -set overrides applied.\n", cfg.File())
	if err := writeFileAtomic(path, append([]byte(header), out...)); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
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
// next Reset. A language model's batch of windows of T+1 characters
// becomes the first T as input and the last T as targets.
//
// For a regression, targets holds the numbers of the batch's data set
// (by sample index) and y is their column for the batch: N×1 float32.
func (t *trainer) batchTensors(b data.Batch, targets []float32) (x, y *tensor.Tensor, err error) {
	if t.lm != nil {
		xs, ys, shape := t.lm.split(b)
		if x, err = t.arena.FromSlice(t.dev, xs, shape...); err != nil {
			return nil, nil, err
		}
		if y, err = t.arena.FromSlice(t.dev, ys, len(ys)); err != nil {
			return nil, nil, err
		}
		return x, y, nil
	}
	if x, err = t.arena.FromSlice(t.dev, b.X, b.Shape...); err != nil {
		return nil, nil, err
	}
	if t.targets != nil {
		ys := make([]float32, len(b.Indices))
		for i, j := range b.Indices {
			ys[i] = targets[j]
		}
		if y, err = t.arena.FromSlice(t.dev, ys, len(ys), 1); err != nil {
			return nil, nil, err
		}
		return x, y, nil
	}
	if y, err = t.arena.FromSlice(t.dev, b.Y, len(b.Y)); err != nil {
		return nil, nil, err
	}
	return x, y, nil
}

// forward returns the model's logits for x as rows (a language model's
// N×T×V become (N·T)×V, one row per character).
func (t *trainer) forward(x *autograd.Var) *autograd.Var {
	logits := t.model.Forward(x)
	if s := logits.Shape(); len(s) == 3 {
		logits = autograd.Reshape(logits, s[0]*s[1], s[2])
	}
	return logits
}

// forwardBackward is the first half of a training step, on one batch in
// the step's arena: the model's logits for x, the cross-entropy loss
// against the labels y (with train.label_smoothing; a regression's mean
// squared error against its targets), and its gradients, added to the
// parameters' (scaled for fp16). It returns the loss and the number of
// rows predicted right (0 for a regression), then resets the arena.
func (t *trainer) forwardBackward(x, y *tensor.Tensor) (loss float64, right int, err error) {
	tl := t.timeline
	var t0 time.Time
	if tl != nil {
		t0 = time.Now()
	}
	logits := t.forward(autograd.Constant(x))
	l := t.loss(logits, y, layers.ReduceMean)
	loss = l.Value.Item()
	if tl != nil {
		t1 := time.Now()
		tl.Span("phases", "forward", t0, t1)
		t0 = t1
	}
	if t.scaler != nil {
		l = t.scaler.ScaleLoss(l)
	}
	if err := autograd.Backward(l); err != nil {
		return 0, 0, err
	}
	if t.targets == nil {
		right = correct(logits.Value, y)
	}
	t.arena.Reset()
	if tl != nil {
		tl.Span("phases", "backward", t0, time.Now())
	}
	return loss, right, nil
}

// loss is the training objective: the cross-entropy of the logits
// against the labels y (with train.label_smoothing in training), or for a
// regression the squared error against the targets y, reduced by r.
func (t *trainer) loss(out *autograd.Var, y *tensor.Tensor, r layers.Reduction) *autograd.Var {
	if t.targets != nil {
		return layers.MSE(out, autograd.Constant(y), r)
	}
	opts := layers.CrossEntropyOptions{Reduction: r}
	if r == layers.ReduceMean {
		opts.LabelSmoothing = t.cfg.Train.LabelSmoothing
	}
	return layers.CrossEntropy(out, y, opts)
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

// trainEpoch trains the rest of the epoch in progress. It returns
// stopped when the run ends before the last epoch (Ctrl-C, early
// stopping, a callback).
func (t *trainer) trainEpoch(ctx context.Context) (stopped bool, err error) {
	e := t.startEpoch()
	for b := range t.train.BatchesOf(ctx, e.order) {
		if t.cfg.Schedule.Per == "step" && e.pass == 0 {
			optim.Apply(t.opt, t.sched, t.step)
		}
		if err := t.trainBatch(e, b); err != nil {
			return false, err
		}
		if e.pass < e.passes && e.batches < e.numBatches {
			continue // gradients of several batches add up into one step
		}
		if stopped, err := t.takeStep(ctx, e); stopped || err != nil {
			return stopped, err
		}
	}
	e.bar.finish()
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return t.endEpoch(ctx)
}

// epochRun is the state of the epoch being trained: what is left of its
// order and the running sums between steps and log lines.
type epochRun struct {
	order              []int // this rank's samples still to train
	passes, numBatches int   // batches per step, batches left
	perBatch, epochLen int   // positions of the global order per batch, in the epoch
	bar                *progress
	pass, batches      int     // batches of the step being gathered, since the last step
	logLoss, stepLoss  float64 // loss sums since the last log line, of this step
	logN, stepN        int
	bad                bool    // a batch's loss was not finite
	badLoss            float64 // that loss
	start              time.Time
	secondsBefore      float64 // of the epoch, before a resume
	stepStart          time.Time
}

// startEpoch sets the epoch's learning rate (per-epoch schedules), the
// augmentation's epoch and this rank's order, and starts the progress bar.
func (t *trainer) startEpoch() *epochRun {
	cfg := t.cfg
	layers.Train(t.model)
	if cfg.Schedule.Per == "epoch" {
		optim.Apply(t.opt, t.sched, t.epoch-1)
	}
	if t.images != nil {
		t.images.SetEpoch(t.epoch)
	}
	if t.augment != nil {
		t.augment.SetEpoch(t.epoch)
	}
	size := t.engine.Size()
	e := &epochRun{order: t.sampler.IndicesFrom(t.epoch-1, t.offset), passes: cfg.Dist.BackwardPassesPerStep,
		perBatch: cfg.Train.BatchSize * size, epochLen: t.sampler.Len() * size,
		start: time.Now(), secondsBefore: t.epochSeconds}
	e.numBatches = t.train.NumBatchesOf(len(e.order))
	e.bar = newProgress(t.bar, t.logW, cfg.Output.Progress && !t.con.json && !t.con.quiet && t.con.log != nil,
		(e.numBatches+e.passes-1)/e.passes, fmt.Sprintf("epoch %d/%d", t.epoch, cfg.Train.Epochs))
	return e
}

// trainBatch runs forward and backward on one batch and adds its loss and
// accuracy to the sums.
func (t *trainer) trainBatch(e *epochRun, b data.Batch) error {
	x, y, err := t.batchTensors(b, t.trainTargets())
	if err != nil {
		return err
	}
	rows := float64(y.Len())
	l, right, err := t.forwardBackward(x, y)
	if err != nil {
		return err
	}
	if t.targets != nil {
		l *= t.targets.lossScale() // in the targets' units
	}
	if math.IsNaN(l) || math.IsInf(l, 0) {
		e.bad, e.badLoss = true, l
	}
	t.sums[0] += l * rows
	t.sums[1] += rows
	t.sums[2] += float64(right)
	e.logLoss += l
	e.logN++
	e.stepLoss += l
	e.stepN++
	if t.timeline != nil {
		e.stepStart = time.Now()
	}
	e.batches++
	e.pass++
	return nil
}

// takeStep agrees with the other ranks (Ctrl-C, a diverged loss), takes
// the optimizer step, then logs, evaluates, checkpoints and stops as
// configured. It returns stopped when the run ends here.
func (t *trainer) takeStep(ctx context.Context, e *epochRun) (stopped bool, err error) {
	cfg := t.cfg
	e.pass = 0
	interrupted, badRank, err := t.agree(ctx, e.bad)
	if err != nil {
		return false, err
	}
	if badRank >= 0 {
		return false, t.diverged(badRank, e.badLoss)
	}
	lr := t.opt.LR() // the rate this step applies
	if err := t.applyStep(ctx); err != nil {
		return false, err
	}
	t.step++
	t.offset = min(t.offset+e.batches*e.perBatch, e.epochLen)
	e.batches = 0
	if t.timeline != nil {
		t.timeline.Span("phases", "step", e.stepStart, time.Now())
	}
	if err := t.report(e, lr); err != nil {
		return false, err
	}
	midEpoch := t.offset < e.epochLen
	evalNow := cfg.Train.EvalEverySteps > 0 && t.step%cfg.Train.EvalEverySteps == 0 && midEpoch
	saveNow := cfg.Checkpoint.EverySteps > 0 && t.step%cfg.Checkpoint.EverySteps == 0 && midEpoch
	earlyStop, err := t.stepCallbacks(ctx, StepMetrics{Step: t.step, Epoch: t.epochProgress(), Loss: e.stepLoss / float64(e.stepN), LR: lr})
	if err != nil {
		return false, err
	}
	e.stepLoss, e.stepN = 0, 0
	if evalNow && !earlyStop {
		e.bar.pause()
		if earlyStop, err = t.evaluateAndRecord(ctx, false); err != nil {
			return false, err
		}
		layers.Train(t.model)
	}
	if saveNow || interrupted || earlyStop {
		e.bar.pause()
		if err := t.save(ctx); err != nil {
			return false, err
		}
	}
	switch {
	case interrupted:
		e.bar.finish()
		t.con.info(true, "stopped at step %d (epoch %d): wrote checkpoint %s; resume with: train resume -run %s",
			t.step, t.epoch, checkpointName(t.step), t.cfg.Output.Dir)
		return true, errInterrupted
	case earlyStop:
		e.bar.finish()
		return true, nil
	}
	return false, nil
}

// report moves the progress bar and writes the "train" record of
// metrics.jsonl every train.log_every_steps steps; lr is the rate the
// step applied.
func (t *trainer) report(e *epochRun, lr float64) error {
	t.epochSeconds = e.secondsBefore + time.Since(e.start).Seconds()
	rate := t.sums[1] * float64(t.engine.Size()) / t.epochSeconds // rows of all ranks: samples, or a language model's characters
	if t.lm != nil {
		rate /= float64(t.cfg.Model.Context) // windows, as the epoch line counts them
	}
	e.bar.step(e.logLoss/float64(e.logN), rate)
	if t.step%t.cfg.Train.LogEverySteps != 0 || t.metrics == nil {
		return nil
	}
	rec := stepRecord{Kind: "train", Step: t.step, Epoch: t.epochProgress(), Loss: e.logLoss / float64(e.logN), LR: lr}
	e.logLoss, e.logN = 0, 0
	return t.metrics.write(rec)
}

// endEpoch sums the epoch's metrics over the ranks, evaluates (unless
// the last step just did), records and prints the epoch, writes its
// checkpoint and curves, and runs the epoch callbacks. It returns stopped
// when early stopping or a callback ends the run.
func (t *trainer) endEpoch(ctx context.Context) (stopped bool, err error) {
	cfg := t.cfg
	epoch := t.epoch
	sums := t.sums[:]
	if err := t.engine.AllreduceFloat64s(ctx, "metrics.train", sums, dist.Sum); err != nil {
		return false, err
	}
	m := EpochMetrics{Kind: "epoch", Epoch: epoch, Step: t.step, LR: t.opt.LR(), Seconds: t.epochSeconds,
		TrainLoss: sums[0] / max(sums[1], 1), TrainAccuracy: sums[2] / max(sums[1], 1), PeakRSSMiB: peakrss.MiB()}
	m.SamplesPerSec = sums[1] / max(m.Seconds, 1e-9)
	if t.lm != nil {
		m.SamplesPerSec /= float64(cfg.Model.Context) // windows, not characters
	}
	t.sums, t.epochSeconds = [3]float64{}, 0
	t.epoch, t.offset = epoch+1, 0
	earlyStop := false
	if t.lastEvalStep != t.step || t.lastEval == nil {
		if earlyStop, err = t.evaluateAndRecord(ctx, true); err != nil {
			return false, err
		}
	}
	m.TestLoss, m.TestAccuracy = t.lastEval["test_loss"], t.lastEval["test_accuracy"]
	m.TestRMSE, m.TestR2 = t.lastEval["test_rmse"], t.lastEval["test_r2"]
	if t.metrics != nil {
		if err := t.metrics.write(m); err != nil {
			return false, err
		}
		if err := t.metrics.sync(); err != nil {
			return false, err
		}
	}
	fields := map[string]any{"epoch": epoch, "epochs": cfg.Train.Epochs, "step": t.step, "train_loss": m.TrainLoss,
		"train_accuracy": m.TrainAccuracy, "test_loss": m.TestLoss, "test_accuracy": m.TestAccuracy,
		"samples_per_sec": m.SamplesPerSec, "seconds": m.Seconds, "lr": m.LR, "peak_rss_mib": m.PeakRSSMiB}
	trainPart := fmt.Sprintf("train loss %.4f acc %.4f", m.TrainLoss, m.TrainAccuracy)
	if t.targets != nil {
		trainPart = fmt.Sprintf("train loss(MSE) %.4f", m.TrainLoss)
		fields["test_rmse"], fields["test_r2"] = m.TestRMSE, m.TestR2
	}
	t.con.event("epoch", true, fmt.Sprintf("epoch %d/%d  %s  %s  %.0f samples/s  %.1fs",
		epoch, cfg.Train.Epochs, trainPart, describeEval(t.lastEval), m.SamplesPerSec, m.Seconds), fields)
	if t.lm != nil && t.con.log != nil {
		t.sampleText()
	}
	if err := t.save(ctx); err != nil {
		return false, err
	}
	t.plot()
	t.job.history = append(t.job.history, m)
	if earlyStop {
		return true, nil
	}
	return t.epochCallbacks(ctx, m)
}

// stepCallbacks runs the callbacks' Step functions and returns whether
// one of them, on any rank, asked to stop.
func (t *trainer) stepCallbacks(ctx context.Context, m StepMetrics) (stop bool, err error) {
	return t.runCallbacks(ctx, func(cb Callback) error {
		if cb.Step == nil {
			return nil
		}
		return cb.Step(m)
	})
}

// epochCallbacks runs the callbacks' Epoch functions and returns whether
// one of them, on any rank, asked to stop.
func (t *trainer) epochCallbacks(ctx context.Context, m EpochMetrics) (stop bool, err error) {
	return t.runCallbacks(ctx, func(cb Callback) error {
		if cb.Epoch == nil {
			return nil
		}
		return cb.Epoch(m)
	})
}

// runCallbacks calls call on every callback of the job. ErrStop from any
// of them on any rank stops every rank (one more collective per call,
// made only when the job has callbacks); another error fails the run.
func (t *trainer) runCallbacks(ctx context.Context, call func(Callback) error) (stop bool, err error) {
	if len(t.job.callbacks) == 0 {
		return false, nil
	}
	for _, cb := range t.job.callbacks {
		switch err := call(cb); {
		case errors.Is(err, ErrStop):
			stop = true
		case err != nil:
			return false, fmt.Errorf("callback: %w", err)
		}
	}
	if t.engine.Size() > 1 {
		flag := []float64{0}
		if stop {
			flag[0] = 1
		}
		if err := t.engine.AllreduceFloat64s(ctx, "control.callbacks", flag, dist.Sum); err != nil {
			return false, err
		}
		stop = flag[0] > 0
	}
	if stop {
		t.con.info(true, "a callback stopped the run at step %d", t.step)
	}
	return stop, nil
}

// epochProgress is the position in epochs: 2.5 is half-way through the
// third epoch.
func (t *trainer) epochProgress() float64 {
	n := t.sampler.Len() * t.engine.Size()
	return float64(t.epoch-1) + float64(t.offset)/float64(max(n, 1))
}

// agree tells every rank whether any rank was asked to stop and which
// rank (if any) saw a loss that is not finite, so that all of them act
// alike at the same step. A single process needs no message.
func (t *trainer) agree(ctx context.Context, bad bool) (stop bool, badRank int, err error) {
	stopHere := false
	select {
	case <-t.stop:
		stopHere = true
	default:
	}
	if faultStep > 0 && t.step+1 == faultStep && (faultRank < 0 || faultRank == t.engine.Rank()) {
		faultCrash()
	}
	n := t.engine.Size()
	if n == 1 {
		if bad {
			return stopHere, 0, nil
		}
		return stopHere, -1, nil
	}
	flags := make([]float32, 1+n)
	if stopHere {
		flags[0] = 1
	}
	if bad {
		flags[1+t.engine.Rank()] = 1
	}
	ctl := tensor.FromFloat32(flags, len(flags))
	h := t.engine.AllreduceAsync("control", ctl, dist.Sum, false)
	t.engine.Flush()
	if err := h.Wait(ctx); err != nil {
		return false, -1, err
	}
	got := ctl.Float32s()
	badRank = -1
	for r := range n {
		if got[1+r] > 0 {
			badRank = r
			break
		}
	}
	return got[0] > 0, badRank, nil
}

// diverged is the error of a run whose loss stopped being finite.
func (t *trainer) diverged(rank int, loss float64) error {
	where := ""
	if t.engine.Size() > 1 {
		where = fmt.Sprintf(" on rank %d", rank)
	}
	last := "no checkpoint was written yet"
	if t.lastCkptStep > 0 {
		last = "the last good checkpoint is " + filepath.Join(t.cfg.Output.Dir, checkpointsDir, checkpointName(t.lastCkptStep))
	} else if c, ok, _, _ := latestCheckpoint(t.cfg.Output.Dir, false); ok {
		last = "the last good checkpoint is " + c.Dir
	}
	msg := fmt.Sprintf("step %d (epoch %d): the loss is %v%s; stopped without taking the step (%s). Lower optimizer.lr, set optimizer.clip_norm, or add schedule.warmup_epochs",
		t.step+1, t.epoch, lossText(loss), where, last)
	return fmt.Errorf("%s: %w", msg, errDiverged)
}

func lossText(l float64) string {
	if math.IsNaN(l) {
		return "NaN"
	}
	return fmt.Sprint(l)
}

// applyStep averages the gradients across ranks, clips them if
// configured, applies the optimizer and updates the weight average.
func (t *trainer) applyStep(ctx context.Context) error {
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
	if t.ema != nil {
		t.ema.update()
	}
	return nil
}

// evaluateAndRecord evaluates on the test set (with the averaged weights
// under train.ema), records the result, updates the best metric and
// returns whether early stopping says to stop.
func (t *trainer) evaluateAndRecord(ctx context.Context, epochEnd bool) (stop bool, err error) {
	if t.ema != nil {
		t.ema.swap()
	}
	metrics, err := t.evaluate(ctx)
	if t.ema != nil {
		t.ema.swap()
	}
	if err != nil {
		return false, err
	}
	t.lastEval = metrics
	t.lastEvalStep = t.step
	if t.metrics != nil {
		rec := evalRecord{Kind: "eval", Step: t.step, Epoch: t.epochProgress(), TestLoss: metrics["test_loss"],
			TestAccuracy: metrics["test_accuracy"], TestRMSE: metrics["test_rmse"], TestR2: metrics["test_r2"]}
		if err := t.metrics.write(rec); err != nil {
			return false, err
		}
	}
	if !epochEnd {
		fields := map[string]any{"step": t.step}
		for k, v := range metrics {
			fields[k] = v
		}
		t.con.event("eval", false, fmt.Sprintf("step %d  %s", t.step, describeEval(metrics)), fields)
	}
	metric, higher := t.bestMetric()
	v := t.lastEval[metric]
	improved := t.best == nil || (higher && v > *t.best+t.cfg.Train.MinDelta) || (!higher && v < *t.best-t.cfg.Train.MinDelta)
	if improved {
		t.best = &v
		t.badEvals = 0
	} else {
		t.badEvals++
	}
	if p := t.cfg.Train.Patience; p > 0 && t.badEvals >= p {
		t.con.info(true, "early stopping at step %d: %s has not improved on %.4f for %d evaluations (train.patience)", t.step, metric, *t.best, p)
		return true, nil
	}
	return false, nil
}

// bestMetric returns the metric that picks the best checkpoint and
// whether higher is better.
func (t *trainer) bestMetric() (string, bool) {
	m := t.cfg.Checkpoint.BestMetric
	if m == "auto" {
		m = "test_accuracy"
		if t.lm != nil || t.targets != nil {
			m = "test_loss"
		}
	}
	return m, m == "test_accuracy"
}

// evaluate returns the metrics of the model on the test set: its mean
// loss ("test_loss") and "test_accuracy", or for a regression the mean
// squared error ("test_loss"), "test_rmse" and "test_r2". Each rank
// evaluates every Size-th sample and the sums are combined.
func (t *trainer) evaluate(ctx context.Context) (map[string]float64, error) {
	layers.Eval(t.model)
	var shard []int
	for i := t.engine.Rank(); i < t.testLen; i += t.engine.Size() {
		shard = append(shard, i)
	}
	var targets []float32
	if t.targets != nil {
		targets = t.targets.test
	}
	loss, seen, right := 0.0, 0.0, 0.0
	for b := range t.test.BatchesOf(ctx, shard) {
		x, y, err := t.batchTensors(b, targets)
		if err != nil {
			return nil, err
		}
		logits := t.forward(autograd.NoGrad(autograd.Constant(x)))
		loss += t.loss(logits, y, layers.ReduceSum).Value.Item()
		if t.targets == nil {
			right += float64(correct(logits.Value, y))
		}
		seen += float64(y.Shape()[0]) // rows: samples, or a language model's characters
		t.arena.Reset()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sums := []float64{loss, seen, right}
	if err := t.engine.AllreduceFloat64s(ctx, "metrics.test", sums, dist.Sum); err != nil {
		return nil, err
	}
	n := max(sums[1], 1)
	if t.targets != nil {
		mse := sums[0] / n * t.targets.lossScale() // in the targets' units
		return map[string]float64{"test_loss": mse, "test_rmse": math.Sqrt(mse), "test_r2": r2(mse, t.targets.testVar)}, nil
	}
	return map[string]float64{"test_loss": sums[0] / n, "test_accuracy": sums[2] / n}, nil
}

// trainTargets returns the numbers a regression learns from its training
// set (nil for a classifier).
func (t *trainer) trainTargets() []float32 {
	if t.targets == nil {
		return nil
	}
	return t.targets.train
}

// describeEval formats evaluation metrics for the console: loss and
// accuracy, or a regression's loss, RMSE and R².
func describeEval(m map[string]float64) string {
	if r2, ok := m["test_r2"]; ok {
		return fmt.Sprintf("test loss(MSE) %.4f rmse %.4f r2 %.4f", m["test_loss"], m["test_rmse"], r2)
	}
	return fmt.Sprintf("test loss %.4f acc %.4f", m["test_loss"], m["test_accuracy"])
}

// save writes a checkpoint of the current position (rank 0; the other
// ranks only take part in summing the epoch's metrics), keeps the best
// one and removes the old ones.
func (t *trainer) save(ctx context.Context) error {
	sums := t.sums
	if t.engine.Size() > 1 {
		s := sums[:]
		if err := t.engine.AllreduceFloat64s(ctx, "metrics.checkpoint", s, dist.Sum); err != nil {
			return err
		}
	}
	if t.con.log == nil { // not rank 0
		return nil
	}
	rng, err := t.rngSrc.MarshalBinary()
	if err != nil {
		return err
	}
	metric, _ := t.bestMetric()
	m := manifest{
		Model: t.cfg.Model.Name, Step: t.step, Epoch: t.epoch, EpochOffset: t.offset,
		EpochSums: sums, EpochSeconds: t.epochSeconds,
		WorldSize: t.engine.Size(), BatchSize: t.cfg.Train.BatchSize, Passes: t.cfg.Dist.BackwardPassesPerStep,
		Threads: cpu.Default().Threads(), Seed: t.cfg.Seed, RNG: hex.EncodeToString(rng), LR: t.opt.LR(),
		BestMetric: metric, Best: t.best, BadEvals: t.badEvals, Eval: t.lastEval,
	}
	if t.lm != nil {
		m.Vocab = string(t.lm.vocab.Runes())
	}
	files := map[string]map[string]*tensor.Tensor{
		modelFile:     layers.StateDict(t.model),
		optimizerFile: t.opt.StateDict(),
	}
	if t.ema != nil {
		files[emaFile] = t.ema.stateDict()
	}
	dir, err := writeCheckpoint(t.cfg.Output.Dir, m, files)
	if err != nil {
		return err
	}
	t.lastCkptStep = t.step
	if t.lastEvalStep == t.step && t.lastEval != nil {
		// The best checkpoint is the best of those written with an
		// evaluation of their own step.
		b, err := readBest(t.cfg.Output.Dir)
		if err != nil {
			return err
		}
		v := t.lastEval[metric]
		_, higher := t.bestMetric()
		if b.Checkpoint == "" || b.Metric != metric || higher && v > b.Value || !higher && v < b.Value {
			if err := writeBest(t.cfg.Output.Dir, bestRecord{Checkpoint: filepath.Base(dir), Metric: metric, Value: v, Step: t.step}); err != nil {
				return err
			}
		}
	}
	return pruneCheckpoints(t.cfg.Output.Dir, t.cfg.Checkpoint.Keep)
}

// restore loads the checkpoint c into the model, the optimizer, the
// weight average and the position.
func (t *trainer) restore(c savedCheckpoint) error {
	m := c.Manifest
	if m.Model != t.cfg.Model.Name {
		return inputError{fmt.Errorf("%s: the checkpoint is of model %q, the config says model.name %q", c.Dir, m.Model, t.cfg.Model.Name)}
	}
	if _, err := checkpoint.DecodeInto(filepath.Join(c.Dir, modelFile), c.Files[modelFile], layers.StateDict(t.model)); err != nil {
		return inputError{err}
	}
	state, _, err := checkpoint.Decode(filepath.Join(c.Dir, optimizerFile), c.Files[optimizerFile])
	if err != nil {
		return inputError{err}
	}
	if err := t.opt.LoadStateDict(state); err != nil {
		return inputError{fmt.Errorf("%s: %w", filepath.Join(c.Dir, optimizerFile), err)}
	}
	if t.ema != nil {
		path := filepath.Join(c.Dir, emaFile)
		if b, ok := c.Files[emaFile]; ok {
			if _, err := checkpoint.DecodeInto(path, b, t.ema.stateDict()); err != nil {
				return inputError{err}
			}
		} else {
			t.ema = newEMA(t.model.Parameters(), t.cfg.Train.EMA) // EMA turned on at resume
		}
	}
	rng, err := hex.DecodeString(m.RNG)
	if err == nil {
		err = t.rngSrc.UnmarshalBinary(rng)
	}
	if err != nil {
		return inputError{fmt.Errorf("%s: rng: %w", filepath.Join(c.Dir, manifestFile), err)}
	}
	// The position counts samples of the epoch's global order, which is
	// the same for any number of ranks: IndicesFrom shares the rest of
	// the epoch among this run's ranks, however many wrote the checkpoint.
	if limit := t.trainLen + m.WorldSize*m.BatchSize; m.EpochOffset > limit {
		// Past the end of an epoch of this data (even with the padding of
		// the last shards): the manifest is not of this run's data.
		return inputError{fmt.Errorf("%s: epoch_offset: %d samples of the epoch done, but an epoch of the training set has %d samples (at most %d with the last shards' padding): the checkpoint is not of this data",
			filepath.Join(c.Dir, manifestFile), m.EpochOffset, t.trainLen, limit)}
	}
	t.step, t.epoch, t.offset = m.Step, m.Epoch, m.EpochOffset
	if t.engine.Rank() == 0 {
		t.sums = m.EpochSums
	}
	t.epochSeconds = m.EpochSeconds
	t.best, t.badEvals, t.lastEval = m.Best, m.BadEvals, m.Eval
	t.lastEvalStep, t.lastCkptStep = -1, m.Step
	if m.Eval != nil {
		t.lastEvalStep = m.Step
	}
	return nil
}
