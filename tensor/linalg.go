package tensor

import (
	"fmt"
	"slices"

	"github.com/hora-dl/hora/device"
)

// matrixOperand returns a view of t (…×r×c) that MatMul can hand to the
// device without copying — either dense or the transpose of a dense
// matrix — and whether it is transposed. Other layouts are copied.
func matrixOperand(t *Tensor) (*Tensor, bool) {
	r := len(t.shape)
	if t.IsContiguous() {
		return t, false
	}
	tt := t.Transpose(r-2, r-1)
	if tt.IsContiguous() {
		return tt, true
	}
	return t.Contiguous(), false
}

// matrix2 returns how a rank-2 tensor reaches the device's GEMM without a
// copy when it can: the tensor whose buffer to use, whether it is stored
// transposed, and its offset. Other layouts are copied.
func matrix2(t *Tensor) (*Tensor, bool, int) {
	r, c := t.shape[0], t.shape[1]
	if (c == 1 || t.strides[1] == 1) && (r == 1 || t.strides[0] == c) {
		return t, false, t.offset
	}
	if (r == 1 || t.strides[0] == 1) && (c == 1 || t.strides[1] == r) {
		return t, true, t.offset
	}
	return t.Contiguous(), false, 0
}

// MatMul returns the matrix product a×b of tensors of rank ≥ 2; leading
// (batch) axes broadcast, as in torch.matmul.
func MatMul(a, b *Tensor) *Tensor {
	sameFloat("MatMul", a, b)
	if a.Rank() == 2 && b.Rank() == 2 && a.shape[1] == b.shape[0] {
		// The common case, without the batch bookkeeping.
		m, k, n := a.shape[0], a.shape[1], b.shape[1]
		ma, mb := markOf(a), markOf(b)
		ap, ta, aOff := matrix2(a)
		bp, tb, bOff := matrix2(b)
		out := newOut(false, a.DType(), []int{m, n}, a, b)
		if m*n > 0 {
			a.kernels().MatMul(device.MatMulParams{
				Batch: 1, M: m, N: n, K: k, TransA: ta, TransB: tb, Alpha: 1, AOff: aOff, BOff: bOff,
			}, out.buf, ap.buf, bp.buf)
		}
		releaseCopy(ap, a, ma)
		releaseCopy(bp, b, mb)
		return out
	}
	if a.Rank() < 2 || b.Rank() < 2 {
		panic(fmt.Sprintf("tensor: MatMul needs rank ≥ 2, found shapes %v and %v", a.shape, b.shape))
	}
	m, k := a.Dim(-2), a.Dim(-1)
	k2, n := b.Dim(-2), b.Dim(-1)
	if k != k2 {
		panic(fmt.Sprintf("tensor: MatMul: shapes %v and %v: inner dimensions %d and %d differ", a.shape, b.shape, k, k2))
	}
	batchShape, ok := BroadcastShapes(a.shape[:a.Rank()-2], b.shape[:b.Rank()-2])
	if !ok {
		panic(fmt.Sprintf("tensor: MatMul: batch dimensions of shapes %v and %v do not broadcast", a.shape, b.shape))
	}
	batch := device.NumElements(batchShape)
	ma, mb := markOf(a), markOf(b)
	// Each operand is either one matrix reused for every batch entry
	// (stride 0) or a full batch; partial broadcasts are materialised.
	prep := func(t *Tensor, rows, cols int) (*Tensor, int) {
		tb := device.NumElements(t.shape[:t.Rank()-2])
		if tb == 1 {
			// Drop the unit batch axes as a view, so that a transposed
			// matrix (such as w.T()) reaches the device without a copy.
			for t.Rank() > 2 {
				t = t.Squeeze(0)
			}
			return t, 0
		}
		if tb != batch {
			t = t.Expand(append(append([]int(nil), batchShape...), rows, cols)...).Contiguous()
		}
		if t.Rank() != 3 {
			t = t.Reshape(batch, rows, cols)
		}
		return t, rows * cols
	}
	ap, aStride := prep(a, m, k)
	bp, bStride := prep(b, k, n)
	ap, ta := matrixOperand(ap)
	bp, tb := matrixOperand(bp)
	out := newOut(false, a.DType(), append(append([]int(nil), batchShape...), m, n), a, b)
	if out.Len() > 0 {
		a.kernels().MatMul(device.MatMulParams{
			Batch: batch, M: m, N: n, K: k, TransA: ta, TransB: tb, Alpha: 1,
			AStride: aStride, BStride: bStride, CStride: m * n,
		}, out.buf, ap.buf, bp.buf)
	}
	releaseCopy(ap, a, ma)
	releaseCopy(bp, b, mb)
	return out
}

