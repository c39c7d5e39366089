package dist

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// Scaling is how the learning rate grows with the number of ranks: with N
// ranks the global batch is N times larger (Goyal et al., Horovod).
type Scaling int

// The learning-rate scalings.
const (
	ScaleLinear Scaling = iota // lr × N, the default
	ScaleSqrt                  // lr × √N
	ScaleNone                  // lr unchanged
)

// String returns the config name ("linear", "sqrt", "none").
func (s Scaling) String() string {
	switch s {
	case ScaleLinear:
		return "linear"
	case ScaleSqrt:
		return "sqrt"
	case ScaleNone:
		return "none"
	}
	return fmt.Sprintf("scaling(%d)", int(s))
}

// ParseScaling returns the Scaling named s: "linear", "sqrt" or "none".
func ParseScaling(s string) (Scaling, error) {
	for _, v := range []Scaling{ScaleLinear, ScaleSqrt, ScaleNone} {
		if v.String() == s {
			return v, nil
		}
	}
	return 0, fmt.Errorf("dist: unknown learning-rate scaling %q (known: linear, sqrt, none)", s)
}

// Factor returns the multiplier of the learning rate for size ranks.
func (s Scaling) Factor(size int) float64 {
	switch s {
	case ScaleSqrt:
		return math.Sqrt(float64(size))
	case ScaleNone:
		return 1
	}
	return float64(size)
}

// OptimizerConfig configures a DistributedOptimizer. The zero value is
// Horovod's recipe: linear scaling, no warm-up, no compression, one
// backward pass per step, parameters and state broadcast from rank 0.
type OptimizerConfig struct {
	// Scaling multiplies the wrapped optimizer's learning rate by a
	// function of the number of ranks.
	Scaling Scaling
	// WarmupSteps, when > 0, ramps the multiplier linearly from 1 at the
	// first step to its full value after WarmupSteps steps (Goyal et al.'s
	// gradual warm-up), which keeps large-batch training stable.
	WarmupSteps int
	// Compress sends float32 gradients as float16 (half the bytes; the
	// sum is rounded to float16, about 3 significant digits).
	Compress bool
	// BackwardPassesPerStep is the number of backward passes whose
	// gradients add up before they are reduced and applied by Step (0
	// means 1). The accumulated gradient is divided by it, so k passes of
	// batch B act as one pass of batch k·B.
	BackwardPassesPerStep int
	// Root is the rank whose parameters and optimizer state every rank
	// starts from.
	Root int
}

// DistributedOptimizer wraps an optim.Optimizer for data-parallel
// training, Horovod's DistributedOptimizer: every rank runs the same
// model on its own shard of the data; each gradient is averaged across
// ranks as soon as backward has produced it (from the parameter's
// gradient-ready hook, so communication overlaps the rest of backward),
// small gradients fused into one allreduce by the Engine; Step waits for
// the averages, then applies the wrapped optimizer, so every rank makes
// the same update and the parameters stay identical.
type DistributedOptimizer struct {
	inner   optim.Optimizer
	engine  *Engine
	cfg     OptimizerConfig
	params  []*autograd.Param
	names   []string
	handles []*Handle
	passes  []int
	ready   int // gradients submitted this step
	// scheduled is the rate a schedule set (SetLR), before the
	// world-size factor; applyLR gives the wrapped optimizer the product.
	scheduled float64
	steps     int64
}

var _ optim.Optimizer = (*DistributedOptimizer)(nil)

