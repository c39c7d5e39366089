package disttest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// EquivalenceConfig describes a training-equivalence check.
type EquivalenceConfig struct {
	// Optimizer is "sgd" (with momentum) or "adam".
	Optimizer string
	// Steps is the number of optimizer steps (20 in the suite).
	Steps int
	// Batch is the batch per rank; the single-process reference uses
	// Size·Batch.
	Batch int
	// Compress sends the gradients as float16.
	Compress bool
	// BackwardPassesPerStep splits each rank's batch into this many
	// backward passes accumulated before the step (0 or 1: one pass).
	BackwardPassesPerStep int
	// Engine configures the rank's engine (fusion threshold, cycle time).
	Engine dist.EngineConfig
}

// Equivalence trains a small MLP for cfg.Steps steps on this rank's shard
// of a synthetic data set, with a DistributedOptimizer over c, and also,
// alone in this process, the same model with the whole batch of all ranks
// (Size·Batch samples per step, the same samples, the learning rate scaled
// as the DistributedOptimizer scales it). It returns the largest relative
// difference between the two final parameter sets, max|a−b| / max|b| per
// parameter. Every rank must call it. Rank r starts from a different
// random initialisation, so the result also checks the broadcast from
// rank 0.
func Equivalence(ctx context.Context, c dist.Communicator, cfg EquivalenceConfig) (float64, error) {
	const (
		features = 24
		classes  = 5
		seed     = 7
	)
	size, rank := c.Size(), c.Rank()
	n := cfg.Steps * cfg.Batch * size
	xs, ys := syntheticData(n, features, classes)
	sampler, err := dist.NewDistributedSampler(n, rank, size, dist.SamplerConfig{Shuffle: true, Seed: seed, DropLast: true})
	if err != nil {
		return 0, err
	}
	order := sampler.Indices(0)
	full, err := dist.NewDistributedSampler(n, 0, 1, dist.SamplerConfig{Shuffle: true, Seed: seed, DropLast: true})
	if err != nil {
		return 0, err
	}
	fullOrder := full.Indices(0)

	newModel := func(s uint64) (*layers.Sequential, optim.Optimizer, error) {
		m, err := models.NewMLP(models.MLPConfig{In: features, Hidden: []int{32, 16}, Classes: classes}, rand.New(rand.NewPCG(s, 3)))
		if err != nil {
			return nil, nil, err
		}
		o, err := newOptimizer(cfg.Optimizer, m.Parameters(), 1)
		return m, o, err
	}

	// The reference: one process, batch Size·Batch, learning rate × Size.
	ref, refOpt, err := newModel(seed)
	if err != nil {
		return 0, err
	}
	refOpt.SetLR(refOpt.LR() * float64(size))
	for s := range cfg.Steps {
		idx := fullOrder[s*cfg.Batch*size : (s+1)*cfg.Batch*size]
		if err := trainStep(ref, refOpt, xs, ys, idx, features, 1); err != nil {
			return 0, err
		}
	}

	// The distributed run.
	model, inner, err := newModel(seed + uint64(rank)*1000)
	if err != nil {
		return 0, err
	}
	e, err := dist.NewEngine(c, cfg.Engine)
	if err != nil {
		return 0, err
	}
	opt, err := dist.NewDistributedOptimizer(ctx, inner, e, dist.OptimizerConfig{
		Compress: cfg.Compress, BackwardPassesPerStep: cfg.BackwardPassesPerStep})
	if err != nil {
		e.Close()
		return 0, err
	}
	var stepErr error
	for s := range cfg.Steps {
		idx := order[s*cfg.Batch : (s+1)*cfg.Batch]
		if stepErr = trainStep(model, opt, xs, ys, idx, features, max(cfg.BackwardPassesPerStep, 1)); stepErr != nil {
			break
		}
	}
	if err := e.Close(); err != nil && stepErr == nil {
		stepErr = err
	}
	if stepErr != nil {
		return 0, stepErr
	}
	worst := 0.0
	want := ref.Parameters()
	for i, p := range model.Parameters() {
		a, b := p.Value.Values(), want[i].Value.Values()
		diff, scale := 0.0, 0.0
		for j := range a {
			diff = max(diff, math.Abs(a[j]-b[j]))
			scale = max(scale, math.Abs(b[j]))
		}
		if scale > 0 {
			worst = max(worst, diff/scale)
		}
	}
	return worst, nil
}

// trainStep runs one step on the samples idx, in passes backward passes.
func trainStep(m layers.Layer, o optim.Optimizer, xs []float32, ys []int64, idx []int, features, passes int) error {
	per := len(idx) / passes
	for k := range passes {
		part := idx[k*per : (k+1)*per]
		x := make([]float32, 0, len(part)*features)
		y := make([]int64, 0, len(part))
		for _, i := range part {
			x = append(x, xs[i*features:(i+1)*features]...)
			y = append(y, ys[i])
		}
		logits := m.Forward(autograd.Constant(tensor.FromFloat32(x, len(part), features)))
		loss := layers.CrossEntropy(logits, tensor.FromInt64(y, len(part)), layers.CrossEntropyOptions{})
		if err := autograd.Backward(loss); err != nil {
			return err
		}
	}
	if err := o.Step(); err != nil {
		return err
	}
	o.ZeroGrad()
	return nil
}

// syntheticData returns n samples with labels that depend on the inputs.
func syntheticData(n, features, classes int) ([]float32, []int64) {
	rng := rand.New(rand.NewPCG(11, 13))
	xs := make([]float32, n*features)
	ys := make([]int64, n)
	for i := range n {
		s := 0.0
		for j := range features {
			v := rng.NormFloat64()
			xs[i*features+j] = float32(v)
			s += v * float64(j%3-1)
		}
		ys[i] = int64(math.Abs(s*1.5)) % int64(classes)
	}
	return xs, ys
}

func newOptimizer(name string, params []*autograd.Param, lrScale float64) (optim.Optimizer, error) {
	switch name {
	case "sgd":
		return optim.NewSGD(params, optim.SGDConfig{LR: 0.05 * lrScale, Momentum: 0.9})
	case "adam":
		return optim.NewAdam(params, optim.AdamConfig{LR: 1e-3 * lrScale, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	}
	return nil, fmt.Errorf("disttest: unknown optimizer %q (sgd, adam)", name)
}
