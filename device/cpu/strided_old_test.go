package cpu

import "github.com/hora-dl/hora/device"

// The kernels of Copy and Binary as they were before copyViews and
// binaryViews, for the benchmarks to compare with (the old index kernel is
// indexedRef).

func copyStridedOld[D, S number](dev *Device, dst []D, dl device.Layout, src []S, sl device.Layout) {
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
	st := newStrided(dl, sl)
	nrows, n := st.rows()
	ds, ss := st.inner(0), st.inner(1)
	dev.parallelFor(nrows, n, func(lo, hi int) {
		offs := make([]int, 2)
		for r := lo; r < hi; r++ {
			st.rowStarts(r, offs)
			do, so := offs[0], offs[1]
			if ds == 1 && ss == 1 {
				d, s := dst[do:do+n], src[so:so+n]
				for i, v := range s {
					d[i] = D(v)
				}
				continue
			}
			for i := 0; i < n; i++ {
				dst[do+i*ds] = D(src[so+i*ss])
			}
		}
	})
}

func binaryOld[T float](dev *Device, op device.BinaryOp, dst []T, dl device.Layout, a []T, al device.Layout, b []T, bl device.Layout) {
	if isDense(al) && isDense(bl) && isDense(dl) {
		n := device.NumElements(dl.Shape)
		d, x, y := dst[dl.Offset:dl.Offset+n], a[al.Offset:al.Offset+n], b[bl.Offset:bl.Offset+n]
		f := binaryFunc[T](op)
		dev.parallelFor(n, 1, func(lo, hi int) {
			d, x, y := d[lo:hi], x[lo:hi], y[lo:hi]
			if binary32(op, d, x, y) {
				return
			}
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
			default:
				for i := range d {
					d[i] = f(x[i], y[i])
				}
			}
		})
		return
	}
	st := newStrided(dl, al, bl)
	nrows, n := st.rows()
	as, bs := st.inner(1), st.inner(2)
	f := binaryFunc[T](op)
	dev.parallelFor(nrows, n, func(lo, hi int) {
		offs := make([]int, 3)
		for r := lo; r < hi; r++ {
			st.rowStarts(r, offs)
			d := dst[offs[0] : offs[0]+n]
			ao, bo := offs[1], offs[2]
			switch {
			case op == device.Add && as == 1 && bs == 1:
				x, y := a[ao:ao+n], b[bo:bo+n]
				for i := range d {
					d[i] = x[i] + y[i]
				}
			case op == device.Mul && as == 1 && bs == 1:
				x, y := a[ao:ao+n], b[bo:bo+n]
				for i := range d {
					d[i] = x[i] * y[i]
				}
			case op == device.Add:
				for i := range d {
					d[i] = a[ao+i*as] + b[bo+i*bs]
				}
			case op == device.Sub:
				for i := range d {
					d[i] = a[ao+i*as] - b[bo+i*bs]
				}
			case op == device.Mul:
				for i := range d {
					d[i] = a[ao+i*as] * b[bo+i*bs]
				}
			case op == device.Div:
				for i := range d {
					d[i] = a[ao+i*as] / b[bo+i*bs]
				}
			default:
				for i := range d {
					d[i] = f(a[ao+i*as], b[bo+i*bs])
				}
			}
		}
	})
}
