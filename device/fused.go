package device

import "fmt"

// Activation names a pointwise non-linearity that fused kernels apply.
type Activation int

// The activations fused kernels know.
const (
	ActNone  Activation = iota // identity
	ActReLU                    // max(x, 0)
	ActReLU6                   // min(max(x, 0), 6), as torch.nn.ReLU6 (ONNX Clip(0, 6))
)

// String returns the activation's name ("none", "relu", "relu6").
func (a Activation) String() string {
	switch a {
	case ActNone:
		return "none"
	case ActReLU:
		return "relu"
	case ActReLU6:
		return "relu6"
	}
	return fmt.Sprintf("Activation(%d)", int(a))
}

// ConvBiasActKernels is an optional kernel of a device whose Kernels()
// value implements it: a convolution with its bias and activation in one
// call, so a kernel that computes the convolution directly (a depthwise
// one) applies them while its output is still in cache. Callers find it by
// type assertion and otherwise compose Conv2D and FusedKernels.BiasAct.
type ConvBiasActKernels interface {
	// Conv2DBiasAct computes y = act(conv(x, w) + bias) for the
	// convolution p; bias (OutC) may be nil.
	Conv2DBiasAct(p ConvParams, act Activation, y, x, w, bias Buffer)
}

// ConvAddActKernels is an optional kernel of a device whose Kernels()
// value implements it: a convolution, its bias, a residual and the
// activation in one call, a residual block's act(conv(x) + shortcut). The
// residual is added to each block of the convolution's output while that
// block is still in cache, instead of in a pass of its own over memory.
// Callers find it by type assertion and otherwise compose
// ConvBiasActKernels and AddActKernels.
type ConvAddActKernels interface {
	// Conv2DBiasAddAct computes y = act((conv(x, w) + bias) + res) for
	// the convolution p: bias (OutC) may be nil, res is dense and has
	// y's shape (N×OutC×OH×OW) and type. The sums are rounded in that
	// order, so y has the bits of Conv2DBiasAct with no activation
	// followed by AddAct.
	Conv2DBiasAddAct(p ConvParams, act Activation, y, x, w, bias, res Buffer)
}

// ChannelsLastConvKernels is an optional kernel of a device whose
// Kernels() value implements it: convolutions whose input or output is in
// channels-last order, an N×C×H×W image stored as a dense N×H×W×C array
// (PyTorch's channels_last memory format). In that order a depthwise
// convolution is one vector multiply-add per tap for 16 channels at once,
// with no masks at the plane's edges, and a 1×1 convolution is a product
// whose rows are the positions, which fills a GEMM's tiles on small
// planes. A chain of such layers (MobileNet's blocks) keeps the order
// from one layer to the next. Callers find it by type assertion, ask
// ChannelsLastConv first and otherwise use the other convolution kernels
// on contiguous N×C×H×W buffers.
type ChannelsLastConvKernels interface {
	// ChannelsLastConv reports whether Conv2DChannelsLast computes the
	// convolution p with the weights w (their buffer, OutC×C/groups×KH×KW,
	// which gives the element type) for an input in channels-last order
	// (inCL) or not, into an output in channels-last order (outCL) or
	// not. It is false when neither is.
	ChannelsLastConv(p ConvParams, w Buffer, inCL, outCL bool) bool

	// Conv2DChannelsLast computes y = act((conv(x, w) + bias) + res) for
	// a convolution ChannelsLastConv(p, w, inCL, outCL) takes: x is in
	// channels-last order when inCL, else N×C×H×W; y and res (nil: none)
	// are in channels-last order when outCL, else N×OutC×OH×OW; bias
	// (OutC) may be nil. The values are those of Conv2DBiasAddAct up to
	// the rounding of the sums' order.
	Conv2DChannelsLast(p ConvParams, inCL, outCL bool, act Activation, y, x, w, bias, res Buffer)
}

// ChannelsLastPoolKernels is an optional kernel of a device whose
// Kernels() value implements it: the global average pooling of images in
// channels-last order (see ChannelsLastConvKernels), the mean of each
// channel over an image's positions read as they lie, one row of channels
// after another, rather than through a copy into N×C×H×W planes.
type ChannelsLastPoolKernels interface {
	// GlobalAvgPoolChannelsLast sets y[i·channels+c] to the mean of
	// x[(i·positions+p)·channels+c] over p < positions, for images
	// i < n (x dense, n×positions×channels; y n×channels; one
	// floating-point type; positions > 0). A float32 sum adds the rows
	// in float32, in an order of the device's choosing.
	GlobalAvgPoolChannelsLast(y, x Buffer, n, positions, channels int)
}

