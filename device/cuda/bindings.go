package cuda

import (
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"
)

// driverAPI holds the CUDA driver API functions Hora calls, bound at run
// time by their ABI names (the _v2 ones where cuda.h maps the plain name
// to a versioned symbol). CUresult is an int32; CUdeviceptr, handles
// and size_t are uintptr.
type driverAPI struct {
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
}

// symbols returns each function's ABI symbol name and a pointer to its field.
func (a *driverAPI) symbols() []symbol {
	return []symbol{
		{"cuInit", &a.cuInit}, {"cuDriverGetVersion", &a.cuDriverGetVersion},
		{"cuDeviceGetCount", &a.cuDeviceGetCount}, {"cuDeviceGet", &a.cuDeviceGet},
		{"cuDeviceGetName", &a.cuDeviceGetName}, {"cuDeviceGetAttribute", &a.cuDeviceGetAttribute},
		{"cuDeviceTotalMem_v2", &a.cuDeviceTotalMem},
		{"cuDevicePrimaryCtxRetain", &a.cuDevicePrimaryCtxRetain},
		{"cuDevicePrimaryCtxRelease_v2", &a.cuDevicePrimaryCtxRelease},
		{"cuCtxSetCurrent", &a.cuCtxSetCurrent},
		{"cuStreamCreate", &a.cuStreamCreate}, {"cuStreamDestroy_v2", &a.cuStreamDestroy},
		{"cuStreamSynchronize", &a.cuStreamSynchronize},
		{"cuMemAlloc_v2", &a.cuMemAlloc}, {"cuMemFree_v2", &a.cuMemFree},
		{"cuMemAllocHost_v2", &a.cuMemAllocHost}, {"cuMemFreeHost", &a.cuMemFreeHost},
		{"cuMemcpyHtoDAsync_v2", &a.cuMemcpyHtoDAsync}, {"cuMemcpyDtoHAsync_v2", &a.cuMemcpyDtoHAsync},
		{"cuMemcpyDtoDAsync_v2", &a.cuMemcpyDtoDAsync}, {"cuMemsetD8Async", &a.cuMemsetD8Async},
		{"cuMemGetInfo_v2", &a.cuMemGetInfo},
		{"cuModuleLoadData", &a.cuModuleLoadData}, {"cuModuleGetFunction", &a.cuModuleGetFunction},
		{"cuModuleUnload", &a.cuModuleUnload}, {"cuLaunchKernel", &a.cuLaunchKernel},
		{"cuGetErrorName", &a.cuGetErrorName}, {"cuGetErrorString", &a.cuGetErrorString},
	}
}

// The device attributes read (CUdevice_attribute).
const (
	attrMultiprocessorCount    = 16
	attrComputeCapabilityMajor = 75
	attrComputeCapabilityMinor = 76
)

// check turns a CUresult into nil or an *Error naming fn and the result.
func (a *driverAPI) check(fn string, r int32) error {
	if r == 0 {
		return nil
	}
	e := &Error{Func: fn, Code: int(r), Name: resultName(driverResultNames, "CUDA_ERROR", int(r))}
	var p *byte
	if a.cuGetErrorName != nil && a.cuGetErrorName(r, &p) == 0 && p != nil {
		e.Name = goString(p)
	}
	if a.cuGetErrorString != nil && a.cuGetErrorString(r, &p) == 0 && p != nil {
		e.Text = goString(p)
	}
	return e
}

// nvrtcAPI holds the NVRTC functions Hora calls.
type nvrtcAPI struct {
	nvrtcVersion           func(major, minor *int32) int32
	nvrtcCreateProgram     func(prog *uintptr, src, name string, nHeaders int32, headers, includeNames unsafe.Pointer) int32
	nvrtcCompileProgram    func(prog uintptr, nOpts int32, opts *unsafe.Pointer) int32
	nvrtcGetProgramLogSize func(prog uintptr, n *uintptr) int32
	nvrtcGetProgramLog     func(prog uintptr, log *byte) int32
	nvrtcGetCUBINSize      func(prog uintptr, n *uintptr) int32
	nvrtcGetCUBIN          func(prog uintptr, image *byte) int32
	nvrtcDestroyProgram    func(prog *uintptr) int32
}

func (a *nvrtcAPI) symbols() []symbol {
	return []symbol{
		{"nvrtcVersion", &a.nvrtcVersion}, {"nvrtcCreateProgram", &a.nvrtcCreateProgram},
		{"nvrtcCompileProgram", &a.nvrtcCompileProgram},
		{"nvrtcGetProgramLogSize", &a.nvrtcGetProgramLogSize}, {"nvrtcGetProgramLog", &a.nvrtcGetProgramLog},
		{"nvrtcGetCUBINSize", &a.nvrtcGetCUBINSize}, {"nvrtcGetCUBIN", &a.nvrtcGetCUBIN},
		{"nvrtcDestroyProgram", &a.nvrtcDestroyProgram},
	}
}

func (a *nvrtcAPI) check(fn string, r int32) error {
	if r == 0 {
		return nil
	}
	return &Error{Func: fn, Code: int(r), Name: resultName(nvrtcResultNames, "NVRTC_ERROR", int(r))}
}

// cublasAPI holds the cuBLAS functions Hora calls. Matrices are column
// major; alpha and beta are host pointers (the default pointer mode).
type cublasAPI struct {
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

func (a *cublasAPI) symbols() []symbol {
	return []symbol{
		{"cublasCreate_v2", &a.cublasCreate}, {"cublasDestroy_v2", &a.cublasDestroy},
		{"cublasSetStream_v2", &a.cublasSetStream}, {"cublasSetMathMode", &a.cublasSetMathMode},
		{"cublasSgemmStridedBatched", &a.cublasSgemmStridedBatched},
		{"cublasDgemmStridedBatched", &a.cublasDgemmStridedBatched},
		{"cublasGemmStridedBatchedEx", &a.cublasGemmStridedBatchedEx},
	}
}

func (a *cublasAPI) check(fn string, r int32) error {
	if r == 0 {
		return nil
	}
	return &Error{Func: fn, Code: int(r), Name: resultName(cublasStatusNames, "CUBLAS_STATUS", int(r))}
}

// cuBLAS constants (cublas_api.h, library_types.h).
const (
	cublasOpN              = 0
	cublasOpT              = 1
	cublasDefaultMath      = 0
	cublasTF32TensorOpMath = 3
	cudaR32F               = 0
	cudaR16F               = 2
	cudaR16BF              = 14
	cublasCompute32F       = 68
	cublasGemmDefault      = -1
)

// symbol is a function's ABI name and the address of the Go func field
// that RegisterFunc fills.
type symbol struct {
	name string
	fn   any
}

// bind fills every symbol from the library handle h, checking each with
// Dlsym first (RegisterLibFunc panics on a missing one). lib names the
// library file in the error.
func bind(h uintptr, lib string, syms []symbol) error {
	for _, s := range syms {
		addr, err := Dlsym(h, s.name)
		if err != nil || addr == 0 {
			return fmt.Errorf("cuda: %s has no %s (too old a version?): %v", lib, s.name, err)
		}
		purego.RegisterFunc(s.fn, addr)
	}
	return nil
}

// goString copies the NUL-terminated C string at p.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	var n int
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
