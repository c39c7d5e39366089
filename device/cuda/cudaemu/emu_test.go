//go:build linux

package cudaemu

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// driver is the part of libcuda the tests call (signatures as
// device/cuda/bindings.go binds them).
type driver struct {
	cuInit                    func(flags uint32) int32
	cuDriverGetVersion        func(v *int32) int32
	cuDeviceGetCount          func(n *int32) int32
	cuDeviceGet               func(dev *int32, ordinal int32) int32
	cuDeviceGetName           func(name *byte, n int32, dev int32) int32
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) int32
	cuDeviceTotalMem          func(bytes *uintptr, dev int32) int32
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease func(dev int32) int32
	cuCtxSetCurrent           func(ctx uintptr) int32
	cuStreamCreate            func(s *uintptr, flags uint32) int32
	cuStreamDestroy           func(s uintptr) int32
	cuStreamSynchronize       func(s uintptr) int32
	cuMemAlloc                func(p *uintptr, bytes uintptr) int32
	cuMemFree                 func(p uintptr) int32
	cuMemAllocHost            func(p *unsafe.Pointer, bytes uintptr) int32
	cuMemFreeHost             func(p unsafe.Pointer) int32
	cuMemcpyHtoDAsync         func(dst uintptr, src unsafe.Pointer, bytes uintptr, s uintptr) int32
	cuMemcpyDtoHAsync         func(dst unsafe.Pointer, src uintptr, bytes uintptr, s uintptr) int32
	cuMemcpyDtoDAsync         func(dst, src uintptr, bytes uintptr, s uintptr) int32
	cuMemsetD8Async           func(dst uintptr, v uint8, bytes uintptr, s uintptr) int32
	cuMemGetInfo              func(free, total *uintptr) int32
	cuModuleLoadData          func(mod *uintptr, image unsafe.Pointer) int32
	cuModuleGetFunction       func(f *uintptr, mod uintptr, name string) int32
	cuModuleUnload            func(mod uintptr) int32
	cuLaunchKernel            func(f uintptr, gx, gy, gz, bx, by, bz uint32, shared uint32, s uintptr, params *unsafe.Pointer, extra *unsafe.Pointer) int32
	cuGetErrorName            func(code int32, name **byte) int32
	cuGetErrorString          func(code int32, text **byte) int32
	horaEmuStats              func(what int32) int64
	horaEmuSetMemLimit        func(bytes int64)
}

type nvrtc struct {
	nvrtcVersion           func(major, minor *int32) int32
	nvrtcCreateProgram     func(prog *uintptr, src, name string, nHeaders int32, headers, includeNames unsafe.Pointer) int32
	nvrtcCompileProgram    func(prog uintptr, nOpts int32, opts *unsafe.Pointer) int32
	nvrtcGetProgramLogSize func(prog uintptr, n *uintptr) int32
	nvrtcGetProgramLog     func(prog uintptr, log *byte) int32
	nvrtcGetCUBINSize      func(prog uintptr, n *uintptr) int32
	nvrtcGetCUBIN          func(prog uintptr, image *byte) int32
	nvrtcDestroyProgram    func(prog *uintptr) int32
}

type cublas struct {
	cublasCreate              func(h *uintptr) int32
	cublasDestroy             func(h uintptr) int32
	cublasSetStream           func(h uintptr, s uintptr) int32
	cublasSetMathMode         func(h uintptr, mode int32) int32
	cublasSgemmStridedBatched func(h uintptr, ta, tb int32, m, n, k int32, alpha *float32, a uintptr, lda int32, sa int64,
		b uintptr, ldb int32, sb int64, beta *float32, c uintptr, ldc int32, sc int64, batch int32) int32
	cublasDgemmStridedBatched func(h uintptr, ta, tb int32, m, n, k int32, alpha *float64, a uintptr, lda int32, sa int64,
		b uintptr, ldb int32, sb int64, beta *float64, c uintptr, ldc int32, sc int64, batch int32) int32
	cublasGemmStridedBatchedEx func(h uintptr, ta, tb int32, m, n, k int32, alpha unsafe.Pointer, a uintptr, at int32, lda int32, sa int64,
		b uintptr, bt int32, ldb int32, sb int64, beta unsafe.Pointer, c uintptr, ct int32, ldc int32, sc int64, batch int32,
		compute int32, algo int32) int32
}

// bindAll fills every func field of api from the library h, by field name
// (with the _v2 suffix where the ABI has one).
func bindAll(h uintptr, api any) error {
	v := reflect.ValueOf(api).Elem()
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		sym := name
		switch name {
		case "cuDeviceTotalMem", "cuDevicePrimaryCtxRelease", "cuStreamDestroy", "cuMemAlloc", "cuMemFree", "cuMemAllocHost",
			"cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuMemcpyDtoDAsync", "cuMemGetInfo", "cublasCreate", "cublasDestroy",
			"cublasSetStream":
			sym += "_v2"
		}
		addr, err := purego.Dlsym(h, sym)
		if err != nil {
			return fmt.Errorf("%s: %v", sym, err)
		}
		f := v.Field(i)
		purego.RegisterFunc(reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Interface(), addr)
	}
	return nil
}

var (
	libDir string
	cu     driver
	nv     nvrtc
	blas   cublas
	ctx0   uintptr
	stream uintptr
)

