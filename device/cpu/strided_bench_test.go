package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/hora-dl/hora/device"
)

// Benchmarks of the index kernels, strided Copy and broadcasting Binary on
// the shapes neural networks use. The index kernels also run as "ref"
// (indexedRef, the element-at-a-time loop they are tested against) next to
// "new", one after the other so that both see the same load:
//
//	go test -run '^$' -bench 'Index|StridedCopy|BroadcastBinary' -count 3 ./device/cpu/

// benchBuf returns a seeded random buffer of n elements of type dt (int64
// elements are in [0, 100)).
func benchBuf(b *testing.B, d *Device, dt device.DType, n int) device.Buffer {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	buf, err := d.Alloc(dt, n)
	if err != nil {
		b.Fatal(err)
	}
	switch dt {
	case device.Float32:
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		err = d.Write(buf, v)
	case device.Float64:
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.Float64()*2 - 1
		}
		err = d.Write(buf, v)
	case device.Int64:
		v := make([]int64, n)
		for i := range v {
			v[i] = rng.Int64N(100)
		}
		err = d.Write(buf, v)
	}
	if err != nil {
		b.Fatal(err)
	}
	return buf
}

// benchIndex returns an Int64 buffer of n indices into an axis of length m,
// either i*m/n (upsampling) or random.
func benchIndex(b *testing.B, d *Device, n, m int, random bool) device.Buffer {
	b.Helper()
	rng := rand.New(rand.NewPCG(2, uint64(n)))
	v := make([]int64, n)
	for i := range v {
		if random {
			v[i] = rng.Int64N(int64(m))
		} else {
			v[i] = int64(i * m / n)
		}
	}
	buf, err := d.Alloc(device.Int64, n)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Write(buf, v); err != nil {
		b.Fatal(err)
	}
	return buf
}

// refNew runs ref and new as the sub-benchmarks name/ref and name/new.
func refNew(b *testing.B, name string, ref, new func()) {
	benchFunc(b, name+"/ref", 0, ref)
	benchFunc(b, name+"/new", 0, new)
}

// benchFunc runs fn as the sub-benchmark name, moving bytes per call.
func benchFunc(b *testing.B, name string, bytes int, fn func()) {
	b.Run(name, func(b *testing.B) {
		b.SetBytes(int64(bytes))
		for range b.N {
			fn()
		}
	})
}

// indexCase is one call of an index kernel.
type indexCase struct {
	kernel             string // Gather, ScatterAdd, IndexSelect or IndexAdd
	outer, n, m, inner int
	random             bool // random indices, else i*n/m (nearest upsampling)
	dt                 device.DType
}

// run returns the reference loop and the kernel for the call on fresh
// buffers.
func (c indexCase) run(b *testing.B, d *Device) (ref, new func()) {
	scatter := c.kernel == "ScatterAdd" || c.kernel == "IndexAdd"
	slices := c.kernel == "IndexSelect" || c.kernel == "IndexAdd"
	nidx := c.outer * c.m * c.inner
	if slices {
		nidx = c.m
	}
	big := benchBuf(b, d, c.dt, c.outer*c.n*c.inner).(*Buffer)
	small := benchBuf(b, d, c.dt, c.outer*c.m*c.inner).(*Buffer)
	idx := benchIndex(b, d, nidx, c.n, c.random).(*Buffer)
	k := d.Kernels()
	new = func() {
		switch c.kernel {
		case "Gather":
			k.Gather(small, big, idx, c.outer, c.n, c.m, c.inner)
		case "ScatterAdd":
			k.ScatterAdd(big, small, idx, c.outer, c.n, c.m, c.inner)
		case "IndexSelect":
			k.IndexSelect(small, big, idx, c.outer, c.n, c.m, c.inner)
		case "IndexAdd":
			k.IndexAdd(big, small, idx, c.outer, c.n, c.m, c.inner)
		}
	}
	ref = func() {
		switch c.dt {
		case device.Float32:
			indexedRef(big.f32, small.f32, idx.i64, c.outer, c.n, c.m, c.inner, scatter, slices)
		case device.Float64:
			indexedRef(big.f64, small.f64, idx.i64, c.outer, c.n, c.m, c.inner, scatter, slices)
		default:
			indexedRef(big.i64, small.i64, idx.i64, c.outer, c.n, c.m, c.inner, scatter, slices)
		}
	}
	return ref, new
}

