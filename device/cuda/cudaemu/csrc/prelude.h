// Hora CUDA emulator: the prelude the fake NVRTC puts before a program's
// CUDA C so that g++ compiles it for the host CPU. It provides the CUDA
// builtins Hora's kernels may use (device/cuda/kernels, see the rules in
// the cudaemu package documentation) and nothing else: code that uses a
// CUDA feature the emulator does not model fails to compile here too.
//
// The emulator (libcuda.so.1 of this package) runs a launch on one OS
// thread, block after block, each block's threads as cooperative fibers.
// __hora_state holds the running thread's indices; the emulator sets it
// before it resumes a thread, and __syncthreads() yields to its scheduler.
#ifndef HORA_EMU_PRELUDE_H
#define HORA_EMU_PRELUDE_H

#include <cmath>

#define __HORA_EMU__ 1

// Execution space and storage qualifiers. __global__ expands to a marker
// attribute that the fake NVRTC finds in the preprocessed program to
// generate each kernel's launch trampoline (g++ ignores the attribute).
#define __global__ __attribute__((__hora_global__))
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
// Blocks run one at a time on one OS thread, so a static array is one
// block's shared memory. The arrays are put in the section hora_shared,
// which the emulator fills with 0xFF bytes before each launch: like
// CUDA's, shared memory starts as garbage, not zeros. (g++ leaves the
// statics of template functions out of the section: those start zeroed.)
#define __shared__ static __attribute__((section("hora_shared")))

struct __hora_uint3 {
    unsigned int x, y, z;
};

struct __hora_state_t {
    __hora_uint3 threadIdx, blockIdx, blockDim, gridDim;
    void (*sync)(void);
};

static void __hora_no_sync(void) { __builtin_trap(); }
extern "C" {
__attribute__((visibility("hidden"))) __hora_state_t __hora_state = {{0, 0, 0}, {0, 0, 0}, {1, 1, 1}, {1, 1, 1}, __hora_no_sync};
// The emulator finds a loaded module's state through this function.
__attribute__((visibility("default"))) __hora_state_t* __hora_module_state(void) { return &__hora_state; }
// The bounds of the section that holds the __shared__ arrays (the linker
// defines the symbols when there is one).
extern char __start_hora_shared[] __attribute__((weak, visibility("hidden")));
extern char __stop_hora_shared[] __attribute__((weak, visibility("hidden")));
__attribute__((visibility("default"))) void __hora_module_shared(char** begin, char** end)
{
    *begin = __start_hora_shared;
    *end = __stop_hora_shared;
}
}

static const __hora_uint3& threadIdx = __hora_state.threadIdx;
static const __hora_uint3& blockIdx = __hora_state.blockIdx;
static const __hora_uint3& blockDim = __hora_state.blockDim;
static const __hora_uint3& gridDim = __hora_state.gridDim;

// __syncthreads yields to the emulator's scheduler, which resumes the
// thread once every thread of its block has reached a barrier. The
// compiler barriers make g++ reload memory (shared arrays) afterwards.
static __forceinline__ void __syncthreads(void)
{
    __asm__ __volatile__("" ::: "memory");
    __hora_state.sync();
    __asm__ __volatile__("" ::: "memory");
}

static __forceinline__ void __threadfence(void) { __asm__ __volatile__("" ::: "memory"); }
static __forceinline__ void __threadfence_block(void) { __asm__ __volatile__("" ::: "memory"); }

// Atomics: the threads of a launch never run at the same time, so a
// plain read-modify-write is atomic. Each returns the old value.
static __forceinline__ float atomicAdd(float* p, float v) { float o = *p; *p = o + v; return o; }
static __forceinline__ double atomicAdd(double* p, double v) { double o = *p; *p = o + v; return o; }
static __forceinline__ int atomicAdd(int* p, int v) { int o = *p; *p = o + v; return o; }
static __forceinline__ unsigned int atomicAdd(unsigned int* p, unsigned int v) { unsigned int o = *p; *p = o + v; return o; }
static __forceinline__ unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { unsigned long long o = *p; *p = o + v; return o; }
static __forceinline__ int atomicMax(int* p, int v) { int o = *p; if (v > o) *p = v; return o; }
static __forceinline__ int atomicMin(int* p, int v) { int o = *p; if (v < o) *p = v; return o; }
static __forceinline__ int atomicExch(int* p, int v) { int o = *p; *p = v; return o; }
static __forceinline__ unsigned int atomicExch(unsigned int* p, unsigned int v) { unsigned int o = *p; *p = v; return o; }
static __forceinline__ float atomicExch(float* p, float v) { float o = *p; *p = v; return o; }
static __forceinline__ int atomicCAS(int* p, int c, int v) { int o = *p; if (o == c) *p = v; return o; }
static __forceinline__ unsigned int atomicCAS(unsigned int* p, unsigned int c, unsigned int v) { unsigned int o = *p; if (o == c) *p = v; return o; }
static __forceinline__ unsigned long long atomicCAS(unsigned long long* p, unsigned long long c, unsigned long long v) { unsigned long long o = *p; if (o == c) *p = v; return o; }