func TestMain(m *testing.M) {
	if err := Available(); err != nil {
		fmt.Println("skipping the CUDA emulator's tests:", err)
		os.Exit(0)
	}
	code := func() int {
		dir := os.Getenv("HORA_EMU_TEST_LIBS") // set for TestCrashReport's child process
		if dir == "" {
			var err error
			if dir, err = os.MkdirTemp("", "hora-emu-test-*"); err != nil {
				panic(err)
			}
			defer os.RemoveAll(dir)
			if os.Getenv("HORA_EMU_CACHE") == "" {
				os.Setenv("HORA_EMU_CACHE", filepath.Join(dir, "cache")) // a fresh cache: the tests compile for real
			}
			t0 := time.Now()
			if err := Build(dir); err != nil {
				fmt.Println(err)
				return 1
			}
			fmt.Printf("built the emulator in %v\n", time.Since(t0).Round(time.Millisecond))
		}
		libDir = dir
		for _, l := range []struct {
			name string
			api  any
		}{{DriverLib, &cu}, {NVRTCLib, &nv}, {CUBLASLib, &blas}} {
			h, err := purego.Dlopen(filepath.Join(dir, l.name), purego.RTLD_NOW|purego.RTLD_LOCAL)
			if err != nil {
				fmt.Println(err)
				return 1
			}
			if err := bindAll(h, l.api); err != nil {
				fmt.Println(err)
				return 1
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

// locked locks the test's goroutine to its thread and makes device 0's
// context current there (after the driver is initialised).
func locked(t *testing.T) {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	if r := cu.cuInit(0); r != 0 {
		t.Fatalf("cuInit: %d", r)
	}
	if ctx0 == 0 {
		if r := cu.cuDevicePrimaryCtxRetain(&ctx0, 0); r != 0 {
			t.Fatalf("cuDevicePrimaryCtxRetain: %d", r)
		}
	}
	if r := cu.cuCtxSetCurrent(ctx0); r != 0 {
		t.Fatalf("cuCtxSetCurrent: %d", r)
	}
	if stream == 0 {
		if r := cu.cuStreamCreate(&stream, 1); r != 0 {
			t.Fatalf("cuStreamCreate: %d", r)
		}
	}
}

func cstr(p *byte) string {
	if p == nil {
		return ""
	}
	var n int
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

func want(t *testing.T, what string, got, wantCode int32) {
	t.Helper()
	if got != wantCode {
		t.Fatalf("%s = %d, want %d", what, got, wantCode)
	}
}

// ---- driver ----

func TestDriver(t *testing.T) {
	var n int32
	// Run before cuInit in this process only when this test runs first; cuInit is idempotent.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	want(t, "cuInit(1)", cu.cuInit(1), 1)
	want(t, "cuInit", cu.cuInit(0), 0)
	want(t, "cuDriverGetVersion", cu.cuDriverGetVersion(&n), 0)
	if n != 13000 {
		t.Errorf("driver version %d", n)
	}
	want(t, "cuDeviceGetCount", cu.cuDeviceGetCount(&n), 0)
	if n != 2 {
		t.Errorf("%d devices, want 2", n)
	}
	var dev int32
	want(t, "cuDeviceGet(1)", cu.cuDeviceGet(&dev, 1), 0)
	want(t, "cuDeviceGet(2)", cu.cuDeviceGet(&dev, 2), 101)
	var name [64]byte
	want(t, "cuDeviceGetName", cu.cuDeviceGetName(&name[0], 64, 0), 0)
	if s := cstr(&name[0]); s != "Hora CUDA emulator" {
		t.Errorf("name %q", s)
	}
	for attr, v := range map[int32]int32{16: 4, 75: 9, 76: 0, 1: 1024, 12345: 0} {
		var got int32
		want(t, "cuDeviceGetAttribute", cu.cuDeviceGetAttribute(&got, attr, 0), 0)
		if got != v {
			t.Errorf("attribute %d = %d, want %d", attr, got, v)
		}
	}
	var total uintptr
	want(t, "cuDeviceTotalMem", cu.cuDeviceTotalMem(&total, 1), 0)
	if total != 16<<30 {
		t.Errorf("total memory %d", total)
	}
	for code, wantName := range map[int32]string{0: "CUDA_SUCCESS", 2: "CUDA_ERROR_OUT_OF_MEMORY", 500: "CUDA_ERROR_NOT_FOUND", 719: "CUDA_ERROR_LAUNCH_FAILED"} {
		var p *byte
		want(t, "cuGetErrorName", cu.cuGetErrorName(code, &p), 0)
		if cstr(p) != wantName {
			t.Errorf("cuGetErrorName(%d) = %q", code, cstr(p))
		}
		want(t, "cuGetErrorString", cu.cuGetErrorString(code, &p), 0)
		if cstr(p) == "" {
			t.Errorf("cuGetErrorString(%d) is empty", code)
		}
	}
	var p *byte
	want(t, "cuGetErrorName(12345)", cu.cuGetErrorName(12345, &p), 1)

	// A context is needed on the calling thread.
	var ctx1 uintptr
	want(t, "cuDevicePrimaryCtxRetain(1)", cu.cuDevicePrimaryCtxRetain(&ctx1, 1), 0)
	want(t, "cuCtxSetCurrent(nil)", cu.cuCtxSetCurrent(0), 0)
	var d uintptr
	want(t, "cuMemAlloc without a context", cu.cuMemAlloc(&d, 16), 201)
	want(t, "cuCtxSetCurrent(bogus)", cu.cuCtxSetCurrent(12345), 201)
	want(t, "cuCtxSetCurrent(ctx1)", cu.cuCtxSetCurrent(ctx1), 0)
	want(t, "cuMemAlloc", cu.cuMemAlloc(&d, 16), 0)
	want(t, "cuMemFree", cu.cuMemFree(d), 0)
	var s uintptr
	want(t, "cuStreamCreate", cu.cuStreamCreate(&s, 0), 0)
	want(t, "cuStreamSynchronize", cu.cuStreamSynchronize(s), 0)
	want(t, "cuStreamDestroy", cu.cuStreamDestroy(s), 0)
	want(t, "cuStreamDestroy again", cu.cuStreamDestroy(s), 400)
	want(t, "cuStreamSynchronize(destroyed)", cu.cuStreamSynchronize(s), 400)
	want(t, "cuCtxSetCurrent(nil)", cu.cuCtxSetCurrent(0), 0)
	want(t, "cuDevicePrimaryCtxRelease(1)", cu.cuDevicePrimaryCtxRelease(1), 0)
	want(t, "cuCtxSetCurrent(released)", cu.cuCtxSetCurrent(ctx1), 201)
}

func TestMemory(t *testing.T) {
	locked(t)
	live0 := cu.horaEmuStats(0)
	calls0 := cu.horaEmuStats(1)
	var p, q uintptr
	want(t, "cuMemAlloc(0)", cu.cuMemAlloc(&p, 0), 1)
	want(t, "cuMemAlloc", cu.cuMemAlloc(&p, 1000), 0)
	want(t, "cuMemAlloc", cu.cuMemAlloc(&q, 1000), 0)
	if p%256 != 0 || q%256 != 0 {
		t.Errorf("allocations %#x %#x not 256-byte aligned", p, q)
	}
	if got := cu.horaEmuStats(0) - live0; got != 2 {
		t.Errorf("live allocations +%d, want +2", got)
	}
	if got := cu.horaEmuStats(1) - calls0; got != 2 { // cuMemAlloc(0) is refused before it counts
		t.Errorf("cuMemAlloc calls +%d, want +2", got)
	}
	got := make([]byte, 1000)
	want(t, "cuMemcpyDtoHAsync", cu.cuMemcpyDtoHAsync(unsafe.Pointer(&got[0]), p, 1000, stream), 0)
	for i, b := range got {
		if b != 0xff {
			t.Fatalf("new memory byte %d = %#x, want 0xff garbage", i, b)
		}
	}
	src := make([]byte, 1000)
	for i := range src {
		src[i] = byte(i * 7)
	}
	want(t, "cuMemcpyHtoDAsync", cu.cuMemcpyHtoDAsync(p, unsafe.Pointer(&src[0]), 1000, stream), 0)
	want(t, "cuMemcpyDtoDAsync", cu.cuMemcpyDtoDAsync(q, p, 1000, stream), 0)
	want(t, "cuMemsetD8Async", cu.cuMemsetD8Async(q+10, 0, 20, stream), 0)
	want(t, "cuStreamSynchronize", cu.cuStreamSynchronize(stream), 0)
	want(t, "cuMemcpyDtoHAsync", cu.cuMemcpyDtoHAsync(unsafe.Pointer(&got[0]), q, 1000, stream), 0)
	for i := range got {
		w := src[i]
		if i >= 10 && i < 30 {
			w = 0
		}
		if got[i] != w {
			t.Fatalf("byte %d = %d, want %d", i, got[i], w)
		}
	}
	// Out of bounds.
	want(t, "cuMemcpyHtoDAsync past the end", cu.cuMemcpyHtoDAsync(p+1, unsafe.Pointer(&src[0]), 1000, stream), 1)
	want(t, "cuMemcpyDtoHAsync past the end", cu.cuMemcpyDtoHAsync(unsafe.Pointer(&got[0]), q+500, 501, stream), 1)
	want(t, "cuMemsetD8Async wild", cu.cuMemsetD8Async(12345, 0, 1, stream), 1)
	want(t, "cuMemcpyHtoDAsync bad stream", cu.cuMemcpyHtoDAsync(p, unsafe.Pointer(&src[0]), 10, 777), 400)
	// Frees.
	want(t, "cuMemFree inside", cu.cuMemFree(p+256), 1)
	want(t, "cuMemFree", cu.cuMemFree(p), 0)
	want(t, "cuMemFree twice", cu.cuMemFree(p), 1)
	want(t, "cuMemFree", cu.cuMemFree(q), 0)
	if got := cu.horaEmuStats(0); got != live0 {
		t.Errorf("live allocations %d, want %d", got, live0)
	}
	// Pinned memory.
	var h unsafe.Pointer
	want(t, "cuMemAllocHost", cu.cuMemAllocHost(&h, 100), 0)
	want(t, "cuMemFreeHost", cu.cuMemFreeHost(h), 0)
	want(t, "cuMemFreeHost twice", cu.cuMemFreeHost(h), 1)
	// The memory limit, by variable and by function.
	var free, total uintptr
	want(t, "cuMemGetInfo", cu.cuMemGetInfo(&free, &total), 0)
	if total != 16<<30 || free > total {
		t.Errorf("cuMemGetInfo: free %d total %d", free, total)
	}
	live := uintptr(cu.horaEmuStats(3))
	t.Setenv("HORA_EMU_MEM_LIMIT", fmt.Sprint(live+1<<20))
	want(t, "cuMemGetInfo", cu.cuMemGetInfo(&free, &total), 0)
	if total != live+1<<20 || free != 1<<20 {
		t.Errorf("with HORA_EMU_MEM_LIMIT: free %d total %d", free, total)
	}
	want(t, "cuMemAlloc 512K", cu.cuMemAlloc(&p, 512<<10), 0)
	want(t, "cuMemAlloc 600K over the limit", cu.cuMemAlloc(&q, 600<<10), 2)
	want(t, "cuMemFree", cu.cuMemFree(p), 0)
	want(t, "cuMemAlloc 600K", cu.cuMemAlloc(&q, 600<<10), 0)
	want(t, "cuMemFree", cu.cuMemFree(q), 0)
	os.Unsetenv("HORA_EMU_MEM_LIMIT")
	cu.horaEmuSetMemLimit(int64(live + 100))
	want(t, "cuMemAlloc over horaEmuSetMemLimit", cu.cuMemAlloc(&q, 101), 2)
	want(t, "cuMemAlloc under horaEmuSetMemLimit", cu.cuMemAlloc(&q, 100), 0)
	want(t, "cuMemFree", cu.cuMemFree(q), 0)
	cu.horaEmuSetMemLimit(-1)
	want(t, "cuMemAlloc 64 MiB", cu.cuMemAlloc(&q, 64<<20), 0)
	want(t, "cuMemFree", cu.cuMemFree(q), 0)
}

// ---- NVRTC and kernels ----

const testSource = `
struct Strided { int ndim; int pad; long long shape[8]; long long strides[8]; long long offset; };

#define KERNEL_SCALE(SUF, T) \
extern "C" __global__ void scale##SUF(const T* __restrict__ x, T* __restrict__ y, T a, long long n) \
{ \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) \
        y[i] = a * x[i]; \
}
KERNEL_SCALE(_f32, float)
KERNEL_SCALE(_f64, double)

// The sum of each row of x (rows × cols), one block of 256 threads per row.
template <typename T>
__device__ T block_sum(T v)
{
    __shared__ T s[256];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    T r = s[0];
    __syncthreads(); // s is reused by the next call
    return r;
}

extern "C" __global__ void row_sum_f32(const float* x, float* out, int rows, int cols)
{
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        float acc = 0;
        for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += x[(long long)r * cols + c];
        acc = block_sum(acc);
        if (threadIdx.x == 0) out[r] = acc;
    }
}

extern "C" __global__ void gather_f32(const float* x, float* y, Strided s, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {
        long long rem = i, off = s.offset;
        for (int d = s.ndim - 1; d >= 0; d--) {
            off += (rem % s.shape[d]) * s.strides[d];
            rem /= s.shape[d];
        }
        y[i] = x[off];
    }
}

// Transpose of a rows × cols matrix through a shared 16 × 16 tile.
extern "C" __global__ void transpose_f32(const float* x, float* y, int rows, int cols)
{
    __shared__ float tile[16][17];
    int c = blockIdx.x * 16 + threadIdx.x, r = blockIdx.y * 16 + threadIdx.y;
    if (r < rows && c < cols) tile[threadIdx.y][threadIdx.x] = x[r * cols + c];
    __syncthreads();
    int tc = blockIdx.y * 16 + threadIdx.x, tr = blockIdx.x * 16 + threadIdx.y;
    if (tr < cols && tc < rows) y[tr * rows + tc] = tile[threadIdx.x][threadIdx.y];
}

extern "C" __global__ void indices(int* out)
{
    long long t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    long long b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    long long i = (b * blockDim.x * blockDim.y * blockDim.z + t) * 6;
    out[i] = threadIdx.x; out[i + 1] = threadIdx.y; out[i + 2] = threadIdx.z;
    out[i + 3] = blockIdx.x; out[i + 4] = blockIdx.y; out[i + 5] = blockIdx.z;
}

extern "C" __global__ void atomic_sum_f64(const double* x, double* out, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x)
        atomicAdd(out, x[i]);
}

extern "C" __global__ void math_f32(float* y)
{
    const float inf = __uint_as_float(0x7f800000u);
    y[0] = expf(1.0f); y[1] = exp(1.0f); y[2] = isnan(inf - inf) ? 1.0f : 0.0f; y[3] = isinf(-inf) ? 1.0f : 0.0f;
    y[4] = tanhf(0.5f); y[5] = erff(0.5f); y[6] = fmaxf(2.0f, 3.0f); y[7] = (float)__double_as_longlong(1.0);
}

extern "C" __global__ void divergent(float* x)
{
    if (threadIdx.x == 5) return;
    __syncthreads();
    x[threadIdx.x] = 1;
}

extern "C" __global__ void no_args(void) {}

extern "C" __global__ void poke(float* x, long long i) { x[i] = 1; }

extern "C" __global__ void divide(int* x, int d) { x[threadIdx.x] = x[threadIdx.x] / d; }

// Reads shared memory it never wrote: garbage, as on a GPU.
extern "C" __global__ void shared_garbage(unsigned int* out)
{
    __shared__ unsigned int s[4];
    if (threadIdx.x == 0) s[0] = 7;
    __syncthreads();
    out[0] = s[0];
    out[1] = s[1];
}
`

// compile compiles src with the fake NVRTC; it returns the image, or the
// result and the log.
func compile(t *testing.T, src string, opts ...string) ([]byte, int32, string) {
	t.Helper()
	var prog uintptr
	want(t, "nvrtcCreateProgram", nv.nvrtcCreateProgram(&prog, src, "test.cu", 0, nil, nil), 0)
	defer nv.nvrtcDestroyProgram(&prog)
	cOpts := make([][]byte, len(opts))
	ptrs := make([]unsafe.Pointer, len(opts)+1)
	for i, o := range opts {
		cOpts[i] = append([]byte(o), 0)
		ptrs[i] = unsafe.Pointer(&cOpts[i][0])
	}
	r := nv.nvrtcCompileProgram(prog, int32(len(opts)), &ptrs[0])
	runtime.KeepAlive(cOpts)
	var n uintptr
	want(t, "nvrtcGetProgramLogSize", nv.nvrtcGetProgramLogSize(prog, &n), 0)
	logBuf := make([]byte, n)
	want(t, "nvrtcGetProgramLog", nv.nvrtcGetProgramLog(prog, &logBuf[0]), 0)
	log := strings.TrimRight(string(logBuf), "\x00")
	if r != 0 {
		return nil, r, log
	}
	want(t, "nvrtcGetCUBINSize", nv.nvrtcGetCUBINSize(prog, &n), 0)
	if n == 0 {
		return nil, 0, log
	}
	img := make([]byte, n)
	want(t, "nvrtcGetCUBIN", nv.nvrtcGetCUBIN(prog, &img[0]), 0)
	return img, 0, log
}

var testOpts = []string{"--gpu-architecture=sm_90", "--std=c++17", "-default-device"}

// module compiles and loads testSource once.
func module(t *testing.T) uintptr {
	t.Helper()
	img, r, log := compile(t, testSource, testOpts...)
	if r != 0 {
		t.Fatalf("nvrtcCompileProgram = %d\n%s", r, log)
	}
	var mod uintptr
	want(t, "cuModuleLoadData", cu.cuModuleLoadData(&mod, unsafe.Pointer(&img[0])), 0)
	t.Cleanup(func() { cu.cuModuleUnload(mod) })
	return mod
}

// params holds kernel arguments: each value copied to its own memory.
type params struct{ ptrs []unsafe.Pointer }

func args(vals ...any) *params {
	p := &params{}
	for _, v := range vals {
		rv := reflect.New(reflect.TypeOf(v))
		rv.Elem().Set(reflect.ValueOf(v))
		p.ptrs = append(p.ptrs, rv.UnsafePointer())
	}
	return p
}

func launch(t *testing.T, mod uintptr, name string, grid, block [3]uint32, a *params) int32 {
	t.Helper()
	var f uintptr
	want(t, "cuModuleGetFunction("+name+")", cu.cuModuleGetFunction(&f, mod, name), 0)
	var pp *unsafe.Pointer
	if a != nil && len(a.ptrs) > 0 {
		pp = &a.ptrs[0]
	}
	r := cu.cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, stream, pp, nil)
	runtime.KeepAlive(a)
	return r
}

func devAlloc(t *testing.T, bytes int) uintptr {
	t.Helper()
	var p uintptr
	want(t, "cuMemAlloc", cu.cuMemAlloc(&p, uintptr(bytes)), 0)
	t.Cleanup(func() { cu.cuMemFree(p) })
	return p
}

func upload[T any](t *testing.T, x []T) uintptr {
	t.Helper()
	n := len(x) * int(unsafe.Sizeof(x[0]))
	p := devAlloc(t, n)
	want(t, "cuMemcpyHtoDAsync", cu.cuMemcpyHtoDAsync(p, unsafe.Pointer(&x[0]), uintptr(n), stream), 0)
	return p
}

func download[T any](t *testing.T, p uintptr, n int) []T {
	t.Helper()
	x := make([]T, n)
	want(t, "cuMemcpyDtoHAsync", cu.cuMemcpyDtoHAsync(unsafe.Pointer(&x[0]), p, uintptr(n)*unsafe.Sizeof(x[0]), stream), 0)
	return x
}

func TestKernels(t *testing.T) {
	locked(t)
	var major, minor int32
	want(t, "nvrtcVersion", nv.nvrtcVersion(&major, &minor), 0)
	if major != 12 || minor != 8 {
		t.Errorf("nvrtcVersion %d.%d", major, minor)
	}
	t0 := time.Now()
	mod := module(t)
	t.Logf("compiled and loaded the test module in %v", time.Since(t0).Round(time.Millisecond))
	launches0 := cu.horaEmuStats(2)

	t.Run("scale", func(t *testing.T) {
		locked(t)
		const n = 1 << 20
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i)
		}
		dx, dy := upload(t, x), devAlloc(t, 4*n)
		t0 := time.Now()
		want(t, "launch scale_f32", launch(t, mod, "scale_f32", [3]uint32{4096, 1, 1}, [3]uint32{256, 1, 1}, args(uint64(dx), uint64(dy), float32(0.5), int64(n))), 0)
		el := time.Since(t0)
		t.Logf("scale_f32 over %d elements (4096 × 256 threads): %v", n, el)
		if el > 2*time.Second {
			t.Errorf("too slow: %v", el)
		}
		y := download[float32](t, dy, n)
		for i := range y {
			if y[i] != float32(i)*0.5 {
				t.Fatalf("y[%d] = %v", i, y[i])
			}
		}
		// A grid smaller than n: the loop strides.
		xd := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
		dxd, dyd := upload(t, xd), devAlloc(t, 80)
		want(t, "launch scale_f64", launch(t, mod, "scale_f64", [3]uint32{2, 1, 1}, [3]uint32{3, 1, 1}, args(uint64(dxd), uint64(dyd), float64(-2), int64(10))), 0)
		for i, v := range download[float64](t, dyd, 10) {
			if v != -2*xd[i] {
				t.Fatalf("scale_f64: y[%d] = %v", i, v)
			}
		}
	})

	t.Run("row_sum", func(t *testing.T) {
		locked(t)
		for _, sz := range [][2]int{{3, 5}, {7, 1000}, {4096, 256}} {
			rows, cols := sz[0], sz[1]
			x := make([]float32, rows*cols)
			wantSum := make([]float64, rows)
			for i := range x {
				x[i] = float32(i%13) - 6
				wantSum[i/cols] += float64(x[i])
			}
			dx, dout := upload(t, x), devAlloc(t, 4*rows)
			grid := uint32(min(rows, 1024))
			t0 := time.Now()
			want(t, "launch row_sum_f32", launch(t, mod, "row_sum_f32", [3]uint32{grid, 1, 1}, [3]uint32{256, 1, 1}, args(uint64(dx), uint64(dout), int32(rows), int32(cols))), 0)
			t.Logf("row_sum_f32 %d × %d (grid %d × 256 threads, 10 barriers per row): %v", rows, cols, grid, time.Since(t0))
			for r, v := range download[float32](t, dout, rows) {
				if float64(v) != wantSum[r] {
					t.Fatalf("%d × %d: row %d sum %v, want %v", rows, cols, r, v, wantSum[r])
				}
			}
		}
	})

	t.Run("gather", func(t *testing.T) {
		locked(t)
		// y = x[1:, ::2] of a 3 × 4 row-major x, viewed with strides.
		x := []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
		type strided struct {
			NDim    int32
			_       int32
			Shape   [8]int64
			Strides [8]int64
			Offset  int64
		}
		s := strided{NDim: 2, Offset: 4}
		s.Shape[0], s.Shape[1] = 2, 2
		s.Strides[0], s.Strides[1] = 4, 2
		dx, dy := upload(t, x), devAlloc(t, 16)
		want(t, "launch gather_f32", launch(t, mod, "gather_f32", [3]uint32{1, 1, 1}, [3]uint32{256, 1, 1}, args(uint64(dx), uint64(dy), s, int64(4))), 0)
		if got := download[float32](t, dy, 4); !reflect.DeepEqual(got, []float32{4, 6, 8, 10}) {
			t.Fatalf("gather: %v", got)
		}
	})

	t.Run("transpose", func(t *testing.T) {
		locked(t)
		rows, cols := 37, 50
		x := make([]float32, rows*cols)
		for i := range x {
			x[i] = float32(i)
		}
		dx, dy := upload(t, x), devAlloc(t, 4*rows*cols)
		want(t, "launch transpose_f32", launch(t, mod, "transpose_f32", [3]uint32{(50 + 15) / 16, (37 + 15) / 16, 1}, [3]uint32{16, 16, 1}, args(uint64(dx), uint64(dy), int32(rows), int32(cols))), 0)
		y := download[float32](t, dy, rows*cols)
		for r := 0; r < rows; r++ {
			for c := 0; c < cols; c++ {
				if y[c*rows+r] != x[r*cols+c] {
					t.Fatalf("transpose: y[%d][%d] = %v, want %v", c, r, y[c*rows+r], x[r*cols+c])
				}
			}
		}
	})

	t.Run("indices", func(t *testing.T) {
		locked(t)
		grid, block := [3]uint32{3, 2, 2}, [3]uint32{4, 3, 2}
		n := 3 * 2 * 2 * 4 * 3 * 2
		d := devAlloc(t, 4*6*n)
		want(t, "launch indices", launch(t, mod, "indices", grid, block, args(uint64(d))), 0)
		got := download[int32](t, d, 6*n)
		i := 0
		for bz := int32(0); bz < 2; bz++ {
			for by := int32(0); by < 2; by++ {
				for bx := int32(0); bx < 3; bx++ {
					for tz := int32(0); tz < 2; tz++ {
						for ty := int32(0); ty < 3; ty++ {
							for tx := int32(0); tx < 4; tx++ {
								w := []int32{tx, ty, tz, bx, by, bz}
								if !reflect.DeepEqual(got[i:i+6], w) {
									t.Fatalf("thread %d: %v, want %v", i/6, got[i:i+6], w)
								}
								i += 6
							}
						}
					}
				}
			}
		}
	})

	t.Run("atomic", func(t *testing.T) {
		locked(t)
		x := make([]float64, 10000)
		var sum float64
		for i := range x {
			x[i] = float64(i)
			sum += x[i]
		}
		dx, dout := upload(t, x), upload(t, []float64{0})
		want(t, "launch atomic_sum_f64", launch(t, mod, "atomic_sum_f64", [3]uint32{8, 1, 1}, [3]uint32{256, 1, 1}, args(uint64(dx), uint64(dout), int64(len(x)))), 0)
		if got := download[float64](t, dout, 1)[0]; got != sum {
			t.Fatalf("atomic sum %v, want %v", got, sum)
		}
	})

	t.Run("math", func(t *testing.T) {
		locked(t)
		d := devAlloc(t, 32)
		want(t, "launch math_f32", launch(t, mod, "math_f32", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, args(uint64(d))), 0)
		got := download[float32](t, d, 8)
		w := []float32{float32(math.E), float32(math.E), 1, 1, float32(math.Tanh(0.5)), float32(math.Erf(0.5)), 3, float32(math.Float64bits(1))}
		for i := range w {
			if math.Abs(float64(got[i]-w[i])) > 1e-6*math.Abs(float64(w[i])) {
				t.Errorf("math[%d] = %v, want %v", i, got[i], w[i])
			}
		}
	})

	t.Run("shared_garbage", func(t *testing.T) {
		locked(t)
		d := devAlloc(t, 8)
		want(t, "launch shared_garbage", launch(t, mod, "shared_garbage", [3]uint32{1, 1, 1}, [3]uint32{2, 1, 1}, args(uint64(d))), 0)
		if got := download[uint32](t, d, 2); got[0] != 7 || got[1] != 0xffffffff {
			t.Errorf("shared memory: %#x, want [0x7 0xffffffff]", got)
		}
	})

	t.Run("errors", func(t *testing.T) {
		locked(t)
		d := devAlloc(t, 4*256)
		want(t, "divergent __syncthreads", launch(t, mod, "divergent", [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, args(uint64(d))), 719)
		// The emulator recovers: the next launches work.
		want(t, "no_args", launch(t, mod, "no_args", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, nil), 0)
		want(t, "a block of 1024 threads", launch(t, mod, "no_args", [3]uint32{1, 1, 1}, [3]uint32{1024, 1, 1}, nil), 0)
		for _, dims := range [][2][3]uint32{
			{{0, 1, 1}, {1, 1, 1}}, {{1, 1, 1}, {0, 1, 1}}, {{1, 1, 1}, {1025, 1, 1}}, {{1, 1, 1}, {512, 4, 1}}, {{1, 0, 1}, {1, 1, 1}},
		} {
			want(t, fmt.Sprintf("launch grid %v block %v", dims[0], dims[1]), launch(t, mod, "no_args", dims[0], dims[1], nil), 1)
		}
		// Writes past either end of a buffer are caught by the guards around it.
		b := devAlloc(t, 4*100)
		want(t, "poke x[99]", launch(t, mod, "poke", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, args(uint64(b), int64(99))), 0)
		want(t, "poke x[100]", launch(t, mod, "poke", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, args(uint64(b), int64(100))), 700)
		want(t, "poke x[130]", launch(t, mod, "poke", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, args(uint64(b+40), int64(120))), 700)
		want(t, "poke x[-1]", launch(t, mod, "poke", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, args(uint64(b), int64(-1))), 700)
		want(t, "poke x[0]", launch(t, mod, "poke", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, args(uint64(b), int64(0))), 0)
		want(t, "kernel with parameters and no kernelParams", launch(t, mod, "scale_f32", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, nil), 1)
		var f uintptr
		want(t, "cuModuleGetFunction(missing)", cu.cuModuleGetFunction(&f, mod, "missing"), 500)
		want(t, "cuModuleGetFunction(block_sum)", cu.cuModuleGetFunction(&f, mod, "block_sum"), 500)
		want(t, "cuLaunchKernel(bogus)", cu.cuLaunchKernel(12345, 1, 1, 1, 1, 1, 1, 0, stream, nil, nil), 400)
		garbage := make([]byte, 64)
		var m2 uintptr
		want(t, "cuModuleLoadData(garbage)", cu.cuModuleLoadData(&m2, unsafe.Pointer(&garbage[0])), 200)
	})

	if got := cu.horaEmuStats(2) - launches0; got < 10 {
		t.Errorf("horaEmuStats(2) counted %d launches", got)
	}
}

// A kernel that crashes the process is named on stderr first.
func TestCrashReport(t *testing.T) {
	if c := os.Getenv("HORA_EMU_CRASH"); c != "" {
		locked(t)
		mod := module(t)
		d := upload(t, []int32{1, 2, 3, 4})
		if c == "divide" {
			launch(t, mod, "divide", [3]uint32{2, 1, 1}, [3]uint32{4, 1, 1}, args(uint64(d), int32(0)))
		} else {
			launch(t, mod, "poke", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, args(uint64(0), int64(0)))
		}
		t.Fatal("no crash")
	}
	if testing.Short() {
		t.Skip("runs child processes")
	}
	for what, msg := range map[string]string{
		"divide": "kernel divide crashed with an arithmetic exception",
		"poke":   "kernel poke crashed with a segmentation fault",
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashReport$", "-test.count=1")
		cmd.Env = append(os.Environ(), "HORA_EMU_CRASH="+what, "HORA_EMU_TEST_LIBS="+libDir)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), msg) {
			t.Errorf("%s: %v, the output lacks %q:\n%s", what, err, msg, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "hora cuda emulator:") || strings.HasPrefix(l, "SIG") {
				t.Logf("%s: %s", what, l)
			}
		}
		if !strings.Contains(string(out), "goroutine") { // the Go runtime's report follows
			t.Errorf("%s: no goroutine trace after the emulator's message:\n%s", what, out)
		}
	}
}

// A second load of one image is a separate module, and unloading works.
func TestModules(t *testing.T) {
	locked(t)
	img, r, log := compile(t, "extern \"C\" __global__ void set_f32(float* x, float v) { x[threadIdx.x] = v; }", testOpts...)
	if r != 0 {
		t.Fatalf("nvrtcCompileProgram = %d\n%s", r, log)
	}
	var m1, m2 uintptr
	want(t, "cuModuleLoadData", cu.cuModuleLoadData(&m1, unsafe.Pointer(&img[0])), 0)
	want(t, "cuModuleLoadData", cu.cuModuleLoadData(&m2, unsafe.Pointer(&img[0])), 0)
	d := devAlloc(t, 8)
	want(t, "launch in m1", launch(t, m1, "set_f32", [3]uint32{1, 1, 1}, [3]uint32{2, 1, 1}, args(uint64(d), float32(3))), 0)
	want(t, "cuModuleUnload(m1)", cu.cuModuleUnload(m1), 0)
	want(t, "cuModuleUnload(m1) again", cu.cuModuleUnload(m1), 400)
	want(t, "launch in m2", launch(t, m2, "set_f32", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, args(uint64(d), float32(4))), 0)
	if got := download[float32](t, d, 2); got[0] != 4 || got[1] != 3 {
		t.Errorf("got %v", got)
	}
	want(t, "cuModuleUnload(m2)", cu.cuModuleUnload(m2), 0)
	// The crash handler, installed by the first launch, leaves Go's nil
	// pointer panics to the Go runtime.
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Error("no panic")
			}
		}()
		var p *int
		_ = *p
	}()
	// A virtual architecture gives no CUBIN, as NVRTC.
	img, r, _ = compile(t, "extern \"C\" __global__ void k(float* x) {}", "--gpu-architecture=compute_90")
	if r != 0 || img != nil {
		t.Errorf("compute_90: result %d, image of %d bytes", r, len(img))
	}
}

