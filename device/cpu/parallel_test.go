package cpu_test

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
)

// workload runs every parallel kernel path with sizes large enough to be
// split across workers and returns all the results.
func workload(t *testing.T, d *cpu.Device) map[string][]float32 {
	rng := rand.New(rand.NewPCG(11, 12))
	randBuf := func(n int) device.Buffer {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.Float64()*2 - 1)
		}
		b, err := d.Alloc(device.Float32, n)
		require.NoError(t, err)
		require.NoError(t, d.Write(b, v))
		return b
	}
	zeros := func(dt device.DType, n int) device.Buffer {
		b, err := d.Alloc(dt, n)
		require.NoError(t, err)
		return b
	}
	k := d.Kernels()
	out := map[string][]float32{}
	keep := func(name string, b device.Buffer) {
		if b.DType() == device.Int64 {
			v := make([]int64, b.Len())
			require.NoError(t, d.Read(v, b))
			f := make([]float32, len(v))
			for i, x := range v {
				f[i] = float32(x)
			}
			out[name] = f
			return
		}
		v := make([]float32, b.Len())
		require.NoError(t, d.Read(v, b))
		out[name] = v
	}

	const rows, cols = 512, 300
	a, b := randBuf(rows*cols), randBuf(rows*cols)
	y := zeros(device.Float32, rows*cols)
	k.Copy(y, device.Contiguous([]int{cols, rows}), a, device.Layout{Shape: []int{cols, rows}, Strides: []int{1, cols}})
	keep("copy", y)
	y = zeros(device.Float32, rows*cols)
	k.Unary(device.Tanh, y, a, rows*cols, 0)
	keep("unary", y)
	y = zeros(device.Float32, rows*cols)
	k.Binary(device.Pow, y, a, device.Contiguous([]int{rows, cols}), b, device.Layout{Shape: []int{rows, cols}, Strides: []int{0, 1}})
	keep("binary", y)
	y = zeros(device.Float32, rows*cols)
	k.Where(y, b, device.Contiguous([]int{rows, cols}), a, device.Contiguous([]int{rows, cols}), b, device.Layout{Shape: []int{rows, cols}, Strides: []int{1, 0}})
	keep("where", y)
	for _, op := range []device.ReduceOp{device.ReduceSum, device.ReduceMax, device.ReduceArgMax} {
		dt := device.Float32
		if op == device.ReduceArgMax {
			dt = device.Int64
		}
		y = zeros(dt, rows)
		k.Reduce(op, y, a, rows, cols, 1)
		keep("reduce-rows", y)
		y = zeros(dt, cols)
		k.Reduce(op, y, a, 1, rows, cols)
		keep("reduce-cols", y)
	}

	c := zeros(device.Float32, 16*64*64)
	k.MatMul(device.MatMulParams{Batch: 16, M: 64, N: 64, K: 96, Alpha: 1, AStride: 64 * 96, BStride: 0, CStride: 64 * 64}, c, a, b)
	keep("matmul-batch", c)
	c = zeros(device.Float32, 256*256)
	k.MatMul(device.MatMulParams{Batch: 1, M: 256, N: 256, K: 300, TransA: true, Alpha: 1}, c, a, b)
	keep("matmul-large", c)

	p := device.ConvParams{N: 16, C: 8, H: 14, W: 14, OutC: 16, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 2}
	x, w := randBuf(p.N*p.C*p.H*p.W), randBuf(p.OutC*p.C/p.Groups*p.KH*p.KW)
	ny := p.N * p.OutC * p.OutH() * p.OutW()
	dy := randBuf(ny)
	y = zeros(device.Float32, ny)
	k.Conv2D(p, y, x, w)
	keep("conv", y)
	dx := zeros(device.Float32, p.N*p.C*p.H*p.W)
	k.Conv2DGradInput(p, dx, dy, w)
	keep("conv-grad-input", dx)
	dw := zeros(device.Float32, p.OutC*p.C/p.Groups*p.KH*p.KW)
	k.Conv2DGradWeight(p, dw, dy, x)
	keep("conv-grad-weight", dw)

	pp := device.PoolParams{N: 16, C: 32, H: 14, W: 14, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}
	x = randBuf(pp.N * pp.C * pp.H * pp.W)
	npool := pp.N * pp.C * pp.OutH() * pp.OutW()
	y, arg := zeros(device.Float32, npool), zeros(device.Int64, npool)
	k.MaxPool2D(pp, y, arg, x)
	keep("maxpool", y)
	keep("maxpool-arg", arg)
	g := randBuf(npool)
	dx = zeros(device.Float32, pp.N*pp.C*pp.H*pp.W)
	k.MaxPool2DGrad(pp, dx, g, arg)
	keep("maxpool-grad", dx)
	y = zeros(device.Float32, npool)
	k.AvgPool2D(pp, y, x)
	keep("avgpool", y)
	dx = zeros(device.Float32, pp.N*pp.C*pp.H*pp.W)
	k.AvgPool2DGrad(pp, dx, g)
	keep("avgpool-grad", dx)
	return out
}

// TestGOMAXPROCSIndependent checks that results are bitwise identical
// whatever the number of workers, and from run to run. The exception is a
// single large matrix product computed by a BLAS library (and a
// convolution whose GEMM is split the same way): it is split
// into one block per worker, and libraries such as OpenBLAS take different
// code paths for different block sizes, so it is only bitwise identical
// from run to run with the same GOMAXPROCS (and close otherwise).
func TestGOMAXPROCSIndependent(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	blasSplit := cpu.Float32ByBLAS(cpu.Default())
	runtime.GOMAXPROCS(1)
	ref := workload(t, cpu.New())
	for _, procs := range []int{2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		var first map[string][]float32
		for run, d := range []*cpu.Device{cpu.New(), cpu.Default()} {
			got := workload(t, d)
			for name, want := range ref {
				if blasSplit && (name == "matmul-large" || name == "conv") {
					assert.InDeltaSlice(t, toF64(want), toF64(got[name]), 1e-4, "%s with GOMAXPROCS=%d", name, procs)
					if first != nil {
						assert.True(t, sameBits(first[name], got[name]), "%s differs from run to run with GOMAXPROCS=%d", name, procs)
					}
					continue
				}
				assert.True(t, sameBits(want, got[name]), "%s differs with GOMAXPROCS=%d (run %d)", name, procs, run)
			}
			first = got
		}
	}
}

func toF64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// sameBits reports whether a and b hold bitwise identical values.
func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
