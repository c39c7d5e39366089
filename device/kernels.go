package device

// Layout describes a strided view of a Buffer: element (i0, i1, ...) lives
// at Offset + i0*Strides[0] + i1*Strides[1] + ... . A stride of 0 repeats
// (broadcasts) the same element along that axis.
type Layout struct {
	Shape   []int
	Strides []int
	Offset  int
}

// Contiguous returns the row-major layout of shape starting at offset 0.
func Contiguous(shape []int) Layout {
	strides := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		strides[i] = s
		s *= shape[i]
	}
	return Layout{Shape: append([]int(nil), shape...), Strides: strides}
}

// NumElements returns the product of shape (1 for a scalar).
func NumElements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// UnaryOp names an elementwise function of one input and an optional scalar.
type UnaryOp int

// The unary operations. "s" is the scalar argument of Unary.
const (
	Neg       UnaryOp = iota + 1 // -x
	Exp                          // e^x
	Log                          // ln x
	Sqrt                         // √x
	Abs                          // |x|
	Sign                         // -1, 0 or 1
	Tanh                         // tanh x
	Sigmoid                      // 1/(1+e^-x)
	Relu                         // max(x, 0)
	Erf                          // error function
	Recip                        // 1/x
	AddScalar                    // x + s
	MulScalar                    // x * s
	PowScalar                    // x ^ s
	MaxScalar                    // max(x, s)
	MinScalar                    // min(x, s)
	GtScalar                     // 1 if x > s else 0
	Floor                        // largest integer ≤ x
	Ceil                         // smallest integer ≥ x
	Round                        // nearest integer, halves to even
	Sin                          // sin x
	Cos                          // cos x
	Tan                          // tan x
	Asin                         // arcsin x
	Acos                         // arccos x
	Atan                         // arctan x
	Sinh                         // sinh x
	Cosh                         // cosh x
	Asinh                        // arsinh x
	Acosh                        // arcosh x
	Atanh                        // artanh x
	IsNaN                        // 1 if x is NaN else 0
	IsInf                        // 1 if x is +Inf or -Inf else 0
)

// BinaryOp names an elementwise function of two inputs.
type BinaryOp int

// The binary operations. Comparisons return 1 or 0 in the output type;
// Maximum and Minimum return NaN when either input is NaN (as PyTorch).
// Mod is the floored remainder x - y·⌊x/y⌋, which has the sign of y (as
// Python's %); Rem is the truncated remainder (C's fmod), which has the
// sign of x. Both are NaN when y is 0.
const (
	Add BinaryOp = iota + 1
	Sub
	Mul
	Div
	Pow
	Maximum
	Minimum
	Equal
	NotEqual
	Less
	LessEqual
	Greater
	GreaterEqual
	Mod
	Rem
)

// ReduceOp names a reduction along one axis.
type ReduceOp int

// The reductions. ArgMax writes Int64 indices of the first maximum. A NaN
// wins Max, Min and ArgMax (ArgMax gives the position of the first NaN),
// as in PyTorch.
const (
	ReduceSum ReduceOp = iota + 1
	ReduceMax
	ReduceMin
	ReduceArgMax
)

// MatMulParams describes a batched matrix product
// C[b] = Alpha * op(A[b]) × op(B[b]) + Beta * C[b] for b in [0, Batch),
// where op transposes when TransA / TransB is set. op(A[b]) is M×K, op(B[b])
// is K×N and C[b] is M×N; each matrix is row-major and dense, and matrix b
// starts at Off + b*Stride (a Stride of 0 reuses one matrix for every b).
// As in BLAS, C is not read when Beta is 0 (it may hold NaN), and K = 0
// gives C = Beta*C.
type MatMulParams struct {
	Batch, M, N, K int
	TransA, TransB bool
	Alpha, Beta    float64
	AOff, AStride  int
	BOff, BStride  int
	COff, CStride  int
}

// ConvParams describes a 2-D convolution (cross-correlation, as in
// PyTorch) of an input N×C×H×W with a weight OutC×(C/Groups)×KH×KW into an
// output N×OutC×OH×OW, where OH = (H + 2*PadH - DilH*(KH-1) - 1)/StrideH + 1.
type ConvParams struct {
	N, C, H, W       int
	OutC, KH, KW     int
	StrideH, StrideW int
	PadH, PadW       int
	DilH, DilW       int
	Groups           int
}

// OutH returns the output height.
func (p ConvParams) OutH() int { return (p.H+2*p.PadH-p.DilH*(p.KH-1)-1)/p.StrideH + 1 }

// OutW returns the output width.
func (p ConvParams) OutW() int { return (p.W+2*p.PadW-p.DilW*(p.KW-1)-1)/p.StrideW + 1 }

