package cpu

import (
	"fmt"
	"math"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/vec"
)

// float is the set of floating-point element types the kernels compute in.
type float interface{ ~float32 | ~float64 }

// number is every element type a buffer can hold.
type number interface{ ~float32 | ~float64 | ~int64 }

// kernels implements device.Kernels for the CPU.
type kernels struct{ d *Device }

func buf(b device.Buffer) *Buffer { return b.(*Buffer) }

// Copy copies between strided views, converting the element type.
func (k kernels) Copy(dst device.Buffer, dl device.Layout, src device.Buffer, sl device.Layout) {
	buf(dst).forms.drop() // forms derived from the old values of a constant buffer
	if device.NumElements(dl.Shape) == 0 {
		return
	}
	d, s := buf(dst), buf(src)
	if d.dt == device.Float16 || s.dt == device.Float16 {
		copyHalf(k.d, d, dl, s, sl)
		return
	}
	switch d.dt {
	case device.Float32:
		copyFrom(k.d, d.f32, dl, s, sl)
	case device.Float64:
		copyFrom(k.d, d.f64, dl, s, sl)
	case device.Int64:
		copyFrom(k.d, d.i64, dl, s, sl)
	default:
		panic(dtypeMsg("Copy", d.dt))
	}
}

func copyFrom[D number](dev *Device, dst []D, dl device.Layout, s *Buffer, sl device.Layout) {
	switch s.dt {
	case device.Float32:
		copyStrided(dev, dst, dl, s.f32, sl)
	case device.Float64:
		copyStrided(dev, dst, dl, s.f64, sl)
	case device.Int64:
		copyStrided(dev, dst, dl, s.i64, sl)
	default:
		panic(dtypeMsg("Copy", s.dt))
	}
}

// copyHalf is Copy when either side is Float16.
func copyHalf(dev *Device, d *Buffer, dl device.Layout, s *Buffer, sl device.Layout) {
	if d.dt == device.Float16 {
		switch s.dt {
		case device.Float16:
			copyConv(dev, d.f16, dl, s.f16, sl, func(d, s []uint16) { copy(d, s) }, func(h uint16) uint16 { return h })
		case device.Float32:
			copyConv(dev, d.f16, dl, s.f32, sl, f32sToF16, f32ToF16)
		case device.Float64:
			copyConv(dev, d.f16, dl, s.f64, sl, f64sToF16, f64ToF16)
		case device.Int64:
			copyConv(dev, d.f16, dl, s.i64, sl, i64sToF16, i64ToF16)
		default:
			panic(dtypeMsg("Copy", s.dt))
		}
		return
	}
	switch d.dt {
	case device.Float32:
		copyConv(dev, d.f32, dl, s.f16, sl, f16sToF32, f16ToF32)
	case device.Float64:
		copyConv(dev, d.f64, dl, s.f16, sl, f16sToF64, f16ToF64)
	case device.Int64:
		copyConv(dev, d.i64, dl, s.f16, sl, f16sToI64, f16ToI64)
	default:
		panic(dtypeMsg("Copy", d.dt))
	}
}

// copyConv is copyStrided for conversions that are functions rather than
// Go conversions (those to and from float16): run converts a contiguous
// run of elements, one a single element.
func copyConv[D, S any](dev *Device, dst []D, dl device.Layout, src []S, sl device.Layout, run func([]D, []S), one func(S) D) {
	if isDense(dl) && isDense(sl) {
		n := device.NumElements(dl.Shape)
		d, s := dst[dl.Offset:dl.Offset+n], src[sl.Offset:sl.Offset+n]
		dev.parallelFor(n, 4, func(lo, hi int) { run(d[lo:hi], s[lo:hi]) })
		return
	}
	st := newStrided(dl, sl)
	nrows, n := st.rows()
	ds, ss := st.inner(0), st.inner(1)
	dev.parallelFor(nrows, 4*n, func(lo, hi int) {
		offs := make([]int, 2)
		for r := lo; r < hi; r++ {
			st.rowStarts(r, offs)
			do, so := offs[0], offs[1]
			if ds == 1 && ss == 1 {
				run(dst[do:do+n], src[so:so+n])
				continue
			}
			for i := 0; i < n; i++ {
				dst[do+i*ds] = one(src[so+i*ss])
			}
		}
	})
}