// Code that NVRTC would refuse (or that breaks the kernel conventions)
// fails in the emulator too, with the diagnostics in the log.
func TestCompileErrors(t *testing.T) {
	for _, c := range []struct {
		name, src string
		opts      []string
		code      int32
		log       string // a fragment of the log
	}{
		{"syntax", "extern \"C\" __global__ void k(float* x) {\n  x[0] = ;\n}", testOpts, 6, "test.cu:2"},
		{"no arch", "extern \"C\" __global__ void k(float* x) {}", []string{"--std=c++17"}, 5, "gpu-architecture"},
		{"bad option", "extern \"C\" __global__ void k(float* x) {}", []string{"--gpu-architecture=sm_90", "-O3"}, 5, "-O3"},
		{"INFINITY", "extern \"C\" __global__ void k(float* x) { x[0] = INFINITY; }", testOpts, 6, "INFINITY"},
		{"NAN", "extern \"C\" __global__ void k(float* x) { x[0] = NAN; }", testOpts, 6, "NAN"},
		{"M_PI", "extern \"C\" __global__ void k(float* x) { x[0] = M_PI; }", testOpts, 6, "M_PI"},
		{"size_t", "extern \"C\" __global__ void k(float* x) { size_t i = 0; x[i] = 0; }", testOpts, 6, "size_t"},
		{"std", "extern \"C\" __global__ void k(float* x) { x[0] = std::exp(1.0f); }", testOpts, 6, "std"},
		{"printf", "extern \"C\" __global__ void k(float* x) { printf(\"%f\", x[0]); }", testOpts, 6, "printf"},
		{"min", "extern \"C\" __global__ void k(float* x) { x[0] = min(x[0], x[1]); }", testOpts, 6, "min"},
		{"max", "extern \"C\" __global__ void k(int* x) { x[0] = max(x[0], x[1]); }", testOpts, 6, "max"},
		{"warp shuffle", "extern \"C\" __global__ void k(float* x) { x[0] = __shfl_down_sync(0xffffffffu, x[0], 1); }", testOpts, 6, "__shfl_down_sync"},
		{"not extern C", "__global__ void k(float* x) {}", testOpts, 6, "extern \"C\""},
		{"template kernel", "template <typename T> __global__ void k(T* x) {}\ntemplate __global__ void k<float>(float*);", testOpts, 6, "extern \"C\""},
		{"include", "#include <stdio.h>\nextern \"C\" __global__ void k(float* x) {}", testOpts, 6, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, r, log := compile(t, c.src, c.opts...)
			if r != c.code {
				t.Fatalf("result %d, want %d; log:\n%s", r, c.code, log)
			}
			if !strings.Contains(log, c.log) {
				t.Errorf("the log lacks %q:\n%s", c.log, log)
			}
		})
	}
}

