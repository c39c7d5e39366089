package cuda

import (
	"errors"
	"fmt"
)

// Error is a failed call into the CUDA driver, NVRTC, cuBLAS or NCCL: the
// function, its numeric result and that result's name ("CUDA_ERROR_OUT_OF_MEMORY").
type Error struct {
	Func string // the C function that failed, such as "cuMemAlloc_v2"
	Code int    // its return value
	Name string // the library's name for Code
	Text string // the library's description of Code, when it gives one
}

// Error describes the call and the result by name.
func (e *Error) Error() string {
	s := fmt.Sprintf("cuda: %s failed: %s (%d)", e.Func, e.Name, e.Code)
	if e.Text != "" {
		s += ": " + e.Text
	}
	return s
}

// Is makes errors.Is(err, ErrOutOfMemory) true for an out-of-memory result.
func (e *Error) Is(target error) bool {
	return target == ErrOutOfMemory && (e.Name == "CUDA_ERROR_OUT_OF_MEMORY" || e.Name == "CUBLAS_STATUS_ALLOC_FAILED")
}

// ErrOutOfMemory is matched (errors.Is) by an Error whose result means the
// GPU ran out of memory.
var ErrOutOfMemory = errors.New("cuda: out of memory")

// driverResultNames are the names of the CUresult values the driver API
// returns (cuda.h), used when cuGetErrorName is not available.
var driverResultNames = map[int]string{
	0:   "CUDA_SUCCESS",
	1:   "CUDA_ERROR_INVALID_VALUE",
	2:   "CUDA_ERROR_OUT_OF_MEMORY",
	3:   "CUDA_ERROR_NOT_INITIALIZED",
	4:   "CUDA_ERROR_DEINITIALIZED",
	34:  "CUDA_ERROR_STUB_LIBRARY",
	46:  "CUDA_ERROR_DEVICE_UNAVAILABLE",
	100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE",
	200: "CUDA_ERROR_INVALID_IMAGE",
	201: "CUDA_ERROR_INVALID_CONTEXT",
	209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	218: "CUDA_ERROR_INVALID_PTX",
	222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	400: "CUDA_ERROR_INVALID_HANDLE",
	500: "CUDA_ERROR_NOT_FOUND",
	600: "CUDA_ERROR_NOT_READY",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT",
	719: "CUDA_ERROR_LAUNCH_FAILED",
	999: "CUDA_ERROR_UNKNOWN",
}

// nvrtcResultNames are the names of nvrtcResult values (nvrtc.h).
var nvrtcResultNames = map[int]string{
	0:  "NVRTC_SUCCESS",
	1:  "NVRTC_ERROR_OUT_OF_MEMORY",
	2:  "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
	3:  "NVRTC_ERROR_INVALID_INPUT",
	4:  "NVRTC_ERROR_INVALID_PROGRAM",
	5:  "NVRTC_ERROR_INVALID_OPTION",
	6:  "NVRTC_ERROR_COMPILATION",
	7:  "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
	11: "NVRTC_ERROR_INTERNAL_ERROR",
}

// cublasStatusNames are the names of cublasStatus_t values (cublas_api.h).
var cublasStatusNames = map[int]string{
	0:  "CUBLAS_STATUS_SUCCESS",
	1:  "CUBLAS_STATUS_NOT_INITIALIZED",
	3:  "CUBLAS_STATUS_ALLOC_FAILED",
	7:  "CUBLAS_STATUS_INVALID_VALUE",
	8:  "CUBLAS_STATUS_ARCH_MISMATCH",
	11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR",
	15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// resultName returns names[code], or a generic name for an unknown code.
func resultName(names map[int]string, prefix string, code int) string {
	if n, ok := names[code]; ok {
		return n
	}
	return fmt.Sprintf("%s_%d", prefix, code)
}
