package cuda

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/device/cuda/cudaemu"
	"github.com/hora-dl/hora/device/devicetest"
)

// skipReason says why the GPU tests cannot run, when they cannot.
var skipReason string

// onGPU is set when the tests run against a real GPU (HORA_CUDA_TEST=gpu,
// as make test-gpu sets it) rather than the emulator.
var onGPU = os.Getenv("HORA_CUDA_TEST") == "gpu"

// TestMain points the package at the CUDA emulator (device/cuda/cudaemu,
// fake libcuda, NVRTC and cuBLAS that run the kernels on the CPU), unless
// HORA_CUDA_TEST=gpu asks for the real libraries and GPU.
func TestMain(m *testing.M) {
	var cache string
	if !onGPU {
		var err error
		cache, err = os.MkdirTemp("", "hora-cuda-cache-*") // Hora's compiled kernels
		switch {
		case err != nil:
			skipReason = err.Error()
		case cudaemu.Available() != nil:
			skipReason = fmt.Sprintf("the CUDA emulator cannot be built: %v (HORA_CUDA_TEST=gpu runs on a real GPU)", cudaemu.Available())
		default:
			if libs, err := cudaemu.BuildCached(); err != nil {
				skipReason = fmt.Sprintf("building the CUDA emulator: %v", err)
			} else {
				os.Setenv("HORA_CUDA_LIBS", libs)
				os.Setenv("HORA_CACHE_DIR", cache)
			}
		}
	}
	code := m.Run()
	if cache != "" {
		os.RemoveAll(cache)
	}
	os.Exit(code)
}

