package optim

import (
	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

// AdagradConfig holds the hyper-parameters of Adagrad, named as in
// PyTorch's torch.optim.Adagrad.
type AdagradConfig struct {
	// LR is the learning rate (> 0).
	LR float64
	// LRDecay divides the learning rate by 1 + (t-1)·LRDecay at the
	// parameter's step t (>= 0).
	LRDecay float64
	// WeightDecay is the L2 penalty added to the gradient (>= 0).
	WeightDecay float64
	// InitialAccumulatorValue is the starting value of the sum of squared
	// gradients (>= 0).
	InitialAccumulatorValue float64
	// Eps is added to the denominator, outside the square root (> 0).
	Eps float64
}

// DefaultAdagradConfig returns PyTorch's defaults: LR 1e-2, Eps 1e-10, no
// lr decay or weight decay, accumulator starting at 0.
func DefaultAdagradConfig() AdagradConfig {
	return AdagradConfig{LR: 1e-2, Eps: 1e-10}
}

// Validate reports the first field that is out of range.
func (c AdagradConfig) Validate() error {
	return firstErr(
		checkPositive("AdagradConfig.LR", c.LR),
		checkNonNegative("AdagradConfig.LRDecay", c.LRDecay),
		checkNonNegative("AdagradConfig.WeightDecay", c.WeightDecay),
		checkNonNegative("AdagradConfig.InitialAccumulatorValue", c.InitialAccumulatorValue),
		checkPositive("AdagradConfig.Eps", c.Eps),
	)
}

// Adagrad is the Adagrad optimizer, matching torch.optim.Adagrad
// (PyTorch 1.13) for dense gradients. With t the parameter's step:
//
//	g = g + WeightDecay·p
//	sum = sum + g²
//	p = p - LR/(1 + (t-1)·LRDecay) · g/(sqrt(sum) + Eps)
//
// Its state dict holds "<name>.sum".
type Adagrad struct {
	core
	cfg AdagradConfig
}

// NewAdagrad returns an Adagrad optimizer for params, whose names must be
// unique. It returns an error naming the field when cfg is out of range.
func NewAdagrad(params []*autograd.Param, cfg AdagradConfig) (*Adagrad, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := newCore("Adagrad", params, cfg.LR, []string{SumState}, cfg.InitialAccumulatorValue)
	if err != nil {
		return nil, err
	}
	o := &Adagrad{core: c, cfg: cfg}
	o.update = o.apply
	return o, nil
}

// Config returns the configuration the optimizer was made with (its LR
// field is the initial learning rate; see LR for the current one).
func (o *Adagrad) Config() AdagradConfig { return o.cfg }

func (o *Adagrad) apply(p, g *tensor.Tensor, st *paramState) *tensor.Tensor {
	c := o.cfg
	if c.WeightDecay != 0 {
		g = g.Add(p.MulScalar(c.WeightDecay))
	}
	sum := st.bufs[SumState].Add(g.Mul(g))
	st.bufs[SumState] = sum
	clr := o.lr / (1 + float64(st.step-1)*c.LRDecay)
	std := sum.Sqrt().AddScalar(c.Eps)
	return p.Add(g.MulScalar(-clr).Div(std))
}