// ---- fibers with ucontext ----

// TestUcontext builds the driver with the portable ucontext fibers (used
// where the hand-written x86-64 switch is not) and runs the barrier
// kernels with it.
func TestUcontext(t *testing.T) {
	if testing.Short() {
		t.Skip("builds another driver")
	}
	img, r, log := compile(t, testSource, testOpts...)
	if r != 0 {
		t.Fatalf("nvrtcCompileProgram = %d\n%s", r, log)
	}
	dir := t.TempDir()
	src, _ := sources.ReadFile("csrc/cuda.cpp")
	os.WriteFile(filepath.Join(dir, "cuda.cpp"), src, 0o644)
	out, err := exec.Command(compiler(), "-DHORA_EMU_UCONTEXT", "-std=c++17", "-O2", "-shared", "-fPIC", "-fvisibility=hidden",
		"-o", filepath.Join(dir, "libcuda_uc.so"), filepath.Join(dir, "cuda.cpp"), "-ldl", "-lpthread").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	h, err := purego.Dlopen(filepath.Join(dir, "libcuda_uc.so"), purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	var uc driver
	if err := bindAll(h, &uc); err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ctx, mod, f uintptr
	want(t, "cuInit", uc.cuInit(0), 0)
	want(t, "cuDevicePrimaryCtxRetain", uc.cuDevicePrimaryCtxRetain(&ctx, 0), 0)
	want(t, "cuCtxSetCurrent", uc.cuCtxSetCurrent(ctx), 0)
	defer uc.cuCtxSetCurrent(0)
	want(t, "cuModuleLoadData", uc.cuModuleLoadData(&mod, unsafe.Pointer(&img[0])), 0)
	rows, cols := 64, 1000
	x := make([]float32, rows*cols)
	for i := range x {
		x[i] = float32(i % 7)
	}
	var dx, dout uintptr
	want(t, "cuMemAlloc", uc.cuMemAlloc(&dx, uintptr(4*len(x))), 0)
	want(t, "cuMemAlloc", uc.cuMemAlloc(&dout, uintptr(4*rows)), 0)
	want(t, "cuMemcpyHtoDAsync", uc.cuMemcpyHtoDAsync(dx, unsafe.Pointer(&x[0]), uintptr(4*len(x)), 0), 0)
	want(t, "cuModuleGetFunction", uc.cuModuleGetFunction(&f, mod, "row_sum_f32"), 0)
	a := args(uint64(dx), uint64(dout), int32(rows), int32(cols))
	t0 := time.Now()
	want(t, "launch row_sum_f32", uc.cuLaunchKernel(f, uint32(rows), 1, 1, 256, 1, 1, 0, 0, &a.ptrs[0], nil), 0)
	t.Logf("ucontext: row_sum_f32 %d × %d: %v", rows, cols, time.Since(t0))
	got := make([]float32, rows)
	want(t, "cuMemcpyDtoHAsync", uc.cuMemcpyDtoHAsync(unsafe.Pointer(&got[0]), dout, uintptr(4*rows), 0), 0)
	for r := 0; r < rows; r++ {
		var s float64
		for c := 0; c < cols; c++ {
			s += float64(x[r*cols+c])
		}
		if float64(got[r]) != s {
			t.Fatalf("row %d: %v, want %v", r, got[r], s)
		}
	}
	want(t, "cuModuleGetFunction", uc.cuModuleGetFunction(&f, mod, "divergent"), 0)
	a = args(uint64(dout))
	want(t, "launch divergent", uc.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, &a.ptrs[0], nil), 719)
	want(t, "cuModuleGetFunction", uc.cuModuleGetFunction(&f, mod, "scale_f32"), 0)
	a = args(uint64(dx), uint64(dx), float32(2), int64(len(x)))
	want(t, "launch scale_f32", uc.cuLaunchKernel(f, 1024, 1, 1, 256, 1, 1, 0, 0, &a.ptrs[0], nil), 0)
	uc.cuMemFree(dx)
	uc.cuMemFree(dout)
	want(t, "cuModuleUnload", uc.cuModuleUnload(mod), 0)
	runtime.KeepAlive(a)
}

