package optim

import (
	"fmt"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// SGDConfig holds the hyper-parameters of SGD, named as in PyTorch's
// torch.optim.SGD.
type SGDConfig struct {
	// LR is the learning rate (> 0).
	LR float64
	// Momentum is the momentum factor (>= 0; 0 disables momentum and its
	// buffer).
	Momentum float64
	// Dampening scales the gradient's share of the momentum update by
	// 1-Dampening (in [0, 1]; not applied on the first step).
	Dampening float64
	// Nesterov enables Nesterov momentum (needs Momentum > 0 and
	// Dampening == 0).
	Nesterov bool
	// WeightDecay is the L2 penalty added to the gradient (>= 0).
	WeightDecay float64
}

// DefaultSGDConfig returns plain SGD with learning rate 0.01 and no
// momentum or weight decay.
func DefaultSGDConfig() SGDConfig { return SGDConfig{LR: 0.01} }

// Validate reports the first field that is out of range.
func (c SGDConfig) Validate() error {
	err := firstErr(
		checkPositive("SGDConfig.LR", c.LR),
		checkNonNegative("SGDConfig.Momentum", c.Momentum),
		checkNonNegative("SGDConfig.Dampening", c.Dampening),
		checkNonNegative("SGDConfig.WeightDecay", c.WeightDecay),
	)
	if err != nil {
		return err
	}
	if c.Dampening > 1 {
		return configError("SGDConfig.Dampening", "in [0, 1]", c.Dampening)
	}
	if c.Nesterov && (c.Momentum == 0 || c.Dampening != 0) {
		return configError("SGDConfig.Nesterov", "false unless Momentum > 0 and Dampening == 0",
			fmt.Sprintf("true with Momentum %v and Dampening %v", c.Momentum, c.Dampening))
	}
	return nil
}

// SGD is stochastic gradient descent with optional momentum, dampening,
// Nesterov momentum and L2 weight decay, matching torch.optim.SGD
// (PyTorch 1.13):
//
//	d = g + WeightDecay·p
//	buf = d                                   (first step of the parameter)
//	buf = Momentum·buf + (1-Dampening)·d      (later steps)
//	d = d + Momentum·buf  (Nesterov)   or   d = buf
//	p = p - LR·d
//
// With Momentum 0 there is no buffer and d is applied directly. Its state
// dict holds "<name>.momentum_buffer" when Momentum > 0.
type SGD struct {
	core
	cfg SGDConfig
}

// NewSGD returns an SGD optimizer for params, whose names must be unique.
// It returns an error naming the field when cfg is out of range.
func NewSGD(params []*autograd.Param, cfg SGDConfig) (*SGD, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var slots []string
	if cfg.Momentum != 0 {
		slots = []string{MomentumBufferState}
	}
	c, err := newCore("SGD", params, cfg.LR, slots, 0)
	if err != nil {
		return nil, err
	}
	o := &SGD{core: c, cfg: cfg}
	o.update = o.apply
	hyper := func(st *paramState) device.SGDHyper {
		c := o.cfg
		return device.SGDHyper{
			LR: o.lr, Momentum: c.Momentum, Dampening: c.Dampening, WeightDecay: c.WeightDecay,
			Nesterov: c.Nesterov, First: st.step == 1,
		}
	}
	o.fused = func(p *autograd.Param, st *paramState) bool {
		return sgdStep(hyper(st), p.Value, p.Grad, st.bufs[MomentumBufferState])
	}
	o.fusedGroup = func(g *group) bool {
		values, grads, bufs := g.tensors(MomentumBufferState)
		return sgdSteps(hyper(g.sts[0]), values, grads, bufs[0])
	}
	return o, nil
}

// Config returns the configuration the optimizer was made with (its LR
// field is the initial learning rate; see LR for the current one).
func (o *SGD) Config() SGDConfig { return o.cfg }

func (o *SGD) apply(p, g *tensor.Tensor, st *paramState) *tensor.Tensor {
	c := o.cfg
	d := g
	if c.WeightDecay != 0 {
		d = d.Add(p.MulScalar(c.WeightDecay))
	}
	if c.Momentum != 0 {
		var buf *tensor.Tensor
		if st.step == 1 {
			buf = d.Clone()
		} else {
			buf = st.bufs[MomentumBufferState].MulScalar(c.Momentum).Add(d.MulScalar(1 - c.Dampening))
		}
		st.bufs[MomentumBufferState] = buf
		if c.Nesterov {
			d = d.Add(buf.MulScalar(c.Momentum))
		} else {
			d = buf
		}
	}
	return p.Add(d.MulScalar(-o.lr))
}
