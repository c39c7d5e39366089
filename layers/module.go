package layers

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Module is anything that owns trainable parameters: a layer, a container
// of layers or a whole model. Parameters returns every parameter of the
// module and of its descendants, each once, with Name set to its full
// dotted path ("features.0.weight"). Modules list their parameters
// explicitly; nothing is found by reflection.
type Module interface {
	Parameters() []*autograd.Param
}

// Layer is a Module that maps one input to one output.
type Layer interface {
	Module
	// Forward computes the layer's output for x, recording the operations
	// for Backward unless x is in no-grad mode (autograd.NoGrad).
	Forward(x *autograd.Var) *autograd.Var
}

// Container is implemented by modules made of other modules (Sequential,
// Residual, a user's model struct). Children lists the direct children;
// Train, Eval, To, Cast, StateDict and Named walk them to reach buffers and
// training modes.
type Container interface {
	Module
	Children() []Module
}

// Stateful is implemented by modules that keep non-trainable state
// (BatchNorm's running statistics). Buffers returns every buffer of the
// module and of its descendants, each once, with full dotted names, just
// as Parameters does for parameters. A container that does not implement
// Stateful gets its buffers collected from its Children (see BuffersOf).
type Stateful interface {
	Module
	Buffers() []*Buffer
}

// ModeSetter is implemented by modules that behave differently in training
// and in evaluation (BatchNorm, Dropout). SetTraining sets the mode of the
// module itself; Train and Eval reach the children through Container.
type ModeSetter interface {
	SetTraining(training bool)
}

// Buffer is a named non-trainable tensor that belongs to a module's state
// (saved by StateDict, moved by To), such as "bn1.running_mean".
type Buffer struct {
	// Name is the buffer's full dotted path in its model.
	Name string
	// Value is the current state. Layers update it in place or replace it.
	Value *tensor.Tensor
}

// Sentinel errors wrapped by LoadStateDict.
var (
	// ErrMissingKey means the module has a parameter or buffer that the
	// state dict lacks.
	ErrMissingKey = errors.New("missing key")
	// ErrUnexpectedKey means the state dict has an entry that matches no
	// parameter or buffer of the module.
	ErrUnexpectedKey = errors.New("unexpected key")
	// ErrMismatch means an entry's shape or element type differs from the
	// module's tensor of the same name.
	ErrMismatch = errors.New("mismatch")
)

// Named prefixes the names of every parameter and buffer of m with
// prefix and a dot, and returns m, so that
//
//	features := layers.Named("features", layers.NewSequential(conv, relu))
//
// names conv's weight "features.0.weight". Containers call it on their
// children when they are built; a model calls it once per field. A module
// must therefore be named once, by the one parent that owns it. An empty
// prefix leaves the names unchanged.
func Named[M Module](prefix string, m M) M {
	if prefix == "" {
		return m
	}
	for _, p := range uniqueParams(m.Parameters()) {
		p.Name = join(prefix, p.Name)
	}
	for _, b := range BuffersOf(m) {
		b.Name = join(prefix, b.Name)
	}
	return m
}

func join(prefix, name string) string {
	if name == "" {
		return prefix
	}
	return prefix + "." + name
}

// BuffersOf returns the buffers of m and its descendants: m.Buffers() when
// m is Stateful, otherwise the buffers of m's Children when m is a
// Container, otherwise none. A buffer reached twice is listed once.
func BuffersOf(m Module) []*Buffer {
	var out []*Buffer
	seen := map[*Buffer]bool{}
	var walk func(m Module)
	walk = func(m Module) {
		if s, ok := m.(Stateful); ok {
			for _, b := range s.Buffers() {
				if !seen[b] {
					seen[b] = true
					out = append(out, b)
				}
			}
			return
		}
		if c, ok := m.(Container); ok {
			for _, ch := range c.Children() {
				walk(ch)
			}
		}
	}
	walk(m)
	return out
}