// ---- cuBLAS ----

func bf16(x float32) uint16 { return uint16(math.Float32bits(x) >> 16) } // exact for the test's values

// f16 returns the binary16 bits of x, a normal number with at most 11
// significant bits, or zero.
func f16(x float32) uint16 {
	u := math.Float32bits(x)
	sign := uint16(u>>16) & 0x8000
	if x == 0 {
		return sign
	}
	exp := int(u>>23&0xff) - 127 + 15
	return sign | uint16(exp)<<10 | uint16(u>>13&0x3ff)
}

func tf32(x float32) float32 {
	u := math.Float32bits(x)
	u = (u + 0xfff + ((u >> 13) & 1)) &^ 0x1fff
	return math.Float32frombits(u)
}

// refGemm is the column-major reference: C = alpha op(A) op(B) + beta C.
func refGemm(ta, tb bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			var s float64
			for p := 0; p < k; p++ {
				var av, bv float64
				if ta {
					av = a[p+i*lda]
				} else {
					av = a[i+p*lda]
				}
				if tb {
					bv = b[j+p*ldb]
				} else {
					bv = b[p+j*ldb]
				}
				s += av * bv
			}
			v := alpha * s
			if beta != 0 {
				v += beta * c[i+j*ldc]
			}
			c[i+j*ldc] = v
		}
	}
}