// dtypeMsg is the panic message of a kernel op given a buffer of type dt,
// which it does not compute in.
func dtypeMsg(op string, dt device.DType) string {
	if dt == device.Float16 {
		return fmt.Sprintf("cpu: %s: float16 is a storage type: only Alloc, Read, Write, Slice and Copy take it (Copy it to float32 first)", op)
	}
	return fmt.Sprintf("cpu: %s on %v", op, dt)
}

// noHalf panics with dtypeMsg when any of the buffers (nil ones are
// skipped) is Float16. Every kernel but Copy calls it first.
func noHalf(op string, bs ...device.Buffer) {
	for _, b := range bs {
		if cb, ok := b.(*Buffer); ok && cb.dt == device.Float16 {
			panic(dtypeMsg(op, device.Float16))
		}
	}
}

func copyStrided[D, S number](dev *Device, dst []D, dl device.Layout, src []S, sl device.Layout) {
	if isDense(dl) && isDense(sl) {
		n := device.NumElements(dl.Shape)
		d, s := dst[dl.Offset:dl.Offset+n], src[sl.Offset:sl.Offset+n]
		if dd, ok := any(d).([]S); ok {
			copy(dd, s) // same type
			return
		}
		dev.parallelFor(n, 1, func(lo, hi int) {
			for i, v := range s[lo:hi] {
				d[lo+i] = D(v)
			}
		})
		return
	}
	copyViews(dev, dst, dl, src, sl)
}

// isDense reports whether l is a row-major dense view (from its offset on)
// with no broadcast axes.
func isDense(l device.Layout) bool {
	s := 1
	for i := len(l.Shape) - 1; i >= 0; i-- {
		if l.Shape[i] != 1 && l.Strides[i] != s {
			return false
		}
		s *= l.Shape[i]
	}
	return true
}

// denseStrides returns l's strides when l is dense (no copy), else the
// row-major strides of its shape.
func denseStrides(l device.Layout) []int {
	if isDense(l) {
		return l.Strides
	}
	return device.Contiguous(l.Shape).Strides
}

// Fill sets the first n elements.
func (k kernels) Fill(dst device.Buffer, n int, v float64) {
	noHalf("Fill", dst)
	d := buf(dst)
	switch d.dt {
	case device.Float32:
		fill(d.f32[:n], float32(v))
	case device.Float64:
		fill(d.f64[:n], v)
	case device.Int64:
		fill(d.i64[:n], int64(v))
	default:
		panic(dtypeMsg("Fill", d.dt))
	}
}

func fill[T number](s []T, v T) {
	if v == 0 && !math.Signbit(float64(v)) { // not -0
		clear(s) // the runtime's vectorised memclr
		return
	}
	for i := range s {
		s[i] = v
	}
}

// Unary applies op elementwise.
func (k kernels) Unary(op device.UnaryOp, dst, src device.Buffer, n int, s float64) {
	noHalf("Unary", dst, src)
	d, x := buf(dst), buf(src)
	switch d.dt {
	case device.Float32:
		unary(k.d, op, d.f32[:n], x.f32[:n], s)
	case device.Float64:
		unary(k.d, op, d.f64[:n], x.f64[:n], s)
	default:
		panic(dtypeMsg("Unary", d.dt))
	}
}

func unary[T float](dev *Device, op device.UnaryOp, dst, src []T, s float64) {
	ts := T(s)
	dev.parallelFor(len(dst), 8, func(lo, hi int) {
		d, x := dst[lo:hi], src[lo:hi]
		if unary32(op, d, x, float32(s)) {
			return
		}
		switch op {
		case device.Neg:
			for i, v := range x {
				d[i] = -v
			}
		case device.Relu:
			for i, v := range x {
				if v < 0 { // NaN and -0 pass, as in float32 (vec.ReLU) and PyTorch
					v = 0
				}
				d[i] = v
			}
		case device.AddScalar:
			for i, v := range x {
				d[i] = v + ts
			}
		case device.MulScalar:
			for i, v := range x {
				d[i] = v * ts
			}
		case device.MaxScalar: // as unaryFunc: a NaN x stays, ties keep s
			for i, v := range x {
				if !(v > ts || v != v) {
					v = ts
				}
				d[i] = v
			}
		case device.MinScalar:
			for i, v := range x {
				if !(v < ts || v != v) {
					v = ts
				}
				d[i] = v
			}
		case device.GtScalar:
			for i, v := range x {
				if v > ts {
					d[i] = 1
				} else {
					d[i] = 0
				}
			}
		default:
			f := unaryFunc(op, s)
			for i, v := range x {
				d[i] = T(f(float64(v)))
			}
		}
	})
}