// AddActKernels is an optional kernel of a device whose Kernels() value
// implements it: the sum of two tensors of one shape and its activation in
// one pass, a residual block's act(branch + shortcut). Callers find it by
// type assertion and otherwise compose Binary(Add) and the activation.
type AddActKernels interface {
	// AddAct computes y[i] = act(a[i] + b[i]) for i < n over dense
	// buffers of one floating-point type; y may be a or b.
	AddAct(act Activation, y, a, b Buffer, n int)
}

// MaxPoolValuesKernels is an optional kernel of a device whose Kernels()
// value implements it: max pooling for inference, which writes the maxima
// of MaxPool2D but not their positions (no gradient will need them), so it
// can take the maximum without tracking where it is. Callers find it by
// type assertion and otherwise call MaxPool2D.
type MaxPoolValuesKernels interface {
	// MaxPool2DValues writes to y the maxima of the windows of x that
	// MaxPool2D(p, y, argmax, x) writes (a NaN in a window gives a NaN; of
	// a -0 and a +0 either may be kept).
	MaxPool2DValues(p PoolParams, y, x Buffer)
}

// FusedKernels is an optional set of fused kernels. A device whose
// Kernels() value implements it runs training's hot spots in fewer passes
// over memory; callers find it by type assertion and otherwise compose the
// same result from the primitive Kernels. All buffers are dense and of one
// floating-point type (labels are Int64).
type FusedKernels interface {
	// BiasAct computes y[o,c,i] = act(x[o,c,i] + bias[c]) for o < outer,
	// c < channels, i < inner (a Linear layer's output has inner 1, a
	// convolution's inner = OH*OW). bias may be nil (no bias); y may be x.
	BiasAct(act Activation, y, x, bias Buffer, outer, channels, inner int)

	// Conv2DBiasActMaxPool computes y = maxpool(act(conv(x, w) + bias)):
	// the convolution p, the bias (OutC, or nil) and activation, then the
	// max pooling q of its N×OutC×OH×OW output (q's N, C, H, W are those),
	// writing only the pooled y and the positions of the maxima argmax (as
	// MaxPool2D does). The convolution's output is never stored whole.
	Conv2DBiasActMaxPool(p ConvParams, q PoolParams, act Activation, y, argmax, x, w, bias Buffer)

	// ActGrad computes dx = dy * act'(·) from the activation's output y
	// (for ReLU: dy where y > 0, else 0; for ReLU6, as PyTorch's hardtanh
	// backward: 0 where y <= 0 or y >= 6, else dy). dx may be dy.
	ActGrad(act Activation, dx, dy, y Buffer, n int)

	// BiasGrad computes db[c] = Σ_{o,i} dy[o,c,i] (overwriting db).
	BiasGrad(db, dy Buffer, outer, channels, inner int)

	// SoftmaxCrossEntropy computes, for rows×classes logits and Int64
	// labels, the mean over rows of the cross-entropy between the softmax
	// of each row and its label smoothed by smoothing (PyTorch's
	// label_smoothing), into the one-element buffer loss, and the gradient
	// of that mean with respect to the logits into grad. A label outside
	// [0, classes) is reported as an *IndexError (nothing is computed).
	SoftmaxCrossEntropy(loss, grad, logits, labels Buffer, rows, classes int, smoothing float64) error
}

// BatchNormKernels is an optional kernel set of a device whose Kernels()
// value implements it: batch normalisation with the batch's statistics,
// forward and backward, each in a few passes over memory. autograd's
// BatchNorm finds it by type assertion and otherwise composes the
// normalisation from elementwise operations and reductions. All buffers
// are dense and of one floating-point type; outer·inner is at least 1.
type BatchNormKernels interface {
	// BatchNorm normalises x (outer×channels×inner) per channel with the
	// batch's statistics: y = (x-mean)/sqrt(variance+eps)·weight + bias
	// (weight and bias may be nil), writing the per-channel mean and the
	// biased variance.
	BatchNorm(y, mean, variance, x, weight, bias Buffer, outer, channels, inner int, eps float64)

	// BatchNormGrad computes the gradients of BatchNorm from the output
	// gradient dy: dx, and dweight and dbias unless nil. weight may be nil
	// (no affine transform).
	BatchNormGrad(dx, dweight, dbias, dy, x, mean, variance, weight Buffer, outer, channels, inner int, eps float64)
}

