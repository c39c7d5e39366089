package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hora-dl/hora/device"
)

// These tests compare the index kernels, strided Copy and broadcasting
// Binary, bit for bit, against element-at-a-time reference loops on random
// shapes and views: permuted, sliced with a step, broadcast on any axis,
// offset, empty; float32, float64 and int64; serial and split across
// workers.

// threadCounts are the worker counts the tests run with: 1 takes the
// serial paths, the others split work (unevenly for 3).
var threadCounts = []int{1, 2, 3}

// randShape returns a random shape of rank 0 to 4. With big, the shape has
// enough elements to be split across workers.
func randShape(rng *rand.Rand, big bool) []int {
	shape := make([]int, rng.IntN(5))
	for i := range shape {
		switch r := rng.IntN(10); {
		case r == 0:
			shape[i] = 0
		case r < 3:
			shape[i] = 1
		default:
			shape[i] = 1 + rng.IntN(7)
		}
		if big && rng.IntN(2) == 0 {
			shape[i] = 20 + rng.IntN(60)
		}
	}
	for device.NumElements(shape) > 1<<17 { // keep the reference loops quick
		shape[rng.IntN(len(shape))] /= 2
	}
	return shape
}

// randView returns a random view of the given shape into a buffer: its
// axes laid out in a random order, some taken with a step of 2, some
// broadcast (when broadcast is set), from a random offset. It also returns
// the length the buffer needs.
func randView(rng *rand.Rand, shape []int, broadcast bool) (device.Layout, int) {
	l := device.Layout{Shape: shape, Strides: make([]int, len(shape)), Offset: rng.IntN(4)}
	stride := 1
	for _, ax := range rng.Perm(len(shape)) {
		if broadcast && rng.IntN(4) == 0 {
			continue // stride 0
		}
		step := 1 + rng.IntN(2)
		l.Strides[ax] = stride * step
		stride *= shape[ax]*step + rng.IntN(2)
	}
	end := l.Offset + 1
	for i, d := range shape {
		end += max(d-1, 0) * l.Strides[i]
	}
	return l, end + rng.IntN(3)
}

// viewOffsets returns the buffer offset of every element of l, in
// row-major index order.
func viewOffsets(l device.Layout) []int {
	offs := []int{l.Offset}
	for i, d := range l.Shape {
		next := make([]int, 0, len(offs)*d)
		for _, o := range offs {
			for k := range d {
				next = append(next, o+k*l.Strides[i])
			}
		}
		offs = next
	}
	return offs
}

// randBuffer allocates n random elements of dt on d: values in [-4, 4),
// with a few NaNs (of different payloads), infinities and signed zeros
// for floats when special is set; integers in [-50, 50).
func randBuffer(t *testing.T, rng *rand.Rand, d *Device, dt device.DType, n int, special bool) *Buffer {
	t.Helper()
	b, err := d.Alloc(dt, n)
	if err != nil {
		t.Fatal(err)
	}
	cb := b.(*Buffer)
	val := func() float64 {
		if special && rng.IntN(8) == 0 {
			switch rng.IntN(5) {
			case 0:
				return math.Float64frombits(0x7ff8000000000000 | rng.Uint64()>>20) // NaN, random payload
			case 1:
				return math.Inf(1 - 2*rng.IntN(2))
			case 2:
				return math.Copysign(0, -1)
			case 3:
				return 0
			}
			return float64(rng.IntN(3) - 1) // small integers, so Mod and comparisons meet ties
		}
		return math.Round(rng.Float64()*8e3-4e3) / 1e3
	}
	switch dt {
	case device.Float32:
		for i := range cb.f32 {
			cb.f32[i] = float32(val())
			if special && rng.IntN(20) == 0 { // a float32 NaN with its own payload
				cb.f32[i] = math.Float32frombits(0x7fc00000 | rng.Uint32()>>10 | rng.Uint32()&0x80000000)
			}
		}
	case device.Float64:
		for i := range cb.f64 {
			cb.f64[i] = val()
		}
	case device.Int64:
		for i := range cb.i64 {
			cb.i64[i] = rng.Int64N(100) - 50
		}
	}
	return cb
}