func BenchmarkIndex(b *testing.B) {
	d := New()
	f32, f64 := device.Float32, device.Float64
	// Nearest 2× upsampling of [1,256,52,52] as IndexSelect on axis 2 then
	// axis 3, and its gradient (IndexAdd on axis 3 then 2).
	up2 := indexCase{"IndexSelect", 256, 52, 104, 52, false, f32}
	up3 := indexCase{"IndexSelect", 256 * 104, 52, 104, 1, false, f32}
	o2, n2 := up2.run(b, d)
	o3, n3 := up3.run(b, d)
	refNew(b, "Upsample2x/f32", func() { o2(); o3() }, func() { n2(); n3() })
	up2.kernel, up3.kernel = "IndexAdd", "IndexAdd"
	o2, n2 = up2.run(b, d)
	o3, n3 = up3.run(b, d)
	refNew(b, "Upsample2xGrad/f32", func() { o3(); o2() }, func() { n3(); n2() })
	for _, c := range []struct {
		name string
		indexCase
	}{
		// An embedding lookup and its gradient: 4096 rows of 256 of 10000.
		{"Embedding/f32", indexCase{"IndexSelect", 1, 10000, 4096, 256, true, f32}},
		{"Embedding/f64", indexCase{"IndexSelect", 1, 10000, 4096, 256, true, f64}},
		{"EmbeddingGrad/f32", indexCase{"IndexAdd", 1, 10000, 4096, 256, true, f32}},
		{"EmbeddingGrad/f64", indexCase{"IndexAdd", 1, 10000, 4096, 256, true, f64}},
		// Along the middle axis of [16,512,64].
		{"Gather/f32", indexCase{"Gather", 16, 512, 256, 64, true, f32}},
		{"ScatterAdd/f32", indexCase{"ScatterAdd", 16, 512, 256, 64, true, f32}},
		// Along the last axis (inner = 1): one class of 1000 per row.
		{"GatherLast/f32", indexCase{"Gather", 4096, 1000, 16, 1, true, f32}},
		{"ScatterAddLast/f32", indexCase{"ScatterAdd", 4096, 1000, 16, 1, true, f32}},
	} {
		ref, new := c.run(b, d)
		refNew(b, c.name, ref, new)
	}
}

// permuted returns the layout of the contiguous shape viewed with its axes
// in the order perm.
func permuted(shape []int, perm ...int) device.Layout {
	c := device.Contiguous(shape)
	l := device.Layout{Shape: make([]int, len(perm)), Strides: make([]int, len(perm))}
	for i, p := range perm {
		l.Shape[i], l.Strides[i] = shape[p], c.Strides[p]
	}
	return l
}

// expanded returns the layout of the contiguous shape broadcast to to.
func expanded(shape, to []int) device.Layout {
	c := device.Contiguous(shape)
	l := device.Layout{Shape: to, Strides: make([]int, len(to))}
	for i := range to {
		if shape[i] != 1 {
			l.Strides[i] = c.Strides[i]
		}
	}
	return l
}