func TestGemm(t *testing.T) {
	locked(t)
	var h uintptr
	want(t, "cublasCreate", blas.cublasCreate(&h), 0)
	defer blas.cublasDestroy(h)
	want(t, "cublasSetStream", blas.cublasSetStream(h, stream), 0)
	want(t, "cublasSetMathMode(0)", blas.cublasSetMathMode(h, 0), 0)
	want(t, "cublasSetMathMode(7)", blas.cublasSetMathMode(h, 7), 7)
	rng := rand.New(rand.NewSource(1))
	gemms0 := cu.horaEmuStats(4)

	for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
		ta, tb := tr[0], tr[1]
		m, n, k, batch := 5, 7, 9, 3
		rowsA, colsA, rowsB, colsB := m, k, k, n
		if ta {
			rowsA, colsA = k, m
		}
		if tb {
			rowsB, colsB = n, k
		}
		lda, ldb, ldc := rowsA+2, rowsB+1, m+3
		sa, sb, sc := lda*colsA+5, ldb*colsB, ldc*n+1
		a, b, c := make([]float64, sa*batch), make([]float64, sb*batch), make([]float64, sc*batch)
		for i := range a {
			a[i] = float64(rng.Intn(17) - 8)
		}
		for i := range b {
			b[i] = float64(rng.Intn(17)-8) / 4
		}
		for i := range c {
			c[i] = float64(rng.Intn(9) - 4)
		}
		for _, beta := range []float64{0, 0.5} {
			wantC := append([]float64{}, c...)
			for i := 0; i < batch; i++ {
				refGemm(ta, tb, m, n, k, 1.5, a[i*sa:], lda, b[i*sb:], ldb, beta, wantC[i*sc:], ldc)
			}
			op := func(t bool) int32 {
				if t {
					return 1
				}
				return 0
			}
			name := fmt.Sprintf("ta=%v tb=%v beta=%v", ta, tb, beta)
			// float64
			{
				cc := append([]float64{}, c...)
				if beta == 0 {
					for i := range cc {
						cc[i] = math.NaN() // not read
					}
					for i := 0; i < batch; i++ { // padding outside the products keeps its value
						for j := 0; j < sc; j++ {
							if j >= ldc*n || j%ldc >= m {
								cc[i*sc+j] = c[i*sc+j]
							}
						}
					}
				}
				da, db, dc := upload(t, a), upload(t, b), upload(t, cc)
				alpha, bt := 1.5, beta
				want(t, "cublasDgemmStridedBatched "+name, blas.cublasDgemmStridedBatched(h, op(ta), op(tb), int32(m), int32(n), int32(k), &alpha, da, int32(lda), int64(sa), db, int32(ldb), int64(sb), &bt, dc, int32(ldc), int64(sc), int32(batch)), 0)
				got := download[float64](t, dc, len(cc))
				for i := range got {
					if got[i] != wantC[i] && !(i%sc >= ldc*n || (i%sc)%ldc >= m) {
						t.Fatalf("Dgemm %s: C[%d] = %v, want %v", name, i, got[i], wantC[i])
					}
				}
			}
			// float32 and bfloat16 (the test's values are exact in both)
			a32, b32, c32 := make([]float32, len(a)), make([]float32, len(b)), make([]float32, len(c))
			a16, b16 := make([]uint16, len(a)), make([]uint16, len(b))
			ah, bh := make([]uint16, len(a)), make([]uint16, len(b))
			for i := range a {
				a32[i], a16[i], ah[i] = float32(a[i]), bf16(float32(a[i])), f16(float32(a[i]))
			}
			for i := range b {
				b32[i], b16[i], bh[i] = float32(b[i]), bf16(float32(b[i])), f16(float32(b[i]))
			}
			for i := range c {
				c32[i] = float32(c[i])
			}
			check := func(what string, dc uintptr) {
				got := download[float32](t, dc, len(c32))
				for i := 0; i < batch; i++ {
					for j := 0; j < n; j++ {
						for r := 0; r < m; r++ {
							o := i*sc + j*ldc + r
							if float64(got[o]) != wantC[o] {
								t.Fatalf("%s %s: C[%d] = %v, want %v", what, name, o, got[o], wantC[o])
							}
						}
					}
				}
			}
			alpha32, beta32 := float32(1.5), float32(beta)
			da, db, dc := upload(t, a32), upload(t, b32), upload(t, c32)
			want(t, "cublasSgemmStridedBatched "+name, blas.cublasSgemmStridedBatched(h, op(ta), op(tb), int32(m), int32(n), int32(k), &alpha32, da, int32(lda), int64(sa), db, int32(ldb), int64(sb), &beta32, dc, int32(ldc), int64(sc), int32(batch)), 0)
			check("Sgemm", dc)
			dc = upload(t, c32)
			want(t, "cublasGemmStridedBatchedEx f32 "+name, blas.cublasGemmStridedBatchedEx(h, op(ta), op(tb), int32(m), int32(n), int32(k), unsafe.Pointer(&alpha32), da, 0, int32(lda), int64(sa), db, 0, int32(ldb), int64(sb), unsafe.Pointer(&beta32), dc, 0, int32(ldc), int64(sc), int32(batch), 68, -1), 0)
			check("GemmEx f32", dc)
			da16, db16 := upload(t, a16), upload(t, b16)
			dc = upload(t, c32)
			want(t, "cublasGemmStridedBatchedEx bf16 "+name, blas.cublasGemmStridedBatchedEx(h, op(ta), op(tb), int32(m), int32(n), int32(k), unsafe.Pointer(&alpha32), da16, 14, int32(lda), int64(sa), db16, 14, int32(ldb), int64(sb), unsafe.Pointer(&beta32), dc, 0, int32(ldc), int64(sc), int32(batch), 68, -1), 0)
			check("GemmEx bf16", dc)
			dah, dbh := upload(t, ah), upload(t, bh)
			dc = upload(t, c32)
			want(t, "cublasGemmStridedBatchedEx f16 "+name, blas.cublasGemmStridedBatchedEx(h, op(ta), op(tb), int32(m), int32(n), int32(k), unsafe.Pointer(&alpha32), dah, 2, int32(lda), int64(sa), dbh, 2, int32(ldb), int64(sb), unsafe.Pointer(&beta32), dc, 0, int32(ldc), int64(sc), int32(batch), 68, -1), 0)
			check("GemmEx f16", dc)
		}
	}

	// k == 0: C = beta C.
	c := []float32{1, 2, 3, 4}
	dc := upload(t, c)
	dummy := devAlloc(t, 4)
	alpha, beta := float32(1), float32(2)
	want(t, "Sgemm k=0", blas.cublasSgemmStridedBatched(h, 0, 0, 2, 2, 0, &alpha, dummy, 2, 0, dummy, 1, 0, &beta, dc, 2, 4, 1), 0)
	if got := download[float32](t, dc, 4); !reflect.DeepEqual(got, []float32{2, 4, 6, 8}) {
		t.Errorf("k=0: %v", got)
	}
	// Bad arguments.
	want(t, "Sgemm lda < m", blas.cublasSgemmStridedBatched(h, 0, 0, 2, 2, 2, &alpha, dc, 1, 0, dc, 2, 0, &beta, dc, 2, 0, 1), 7)
	want(t, "Sgemm ldb < k", blas.cublasSgemmStridedBatched(h, 0, 0, 2, 2, 2, &alpha, dc, 2, 0, dc, 1, 0, &beta, dc, 2, 0, 1), 7)
	want(t, "Sgemm ldc < m", blas.cublasSgemmStridedBatched(h, 0, 0, 2, 2, 2, &alpha, dc, 2, 0, dc, 2, 0, &beta, dc, 1, 0, 1), 7)
	want(t, "Sgemm m < 0", blas.cublasSgemmStridedBatched(h, 0, 0, -1, 2, 2, &alpha, dc, 2, 0, dc, 2, 0, &beta, dc, 2, 0, 1), 7)
	want(t, "Sgemm trans 5", blas.cublasSgemmStridedBatched(h, 5, 0, 2, 2, 2, &alpha, dc, 2, 0, dc, 2, 0, &beta, dc, 2, 0, 1), 7)
	want(t, "Sgemm past the end", blas.cublasSgemmStridedBatched(h, 0, 0, 2, 2, 2, &alpha, dc, 2, 4, dc, 2, 0, &beta, dc, 2, 0, 2), 13)
	want(t, "GemmEx f16 output", blas.cublasGemmStridedBatchedEx(h, 0, 0, 2, 2, 2, unsafe.Pointer(&alpha), dc, 2, 2, 0, dc, 2, 2, 0, unsafe.Pointer(&beta), dc, 2, 2, 0, 1, 68, -1), 15)
	want(t, "GemmEx mixed inputs", blas.cublasGemmStridedBatchedEx(h, 0, 0, 2, 2, 2, unsafe.Pointer(&alpha), dc, 0, 2, 0, dc, 14, 2, 0, unsafe.Pointer(&beta), dc, 0, 2, 0, 1, 68, -1), 15)
	want(t, "bad handle", blas.cublasSgemmStridedBatched(12345, 0, 0, 2, 2, 2, &alpha, dc, 2, 0, dc, 2, 0, &beta, dc, 2, 0, 1), 1)

	// TF32: float32 inputs are rounded to 10 mantissa bits.
	want(t, "cublasSetMathMode(3)", blas.cublasSetMathMode(h, 3), 0)
	x := []float32{1 + 1.0/4096, 3.14159265}
	y := []float32{1, 1}
	dx, dy, dz := upload(t, x), upload(t, y), devAlloc(t, 4)
	alpha, beta = 1, 0
	// z (1×1) = x (1×2) · y (2×1)
	want(t, "Sgemm TF32", blas.cublasSgemmStridedBatched(h, 0, 0, 1, 1, 2, &alpha, dx, 1, 0, dy, 2, 0, &beta, dz, 1, 0, 1), 0)
	wantTF := float32(float64(tf32(x[0])) + float64(tf32(x[1])))
	if got := download[float32](t, dz, 1)[0]; got != wantTF {
		t.Errorf("TF32 product %v, want %v (full precision: %v)", got, wantTF, x[0]+x[1])
	}
	want(t, "cublasSetMathMode(0)", blas.cublasSetMathMode(h, 0), 0)
	want(t, "Sgemm", blas.cublasSgemmStridedBatched(h, 0, 0, 1, 1, 2, &alpha, dx, 1, 0, dy, 2, 0, &beta, dz, 1, 0, 1), 0)
	if got := download[float32](t, dz, 1)[0]; got != float32(float64(x[0])+float64(x[1])) {
		t.Errorf("float32 product %v, want %v", got, x[0]+x[1])
	}
	if cu.horaEmuStats(4) == gemms0 {
		t.Error("horaEmuStats(4) counted no products")
	}
}

