package layers

import (
	"errors"
	"fmt"
	"slices"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Reduction says how a loss combines its per-element values.
type Reduction int

// The reductions. The zero value, ReduceMean, is PyTorch's default.
const (
	// ReduceMean averages the per-element losses (a 0-dimensional result).
	ReduceMean Reduction = iota
	// ReduceSum adds the per-element losses (a 0-dimensional result).
	ReduceSum
	// ReduceNone returns the per-element losses unreduced.
	ReduceNone
)

// String returns PyTorch's name for the reduction ("mean", "sum", "none").
func (r Reduction) String() string {
	switch r {
	case ReduceMean:
		return "mean"
	case ReduceSum:
		return "sum"
	case ReduceNone:
		return "none"
	}
	return fmt.Sprintf("Reduction(%d)", int(r))
}

func reduce(name string, l *autograd.Var, r Reduction) *autograd.Var {
	switch r {
	case ReduceMean:
		return autograd.MeanAll(l)
	case ReduceSum:
		return autograd.SumAll(l)
	case ReduceNone:
		return l
	}
	panic(fmt.Sprintf("layers: %s: unknown reduction %v", name, r))
}

// CrossEntropyOptions tune CrossEntropy. The zero value is PyTorch's
// default: no label smoothing, mean reduction.
type CrossEntropyOptions struct {
	// LabelSmoothing e in [0, 1] mixes the one-hot target with the uniform
	// distribution: loss = (1-e)·(-logp[target]) + (e/C)·Σ_c(-logp[c]).
	LabelSmoothing float64
	// Reduction combines the per-sample losses [ReduceMean].
	Reduction Reduction
}

// CrossEntropy returns the cross-entropy between the class scores logits
// (N×C, or N×C×d1×… with the class axis 1) and the int64 class indices
// target (N, or N×d1×…), as torch.nn.CrossEntropyLoss:
// -log softmax(logits)[target] per element, reduced as opts says (the mean
// is over N·d1·…).
//
// Targets are data, but a target outside [0, C) means the model and the
// dataset disagree on the number of classes, so CrossEntropy panics with
// the bad value, its position and C, as it does for a target shape that
// does not match logits.
func CrossEntropy(logits *autograd.Var, target *tensor.Tensor, opts CrossEntropyOptions) *autograd.Var {
	if e := opts.LabelSmoothing; !(e >= 0 && e <= 1) {
		panic(fmt.Sprintf("layers: CrossEntropy: label smoothing %g outside [0, 1]", e))
	}
	if logits.Value.Rank() == 2 && opts.Reduction == ReduceMean {
		// One fused pass computes the loss and its gradient (and checks
		// the target values on the device).
		checkClassShape("CrossEntropy", logits, target)
		l, err := autograd.SoftmaxCrossEntropy(logits, target, opts.LabelSmoothing)
		if ie := (*device.IndexError)(nil); errors.As(err, &ie) {
			panic(badTargetMsg("CrossEntropy", logits, ie.Pos, ie.Value))
		}
		if err == nil {
			return l
		}
	}
	checkClassTarget("CrossEntropy", logits, target)
	return nll("CrossEntropy", autograd.LogSoftmax(logits, 1), target, opts)
}

// NLL returns the negative log-likelihood -logp[target] for log
// probabilities logp (N×C or N×C×d1×…, class axis 1) and int64 class
// indices target (N or N×d1×…), as torch.nn.NLLLoss. Bad targets panic as
// in CrossEntropy.
func NLL(logp *autograd.Var, target *tensor.Tensor, r Reduction) *autograd.Var {
	checkClassTarget("NLL", logp, target)
	return nll("NLL", logp, target, CrossEntropyOptions{Reduction: r})
}

func checkClassTarget(name string, x *autograd.Var, target *tensor.Tensor) {
	checkClassShape(name, x, target)
	c := int64(x.Value.Dim(1))
	for i, v := range target.Int64s() {
		if v < 0 || v >= c {
			panic(badTargetMsg(name, x, i, v))
		}
	}
}

// badTargetMsg describes the class index v at position i of a target that
// is out of range for x's classes.
func badTargetMsg(name string, x *autograd.Var, i int, v int64) string {
	c := x.Value.Dim(1)
	return fmt.Sprintf("layers: %s: target value %d at index %d is out of range: input %v has C = %d classes, expected 0 ≤ target < %d", name, v, i, x.Shape(), c, c)
}

// checkClassShape panics unless target has x's shape without its class
// axis 1, and type Int64.
func checkClassShape(name string, x *autograd.Var, target *tensor.Tensor) {
	if x.Value.Rank() == 2 && target.Rank() == 1 && target.DType() == device.Int64 && target.Dim(0) == x.Value.Dim(0) {
		return // the common case, without allocating
	}
	s := x.Shape()
	if len(s) < 2 {
		panic(fmt.Sprintf("layers: %s: input shape %v, expected N×C or N×C×d1×…", name, s))
	}
	want := slices.Delete(slices.Clone(s), 1, 2)
	if target.DType() != device.Int64 || !slices.Equal(target.Shape(), want) {
		panic(fmt.Sprintf("layers: %s: target %v %v does not match input %v: expected int64 %v", name, target.DType(), target.Shape(), s, want))
	}
}

func nll(name string, logp *autograd.Var, target *tensor.Tensor, opts CrossEntropyOptions) *autograd.Var {
	e := opts.LabelSmoothing
	if !(e >= 0 && e <= 1) {
		panic(fmt.Sprintf("layers: %s: label smoothing %g outside [0, 1]", name, e))
	}
	idx := target.Unsqueeze(1).To(logp.Value.Device())
	loss := autograd.Neg(autograd.Squeeze(autograd.Gather(logp, 1, idx), 1))
	if e > 0 {
		c := float64(logp.Value.Dim(1))
		smooth := autograd.Neg(autograd.Sum(logp, 1, false))
		loss = autograd.Add(autograd.MulScalar(loss, 1-e), autograd.MulScalar(smooth, e/c))
	}
	return reduce(name, loss, opts.Reduction)
}

func sameShapes(name string, a, b *autograd.Var) {
	if !slices.Equal(a.Shape(), b.Shape()) {
		panic(fmt.Sprintf("layers: %s: input shape %v and target shape %v differ", name, a.Shape(), b.Shape()))
	}
}

// MSE returns the squared error (pred - target)² reduced as r says
// (torch.nn.MSELoss). pred and target must have the same shape; target
// may require a gradient too.
func MSE(pred, target *autograd.Var, r Reduction) *autograd.Var {
	sameShapes("MSE", pred, target)
	d := autograd.Sub(pred, target)
	return reduce("MSE", autograd.Mul(d, d), r)
}

// BCEWithLogits returns the binary cross-entropy between sigmoid(logits)
// and the probabilities target (same shape), reduced as r says
// (torch.nn.BCEWithLogitsLoss). It uses the stable form
//
//	max(x, 0) - x·t + log(1 + e^(-|x|))
//
// which stays finite for logits of any size; the gradient with respect to
// x is σ(x) - t everywhere, x = 0 included.
func BCEWithLogits(logits, target *autograd.Var, r Reduction) *autograd.Var {
	sameShapes("BCEWithLogits", logits, target)
	zero := autograd.Constant(tensor.New(logits.Value.Device(), logits.Value.DType()))
	// Maximum sends the gradient of a tie to its first argument, which
	// gives max(x,0) slope 1 and |x| = max(x,-x) slope 1 at x = 0: the two
	// terms then add up to σ(0) = 1/2 there.
	pos := autograd.Maximum(logits, zero)
	abs := autograd.Maximum(logits, autograd.Neg(logits))
	softplus := autograd.Log(autograd.AddScalar(autograd.Exp(autograd.Neg(abs)), 1))
	l := autograd.Add(autograd.Sub(pos, autograd.Mul(logits, target)), softplus)
	return reduce("BCEWithLogits", l, r)
}
