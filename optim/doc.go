// Package optim updates model parameters from their gradients: the
// optimizers SGD, Adam, AdamW, RMSprop and Adagrad, learning-rate
// schedules, gradient clipping and optimizer state dicts.
//
// # Overview
//
// An optimizer is made from a list of named parameters
// ([]*autograd.Param, as layers.Module.Parameters returns them) and a
// config struct that starts from its Default…Config function. Each
// training step computes gradients with autograd.Backward, calls Step to
// update the parameters and ZeroGrad to drop the gradients:
//
//	opt, err := optim.NewSGD(model.Parameters(), optim.DefaultSGDConfig())
//	if err != nil {
//		return err
//	}
//	for _, batch := range batches {
//		loss := lossOf(model, batch)
//		if err := autograd.Backward(loss); err != nil {
//			return err
//		}
//		if err := opt.Step(); err != nil {
//			return err
//		}
//		opt.ZeroGrad()
//	}
//
// Every optimizer follows the single-tensor formulas of PyTorch 1.13's
// torch.optim and is checked against fixtures that PyTorch generated
// (scripts/golden).
//
// # Invariants
//
// Step updates each parameter's Value in place (Value.CopyFrom), so a
// tensor held elsewhere (a distributed optimizer's buckets, a module)
// stays the parameter's tensor. A parameter whose Grad is nil is skipped
// and its state does not advance, as in PyTorch. Optimizer state is
// allocated when the optimizer is made, so the set of state dict keys is
// fixed from the start: "<param name>.<state>" for every parameter (see
// the *State constants) plus StepKey and LRKey. Parameter names must be
// unique.
//
// # Schedules
//
// A Schedule is a pure function from the epoch (or step) count to the
// learning rate, so resuming from a checkpoint needs only the epoch
// number: call Apply(opt, schedule, epoch) at the start of each epoch.
// StepLR, MultiStepLR, CosineLR and WarmupLR match the PyTorch schedulers
// of the same names (WarmupLR is LinearLR followed by another schedule
// through SequentialLR).
//
// # Clipping
//
// ClipGradNorm scales all gradients together so that their global L2
// norm is at most a bound, between Backward and Step.
package optim
