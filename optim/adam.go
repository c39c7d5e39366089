package optim

import (
	"math"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// AdamConfig holds the hyper-parameters of Adam, named as in PyTorch's
// torch.optim.Adam.
type AdamConfig struct {
	// LR is the learning rate (> 0).
	LR float64
	// Beta1 is the decay rate of the first moment estimate, in [0, 1).
	Beta1 float64
	// Beta2 is the decay rate of the second moment estimate, in [0, 1).
	Beta2 float64
	// Eps is added to the denominator for numerical stability (> 0).
	Eps float64
	// WeightDecay is the L2 penalty added to the gradient (>= 0).
	WeightDecay float64
	// AMSGrad uses the running maximum of the second moment estimate.
	AMSGrad bool
}

// DefaultAdamConfig returns PyTorch's defaults: LR 1e-3, betas (0.9,
// 0.999), Eps 1e-8, no weight decay.
func DefaultAdamConfig() AdamConfig {
	return AdamConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
}

// Validate reports the first field that is out of range.
func (c AdamConfig) Validate() error { return validateAdam("AdamConfig", adamParams(c)) }

// AdamWConfig holds the hyper-parameters of AdamW, named as in PyTorch's
// torch.optim.AdamW. The fields mean what they mean in AdamConfig, except
// WeightDecay, which is decoupled from the gradient.
type AdamWConfig struct {
	// LR is the learning rate (> 0).
	LR float64
	// Beta1 is the decay rate of the first moment estimate, in [0, 1).
	Beta1 float64
	// Beta2 is the decay rate of the second moment estimate, in [0, 1).
	Beta2 float64
	// Eps is added to the denominator for numerical stability (> 0).
	Eps float64
	// WeightDecay is the decoupled decay rate (>= 0): each step first
	// multiplies the parameter by 1 - LR·WeightDecay.
	WeightDecay float64
	// AMSGrad uses the running maximum of the second moment estimate.
	AMSGrad bool
}

// DefaultAdamWConfig returns PyTorch's defaults: LR 1e-3, betas (0.9,
// 0.999), Eps 1e-8, WeightDecay 1e-2.
func DefaultAdamWConfig() AdamWConfig {
	return AdamWConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-2}
}

// Validate reports the first field that is out of range.
func (c AdamWConfig) Validate() error { return validateAdam("AdamWConfig", adamParams(c)) }

func validateAdam(name string, c adamParams) error {
	return firstErr(
		checkPositive(name+".LR", c.LR),
		checkUnit(name+".Beta1", c.Beta1),
		checkUnit(name+".Beta2", c.Beta2),
		checkPositive(name+".Eps", c.Eps),
		checkNonNegative(name+".WeightDecay", c.WeightDecay),
	)
}

// adamParams is the shared shape of AdamConfig and AdamWConfig.
type adamParams AdamConfig

// Adam is the Adam optimizer with L2 weight decay and optional AMSGrad,
// matching torch.optim.Adam (PyTorch 1.13). With t the parameter's step:
//
//	g = g + WeightDecay·p
//	m = Beta1·m + (1-Beta1)·g
//	v = Beta2·v + (1-Beta2)·g²
//	vmax = max(vmax, v)                       (AMSGrad; then v is vmax below)
//	p = p - LR/(1-Beta1^t) · m / (sqrt(v)/sqrt(1-Beta2^t) + Eps)
//
// Its state dict holds "<name>.exp_avg", "<name>.exp_avg_sq" and, with
// AMSGrad, "<name>.max_exp_avg_sq".
type Adam struct {
	core
	cfg AdamConfig
}

// NewAdam returns an Adam optimizer for params, whose names must be
// unique. It returns an error naming the field when cfg is out of range.
func NewAdam(params []*autograd.Param, cfg AdamConfig) (*Adam, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := newCore("Adam", params, cfg.LR, adamSlots(cfg.AMSGrad), 0)
	if err != nil {
		return nil, err
	}
	o := &Adam{core: c, cfg: cfg}
	o.update = func(p, g *tensor.Tensor, st *paramState) *tensor.Tensor {
		if o.cfg.WeightDecay != 0 {
			g = g.Add(p.MulScalar(o.cfg.WeightDecay))
		}
		return adamUpdate(adamParams(o.cfg), o.lr, p, g, st)
	}
	o.fused = func(p *autograd.Param, st *paramState) bool {
		return adamFused(adamParams(o.cfg), o.lr, false, p, st)
	}
	o.fusedGroup = func(g *group) bool {
		return adamFusedGroup(adamParams(o.cfg), o.lr, false, g)
	}
	return o, nil
}

