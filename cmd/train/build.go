package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// The Fashion-MNIST geometry the zoo models are built for.
const (
	imageFeatures = 28 * 28
	classes       = 10
)

// buildModel returns the model the config names, initialised from rng.
func buildModel(cfg *Config, rng *rand.Rand) (layers.Layer, error) {
	m := cfg.Model
	switch m.Name {
	case "mlp":
		net, err := models.NewMLP(models.MLPConfig{
			In: imageFeatures, Hidden: m.Hidden, Classes: classes,
			Activation: m.Activation, Dropout: m.Dropout,
		}, rng)
		if err != nil {
			return nil, fmt.Errorf("%s: model: %w", cfg.File(), err)
		}
		return net, nil
	case "cnn":
		return models.NewCNN(classes, rng), nil
	case "lenet5":
		return models.NewLeNet5(classes, rng), nil
	case "onnx":
		return importModel(cfg)
	}
	return nil, fmt.Errorf("%s: model.name: unknown model %q (known: mlp, lenet5, cnn, onnx)", cfg.File(), m.Name)
}

// importModel loads the ONNX model of model.file and checks that it maps
// Fashion-MNIST images to class logits.
func importModel(cfg *Config) (layers.Layer, error) {
	m, err := onnx.Load(cfg.Model.File)
	if err != nil {
		return nil, fmt.Errorf("%s: model.file: %w", cfg.File(), err)
	}
	if len(m.Inputs) != 1 || len(m.Outputs) != 1 {
		return nil, fmt.Errorf("%s: model.file %s: the model has %d inputs and %d outputs, want 1 and 1", cfg.File(), cfg.Model.File, len(m.Inputs), len(m.Outputs))
	}
	in := m.Inputs[0]
	if in.Shape != nil {
		want := []int{-1, 1, 28, 28}
		ok := len(in.Shape) == len(want)
		for d := 1; ok && d < len(want); d++ {
			ok = in.Shape[d] < 0 || in.Shape[d] == want[d]
		}
		if !ok {
			return nil, fmt.Errorf("%s: model.file %s: input %v, want images [batch, 1, 28, 28]", cfg.File(), cfg.Model.File, in)
		}
	}
	if len(m.Parameters()) == 0 {
		return nil, fmt.Errorf("%s: model.file %s: the model has no float initializers to train", cfg.File(), cfg.Model.File)
	}
	// One image through the model, so that a model that does not compute
	// [batch, 10] logits fails here, with its own error, not mid-epoch.
	outs, err := m.Run(autograd.NoGrad(autograd.Constant(tensor.Zeros(1, 1, 28, 28))))
	if err != nil {
		return nil, fmt.Errorf("%s: model.file %s: %w", cfg.File(), cfg.Model.File, err)
	}
	if s := outs[0].Shape(); len(s) != 2 || s[0] != 1 || s[1] != classes {
		return nil, fmt.Errorf("%s: model.file %s: output %q is %v for one image, want [1 %d] (class logits)", cfg.File(), cfg.Model.File, m.Outputs[0].Name, s, classes)
	}
	return m, nil
}

// buildOptimizer returns the optimizer the config names over params.
func buildOptimizer(cfg *Config, params []*autograd.Param) (optim.Optimizer, error) {
	o := cfg.Optimizer
	var opt optim.Optimizer
	var err error
	switch o.Name {
	case "sgd":
		opt, err = optim.NewSGD(params, optim.SGDConfig{LR: o.LR, Momentum: o.Momentum,
			Dampening: o.Dampening, Nesterov: o.Nesterov, WeightDecay: o.WeightDecay})
	case "adam":
		opt, err = optim.NewAdam(params, optim.AdamConfig{LR: o.LR, Beta1: o.Betas[0], Beta2: o.Betas[1],
			Eps: o.Eps, WeightDecay: o.WeightDecay, AMSGrad: o.AMSGrad})
	case "adamw":
		opt, err = optim.NewAdamW(params, optim.AdamWConfig{LR: o.LR, Beta1: o.Betas[0], Beta2: o.Betas[1],
			Eps: o.Eps, WeightDecay: o.WeightDecay, AMSGrad: o.AMSGrad})
	case "rmsprop":
		opt, err = optim.NewRMSprop(params, optim.RMSpropConfig{LR: o.LR, Alpha: o.Alpha, Eps: o.Eps,
			WeightDecay: o.WeightDecay, Momentum: o.Momentum, Centered: o.Centered})
	case "adagrad":
		opt, err = optim.NewAdagrad(params, optim.AdagradConfig{LR: o.LR, Eps: o.Eps, WeightDecay: o.WeightDecay})
	default:
		return nil, fmt.Errorf("%s: optimizer.name: unknown optimizer %q (known: sgd, adam, adamw, rmsprop, adagrad)", cfg.File(), o.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: optimizer: %w", cfg.File(), err)
	}
	return opt, nil
}

// buildSchedule returns the learning-rate schedule, counted in epochs or
// in optimizer steps (schedule.per), with optional linear warm-up.
func buildSchedule(cfg *Config, trainSamples int) (optim.Schedule, error) {
	s, lr := cfg.Schedule, cfg.Optimizer.LR
	periods := cfg.Train.Epochs
	if s.Per == "step" {
		periods *= (trainSamples + cfg.Train.BatchSize - 1) / cfg.Train.BatchSize
	}
	var sched optim.Schedule
	var err error
	switch s.Name {
	case "none", "":
		sched, err = optim.Constant(lr)
	case "step":
		sched, err = optim.StepLR(lr, s.StepSize, s.Gamma)
	case "multistep":
		sched, err = optim.MultiStepLR(lr, s.Milestones, s.Gamma)
	case "cosine":
		sched, err = optim.CosineLR(lr, max(periods-s.WarmupEpochs, 1), s.MinLR)
	default:
		return nil, fmt.Errorf("%s: schedule.name: unknown schedule %q (known: none, step, multistep, cosine)", cfg.File(), s.Name)
	}
	if err == nil && s.WarmupEpochs > 0 {
		sched, err = optim.WarmupLR(s.WarmupStartFactor, s.WarmupEpochs, sched)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: schedule: %w", cfg.File(), err)
	}
	return sched, nil
}