// testDevice returns cuda:0 (the emulator's, or the GPU's), or skips.
func testDevice(t testing.TB) *Device {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	d, err := Open(0)
	if errors.Is(err, device.ErrUnavailable) {
		if onGPU { // HORA_CUDA_TEST=gpu: a missing GPU or library is a failure
			t.Fatalf("HORA_CUDA_TEST=gpu, but no GPU: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	require.NoError(t, err)
	return d
}

// TestConformance runs the device conformance suite (every kernel against
// its reference definition) with TensorFloat-32 off, so that float32
// matrix products meet the suite's 1e-5.
func TestConformance(t *testing.T) {
	d := testDevice(t)
	d.SetTF32(false)
	defer d.SetTF32(true)
	devicetest.RunAll(t, d)
	require.NoError(t, d.Sync())
}

func TestOpen(t *testing.T) {
	d := testDevice(t)
	assert.Equal(t, "cuda:0", d.Name())
	assert.NotEmpty(t, d.GPU())
	assert.Positive(t, d.ComputeCapability())
	again, err := device.Open("cuda:0")
	require.NoError(t, err)
	assert.Same(t, d, again, "one Device per GPU")
	n, err := Available()
	require.NoError(t, err)
	_, err = Open(n)
	require.Error(t, err)
	assert.ErrorIs(t, err, device.ErrUnavailable)
	assert.Contains(t, err.Error(), fmt.Sprintf("has %d GPU(s)", n))
}

// TestWriteReadThroughStaging moves more than one staging buffer's worth
// each way, for every stored type.
func TestWriteReadThroughStaging(t *testing.T) {
	d := testDevice(t)
	n := stagingBytes/4*2 + 12345
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(i%100003) * 0.5
	}
	b, err := d.Alloc(device.Float32, n)
	require.NoError(t, err)
	defer b.Free()
	require.NoError(t, d.Write(b, src))
	got := make([]float32, n)
	require.NoError(t, d.Read(got, b))
	assert.Equal(t, src, got)

	h, err := d.Alloc(device.Float16, 3)
	require.NoError(t, err)
	require.NoError(t, d.Write(h, []uint16{0x3c00, 0xc000, 0x7e00}))
	gh := make([]uint16, 3)
	require.NoError(t, d.Read(gh, h))
	assert.Equal(t, []uint16{0x3c00, 0xc000, 0x7e00}, gh)

	err = d.Write(b, make([]float64, n))
	assert.ErrorContains(t, err, "host slice is")
	err = d.Read(make([]float32, 3), b)
	assert.ErrorContains(t, err, fmt.Sprintf("buffer is %d × float32", n))
}

// TestAllocIsZeroed checks that Alloc clears memory that the allocator
// reuses (the emulator fills fresh memory with garbage).
func TestAllocIsZeroed(t *testing.T) {
	d := testDevice(t)
	for i := 0; i < 3; i++ {
		b, err := d.Alloc(device.Float64, 1000)
		require.NoError(t, err)
		got := make([]float64, 1000)
		require.NoError(t, d.Read(got, b))
		for j, v := range got {
			require.Zero(t, v, "element %d of allocation %d", j, i)
		}
		require.NoError(t, d.Write(b, fill(1000, 7)))
		b.Free()
		b.Free() // idempotent
	}
}

// TestSteadyStateAllocatesNothing repeats a step's allocations and checks
// that only the first asks the driver for memory.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	d := testDevice(t)
	k := d.Kernels()
	step := func() {
		var bufs []device.Buffer
		for _, n := range []int{10, 1000, 4096, 100000, 1000} {
			b, err := d.Alloc(device.Float32, n)
			require.NoError(t, err)
			k.Fill(b, n, 1)
			bufs = append(bufs, b)
		}
		for _, b := range bufs {
			b.Free()
		}
	}
	step()
	require.NoError(t, d.Sync())
	before := d.MemoryStats()
	for i := 0; i < 10; i++ {
		step()
	}
	require.NoError(t, d.Sync())
	after := d.MemoryStats()
	assert.Equal(t, before.Mallocs, after.Mallocs, "no cuMemAlloc in steady state")
	assert.Equal(t, before.InUse, after.InUse)
	require.NoError(t, d.EmptyCache())
	assert.Zero(t, d.MemoryStats().Cached)
}

// TestLaunchErrorReportedBySync queues a kernel that does not exist: the
// launch returns at once, and the next Sync names the kernel and the
// driver's result.
func TestLaunchErrorReportedBySync(t *testing.T) {
	d := testDevice(t)
	d.kern.launch1D("hora_no_such_kernel", 10, int64(10))
	err := d.Sync()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hora_no_such_kernel")
	assert.Contains(t, err.Error(), "CUDA_ERROR_NOT_FOUND")
	assert.NoError(t, d.Sync(), "the error is reported once")
}

// TestKernelsAreCachedOnDisk checks that the compiled kernels land in the
// cache folder, under a name with the architecture.
func TestKernelsAreCachedOnDisk(t *testing.T) {
	d := testDevice(t)
	require.NoError(t, d.Do(func() error { _, err := d.module(); return err }))
	if onGPU && os.Getenv("HORA_CACHE_DIR") == "" {
		t.Skip("the cache folder is the user's")
	}
	m, err := filepath.Glob(filepath.Join(CacheDir(), fmt.Sprintf("kernels-sm_%d-*.cubin", d.ComputeCapability())))
	require.NoError(t, err)
	assert.Len(t, m, 1, "one cached image in %s", CacheDir())
}

// TestCompileErrorShowsTheLog compiles broken CUDA C.
func TestCompileErrorShowsTheLog(t *testing.T) {
	testDevice(t)
	nv, err := loadNVRTC()
	require.NoError(t, err)
	_, err = nvrtcCompile(nv, `extern "C" __global__ void broken(float* x) { x[0] = undeclared_name; }`, "broken.cu", compileOptions(90))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NVRTC_ERROR_COMPILATION")
	assert.Contains(t, err.Error(), "undeclared_name")
}

// TestAutocast multiplies with bfloat16 and with float16 inputs: the
// result must be the exact product of the rounded inputs (float32
// accumulation), and within 16-bit precision of the float32 product.
func TestAutocast(t *testing.T) {
	d := testDevice(t)
	defer d.SetAutocast(0)
	assert.Error(t, d.SetAutocast(device.Int64))
	for _, tc := range []struct {
		dt    device.DType
		round func(float32) float32
		tol   float64
	}{
		{BFloat16, bf16, 1e-2},
		{device.Float16, f16, 2e-3},
	} {
		require.NoError(t, d.SetAutocast(tc.dt))
		assert.Equal(t, tc.dt, d.Autocast())
		const m, n, k = 33, 47, 61
		a, b := randomFloat32(m*k, 1), randomFloat32(k*n, 2)
		ab, bb := upload32(t, d, a), upload32(t, d, b)
		cb, err := d.Alloc(device.Float32, m*n)
		require.NoError(t, err)
		d.Kernels().MatMul(device.MatMulParams{Batch: 1, M: m, N: n, K: k, Alpha: 1}, cb, ab, bb)
		got := make([]float32, m*n)
		require.NoError(t, d.Read(got, cb))
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var exact, rounded, mag float64
				for l := 0; l < k; l++ {
					x, y := float64(a[i*k+l]), float64(b[l*n+j])
					exact += x * y
					rounded += float64(tc.round(a[i*k+l])) * float64(tc.round(b[l*n+j]))
					mag += math.Abs(x * y)
				}
				g := float64(got[i*n+j])
				require.InDelta(t, rounded, g, 1e-5*mag+1e-6, "%v: C[%d,%d] against the product of the rounded inputs", tc.dt, i, j)
				require.InDelta(t, exact, g, tc.tol*mag, "%v: C[%d,%d] against the float32 product", tc.dt, i, j)
			}
		}
	}
}