// Config returns the configuration the optimizer was made with (its LR
// field is the initial learning rate; see LR for the current one).
func (o *Adam) Config() AdamConfig { return o.cfg }

// AdamW is Adam with decoupled weight decay, matching torch.optim.AdamW
// (PyTorch 1.13): each step first sets p = p·(1 - LR·WeightDecay), then
// applies Adam's update with no L2 term. Its state dict has Adam's keys.
type AdamW struct {
	core
	cfg AdamWConfig
}

// NewAdamW returns an AdamW optimizer for params, whose names must be
// unique. It returns an error naming the field when cfg is out of range.
func NewAdamW(params []*autograd.Param, cfg AdamWConfig) (*AdamW, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := newCore("AdamW", params, cfg.LR, adamSlots(cfg.AMSGrad), 0)
	if err != nil {
		return nil, err
	}
	o := &AdamW{core: c, cfg: cfg}
	o.update = func(p, g *tensor.Tensor, st *paramState) *tensor.Tensor {
		if o.cfg.WeightDecay != 0 {
			p = p.MulScalar(1 - o.lr*o.cfg.WeightDecay)
		}
		return adamUpdate(adamParams(o.cfg), o.lr, p, g, st)
	}
	o.fused = func(p *autograd.Param, st *paramState) bool {
		return adamFused(adamParams(o.cfg), o.lr, true, p, st)
	}
	o.fusedGroup = func(g *group) bool {
		return adamFusedGroup(adamParams(o.cfg), o.lr, true, g)
	}
	return o, nil
}

// Config returns the configuration the optimizer was made with (its LR
// field is the initial learning rate; see LR for the current one).
func (o *AdamW) Config() AdamWConfig { return o.cfg }

func adamSlots(amsgrad bool) []string {
	if amsgrad {
		return []string{ExpAvgState, ExpAvgSqState, MaxExpAvgSqState}
	}
	return []string{ExpAvgState, ExpAvgSqState}
}

// adamHyper returns the device's settings of an Adam step at st's step.
func adamHyper(c adamParams, lr float64, decoupled bool, st *paramState) device.AdamHyper {
	return device.AdamHyper{
		LR: lr, Beta1: c.Beta1, Beta2: c.Beta2, Eps: c.Eps, WeightDecay: c.WeightDecay,
		Step: int(st.step), Decoupled: decoupled, AMSGrad: c.AMSGrad,
	}
}

// adamFusedGroup runs one Adam (AdamW) step of the parameters of g, all at
// the same step, with the device's multi-tensor kernel, reporting false
// when there is none.
func adamFusedGroup(c adamParams, lr float64, decoupled bool, g *group) bool {
	if c.AMSGrad {
		return false
	}
	values, grads, bufs := g.tensors(ExpAvgState, ExpAvgSqState)
	return adamSteps(adamHyper(c, lr, decoupled, g.sts[0]), values, grads, bufs[0], bufs[1])
}

// adamFused runs one Adam (or, decoupled, AdamW) step of p in place with
// the device's fused kernel, reporting false when there is none.
func adamFused(c adamParams, lr float64, decoupled bool, p *autograd.Param, st *paramState) bool {
	return adamStep(adamHyper(c, lr, decoupled, st),
		p.Value, p.Grad, st.bufs[ExpAvgState], st.bufs[ExpAvgSqState], st.bufs[MaxExpAvgSqState])
}

// adamUpdate is the moment update and step shared by Adam and AdamW, in
// the order of PyTorch's _single_tensor_adam.
func adamUpdate(c adamParams, lr float64, p, g *tensor.Tensor, st *paramState) *tensor.Tensor {
	m := st.bufs[ExpAvgState].MulScalar(c.Beta1).Add(g.MulScalar(1 - c.Beta1))
	v := st.bufs[ExpAvgSqState].MulScalar(c.Beta2).Add(g.MulScalar(1 - c.Beta2).Mul(g))
	st.bufs[ExpAvgState], st.bufs[ExpAvgSqState] = m, v

	t := float64(st.step)
	bc1 := 1 - math.Pow(c.Beta1, t)
	bc2 := 1 - math.Pow(c.Beta2, t)
	stepSize := lr / bc1
	if c.AMSGrad {
		v = st.bufs[MaxExpAvgSqState].Maximum(v)
		st.bufs[MaxExpAvgSqState] = v
	}
	denom := v.Sqrt().Div(scalarLike(v, math.Sqrt(bc2))).AddScalar(c.Eps)
	return p.Add(m.MulScalar(-stepSize).Div(denom))
}
