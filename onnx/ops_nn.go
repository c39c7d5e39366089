package onnx

import (
	"math/rand/v2"
	"slices"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Neural-network layer operators: convolutions, Gemm and MatMul, the
// normalisations, Dropout and LRN. The pooling operators are in
// ops_pool.go; both files share the window helpers below.

func init() {
	register("Conv", 1, true, opConv)
	register("ConvTranspose", 1, true, opConvTranspose)
	register("Gemm", 1, true, opGemm)
	register("MatMul", 1, true, opMatMul)
	register("BatchNormalization", 1, true, opBatchNorm)
	register("InstanceNormalization", 1, true, opInstanceNorm)
	register("LayerNormalization", 17, true, opLayerNorm)
	register("Dropout", 1, true, opDropout)
	register("LRN", 1, true, opLRN)
}

// nnFloat checks that v holds float32 or float64 data.
func nnFloat(c *nodeCtx, v *autograd.Var, name string) error {
	if dt := v.Value.DType(); !dt.IsFloat() {
		return c.Errorf("input %s must be float or double, found %v", name, dt)
	}
	return nil
}

// nnSameType checks that v has x's element type.
func nnSameType(c *nodeCtx, x, v *autograd.Var, name string) error {
	if v.Value.DType() != x.Value.DType() {
		return c.Errorf("input %s has type %v, expected %v like the data input", name, v.Value.DType(), x.Value.DType())
	}
	return nil
}

// nnVector checks that v is a 1-D tensor of length n.
func nnVector(c *nodeCtx, v *autograd.Var, name string, n int) error {
	if s := v.Value.Dims(); len(s) != 1 || s[0] != n {
		return c.Errorf("input %s has shape %v, expected [%d]", name, s, n)
	}
	return nil
}

// window is the geometry of a convolution or pooling along its spatial
// axes: kernel extent, stride, dilation and the padding before and after.
type window struct {
	kernel, stride, dil, padBegin, padEnd []int
}

// posInts reads an INTS attribute of n positive values (1 when absent),
// each at most maxOutputElements: a larger kernel, stride or dilation
// cannot be part of a model Hora can run.
func posInts(c *nodeCtx, name string, n int) ([]int, error) {
	return windowInts(c, name, n, 1, " (one per spatial axis)")
}

// padInts reads the INTS attribute name (pads, output_padding) of n
// values, each in [0, maxOutputElements]; all 0 when absent.
func padInts(c *nodeCtx, name string, n int) ([]int, error) {
	return windowInts(c, name, n, 0, "")
}

// windowInts reads the INTS attribute name of a window: n values, each in
// [least, maxOutputElements], all least when absent. A wrong count is an
// error that ends with per.
func windowInts(c *nodeCtx, name string, n, least int, per string) ([]int, error) {
	out := make([]int, n)
	for i := range out {
		out[i] = least
	}
	if !c.HasAttr(name) {
		return out, nil
	}
	vals := c.AttrInts(name, nil)
	if len(vals) != n {
		return nil, c.Errorf("attribute %s has %d values, expected %d%s", name, len(vals), n, per)
	}
	for i, v := range vals {
		if v < int64(least) || v > int64(maxOutputElements) {
			return nil, c.Errorf("attribute %s = %v: values must be in [%d, %d]", name, vals, least, maxOutputElements)
		}
		out[i] = int(v)
	}
	return out, nil
}

// kernelAttr reads kernel_shape: required for pooling, checked against the
// weight's spatial shape for convolutions (want non-nil). Like the other
// window attributes, the kernel's extents are at most maxOutputElements.
func kernelAttr(c *nodeCtx, n int, want []int) ([]int, error) {
	if !c.HasAttr("kernel_shape") {
		if want == nil {
			return nil, c.Errorf("attribute kernel_shape is required")
		}
		for _, k := range want {
			if k > maxOutputElements {
				return nil, c.Errorf("the weight's spatial shape %v has an extent above %d", want, maxOutputElements)
			}
		}
		return want, nil
	}
	k, err := posInts(c, "kernel_shape", n)
	if err != nil {
		return nil, err
	}
	if want != nil && !slices.Equal(k, want) {
		return nil, c.Errorf("attribute kernel_shape = %v does not match the weight's spatial shape %v", k, want)
	}
	return k, nil
}

// windowAttrs reads strides, dilations, pads and auto_pad for an input
// of shape xs (N×C×spatial) and kernel extents kernel. SAME_UPPER/
// SAME_LOWER pad so that the output has ceil(in/stride) elements, the odd
// element going at the end (UPPER) or the beginning (LOWER). The padded
// input must fit maxOutputElements.
func windowAttrs(c *nodeCtx, xs, kernel []int) (window, error) {
	in := xs[2:]
	n := len(in)
	w := window{kernel: kernel, padBegin: make([]int, n), padEnd: make([]int, n)}
	var err error
	if w.stride, err = posInts(c, "strides", n); err != nil {
		return w, err
	}
	if w.dil, err = posInts(c, "dilations", n); err != nil {
		return w, err
	}
	switch ap := c.AttrString("auto_pad", "NOTSET"); ap {
	case "NOTSET", "":
		pads, err := padInts(c, "pads", 2*n)
		if err != nil {
			return w, err
		}
		w.padBegin, w.padEnd = pads[:n], pads[n:]
	case "VALID":
	case "SAME_UPPER", "SAME_LOWER":
		for i := range n {
			out := (in[i] + w.stride[i] - 1) / w.stride[i]
			total := max(0, (out-1)*w.stride[i]+(kernel[i]-1)*w.dil[i]+1-in[i])
			small := total / 2
			if ap == "SAME_UPPER" {
				w.padBegin[i], w.padEnd[i] = small, total-small
			} else {
				w.padBegin[i], w.padEnd[i] = total-small, small
			}
		}
	default:
		return w, c.Errorf("attribute auto_pad = %q, expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap)
	}
	padded := slices.Clone(xs)
	for i := range n {
		padded[2+i] += w.padBegin[i] + w.padEnd[i]
	}
	if err := c.checkSize("padded input", padded); err != nil {
		return w, err
	}
	return w, nil
}

// padAxis returns x with before elements of value v added in front of
// axis and after elements behind it; a negative count crops instead.
func padAxis(c *nodeCtx, x *autograd.Var, axis, before, after int, v float64) *autograd.Var {
	if before < 0 {
		x = autograd.Slice(x, axis, -before, x.Shape()[axis])
		before = 0
	}
	if after < 0 {
		x = autograd.Slice(x, axis, 0, x.Shape()[axis]+after)
		after = 0
	}
	if before == 0 && after == 0 {
		return x
	}
	parts := make([]*autograd.Var, 0, 3)
	block := func(n int) *autograd.Var {
		s := slices.Clone(x.Shape())
		s[axis] = n
		return autograd.Constant(tensor.Full(x.Value.Device(), x.Value.DType(), v, s...))
	}
	if before > 0 {
		parts = append(parts, block(before))
	}
	parts = append(parts, x)
	if after > 0 {
		parts = append(parts, block(after))
	}
	return autograd.Concat(axis, parts...)
}

// spatialRank checks the rank of a convolution or pooling input: 3 (1-D)
// or 4 (2-D); 5 (3-D) is unsupported. It returns the number of spatial
// axes.
func spatialRank(c *nodeCtx, x *autograd.Var, name string) (int, error) {
	switch r := x.Value.Rank(); r {
	case 3, 4:
		return r - 2, nil
	case 5:
		return 0, c.Unsupported("3-D %s (input %s of shape %v): only 1-D and 2-D are implemented", c.Op(), name, x.Shape())
	default:
		return 0, c.Errorf("input %s has shape %v, expected N×C×L or N×C×H×W", name, x.Shape())
	}
}

// to2D turns the per-axis values of a 1-D operation into 2-D ones by
// putting a unit axis first (the input gets a unit height).
func to2D(v []int, unit int) []int {
	if len(v) == 2 {
		return v
	}
	return []int{unit, v[0]}
}

// convInputs are the inputs of Conv and ConvTranspose.
var convInputs = []string{"X", "W", "B?"}

// convCheck checks the inputs X and W of a 1-D or 2-D Conv or
// ConvTranspose: float X of a spatial rank the operators support, W of
// X's type and rank. It returns the spatial rank.
func convCheck(c *nodeCtx, x, w *autograd.Var) (int, error) {
	n, err := spatialRank(c, x, "X")
	if err != nil {
		return 0, err
	}
	if err := nnFloat(c, x, "X"); err != nil {
		return 0, err
	}
	if err := nnSameType(c, x, w, "W"); err != nil {
		return 0, err
	}
	if xs, ws := x.Value.Dims(), w.Value.Dims(); len(ws) != len(xs) {
		return 0, c.Errorf("input W has shape %v, expected rank %d like X %v", ws, len(xs), xs)
	}
	return n, nil
}

// opConv is Conv: a 1-D or 2-D convolution with optional bias, running as
// autograd.Conv2D (the bias fused). Asymmetric padding pads the input
// explicitly by the difference and leaves the symmetric part to the
// convolution.
func opConv(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs(convInputs...)
	if err != nil {
		return nil, err
	}
	x, w, b := in[0], in[1], in[2]
	if x.Value.Rank() == 5 {
		outs, err := run3D(c, conv3D, x, w, b)
		if err != nil || c.residual == nil {
			return outs, err
		}
		return c.run.addResidual(outs[0], c.residual)
	}
	n, err := convCheck(c, x, w)
	if err != nil {
		return nil, err
	}
	xs, ws := x.Value.Dims(), w.Value.Dims()
	if b != nil {
		if err := nnSameType(c, x, b, "B"); err != nil {
			return nil, err
		}
		if err := nnVector(c, b, "B", ws[0]); err != nil {
			return nil, err
		}
	}
	ca, err := convAttrsFor(c, n, xs, ws)
	if err != nil {
		return nil, err
	}
	if n == 1 {
		x, w = autograd.Unsqueeze(x, 2), autograd.Unsqueeze(w, 2)
	}
	for i := range 2 {
		x = padAxis(c, x, 2+i, ca.extraBegin[i], ca.extraEnd[i], 0)
	}
	opts := ca.opts
	opts.ChannelsLast = c.channelsLast && n == 2
	if r := c.residual; r != nil && n == 2 && r.Value.DType() == x.Value.DType() {
		oh, ow := tensor.ConvOutSize(x.Value, w.Value, opts)
		if rs := r.Value.Dims(); len(rs) == 4 && rs[0] == xs[0] && rs[1] == ws[0] && rs[2] == oh && rs[3] == ow {
			return []*autograd.Var{autograd.Conv2DAddAct(x, w, b, r, opts, c.residualAct)}, nil
		}
	}
	y := autograd.Conv2DAct(x, w, b, opts, c.FusedActivation())
	if n == 1 {
		y = autograd.Squeeze(y, 2)
	}
	if c.residual != nil {
		return c.run.addResidual(y, c.residual)
	}
	return []*autograd.Var{y}, nil
}

// convAttrs is what a Conv node's attributes give for inputs of shapes xs
// (X) and ws (W): the convolution's options (the symmetric part of its
// pads) and the padding each spatial axis needs beyond that.
type convAttrs struct {
	xs, ws               []int
	opts                 tensor.ConvOptions
	extraBegin, extraEnd [2]int
}

// convAttrsFor reads and checks a Conv node's group, kernel_shape,
// strides, dilations, pads and auto_pad for an n-D convolution of X (shape
// xs) by W (ws), or returns what the node's cache kept for those shapes.
func convAttrsFor(c *nodeCtx, n int, xs, ws []int) (*convAttrs, error) {
	if c.cache != nil {
		if ca := c.cache.conv.Load(); ca != nil && slices.Equal(ca.xs, xs) && slices.Equal(ca.ws, ws) {
			return ca, nil
		}
	}
	group := int(c.AttrInt("group", 1))
	if group < 1 || xs[1]%group != 0 || ws[0]%group != 0 || ws[1]*group != xs[1] {
		return nil, c.Errorf("input X %v and weight W %v do not match with group = %d (W needs C/group input channels)", xs, ws, group)
	}
	kernel, err := kernelAttr(c, n, ws[2:])
	if err != nil {
		return nil, err
	}
	win, err := windowAttrs(c, xs, kernel)
	if err != nil {
		return nil, err
	}
	for i := range n {
		if ext := (kernel[i]-1)*win.dil[i] + 1; ext > xs[2+i]+win.padBegin[i]+win.padEnd[i] {
			return nil, c.Errorf("kernel %v (dilations %v) does not fit input X %v with pads %v/%v", kernel, win.dil, xs, win.padBegin, win.padEnd)
		}
	}
	pb, pe := to2D(win.padBegin, 0), to2D(win.padEnd, 0)
	sym := [2]int{min(pb[0], pe[0]), min(pb[1], pe[1])}
	stride, dil := to2D(win.stride, 1), to2D(win.dil, 1)
	ca := &convAttrs{
		xs: slices.Clone(xs), ws: slices.Clone(ws),
		opts: tensor.ConvOptions{
			StrideH: stride[0], StrideW: stride[1], PadH: sym[0], PadW: sym[1],
			DilH: dil[0], DilW: dil[1], Groups: group,
		},
		extraBegin: [2]int{pb[0] - sym[0], pb[1] - sym[1]},
		extraEnd:   [2]int{pe[0] - sym[0], pe[1] - sym[1]},
	}
	if c.cache != nil {
		c.cache.conv.Store(ca)
	}
	return ca, nil
}

// opConvTranspose is ConvTranspose, 1-D or 2-D, as autograd.ConvTranspose2D.
// The output size comes from output_shape, auto_pad or pads (see the
// operator's spec); where it is not one the transposed convolution yields
// directly, the full result is cropped or extended with zeros.
func opConvTranspose(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs(convInputs...)
	if err != nil {
		return nil, err
	}
	x, w, b := in[0], in[1], in[2]
	n, err := convCheck(c, x, w)
	if err != nil {
		return nil, err
	}
	xs, ws := x.Shape(), w.Shape()
	group := int(c.AttrInt("group", 1))
	if group < 1 || ws[0] != xs[1] || xs[1]%group != 0 {
		return nil, c.Errorf("input X %v and weight W %v do not match with group = %d (W needs C input channels first)", xs, ws, group)
	}
	outC := ws[1] * group
	if b != nil {
		if err := nnSameType(c, x, b, "B"); err != nil {
			return nil, err
		}
		if err := nnVector(c, b, "B", outC); err != nil {
			return nil, err
		}
	}
	kernel, err := kernelAttr(c, n, ws[2:])
	if err != nil {
		return nil, err
	}
	stride, err := posInts(c, "strides", n)
	if err != nil {
		return nil, err
	}
	dil, err := posInts(c, "dilations", n)
	if err != nil {
		return nil, err
	}
	full, begin, size, err := convTransposeWindow(c, xs, kernel, stride, dil)
	if err != nil {
		return nil, err
	}
	if err := c.checkSize("full (uncropped) output", slices.Concat([]int{xs[0], outC}, full)); err != nil {
		return nil, err
	}
	if err := c.checkElements(slices.Concat([]int{xs[0], outC}, size)); err != nil {
		return nil, err
	}
	if n == 1 {
		x, w = autograd.Unsqueeze(x, 2), autograd.Unsqueeze(w, 2)
		full, begin, size = to2D(full, 1), to2D(begin, 0), to2D(size, 1)
		stride, dil = to2D(stride, 1), to2D(dil, 1)
	}
	o := tensor.ConvOptions{StrideH: stride[0], StrideW: stride[1], DilH: dil[0], DilW: dil[1], Groups: group}
	y := convTranspose2D(c, x, w, b, o, full, begin, size)
	if n == 1 {
		y = autograd.Squeeze(y, 2)
	}
	return []*autograd.Var{y}, nil
}

// convTransposeWindow returns, per spatial axis of a ConvTranspose of
// input shape xs, the extent of the unpadded result (full) and the window
// [begin, begin+size) of it that is the output (extended with zeros past
// its end), from the attributes output_padding and output_shape, auto_pad
// or pads. Each full extent is at most maxOutputElements.
func convTransposeWindow(c *nodeCtx, xs, kernel, stride, dil []int) (full, begin, size []int, err error) {
	n := len(kernel)
	outPad, err := padInts(c, "output_padding", n)
	if err != nil {
		return nil, nil, nil, err
	}
	full, begin, size = make([]int, n), make([]int, n), make([]int, n)
	for i := range n {
		// In float64 first: a product may not fit an int.
		ext := float64(stride[i])*float64(xs[2+i]-1) + float64(kernel[i]-1)*float64(dil[i]) + 1 + float64(outPad[i])
		if ext > float64(maxOutputElements) {
			return nil, nil, nil, c.Errorf("output extent %.0f along spatial axis %d (input X %v, kernel %v, strides %v, dilations %v, output_padding %v) is above the limit of %d",
				ext, i, xs, kernel, stride, dil, outPad, maxOutputElements)
		}
		full[i] = stride[i]*(xs[2+i]-1) + (kernel[i]-1)*dil[i] + 1
	}
	autoPad := c.AttrString("auto_pad", "NOTSET")
	switch {
	case c.HasAttr("output_shape"):
		os := c.AttrInts("output_shape", nil)
		if len(os) == n+2 {
			os = os[2:]
		}
		if len(os) != n {
			return nil, nil, nil, c.Errorf("attribute output_shape has %d values, expected %d", len(os), n)
		}
		for i := range n {
			if os[i] > int64(maxOutputElements) {
				return nil, nil, nil, c.Errorf("attribute output_shape = %v: values must be at most %d", c.AttrInts("output_shape", nil), maxOutputElements)
			}
			size[i] = int(os[i])
			total := max(0, full[i]+outPad[i]-size[i])
			if autoPad == "SAME_UPPER" {
				begin[i] = total / 2
			} else {
				begin[i] = total - total/2
			}
		}
	case autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER":
		for i := range n {
			size[i] = xs[2+i] * stride[i]
			total := max(0, full[i]+outPad[i]-size[i])
			if autoPad == "SAME_UPPER" {
				begin[i] = total / 2
			} else {
				begin[i] = total - total/2
			}
		}
	case autoPad == "VALID" || autoPad == "NOTSET" || autoPad == "":
		pads := make([]int, 2*n)
		if autoPad != "VALID" {
			if pads, err = padInts(c, "pads", 2*n); err != nil {
				return nil, nil, nil, err
			}
		}
		for i := range n {
			begin[i] = pads[i]
			size[i] = full[i] + outPad[i] - pads[i] - pads[n+i]
		}
	default:
		return nil, nil, nil, c.Errorf("attribute auto_pad = %q, expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", autoPad)
	}
	for i := range n {
		if size[i] < 1 {
			return nil, nil, nil, c.Errorf("output size %v is empty for input X %v, kernel %v, strides %v", size, xs, kernel, stride)
		}
	}
	return full, begin, size, nil
}

// convTranspose2D computes the window [begin, begin+size) of the 2-D
// transposed convolution of x and w (of extent full) plus the bias b:
// directly when the window is symmetric padding the convolution
// supports, else by cropping or extending the full result.
func convTranspose2D(c *nodeCtx, x, w, b *autograd.Var, o tensor.ConvOptions, full, begin, size []int) *autograd.Var {
	stride := []int{o.StrideH, o.StrideW}
	// Direct: symmetric padding p = begin and a size the convolution over
	// it maps back to the input's (the excess below the stride is output
	// padding).
	direct := true
	for i := range 2 {
		excess := size[i] - (full[i] - 2*begin[i])
		direct = direct && begin[i] <= full[i]/2 && excess >= 0 && excess < stride[i]
	}
	if direct {
		o.PadH, o.PadW = begin[0], begin[1]
		return autograd.ConvTranspose2D(x, w, b, o, size[0], size[1])
	}
	y := autograd.ConvTranspose2D(x, w, nil, o, full[0], full[1])
	for i := range 2 {
		y = padAxis(c, y, 2+i, -begin[i], begin[i]+size[i]-full[i], 0)
	}
	if b != nil {
		y = autograd.Add(y, autograd.Reshape(b, b.Value.Len(), 1, 1))
	}
	return y
}

// opGemm is Gemm: alpha·A'·B' + beta·C with A' and B' optionally
// transposed and C broadcast to the result. The common fully connected
// layer (transB = 1, a vector or absent C) runs as autograd.Linear.
func opGemm(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("A", "B", "C?")
	if err != nil {
		return nil, err
	}
	a, bm, cv := in[0], in[1], in[2]
	if a.Value.Rank() != 2 || bm.Value.Rank() != 2 {
		return nil, c.Errorf("inputs A %v and B %v must be matrices", a.Shape(), bm.Shape())
	}
	if err := nnSameType(c, a, bm, "B"); err != nil {
		return nil, err
	}
	alpha, beta := c.AttrFloat("alpha", 1), c.AttrFloat("beta", 1)
	transA, transB := c.AttrInt("transA", 0) != 0, c.AttrInt("transB", 0) != 0
	as, bs := a.Shape(), bm.Shape()
	m, k := as[0], as[1]
	if transA {
		m, k = k, m
	}
	k2, nn := bs[0], bs[1]
	if transB {
		k2, nn = nn, k2
	}
	if k != k2 {
		return nil, c.Errorf("inputs A %v (transA=%v) and B %v (transB=%v) have inner sizes %d and %d", as, transA, bs, transB, k, k2)
	}
	if err := c.checkElements([]int{m, nn}); err != nil {
		return nil, err
	}
	if cv != nil {
		if err := nnSameType(c, a, cv, "C"); err != nil {
			return nil, err
		}
		if s, ok := tensor.BroadcastShapes(cv.Shape(), []int{m, nn}); !ok || !slices.Equal(s, []int{m, nn}) {
			return nil, c.Errorf("input C %v does not broadcast to the result [%d %d]", cv.Shape(), m, nn)
		}
	}
	if !a.Value.DType().IsFloat() {
		outs, err := gemmInt(c, a, bm, cv, alpha, beta, transA, transB)
		if err != nil {
			return nil, err
		}
		outs[0] = applyAct(outs[0], c.FusedActivation())
		return outs, nil
	}
	if transA {
		a = autograd.Transpose(a, 0, 1)
	}
	if !transB {
		bm = autograd.Transpose(bm, 0, 1) // Linear takes the weight as N×K
	}
	var bias *autograd.Var
	if cv != nil && alpha == 1 && beta == 1 {
		switch s := cv.Shape(); {
		case len(s) == 1 && s[0] == nn:
			bias = cv
		case len(s) == 2 && s[0] == 1 && s[1] == nn:
			bias = autograd.Reshape(cv, nn)
		}
	}
	act := c.FusedActivation()
	simple := alpha == 1 && (cv == nil || bias != nil || beta == 0)
	if !simple {
		act = device.ActNone // applied after the scaling and the addition
	}
	y := autograd.LinearAct(a, bm, bias, act)
	if alpha != 1 {
		y = autograd.MulScalar(y, alpha)
	}
	if cv != nil && bias == nil && beta != 0 {
		if beta != 1 {
			cv = autograd.MulScalar(cv, beta)
		}
		y = autograd.Add(y, cv)
	}
	if !simple {
		y = applyAct(y, c.FusedActivation())
	}
	return []*autograd.Var{y}, nil
}

// gemmInt is Gemm for integer matrices: computed in float64 (exact below
// 2⁵³), without gradient.
func gemmInt(c *nodeCtx, a, b, cv *autograd.Var, alpha, beta float64, transA, transB bool) ([]*autograd.Var, error) {
	at, bt := a.Value.Cast(device.Float64), b.Value.Cast(device.Float64)
	if transA {
		at = at.T()
	}
	if transB {
		bt = bt.T()
	}
	y := tensor.MatMul(at, bt).MulScalar(alpha)
	if cv != nil && beta != 0 {
		y = y.Add(cv.Value.Cast(device.Float64).MulScalar(beta))
	}
	return []*autograd.Var{autograd.Constant(y.Cast(a.Value.DType()))}, nil
}

// opMatMul is MatMul with numpy semantics: a 1-D operand is a row (first)
// or column (second) vector whose axis is removed from the result, and
// leading batch axes broadcast. Integer operands are multiplied in
// float64, without gradient.
func opMatMul(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("A", "B")
	if err != nil {
		return nil, err
	}
	a, b := in[0], in[1]
	if err := nnSameType(c, a, b, "B"); err != nil {
		return nil, err
	}
	as, bs := a.Shape(), b.Shape()
	if len(as) == 0 || len(bs) == 0 {
		return nil, c.Errorf("inputs A %v and B %v must have at least one axis", as, bs)
	}
	ka, kb := as[len(as)-1], bs[0]
	if len(bs) >= 2 {
		kb = bs[len(bs)-2]
	}
	if ka != kb {
		return nil, c.Errorf("inputs A %v and B %v: inner sizes %d and %d differ", as, bs, ka, kb)
	}
	batch := []int{}
	if len(as) > 2 && len(bs) > 2 {
		var ok bool
		if batch, ok = tensor.BroadcastShapes(as[:len(as)-2], bs[:len(bs)-2]); !ok {
			return nil, c.Errorf("inputs A %v and B %v: batch axes do not broadcast", as, bs)
		}
	} else if len(as) > 2 {
		batch = as[:len(as)-2]
	} else if len(bs) > 2 {
		batch = bs[:len(bs)-2]
	}
	// An outer product ([n, 1] × [1, n]) is n²: bound it before computing.
	rows, cols := 1, 1
	if len(as) >= 2 {
		rows = as[len(as)-2]
	}
	if len(bs) >= 2 {
		cols = bs[len(bs)-1]
	}
	if err := c.checkElements(append(slices.Clone(batch), rows, cols)); err != nil {
		return nil, err
	}
	vecA, vecB := len(as) == 1, len(bs) == 1
	if vecA {
		a = autograd.Unsqueeze(a, 0)
	}
	if vecB {
		b = autograd.Unsqueeze(b, 1)
	}
	var y *autograd.Var
	if a.Value.DType().IsFloat() {
		y = autograd.MatMul(a, b)
	} else {
		dt := a.Value.DType()
		y = autograd.Constant(tensor.MatMul(a.Value.Cast(device.Float64), b.Value.Cast(device.Float64)).Cast(dt))
	}
	r := y.Value.Rank()
	if vecB {
		y = autograd.Squeeze(y, r-1)
		r--
	}
	if vecA {
		y = autograd.Squeeze(y, r-2)
	}
	return []*autograd.Var{y}, nil
}

// channelShape returns [C, 1, …, 1]: the shape that broadcasts a
// per-channel vector against an N×C×… tensor of the given rank.
func channelShape(ch, rank int) []int {
	s := make([]int, rank-1)
	for i := range s {
		s[i] = 1
	}
	s[0] = ch
	return s
}

// opBatchNorm is BatchNormalization. In inference it applies the running
// statistics (x-mean)/√(var+ε)·scale + B as one scale and one shift per
// channel. It uses the batch's statistics when the model is trained
// (c.Training()), and also, following the ONNX spec, when the node sets
// training_mode (opset 14+) and its running statistics are not the
// model's state: a graph that takes them as inputs is a pure function,
// while a model exported for training (PyTorch sets training_mode) follows
// Hora's train/eval mode. A node whose scale and B are frozen parameters
// or constants (c.InputFrozen) runs as in inference in training mode: its
// running statistics are used and not updated. The running outputs are
// m·running + (1-m)·batch with the population (biased) batch variance, as
// the spec says; in training the same values replace the model's running
// statistics (SetState).
func opBatchNorm(c *nodeCtx) ([]*autograd.Var, error) {
	names := []string{"X", "scale", "B", "input_mean", "input_var"}
	vs, err := c.inputs(names...)
	if err != nil {
		return nil, err
	}
	x, scale, bias, mean, variance := vs[0], vs[1], vs[2], vs[3], vs[4]
	if err := nnFloat(c, x, "X"); err != nil {
		return nil, err
	}
	xs := x.Shape()
	if len(xs) < 2 {
		return nil, c.Errorf("input X has shape %v, expected N×C×…", xs)
	}
	if c.Opset() < 9 && c.AttrInt("spatial", 1) == 0 {
		return nil, c.Unsupported("spatial = 0 (statistics per activation rather than per channel)")
	}
	ch := xs[1]
	for i := 1; i < 5; i++ {
		if err := nnSameType(c, x, vs[i], names[i]); err != nil {
			return nil, err
		}
		if err := nnVector(c, vs[i], names[i], ch); err != nil {
			return nil, err
		}
	}
	eps := c.AttrFloat("epsilon", 1e-5)
	momentum := c.AttrFloat("momentum", 0.9)
	state := isState(c, 3, mean) && isState(c, 4, variance)
	// A node whose scale and B do not train (frozen parameters, or
	// constants) runs as in inference in training mode too, as
	// layers.BatchNorm with a frozen weight and bias does: fine-tuning a
	// pretrained network keeps its running statistics.
	frozen := c.InputFrozen(1) && c.InputFrozen(2)
	batchStats := (c.Training() && !frozen) || (c.Opset() >= 14 && c.AttrInt("training_mode", 0) != 0 && !state)
	if !batchStats {
		// y = x·a + (B - mean·a) with a = scale/√(var+ε).
		a := autograd.Mul(scale, autograd.PowScalar(autograd.AddScalar(variance, eps), -0.5))
		shift := autograd.Sub(bias, autograd.Mul(mean, a))
		cs := channelShape(ch, len(xs))
		y := autograd.Add(autograd.Mul(x, autograd.Reshape(a, cs...)), autograd.Reshape(shift, cs...))
		outs := []*autograd.Var{y}
		for i := 1; i < c.NumOutputs(); i++ {
			// Running statistics pass through; the saved batch statistics
			// of opsets before 14 are only defined in training.
			outs = append(outs, []*autograd.Var{mean, variance}[(i-1)%2])
		}
		return outs, nil
	}
	y, bm, bv := autograd.BatchNorm(x, scale, bias, eps)
	runMean := mean.Value.MulScalar(momentum).Add(bm.MulScalar(1 - momentum))
	runVar := variance.Value.MulScalar(momentum).Add(bv.MulScalar(1 - momentum))
	if c.Training() && state {
		if err := c.SetState(3, runMean); err != nil {
			return nil, err
		}
		if err := c.SetState(4, runVar); err != nil {
			return nil, err
		}
	}
	outs := []*autograd.Var{y}
	if c.NumOutputs() > 1 {
		outs = append(outs, autograd.Constant(runMean))
	}
	if c.NumOutputs() > 2 {
		outs = append(outs, autograd.Constant(runVar))
	}
	if c.NumOutputs() > 3 {
		outs = append(outs, autograd.Constant(bm))
	}
	if c.NumOutputs() > 4 {
		outs = append(outs, autograd.Constant(bv))
	}
	return outs, nil
}

// isState reports whether input i (holding v) is model state that
// SetState can update: setting it to its own value changes nothing and
// fails for anything else (a graph input, a constant being folded).
func isState(c *nodeCtx, i int, v *autograd.Var) bool {
	return c.SetState(i, v.Value) == nil
}

// opInstanceNorm is InstanceNormalization: each (sample, channel) plane
// normalised with its own mean and biased variance, then scaled and
// shifted per channel. It runs as a batch normalisation of the 1×(N·C)×…
// reshaped input where the device has the fused kernel.
func opInstanceNorm(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("input", "scale", "B")
	if err != nil {
		return nil, err
	}
	x, scale, bias := in[0], in[1], in[2]
	if err := nnFloat(c, x, "input"); err != nil {
		return nil, err
	}
	xs := x.Shape()
	if len(xs) < 3 {
		return nil, c.Errorf("input has shape %v, expected N×C×D1×…", xs)
	}
	ch := xs[1]
	for i, v := range []*autograd.Var{scale, bias} {
		name := []string{"scale", "B"}[i]
		if err := nnSameType(c, x, v, name); err != nil {
			return nil, err
		}
		if err := nnVector(c, v, name, ch); err != nil {
			return nil, err
		}
	}
	eps := c.AttrFloat("epsilon", 1e-5)
	nc := xs[0] * ch
	inner := x.Value.Len() / max(nc, 1)
	per := func(v *autograd.Var) *autograd.Var {
		return autograd.Reshape(autograd.Expand(autograd.Reshape(v, 1, ch), xs[0], ch), nc)
	}
	y, _, _ := autograd.BatchNorm(autograd.Reshape(x, 1, nc, inner), per(scale), per(bias), eps)
	return []*autograd.Var{autograd.Reshape(y, xs...)}, nil
}

// opLayerNorm is LayerNormalization (opset 17): normalisation over the
// axes from axis on, then scale and the optional bias B (broadcast over
// those axes). The optional Mean and InvStdDev outputs have the input's
// shape with the normalised axes of length 1; they carry no gradient.
func opLayerNorm(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("X", "Scale", "B?")
	if err != nil {
		return nil, err
	}
	x, scale, bias := in[0], in[1], in[2]
	if err := nnFloat(c, x, "X"); err != nil {
		return nil, err
	}
	xs := x.Shape()
	axis, err := c.normAxis("attribute axis", c.AttrInt("axis", -1), len(xs))
	if err != nil {
		return nil, err
	}
	normShape := xs[axis:]
	for i, v := range []*autograd.Var{scale, bias} {
		if v == nil {
			continue
		}
		name := []string{"Scale", "B"}[i]
		if err := nnSameType(c, x, v, name); err != nil {
			return nil, err
		}
		if s, ok := tensor.BroadcastShapes(v.Shape(), normShape); !ok || !slices.Equal(s, normShape) || len(v.Shape()) > len(normShape) {
			return nil, c.Errorf("input %s has shape %v, expected one that broadcasts to the normalised shape %v", name, v.Shape(), normShape)
		}
	}
	eps := c.AttrFloat("epsilon", 1e-5)
	outer := 1
	for _, d := range xs[:axis] {
		outer *= d
	}
	inner := 1
	for _, d := range normShape {
		inner *= d
	}
	statShape := slices.Clone(xs)
	for i := axis; i < len(xs); i++ {
		statShape[i] = 1
	}
	y, bm, bv := autograd.BatchNorm(autograd.Reshape(x, 1, outer, inner), nil, nil, eps)
	y = autograd.Reshape(y, xs...)
	mean, invStd := bm.Reshape(statShape...), bv.AddScalar(eps).Sqrt().Recip().Reshape(statShape...)
	y = autograd.Mul(y, scale)
	if bias != nil {
		y = autograd.Add(y, bias)
	}
	outs := []*autograd.Var{y}
	if c.NumOutputs() > 1 {
		outs = append(outs, autograd.Constant(mean))
	}
	if c.NumOutputs() > 2 {
		outs = append(outs, autograd.Constant(invStd))
	}
	return outs, nil
}

// randSource is implemented by a nodeCtx that offers the model's random
// number generator.
type randSource interface{ Rand() *rand.Rand }

// opDropout is Dropout. In inference (and with ratio 0) it is the
// identity and its mask is all true. In training (c.Training(), or the
// training_mode input of opset 12+ when given) it zeroes each element with
// probability ratio and scales the rest by 1/(1-ratio); the mask output
// (bool, stored as Int64 0/1) tells which elements were kept.
func opDropout(c *nodeCtx) ([]*autograd.Var, error) {
	decl := []string{"data", "ratio?", "training_mode?"}
	if c.Opset() < 12 {
		decl = decl[:1] // ratio is an attribute
	}
	in, err := c.inputs(decl...)
	if err != nil {
		return nil, err
	}
	x := in[0]
	ratio := c.AttrFloat("ratio", 0.5)
	training := c.Training()
	if c.Opset() >= 12 {
		ratio = 0.5
		if r := in[1]; r != nil {
			if r.Value.Len() != 1 {
				return nil, c.Errorf("input ratio has shape %v, expected a scalar", r.Shape())
			}
			ratio = c.Floats(r)[0]
		}
		if t := in[2]; t != nil {
			if t.Value.Len() != 1 {
				return nil, c.Errorf("input training_mode has shape %v, expected a scalar", t.Shape())
			}
			training = c.Ints(t)[0] != 0
		}
	}
	if ratio < 0 || ratio >= 1 {
		if !(ratio == 1 && training) {
			return nil, c.Errorf("ratio %g is outside [0, 1)", ratio)
		}
	}
	wantMask := c.NumOutputs() > 1 && c.OutputUsed(1)
	if !training || ratio == 0 {
		outs := []*autograd.Var{x}
		if wantMask {
			outs = append(outs, autograd.Constant(tensor.Full(x.Value.Device(), device.Int64, 1, x.Shape()...)))
		}
		return outs, nil
	}
	if !x.Value.DType().IsFloat() {
		return nil, c.Errorf("input data must be float or double in training, found %v", x.Value.DType())
	}
	rs, ok := any(c).(randSource)
	if !ok || rs.Rand() == nil {
		return nil, c.Unsupported("Dropout in training: the model has no random number generator")
	}
	y, mask := dropout(x, ratio, rs.Rand())
	outs := []*autograd.Var{y}
	if wantMask {
		outs = append(outs, autograd.Constant(mask))
	}
	return outs, nil
}

// dropout zeroes each element of x with probability ratio, drawn from
// rng, and scales the others by 1/(1-ratio). It returns the result and
// the Int64 0/1 mask of the kept elements.
func dropout(x *autograd.Var, ratio float64, rng *rand.Rand) (*autograd.Var, *tensor.Tensor) {
	keep := tensor.RandUniform(rng, 0, 1, x.Shape()...).GtScalar(ratio).To(x.Value.Device())
	scaled := keep.Cast(x.Value.DType())
	if ratio < 1 {
		scaled = scaled.MulScalar(1 / (1 - ratio))
	}
	return autograd.Mul(x, autograd.Constant(scaled)), keep.Cast(device.Int64)
}

// opLRN is LRN, local response normalisation across channels:
// y = x / (bias + alpha/size · Σ x²)^beta, the sum over the size channels
// around each one (floor((size-1)/2) before, the rest after). The sum is
// an average pooling of x² over the channel axis.
func opLRN(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("X")
	if err != nil {
		return nil, err
	}
	if err := nnFloat(c, x, "X"); err != nil {
		return nil, err
	}
	xs := x.Shape()
	if len(xs) < 3 {
		return nil, c.Errorf("input X has shape %v, expected N×C×D1×…", xs)
	}
	if !c.HasAttr("size") {
		return nil, c.Errorf("attribute size is required")
	}
	size := c.AttrInt("size", 0)
	if size < 1 || size > int64(maxOutputElements) {
		return nil, c.Errorf("attribute size = %d must be in [1, %d]", size, maxOutputElements)
	}
	alpha, beta, bias := c.AttrFloat("alpha", 1e-4), c.AttrFloat("beta", 0.75), c.AttrFloat("bias", 1)
	inner := x.Value.Len() / max(xs[0]*xs[1], 1)
	if err := c.checkSize("padded input", []int{xs[0], 1, xs[1] + int(size) - 1, inner}); err != nil {
		return nil, err
	}
	sq := autograd.Reshape(autograd.Mul(x, x), xs[0], 1, xs[1], inner)
	before := int(size-1) / 2
	sq = padAxis(c, sq, 2, before, int(size)-1-before, 0)
	sum := autograd.AvgPool2D(sq, tensor.PoolOptions{KH: int(size), KW: 1, StrideH: 1, StrideW: 1})
	den := autograd.PowScalar(autograd.AddScalar(autograd.MulScalar(sum, alpha), bias), beta)
	return []*autograd.Var{autograd.Div(x, autograd.Reshape(den, xs...))}, nil
}
