package optim

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

// Optimizer updates a fixed list of named parameters from their gradients.
//
// Implementations in this package are not safe for concurrent use; one
// goroutine (one rank) drives an optimizer.
type Optimizer interface {
	// Step applies one update, in place, to the value of every parameter
	// whose Grad is not nil; parameters without a gradient are skipped and
	// their per-parameter state (step count included) is left as it is.
	// It returns an error, and changes nothing, when a gradient does not
	// match its parameter (shape, type or device).
	Step() error
	// ZeroGrad drops every parameter's gradient (sets Grad to nil).
	ZeroGrad()
	// BaseLR returns the learning rate the optimizer was built with (its
	// config's LR): the rate a schedule scales.
	BaseLR() float64
	// LR returns the learning rate the next Step applies.
	LR() float64
	// SetLR sets the learning rate used by the next Step. It panics when
	// lr is negative, NaN or infinite.
	SetLR(lr float64)
	// Params returns the parameters, in the order given to the constructor.
	Params() []*autograd.Param
	// StateDict returns copies of the optimizer state, keyed by
	// "<param name>.<state>" plus StepKey and LRKey.
	StateDict() map[string]*tensor.Tensor
	// LoadStateDict replaces the optimizer state with the one in sd, which
	// must hold exactly the keys StateDict returns, with the same shapes.
	// On error the optimizer is left unchanged.
	LoadStateDict(sd map[string]*tensor.Tensor) error
}

// The optimizers of this package.
var (
	_ Optimizer = (*SGD)(nil)
	_ Optimizer = (*Adam)(nil)
	_ Optimizer = (*AdamW)(nil)
	_ Optimizer = (*RMSprop)(nil)
	_ Optimizer = (*Adagrad)(nil)
)

// Keys of the optimizer-wide entries of a state dict.
const (
	// StepKey holds the number of Step calls made so far (an int64 scalar).
	StepKey = "step"
	// LRKey holds the current learning rate (a float64 scalar).
	LRKey = "lr"
)

// Names of the per-parameter states, the suffix after "<param name>." in a
// state dict key. ParamStepState exists for every parameter; the others
// exist for the optimizers (and settings) that use them.
const (
	// ParamStepState counts the steps in which the parameter had a
	// gradient (an int64 scalar); Adam's bias correction and Adagrad's
	// lr decay use it, as PyTorch's per-parameter "step".
	ParamStepState = "step"
	// MomentumBufferState is SGD's and RMSprop's momentum buffer.
	MomentumBufferState = "momentum_buffer"
	// ExpAvgState is Adam's first moment estimate.
	ExpAvgState = "exp_avg"
	// ExpAvgSqState is Adam's second moment estimate.
	ExpAvgSqState = "exp_avg_sq"
	// MaxExpAvgSqState is Adam's running maximum of exp_avg_sq (AMSGrad).
	MaxExpAvgSqState = "max_exp_avg_sq"
	// SquareAvgState is RMSprop's running average of squared gradients.
	SquareAvgState = "square_avg"
	// GradAvgState is centered RMSprop's running average of gradients.
	GradAvgState = "grad_avg"
	// SumState is Adagrad's sum of squared gradients.
	SumState = "sum"
)

// paramState is the state of one parameter.
type paramState struct {
	// step counts the steps in which the parameter had a gradient.
	step int64
	// bufs holds one tensor per slot name, shaped like the parameter.
	bufs map[string]*tensor.Tensor
}

// core holds what every optimizer shares: the parameters, their state, the
// learning rate and the step count. The optimizers embed it and supply the
// per-parameter update rule.
type core struct {
	kind   string // "SGD", used in messages
	params []*autograd.Param
	shapes [][]int
	slots  []string
	state  []paramState
	baseLR float64 // the rate of the config
	lr     float64 // the rate of the next step
	steps  int64
	// update returns the new value of a parameter from its value, its
	// gradient and its state (whose step has already been incremented).
	// It may replace the state's buffers but must not modify value or g.
	update func(value, g *tensor.Tensor, st *paramState) *tensor.Tensor
	// fused, when set, updates the parameter and its state in place with
	// one fused device kernel and reports whether it could; Step falls
	// back to update when it returns false.
	fused func(p *autograd.Param, st *paramState) bool
	// fusedGroup, when set, updates in place, with one call of the
	// device's multi-tensor kernel, the parameters of g, whose states are
	// at the same step (so they share every hyper-parameter), and reports
	// whether it could; Step falls back to fused and update for the
	// parameters of a group it declines.
	fusedGroup func(g *group) bool
	// The slices a step needs, kept so that a steady-state step allocates
	// none: the parameters with a gradient, those left to fused and
	// update, the distinct step counts, and the group being updated.
	todo, left, indices []int
	stepCounts          []int64
	group               group
}

