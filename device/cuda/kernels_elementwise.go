package cuda

import "github.com/hora-dl/hora/device"

// Unary computes dst[i] = op(src[i], s) for i < n (unary_<type> of
// kernels/elementwise.cu; the scalar is rounded to the element type).
func (k *kernels) Unary(op device.UnaryOp, dst, src device.Buffer, n int, s float64) {
	sfx := floatSuffix("Unary", dst)
	noHalf("Unary", src)
	k.launch1D("unary_"+sfx, n, int32(op), dst, src, int64(n), scalar(dst.DType(), s))
}

// Binary computes the dense dst = op(a, b) over the broadcast views al
// and bl (binary_<type>).
func (k *kernels) Binary(op device.BinaryOp, dst device.Buffer, a device.Buffer, al device.Layout, b device.Buffer, bl device.Layout) {
	sfx := floatSuffix("Binary", dst)
	noHalf("Binary", a, b)
	n := device.NumElements(al.Shape)
	if n == 0 {
		return
	}
	v := coalesce(al, bl)
	k.launch1D("binary_"+sfx, n, int32(op), dst, a, v[0], b, v[1], int64(n))
}

// Where computes the dense dst = cond != 0 ? a : b over three broadcast
// views (where_<type>).
func (k *kernels) Where(dst device.Buffer, cond device.Buffer, cl device.Layout, a device.Buffer, al device.Layout, b device.Buffer, bl device.Layout) {
	sfx := floatSuffix("Where", dst)
	noHalf("Where", cond, a, b)
	n := device.NumElements(al.Shape)
	if n == 0 {
		return
	}
	v := coalesce(cl, al, bl)
	k.launch1D("where_"+sfx, n, dst, cond, v[0], a, v[1], b, v[2], int64(n))
}