// NewDistributedOptimizer wraps inner. It is collective: every rank must
// call it, with the same parameters in the same order. It broadcasts the
// parameters and the optimizer state from cfg.Root, so all ranks start
// from the same point, and registers the gradient-ready hooks. Create it
// before the first forward pass.
func NewDistributedOptimizer(ctx context.Context, inner optim.Optimizer, e *Engine, cfg OptimizerConfig) (*DistributedOptimizer, error) {
	if inner == nil || e == nil {
		return nil, errors.New("dist: NewDistributedOptimizer: nil optimizer or engine")
	}
	if cfg.BackwardPassesPerStep == 0 {
		cfg.BackwardPassesPerStep = 1
	}
	if cfg.BackwardPassesPerStep < 0 {
		return nil, fmt.Errorf("dist: BackwardPassesPerStep = %d, want ≥ 1", cfg.BackwardPassesPerStep)
	}
	if cfg.WarmupSteps < 0 {
		return nil, fmt.Errorf("dist: WarmupSteps = %d, want ≥ 0", cfg.WarmupSteps)
	}
	if cfg.Root < 0 || cfg.Root >= e.Size() {
		return nil, fmt.Errorf("dist: Root = %d, out of range [0, %d)", cfg.Root, e.Size())
	}
	if _, err := ParseScaling(cfg.Scaling.String()); err != nil {
		return nil, err
	}
	params := inner.Params()
	d := &DistributedOptimizer{
		inner: inner, engine: e, cfg: cfg, params: params,
		names:     make([]string, len(params)),
		handles:   make([]*Handle, len(params)),
		passes:    make([]int, len(params)),
		scheduled: inner.LR(),
	}
	for i, p := range params {
		d.names[i] = "grad." + p.Name
	}
	if err := d.BroadcastState(ctx); err != nil {
		return nil, err
	}
	for i, p := range params {
		p.OnGradReady(func(*autograd.Param) { d.gradReady(i) })
	}
	d.applyLR()
	return d, nil
}

// BroadcastState copies the parameters and the optimizer state of rank
// cfg.Root to every rank (collective). NewDistributedOptimizer calls it;
// call it again after loading a checkpoint on the root only.
func (d *DistributedOptimizer) BroadcastState(ctx context.Context) error {
	e := d.engine
	handles := make([]*Handle, 0, len(d.params))
	for _, p := range d.params {
		handles = append(handles, e.BroadcastAsync("param."+p.Name, p.Value, d.cfg.Root))
	}
	sd := d.StateDict()
	keys := make([]string, 0, len(sd))
	for k := range sd {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		handles = append(handles, e.BroadcastAsync("optimizer."+k, sd[k], d.cfg.Root))
	}
	e.Flush()
	var first error
	for _, h := range handles {
		if err := h.Wait(ctx); err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return fmt.Errorf("dist: broadcasting the initial state from rank %d: %w", d.cfg.Root, first)
	}
	return d.LoadStateDict(sd)
}

// gradReady is the hook of parameter i: after the configured number of
// backward passes it submits the parameter's gradient for averaging.
func (d *DistributedOptimizer) gradReady(i int) {
	d.passes[i]++
	if d.passes[i] < d.cfg.BackwardPassesPerStep || d.handles[i] != nil {
		return
	}
	d.submit(i)
	if d.ready == len(d.params) {
		d.engine.Flush()
	}
}

func (d *DistributedOptimizer) submit(i int) {
	p := d.params[i]
	if p.Grad == nil {
		// Not used on this rank in this step: the others still wait for
		// its gradient, so it contributes zeros (as in Horovod).
		p.Grad = tensor.ZerosLike(p.Value)
	} else if k := d.passes[i]; k > 1 {
		// The mean over the passes accumulated (BackwardPassesPerStep, or
		// fewer at the end of an epoch).
		p.Grad.CopyFrom(p.Grad.MulScalar(1 / float64(k)))
	}
	d.handles[i] = d.engine.AllreduceAsync(d.names[i], p.Grad, Average, d.cfg.Compress)
	d.ready++
}

// Synchronize waits until every gradient of this step is averaged across
// ranks, submitting those whose hooks did not fire (parameters this rank
// did not use). Step calls it; call it yourself to look at (or clip) the
// averaged gradients before Step.
func (d *DistributedOptimizer) Synchronize(ctx context.Context) error {
	for i, h := range d.handles {
		if h == nil {
			d.submit(i)
		}
	}
	d.engine.Flush()
	var first error
	for i, h := range d.handles {
		if h == nil {
			continue
		}
		if err := h.Wait(ctx); err != nil && first == nil {
			first = fmt.Errorf("dist: averaging the gradient of %s: %w", d.params[i].Name, err)
		}
		d.handles[i] = nil
		d.passes[i] = 0
	}
	d.ready = 0
	return first
}