// group is the parameters of one fused update with their states, and the
// slices of their tensors that the multi-tensor kernels take (filled by
// tensors, reused from step to step).
type group struct {
	ps            []*autograd.Param
	sts           []*paramState
	values, grads []*tensor.Tensor
	bufs          [][]*tensor.Tensor
}

// tensors returns the values and gradients of g's parameters and, for each
// slot named, its state buffer of every parameter. The slices are g's own,
// valid until the next call.
func (g *group) tensors(slots ...string) (values, grads []*tensor.Tensor, bufs [][]*tensor.Tensor) {
	g.values, g.grads = g.values[:0], g.grads[:0]
	for len(g.bufs) < len(slots) {
		g.bufs = append(g.bufs, nil)
	}
	bufs = g.bufs[:len(slots)]
	for k := range bufs {
		bufs[k] = bufs[k][:0]
	}
	for i, p := range g.ps {
		g.values, g.grads = append(g.values, p.Value), append(g.grads, p.Grad)
		for k, s := range slots {
			bufs[k] = append(bufs[k], g.sts[i].bufs[s])
		}
	}
	return g.values, g.grads, bufs
}

// newCore checks params and allocates, for each, the state buffers named
// by slots, filled with init.
func newCore(kind string, params []*autograd.Param, lr float64, slots []string, init float64) (core, error) {
	op := "New" + kind
	if len(params) == 0 {
		return core{}, fmt.Errorf("optim: %s: empty parameter list", op)
	}
	c := core{
		kind:   kind,
		params: append([]*autograd.Param(nil), params...),
		shapes: make([][]int, len(params)),
		slots:  append([]string(nil), slots...),
		state:  make([]paramState, len(params)),
		baseLR: lr,
		lr:     lr,
	}
	seen := make(map[string]int, len(params))
	for i, p := range params {
		if p == nil || p.Var == nil || p.Value == nil {
			return core{}, fmt.Errorf("optim: %s: parameter %d is nil or has no value", op, i)
		}
		if p.Name == "" {
			return core{}, fmt.Errorf("optim: %s: parameter %d has an empty name", op, i)
		}
		if j, dup := seen[p.Name]; dup {
			return core{}, fmt.Errorf("optim: %s: duplicate parameter name %q (parameters %d and %d)", op, p.Name, j, i)
		}
		seen[p.Name] = i
		if dt := p.Value.DType(); !dt.IsFloat() {
			return core{}, fmt.Errorf("optim: %s: parameter %q has type %v, want a floating-point type", op, p.Name, dt)
		}
		c.shapes[i] = p.Value.Shape()
		bufs := make(map[string]*tensor.Tensor, len(slots))
		for _, s := range slots {
			bufs[s] = tensor.FullLike(p.Value, init)
		}
		c.state[i] = paramState{bufs: bufs}
	}
	return c, nil
}

// base returns the shared core (tests turn the fused path off through it).
func (c *core) base() *core { return c }

// Step implements Optimizer.
func (c *core) Step() error {
	for i, p := range c.params {
		if p.Grad == nil {
			continue
		}
		if err := c.checkGrad(i, p); err != nil {
			return err
		}
	}
	todo := c.todo[:0]
	for i, p := range c.params {
		if p.Grad != nil {
			c.state[i].step++
			todo = append(todo, i)
		}
	}
	c.todo = todo
	if c.fusedGroup != nil && c.fused != nil {
		todo = c.stepGroups(todo)
	}
	for _, i := range todo {
		p, st := c.params[i], &c.state[i]
		if c.fused != nil && c.fused(p, st) {
			continue
		}
		p.Value.CopyFrom(c.update(p.Value, p.Grad, st))
	}
	c.steps++
	return nil
}

