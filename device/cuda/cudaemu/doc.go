// Package emu builds a CUDA emulator for tests on machines without a GPU:
// fake shared libraries libcuda.so.1 (the driver), libnvrtc.so.12 (the
// runtime compiler) and libcublas.so.12 (cuBLAS), written in C++ (csrc/)
// and built with g++ by [Build], that implement on the host CPU the C ABI
// that device/cuda binds with purego. Pointing device/cuda at the folder
// (HORA_CUDA_LIBS) runs the whole Go stack — bindings, allocator, launch
// argument packing, the CUDA C kernels themselves — with no GPU.
//
// # The driver (csrc/cuda.cpp)
//
// There are two devices, "Hora CUDA emulator", compute capability 9.0, 4
// multiprocessors, 16 GiB (or HORA_EMU_MEM_LIMIT bytes, past which
// cuMemAlloc_v2 fails with CUDA_ERROR_OUT_OF_MEMORY). Device pointers are
// host addresses. All work runs synchronously when it is queued, so
// streams only need to exist.
//
// To catch what a GPU would punish, the emulator
//   - fills new allocations with 0xFF bytes (NaN as floats), and the
//     kernels' shared memory with 0xFF bytes before each launch;
//   - surrounds each allocation with guard bytes and checks, after a
//     launch, the guards of the allocations that the kernel's pointer
//     arguments point into: a kernel that wrote past the end (or before
//     the start) of a buffer fails with CUDA_ERROR_ILLEGAL_ADDRESS and a
//     message on stderr naming it (cuMemFree_v2 checks too, and warns);
//   - refuses copies and memsets outside one live allocation, frees of
//     unknown pointers, unknown streams, modules and functions;
//   - requires a current context (cuCtxSetCurrent on the calling thread)
//     as the driver does, so calls from the wrong OS thread fail with
//     CUDA_ERROR_INVALID_CONTEXT;
//   - fails a launch with CUDA_ERROR_LAUNCH_FAILED when some threads of a
//     block wait at __syncthreads() while others returned without
//     reaching it (a message on stderr says where);
//   - refuses launches with an empty grid or block, more than 1024
//     threads per block, or kernelParams missing for a kernel with
//     parameters.
//
// Other out-of-bounds accesses go unnoticed: reads, and writes that skip
// the guards; a wild pointer crashes the process (or silently corrupts
// host memory). When a kernel crashes (a wild pointer, an integer division
// by zero, which a GPU would not trap, a stack overflow), a handler for
// SIGSEGV, SIGBUS, SIGFPE and SIGILL, installed by the first launch and
// chained to the Go runtime's, first prints the kernel, block and thread
// (HORA_EMU_NO_CRASH_HANDLER=1 leaves it out).
//
// A launch runs the grid's blocks one after another on the calling
// thread (launches are serialised process-wide). The threads of a block
// run as cooperative fibers with 64 KiB stacks (own context switch on
// x86-64, ucontext elsewhere): a fiber runs the block's threads one after
// another, each to completion, until one calls __syncthreads(); that
// thread's fiber is suspended and another fiber continues with the next
// threads. When every thread of the block waits at the barrier, the
// scheduler resumes them in order. A kernel without barriers thus costs a
// function call per thread (a few nanoseconds); a thread's wait at a
// barrier costs about 60 ns. __shared__ arrays are function-local statics
// (blocks never run at the same time) in a section that each launch fills
// with garbage; they keep their contents from one block to the next, and
// g++ leaves those of template functions out of the section (they start
// zeroed). atomicAdd is a plain read-modify-write.
//
// Extra exported functions for tests: horaEmuStats(what) returns 0 live
// allocations, 1 cuMemAlloc_v2 calls, 2 kernel launches, 3 live bytes, 4
// cuBLAS products; horaEmuSetMemLimit(bytes) overrides
// HORA_EMU_MEM_LIMIT (negative: back to the variable).
//
// # NVRTC (csrc/nvrtc.cpp)
//
// nvrtcCompileProgram requires a --gpu-architecture=sm_NN option (with
// compute_NN it produces no CUBIN, as NVRTC), puts csrc/prelude.h before
// the program and preprocesses it with g++ -E. The prelude makes
// __global__ a marker attribute; each extern "C" __global__ void NAME( found
// in the output gets a launch trampoline, __hora_launch_NAME(void**
// params), that calls the kernel with its arguments unpacked by template
// argument deduction from the kernel's own parameter types. The result is
// built with g++ -O2 -shared -fPIC -fno-weak -Wall; on failure the program
// log holds g++'s diagnostics (lines numbered as in the program) and the
// result is NVRTC_ERROR_COMPILATION. The "CUBIN" is the library's bytes
// after a 16-byte header (magic and size), which cuModuleLoadData checks
// (CUDA_ERROR_INVALID_IMAGE for anything else) before writing the library
// to a temporary file and loading it with dlopen. Builds are cached by a
// hash of their inputs in HORA_EMU_CACHE (default $TMPDIR/hora-emu-cache-UID),
// under a lock per program, so test binaries compiling the same kernels
// share one g++ run. HORA_EMU_CXX names another compiler,
// HORA_EMU_VERBOSE=1 prints a build's warnings, HORA_EMU_KEEP=1 keeps its
// temporary folder.
//
// The prelude models what Hora's kernels may use, and leaves out what
// NVRTC does not offer without an #include, so that such code fails here
// too: #include (only of headers given to nvrtcCreateProgram), size_t,
// std, printf (poisoned), INFINITY, NAN, HUGE_VAL and the M_ constants
// (undefined), min and max, warp intrinsics (absent), and kernels that are
// not extern "C" __global__ void (templates included). It provides
// threadIdx, blockIdx, blockDim, gridDim, __syncthreads, __threadfence,
// atomicAdd (float, double, int, unsigned, unsigned long long) and a few
// other atomics, the bit casts (__float_as_uint...), __ldg, rsqrtf, and
// the C math functions with CUDA's float overloads of the double names.
//
// # cuBLAS (csrc/cublas.cpp)
//
// cublasSgemmStridedBatched, cublasDgemmStridedBatched and
// cublasGemmStridedBatchedEx (float32, float16 or bfloat16 inputs,
// float32 output, CUBLAS_COMPUTE_32F) compute column-major products accumulated in
// double. beta == 0 means C is not read; bad leading dimensions give
// CUBLAS_STATUS_INVALID_VALUE; operands outside live allocations give
// CUBLAS_STATUS_EXECUTION_FAILED with a message. With the TF32 math mode
// (cublasSetMathMode 3) or CUBLAS_COMPUTE_32F_FAST_TF32, float32 inputs
// are rounded to TensorFloat-32 first, as a GPU's tensor cores do, so
// that tests see a GPU's precision.
package cudaemu