// unaryFunc returns the float64 reference function of op.
// unary32 runs the vectorised float32 loop of op, if there is one.
func unary32[T float](op device.UnaryOp, dst, src []T, s float32) bool {
	d, ok := any(dst).([]float32)
	if !ok {
		return false
	}
	x := any(src).([]float32)
	switch op {
	case device.Relu:
		vec.ReLU(d, x)
	case device.AddScalar:
		vec.AddScalar(d, x, s)
	case device.MulScalar:
		vec.MulScalar(d, x, s)
	case device.Exp:
		vec.Exp(d, x)
	case device.MaxScalar:
		vec.MaxScalar(d, x, s)
	case device.MinScalar:
		vec.MinScalar(d, x, s)
	default:
		return false
	}
	return true
}

func unaryFunc(op device.UnaryOp, s float64) func(float64) float64 {
	switch op {
	case device.Exp:
		return math.Exp
	case device.Log:
		return math.Log
	case device.Sqrt:
		return math.Sqrt
	case device.Abs:
		return math.Abs
	case device.Sign:
		return func(x float64) float64 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return x // 0 or NaN
		}
	case device.Tanh:
		return math.Tanh
	case device.Sigmoid:
		return func(x float64) float64 {
			if x >= 0 {
				return 1 / (1 + math.Exp(-x))
			}
			e := math.Exp(x)
			return e / (1 + e)
		}
	case device.Erf:
		return math.Erf
	case device.Recip:
		return func(x float64) float64 { return 1 / x }
	case device.PowScalar:
		return func(x float64) float64 { return math.Pow(x, s) }
	case device.MaxScalar:
		return func(x float64) float64 {
			if x > s || x != x {
				return x
			}
			return s
		}
	case device.MinScalar:
		return func(x float64) float64 {
			if x < s || x != x {
				return x
			}
			return s
		}
	case device.Floor:
		return math.Floor
	case device.Ceil:
		return math.Ceil
	case device.Round:
		return math.RoundToEven
	case device.Sin:
		return math.Sin
	case device.Cos:
		return math.Cos
	case device.Tan:
		return math.Tan
	case device.Asin:
		return math.Asin
	case device.Acos:
		return math.Acos
	case device.Atan:
		return math.Atan
	case device.Sinh:
		return math.Sinh
	case device.Cosh:
		return math.Cosh
	case device.Asinh:
		return math.Asinh
	case device.Acosh:
		return math.Acosh
	case device.Atanh:
		return math.Atanh
	case device.IsNaN:
		return func(x float64) float64 {
			if x != x {
				return 1
			}
			return 0
		}
	case device.IsInf:
		return func(x float64) float64 {
			if math.IsInf(x, 0) {
				return 1
			}
			return 0
		}
	}
	panic(fmt.Sprintf("cpu: unknown unary op %d", op))
}

// Binary applies op to two broadcast views.
func (k kernels) Binary(op device.BinaryOp, dst device.Buffer, a device.Buffer, al device.Layout, b device.Buffer, bl device.Layout) {
	noHalf("Binary", dst, a, b)
	if device.NumElements(al.Shape) == 0 {
		return
	}
	d, x, y := buf(dst), buf(a), buf(b)
	dl := device.Layout{Shape: al.Shape, Strides: denseStrides(al)}
	switch d.dt {
	case device.Float32:
		binary(k.d, op, d.f32, dl, x.f32, al, y.f32, bl)
	case device.Float64:
		binary(k.d, op, d.f64, dl, x.f64, al, y.f64, bl)
	default:
		panic(dtypeMsg("Binary", d.dt))
	}
}

