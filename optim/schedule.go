package optim

import (
	"fmt"
	"math"
)

// Schedule gives the learning rate as a pure function of the epoch (or
// step) count, so that a resumed run gets exactly the rates of an
// uninterrupted one. A schedule reads its base rate from the optimizer it
// is built for (its BaseLR, as PyTorch's LRScheduler(optimizer) reads the
// optimizer's initial rate), so the rate is written in one place: the
// optimizer's config.
type Schedule interface {
	// LR returns the learning rate for epoch epoch (0-based): the rate in
	// force from the start of that epoch. It panics when epoch < 0.
	LR(epoch int) float64
}

// Apply sets opt's learning rate to s's rate for epoch epoch. Call it at
// the start of every epoch (or step, for a per-step schedule).
func Apply(opt Optimizer, s Schedule, epoch int) {
	opt.SetLR(s.LR(epoch))
}

func checkEpoch(name string, epoch int) {
	if epoch < 0 {
		panic(fmt.Sprintf("optim: %s.LR: negative epoch %d", name, epoch))
	}
}

// LRSource is what a schedule reads its base learning rate from: an
// Optimizer, or any value that knows the rate an optimizer will be built
// with.
type LRSource interface {
	// BaseLR returns the base learning rate (> 0).
	BaseLR() float64
}

// baseOf returns the base rate of opt, checked.
func baseOf(op string, opt LRSource) (float64, error) {
	if opt == nil {
		return 0, fmt.Errorf("optim: %s: no optimizer to read the base learning rate from", op)
	}
	base := opt.BaseLR()
	if !(base > 0) || math.IsInf(base, 1) {
		return 0, &ConfigError{Config: op, Field: "base learning rate", Want: "> 0 and finite", Found: fmt.Sprint(base)}
	}
	return base, nil
}

type constantSchedule struct{ base float64 }

// Constant returns the schedule that keeps the learning rate at base
// (> 0).
func Constant(opt LRSource) (Schedule, error) {
	base, err := baseOf("Constant", opt)
	if err != nil {
		return nil, err
	}
	return constantSchedule{base}, nil
}

func (s constantSchedule) LR(epoch int) float64 {
	checkEpoch("Constant", epoch)
	return s.base
}

type stepSchedule struct {
	base     float64
	stepSize int
	gamma    float64
}

// StepLR returns the schedule of PyTorch's StepLR: the rate starts at
// base and is multiplied by gamma every stepSize epochs,
// base·gamma^⌊epoch/stepSize⌋. stepSize must be >= 1 and gamma in (0, 1].
func StepLR(opt LRSource, stepSize int, gamma float64) (Schedule, error) {
	base, err := baseOf("StepLR", opt)
	if err != nil {
		return nil, err
	}
	if stepSize < 1 {
		return nil, &ConfigError{Config: "StepLR", Field: "stepSize", Want: ">= 1", Found: fmt.Sprint(stepSize)}
	}
	if err := checkGamma("StepLR", gamma); err != nil {
		return nil, err
	}
	return stepSchedule{base, stepSize, gamma}, nil
}

func checkGamma(op string, gamma float64) error {
	if !(gamma > 0 && gamma <= 1) {
		return &ConfigError{Config: op, Field: "gamma", Want: "in (0, 1]", Found: fmt.Sprint(gamma)}
	}
	return nil
}

func (s stepSchedule) LR(epoch int) float64 {
	checkEpoch("StepLR", epoch)
	return s.base * math.Pow(s.gamma, float64(epoch/s.stepSize))
}

type multiStepSchedule struct {
	base       float64
	milestones []int
	gamma      float64
}

// MultiStepLR returns the schedule of PyTorch's MultiStepLR: the rate
// starts at base and is multiplied by gamma at each milestone epoch,
// base·gamma^(number of milestones <= epoch). The milestones must be
// strictly increasing and >= 1; gamma must be in (0, 1].
func MultiStepLR(opt LRSource, milestones []int, gamma float64) (Schedule, error) {
	base, err := baseOf("MultiStepLR", opt)
	if err != nil {
		return nil, err
	}
	if len(milestones) == 0 {
		return nil, &ConfigError{Config: "MultiStepLR", Field: "milestones", Want: "a non-empty list of increasing epochs", Found: "[]"}
	}
	for i, m := range milestones {
		if m < 1 {
			return nil, &ConfigError{Config: "MultiStepLR", Field: fmt.Sprintf("milestones[%d]", i), Want: ">= 1", Found: fmt.Sprint(m)}
		}
		if i > 0 && m <= milestones[i-1] {
			return nil, &ConfigError{Config: "MultiStepLR", Field: fmt.Sprintf("milestones[%d]", i),
				Want: fmt.Sprintf("> %d (milestones must increase)", milestones[i-1]), Found: fmt.Sprint(m)}
		}
	}
	if err := checkGamma("MultiStepLR", gamma); err != nil {
		return nil, err
	}
	return multiStepSchedule{base, append([]int(nil), milestones...), gamma}, nil
}