// BatchNormActKernels is an optional kernel set of a device whose
// Kernels() value implements it: BatchNorm followed by an activation, the
// activation applied while the normalised values are in cache and its
// gradient taken with BatchNorm's (BatchNorm → ReLU in ResNets, → ReLU6 in
// MobileNets). The results are those of BatchNorm, then the activation
// (FusedKernels.BiasAct with no bias), and backward ActGrad, then
// BatchNormGrad, bit for bit.
type BatchNormActKernels interface {
	// BatchNormAct is BatchNorm with y = act(normalised x).
	BatchNormAct(act Activation, y, mean, variance, x, weight, bias Buffer, outer, channels, inner int, eps float64)
	// BatchNormActGrad is BatchNormGrad for dy, the gradient of
	// BatchNormAct's output y.
	BatchNormActGrad(act Activation, dx, dweight, dbias, dy, y, x, mean, variance, weight Buffer, outer, channels, inner int, eps float64)
}

// LayerNormKernels is an optional kernel set of a device whose Kernels()
// value implements it: layer normalisation of each row of a rows×cols
// matrix (the last axes of a tensor), forward and backward, each in a few
// passes over memory. autograd's LayerNorm finds it by type assertion and
// otherwise composes the normalisation from elementwise operations and
// reductions. All buffers are dense and of one floating-point type.
type LayerNormKernels interface {
	// LayerNorm sets y = (x-mean)·rstd·weight + bias for each row of x,
	// rstd = 1/√(variance+eps) with the row's biased variance, and writes
	// each row's mean and rstd (rows elements each). weight and bias (cols
	// elements) are both nil or both set.
	LayerNorm(y, mean, rstd, x, weight, bias Buffer, rows, cols int, eps float64)

	// LayerNormGrad computes, from the output gradient dy and the mean and
	// rstd LayerNorm wrote, the input gradient dx, and unless nil
	// dweight = Σ_rows dy·x̂ and dbias = Σ_rows dy (x̂ = (x-mean)·rstd).
	// weight may be nil (no affine transform).
	LayerNormGrad(dx, dweight, dbias, dy, x, mean, rstd, weight Buffer, rows, cols int)
}

// SoftmaxKernels is an optional kernel set of a device whose Kernels()
// value implements it: the softmax of each row of a rows×cols matrix (a
// tensor's last axis) and its gradient, each in a few passes per row.
// Tensor.Softmax finds it by type assertion and otherwise composes the
// softmax from reductions and elementwise operations. Buffers are dense
// and of one floating-point type.
type SoftmaxKernels interface {
	// Softmax sets each row of y to e^(x-max)/Σ e^(x-max) of that row of
	// x, max the row's largest element (NaN in a row gives NaN). y may
	// be x.
	Softmax(y, x Buffer, rows, cols int)

	// SoftmaxGrad sets dx = y·(dy - Σ_row dy·y) from the softmax's output
	// y and its gradient dy. dx may be dy.
	SoftmaxGrad(dx, dy, y Buffer, rows, cols int)
}

// GELUKernels is an optional kernel set of a device whose Kernels() value
// implements it: GELU (x·Φ(x), Φ the standard normal CDF in its erf form,
// torch.nn.GELU's default) and its gradient, each in one pass. autograd's
// GELU finds it by type assertion and otherwise composes GELU from
// elementwise operations. Buffers are dense and of one floating-point type.
type GELUKernels interface {
	// GELU computes y = x·Φ(x) for n elements; y may be x.
	GELU(y, x Buffer, n int)

	// GELUGrad computes dx = dy·(Φ(x) + x·φ(x)), φ the standard normal
	// density, for n elements; dx may be dy.
	GELUGrad(dx, dy, x Buffer, n int)
}

// IndexError reports an index (such as a class label) outside [0, N): the
// one at position Pos has value Value.
type IndexError struct {
	Pos   int
	Value int64
	N     int
}

// Error describes the index, its position and the range.
func (e *IndexError) Error() string {
	return fmt.Sprintf("index %d at position %d is outside [0, %d)", e.Value, e.Pos, e.N)
}