// stepGroups updates the parameters of todo (indices into params) with
// fusedGroup, one group per step count (in the order of their first
// parameter), and returns those it did not.
func (c *core) stepGroups(todo []int) []int {
	counts := c.stepCounts[:0]
	for _, i := range todo {
		if s := c.state[i].step; !slices.Contains(counts, s) {
			counts = append(counts, s)
		}
	}
	c.stepCounts = counts
	left, g := c.left[:0], &c.group
	for _, s := range counts {
		idx := c.indices[:0]
		g.ps, g.sts = g.ps[:0], g.sts[:0]
		for _, i := range todo {
			if c.state[i].step == s {
				idx = append(idx, i)
				g.ps, g.sts = append(g.ps, c.params[i]), append(g.sts, &c.state[i])
			}
		}
		c.indices = idx
		if len(idx) < 2 || !c.fusedGroup(g) {
			left = append(left, idx...)
		}
	}
	c.left = left
	return left
}

// checkGrad reports a gradient or value that does not fit parameter i.
func (c *core) checkGrad(i int, p *autograd.Param) error {
	v, g := p.Value, p.Grad
	switch {
	case !v.HasShape(c.shapes[i]):
		return fmt.Errorf("optim: %s.Step: parameter %q: value shape %v differs from the shape %v it had when the optimizer was made",
			c.kind, p.Name, v.Shape(), c.shapes[i])
	case !g.SameShape(v):
		return fmt.Errorf("optim: %s.Step: parameter %q: gradient shape %v differs from value shape %v", c.kind, p.Name, g.Shape(), v.Shape())
	case g.DType() != v.DType():
		return fmt.Errorf("optim: %s.Step: parameter %q: gradient type %v differs from value type %v", c.kind, p.Name, g.DType(), v.DType())
	case g.Device() != v.Device():
		return fmt.Errorf("optim: %s.Step: parameter %q: gradient on %s, value on %s", c.kind, p.Name, g.Device().Name(), v.Device().Name())
	}
	return nil
}

// ZeroGrad implements Optimizer.
func (c *core) ZeroGrad() {
	for _, p := range c.params {
		p.ZeroGrad()
	}
}

// BaseLR implements Optimizer.
func (c *core) BaseLR() float64 { return c.baseLR }

// LR implements Optimizer.
func (c *core) LR() float64 { return c.lr }

// SetLR implements Optimizer.
func (c *core) SetLR(lr float64) {
	if !(lr >= 0) || math.IsInf(lr, 1) {
		panic(fmt.Sprintf("optim: %s.SetLR: learning rate must be >= 0 and finite, found %v", c.kind, lr))
	}
	c.lr = lr
}

// Params implements Optimizer.
func (c *core) Params() []*autograd.Param {
	return append([]*autograd.Param(nil), c.params...)
}

// StateDict implements Optimizer. The tensors are copies: changing them
// does not change the optimizer. Per-parameter buffers have the
// parameter's shape, type and device; the step counts are int64 scalars
// and the learning rate a float64 scalar, on the CPU.
func (c *core) StateDict() map[string]*tensor.Tensor {
	sd := make(map[string]*tensor.Tensor, 2+len(c.params)*(1+len(c.slots)))
	sd[StepKey] = tensor.FromInt64([]int64{c.steps})
	sd[LRKey] = tensor.FromFloat64([]float64{c.lr})
	for i, p := range c.params {
		st := c.state[i]
		sd[p.Name+"."+ParamStepState] = tensor.FromInt64([]int64{st.step})
		for _, s := range c.slots {
			sd[p.Name+"."+s] = st.bufs[s].Clone()
		}
	}
	return sd
}

// keySpec describes one expected state dict entry.
type keySpec struct {
	param int    // index of the parameter, -1 for optimizer-wide keys
	slot  string // buffer name, "" for a scalar
}

func (c *core) expectedKeys() map[string]keySpec {
	keys := make(map[string]keySpec, 2+len(c.params)*(1+len(c.slots)))
	keys[StepKey] = keySpec{param: -1}
	keys[LRKey] = keySpec{param: -1}
	for i, p := range c.params {
		keys[p.Name+"."+ParamStepState] = keySpec{param: i}
		for _, s := range c.slots {
			keys[p.Name+"."+s] = keySpec{param: i, slot: s}
		}
	}
	return keys
}

