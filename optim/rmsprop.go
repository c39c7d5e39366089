package optim

import (
	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

// RMSpropConfig holds the hyper-parameters of RMSprop, named as in
// PyTorch's torch.optim.RMSprop.
type RMSpropConfig struct {
	// LR is the learning rate (> 0).
	LR float64
	// Alpha is the decay rate of the squared-gradient average, in [0, 1).
	Alpha float64
	// Eps is added to the denominator, outside the square root (> 0).
	Eps float64
	// WeightDecay is the L2 penalty added to the gradient (>= 0).
	WeightDecay float64
	// Momentum is the momentum factor (>= 0; 0 disables momentum and its
	// buffer).
	Momentum float64
	// Centered normalises by the variance of the gradient (the squared
	// average minus the square of the gradient average).
	Centered bool
}

// DefaultRMSpropConfig returns PyTorch's defaults: LR 1e-2, Alpha 0.99,
// Eps 1e-8, no weight decay or momentum, not centered.
func DefaultRMSpropConfig() RMSpropConfig {
	return RMSpropConfig{LR: 1e-2, Alpha: 0.99, Eps: 1e-8}
}

// Validate reports the first field that is out of range.
func (c RMSpropConfig) Validate() error {
	return firstErr(
		checkPositive("RMSpropConfig.LR", c.LR),
		checkUnit("RMSpropConfig.Alpha", c.Alpha),
		checkPositive("RMSpropConfig.Eps", c.Eps),
		checkNonNegative("RMSpropConfig.WeightDecay", c.WeightDecay),
		checkNonNegative("RMSpropConfig.Momentum", c.Momentum),
	)
}

// RMSprop is the RMSprop optimizer, matching torch.optim.RMSprop
// (PyTorch 1.13):
//
//	g = g + WeightDecay·p
//	v = Alpha·v + (1-Alpha)·g²
//	gavg = Alpha·gavg + (1-Alpha)·g           (Centered)
//	denom = sqrt(v) + Eps   or   sqrt(v - gavg²) + Eps  (Centered)
//	buf = Momentum·buf + g/denom; p = p - LR·buf   (Momentum > 0)
//	p = p - LR·g/denom                             (otherwise)
//
// Its state dict holds "<name>.square_avg", plus "<name>.momentum_buffer"
// with momentum and "<name>.grad_avg" when centered.
type RMSprop struct {
	core
	cfg RMSpropConfig
}

// NewRMSprop returns an RMSprop optimizer for params, whose names must be
// unique. It returns an error naming the field when cfg is out of range.
func NewRMSprop(params []*autograd.Param, cfg RMSpropConfig) (*RMSprop, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	slots := []string{SquareAvgState}
	if cfg.Momentum > 0 {
		slots = append(slots, MomentumBufferState)
	}
	if cfg.Centered {
		slots = append(slots, GradAvgState)
	}
	c, err := newCore("RMSprop", params, cfg.LR, slots, 0)
	if err != nil {
		return nil, err
	}
	o := &RMSprop{core: c, cfg: cfg}
	o.update = o.apply
	return o, nil
}

// Config returns the configuration the optimizer was made with (its LR
// field is the initial learning rate; see LR for the current one).
func (o *RMSprop) Config() RMSpropConfig { return o.cfg }

func (o *RMSprop) apply(p, g *tensor.Tensor, st *paramState) *tensor.Tensor {
	c := o.cfg
	if c.WeightDecay != 0 {
		g = g.Add(p.MulScalar(c.WeightDecay))
	}
	v := st.bufs[SquareAvgState].MulScalar(c.Alpha).Add(g.MulScalar(1 - c.Alpha).Mul(g))
	st.bufs[SquareAvgState] = v
	var avg *tensor.Tensor
	if c.Centered {
		gavg := st.bufs[GradAvgState].MulScalar(c.Alpha).Add(g.MulScalar(1 - c.Alpha))
		st.bufs[GradAvgState] = gavg
		avg = v.Add(gavg.Neg().Mul(gavg)).Sqrt()
	} else {
		avg = v.Sqrt()
	}
	avg = avg.AddScalar(c.Eps)
	if c.Momentum > 0 {
		buf := st.bufs[MomentumBufferState].MulScalar(c.Momentum).Add(g.Div(avg))
		st.bufs[MomentumBufferState] = buf
		return p.Add(buf.MulScalar(-o.lr))
	}
	return p.Add(g.MulScalar(-o.lr).Div(avg))
}