// markOf returns the mark of t's arena (the zero ArenaMark for none),
// taken before an operation copies t into a temporary of that arena.
func markOf(t *Tensor) ArenaMark {
	if t.arena == nil {
		return ArenaMark{}
	}
	return t.arena.Mark()
}

// releaseCopy gives back to the arena the memory of the dense copy of t
// (or a view of it) that an operation made after m and no longer needs,
// so that it does not hold its size until the step ends.
func releaseCopy(copied, t *Tensor, m ArenaMark) {
	if copied.buf != t.buf {
		copied.Release(m)
	}
}

// ConvOptions are the hyper-parameters of a 2-D convolution. Zero values
// mean stride 1, padding 0, dilation 1, one group.
type ConvOptions struct {
	StrideH, StrideW int
	PadH, PadW       int
	DilH, DilW       int
	Groups           int
	// ChannelsLast asks Conv2DBiasAct and Conv2DBiasAddAct for their
	// output in channels-last order (see IsChannelsLast) where the device
	// has a kernel that writes it (device.ChannelsLastConvKernels): a
	// hint, for a chain of depthwise and 1×1 layers at inference, that
	// changes how the values lie in memory and the rounding of the sums'
	// order, not the values. Without a kernel the output is N×C×H×W.
	ChannelsLast bool
}

func orOne(v int) int {
	if v == 0 {
		return 1
	}
	return v
}

// convParams checks the shapes of the input xs (N×C×H×W) and weight ws
// (OutC×C/groups×KH×KW) of a convolution.
func convParams(op string, xs, ws []int, o ConvOptions) device.ConvParams {
	if len(xs) != 4 || len(ws) != 4 {
		panic(fmt.Sprintf("tensor: %s: input %v and weight %v must both be 4-D", op, xs, ws))
	}
	p := device.ConvParams{
		N: xs[0], C: xs[1], H: xs[2], W: xs[3],
		OutC: ws[0], KH: ws[2], KW: ws[3],
		StrideH: orOne(o.StrideH), StrideW: orOne(o.StrideW),
		PadH: o.PadH, PadW: o.PadW,
		DilH: orOne(o.DilH), DilW: orOne(o.DilW), Groups: orOne(o.Groups),
	}
	if p.C%p.Groups != 0 || p.OutC%p.Groups != 0 || ws[1] != p.C/p.Groups {
		panic(fmt.Sprintf("tensor: %s: input %v and weight %v do not match with %d groups (weight needs %d input channels)",
			op, xs, ws, p.Groups, p.C/p.Groups))
	}
	// Compare the kernel's extent with the padded input directly: OutH's
	// integer division truncates toward zero, so it is 1, not ≤ 0, when the
	// kernel overhangs by less than a stride.
	if p.StrideH < 0 || p.StrideW < 0 || p.DilH < 0 || p.DilW < 0 || p.PadH < 0 || p.PadW < 0 ||
		p.DilH*(p.KH-1)+1 > p.H+2*p.PadH || p.DilW*(p.KW-1)+1 > p.W+2*p.PadW || p.KH <= 0 || p.KW <= 0 {
		panic(fmt.Sprintf("tensor: %s: kernel %d×%d (stride %d×%d, padding %d×%d, dilation %d×%d) does not fit input %v",
			op, p.KH, p.KW, p.StrideH, p.StrideW, p.PadH, p.PadW, p.DilH, p.DilW, xs))
	}
	return p
}

