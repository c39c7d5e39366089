package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// AttentionConfig holds the options of MultiHeadAttention. The zero value
// is torch.nn.MultiheadAttention's default: no mask, no dropout, biases.
type AttentionConfig struct {
	// Causal masks the future: position t attends to positions ≤ t only.
	Causal bool
	// Dropout is the probability of dropping an attention weight during
	// training [0].
	Dropout float64
	// NoBias leaves out in_proj_bias and out_proj.bias.
	NoBias bool
}

// MultiHeadAttention is multi-head scaled dot-product self-attention over
// inputs of shape N×T×D (torch.nn.MultiheadAttention with batch_first=True,
// called as mha(x, x, x)):
//
//	q, k, v = x·Wqᵀ + bq, x·Wkᵀ + bk, x·Wvᵀ + bv     (split into H heads of D/H)
//	head_h  = softmax(q_h·k_hᵀ / √(D/H) + mask) · v_h
//	out     = concat(head_1 … head_H)·Woᵀ + bo
//
// where the mask is 0 where attention is allowed and -∞ elsewhere (above
// the diagonal when Causal). Its parameters are named as PyTorch's:
// "in_proj_weight" (3D×D: Wq, Wk, Wv stacked), "in_proj_bias" (3D),
// "out_proj.weight" (D×D) and "out_proj.bias" (D), so state dicts move
// between the two unchanged.
//
// It is built from autograd operations only, so it runs on any device and
// exports to ONNX.
type MultiHeadAttention struct {
	dim, heads int
	causal     bool
	inW, inB   *autograd.Param
	outW, outB *autograd.Param
	drop       *Dropout

	mu   sync.Mutex
	mask *tensor.Tensor // the last causal mask built, reused while T, type and device match
}

// NewMultiHeadAttention returns self-attention over dim features split
// into heads heads, initialised as PyTorch does: in_proj_weight by
// XavierUniform, out_proj.weight as a Linear layer's (KaimingUniform with
// a = √5), both biases zero. dim must be a positive multiple of heads;
// other sizes panic, as NewLinear's do.
func NewMultiHeadAttention(dim, heads int, cfg AttentionConfig, rng *rand.Rand) *MultiHeadAttention {
	if dim <= 0 || heads <= 0 || dim%heads != 0 {
		panic(fmt.Sprintf("layers: NewMultiHeadAttention(%d, %d): dim must be a positive multiple of the positive number of heads", dim, heads))
	}
	a := &MultiHeadAttention{
		dim: dim, heads: heads, causal: cfg.Causal,
		inW:  autograd.NewParam("in_proj_weight", tensor.XavierUniform(rng, 3*dim, dim)),
		outW: autograd.NewParam("out_proj.weight", tensor.KaimingUniform(rng, math.Sqrt(5), dim, dim)),
		drop: NewDropout(cfg.Dropout, rng),
	}
	if !cfg.NoBias {
		a.inB = autograd.NewParam("in_proj_bias", tensor.Zeros(3*dim))
		a.outB = autograd.NewParam("out_proj.bias", tensor.Zeros(dim))
	}
	return a
}

// Heads returns the number of heads.
func (a *MultiHeadAttention) Heads() int { return a.heads }

// Parameters returns in_proj_weight, in_proj_bias, out_proj.weight and
// out_proj.bias (the biases unless NoBias), PyTorch's order.
func (a *MultiHeadAttention) Parameters() []*autograd.Param {
	if a.inB == nil {
		return []*autograd.Param{a.inW, a.outW}
	}
	return []*autograd.Param{a.inW, a.inB, a.outW, a.outB}
}

// Children returns the dropout on the attention weights, so that Train
// and Eval reach it.
func (a *MultiHeadAttention) Children() []Module { return []Module{a.drop} }