// uniqueParams drops repeated parameters (shared weights), keeping order.
func uniqueParams(ps []*autograd.Param) []*autograd.Param {
	seen := make(map[*autograd.Param]bool, len(ps))
	out := ps[:0:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// Train puts m and all its descendants in training mode (the default of
// every layer): BatchNorm normalises with batch statistics and updates its
// running statistics, Dropout drops.
func Train(m Module) { setMode(m, true) }

// Eval puts m and all its descendants in evaluation mode: BatchNorm uses
// its running statistics, Dropout is the identity.
func Eval(m Module) { setMode(m, false) }

func setMode(m Module, training bool) {
	if s, ok := m.(ModeSetter); ok {
		s.SetTraining(training)
	}
	if c, ok := m.(Container); ok {
		for _, ch := range c.Children() {
			setMode(ch, training)
		}
	}
}

// StateDict returns m's parameters and buffers by full name. The map holds
// the module's current tensors, not copies: Clone them to keep a snapshot.
// Two different tensors under one name are a programming error and panic.
func StateDict(m Module) map[string]*tensor.Tensor {
	sd := map[string]*tensor.Tensor{}
	add := func(name string, t *tensor.Tensor) {
		if _, dup := sd[name]; dup {
			panic(fmt.Sprintf("layers: StateDict: two parameters or buffers are named %q (name each child once with Named)", name))
		}
		sd[name] = t
	}
	for _, p := range uniqueParams(m.Parameters()) {
		add(p.Name, p.Value)
	}
	for _, b := range BuffersOf(m) {
		add(b.Name, b.Value)
	}
	return sd
}

// LoadStateDict copies the tensors of sd into m's parameters and buffers
// of the same names, converting nothing: each entry must have the shape
// and element type of the tensor it replaces (it may live on another
// device). Nothing is copied unless every entry matches. The error lists
// every missing key, unexpected key and mismatch, each wrapping
// ErrMissingKey, ErrUnexpectedKey or ErrMismatch.
func LoadStateDict(m Module, sd map[string]*tensor.Tensor) error {
	cur := StateDict(m)
	var errs []error
	names := make([]string, 0, len(cur))
	for name := range cur {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		want := cur[name]
		got, ok := sd[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("layers: LoadStateDict: %w %q (expected %v %v)", ErrMissingKey, name, want.DType(), want.Shape()))
		case got == nil:
			errs = append(errs, fmt.Errorf("layers: LoadStateDict: %q: %w: expected %v %v, found a nil tensor", name, ErrMismatch, want.DType(), want.Shape()))
		case !slices.Equal(got.Shape(), want.Shape()):
			errs = append(errs, fmt.Errorf("layers: LoadStateDict: %q: shape %w: expected %v, found %v", name, ErrMismatch, want.Shape(), got.Shape()))
		case got.DType() != want.DType():
			errs = append(errs, fmt.Errorf("layers: LoadStateDict: %q: dtype %w: expected %v, found %v", name, ErrMismatch, want.DType(), got.DType()))
		}
	}
	var extra []string
	for name := range sd {
		if _, ok := cur[name]; !ok {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		errs = append(errs, fmt.Errorf("layers: LoadStateDict: %w %q (the module has no parameter or buffer of that name)", ErrUnexpectedKey, name))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, name := range names {
		dst := cur[name]
		dst.CopyFrom(sd[name].To(dst.Device()))
	}
	return nil
}

// NumParams returns the number of scalar parameters of m.
func NumParams(m Module) int {
	n := 0
	for _, p := range uniqueParams(m.Parameters()) {
		n += p.Value.Len()
	}
	return n
}

// To moves every parameter (with its gradient, if any) and buffer of m to
// dev, in place.
func To(m Module, dev device.Device) {
	for _, p := range uniqueParams(m.Parameters()) {
		p.Value = p.Value.To(dev)
		if p.Grad != nil {
			p.Grad = p.Grad.To(dev)
		}
	}
	for _, b := range BuffersOf(m) {
		b.Value = b.Value.To(dev)
	}
}

// Cast converts every floating-point parameter (with its gradient) and
// buffer of m to the floating-point type dt, in place; integer buffers
// such as num_batches_tracked keep their type. Cast(m, device.Float64)
// prepares a model for autograd.GradCheck. A non-float dt panics.
func Cast(m Module, dt device.DType) {
	if !dt.IsFloat() {
		panic(fmt.Sprintf("layers: Cast to %v: parameters must be floating-point", dt))
	}
	for _, p := range uniqueParams(m.Parameters()) {
		p.Value = p.Value.Cast(dt)
		if p.Grad != nil {
			p.Grad = p.Grad.Cast(dt)
		}
	}
	for _, b := range BuffersOf(m) {
		if b.Value.DType().IsFloat() {
			b.Value = b.Value.Cast(dt)
		}
	}
}