// TestHoraKernels compiles Hora's kernels (device/cuda/kernels, as
// cuda.Source assembles them) with the fake NVRTC, when HORA_EMU_KERNELS=1.
func TestHoraKernels(t *testing.T) {
	if os.Getenv("HORA_EMU_KERNELS") == "" {
		t.Skip("set HORA_EMU_KERNELS=1 to compile device/cuda/kernels")
	}
	locked(t)
	dir := filepath.Join("..", "kernels")
	common, err := os.ReadFile(filepath.Join(dir, "common.cuh"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("// Hora's CUDA kernels (device/cuda/kernels), one translation unit.\n")
	b.Write(common)
	names, _ := filepath.Glob(filepath.Join(dir, "*.cu"))
	sort.Strings(names)
	for _, n := range names {
		src, _ := os.ReadFile(n)
		fmt.Fprintf(&b, "\n// ---- kernels/%s ----\n", filepath.Base(n))
		b.Write(src)
	}
	t0 := time.Now()
	img, r, log := compile(t, b.String(), testOpts...)
	if r != 0 {
		t.Fatalf("nvrtcCompileProgram = %d\n%s", r, log)
	}
	t.Logf("compiled %d files in %v; log:\n%s", len(names)+1, time.Since(t0), log)
	var mod uintptr
	want(t, "cuModuleLoadData", cu.cuModuleLoadData(&mod, unsafe.Pointer(&img[0])), 0)
	cu.cuModuleUnload(mod)
}