// Forward returns the self-attention of x (N×T×D), of the same shape.
func (a *MultiHeadAttention) Forward(x *autograd.Var) *autograd.Var {
	s := x.Shape()
	if len(s) != 3 || s[2] != a.dim {
		panic(fmt.Sprintf("layers: MultiHeadAttention(%d, %d heads): input shape %v, expected N×T×%d", a.dim, a.heads, s, a.dim))
	}
	n, t, d, hd := s[0], s[1], a.dim, a.dim/a.heads
	// One projection per part, with slices of the stacked weight: the
	// slices' gradients are the size of the weight, not of the activations.
	proj := func(part int) *autograd.Var {
		w := autograd.Slice(a.inW.Var, 0, part*d, (part+1)*d)
		var b *autograd.Var
		if a.inB != nil {
			b = autograd.Slice(a.inB.Var, 0, part*d, (part+1)*d)
		}
		return autograd.Reshape(autograd.Linear(x, w, b), n, t, a.heads, hd)
	}
	q := autograd.Permute(proj(0), 0, 2, 1, 3) // N×H×T×hd
	k := autograd.Permute(proj(1), 0, 2, 3, 1) // N×H×hd×T
	v := autograd.Permute(proj(2), 0, 2, 1, 3) // N×H×T×hd
	scores := autograd.MatMul(autograd.MulScalar(q, 1/math.Sqrt(float64(hd))), k)
	if a.causal {
		scores = autograd.Add(scores, autograd.Constant(a.causalMask(t, x.Value)))
	}
	w := a.drop.Forward(autograd.Softmax(scores, -1))
	heads := autograd.Permute(autograd.MatMul(w, v), 0, 2, 1, 3) // N×T×H×hd
	var ob *autograd.Var
	if a.outB != nil {
		ob = a.outB.Var
	}
	return autograd.Linear(autograd.Reshape(heads, n, t, d), a.outW.Var, ob)
}

// causalMask returns the T×T mask with 0 on and below the diagonal and -∞
// above it, of like's type and on its device.
func (a *MultiHeadAttention) causalMask(t int, like *tensor.Tensor) *tensor.Tensor {
	a.mu.Lock()
	defer a.mu.Unlock()
	if m := a.mask; m != nil && m.Dim(0) == t && m.DType() == like.DType() && m.Device() == like.Device() {
		return m
	}
	a.mask = CausalMask(t, like.DType(), like.Device())
	return a.mask
}

// CausalMask returns a t×t tensor of type dt on dev holding 0 where
// column ≤ row and -∞ elsewhere: added to attention scores, it keeps each
// position from seeing later ones (the float attn_mask PyTorch's
// nn.Transformer.generate_square_subsequent_mask returns).
func CausalMask(t int, dt device.DType, dev device.Device) *tensor.Tensor {
	m := make([]float64, t*t)
	for i := range t {
		for j := i + 1; j < t; j++ {
			m[i*t+j] = math.Inf(-1)
		}
	}
	return tensor.FromFloat64(m, t, t).Cast(dt).To(dev)
}

// EncoderLayerConfig holds the options of TransformerEncoderLayer. Zero
// values pick the defaults in brackets (PyTorch's, except FF).
type EncoderLayerConfig struct {
	// FF is the width of the feed-forward hidden layer [4·dim].
	FF int
	// Dropout is the probability used by every dropout of the layer [0].
	Dropout float64
	// Activation of the feed-forward layer: "relu" or "gelu" [relu].
	Activation string
	// NormFirst normalises before attention and feed-forward (pre-norm)
	// instead of after each residual sum (post-norm).
	NormFirst bool
	// Causal makes the self-attention causal (see AttentionConfig).
	Causal bool
	// Eps is the LayerNorms' epsilon [1e-5].
	Eps float64
}