// Bit casts.
static __forceinline__ unsigned int __float_as_uint(float x) { unsigned int u; __builtin_memcpy(&u, &x, 4); return u; }
static __forceinline__ float __uint_as_float(unsigned int u) { float x; __builtin_memcpy(&x, &u, 4); return x; }
static __forceinline__ int __float_as_int(float x) { int u; __builtin_memcpy(&u, &x, 4); return u; }
static __forceinline__ float __int_as_float(int u) { float x; __builtin_memcpy(&x, &u, 4); return x; }
static __forceinline__ long long __double_as_longlong(double x) { long long u; __builtin_memcpy(&u, &x, 8); return u; }
static __forceinline__ double __longlong_as_double(long long u) { double x; __builtin_memcpy(&x, &u, 8); return x; }

// Read-only cache loads.
template <typename T>
static __forceinline__ T __ldg(const T* p) { return *p; }

// CUDA's math library: the C functions for float (expf...) and double
// (exp...) come from <math.h>; CUDA also overloads the double names for
// float (exp(float) is a float), as <cmath>'s do.
using std::abs;
using std::acos;
using std::acosh;
using std::asin;
using std::asinh;
using std::atan;
using std::atan2;
using std::atanh;
using std::cbrt;
using std::ceil;
using std::copysign;
using std::cos;
using std::cosh;
using std::erf;
using std::erfc;
using std::exp;
using std::exp2;
using std::expm1;
using std::fabs;
using std::fdim;
using std::floor;
using std::fma;
using std::fmax;
using std::fmin;
using std::fmod;
using std::frexp;
using std::hypot;
using std::ilogb;
using std::isfinite;
using std::isinf;
using std::isnan;
using std::ldexp;
using std::lgamma;
using std::llrint;
using std::llround;
using std::log;
using std::log10;
using std::log1p;
using std::log2;
using std::logb;
using std::lrint;
using std::lround;
using std::modf;
using std::nearbyint;
using std::nextafter;
using std::pow;
using std::remainder;
using std::rint;
using std::round;
using std::scalbn;
using std::signbit;
using std::sin;
using std::sinh;
using std::sqrt;
using std::tan;
using std::tanh;
using std::tgamma;
using std::trunc;

// CUDA math functions that C lacks.
static __forceinline__ float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static __forceinline__ double rsqrt(double x) { return 1.0 / sqrt(x); }
static __forceinline__ float __fdividef(float x, float y) { return x / y; }
// (__expf, __logf, exp10f, exp10, sincosf and sincos come from glibc's <math.h>.)

// Launch trampolines: for each kernel K the fake NVRTC appends
//   extern "C" void __hora_launch_K(void** a) { __hora_call(K, a); }
//   extern "C" int __hora_argsizes_K(int* s) { return __hora_argsizes(K, s); }
// __hora_call calls K with its arguments read from cuLaunchKernel's
// kernelParams (a[i] points at argument i, whatever its type);
// __hora_argsizes stores the size of each parameter in s (when not NULL)
// and returns their number.
template <int... I>
struct __hora_seq {};
template <int N, int... I>
struct __hora_mkseq : __hora_mkseq<N - 1, N - 1, I...> {};
template <int... I>
struct __hora_mkseq<0, I...> {
    typedef __hora_seq<I...> type;
};
template <typename... A, int... I>
static __forceinline__ void __hora_call(void (*f)(A...), void** a, __hora_seq<I...>) { f(*(A*)a[I]...); }
template <typename... A>
static __forceinline__ void __hora_call(void (*f)(A...), void** a) { __hora_call(f, a, typename __hora_mkseq<sizeof...(A)>::type()); }
template <typename... A>
static inline int __hora_argsizes(void (*)(A...), int* s)
{
    const int sz[sizeof...(A) + 1] = {(int)sizeof(A)..., 0};
    if (s) {
        for (int i = 0; i < (int)sizeof...(A); i++) s[i] = sz[i];
    }
    return (int)sizeof...(A);
}

// What NVRTC does not provide without an #include is left undefined, so
// that a kernel using it fails to compile here as it would there.
#undef INFINITY
#undef NAN
#undef HUGE_VAL
#undef HUGE_VALF
#undef HUGE_VALL
#undef M_E
#undef M_LOG2E
#undef M_LOG10E
#undef M_LN2
#undef M_LN10
#undef M_PI
#undef M_PI_2
#undef M_PI_4
#undef M_1_PI
#undef M_2_PI
#undef M_2_SQRTPI
#undef M_SQRT2
#undef M_SQRT1_2
#pragma GCC poison size_t std printf

#endif
