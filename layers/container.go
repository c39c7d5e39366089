package layers

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
)

// Sequential applies its layers one after the other
// (torch.nn.Sequential). Layer i's parameters and buffers are prefixed
// with "i.": the weight of the first layer is "0.weight".
type Sequential struct {
	layers []Layer
}

// NewSequential returns a Sequential of the given layers, naming them
// 0, 1, … (see Named).
func NewSequential(ls ...Layer) *Sequential {
	s := &Sequential{}
	for _, l := range ls {
		s.Append(l)
	}
	return s
}

// Append adds l at the end, named after its position. Append before the
// Sequential itself is given a prefix with Named: l does not receive a
// prefix given earlier.
func (s *Sequential) Append(l Layer) {
	if l == nil {
		panic(fmt.Sprintf("layers: Sequential: layer %d is nil", len(s.layers)))
	}
	s.layers = append(s.layers, Named(strconv.Itoa(len(s.layers)), l))
}

// Layers returns the layers in order (a copy of the slice).
func (s *Sequential) Layers() []Layer { return slices.Clone(s.layers) }

// Len returns the number of layers.
func (s *Sequential) Len() int { return len(s.layers) }

// Children returns the layers as modules.
func (s *Sequential) Children() []Module {
	out := make([]Module, len(s.layers))
	for i, l := range s.layers {
		out[i] = l
	}
	return out
}

// Parameters returns the parameters of all layers in order, each once.
func (s *Sequential) Parameters() []*autograd.Param {
	var ps []*autograd.Param
	for _, l := range s.layers {
		ps = append(ps, l.Parameters()...)
	}
	return uniqueParams(ps)
}

// Forward feeds x through every layer.
//
// A Linear or Conv2d layer directly followed by ReLU, and a Conv2d, ReLU,
// MaxPool2d block, run as one fused operation each (the same result, in
// fewer passes over memory).
func (s *Sequential) Forward(x *autograd.Var) *autograd.Var {
	for i := 0; i < len(s.layers); i++ {
		if c, ok := s.layers[i].(*Conv2d); ok && i+2 < len(s.layers) {
			_, relu := s.layers[i+1].(ReLU)
			if pool, ok := s.layers[i+2].(*MaxPool2d); ok && relu {
				x = c.forwardActPool(x, device.ActReLU, pool)
				i += 2
				continue
			}
		}
		if f, ok := s.layers[i].(actFuser); ok && i+1 < len(s.layers) {
			if act := activationOf(s.layers[i+1]); act != device.ActNone {
				x = f.forwardAct(x, act)
				i++
				continue
			}
		}
		x = s.layers[i].Forward(x)
	}
	return x
}

// actFuser is a layer that can apply the activation after it in the same
// operation.
type actFuser interface {
	forwardAct(x *autograd.Var, act device.Activation) *autograd.Var
}

// activationOf returns the activation that layer l is (ReLU, ReLU6), or
// ActNone.
func activationOf(l Layer) device.Activation {
	switch l.(type) {
	case ReLU:
		return device.ActReLU
	case ReLU6:
		return device.ActReLU6
	}
	return device.ActNone
}

func (bn *BatchNorm) forwardAct(x *autograd.Var, act device.Activation) *autograd.Var {
	return bn.ForwardAct(x, act)
}

// Residual computes x + Inner(x), the skip connection of residual
// networks. It adds no name prefix: Inner's parameters keep their names
// (name Inner with Named for a prefix). Inner must keep the shape of x.
type Residual struct {
	inner Layer
}

// NewResidual returns the skip connection around inner.
func NewResidual(inner Layer) *Residual {
	if inner == nil {
		panic("layers: NewResidual: nil inner layer")
	}
	return &Residual{inner: inner}
}

// Inner returns the wrapped layer.
func (r *Residual) Inner() Layer { return r.inner }

// Children returns the inner layer.
func (r *Residual) Children() []Module { return []Module{r.inner} }

// Parameters returns the inner layer's parameters.
func (r *Residual) Parameters() []*autograd.Param { return r.inner.Parameters() }

// Forward returns x + Inner(x); an inner output of another shape panics.
func (r *Residual) Forward(x *autograd.Var) *autograd.Var {
	y := r.inner.Forward(x)
	if !slices.Equal(x.Shape(), y.Shape()) {
		panic(fmt.Sprintf("layers: Residual: inner layer maps shape %v to %v; they must be equal", x.Shape(), y.Shape()))
	}
	return autograd.Add(x, y)
}
