package tensor

import (
	"fmt"
	"math"

	"github.com/hora-dl/hora/device"
)

// fused returns the device's fused kernels when every tensor is dense, of
// one floating-point type and on one device (nil otherwise: the caller
// composes the result from primitive operations).
func fused(ts ...*Tensor) device.FusedKernels {
	fk, ok := ts[0].kernels().(device.FusedKernels)
	if !ok {
		return nil
	}
	for _, t := range ts {
		if t == nil {
			continue
		}
		if !t.IsContiguous() || t.DType() != ts[0].DType() || t.Device() != ts[0].Device() || !t.DType().IsFloat() {
			return nil
		}
	}
	return fk
}

// channelSplit returns the sizes around axis 1 of x (N×C×…): outer N,
// channels C and inner, the product of the rest.
func channelSplit(op string, x *Tensor) (outer, channels, inner int) {
	if x.Rank() < 2 {
		panic(fmt.Sprintf("tensor: %s needs at least 2 dimensions (N×C×…), found %v", op, x.shape))
	}
	return x.shape[0], x.shape[1], device.NumElements(x.shape[2:])
}

// BiasAct returns act(x + bias) where bias (C, or nil for none) is added
// along axis 1 of x (N×C×…): a Linear layer's bias and activation (N×C),
// or a convolution's (N×C×H×W), in one pass. With inPlace the result is
// written into x itself (which must be dense) and x is returned.
func BiasAct(x, bias *Tensor, act device.Activation, inPlace bool) *Tensor {
	outer, channels, inner := channelSplit("BiasAct", x)
	if bias != nil && (bias.Rank() != 1 || bias.shape[0] != channels) {
		panic(fmt.Sprintf("tensor: BiasAct: bias %v does not match the %d channels of %v", bias.shape, channels, x.shape))
	}
	if fk := fused(x, bias); fk != nil {
		out := x
		if !inPlace {
			out = newOut(false, x.DType(), x.shape, x, bias)
		}
		var bb device.Buffer
		if bias != nil {
			bb = bias.buf
		}
		fk.BiasAct(act, out.buf, x.buf, bb, outer, channels, inner)
		return out
	}
	y := x
	if bias != nil {
		shape := make([]int, x.Rank()-1)
		for i := range shape {
			shape[i] = 1
		}
		shape[0] = channels
		y = y.Add(bias.Reshape(shape...))
	}
	y = composedAct(y, act)
	if inPlace {
		x.CopyFrom(y)
		return x
	}
	return y
}

// AddAct returns act(a + b), a residual block's sum and activation: in one
// pass for dense tensors of one shape and floating-point type on a device
// with device.AddActKernels, else composed from Add (which broadcasts) and
// the activation.
func AddAct(a, b *Tensor, act device.Activation) *Tensor {
	if ak, ok := a.kernels().(device.AddActKernels); ok && sameShape(a, b) && fused(a, b) != nil {
		out := newOut(false, a.DType(), a.shape, a, b)
		ak.AddAct(act, out.buf, a.buf, b.buf, a.Len())
		return out
	}
	return composedAct(a.Add(b), act)
}

// composedAct applies act to y with elementwise operations, for devices
// without the fused kernels.
func composedAct(y *Tensor, act device.Activation) *Tensor {
	switch act {
	case device.ActReLU:
		return y.Relu()
	case device.ActReLU6:
		return y.Relu().MinScalar(6)
	}
	return y
}

// Conv2DBiasAct returns act(Conv2D(x, w) + bias), bias (OutC) optional,
// as one kernel call on devices with a fused convolution (a depthwise
// convolution then applies the bias and activation while each output row
// is in cache); else it composes Conv2D and BiasAct. Where the device has
// a channels-last kernel for it (device.ChannelsLastConvKernels), x in
// channels-last order (IsChannelsLast) is read as it lies, and the output
// is in that order when o.ChannelsLast asks for it.
func Conv2DBiasAct(x, w, bias *Tensor, o ConvOptions, act device.Activation) *Tensor {
	sameFloat("Conv2DBiasAct", x, w)
	p := convParams("Conv2DBiasAct", x.shape, w.shape, o)
	checkConvBias("Conv2DBiasAct", bias, w, p)
	if y := convChannelsLast(x, w, bias, nil, p, o, act); y != nil {
		return y
	}
	if x.channelsLastOnly() {
		x = x.Contiguous()
	}
	ck, ok := x.kernels().(device.ConvBiasActKernels)
	if !ok || fused(x, w, bias) == nil {
		y := Conv2D(x, w, o)
		if bias == nil && act == device.ActNone {
			return y
		}
		return BiasAct(y, bias, act, true)
	}
	y := newOut(false, x.DType(), []int{p.N, p.OutC, p.OutH(), p.OutW()}, x, w)
	if p.N > 0 {
		ck.Conv2DBiasAct(p, act, y.buf, x.buf, w.buf, optBuf(bias))
	}
	return y
}