// LoadStateDict implements Optimizer. Buffers are copied into the
// optimizer (converted to the parameter's type and moved to its device),
// so sd may be reused afterwards. The learning rate is restored too; a
// Schedule applied afterwards overrides it.
func (c *core) LoadStateDict(sd map[string]*tensor.Tensor) error {
	op := c.kind + ".LoadStateDict"
	keys := c.expectedKeys()
	var missing, unexpected []string
	for k := range keys {
		if _, ok := sd[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range sd {
		if _, ok := keys[k]; !ok {
			unexpected = append(unexpected, k)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("optim: %s: missing key %s", op, quoteList(missing))
	}
	if len(unexpected) > 0 {
		return fmt.Errorf("optim: %s: unexpected key %s", op, quoteList(unexpected))
	}

	// Check everything before changing anything.
	names := make([]string, 0, len(sd))
	for k := range sd {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		t, spec := sd[k], keys[k]
		if t == nil {
			return fmt.Errorf("optim: %s: key %q holds a nil tensor", op, k)
		}
		if spec.slot == "" {
			if t.Len() != 1 {
				return fmt.Errorf("optim: %s: key %q: expected shape [] (a scalar), found %v", op, k, t.Shape())
			}
			v := t.Item()
			if k == LRKey {
				if !(v >= 0) || math.IsInf(v, 1) {
					return fmt.Errorf("optim: %s: key %q: learning rate must be >= 0 and finite, found %v", op, k, v)
				}
			} else if !(v >= 0) || v != math.Trunc(v) || v > math.MaxInt64/2 {
				return fmt.Errorf("optim: %s: key %q: step count must be a non-negative integer, found %v", op, k, v)
			}
			continue
		}
		if want := c.shapes[spec.param]; !slices.Equal(t.Shape(), want) {
			return fmt.Errorf("optim: %s: key %q: expected shape %v, found %v", op, k, want, t.Shape())
		}
		if !t.DType().IsFloat() {
			return fmt.Errorf("optim: %s: key %q: expected a floating-point tensor, found %v", op, k, t.DType())
		}
	}

	for k, spec := range keys {
		t := sd[k]
		switch {
		case k == LRKey:
			c.lr = t.Item()
		case k == StepKey:
			c.steps = int64(t.Item())
		case spec.slot == "":
			c.state[spec.param].step = int64(t.Item())
		default:
			dst := tensor.ZerosLike(c.params[spec.param].Value)
			dst.CopyFrom(t.To(dst.Device()))
			c.state[spec.param].bufs[spec.slot] = dst
		}
	}
	return nil
}

func quoteList(ks []string) string {
	sort.Strings(ks)
	q := make([]string, len(ks))
	for i, k := range ks {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q, ", ")
}

// ConfigError reports a hyper-parameter out of range, naming it as the
// Go code names it (Config "SGDConfig", Field "LR"; Config "StepLR",
// Field "stepSize") with the range it must be in and the value found, so
// that a program reading its settings from a file can point at the key.
type ConfigError struct {
	// Config is the config type or the constructor ("AdamConfig",
	// "CosineLR").
	Config string
	// Field is the field or argument ("Beta2", "milestones[1]").
	Field string
	// Want is the range, e.g. "> 0 and finite" or "in [0, 1)".
	Want string
	// Found is the value found, formatted.
	Found string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("optim: %s.%s must be %s, found %s", e.Config, e.Field, e.Want, e.Found)
}

// configError returns the *ConfigError of the field named "Config.Field".
func configError(field, want string, found any) error {
	config, name, _ := strings.Cut(field, ".")
	return &ConfigError{Config: config, Field: name, Want: want, Found: fmt.Sprint(found)}
}

// Configuration checks. Each names the field ("SGDConfig.LR") and the
// value found.

func checkPositive(field string, v float64) error {
	if !(v > 0) || math.IsInf(v, 1) {
		return configError(field, "> 0 and finite", v)
	}
	return nil
}

func checkNonNegative(field string, v float64) error {
	if !(v >= 0) || math.IsInf(v, 1) {
		return configError(field, ">= 0 and finite", v)
	}
	return nil
}

// checkUnit accepts [0, 1).
func checkUnit(field string, v float64) error {
	if !(v >= 0 && v < 1) {
		return configError(field, "in [0, 1)", v)
	}
	return nil
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// scalarLike returns a 0-dimensional tensor holding v with t's type and
// device, for dividing by a scalar the way PyTorch does (rather than
// multiplying by the rounded reciprocal).
func scalarLike(t *tensor.Tensor, v float64) *tensor.Tensor {
	return tensor.Full(t.Device(), t.DType(), v)
}