// PoolParams describes 2-D pooling of an input N×C×H×W into N×C×OH×OW.
// Padded positions never win a max and, for average pooling, count toward
// the divisor only when CountPad is set (PyTorch's count_include_pad).
type PoolParams struct {
	N, C, H, W       int
	KH, KW           int
	StrideH, StrideW int
	PadH, PadW       int
	CountPad         bool
}

// OutH returns the output height.
func (p PoolParams) OutH() int { return (p.H+2*p.PadH-p.KH)/p.StrideH + 1 }

// OutW returns the output width.
func (p PoolParams) OutW() int { return (p.W+2*p.PadW-p.KW)/p.StrideW + 1 }

// Kernels is the small primitive set a device implements. Buffers passed
// to one call belong to the device and, unless stated otherwise, share one
// floating-point DType; outputs are dense (row-major, offset 0) unless a
// Layout says otherwise, and are overwritten unless stated otherwise.
// Copy, Fill, Gather, ScatterAdd, IndexSelect and IndexAdd also accept
// Int64 data. Only Copy accepts Float16 (a storage type), on devices that
// store it; every other kernel panics when given a Float16 buffer.
// Kernels do not otherwise validate their arguments: the tensor package
// does that before calling them. The package device/devicetest checks an
// implementation against these definitions.
type Kernels interface {
	// Copy copies the strided view src into the strided view dst (same
	// shapes), converting between DTypes when they differ (float to Int64
	// truncates toward zero; conversion to Float16 rounds to nearest, ties
	// to even, overflowing to ±Inf and keeping NaN a NaN). dst must not
	// overlap src.
	Copy(dst Buffer, dl Layout, src Buffer, sl Layout)
	// Fill sets the first n elements of dst to v.
	Fill(dst Buffer, n int, v float64)
	// Unary computes dst[i] = op(src[i], s) for i < n.
	Unary(op UnaryOp, dst, src Buffer, n int, s float64)
	// Binary computes the dense dst of shape al.Shape as op(a, b) where al
	// and bl are views of a and b with the shape of dst (broadcast axes
	// have stride 0).
	Binary(op BinaryOp, dst Buffer, a Buffer, al Layout, b Buffer, bl Layout)
	// Where computes the dense dst = cond != 0 ? a : b, all three viewed
	// with dst's shape; cond has the same DType as a and b.
	Where(dst Buffer, cond Buffer, cl Layout, a Buffer, al Layout, b Buffer, bl Layout)
	// Reduce reduces the dense src, seen as outer×n×inner, along its middle
	// axis into the dense dst (outer×inner). ReduceArgMax writes Int64.
	Reduce(op ReduceOp, dst, src Buffer, outer, n, inner int)
	// MatMul computes a batched matrix product.
	MatMul(p MatMulParams, c, a, b Buffer)
	// Conv2D computes y = conv(x, w) (no bias).
	Conv2D(p ConvParams, y, x, w Buffer)
	// Conv2DGradInput computes dx from dy and w, writing every element of
	// dx (its previous contents are not read).
	Conv2DGradInput(p ConvParams, dx, dy, w Buffer)
	// Conv2DGradWeight computes dw from dy and x, writing every element of
	// dw (its previous contents are not read).
	Conv2DGradWeight(p ConvParams, dw, dy, x Buffer)
	// MaxPool2D writes the maxima to y and their flat positions within each
	// H×W input plane to the Int64 buffer argmax. Windows are scanned in
	// row-major order and the first maximum wins; a NaN wins over numbers.
	MaxPool2D(p PoolParams, y, argmax, x Buffer)
	// MaxPool2DGrad sets dx to zero and adds each dy to the position
	// recorded in argmax.
	MaxPool2DGrad(p PoolParams, dx, dy, argmax Buffer)
	// AvgPool2D averages each window.
	AvgPool2D(p PoolParams, y, x Buffer)
	// AvgPool2DGrad spreads dy evenly back over each window into dx.
	AvgPool2DGrad(p PoolParams, dx, dy Buffer)
	// Gather reads the dense src (outer×n×inner) at the Int64 indices idx
	// (outer×m×inner): dst[o,j,i] = src[o, idx[o,j,i], i].
	Gather(dst, src, idx Buffer, outer, n, m, inner int)
	// ScatterAdd is Gather's adjoint: dst[o, idx[o,j,i], i] += src[o,j,i]
	// (dst keeps its previous contents).
	ScatterAdd(dst, src, idx Buffer, outer, n, m, inner int)
	// IndexSelect picks whole slices: dst[o,j,i] = src[o, idx[j], i] for the
	// Int64 idx of length m.
	IndexSelect(dst, src, idx Buffer, outer, n, m, inner int)
	// IndexAdd is IndexSelect's adjoint: dst[o, idx[j], i] += src[o,j,i].
	IndexAdd(dst, src, idx Buffer, outer, n, m, inner int)
}