func binary[T float](dev *Device, op device.BinaryOp, dst []T, dl device.Layout, a []T, al device.Layout, b []T, bl device.Layout) {
	if isDense(al) && isDense(bl) && isDense(dl) {
		n := device.NumElements(dl.Shape)
		d, x, y := dst[dl.Offset:dl.Offset+n], a[al.Offset:al.Offset+n], b[bl.Offset:bl.Offset+n]
		f := binaryFunc[T](op)
		dev.parallelFor(n, 1, func(lo, hi int) { binaryRun(op, f, d[lo:hi], x[lo:hi], y[lo:hi]) })
		return
	}
	binaryViews(dev, op, dst, dl, a, al, b, bl)
}

// binary32 runs the vectorised float32 loop of op, if there is one.
func binary32[T float](op device.BinaryOp, dst, a, b []T) bool {
	d, ok := any(dst).([]float32)
	if !ok {
		return false
	}
	x, y := any(a).([]float32), any(b).([]float32)
	switch op {
	case device.Add:
		vec.Add(d, x, y)
	case device.Sub:
		vec.Sub(d, x, y)
	case device.Mul:
		vec.Mul(d, x, y)
	case device.Div:
		vec.Div(d, x, y)
	default:
		return false
	}
	return true
}

func boolTo[T float](c bool) T {
	if c {
		return 1
	}
	return 0
}

func binaryFunc[T float](op device.BinaryOp) func(x, y T) T {
	switch op {
	case device.Add:
		return func(x, y T) T { return x + y }
	case device.Sub:
		return func(x, y T) T { return x - y }
	case device.Mul:
		return func(x, y T) T { return x * y }
	case device.Div:
		return func(x, y T) T { return x / y }
	case device.Pow:
		return func(x, y T) T { return T(math.Pow(float64(x), float64(y))) }
	case device.Maximum:
		return func(x, y T) T {
			if x >= y || x != x {
				return x
			}
			return y
		}
	case device.Minimum:
		return func(x, y T) T {
			if x <= y || x != x {
				return x
			}
			return y
		}
	case device.Equal:
		return func(x, y T) T { return boolTo[T](x == y) }
	case device.NotEqual:
		return func(x, y T) T { return boolTo[T](x != y) }
	case device.Less:
		return func(x, y T) T { return boolTo[T](x < y) }
	case device.LessEqual:
		return func(x, y T) T { return boolTo[T](x <= y) }
	case device.Greater:
		return func(x, y T) T { return boolTo[T](x > y) }
	case device.GreaterEqual:
		return func(x, y T) T { return boolTo[T](x >= y) }
	case device.Mod:
		return func(x, y T) T { return T(floorMod(float64(x), float64(y))) }
	case device.Rem:
		return func(x, y T) T { return T(math.Mod(float64(x), float64(y))) }
	}
	panic(fmt.Sprintf("cpu: unknown binary op %d", op))
}

// floorMod returns x - y·⌊x/y⌋ computed exactly: the remainder with the
// sign of y (NaN when y is 0).
func floorMod(x, y float64) float64 {
	r := math.Mod(x, y)
	if r != 0 && (r < 0) != (y < 0) {
		r += y
	}
	return r
}

// Where selects between two broadcast views.
func (k kernels) Where(dst device.Buffer, cond device.Buffer, cl device.Layout, a device.Buffer, al device.Layout, b device.Buffer, bl device.Layout) {
	noHalf("Where", dst, cond, a, b)
	if device.NumElements(al.Shape) == 0 {
		return
	}
	d, c, x, y := buf(dst), buf(cond), buf(a), buf(b)
	dl := device.Contiguous(al.Shape)
	switch d.dt {
	case device.Float32:
		where(k.d, d.f32, dl, c.f32, cl, x.f32, al, y.f32, bl)
	case device.Float64:
		where(k.d, d.f64, dl, c.f64, cl, x.f64, al, y.f64, bl)
	default:
		panic(dtypeMsg("Where", d.dt))
	}
}