func (s multiStepSchedule) LR(epoch int) float64 {
	checkEpoch("MultiStepLR", epoch)
	n := 0
	for _, m := range s.milestones {
		if m <= epoch {
			n++
		}
	}
	return s.base * math.Pow(s.gamma, float64(n))
}

type cosineSchedule struct {
	base   float64
	tMax   int
	etaMin float64
}

// CosineLR returns the schedule of PyTorch's CosineAnnealingLR in closed
// form: etaMin + (base-etaMin)·(1+cos(π·epoch/tMax))/2. As in PyTorch it
// does not stop at tMax: past it the cosine rises again (epoch tMax+1 has
// the rate of epoch tMax-1). tMax must be >= 1 and etaMin in [0, base].
func CosineLR(opt LRSource, tMax int, etaMin float64) (Schedule, error) {
	base, err := baseOf("CosineLR", opt)
	if err != nil {
		return nil, err
	}
	if tMax < 1 {
		return nil, &ConfigError{Config: "CosineLR", Field: "tMax", Want: ">= 1", Found: fmt.Sprint(tMax)}
	}
	if !(etaMin >= 0 && etaMin <= base) {
		return nil, &ConfigError{Config: "CosineLR", Field: "etaMin", Want: fmt.Sprintf("in [0, base learning rate %v]", base), Found: fmt.Sprint(etaMin)}
	}
	return cosineSchedule{base, tMax, etaMin}, nil
}

func (s cosineSchedule) LR(epoch int) float64 {
	checkEpoch("CosineLR", epoch)
	return s.etaMin + (s.base-s.etaMin)*(1+math.Cos(math.Pi*float64(epoch)/float64(s.tMax)))/2
}

type warmupSchedule struct {
	startFactor float64
	warmup      int
	base        float64
	then        Schedule
}

// WarmupLR returns a linear warmup followed by then, the composition
// PyTorch writes SequentialLR([LinearLR(start_factor=startFactor,
// total_iters=warmupEpochs), then], milestones=[warmupEpochs]).
//
// The base rate is then.LR(0). For epoch < warmupEpochs the rate is
// base·(startFactor + (1-startFactor)·epoch/warmupEpochs); from
// warmupEpochs on it is then.LR(epoch - warmupEpochs): the second
// schedule counts its epochs from the milestone and starts at its own
// base, as SequentialLR does. startFactor must be in (0, 1] and
// warmupEpochs >= 1.
//
// A schedule that only warms up (PyTorch's LinearLR with end_factor 1) is
// WarmupLR(startFactor, n, Constant(opt)).
func WarmupLR(startFactor float64, warmupEpochs int, then Schedule) (Schedule, error) {
	if !(startFactor > 0 && startFactor <= 1) {
		return nil, &ConfigError{Config: "WarmupLR", Field: "startFactor", Want: "in (0, 1]", Found: fmt.Sprint(startFactor)}
	}
	if warmupEpochs < 1 {
		return nil, &ConfigError{Config: "WarmupLR", Field: "warmupEpochs", Want: ">= 1", Found: fmt.Sprint(warmupEpochs)}
	}
	if then == nil {
		return nil, fmt.Errorf("optim: WarmupLR: the schedule after the warmup is nil")
	}
	base := then.LR(0)
	return warmupSchedule{startFactor, warmupEpochs, base, then}, nil
}

func (s warmupSchedule) LR(epoch int) float64 {
	checkEpoch("WarmupLR", epoch)
	if epoch >= s.warmup {
		return s.then.LR(epoch - s.warmup)
	}
	return s.base * (s.startFactor + (1-s.startFactor)*float64(epoch)/float64(s.warmup))
}