// bitsOf returns the elements of b as raw bits, so NaNs compare too.
func bitsOf(b *Buffer) []uint64 {
	var out []uint64
	switch b.dt {
	case device.Float32:
		for _, v := range b.f32 {
			out = append(out, uint64(math.Float32bits(v)))
		}
	case device.Float64:
		for _, v := range b.f64 {
			out = append(out, math.Float64bits(v))
		}
	case device.Int64:
		for _, v := range b.i64 {
			out = append(out, uint64(v))
		}
	}
	return out
}

// clone returns a copy of b.
func clone(t *testing.T, b *Buffer) *Buffer {
	c, err := b.dev.Alloc(b.dt, b.Len())
	if err != nil {
		t.Fatal(err)
	}
	cb := c.(*Buffer)
	copy(cb.f32, b.f32)
	copy(cb.f64, b.f64)
	copy(cb.i64, b.i64)
	return cb
}

// sameBits fails t when got and want differ in any bit.
func sameBits(t *testing.T, what string, got, want *Buffer) {
	t.Helper()
	g, w := bitsOf(got), bitsOf(want)
	for i := range w {
		if g[i] != w[i] {
			t.Fatalf("%s: element %d: got bits %#x, want %#x", what, i, g[i], w[i])
		}
	}
}

// copyMatchesRef copies src (layout sl) into dst (layout dl) with k.Copy
// and fails t unless dst then holds the bits copyRef gives from dst's
// values before the copy.
func copyMatchesRef(t *testing.T, k device.Kernels, what string, dst *Buffer, dl device.Layout, src *Buffer, sl device.Layout) {
	t.Helper()
	want := clone(t, dst)
	k.Copy(dst, dl, src, sl)
	copyRef(want, dl, src, sl)
	sameBits(t, what, dst, want)
}

var dtypes = []device.DType{device.Float32, device.Float64, device.Int64}

// copyRef is the reference of Copy: one element at a time.
func copyRef(dst *Buffer, dl device.Layout, src *Buffer, sl device.Layout) {
	doffs, soffs := viewOffsets(dl), viewOffsets(sl)
	for i := range doffs {
		var v float64
		var iv int64
		switch src.dt {
		case device.Float32:
			v = float64(src.f32[soffs[i]])
		case device.Float64:
			v = src.f64[soffs[i]]
		case device.Int64:
			iv = src.i64[soffs[i]]
		}
		// Convert as copyStrided does, D(S(x)), going through float64
		// only where that is exact.
		switch {
		case dst.dt == device.Float32 && src.dt == device.Float32:
			dst.f32[doffs[i]] = src.f32[soffs[i]]
		case dst.dt == device.Float32 && src.dt == device.Int64:
			dst.f32[doffs[i]] = float32(iv)
		case dst.dt == device.Float32:
			dst.f32[doffs[i]] = float32(v)
		case dst.dt == device.Float64 && src.dt == device.Int64:
			dst.f64[doffs[i]] = float64(iv)
		case dst.dt == device.Float64:
			dst.f64[doffs[i]] = v
		case src.dt == device.Int64:
			dst.i64[doffs[i]] = iv
		default:
			dst.i64[doffs[i]] = int64(v)
		}
	}
}

func TestCopyViewsMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, threads := range threadCounts {
		d := New()
		d.SetThreads(threads)
		k := d.Kernels()
		for trial := range 300 {
			shape := randShape(rng, trial%3 == 0)
			dl, dn := randView(rng, shape, false)
			if rng.IntN(3) == 0 {
				dl, dn = device.Contiguous(shape), device.NumElements(shape)
			}
			sl, sn := randView(rng, shape, true)
			ddt, sdt := dtypes[rng.IntN(3)], dtypes[rng.IntN(3)]
			src := randBuffer(t, rng, d, sdt, sn, ddt != device.Int64)
			got := randBuffer(t, rng, d, ddt, dn, false)
			copyMatchesRef(t, k, fmt.Sprintf("threads %d: Copy %v %+v <- %v %+v", threads, ddt, dl, sdt, sl), got, dl, src, sl)
		}
	}
}