func where[T float](dev *Device, dst []T, dl device.Layout, c []T, cl device.Layout, a []T, al device.Layout, b []T, bl device.Layout) {
	st := newStrided(dl, cl, al, bl)
	nrows, n := st.rows()
	cs, as, bs := st.inner(1), st.inner(2), st.inner(3)
	dev.parallelFor(nrows, n, func(lo, hi int) {
		offs := make([]int, 4)
		for r := lo; r < hi; r++ {
			st.rowStarts(r, offs)
			for i := 0; i < n; i++ {
				if c[offs[1]+i*cs] != 0 {
					dst[offs[0]+i] = a[offs[2]+i*as]
				} else {
					dst[offs[0]+i] = b[offs[3]+i*bs]
				}
			}
		}
	})
}

// Reduce reduces the middle axis of outer×n×inner.
func (k kernels) Reduce(op device.ReduceOp, dst, src device.Buffer, outer, n, inner int) {
	noHalf("Reduce", dst, src)
	s := buf(src)
	d := buf(dst)
	switch s.dt {
	case device.Float32:
		reduce(k.d, op, d, s.f32, outer, n, inner)
	case device.Float64:
		reduce(k.d, op, d, s.f64, outer, n, inner)
	default:
		panic(dtypeMsg("Reduce", s.dt))
	}
}

func reduce[T float](dev *Device, op device.ReduceOp, d *Buffer, src []T, outer, n, inner int) {
	if n == 0 {
		panic("cpu: reduce over an empty axis")
	}
	// Each output element (o, i) is computed in float64 and then stored.
	store := func(j int, v float64) {
		switch d.dt {
		case device.Float32:
			d.f32[j] = float32(v)
		case device.Float64:
			d.f64[j] = v
		case device.Int64:
			d.i64[j] = int64(v)
		}
	}
	if s32, ok := any(src).([]float32); ok && op == device.ReduceSum && inner == 1 && n >= vecPlane {
		// Sums of contiguous rows (a global average pool's planes): the
		// vector loop's float64 partial sums instead of one float64 sum
		// element by element (resnet18's pool at batch 1: 27 µs).
		dev.parallelFor(outer, n, func(lo, hi int) {
			for o := lo; o < hi; o++ {
				store(o, vec.SumF64(s32[o*n:(o+1)*n]))
			}
		})
		return
	}
	if op == device.ReduceSum && inner >= vecPlane {
		// Sums over a middle axis with wide rows (an image's positions
		// × channels, say): row by row into float64 sums, in blocks of
		// the inner axis, each sum in the order of the element loop
		// below.
		dev.parallelFor(outer*inner, n, func(lo, hi int) {
			var accBuf [256]float64
			for j0 := lo; j0 < hi; {
				o, i0 := j0/inner, j0%inner
				i1 := min(inner, i0+len(accBuf), i0+hi-j0)
				acc := accBuf[:i1-i0]
				clear(acc)
				for t := range n {
					row := src[(o*n+t)*inner+i0 : (o*n+t)*inner+i1]
					for i, v := range row {
						acc[i] += float64(v)
					}
				}
				for i, v := range acc {
					store(j0+i, v)
				}
				j0 += i1 - i0
			}
		})
		return
	}
	dev.parallelFor(outer*inner, n, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			o, i := j/inner, j%inner
			base := o*n*inner + i
			switch op {
			case device.ReduceSum:
				var acc float64
				for t := 0; t < n; t++ {
					acc += float64(src[base+t*inner])
				}
				store(j, acc)
			case device.ReduceMax, device.ReduceMin, device.ReduceArgMax:
				best, arg := src[base], 0
				for t := 1; t < n; t++ {
					v := src[base+t*inner]
					if best != best { // NaN wins, as in PyTorch
						break
					}
					if (op == device.ReduceMin && v < best) || (op != device.ReduceMin && v > best) || v != v {
						best, arg = v, t
					}
				}
				if op == device.ReduceArgMax {
					store(j, float64(arg))
				} else {
					store(j, float64(best))
				}
			default:
				panic(fmt.Sprintf("cpu: unknown reduce op %d", op))
			}
		}
	})
}