// ConvOutSize returns the height and width of Conv2D(x, w, o).
func ConvOutSize(x, w *Tensor, o ConvOptions) (h, wd int) {
	p := convParams("ConvOutSize", x.shape, w.shape, o)
	return p.OutH(), p.OutW()
}

// Conv2D returns the cross-correlation of x (N×C×H×W) with w
// (OutC×C/groups×KH×KW), without bias.
func Conv2D(x, w *Tensor, o ConvOptions) *Tensor {
	sameFloat("Conv2D", x, w)
	p := convParams("Conv2D", x.shape, w.shape, o)
	y := newOut(false, x.DType(), []int{p.N, p.OutC, p.OutH(), p.OutW()}, x, w)
	if p.N > 0 {
		x.kernels().Conv2D(p, y.buf, x.Contiguous().buf, w.Contiguous().buf)
	}
	return y
}

// Conv2DGradInput returns the gradient of Conv2D with respect to its input
// of shape xShape, given the output gradient dy.
func Conv2DGradInput(dy, w *Tensor, xShape []int, o ConvOptions) *Tensor {
	sameFloat("Conv2DGradInput", dy, w)
	p := convParams("Conv2DGradInput", xShape, w.shape, o)
	checkGradShape("Conv2DGradInput", dy, []int{p.N, p.OutC, p.OutH(), p.OutW()})
	dx := newOut(false, dy.DType(), xShape, dy, w) // the kernel writes every element
	if p.N > 0 {
		dy.kernels().Conv2DGradInput(p, dx.buf, dy.Contiguous().buf, w.Contiguous().buf)
	}
	return dx
}

// Conv2DGradWeight returns the gradient of Conv2D with respect to its
// weight of shape wShape, given the input x and output gradient dy.
func Conv2DGradWeight(dy, x *Tensor, wShape []int, o ConvOptions) *Tensor {
	sameFloat("Conv2DGradWeight", dy, x)
	p := convParams("Conv2DGradWeight", x.shape, wShape, o)
	checkGradShape("Conv2DGradWeight", dy, []int{p.N, p.OutC, p.OutH(), p.OutW()})
	dw := newOut(false, dy.DType(), wShape, dy, x) // the kernel writes every element
	dy.kernels().Conv2DGradWeight(p, dw.buf, dy.Contiguous().buf, x.Contiguous().buf)
	return dw
}

// checkGradShape panics unless the output gradient dy has the shape of
// the forward output, want.
func checkGradShape(op string, dy *Tensor, want []int) {
	if !slices.Equal(dy.shape, want) {
		panic(fmt.Sprintf("tensor: %s: output gradient %v, expected %v", op, dy.shape, want))
	}
}

// PoolOptions are the hyper-parameters of 2-D pooling. Zero strides mean
// stride = kernel size, as in PyTorch.
type PoolOptions struct {
	KH, KW           int
	StrideH, StrideW int
	PadH, PadW       int
	// CountPad makes average pooling divide by the full window size even
	// where it overlaps padding (PyTorch's count_include_pad).
	CountPad bool
}

// poolParams checks the shape xs (N×C×H×W) of a pooling's input.
func poolParams(op string, xs []int, o PoolOptions) device.PoolParams {
	if len(xs) != 4 {
		panic(fmt.Sprintf("tensor: %s: input %v must be 4-D", op, xs))
	}
	return poolParamsDims(op, [4]int(xs), o)
}

// poolParamsDims is poolParams for an input of shape (N, C, H, W).
func poolParamsDims(op string, x [4]int, o PoolOptions) device.PoolParams {
	p := device.PoolParams{
		N: x[0], C: x[1], H: x[2], W: x[3],
		KH: o.KH, KW: o.KW, StrideH: o.StrideH, StrideW: o.StrideW,
		PadH: o.PadH, PadW: o.PadW, CountPad: o.CountPad,
	}
	if p.StrideH == 0 {
		p.StrideH = p.KH
	}
	if p.StrideW == 0 {
		p.StrideW = p.KW
	}
	// The kernel must fit the padded input (OutH alone cannot tell: its
	// integer division truncates toward zero).
	if p.KH <= 0 || p.KW <= 0 || p.StrideH <= 0 || p.StrideW <= 0 || p.PadH < 0 || p.PadW < 0 ||
		2*p.PadH > p.KH || 2*p.PadW > p.KW || p.KH > p.H+2*p.PadH || p.KW > p.W+2*p.PadW {
		panic(fmt.Sprintf("tensor: %s: kernel %d×%d with padding %d×%d does not fit input %v", op, p.KH, p.KW, p.PadH, p.PadW, x))
	}
	return p
}

