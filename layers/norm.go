package layers

import (
	"fmt"
	"slices"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// BatchNormConfig holds the options of batch normalisation. The zero value
// is PyTorch's default: eps 1e-5, momentum 0.1, learnable affine weight and
// bias, running statistics tracked.
type BatchNormConfig struct {
	Eps      float64 // added to the variance inside the square root [1e-5]
	Momentum float64 // weight of the new batch in the running statistics [0.1]
	// NoAffine leaves out the learnable weight and bias.
	NoAffine bool
	// NoRunningStats keeps no running statistics: batch statistics are
	// used in evaluation too, and the layer has no buffers.
	NoRunningStats bool
}

// BatchNorm normalises each channel (axis 1) over the batch and the
// spatial axes (torch.nn.BatchNorm1d and BatchNorm2d):
//
//	y = (x - mean) / √(var + eps) · weight + bias
//
// In training mode mean and var are the batch's (var biased, dividing by
// n), and the running statistics are updated with momentum m as
// running = (1-m)·running + m·batch, running_var taking the unbiased
// (n-1) batch variance; num_batches_tracked counts the updates. In
// evaluation mode the running statistics are used.
//
// Parameters: "weight" (ones) and "bias" (zeros), each of length C.
// Buffers: "running_mean" (zeros), "running_var" (ones) and
// "num_batches_tracked" (an int64 scalar).
type BatchNorm struct {
	name        string
	ranks       []int
	c           int
	eps, mom    float64
	weight      *autograd.Param
	bias        *autograd.Param
	runningMean *Buffer
	runningVar  *Buffer
	numBatches  *Buffer
	training    bool
}

// NewBatchNorm1d returns batch normalisation over C features for inputs
// of shape N×C or N×C×L.
func NewBatchNorm1d(c int, cfg BatchNormConfig) *BatchNorm {
	return newBatchNorm("BatchNorm1d", []int{2, 3}, c, cfg)
}

// NewBatchNorm2d returns batch normalisation over C channels for inputs of
// shape N×C×H×W.
func NewBatchNorm2d(c int, cfg BatchNormConfig) *BatchNorm {
	return newBatchNorm("BatchNorm2d", []int{4}, c, cfg)
}

func newBatchNorm(name string, ranks []int, c int, cfg BatchNormConfig) *BatchNorm {
	if c <= 0 || cfg.Eps < 0 || cfg.Momentum < 0 || cfg.Momentum > 1 {
		panic(fmt.Sprintf("layers: New%s(%d, %+v): invalid configuration", name, c, cfg))
	}
	bn := &BatchNorm{name: name, ranks: ranks, c: c, eps: cfg.Eps, mom: cfg.Momentum, training: true}
	if bn.eps == 0 {
		bn.eps = 1e-5
	}
	if bn.mom == 0 {
		bn.mom = 0.1
	}
	if !cfg.NoAffine {
		bn.weight = autograd.NewParam("weight", tensor.Full(tensor.CPU(), device.Float32, 1, c))
		bn.bias = autograd.NewParam("bias", tensor.Zeros(c))
	}
	if !cfg.NoRunningStats {
		bn.runningMean = &Buffer{Name: "running_mean", Value: tensor.Zeros(c)}
		bn.runningVar = &Buffer{Name: "running_var", Value: tensor.Full(tensor.CPU(), device.Float32, 1, c)}
		bn.numBatches = &Buffer{Name: "num_batches_tracked", Value: tensor.New(tensor.CPU(), device.Int64)}
	}
	return bn
}

// Parameters returns the weight and bias (none without affine).
func (bn *BatchNorm) Parameters() []*autograd.Param {
	if bn.weight == nil {
		return nil
	}
	return []*autograd.Param{bn.weight, bn.bias}
}

// Buffers returns running_mean, running_var and num_batches_tracked (none
// without running statistics).
func (bn *BatchNorm) Buffers() []*Buffer {
	if bn.runningMean == nil {
		return nil
	}
	return []*Buffer{bn.runningMean, bn.runningVar, bn.numBatches}
}

// SetTraining switches between batch statistics (true) and running
// statistics (false).
func (bn *BatchNorm) SetTraining(training bool) { bn.training = training }

// Training reports whether the layer is in training mode.
func (bn *BatchNorm) Training() bool { return bn.training }

// Forward normalises x. In training mode with running statistics it also
// updates them, even when x is in no-grad mode (as PyTorch does). A layer
// whose weight and bias are frozen (autograd.Param.Freeze, as fine-tuning
// a pretrained backbone does) always runs as in evaluation: its running
// statistics are kept.
func (bn *BatchNorm) Forward(x *autograd.Var) *autograd.Var {
	return bn.ForwardAct(x, device.ActNone)
}

// ForwardAct is Forward followed by the activation act (ReLU or ReLU6):
// one operation in training on a device with fused kernels (see
// autograd.BatchNormAct), BatchNorm then the activation elsewhere.
// Sequential uses it for a BatchNorm followed by ReLU or ReLU6.
func (bn *BatchNorm) ForwardAct(x *autograd.Var, act device.Activation) *autograd.Var {
	training := bn.training && !bn.frozen()
	s := x.Shape()
	if !slices.Contains(bn.ranks, len(s)) || s[1] != bn.c {
		want := fmt.Sprintf("N×%d×H×W", bn.c)
		if bn.name == "BatchNorm1d" {
			want = fmt.Sprintf("N×%d or N×%d×L", bn.c, bn.c)
		}
		panic(fmt.Sprintf("layers: %s(%d): input shape %v, expected %s", bn.name, bn.c, s, want))
	}
	var w, b *autograd.Var
	if bn.weight != nil {
		w, b = bn.weight.Var, bn.bias.Var
	}
	if !training && bn.runningMean != nil {
		// Evaluation with running statistics: one recorded operation, which
		// the ONNX exporter writes as BatchNormalization.
		return autograd.ActivationOf(autograd.BatchNormInference(x, w, b, bn.runningMean.Value, bn.runningVar.Value, bn.eps), act)
	}
	n := x.Value.Len() / bn.c
	if n <= 1 && training {
		panic(fmt.Sprintf("layers: %s(%d): input shape %v has %d value per channel; training needs more than 1", bn.name, bn.c, s, n))
	}
	y, mean, variance := autograd.BatchNormAct(x, w, b, bn.eps, act)
	if training && bn.runningMean != nil {
		bn.update(mean, variance.MulScalar(float64(n)/float64(n-1)))
	}
	return y
}

// frozen reports whether the layer's weight and bias are frozen.
func (bn *BatchNorm) frozen() bool {
	return bn.weight != nil && bn.weight.Frozen() && bn.bias.Frozen()
}

// update folds the batch statistics into the running ones, in place.
func (bn *BatchNorm) update(mean, unbiasedVar *tensor.Tensor) {
	m := bn.mom
	rm, rv := bn.runningMean.Value, bn.runningVar.Value
	rm.CopyFrom(rm.MulScalar(1 - m).Add(mean.MulScalar(m)))
	rv.CopyFrom(rv.MulScalar(1 - m).Add(unbiasedVar.MulScalar(m)))
	nb := bn.numBatches.Value
	nb.Fill(nb.Item() + 1)
}

// LayerNormConfig holds the options of layer normalisation. The zero value
// is PyTorch's default: eps 1e-5 and a learnable elementwise weight and
// bias.
type LayerNormConfig struct {
	Eps float64 // added to the variance inside the square root [1e-5]
	// NoAffine leaves out the elementwise weight and bias.
	NoAffine bool
}

// LayerNorm normalises each sample over its trailing axes, the normalized
// shape (torch.nn.LayerNorm):
//
//	y = (x - mean) / √(var + eps) · weight + bias
//
// with mean and the biased variance taken over those axes. Parameters:
// "weight" (ones) and "bias" (zeros), both of the normalized shape.
type LayerNorm struct {
	shape  []int
	eps    float64
	weight *autograd.Param
	bias   *autograd.Param
}

// NewLayerNorm returns layer normalisation over trailing axes of the given
// shape (for example []int{512} for the last axis).
func NewLayerNorm(normalizedShape []int, cfg LayerNormConfig) *LayerNorm {
	if len(normalizedShape) == 0 || cfg.Eps < 0 || slices.ContainsFunc(normalizedShape, func(d int) bool { return d <= 0 }) {
		panic(fmt.Sprintf("layers: NewLayerNorm(%v, %+v): invalid configuration", normalizedShape, cfg))
	}
	ln := &LayerNorm{shape: slices.Clone(normalizedShape), eps: cfg.Eps}
	if ln.eps == 0 {
		ln.eps = 1e-5
	}
	if !cfg.NoAffine {
		ln.weight = autograd.NewParam("weight", tensor.Full(tensor.CPU(), device.Float32, 1, normalizedShape...))
		ln.bias = autograd.NewParam("bias", tensor.Zeros(normalizedShape...))
	}
	return ln
}

// Parameters returns the weight and bias (none without affine).
func (ln *LayerNorm) Parameters() []*autograd.Param {
	if ln.weight == nil {
		return nil
	}
	return []*autograd.Param{ln.weight, ln.bias}
}

// Forward normalises x, whose shape must end in the normalized shape.
func (ln *LayerNorm) Forward(x *autograd.Var) *autograd.Var {
	s := x.Shape()
	k := len(ln.shape)
	if len(s) < k || !slices.Equal(s[len(s)-k:], ln.shape) {
		panic(fmt.Sprintf("layers: LayerNorm(%v): input shape %v does not end in %v", ln.shape, s, ln.shape))
	}
	if ln.weight == nil {
		return autograd.LayerNorm(x, k, nil, nil, ln.eps)
	}
	return autograd.LayerNorm(x, k, ln.weight.Var, ln.bias.Var, ln.eps)
}
