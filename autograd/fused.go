package autograd

import (
	"fmt"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Linear returns x×wᵀ + b for x (…×in), w (out×in) and an optional bias b
// (out), as torch.nn.functional.linear.
func Linear(x, w, b *Var) *Var { return LinearAct(x, w, b, device.ActNone) }

// LinearAct returns act(x×wᵀ + b): a Linear layer and the activation after
// it as one operation, whose bias and activation take one pass over the
// output forward and one backward.
func LinearAct(x, w, b *Var, act device.Activation) *Var {
	x2 := x.Value
	var in []int // x's shape when it is not a matrix
	if x2.Rank() != 2 {
		in = x.Value.Shape()
		x2 = x2.Reshape(-1, in[len(in)-1])
	}
	y := tensor.MatMul(x2, w.Value.T())
	inputs := [3]*Var{x, w, b}
	var bv *tensor.Tensor
	if b != nil {
		bv = b.Value
	}
	if b != nil || act != device.ActNone {
		y = tensor.BiasAct(y, bv, act, true)
	}
	out := y
	if in != nil {
		out = y.Reshape(append(in[:len(in)-1:len(in)-1], w.Value.Dim(0))...)
	}
	return describeOp(recordInto(out, func(g *tensor.Tensor, needs []bool, grads []*tensor.Tensor) {
		g2 := g
		if in != nil {
			g2 = g.Reshape(-1, g.Dim(-1))
		}
		g2 = tensor.ActGrad(g2, y, act)
		if needs[0] {
			dx := tensor.MatMul(g2, w.Value)
			if in != nil {
				dx = dx.Reshape(in...)
			}
			grads[0] = dx
		}
		if needs[1] {
			grads[1] = tensor.MatMul(g2.T(), x2)
		}
		if b != nil && needs[2] {
			grads[2] = tensor.BiasGrad(g2)
		}
	}, operands(inputs)...), "Linear", LinearAttrs{act})
}

// Conv2D returns the 2-D cross-correlation of x (N×C×H×W) with w
// (OutC×C/groups×KH×KW) plus an optional bias b (OutC).
func Conv2D(x, w, b *Var, o tensor.ConvOptions) *Var {
	return Conv2DAct(x, w, b, o, device.ActNone)
}

// Conv2DAct returns act(Conv2D(x, w, b)) as one operation: the bias and
// activation take one pass over the output forward and one backward.
func Conv2DAct(x, w, b *Var, o tensor.ConvOptions, act device.Activation) *Var {
	inputs := [3]*Var{x, w, b}
	var bv *tensor.Tensor
	if b != nil {
		bv = b.Value
	}
	y := tensor.Conv2DBiasAct(x.Value, w.Value, bv, o, act)
	if v, ok := untaped(y, operands(inputs)...); ok {
		return v
	}
	return describeOp(recordInto(y, func(g *tensor.Tensor, needs []bool, grads []*tensor.Tensor) {
		convGrads(tensor.ActGrad(g, y, act), x, w, b, o, needs, grads)
	}, operands(inputs)...), "Conv2D", ConvAttrs{Conv: o, Act: act})
}

// Conv2DAddAct returns act(Conv2D(x, w, b) + r), a residual block's
// convolution, shortcut r (of the convolution's output shape) and
// activation as one operation: on a device with device.ConvAddActKernels
// the shortcut is added to each block of the convolution's output while
// it is in cache (see tensor.Conv2DBiasAddAct). Its value and gradients
// are those of Conv2DAct without activation followed by AddAct.
func Conv2DAddAct(x, w, b, r *Var, o tensor.ConvOptions, act device.Activation) *Var {
	var bv *tensor.Tensor
	inputs := []*Var{x, w}
	if b != nil {
		bv = b.Value
		inputs = append(inputs, b)
	}
	inputs = append(inputs, r)
	y := tensor.Conv2DBiasAddAct(x.Value, w.Value, bv, r.Value, o, act)
	if v, ok := untaped(y, inputs...); ok {
		return v
	}
	return describeOp(recordInto(y, func(g *tensor.Tensor, needs []bool, grads []*tensor.Tensor) {
		g = tensor.ActGrad(g, y, act)
		convGrads(g, x, w, b, o, needs, grads)
		if last := len(inputs) - 1; needs[last] {
			grads[last] = g
		}
	}, inputs...), "Conv2D", ConvAttrs{Conv: o, Act: act, Residual: true})
}

// convGrads writes the gradients of a convolution's input, weight and bias
// (b may be nil) for the gradient g of its output.
func convGrads(g *tensor.Tensor, x, w, b *Var, o tensor.ConvOptions, needs []bool, grads []*tensor.Tensor) {
	if needs[0] {
		grads[0] = tensor.Conv2DGradInput(g, w.Value, x.Value.Dims(), o)
	}
	if needs[1] {
		grads[1] = tensor.Conv2DGradWeight(g, x.Value, w.Value.Dims(), o)
	}
	if b != nil && needs[2] {
		grads[2] = tensor.BiasGrad(g)
	}
}

// SoftmaxCrossEntropy returns the mean over rows of the cross-entropy of
// softmax(logits) (N×C) against the Int64 labels (N), smoothed as
// PyTorch's label_smoothing, computing the gradient in the same pass. The
// errors are tensor.SoftmaxCrossEntropy's: one wrapping
// device.ErrNotImplemented when the device has no fused kernel for it
// (callers then compose LogSoftmax and a negative log-likelihood), a
// *device.IndexError for a label outside [0, C).
func SoftmaxCrossEntropy(logits *Var, labels *tensor.Tensor, smoothing float64) (*Var, error) {
	loss, grad, err := tensor.SoftmaxCrossEntropy(logits.Value, labels, smoothing)
	if err != nil {
		return nil, err
	}
	return describeOp(recordInto(loss, func(g *tensor.Tensor, _ []bool, grads []*tensor.Tensor) {
		if g.Len() == 1 && g.Item() == 1 {
			grads[0] = grad
			return
		}
		grads[0] = grad.Mul(g)
	}, logits), "SoftmaxCrossEntropy", IndexAttrs{Axis: -1, Index: labels}), nil
}

// operands returns x, w and, when there is one, the bias b.
func operands(in [3]*Var) []*Var {
	if in[2] == nil {
		return in[:2]
	}
	return in[:]
}

// Conv2DActMaxPool returns MaxPool2D(act(Conv2D(x, w, b)), po) as one
// operation, for act ReLU, ReLU6 or none: a CNN block whose convolution output is
// never stored whole on devices with a fused kernel. Its gradients are
// those of the three operations it replaces.
func Conv2DActMaxPool(x, w, b *Var, co tensor.ConvOptions, act device.Activation, po tensor.PoolOptions) *Var {
	if act != device.ActNone && act != device.ActReLU && act != device.ActReLU6 {
		panic(fmt.Sprintf("autograd: Conv2DActMaxPool supports ReLU, ReLU6 or no activation, not %v", act))
	}
	var bv *tensor.Tensor
	if b != nil {
		bv = b.Value
	}
	y, argmax := tensor.Conv2DBiasActMaxPool(x.Value, w.Value, bv, co, act, po)
	n, oc := x.Value.Dim(0), w.Value.Dim(0)
	convShape := []int{n, oc, 0, 0} // the convolution's output, for the pooling gradient
	convShape[2], convShape[3] = tensor.ConvOutSize(x.Value, w.Value, co)
	return describeOp(recordInto(y, func(g *tensor.Tensor, needs []bool, grads []*tensor.Tensor) {
		// ReLU passes a gradient where its output, the pooled maximum, is
		// positive; max pooling routes it to the maximum.
		convGrads(tensor.MaxPool2DGrad(tensor.ActGrad(g, y, act), argmax, convShape, po), x, w, b, co, needs, grads)
	}, operands([3]*Var{x, w, b})...), "Conv2DMaxPool", ConvAttrs{Conv: co, Act: act, Pool: po})
}

// BatchNorm normalises x (N×C×…) per channel with the statistics of the
// batch and applies the optional affine weight and bias (C, both nil or
// both set):
//
//	y = (x - mean) / √(variance + eps) · weight + bias
//
// It also returns the batch's per-channel mean and biased variance (C),
// for running statistics. On a device with device.BatchNormKernels it is
// one operation whose forward and backward passes are fused kernels;
// elsewhere, and for an empty x, it is composed of MeanAxes, Sub, Mul and
// friends, with the same values and gradients.
func BatchNorm(x, weight, bias *Var, eps float64) (y *Var, mean, variance *tensor.Tensor) {
	return BatchNormAct(x, weight, bias, eps, device.ActNone)
}

// BatchNormAct is BatchNorm followed by the activation act (ReLU or
// ReLU6), as one operation on a device with device.BatchNormActKernels:
// the activation is applied while the normalised values are in cache, and
// its gradient taken with the normalisation's. Elsewhere it is BatchNorm,
// then Relu or ReLU6. The values and gradients are the same either way.
func BatchNormAct(x, weight, bias *Var, eps float64, act device.Activation) (y *Var, mean, variance *tensor.Tensor) {
	s := x.Value.Shape()
	if len(s) < 2 || (weight == nil) != (bias == nil) ||
		(weight != nil && (!weight.Value.HasShape(s[1:2]) || !bias.Value.HasShape(s[1:2]))) {
		var ws, bs []int
		if weight != nil {
			ws = weight.Value.Shape()
		}
		if bias != nil {
			bs = bias.Value.Shape()
		}
		panic(fmt.Sprintf("autograd: BatchNorm: input %v (N×C×…) takes a weight and a bias of shape [C], or neither; found %v and %v", s, ws, bs))
	}
	if k := batchNormKernels(x, weight, bias); k != nil {
		if ak, ok := k.(device.BatchNormActKernels); ok || act == device.ActNone {
			return batchNormFused(k, ak, x, weight, bias, eps, act)
		}
		y, mean, variance = batchNormFused(k, nil, x, weight, bias, eps, device.ActNone)
		return ActivationOf(y, act), mean, variance
	}
	y, mean, variance = batchNormComposed(x, weight, bias, eps)
	return ActivationOf(y, act), mean, variance
}

// ActivationOf applies act to y as its own operation: Relu for ReLU,
// ReLU6 for ReLU6, y itself for ActNone.
func ActivationOf(y *Var, act device.Activation) *Var {
	switch act {
	case device.ActReLU:
		return Relu(y)
	case device.ActReLU6:
		return ReLU6(y)
	}
	return y
}

// batchNormKernels returns the batch normalisation kernels of x's device
// when it has them and they apply: x is not empty, and x, weight and bias
// share one floating-point type and the device. It returns nil otherwise.
func batchNormKernels(x, weight, bias *Var) device.BatchNormKernels {
	k, ok := x.Value.Device().Kernels().(device.BatchNormKernels)
	dt := x.Value.DType()
	if !ok || !dt.IsFloat() || x.Value.Len() == 0 {
		return nil
	}
	if weight != nil {
		for _, p := range []*tensor.Tensor{weight.Value, bias.Value} {
			if p.DType() != dt || p.Device() != x.Value.Device() {
				return nil
			}
		}
	}
	return k
}

// batchNormFused is BatchNormAct computed by the device's kernels k (ak
// when act is not ActNone), forward and backward.
func batchNormFused(k device.BatchNormKernels, ak device.BatchNormActKernels, x, weight, bias *Var, eps float64, act device.Activation) (*Var, *tensor.Tensor, *tensor.Tensor) {
	xv := x.Value.Contiguous()
	s, dt := xv.Shape(), xv.DType()
	outer, c, inner := s[0], s[1], device.NumElements(s[2:])
	in := []*Var{x, weight, bias}
	var wv, bv *tensor.Tensor
	if weight == nil {
		in = in[:1]
	} else {
		wv, bv = weight.Value.Contiguous(), bias.Value.Contiguous()
	}
	y := tensor.Empty(dt, s, xv)
	mean, variance := tensor.Empty(dt, s[1:2], xv), tensor.Empty(dt, s[1:2], xv)
	if act == device.ActNone {
		k.BatchNorm(y.Buffer(), mean.Buffer(), variance.Buffer(), xv.Buffer(), buffer(wv), buffer(bv), outer, c, inner, eps)
	} else {
		ak.BatchNormAct(act, y.Buffer(), mean.Buffer(), variance.Buffer(), xv.Buffer(), buffer(wv), buffer(bv), outer, c, inner, eps)
	}
	out := recordInto(y, func(g *tensor.Tensor, needs []bool, grads []*tensor.Tensor) {
		g = g.Contiguous()
		dx := tensor.Empty(dt, s, g, xv)
		var dw, db *tensor.Tensor
		if weight != nil && (needs[1] || needs[2]) {
			dw, db = tensor.Empty(dt, s[1:2], g, xv), tensor.Empty(dt, s[1:2], g, xv)
		}
		if act == device.ActNone {
			k.BatchNormGrad(dx.Buffer(), buffer(dw), buffer(db), g.Buffer(), xv.Buffer(), mean.Buffer(), variance.Buffer(), buffer(wv),
				outer, c, inner, eps)
		} else {
			ak.BatchNormActGrad(act, dx.Buffer(), buffer(dw), buffer(db), g.Buffer(), y.Buffer(), xv.Buffer(), mean.Buffer(), variance.Buffer(), buffer(wv),
				outer, c, inner, eps)
		}
		grads[0] = dx
		if dw != nil {
			grads[1], grads[2] = dw, db
		}
	}, in...)
	return describeOp(out, "BatchNorm", NormAttrs{Eps: eps, Act: act}), mean, variance
}

// buffer returns t's buffer, or nil for a nil tensor.
func buffer(t *tensor.Tensor) device.Buffer {
	if t == nil {
		return nil
	}
	return t.Buffer()
}

// batchNormComposed is BatchNorm composed of recorded operations, whose
// gradients are those of the normalisation.
func batchNormComposed(x, weight, bias *Var, eps float64) (*Var, *tensor.Tensor, *tensor.Tensor) {
	s := x.Value.Shape()
	axes, bshape := []int{0}, []int{1, s[1]} // every axis but the channels; a channel vector's shape
	for i := 2; i < len(s); i++ {
		axes, bshape = append(axes, i), append(bshape, 1)
	}
	mean := MeanAxes(x, axes, true)
	d := Sub(x, mean)
	variance := MeanAxes(Mul(d, d), axes, true)
	y := Div(d, Sqrt(AddScalar(variance, eps)))
	if weight != nil {
		y = Add(Mul(y, Reshape(weight, bshape...)), Reshape(bias, bshape...))
	}
	return y, mean.Value.Reshape(s[1]), variance.Value.Reshape(s[1])
}

// BatchNormInference normalises x (N×C×…) per channel with given
// statistics, mean and variance (C, constants such as BatchNorm's running
// statistics), and applies the optional affine weight and bias (C):
//
//	y = (x - mean) / √(variance + eps) · weight + bias
//
// This is batch normalisation in evaluation mode, recorded as one
// operation (ONNX BatchNormalization); gradients flow to x, weight and
// bias. weight and bias are both nil or both set.
func BatchNormInference(x, weight, bias *Var, mean, variance *tensor.Tensor, eps float64) *Var {
	s := x.Value.Shape()
	if len(s) < 2 || mean.Len() != s[1] || variance.Len() != s[1] || (weight == nil) != (bias == nil) ||
		(weight != nil && (weight.Value.Len() != s[1] || bias.Value.Len() != s[1])) {
		ws, bs := []int(nil), []int(nil)
		if weight != nil {
			ws = weight.Value.Shape()
		}
		if bias != nil {
			bs = bias.Value.Shape()
		}
		panic(fmt.Sprintf("autograd: BatchNormInference: input %v needs per-channel mean, variance, weight and bias; found %v, %v, %v, %v",
			s, mean.Shape(), variance.Shape(), ws, bs))
	}
	bshape := make([]int, len(s))
	for i := range bshape {
		bshape[i] = 1
	}
	bshape[1] = s[1]
	axes := make([]int, 0, len(s)-1) // every axis but the channels
	for i := range s {
		if i != 1 {
			axes = append(axes, i)
		}
	}
	rm := mean.Reshape(bshape...)
	rs := variance.AddScalar(eps).Sqrt().Reshape(bshape...)
	xhat := x.Value.Sub(rm).Div(rs)
	y := xhat
	in, n := [3]*Var{x, weight, bias}, 1
	var w *tensor.Tensor
	if weight != nil {
		n = 3
		w = weight.Value.Reshape(bshape...)
		y = xhat.Mul(w).Add(bias.Value.Reshape(bshape...))
	}
	return describeOp(recordInto(y, func(g *tensor.Tensor, needs []bool, grads []*tensor.Tensor) {
		if needs[0] {
			if w != nil {
				grads[0] = g.Mul(w).Div(rs)
			} else {
				grads[0] = g.Div(rs)
			}
		}
		if n == 3 && needs[1] {
			grads[1] = g.Mul(xhat).SumAxes(axes, false).Reshape(weight.Value.Shape()...)
		}
		if n == 3 && needs[2] {
			grads[2] = g.SumAxes(axes, false).Reshape(bias.Value.Shape()...)
		}
	}, in[:n]...), "BatchNormInference", NormAttrs{Eps: eps, Mean: mean, Variance: variance})
}

// LayerNorm normalises x over its last k axes: (x - mean)/√(variance+eps),
// the mean and biased variance taken over those axes, then times weight
// plus bias (both of the shape of those axes, or both nil), as
// torch.nn.LayerNorm. On a device with device.LayerNormKernels and with
// an affine transform it is one operation, a few passes over memory each
// way (recorded as LayerNorm, ONNX LayerNormalization); otherwise it is
// composed of recorded elementwise operations and reductions.
func LayerNorm(x *Var, k int, weight, bias *Var, eps float64) *Var {
	s := x.Value.Shape()
	if k < 1 || k > len(s) || (weight == nil) != (bias == nil) ||
		(weight != nil && (!weight.Value.HasShape(s[len(s)-k:]) || !bias.Value.HasShape(s[len(s)-k:]))) {
		var ws, bs []int
		if weight != nil {
			ws = weight.Value.Shape()
		}
		if bias != nil {
			bs = bias.Value.Shape()
		}
		panic(fmt.Sprintf("autograd: LayerNorm: input %v over its last %d axes takes a weight and a bias of shape %v, or neither; found %v and %v",
			s, k, s[len(s)-max(0, min(k, len(s))):], ws, bs))
	}
	if lk := layerNormKernels(x, weight, bias); lk != nil {
		return layerNormFused(lk, x, k, weight, bias, eps)
	}
	axes := make([]int, k)
	for i := range axes {
		axes[i] = len(s) - k + i
	}
	mean := MeanAxes(x, axes, true)
	d := Sub(x, mean)
	v := MeanAxes(Mul(d, d), axes, true)
	y := Div(d, Sqrt(AddScalar(v, eps)))
	if weight == nil {
		return y
	}
	return Add(Mul(y, weight), bias)
}

// layerNormKernels returns the layer normalisation kernels of x's device
// when it has them and they apply: x is not empty, there is an affine
// transform, and x, weight and bias share one floating-point type and the
// device. It returns nil otherwise.
func layerNormKernels(x, weight, bias *Var) device.LayerNormKernels {
	k, ok := x.Value.Device().Kernels().(device.LayerNormKernels)
	dt := x.Value.DType()
	if !ok || !dt.IsFloat() || x.Value.Len() == 0 || weight == nil {
		return nil
	}
	for _, p := range []*tensor.Tensor{weight.Value, bias.Value} {
		if p.DType() != dt || p.Device() != x.Value.Device() {
			return nil
		}
	}
	return k
}

// layerNormFused is LayerNorm computed by the device's kernels lk, forward
// and backward.
func layerNormFused(lk device.LayerNormKernels, x *Var, k int, weight, bias *Var, eps float64) *Var {
	xv := x.Value.Contiguous()
	s, dt := xv.Shape(), xv.DType()
	cols := device.NumElements(s[len(s)-k:])
	rows := xv.Len() / cols
	wv, bv := weight.Value.Contiguous(), bias.Value.Contiguous()
	y := tensor.Empty(dt, s, xv)
	mean, rstd := tensor.Empty(dt, []int{rows}, xv), tensor.Empty(dt, []int{rows}, xv)
	lk.LayerNorm(y.Buffer(), mean.Buffer(), rstd.Buffer(), xv.Buffer(), wv.Buffer(), bv.Buffer(), rows, cols, eps)
	out := recordInto(y, func(g *tensor.Tensor, needs []bool, grads []*tensor.Tensor) {
		g = g.Contiguous()
		dx := tensor.Empty(dt, s, g, xv)
		var dw, db *tensor.Tensor
		if needs[1] || needs[2] {
			dw, db = tensor.Empty(dt, wv.Shape(), g, xv), tensor.Empty(dt, wv.Shape(), g, xv)
		}
		lk.LayerNormGrad(dx.Buffer(), buffer(dw), buffer(db), g.Buffer(), xv.Buffer(), mean.Buffer(), rstd.Buffer(), wv.Buffer(), rows, cols)
		grads[0] = dx
		if dw != nil {
			grads[1], grads[2] = dw, db
		}
	}, x, weight, bias)
	return describeOp(out, "LayerNorm", LayerNormAttrs{Axis: len(s) - k, Eps: eps})
}
