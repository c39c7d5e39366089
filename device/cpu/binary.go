package cpu

import "github.com/hora-dl/hora/device"

// chunk is the length of the scratch runs binaryViews expands broadcast
// and strided operands into.
const chunk = 512

// binaryViews is binary for views that are not all dense: a per-channel
// scale or shift ([N,C,H,W] op [1,C,1,1] or [N,C,1,1]), a row broadcast
// ([M,N] op [N]), transposed operands. After merging the axes that are
// contiguous in every view, each row of the output is computed as runs of
// contiguous operands by binaryRun (so float32 +, -, *, / use the vec
// loops): an operand contiguous along the row is used in place, one that
// is broadcast along it (stride 0) is a chunk filled once with its value,
// and any other is gathered into a chunk. Rows, or pieces of long rows,
// are split across the workers.
//
// Every element is x op y of the same two values as in the reference loop
//
//	for each index ix: dst[ix] = f(a[ix], b[ix])
//
// so the result is bit for bit that of the element-at-a-time loop.
func binaryViews[T float](dev *Device, op device.BinaryOp, dst []T, dl device.Layout, a []T, al device.Layout, b []T, bl device.Layout) {
	st := newStrided(dl, al, bl)
	ds, as, bs := st.inner(0), st.inner(1), st.inner(2)
	f := binaryFunc[T](op)
	st.forEachRow(dev, 1, func() func([]int, int) {
		var xs, ys []T // scratch, made on first use
		return func(offs []int, n int) {
			do, ao, bo := offs[0], offs[1], offs[2]
			if ds == 1 && as == 1 && bs == 1 {
				binaryRun(op, f, dst[do:do+n], a[ao:ao+n], b[bo:bo+n])
				return
			}
			if xs == nil {
				xs, ys = make([]T, chunk), make([]T, chunk)
			}
			if as == 0 {
				fill(xs[:min(n, chunk)], a[ao])
			}
			if bs == 0 {
				fill(ys[:min(n, chunk)], b[bo])
			}
			for i := 0; i < n; i += chunk {
				c := min(chunk, n-i)
				x := operand(a, ao+i*as, as, c, xs)
				y := operand(b, bo+i*bs, bs, c, ys)
				if ds == 1 {
					binaryRun(op, f, dst[do+i:do+i+c], x, y)
					continue
				}
				for k := range c {
					dst[do+(i+k)*ds] = f(x[k], y[k])
				}
			}
		}
	})
}

// operand returns the c elements of a view from offset off with stride
// step as a contiguous slice: in place when step is 1, scratch (filled
// with the value by the caller) when it is 0, else scratch gathered into.
func operand[T float](v []T, off, step, c int, scratch []T) []T {
	switch step {
	case 1:
		return v[off : off+c]
	case 0:
		return scratch[:c]
	}
	for k := range c {
		scratch[k] = v[off+k*step]
	}
	return scratch[:c]
}

// binaryRun sets d[i] = f(x[i], y[i]) (f is binaryFunc(op)), with the
// vectorised float32 loops for +, -, *, / and inlined loops for float64.
func binaryRun[T float](op device.BinaryOp, f func(x, y T) T, d, x, y []T) {
	if binary32(op, d, x, y) {
		return
	}
	x, y = x[:len(d)], y[:len(d)]
	switch op {
	case device.Add:
		for i := range d {
			d[i] = x[i] + y[i]
		}
	case device.Sub:
		for i := range d {
			d[i] = x[i] - y[i]
		}
	case device.Mul:
		for i := range d {
			d[i] = x[i] * y[i]
		}
	case device.Div:
		for i := range d {
			d[i] = x[i] / y[i]
		}
	default:
		for i := range d {
			d[i] = f(x[i], y[i])
		}
	}
}