// f16 rounds x to float16 and back.
func f16(x float32) float32 {
	h := make([]uint16, 1)
	cpu.Float32ToFloat16(h, []float32{x})
	out := make([]float32, 1)
	cpu.Float16ToFloat32(out, h)
	return out[0]
}

// TestTF32 checks float32 products with TensorFloat-32 on against the CPU
// within 1e-3 relative (the emulator computes them exactly).
func TestTF32(t *testing.T) {
	d := testDevice(t)
	d.SetTF32(true)
	const m, n, k = 128, 96, 256
	a, b := randomFloat32(m*k, 3), randomFloat32(k*n, 4)
	cb, err := d.Alloc(device.Float32, m*n)
	require.NoError(t, err)
	d.Kernels().MatMul(device.MatMulParams{Batch: 1, M: m, N: n, K: k, Alpha: 1}, cb, upload32(t, d, a), upload32(t, d, b))
	got := make([]float32, m*n)
	require.NoError(t, d.Read(got, cb))
	c := cpu.Default()
	ca, _ := c.Alloc(device.Float32, m*k)
	cbb, _ := c.Alloc(device.Float32, k*n)
	cc, _ := c.Alloc(device.Float32, m*n)
	require.NoError(t, c.Write(ca, a))
	require.NoError(t, c.Write(cbb, b))
	c.Kernels().MatMul(device.MatMulParams{Batch: 1, M: m, N: n, K: k, Alpha: 1}, cc, ca, cbb)
	want := cc.(*cpu.Buffer).Float32s()
	for i := range want {
		require.InDelta(t, want[i], got[i], 1e-3*float64(k)*0.25, "element %d", i)
	}
}

// bf16 rounds x to bfloat16 (nearest, ties to even) and back.
func bf16(x float32) float32 {
	u := math.Float32bits(x)
	u = (u + 0x7fff + (u>>16)&1) &^ 0xffff
	return math.Float32frombits(u)
}

func randomFloat32(n int, seed int) []float32 {
	out := make([]float32, n)
	s := uint32(seed*2654435761 + 1)
	for i := range out {
		s = s*1664525 + 1013904223
		out[i] = float32(s>>8)/float32(1<<24)*2 - 1
	}
	return out
}

func fill(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func upload32(t testing.TB, d *Device, v []float32) device.Buffer {
	t.Helper()
	b, err := d.Alloc(device.Float32, len(v))
	require.NoError(t, err)
	require.NoError(t, d.Write(b, v))
	return b
}

func TestLoadKernelsFillsTheCache(t *testing.T) {
	d := testDevice(t)
	if onGPU && os.Getenv("HORA_CACHE_DIR") == "" {
		t.Skip("the cache folder is the user's")
	}
	require.NoError(t, d.LoadKernels())
	assert.True(t, d.KernelsCached())
}