// Conv2DBiasAddAct returns act(Conv2D(x, w) + bias + res), a residual
// block's convolution, shortcut and activation (bias, OutC, optional; res
// of the convolution's output shape and x's type). On a device with
// device.ConvAddActKernels it is one kernel call, which adds res to each
// block of the output while it is in cache; else it is Conv2DBiasAct
// followed by AddAct. The values are the same either way. Channels-last
// order is handled as in Conv2DBiasAct (res is read in the output's
// order, copied to it when it is not).
func Conv2DBiasAddAct(x, w, bias, res *Tensor, o ConvOptions, act device.Activation) *Tensor {
	sameFloat("Conv2DBiasAddAct", x, w)
	p := convParams("Conv2DBiasAddAct", x.shape, w.shape, o)
	checkConvBias("Conv2DBiasAddAct", bias, w, p)
	shape := []int{p.N, p.OutC, p.OutH(), p.OutW()}
	if !sameDims(res.shape, shape) || res.DType() != x.DType() {
		panic(fmt.Sprintf("tensor: Conv2DBiasAddAct: residual %v %v does not match the convolution's output %v %v", res.DType(), res.shape, x.DType(), shape))
	}
	if y := convChannelsLast(x, w, bias, res, p, o, act); y != nil {
		return y
	}
	if x.channelsLastOnly() {
		x = x.Contiguous()
	}
	if res.channelsLastOnly() {
		res = res.Contiguous()
	}
	ck, ok := x.kernels().(device.ConvAddActKernels)
	if !ok || fused(x, w, bias, res) == nil {
		return AddAct(Conv2DBiasAct(x, w, bias, o, device.ActNone), res, act)
	}
	y := newOut(false, x.DType(), shape, x, w, res)
	if p.N > 0 {
		ck.Conv2DBiasAddAct(p, act, y.buf, x.buf, w.buf, optBuf(bias), res.buf)
	}
	return y
}

// Conv2DBiasActMaxPool returns maxpool(act(Conv2D(x, w) + bias)) with the
// pooling po, and the positions of the maxima (as MaxPool2D returns them):
// a CNN block in one operation that never stores the convolution's output
// whole when the device has a fused kernel for it (else it is composed).
// bias (OutC) may be nil.
func Conv2DBiasActMaxPool(x, w, bias *Tensor, co ConvOptions, act device.Activation, po PoolOptions) (y, argmax *Tensor) {
	sameFloat("Conv2DBiasActMaxPool", x, w)
	p := convParams("Conv2DBiasActMaxPool", x.shape, w.shape, co)
	checkConvBias("Conv2DBiasActMaxPool", bias, w, p)
	q := poolParamsDims("Conv2DBiasActMaxPool", [4]int{p.N, p.OutC, p.OutH(), p.OutW()}, po)
	fk := fused(x, w, bias)
	if fk == nil {
		return MaxPool2D(BiasAct(Conv2D(x, w, co), bias, act, true), po)
	}
	x, w = x.Contiguous(), w.Contiguous()
	y = newOut(false, x.DType(), []int{q.N, q.C, q.OutH(), q.OutW()}, x, w)
	argmax = newOut(false, device.Int64, []int{q.N, q.C, q.OutH(), q.OutW()}, x, w)
	var bb device.Buffer
	if bias != nil {
		bb = bias.buf
	}
	if p.N > 0 {
		fk.Conv2DBiasActMaxPool(p, q, act, y.buf, argmax.buf, x.buf, w.buf, bb)
	}
	return y, argmax
}

// optBuf returns t's buffer, or nil for a nil tensor.
func optBuf(t *Tensor) device.Buffer {
	if t == nil {
		return nil
	}
	return t.buf
}

// ActGrad returns dy · act'(·), the gradient through an activation, from
// the activation's output y (for ReLU: dy where y > 0, else 0; for ReLU6,
// as PyTorch's hardtanh backward: 0 where y <= 0 or y >= 6, else dy).
func ActGrad(dy, y *Tensor, act device.Activation) *Tensor {
	if !sameShape(dy, y) {
		panic(fmt.Sprintf("tensor: ActGrad: gradient %v and output %v differ", dy.shape, y.shape))
	}
	if act == device.ActNone {
		return dy
	}
	if fused(dy, y) == nil && act == device.ActReLU6 {
		dy, y = dy.Contiguous(), y.Contiguous()
	}
	if fk := fused(dy, y); fk != nil {
		out := newOut(false, dy.DType(), dy.shape, dy, y)
		fk.ActGrad(act, out.buf, dy.buf, y.buf, dy.Len())
		return out
	}
	if act == device.ActReLU6 {
		// 0 < y < 6 (a NaN y gets no gradient here, unlike the fused kernel).
		return dy.Mul(y.GtScalar(0)).Mul(y.MulScalar(-1).AddScalar(6).GtScalar(0))
	}
	return dy.Mul(y.GtScalar(0))
}