// TestCopyBroadcastRows checks the copy of a source broadcast along its
// trailing axes into contiguous rows (a mean's gradient over an image's
// positions), short rows and rows past runRow, against the reference.
func TestCopyBroadcastRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, threads := range threadCounts {
		d := New()
		d.SetThreads(threads)
		k := d.Kernels()
		for _, shape := range [][]int{{4, 5, 7, 7}, {3, 2, 1, 1}, {2, 3, 70, 70}, {1, 9, 1, 5000}} {
			dl := device.Contiguous(shape)
			sl := device.Layout{Shape: shape, Strides: []int{shape[1], 1, 0, 0}, Offset: 2}
			src := randBuffer(t, rng, d, device.Float32, 2+shape[0]*shape[1], true)
			got := randBuffer(t, rng, d, device.Float32, device.NumElements(shape), false)
			copyMatchesRef(t, k, fmt.Sprintf("threads %d: %v", threads, shape), got, dl, src, sl)
		}
	}
}

// TestCopyTiled checks transposes with long and short (tiled) rows, on
// lengths that are not multiples of the blocks, into dense and strided
// destinations.
func TestCopyTiled(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	d := New()
	d.SetThreads(2)
	k := d.Kernels()
	for _, c := range []struct{ shape, perm []int }{
		{[]int{70, 45}, []int{1, 0}},
		{[]int{3, 33, 65}, []int{0, 2, 1}},
		{[]int{2, 9, 40, 3}, []int{0, 3, 1, 2}},
		{[]int{300, 2}, []int{1, 0}},
		{[]int{2, 300}, []int{1, 0}},
		{[]int{1, 200, 200}, []int{2, 1, 0}},
		{[]int{3, 5000}, []int{1, 0}},
		{[]int{70, 9, 13}, []int{2, 0, 1}},
		// A Transformer's K (N×T×H×d as N×H×d×T), its gradient's way
		// back, and longer contexts: whole 16×16 tiles and edges.
		{[]int{4, 16, 4, 16}, []int{0, 2, 3, 1}},
		{[]int{4, 4, 16, 16}, []int{0, 3, 1, 2}},
		{[]int{2, 64, 2, 32}, []int{0, 2, 3, 1}},
		{[]int{3, 37, 2, 19}, []int{0, 2, 3, 1}},
	} {
		base := device.Contiguous(c.shape)
		sl := device.Layout{Shape: make([]int, len(c.perm)), Strides: make([]int, len(c.perm))}
		for i, p := range c.perm {
			sl.Shape[i], sl.Strides[i] = c.shape[p], base.Strides[p]
		}
		n := device.NumElements(c.shape)
		for _, dt := range dtypes {
			src := randBuffer(t, rng, d, dt, n, false)
			// Into a dense destination, and from a dense source into the
			// transposed view (the other direction of the same loop).
			got := randBuffer(t, rng, d, dt, n, false)
			copyMatchesRef(t, k, fmt.Sprintf("%v %v from view", c.shape, dt), got, device.Contiguous(sl.Shape), src, sl)
			copyMatchesRef(t, k, fmt.Sprintf("%v %v into view", c.shape, dt), got, sl, src, device.Contiguous(sl.Shape))
		}
	}
}

// binaryOps are all the binary operations.
var binaryOps = []device.BinaryOp{
	device.Add, device.Sub, device.Mul, device.Div, device.Pow, device.Maximum, device.Minimum,
	device.Equal, device.NotEqual, device.Less, device.LessEqual, device.Greater, device.GreaterEqual,
	device.Mod, device.Rem,
}

// binaryRef is the reference of Binary: binaryFunc one element at a time.
func binaryRef[T float](op device.BinaryOp, dst []T, shape []int, a []T, al device.Layout, b []T, bl device.Layout) {
	f := binaryFunc[T](op)
	aoffs, boffs := viewOffsets(al), viewOffsets(bl)
	for i := range aoffs {
		dst[i] = f(a[aoffs[i]], b[boffs[i]])
	}
}

func TestBinaryViewsMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, threads := range threadCounts {
		d := New()
		d.SetThreads(threads)
		k := d.Kernels()
		for trial := range 400 {
			shape := randShape(rng, trial%4 == 0)
			al, an := randView(rng, shape, true)
			bl, bn := randView(rng, shape, true)
			switch rng.IntN(4) { // the common cases, more often
			case 0:
				al, an = device.Contiguous(shape), device.NumElements(shape)
			case 1:
				al, an = device.Contiguous(shape), device.NumElements(shape)
				bl = bcastTrailing(bl, rng)
			}
			op := binaryOps[rng.IntN(len(binaryOps))]
			dt := dtypes[rng.IntN(2)]
			x := randBuffer(t, rng, d, dt, an, true)
			y := randBuffer(t, rng, d, dt, bn, true)
			n := device.NumElements(shape)
			got := randBuffer(t, rng, d, dt, n, false)
			want := clone(t, got)
			k.Binary(op, got, x, al, y, bl)
			if n > 0 {
				if dt == device.Float32 {
					binaryRef(op, want.f32, shape, x.f32, al, y.f32, bl)
				} else {
					binaryRef(op, want.f64, shape, x.f64, al, y.f64, bl)
				}
			}
			sameBits(t, fmt.Sprintf("threads %d: Binary %d %v %+v, %+v", threads, op, dt, al, bl), got, want)
		}
	}
}

// bcastTrailing returns l broadcast along its trailing axes from a random
// one on ([N,C,H,W] op [N,C,1,1] and the like).
func bcastTrailing(l device.Layout, rng *rand.Rand) device.Layout {
	s := append([]int(nil), l.Strides...)
	for i := rng.IntN(len(s) + 1); i < len(s); i++ {
		s[i] = 0
	}
	l.Strides = s
	return l
}

// TestBinaryNN checks the shapes neural networks broadcast, large enough
// to be split across workers, against the reference.
func TestBinaryNN(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	d := New()
	d.SetThreads(2)
	k := d.Kernels()
	nchw := []int{2, 16, 33, 35}
	for _, c := range []struct{ a, b []int }{
		{nchw, []int{1, 16, 1, 1}},
		{nchw, []int{2, 16, 1, 1}},
		{[]int{1, 16, 1, 1}, nchw}, // the broadcast operand first
		{[]int{700, 301}, []int{1, 301}},
		{[]int{700, 301}, []int{700, 1}},
		{[]int{40000}, []int{1}},
		{[]int{1}, []int{40000}},
	} {
		shape := make([]int, len(c.a))
		for i := range shape {
			shape[i] = max(c.a[i], c.b[i])
		}
		for _, op := range binaryOps {
			for _, dt := range dtypes[:2] {
				x := randBuffer(t, rng, d, dt, device.NumElements(c.a), true)
				y := randBuffer(t, rng, d, dt, device.NumElements(c.b), true)
				al, bl := bcastLayout(c.a, shape), bcastLayout(c.b, shape)
				n := device.NumElements(shape)
				got := randBuffer(t, rng, d, dt, n, false)
				want := clone(t, got)
				k.Binary(op, got, x, al, y, bl)
				if dt == device.Float32 {
					binaryRef(op, want.f32, shape, x.f32, al, y.f32, bl)
				} else {
					binaryRef(op, want.f64, shape, x.f64, al, y.f64, bl)
				}
				sameBits(t, fmt.Sprintf("%v op %v: Binary %d %v", c.a, c.b, op, dt), got, want)
			}
		}
	}
}

// bcastLayout is the layout of a contiguous tensor of shape broadcast to to.
func bcastLayout(shape, to []int) device.Layout {
	c := device.Contiguous(shape)
	l := device.Layout{Shape: to, Strides: make([]int, len(to))}
	for i := range to {
		if shape[i] != 1 {
			l.Strides[i] = c.Strides[i]
		}
	}
	return l
}

// indexedRef is the reference loop of the index kernels (the kernel as it
// was before it was split across workers).
func indexedRef[T number](big, small []T, idx []int64, outer, n, m, inner int, scatter, slices bool) {
	for o := 0; o < outer; o++ {
		for j := 0; j < m; j++ {
			for i := 0; i < inner; i++ {
				var t int
				if slices {
					t = checkIndex(idx[j], n)
				} else {
					t = checkIndex(idx[(o*m+j)*inner+i], n)
				}
				s := (o*m+j)*inner + i
				b := (o*n+t)*inner + i
				if scatter {
					big[b] += small[s]
				} else {
					small[s] = big[b]
				}
			}
		}
	}
}

func TestIndexedMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	dims := func(big bool) int {
		if rng.IntN(8) == 0 {
			return rng.IntN(2) // 0 or 1
		}
		if big {
			return 1 + rng.IntN(300)
		}
		return 1 + rng.IntN(6)
	}
	for _, threads := range threadCounts {
		d := New()
		d.SetThreads(threads)
		k := d.Kernels()
		for trial := range 300 {
			outer, n, m, inner := dims(trial%3 == 0), dims(false), dims(trial%5 == 0), dims(trial%2 == 0)
			n = max(n, 1)
			for outer*max(m, n)*inner > 1<<16 { // keep the reference loops quick
				outer, inner = max(outer/2, 1), max(inner/2, 1)
			}
			scatter, slices := rng.IntN(2) == 0, rng.IntN(2) == 0
			nidx := outer * m * inner
			if slices {
				nidx = m
			}
			idx := make([]int64, nidx)
			for i := range idx {
				idx[i] = rng.Int64N(int64(n))
				if rng.IntN(3) == 0 && i > 0 {
					idx[i] = idx[i-1] // repeated indices: additions to one place
				}
			}
			ib, _ := d.Alloc(device.Int64, max(nidx, 1))
			copy(ib.(*Buffer).i64, idx)
			dt := dtypes[rng.IntN(3)]
			bigB := randBuffer(t, rng, d, dt, outer*n*inner, false)
			smallB := randBuffer(t, rng, d, dt, outer*m*inner, false)
			wantBig, wantSmall := clone(t, bigB), clone(t, smallB)
			var name string
			switch {
			case scatter && slices:
				name = "IndexAdd"
				k.IndexAdd(bigB, smallB, ib, outer, n, m, inner)
			case scatter:
				name = "ScatterAdd"
				k.ScatterAdd(bigB, smallB, ib, outer, n, m, inner)
			case slices:
				name = "IndexSelect"
				k.IndexSelect(smallB, bigB, ib, outer, n, m, inner)
			default:
				name = "Gather"
				k.Gather(smallB, bigB, ib, outer, n, m, inner)
			}
			switch dt {
			case device.Float32:
				indexedRef(wantBig.f32, wantSmall.f32, idx, outer, n, m, inner, scatter, slices)
			case device.Float64:
				indexedRef(wantBig.f64, wantSmall.f64, idx, outer, n, m, inner, scatter, slices)
			default:
				indexedRef(wantBig.i64, wantSmall.i64, idx, outer, n, m, inner, scatter, slices)
			}
			what := fmt.Sprintf("threads %d: %s %v outer %d n %d m %d inner %d", threads, name, dt, outer, n, m, inner)
			sameBits(t, what+" (big)", bigB, wantBig)
			sameBits(t, what+" (small)", smallB, wantSmall)
		}
	}
}

// TestIndexedBadIndexPanics checks that an index out of range panics on
// the calling goroutine, before anything is written, even when the work
// would be split across workers.
func TestIndexedBadIndexPanics(t *testing.T) {
	d := New()
	d.SetThreads(2)
	k := d.Kernels()
	const outer, n, m, inner = 64, 10, 20, 64
	for _, slices := range []bool{false, true} {
		for _, scatter := range []bool{false, true} {
			nidx := outer * m * inner
			if slices {
				nidx = m
			}
			ib, _ := d.Alloc(device.Int64, nidx)
			ib.(*Buffer).i64[nidx-1] = n // the last one is bad
			big, _ := d.Alloc(device.Float32, outer*n*inner)
			small, _ := d.Alloc(device.Float32, outer*m*inner)
			fill(small.(*Buffer).f32, 1)
			func() {
				defer func() {
					if r := recover(); r != fmt.Sprintf("cpu: index %d out of range [0, %d)", n, n) {
						t.Errorf("slices %v scatter %v: recovered %v", slices, scatter, r)
					}
				}()
				switch {
				case scatter && slices:
					k.IndexAdd(big, small, ib, outer, n, m, inner)
				case scatter:
					k.ScatterAdd(big, small, ib, outer, n, m, inner)
				case slices:
					k.IndexSelect(small, big, ib, outer, n, m, inner)
				default:
					k.Gather(small, big, ib, outer, n, m, inner)
				}
			}()
			for _, v := range big.(*Buffer).f32 {
				if v != 0 {
					t.Fatalf("slices %v scatter %v: big written before the panic", slices, scatter)
				}
			}
			for _, v := range small.(*Buffer).f32 {
				if v != 1 {
					t.Fatalf("slices %v scatter %v: small written before the panic", slices, scatter)
				}
			}
		}
	}
}