// TransformerEncoderLayer is one Transformer encoder block over N×T×D
// inputs (torch.nn.TransformerEncoderLayer with batch_first=True). Post-norm
// (the default):
//
//	x = norm1(x + dropout1(self_attn(x)))
//	x = norm2(x + dropout2(linear2(dropout(act(linear1(x))))))
//
// pre-norm (NormFirst):
//
//	x = x + dropout1(self_attn(norm1(x)))
//	x = x + dropout2(linear2(dropout(act(linear1(norm2(x))))))
//
// Its parameters have PyTorch's names: "self_attn.in_proj_weight", …,
// "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
// "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias".
type TransformerEncoderLayer struct {
	selfAttn                    *MultiHeadAttention
	linear1, linear2            *Linear
	norm1, norm2                *LayerNorm
	dropout, dropout1, dropout2 *Dropout
	gelu, normFirst             bool
}

// NewTransformerEncoderLayer returns an encoder block of dim features and
// heads attention heads, its weights drawn from rng as PyTorch draws them.
// A bad size or activation panics, as NewLinear does.
func NewTransformerEncoderLayer(dim, heads int, cfg EncoderLayerConfig, rng *rand.Rand) *TransformerEncoderLayer {
	ff := cfg.FF
	if ff == 0 {
		ff = 4 * dim
	}
	if cfg.Activation != "" && cfg.Activation != "relu" && cfg.Activation != "gelu" {
		panic(fmt.Sprintf("layers: NewTransformerEncoderLayer: activation %q, expected relu or gelu", cfg.Activation))
	}
	ln := LayerNormConfig{Eps: cfg.Eps}
	return &TransformerEncoderLayer{
		selfAttn:  Named("self_attn", NewMultiHeadAttention(dim, heads, AttentionConfig{Causal: cfg.Causal, Dropout: cfg.Dropout}, rng)),
		linear1:   Named("linear1", NewLinear(dim, ff, true, rng)),
		linear2:   Named("linear2", NewLinear(ff, dim, true, rng)),
		norm1:     Named("norm1", NewLayerNorm([]int{dim}, ln)),
		norm2:     Named("norm2", NewLayerNorm([]int{dim}, ln)),
		dropout:   NewDropout(cfg.Dropout, rng),
		dropout1:  NewDropout(cfg.Dropout, rng),
		dropout2:  NewDropout(cfg.Dropout, rng),
		gelu:      cfg.Activation == "gelu",
		normFirst: cfg.NormFirst,
	}
}

// SelfAttn returns the block's attention.
func (l *TransformerEncoderLayer) SelfAttn() *MultiHeadAttention { return l.selfAttn }

// Parameters returns the attention's, linear1's, linear2's, norm1's and
// norm2's parameters, PyTorch's order.
func (l *TransformerEncoderLayer) Parameters() []*autograd.Param {
	var ps []*autograd.Param
	for _, m := range []Module{l.selfAttn, l.linear1, l.linear2, l.norm1, l.norm2} {
		ps = append(ps, m.Parameters()...)
	}
	return ps
}

// Children returns the sub-layers.
func (l *TransformerEncoderLayer) Children() []Module {
	return []Module{l.selfAttn, l.linear1, l.linear2, l.norm1, l.norm2, l.dropout, l.dropout1, l.dropout2}
}

// Forward returns the block's output for x (N×T×D), of the same shape.
func (l *TransformerEncoderLayer) Forward(x *autograd.Var) *autograd.Var {
	if l.normFirst {
		x = autograd.Add(x, l.dropout1.Forward(l.selfAttn.Forward(l.norm1.Forward(x))))
		return autograd.Add(x, l.feedForward(l.norm2.Forward(x)))
	}
	x = l.norm1.Forward(autograd.Add(x, l.dropout1.Forward(l.selfAttn.Forward(x))))
	return l.norm2.Forward(autograd.Add(x, l.feedForward(x)))
}

// feedForward returns dropout2(linear2(dropout(act(linear1(x))))).
func (l *TransformerEncoderLayer) feedForward(x *autograd.Var) *autograd.Var {
	var h *autograd.Var
	if l.gelu {
		h = autograd.GELU(l.linear1.Forward(x))
	} else {
		h = l.linear1.forwardAct(x, device.ActReLU)
	}
	return l.dropout2.Forward(l.linear2.Forward(l.dropout.Forward(h)))
}