// Step averages the gradients across ranks (see Synchronize), then
// applies the wrapped optimizer with the scaled learning rate.
func (d *DistributedOptimizer) Step() error {
	if err := d.Synchronize(context.Background()); err != nil {
		return err
	}
	if err := d.inner.Step(); err != nil {
		return err
	}
	d.steps++
	d.applyLR() // the warm-up's factor moves with the step count
	return nil
}

// ZeroGrad drops the gradients (after waiting for any reduction still
// writing them).
func (d *DistributedOptimizer) ZeroGrad() {
	for i, h := range d.handles {
		if h != nil {
			_ = h.Wait(context.Background())
			d.handles[i] = nil
		}
		d.passes[i] = 0
	}
	d.ready = 0
	d.inner.ZeroGrad()
}

// The learning rate has one owner, the wrapped optimizer: BaseLR is the
// rate it was built with, LR the rate its next step applies. A schedule
// reads BaseLR and sets its rate with SetLR; the DistributedOptimizer
// multiplies that rate by its world-size factor (Scaling, ramped over
// WarmupSteps) in one place, applyLR, so the rate applied at a step is
//
//	schedule's rate (its own warm-up included) × world-size factor(step)

// BaseLR returns the wrapped optimizer's base learning rate (its
// config's), which schedules scale.
func (d *DistributedOptimizer) BaseLR() float64 { return d.inner.BaseLR() }

// LR returns the learning rate the next Step applies: the schedule's
// rate times the world-size factor.
func (d *DistributedOptimizer) LR() float64 { return d.inner.LR() }

// ScheduledLR returns the rate last set by SetLR (a schedule's), before
// the world-size factor.
func (d *DistributedOptimizer) ScheduledLR() float64 { return d.scheduled }

// SetLR sets the schedule's rate; the wrapped optimizer applies it times
// the world-size factor. It panics when lr is negative, NaN or infinite.
func (d *DistributedOptimizer) SetLR(lr float64) {
	d.scheduled = lr
	d.applyLR()
}

// Scaling returns how the learning rate scales with the number of ranks.
func (d *DistributedOptimizer) Scaling() Scaling { return d.cfg.Scaling }

// factor is the learning-rate multiplier at the current step.
func (d *DistributedOptimizer) factor() float64 {
	f := d.cfg.Scaling.Factor(d.engine.Size())
	if w := d.cfg.WarmupSteps; w > 0 && d.steps < int64(w) {
		return 1 + (f-1)*float64(d.steps)/float64(w)
	}
	return f
}

// applyLR gives the wrapped optimizer the scheduled rate times the
// world-size factor: the one place the factor is applied.
func (d *DistributedOptimizer) applyLR() { d.inner.SetLR(d.scheduled * d.factor()) }

// Params returns the wrapped optimizer's parameters.
func (d *DistributedOptimizer) Params() []*autograd.Param { return d.inner.Params() }

// Inner returns the wrapped optimizer.
func (d *DistributedOptimizer) Inner() optim.Optimizer { return d.inner }

// StateDict returns the wrapped optimizer's state, with the scheduled
// learning rate (before the world-size factor, so that a run resumed on
// another number of ranks scales it anew) under optim.LRKey.
func (d *DistributedOptimizer) StateDict() map[string]*tensor.Tensor {
	sd := d.inner.StateDict()
	sd[optim.LRKey] = tensor.FromFloat64([]float64{d.scheduled})
	return sd
}

// LoadStateDict restores a state saved by StateDict.
func (d *DistributedOptimizer) LoadStateDict(sd map[string]*tensor.Tensor) error {
	if err := d.inner.LoadStateDict(sd); err != nil {
		return err
	}
	if t := sd[optim.LRKey]; t != nil {
		d.scheduled = t.Item()
	}
	if t := sd[optim.StepKey]; t != nil {
		d.steps = int64(t.Item())
	}
	d.applyLR()
	return nil
}
