package cpu_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/device/devicetest"
)

func TestConformance(t *testing.T) {
	devicetest.RunAll(t, cpu.New())
}

func TestConformanceDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("the same kernels as TestConformance")
	}
	t.Run("MatMul", func(t *testing.T) { devicetest.TestMatMul(t, cpu.Default()) })
	t.Run("Conv2D", func(t *testing.T) { devicetest.TestConv2D(t, cpu.Default()) })
}

func TestOpen(t *testing.T) {
	assert.Contains(t, device.Registered(), "cpu")

	d, err := device.Open("cpu")
	require.NoError(t, err)
	assert.Equal(t, "cpu", d.Name())
	assert.NoError(t, d.Close())

	d0, err := device.Open("cpu:0")
	require.NoError(t, err)
	assert.True(t, d0 == d, "Open(\"cpu\") returns one shared device")
	assert.True(t, d == cpu.Default())
	assert.False(t, cpu.New() == cpu.Default())

	_, err = device.Open("cpu:1")
	require.Error(t, err)
	assert.True(t, errors.Is(err, device.ErrUnavailable), "cpu:1: %v", err)
	assert.Contains(t, err.Error(), "cpu:1")

	_, err = device.Open("nope")
	require.Error(t, err)
	assert.True(t, errors.Is(err, device.ErrUnknownDevice), "nope: %v", err)
	assert.Contains(t, err.Error(), "nope")

	for _, spec := range []string{"cpu:", "cpu:-1", "cpu:x", "cpu:1:2"} {
		_, err = device.Open(spec)
		assert.Error(t, err, "Open(%q)", spec)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	assert.PanicsWithValue(t, "device: Register called twice for cpu", func() {
		device.Register("cpu", func(int) (device.Device, error) { return cpu.New(), nil })
	})
}

func TestBufferAccessors(t *testing.T) {
	d := cpu.New()
	b, err := d.Alloc(device.Float32, 3)
	require.NoError(t, err)
	require.NoError(t, d.Write(b, []float32{1, 2, 3}))
	cb := b.(*cpu.Buffer)
	assert.Equal(t, []float32{1, 2, 3}, cb.Float32s())
	assert.Nil(t, cb.Float64s())
	assert.Nil(t, cb.Int64s())
	cb.Float32s()[1] = 7 // writes through
	got := make([]float32, 3)
	require.NoError(t, d.Read(got, b))
	assert.Equal(t, []float32{1, 7, 3}, got)
	b.Free()
	assert.Equal(t, 0, b.Len())
}

func TestFloat16Buffer(t *testing.T) {
	t.Parallel()
	d := cpu.New()
	b, err := d.Alloc(device.Float16, 3)
	require.NoError(t, err)
	assert.Equal(t, 3, b.Len())
	assert.Equal(t, device.Float16, b.DType())
	require.NoError(t, d.Write(b, []uint16{0x3c00, 0xc000, 0x7bff}))
	cb := b.(*cpu.Buffer)
	assert.Equal(t, []uint16{0x3c00, 0xc000, 0x7bff}, cb.Float16s())
	assert.Nil(t, cb.Float32s())
	assert.Nil(t, cb.Int64s())

	// Copy converts: 1, -2, 65504.
	f32, err := d.Alloc(device.Float32, 3)
	require.NoError(t, err)
	l := device.Contiguous([]int{3})
	d.Kernels().Copy(f32, l, b, l)
	assert.Equal(t, []float32{1, -2, 65504}, f32.(*cpu.Buffer).Float32s())
	require.NoError(t, d.Write(f32, []float32{0.5, 1e9, -0.1}))
	d.Kernels().Copy(b, l, f32, l)
	assert.Equal(t, []uint16{0x3800, 0x7c00, 0xae66}, cb.Float16s())

	b.Free()
	assert.Equal(t, 0, b.Len())
	assert.Nil(t, cb.Float16s())
}

func TestSlice(t *testing.T) {
	t.Parallel()
	d := cpu.New()
	for _, tc := range []struct {
		name   string
		dt     device.DType
		write  any
		backed func(*cpu.Buffer) int // length of the backing slice
	}{
		{"float32", device.Float32, []float32{1, 2, 3, 4}, func(b *cpu.Buffer) int { return len(b.Float32s()) }},
		{"float64", device.Float64, []float64{1, 2, 3, 4}, func(b *cpu.Buffer) int { return len(b.Float64s()) }},
		{"int64", device.Int64, []int64{1, 2, 3, 4}, func(b *cpu.Buffer) int { return len(b.Int64s()) }},
		{"float16", device.Float16, []uint16{1, 2, 3, 4}, func(b *cpu.Buffer) int { return len(b.Float16s()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, err := d.Alloc(tc.dt, 4)
			require.NoError(t, err)
			require.NoError(t, d.Write(parent, tc.write))
			s, err := d.Slice(parent, 1, 2)
			require.NoError(t, err)
			require.IsType(t, &cpu.Buffer{}, s)
			assert.Equal(t, 2, tc.backed(s.(*cpu.Buffer)))
			s.Free()
			assert.Equal(t, 0, s.Len(), "freed slice")
			assert.Equal(t, 4, parent.Len(), "parent after freeing a slice")
			assert.Equal(t, 4, tc.backed(parent.(*cpu.Buffer)))
		})
	}

	// Appending to a slice's backing array cannot reach the parent's
	// elements past the slice.
	parent, err := d.Alloc(device.Float32, 4)
	require.NoError(t, err)
	s, err := device.SliceOf(parent, 0, 2)
	require.NoError(t, err)
	f := s.(*cpu.Buffer).Float32s()
	assert.Equal(t, 2, cap(f), "capacity of a slice's backing slice")

	_, err = d.Slice(parent, 3, 2)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "[3, 3+2)")
	assert.Contains(t, err.Error(), "4 elements")
	_, err = d.Slice(fakeBuffer{}, 0, 0)
	assert.Error(t, err, "a buffer of another device")
}

// fakeBuffer is a buffer of a device that is not the CPU.
type fakeBuffer struct{}

func (fakeBuffer) Device() device.Device { return fakeDevice{} }
func (fakeBuffer) DType() device.DType   { return device.Float32 }
func (fakeBuffer) Len() int              { return 0 }
func (fakeBuffer) Free()                 {}

type fakeDevice struct{ device.Device }

func (fakeDevice) Name() string { return "fake" }

// TestFloat16RejectedByKernels checks that every kernel but Copy refuses a
// Float16 buffer in any position with a panic naming the kernel.
func TestFloat16RejectedByKernels(t *testing.T) {
	t.Parallel()
	d := cpu.New()
	alloc := func(dt device.DType, n int) device.Buffer {
		b, err := d.Alloc(dt, n)
		require.NoError(t, err)
		return b
	}
	h, f, i := alloc(device.Float16, 64), alloc(device.Float32, 64), alloc(device.Int64, 64)
	k := d.Kernels()
	fk := k.(device.FusedKernels)
	bk := k.(device.BatchNormKernels)
	ok := k.(device.OptimizerKernels)
	l := device.Contiguous([]int{4})
	conv := device.ConvParams{N: 1, C: 1, H: 2, W: 2, OutC: 1, KH: 1, KW: 1, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1, Groups: 1}
	pool := device.PoolParams{N: 1, C: 1, H: 2, W: 2, KH: 1, KW: 1, StrideH: 1, StrideW: 1}
	mm := device.MatMulParams{Batch: 1, M: 2, N: 2, K: 2, Alpha: 1}
	for _, tc := range []struct {
		op   string
		call func()
	}{
		{"Fill", func() { k.Fill(h, 4, 1) }},
		{"Unary", func() { k.Unary(device.Exp, h, h, 4, 0) }},
		{"Unary", func() { k.Unary(device.Exp, f, h, 4, 0) }},
		{"Binary", func() { k.Binary(device.Add, f, f, l, h, l) }},
		{"Binary", func() { k.Binary(device.Add, h, h, l, h, l) }},
		{"Where", func() { k.Where(f, h, l, f, l, f, l) }},
		{"Reduce", func() { k.Reduce(device.ReduceSum, h, f, 1, 4, 1) }},
		{"Reduce", func() { k.Reduce(device.ReduceArgMax, i, h, 1, 4, 1) }},
		{"MatMul", func() { k.MatMul(mm, h, h, h) }},
		{"MatMul", func() { k.MatMul(mm, f, f, h) }},
		{"Conv2D", func() { k.Conv2D(conv, h, h, h) }},
		{"Conv2DGradInput", func() { k.Conv2DGradInput(conv, f, h, f) }},
		{"Conv2DGradWeight", func() { k.Conv2DGradWeight(conv, h, f, f) }},
		{"MaxPool2D", func() { k.MaxPool2D(pool, h, i, h) }},
		{"MaxPool2DGrad", func() { k.MaxPool2DGrad(pool, f, h, i) }},
		{"AvgPool2D", func() { k.AvgPool2D(pool, f, h) }},
		{"AvgPool2DGrad", func() { k.AvgPool2DGrad(pool, h, f) }},
		{"Gather", func() { k.Gather(h, h, i, 1, 4, 4, 1) }},
		{"ScatterAdd", func() { k.ScatterAdd(f, h, i, 1, 4, 4, 1) }},
		{"IndexSelect", func() { k.IndexSelect(h, f, i, 1, 4, 4, 1) }},
		{"IndexAdd", func() { k.IndexAdd(h, h, i, 1, 4, 4, 1) }},
		{"Gather", func() { k.Gather(f, f, h, 1, 4, 4, 1) }},
		{"BiasAct", func() { fk.BiasAct(device.ActReLU, h, h, nil, 1, 4, 1) }},
		{"BiasAct", func() { fk.BiasAct(device.ActReLU, f, f, h, 1, 4, 1) }},
		{"Conv2DBiasActMaxPool", func() { fk.Conv2DBiasActMaxPool(conv, pool, device.ActNone, h, i, h, h, nil) }},
		{"BatchNorm", func() { bk.BatchNorm(h, f, f, h, nil, nil, 1, 4, 1, 1e-5) }},
		{"BatchNormGrad", func() { bk.BatchNormGrad(f, nil, nil, h, f, f, f, nil, 1, 4, 1, 1e-5) }},
		{"ActGrad", func() { fk.ActGrad(device.ActReLU, h, h, h, 4) }},
		{"BiasGrad", func() { fk.BiasGrad(h, f, 1, 4, 1) }},
		{"SoftmaxCrossEntropy", func() { _ = fk.SoftmaxCrossEntropy(f, h, h, i, 1, 4, 0) }},
		{"SGDStep", func() { ok.SGDStep(device.SGDHyper{LR: 0.1}, h, h, nil, 4) }},
		{"AdamStep", func() { ok.AdamStep(device.AdamHyper{LR: 0.1, Step: 1}, f, f, f, h, nil, 4) }},
	} {
		want := "cpu: " + tc.op + ": float16 is a storage type: only Alloc, Read, Write, Slice and Copy take it (Copy it to float32 first)"
		assert.PanicsWithValue(t, want, tc.call, tc.op)
	}
}