// BiasGrad returns the gradient of a bias added along axis 1 of dy
// (N×C×…): the sum over every other axis, shape C.
func BiasGrad(dy *Tensor) *Tensor {
	outer, channels, inner := channelSplit("BiasGrad", dy)
	if fk := fused(dy); fk != nil {
		out := newOut(false, dy.DType(), []int{channels}, dy)
		fk.BiasGrad(out.buf, dy.buf, outer, channels, inner)
		return out
	}
	axes := []int{0}
	for i := 2; i < dy.Rank(); i++ {
		axes = append(axes, i)
	}
	return dy.SumAxes(axes, false)
}

// SoftmaxCrossEntropy returns the mean over rows of the cross-entropy
// between softmax(logits) (rows×classes) and the Int64 labels (rows),
// smoothed as PyTorch's label_smoothing, as a 0-dimensional tensor, and the
// gradient of that mean with respect to logits, computed in the same pass.
// The error wraps device.ErrNotImplemented when the device has no fused
// kernel for it (callers then compose log-softmax and NLL), and is a
// *device.IndexError for a label outside [0, classes).
func SoftmaxCrossEntropy(logits, labels *Tensor, smoothing float64) (loss, grad *Tensor, err error) {
	if logits.Rank() != 2 || labels.Rank() != 1 || labels.shape[0] != logits.shape[0] {
		panic(fmt.Sprintf("tensor: SoftmaxCrossEntropy: logits %v and labels %v: want N×C and N", logits.shape, labels.shape))
	}
	checkIndexTensor("SoftmaxCrossEntropy", labels)
	fk := fused(logits)
	if fk == nil || !labels.IsContiguous() || labels.Device() != logits.Device() || logits.shape[0] == 0 {
		return nil, nil, fmt.Errorf("tensor: SoftmaxCrossEntropy of %v on %s: %w", logits.shape, logits.Device().Name(), device.ErrNotImplemented)
	}
	loss = newOut(false, logits.DType(), nil, logits)
	grad = newOut(false, logits.DType(), logits.shape, logits)
	if err := fk.SoftmaxCrossEntropy(loss.buf, grad.buf, logits.buf, labels.buf, logits.shape[0], logits.shape[1], smoothing); err != nil {
		return nil, nil, err
	}
	return loss, grad, nil
}

func sameShape(a, b *Tensor) bool { return sameDims(a.shape, b.shape) }

// SameShape reports whether t and u have the same shape.
func (t *Tensor) SameShape(u *Tensor) bool { return sameDims(t.shape, u.shape) }

// HasShape reports whether t has the given shape.
func (t *Tensor) HasShape(shape []int) bool { return sameDims(t.shape, shape) }

// GELU returns x·Φ(x) (Φ the standard normal CDF, erf form) in one pass on
// a device with device.GELUKernels, else composed from elementwise
// operations.
func GELU(x *Tensor) *Tensor {
	if gk, ok := x.kernels().(device.GELUKernels); ok && fused(x) != nil {
		out := newOut(false, x.DType(), x.shape, x)
		gk.GELU(out.buf, x.buf, x.Len())
		return out
	}
	return x.Mul(geluCDF(x))
}

// GELUGrad returns dy·(Φ(x) + x·φ(x)), the gradient of GELU at x (φ the
// standard normal density), in one pass where the device has
// device.GELUKernels.
func GELUGrad(dy, x *Tensor) *Tensor {
	if !sameShape(dy, x) {
		panic(fmt.Sprintf("tensor: GELUGrad: gradient %v and input %v differ", dy.shape, x.shape))
	}
	if gk, ok := x.kernels().(device.GELUKernels); ok && fused(dy, x) != nil {
		out := newOut(false, x.DType(), x.shape, dy, x)
		gk.GELUGrad(out.buf, dy.buf, x.buf, x.Len())
		return out
	}
	// φ(x) = e^(-x²/2)/√(2π)
	pdf := x.Mul(x).MulScalar(-0.5).Exp().MulScalar(1 / math.Sqrt(2*math.Pi))
	return dy.Mul(geluCDF(x).Add(x.Mul(pdf)))
}

// geluCDF is Φ(x) = (1 + erf(x/√2))/2.
func geluCDF(x *Tensor) *Tensor {
	return x.MulScalar(1 / math.Sqrt2).Erf().AddScalar(1).MulScalar(0.5)
}

// checkConvBias panics unless bias is nil or a vector of p.OutC values, the
// bias of convolution op with weight w.
func checkConvBias(op string, bias, w *Tensor, p device.ConvParams) {
	if bias != nil && (bias.Rank() != 1 || bias.shape[0] != p.OutC) {
		panic(fmt.Sprintf("tensor: %s: bias %v does not match weight %v", op, bias.shape, w.shape))
	}
}
