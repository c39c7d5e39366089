package layers

import (
	"fmt"
	"math/rand/v2"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

// ReLU is max(x, 0) elementwise (torch.nn.ReLU). Use it as ReLU{}.
type ReLU struct{}

// Parameters returns nil.
func (ReLU) Parameters() []*autograd.Param { return nil }

// Forward returns max(x, 0).
func (ReLU) Forward(x *autograd.Var) *autograd.Var { return autograd.Relu(x) }

// ReLU6 is min(max(x, 0), 6) elementwise (torch.nn.ReLU6), one pass
// forward and one backward; onnx.Export writes it as Clip(0, 6). Use it as
// ReLU6{}.
type ReLU6 struct{}

// Parameters returns nil.
func (ReLU6) Parameters() []*autograd.Param { return nil }

// Forward returns min(max(x, 0), 6).
func (ReLU6) Forward(x *autograd.Var) *autograd.Var { return autograd.ReLU6(x) }

// LeakyReLU is x for x > 0 and Slope·x otherwise (torch.nn.LeakyReLU;
// PyTorch's default slope is 0.01). Use it as LeakyReLU{Slope: 0.01}.
type LeakyReLU struct {
	// Slope multiplies negative inputs.
	Slope float64
}

// Parameters returns nil.
func (LeakyReLU) Parameters() []*autograd.Param { return nil }

// Forward applies the leaky rectifier.
func (l LeakyReLU) Forward(x *autograd.Var) *autograd.Var { return autograd.LeakyRelu(x, l.Slope) }

// GELU is x·Φ(x) with the exact (erf) normal CDF Φ (torch.nn.GELU with
// approximate="none"). Use it as GELU{}.
type GELU struct{}

// Parameters returns nil.
func (GELU) Parameters() []*autograd.Param { return nil }

// Forward applies GELU.
func (GELU) Forward(x *autograd.Var) *autograd.Var { return autograd.GELU(x) }

// SiLU is x·σ(x), also called swish (torch.nn.SiLU). Use it as SiLU{}.
type SiLU struct{}

// Parameters returns nil.
func (SiLU) Parameters() []*autograd.Param { return nil }

// Forward applies SiLU.
func (SiLU) Forward(x *autograd.Var) *autograd.Var { return autograd.SiLU(x) }

// Sigmoid is 1/(1+e⁻ˣ) elementwise (torch.nn.Sigmoid). Use it as Sigmoid{}.
type Sigmoid struct{}

// Parameters returns nil.
func (Sigmoid) Parameters() []*autograd.Param { return nil }

// Forward applies the logistic function.
func (Sigmoid) Forward(x *autograd.Var) *autograd.Var { return autograd.Sigmoid(x) }

// Tanh is the hyperbolic tangent elementwise (torch.nn.Tanh). Use it as
// Tanh{}.
type Tanh struct{}

// Parameters returns nil.
func (Tanh) Parameters() []*autograd.Param { return nil }

// Forward applies tanh.
func (Tanh) Forward(x *autograd.Var) *autograd.Var { return autograd.Tanh(x) }

// Softmax normalises exp(x) to sum to 1 along Axis (torch.nn.Softmax);
// negative axes count from the end. Use it as Softmax{Axis: -1}.
type Softmax struct {
	// Axis is the axis along which the outputs sum to 1.
	Axis int
}

// Parameters returns nil.
func (Softmax) Parameters() []*autograd.Param { return nil }

// Forward applies softmax along Axis.
func (s Softmax) Forward(x *autograd.Var) *autograd.Var { return autograd.Softmax(x, s.Axis) }

// LogSoftmax is log(Softmax(x)) along Axis, computed stably
// (torch.nn.LogSoftmax). Use it as LogSoftmax{Axis: 1}.
type LogSoftmax struct {
	// Axis is the axis of the normalisation.
	Axis int
}

// Parameters returns nil.
func (LogSoftmax) Parameters() []*autograd.Param { return nil }

// Forward applies log-softmax along Axis.
func (s LogSoftmax) Forward(x *autograd.Var) *autograd.Var { return autograd.LogSoftmax(x, s.Axis) }

// Flatten merges the axes from a start axis to the last into one
// (torch.nn.Flatten): N×C×H×W becomes N×(C·H·W) with the default start 1.
type Flatten struct{ start int }

// NewFlatten returns a Flatten that keeps axis 0 (the batch) and merges
// the rest.
func NewFlatten() *Flatten { return &Flatten{start: 1} }

// NewFlattenFrom returns a Flatten that merges axes start…last; a negative
// start counts from the end.
func NewFlattenFrom(start int) *Flatten { return &Flatten{start: start} }

// Parameters returns nil.
func (*Flatten) Parameters() []*autograd.Param { return nil }

// Forward flattens x.
func (f *Flatten) Forward(x *autograd.Var) *autograd.Var { return autograd.Flatten(x, f.start) }

// Dropout zeroes each element with probability p during training and
// scales the others by 1/(1-p) (inverted dropout, torch.nn.Dropout), so
// that evaluation, where it is the identity, needs no rescaling. The mask
// is drawn from the layer's *rand.Rand, so a seed fixes it; like the
// generator itself, a Dropout must not run in several goroutines at once.
type Dropout struct {
	p        float64
	rng      *rand.Rand
	training bool
}

// NewDropout returns a Dropout with drop probability p in [0, 1] drawing
// its masks from rng.
func NewDropout(p float64, rng *rand.Rand) *Dropout {
	if !(p >= 0 && p <= 1) {
		panic(fmt.Sprintf("layers: NewDropout(%g): p must be in [0, 1]", p))
	}
	if rng == nil && p > 0 {
		panic("layers: NewDropout: nil *rand.Rand")
	}
	return &Dropout{p: p, rng: rng, training: true}
}

// Parameters returns nil.
func (*Dropout) Parameters() []*autograd.Param { return nil }

// SetTraining turns dropping on (true) or off (false).
func (d *Dropout) SetTraining(training bool) { d.training = training }

// Training reports whether the layer is in training mode.
func (d *Dropout) Training() bool { return d.training }

// Forward returns x in evaluation mode, and x times a fresh random mask of
// zeros and 1/(1-p) in training mode.
func (d *Dropout) Forward(x *autograd.Var) *autograd.Var {
	if !d.training || d.p == 0 {
		return x
	}
	n := x.Value.Len()
	mask := make([]float64, n)
	if d.p < 1 {
		scale := 1 / (1 - d.p)
		for i := range mask {
			if d.rng.Float64() >= d.p {
				mask[i] = scale
			}
		}
	}
	m := tensor.FromFloat64(mask, x.Shape()...).Cast(x.Value.DType()).To(x.Value.Device())
	return autograd.Mul(x, autograd.Constant(m))
}