// MaxPool2D returns the window maxima of x (N×C×H×W) and, for the
// gradient, the int64 position of each maximum within its H×W plane.
func MaxPool2D(x *Tensor, o PoolOptions) (y, argmax *Tensor) {
	sameFloat("MaxPool2D", x)
	p := poolParams("MaxPool2D", x.shape, o)
	y = newOut(false, x.DType(), []int{p.N, p.C, p.OutH(), p.OutW()}, x)
	argmax = newOut(false, device.Int64, []int{p.N, p.C, p.OutH(), p.OutW()}, x)
	x.kernels().MaxPool2D(p, y.buf, argmax.buf, x.Contiguous().buf)
	return y, argmax
}

// MaxPool2DValues returns the window maxima of x (N×C×H×W), as MaxPool2D
// does, without the positions of the maxima (for inference: of a -0 and a
// +0 in a window, either may be returned). It uses the device's
// device.MaxPoolValuesKernels when it has one.
func MaxPool2DValues(x *Tensor, o PoolOptions) *Tensor {
	mk, ok := x.kernels().(device.MaxPoolValuesKernels)
	if !ok {
		y, _ := MaxPool2D(x, o)
		return y
	}
	sameFloat("MaxPool2DValues", x)
	p := poolParams("MaxPool2DValues", x.shape, o)
	y := newOut(false, x.DType(), []int{p.N, p.C, p.OutH(), p.OutW()}, x)
	mk.MaxPool2DValues(p, y.buf, x.Contiguous().buf)
	return y
}

// MaxPool2DGrad returns the gradient of MaxPool2D with respect to its
// input of shape xShape, given the output gradient dy and the positions of
// the maxima argmax that MaxPool2D returned.
func MaxPool2DGrad(dy, argmax *Tensor, xShape []int, o PoolOptions) *Tensor {
	sameFloat("MaxPool2DGrad", dy)
	sameDevice("MaxPool2DGrad", dy, argmax)
	checkIndexTensor("MaxPool2DGrad", argmax)
	p := poolParams("MaxPool2DGrad", xShape, o)
	checkGradShape("MaxPool2DGrad", dy, []int{p.N, p.C, p.OutH(), p.OutW()})
	if !slices.Equal(argmax.shape, dy.shape) {
		panic(fmt.Sprintf("tensor: MaxPool2DGrad: argmax %v and output gradient %v differ", argmax.shape, dy.shape))
	}
	dx := newOut(false, dy.DType(), xShape, dy)
	dy.kernels().MaxPool2DGrad(p, dx.buf, dy.Contiguous().buf, argmax.Contiguous().buf)
	return dx
}

// AvgPool2D returns the window averages of x (N×C×H×W).
func AvgPool2D(x *Tensor, o PoolOptions) *Tensor {
	sameFloat("AvgPool2D", x)
	p := poolParams("AvgPool2D", x.shape, o)
	y := newOut(false, x.DType(), []int{p.N, p.C, p.OutH(), p.OutW()}, x)
	x.kernels().AvgPool2D(p, y.buf, x.Contiguous().buf)
	return y
}

// AvgPool2DGrad returns the input gradient of AvgPool2D.
func AvgPool2DGrad(dy *Tensor, xShape []int, o PoolOptions) *Tensor {
	sameFloat("AvgPool2DGrad", dy)
	p := poolParams("AvgPool2DGrad", xShape, o)
	checkGradShape("AvgPool2DGrad", dy, []int{p.N, p.C, p.OutH(), p.OutW()})
	dx := newOut(false, dy.DType(), xShape, dy)
	dy.kernels().AvgPool2DGrad(p, dx.buf, dy.Contiguous().buf)
	return dx
}
