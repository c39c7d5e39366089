package optim

import (
	"fmt"
	"math"
)

// Schedule gives the learning rate as a pure function of the epoch (or
// step) count, so that a resumed run gets exactly the rates of an
// uninterrupted one. The base learning rate is part of the schedule.
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

func checkBase(op string, base float64) error {
	if !(base > 0) || math.IsInf(base, 1) {
		return fmt.Errorf("optim: %s: base learning rate must be > 0 and finite, found %v", op, base)
	}
	return nil
}

type constantSchedule struct{ base float64 }

// Constant returns the schedule that keeps the learning rate at base
// (> 0).
func Constant(base float64) (Schedule, error) {
	if err := checkBase("Constant", base); err != nil {
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
func StepLR(base float64, stepSize int, gamma float64) (Schedule, error) {
	if err := checkBase("StepLR", base); err != nil {
		return nil, err
	}
	if stepSize < 1 {
		return nil, fmt.Errorf("optim: StepLR: stepSize must be >= 1, found %d", stepSize)
	}
	if err := checkGamma("StepLR", gamma); err != nil {
		return nil, err
	}
	return stepSchedule{base, stepSize, gamma}, nil
}

func checkGamma(op string, gamma float64) error {
	if !(gamma > 0 && gamma <= 1) {
		return fmt.Errorf("optim: %s: gamma must be in (0, 1], found %v", op, gamma)
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
func MultiStepLR(base float64, milestones []int, gamma float64) (Schedule, error) {
	if err := checkBase("MultiStepLR", base); err != nil {
		return nil, err
	}
	if len(milestones) == 0 {
		return nil, fmt.Errorf("optim: MultiStepLR: no milestones")
	}
	for i, m := range milestones {
		if m < 1 {
			return nil, fmt.Errorf("optim: MultiStepLR: milestones[%d] must be >= 1, found %d", i, m)
		}
		if i > 0 && m <= milestones[i-1] {
			return nil, fmt.Errorf("optim: MultiStepLR: milestones must be strictly increasing, found milestones[%d] = %d after %d",
				i, m, milestones[i-1])
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
func CosineLR(base float64, tMax int, etaMin float64) (Schedule, error) {
	if err := checkBase("CosineLR", base); err != nil {
		return nil, err
	}
	if tMax < 1 {
		return nil, fmt.Errorf("optim: CosineLR: tMax must be >= 1, found %d", tMax)
	}
	if !(etaMin >= 0 && etaMin <= base) {
		return nil, fmt.Errorf("optim: CosineLR: etaMin must be in [0, base %v], found %v", base, etaMin)
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
// WarmupLR(startFactor, n, Constant(base)).
func WarmupLR(startFactor float64, warmupEpochs int, then Schedule) (Schedule, error) {
	if !(startFactor > 0 && startFactor <= 1) {
		return nil, fmt.Errorf("optim: WarmupLR: startFactor must be in (0, 1], found %v", startFactor)
	}
	if warmupEpochs < 1 {
		return nil, fmt.Errorf("optim: WarmupLR: warmupEpochs must be >= 1, found %d", warmupEpochs)
	}
	if then == nil {
		return nil, fmt.Errorf("optim: WarmupLR: the schedule after the warmup is nil")
	}
	base := then.LR(0)
	if err := checkBase("WarmupLR", base); err != nil {
		return nil, err
	}
	return warmupSchedule{startFactor, warmupEpochs, base, then}, nil
}

func (s warmupSchedule) LR(epoch int) float64 {
	checkEpoch("WarmupLR", epoch)
	if epoch >= s.warmup {
		return s.then.LR(epoch - s.warmup)
	}
	return s.base * (s.startFactor + (1-s.startFactor)*float64(epoch)/float64(s.warmup))
}