func BenchmarkStridedCopy(b *testing.B) {
	d := New()
	k := d.Kernels()
	// About 2.7M elements in each case (HeadsK: a training step's size).
	cases := []struct {
		name string
		src  device.Layout
		n    int // source elements
	}{
		{"NCHWtoNHWC", permuted([]int{1, 256, 104, 104}, 0, 2, 3, 1), 256 * 104 * 104},
		{"NHWCtoNCHW", permuted([]int{1, 104, 104, 256}, 0, 3, 1, 2), 256 * 104 * 104},
		{"TransposeLast2", permuted([]int{256, 104, 104}, 0, 2, 1), 256 * 104 * 104},
		{"Transpose2D", permuted([]int{1664, 1664}, 1, 0), 1664 * 1664},
		{"HeadsSplit", permuted([]int{32, 128, 8, 80}, 0, 2, 1, 3), 32 * 128 * 8 * 80},
		{"HeadsSplitSmall", permuted([]int{128, 16, 4, 16}, 0, 2, 1, 3), 128 * 16 * 4 * 16}, // the zoo Transformer's q
		{"HeadsK", permuted([]int{128, 16, 4, 16}, 0, 2, 3, 1), 128 * 16 * 4 * 16},          // the zoo Transformer's K: 131,072 elements
		{"Interleave", permuted([]int{2, 1384448}, 1, 0), 2 * 1384448},
		{"Deinterleave", permuted([]int{1384448, 2}, 1, 0), 2 * 1384448},
		{"SliceHalf", device.Layout{Shape: []int{256, 104, 104}, Strides: []int{104 * 208, 208, 1}}, 256 * 104 * 208},
		{"ExpandChannel", expanded([]int{1, 256, 1, 1}, []int{1, 256, 104, 104}), 256},
		{"ExpandBatch", expanded([]int{1, 104, 104}, []int{256, 104, 104}), 104 * 104},
		{"ExpandLast", expanded([]int{256, 104, 1}, []int{256, 104, 104}), 256 * 104},
	}
	for _, c := range cases {
		for _, dt := range []device.DType{device.Float32, device.Float64} {
			src := benchBuf(b, d, dt, c.n).(*Buffer)
			dst := benchBuf(b, d, dt, device.NumElements(c.src.Shape)).(*Buffer)
			dl := device.Contiguous(c.src.Shape)
			benchFunc(b, c.name+"/"+dt.String(), device.NumElements(c.src.Shape)*dt.Size(), func() { k.Copy(dst, dl, src, c.src) })
		}
	}
	// A conversion on the way: float32 NCHW to float64 NHWC.
	l := permuted([]int{1, 256, 104, 104}, 0, 2, 3, 1)
	src := benchBuf(b, d, device.Float32, 256*104*104).(*Buffer)
	dst := benchBuf(b, d, device.Float64, 256*104*104).(*Buffer)
	dl := device.Contiguous(l.Shape)
	benchFunc(b, "NCHWtoNHWC/f32tof64", 0, func() { k.Copy(dst, dl, src, l) })
}

func BenchmarkBroadcastBinary(b *testing.B) {
	d := New()
	k := d.Kernels()
	nchw := []int{16, 64, 56, 56}
	cases := []struct {
		name   string
		op     device.BinaryOp
		a, b   []int // shapes, broadcast to the first
		bLayed device.Layout
	}{
		{"NCHWxC/Mul", device.Mul, nchw, []int{1, 64, 1, 1}, device.Layout{}},
		{"NCHWxC/Add", device.Add, nchw, []int{1, 64, 1, 1}, device.Layout{}},
		{"NCHWxC/Sub", device.Sub, nchw, []int{1, 64, 1, 1}, device.Layout{}},
		{"NCHWxC/Div", device.Div, nchw, []int{1, 64, 1, 1}, device.Layout{}},
		{"NCHWxNC/Mul", device.Mul, nchw, []int{16, 64, 1, 1}, device.Layout{}},
		{"RowMN/Add", device.Add, []int{2048, 1024}, []int{1, 1024}, device.Layout{}},
		{"RowMN/Sub", device.Sub, []int{2048, 1024}, []int{1, 1024}, device.Layout{}},
		{"RowMN/Maximum", device.Maximum, []int{2048, 1024}, []int{1, 1024}, device.Layout{}},
		{"Same/Add", device.Add, nchw, nchw, device.Layout{}},
		{"SameTransposed/Add", device.Add, []int{2048, 1024}, nil, permuted([]int{1024, 2048}, 1, 0)},
	}
	for _, c := range cases {
		for _, dt := range []device.DType{device.Float32, device.Float64} {
			al := device.Contiguous(c.a)
			bl := c.bLayed
			if c.b != nil {
				bl = expanded(c.b, c.a)
			}
			x := benchBuf(b, d, dt, device.NumElements(c.a)).(*Buffer)
			y := benchBuf(b, d, dt, device.NumElements(c.a)).(*Buffer) // big enough for any b
			dst := benchBuf(b, d, dt, device.NumElements(c.a)).(*Buffer)
			benchFunc(b, c.name+"/"+dt.String(), device.NumElements(c.a)*dt.Size(),
				func() { k.Binary(c.op, dst, x, al, y, bl) })
		}
	}
}
