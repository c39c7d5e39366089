package optim

import (
	"fmt"
	"math"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// GradScalerConfig holds the settings of dynamic loss scaling, with
// torch.cuda.amp.GradScaler's meanings.
type GradScalerConfig struct {
	// InitScale is the first loss scale. Default 65536 (2^16).
	InitScale float64
	// GrowthFactor multiplies the scale after GrowthInterval steps in a
	// row with finite gradients. Default 2.
	GrowthFactor float64
	// BackoffFactor multiplies the scale after a step whose gradients had
	// an Inf or NaN (the step is skipped). Default 0.5.
	BackoffFactor float64
	// GrowthInterval is the number of finite steps between growths.
	// Default 2000.
	GrowthInterval int
}

// DefaultGradScalerConfig returns PyTorch's defaults.
func DefaultGradScalerConfig() GradScalerConfig {
	return GradScalerConfig{InitScale: 65536, GrowthFactor: 2, BackoffFactor: 0.5, GrowthInterval: 2000}
}

// State dict keys of a GradScaler, beside its optimizer's.
const (
	// GradScalerScaleKey holds the current loss scale (a float64 scalar).
	GradScalerScaleKey = "grad_scaler.scale"
	// GradScalerGrowthKey holds the number of finite steps since the last
	// growth or backoff (an int64 scalar).
	GradScalerGrowthKey = "grad_scaler.growth_tracker"
)

// GradScaler is dynamic loss scaling for float16 training, as
// torch.cuda.amp.GradScaler: the loss is multiplied by a large scale
// before backward (ScaleLoss) so that small float16 gradients do not
// underflow; Step divides the gradients by the scale and updates with
// the wrapped optimizer, unless a gradient holds an Inf or NaN: then the
// step is skipped and the scale halved. After GrowthInterval good steps
// in a row the scale doubles.
//
// A GradScaler is itself an Optimizer, so dist.DistributedOptimizer can
// wrap it: the gradients are averaged over the ranks first, and every
// rank then makes the same skip decision.
type GradScaler struct {
	Optimizer
	cfg     GradScalerConfig
	scale   float64
	growth  int
	skipped bool

	unscaled bool // Unscale ran since the last Step
	finite   bool // what it found
}

var _ Optimizer = (*GradScaler)(nil)

// NewGradScaler wraps inner with dynamic loss scaling. Zero fields of cfg
// take DefaultGradScalerConfig's values; a scale or factor that is not a
// positive finite number (or a backoff not below 1, a growth not above
// 1) is an error.
func NewGradScaler(inner Optimizer, cfg GradScalerConfig) (*GradScaler, error) {
	def := DefaultGradScalerConfig()
	if cfg.InitScale == 0 {
		cfg.InitScale = def.InitScale
	}
	if cfg.GrowthFactor == 0 {
		cfg.GrowthFactor = def.GrowthFactor
	}
	if cfg.BackoffFactor == 0 {
		cfg.BackoffFactor = def.BackoffFactor
	}
	if cfg.GrowthInterval == 0 {
		cfg.GrowthInterval = def.GrowthInterval
	}
	switch {
	case inner == nil:
		return nil, fmt.Errorf("optim: GradScaler: no optimizer to wrap")
	case !(cfg.InitScale > 0) || math.IsInf(cfg.InitScale, 0):
		return nil, fmt.Errorf("optim: GradScaler: InitScale must be a positive finite number, found %v", cfg.InitScale)
	case !(cfg.GrowthFactor > 1) || math.IsInf(cfg.GrowthFactor, 0):
		return nil, fmt.Errorf("optim: GradScaler: GrowthFactor must be above 1, found %v", cfg.GrowthFactor)
	case !(cfg.BackoffFactor > 0 && cfg.BackoffFactor < 1):
		return nil, fmt.Errorf("optim: GradScaler: BackoffFactor must be in (0, 1), found %v", cfg.BackoffFactor)
	case cfg.GrowthInterval < 0:
		return nil, fmt.Errorf("optim: GradScaler: GrowthInterval must be positive, found %d", cfg.GrowthInterval)
	}
	return &GradScaler{Optimizer: inner, cfg: cfg, scale: cfg.InitScale}, nil
}

// Scale returns the current loss scale.
func (s *GradScaler) Scale() float64 { return s.scale }

// Skipped reports whether the last Step was skipped for non-finite
// gradients.
func (s *GradScaler) Skipped() bool { return s.skipped }

// ScaleLoss returns loss × Scale(); call Backward on it.
func (s *GradScaler) ScaleLoss(loss *autograd.Var) *autograd.Var {
	return autograd.MulScalar(loss, s.scale)
}

// Unscale divides the gradients by the scale, in place, and reports
// whether all of them are finite. Call it before reading or clipping the
// gradients (as torch's scaler.unscale_); Step then uses its finding
// instead of unscaling again. A second call before Step does nothing.
func (s *GradScaler) Unscale() (finite bool) {
	if s.unscaled {
		return s.finite
	}
	s.unscaled, s.finite = true, true
	params := s.Params()
	// A sum in float64 is NaN or ±Inf exactly when an element is (float32
	// gradients cannot overflow it), so one sum per device, read once,
	// tells: a GPU is not waited for once per parameter.
	sums := map[device.Device]*tensor.Tensor{}
	for _, p := range params {
		if p == nil || p.Var == nil || p.Grad == nil {
			continue
		}
		sum := p.Grad.Cast(device.Float64).SumAll()
		if t := sums[sum.Device()]; t != nil {
			sum = t.Add(sum)
		}
		sums[sum.Device()] = sum
	}
	for _, sum := range sums {
		if v := sum.Item(); math.IsNaN(v) || math.IsInf(v, 0) {
			s.finite = false
			return false
		}
	}
	inv := 1 / s.scale
	for _, p := range params {
		if p != nil && p.Var != nil && p.Grad != nil {
			p.Grad.CopyFrom(p.Grad.MulScalar(inv))
		}
	}
	return true
}

// Step unscales the gradients (unless Unscale did) and, if every one is
// finite, steps the wrapped optimizer; otherwise it leaves the parameters
// alone and backs the scale off. Then it updates the scale.
func (s *GradScaler) Step() error {
	finite := s.Unscale()
	s.unscaled = false
	s.skipped = !finite
	if !finite {
		s.scale *= s.cfg.BackoffFactor
		s.growth = 0
		return nil
	}
	if err := s.Optimizer.Step(); err != nil {
		return err
	}
	s.growth++
	if s.growth >= s.cfg.GrowthInterval {
		s.scale *= s.cfg.GrowthFactor
		s.growth = 0
	}
	return nil
}

// StateDict returns the wrapped optimizer's state plus the scale and the
// growth tracker.
func (s *GradScaler) StateDict() map[string]*tensor.Tensor {
	sd := s.Optimizer.StateDict()
	sd[GradScalerScaleKey] = tensor.FromFloat64([]float64{s.scale})
	sd[GradScalerGrowthKey] = tensor.FromInt64([]int64{int64(s.growth)})
	return sd
}

// LoadStateDict restores the state StateDict returned.
func (s *GradScaler) LoadStateDict(sd map[string]*tensor.Tensor) error {
	sc, gr := sd[GradScalerScaleKey], sd[GradScalerGrowthKey]
	if sc == nil || gr == nil {
		return fmt.Errorf("optim: GradScaler state: %s and %s are required", GradScalerScaleKey, GradScalerGrowthKey)
	}
	if sc.Len() != 1 || gr.Len() != 1 {
		return fmt.Errorf("optim: GradScaler state: %s and %s must be scalars, found shapes %v and %v",
			GradScalerScaleKey, GradScalerGrowthKey, sc.Shape(), gr.Shape())
	}
	scale, growth := sc.Cast(device.Float64).Item(), gr.Cast(device.Float64).Item()
	if !(scale > 0) || math.IsInf(scale, 0) || growth < 0 {
		return fmt.Errorf("optim: GradScaler state: scale %v and growth tracker %v are invalid", scale, growth)
	}
	inner := make(map[string]*tensor.Tensor, len(sd)-2)
	for k, v := range sd {
		if k != GradScalerScaleKey && k != GradScalerGrowthKey {
			inner[k] = v
		}
	}
	if err := s.Optimizer.LoadStateDict(inner); err != nil {
		return err
	}
	s.scale, s.growth = scale, int(growth)
	return nil
}
