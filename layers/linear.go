package layers

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Linear is a fully connected layer, y = x·Wᵀ + b, for inputs of shape
// …×In (torch.nn.Linear). Its parameters are "weight" (Out×In) and, when
// it has a bias, "bias" (Out).
type Linear struct {
	in, out int
	weight  *autograd.Param
	bias    *autograd.Param
}

// NewLinear returns a Linear layer from in to out features, initialised
// as PyTorch does: the weight by KaimingUniform with a = √5, the bias (if
// bias is set) from U(-1/√in, 1/√in), both drawn from rng.
func NewLinear(in, out int, bias bool, rng *rand.Rand) *Linear {
	if in <= 0 || out <= 0 {
		panic(fmt.Sprintf("layers: NewLinear(%d, %d): sizes must be positive", in, out))
	}
	l := &Linear{in: in, out: out}
	l.weight = autograd.NewParam("weight", tensor.KaimingUniform(rng, math.Sqrt(5), out, in))
	if bias {
		bound := 1 / math.Sqrt(float64(in))
		l.bias = autograd.NewParam("bias", tensor.RandUniform(rng, -bound, bound, out))
	}
	return l
}

// Weight returns the Out×In weight parameter.
func (l *Linear) Weight() *autograd.Param { return l.weight }

// Bias returns the bias parameter, or nil for a layer without bias.
func (l *Linear) Bias() *autograd.Param { return l.bias }

// Parameters returns the weight and, if present, the bias.
func (l *Linear) Parameters() []*autograd.Param {
	if l.bias == nil {
		return []*autograd.Param{l.weight}
	}
	return []*autograd.Param{l.weight, l.bias}
}

// Forward returns x·Wᵀ + b for x of shape …×In; the output has shape …×Out.
func (l *Linear) Forward(x *autograd.Var) *autograd.Var { return l.forwardAct(x, device.ActNone) }

func (l *Linear) forwardAct(x *autograd.Var, act device.Activation) *autograd.Var {
	if r := x.Value.Rank(); r == 0 || x.Value.Dim(r-1) != l.in {
		s := x.Shape()
		panic(fmt.Sprintf("layers: Linear(%d→%d): input shape %v does not end in %d (weight %v)", l.in, l.out, s, l.in, l.weight.Shape()))
	}
	var b *autograd.Var
	if l.bias != nil {
		b = l.bias.Var
	}
	return autograd.LinearAct(x, l.weight.Var, b, act)
}

// Embedding is a lookup table of Num vectors of size Dim
// (torch.nn.Embedding). Its parameter "weight" has shape Num×Dim.
type Embedding struct {
	num, dim int
	weight   *autograd.Param
}

// NewEmbedding returns an Embedding with weights drawn from N(0, 1) by rng,
// as in PyTorch.
func NewEmbedding(num, dim int, rng *rand.Rand) *Embedding {
	if num <= 0 || dim <= 0 {
		panic(fmt.Sprintf("layers: NewEmbedding(%d, %d): sizes must be positive", num, dim))
	}
	return &Embedding{num: num, dim: dim, weight: autograd.NewParam("weight", tensor.RandNormal(rng, 0, 1, num, dim))}
}

// Weight returns the Num×Dim table.
func (e *Embedding) Weight() *autograd.Param { return e.weight }

// Parameters returns the weight.
func (e *Embedding) Parameters() []*autograd.Param { return []*autograd.Param{e.weight} }

// Forward looks up the int64 indices held by x (a Constant, typically);
// see Lookup. When x is in no-grad mode the result is not recorded.
func (e *Embedding) Forward(x *autograd.Var) *autograd.Var {
	w := e.weight.Var
	if x.IsNoGrad() {
		w = autograd.NoGrad(w)
	}
	return e.lookup(w, x.Value)
}

// Lookup returns the rows of the table named by the int64 tensor idx of
// any shape S; the result has shape S×Dim. Rows picked several times
// accumulate their gradients. An index outside [0, Num) is a programming
// error and panics with the index, its position and Num.
func (e *Embedding) Lookup(idx *tensor.Tensor) *autograd.Var { return e.lookup(e.weight.Var, idx) }

func (e *Embedding) lookup(w *autograd.Var, idx *tensor.Tensor) *autograd.Var {
	if idx.DType() != device.Int64 {
		panic(fmt.Sprintf("layers: Embedding(%d, %d): indices must be int64, found %v %v", e.num, e.dim, idx.DType(), idx.Shape()))
	}
	for i, v := range idx.Int64s() {
		if v < 0 || v >= int64(e.num) {
			panic(fmt.Sprintf("layers: Embedding(%d, %d): index %d at position %d of indices %v is out of range [0, %d)", e.num, e.dim, v, i, idx.Shape(), e.num))
		}
	}
	return autograd.Embedding(w, idx)
}
