// Shared definitions of Hora's CUDA kernels: the structs the Go side
// passes by value (laid out as their Go mirrors in device/cuda/launch.go
// and kernels_*.go), IEEE constants, small helpers and the float16
// conversions. This file and every kernels/*.cu file form one translation
// unit (see Source in module.go), compiled by NVRTC on a GPU and by g++
// in the emulator, so the code sticks to what both accept: no includes,
// no templates as kernels, no warp intrinsics.

// Strided is a strided view (device.Layout): element (i0, i1, ...) lives
// at offset + i0*strides[0] + i1*strides[1] + ... . Go: stridedArg.
struct Strided {
    int ndim;
    int pad;
    long long shape[8];
    long long strides[8];
    long long offset;
};

// ConvShape is a 2-D convolution (device.ConvParams) with its output
// size. Go: convArg.
struct ConvShape {
    int n, c, h, w;
    int oc, kh, kw;
    int sh, sw, ph, pw, dh, dw;
    int groups;
    int oh, ow;
};

// PoolShape is 2-D pooling (device.PoolParams) with its output size.
// Go: poolArg.
struct PoolShape {
    int n, c, h, w;
    int kh, kw;
    int sh, sw, ph, pw;
    int oh, ow;
    int count_pad;
    int pad;
};

// The activations of the fused kernels (device.Activation).
#define HORA_ACT_NONE 0
#define HORA_ACT_RELU 1
#define HORA_ACT_RELU6 2

// Grid-stride loop over [0, n) for one-dimensional kernels.
#define HORA_LOOP(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); i += (long long)blockDim.x * gridDim.x)

// The number of threads of the block-per-row kernels (reductions): their
// shared-memory trees have this many slots.
#define HORA_BLOCK 256

__device__ __forceinline__ long long hmin(long long a, long long b) { return a < b ? a : b; }
__device__ __forceinline__ long long hmax(long long a, long long b) { return a > b ? a : b; }

__device__ __forceinline__ float hora_inf_f32() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ float hora_nan_f32() { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double hora_inf_f64() { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ double hora_nan_f64() { return __longlong_as_double(0x7ff8000000000000LL); }

// hora_atomic_add adds v to *p atomically. atomicAdd on double needs
// sm_60; older GPUs get it from a compare-and-swap loop.
__device__ __forceinline__ float hora_atomic_add(float* p, float v) { return atomicAdd(p, v); }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 600
__device__ __forceinline__ double hora_atomic_add(double* p, double v)
{
    unsigned long long* a = (unsigned long long*)p;
    unsigned long long old = *a, assumed;
    do {
        assumed = old;
        double sum = __longlong_as_double((long long)assumed) + v;
        old = atomicCAS(a, assumed, (unsigned long long)__double_as_longlong(sum));
    } while (assumed != old);
    return __longlong_as_double((long long)old);
}
#else
__device__ __forceinline__ double hora_atomic_add(double* p, double v) { return atomicAdd(p, v); }
#endif

// strided_at returns the position in its buffer of element i (a row-major
// index over the view's shape) of the view s.
__device__ __forceinline__ long long strided_at(const Strided& s, long long i)
{
    long long off = s.offset;
    for (int d = s.ndim - 1; d > 0; --d) {
        long long q = i / s.shape[d];
        off += (i - q * s.shape[d]) * s.strides[d];
        i = q;
    }
    if (s.ndim > 0) {
        off += i * s.strides[0];
    }
    return off;
}

// strided_at2 is strided_at for two views of one shape (a's).
__device__ __forceinline__ void strided_at2(const Strided& a, const Strided& b, long long i, long long& oa, long long& ob)
{
    oa = a.offset;
    ob = b.offset;
    for (int d = a.ndim - 1; d > 0; --d) {
        long long q = i / a.shape[d];
        long long r = i - q * a.shape[d];
        oa += r * a.strides[d];
        ob += r * b.strides[d];
        i = q;
    }
    if (a.ndim > 0) {
        oa += i * a.strides[0];
        ob += i * b.strides[0];
    }
}

// strided_at3 is strided_at for three views of one shape (a's).
__device__ __forceinline__ void strided_at3(const Strided& a, const Strided& b, const Strided& c, long long i,
                                            long long& oa, long long& ob, long long& oc)
{
    oa = a.offset;
    ob = b.offset;
    oc = c.offset;
    for (int d = a.ndim - 1; d > 0; --d) {
        long long q = i / a.shape[d];
        long long r = i - q * a.shape[d];
        oa += r * a.strides[d];
        ob += r * b.strides[d];
        oc += r * c.strides[d];
        i = q;
    }
    if (a.ndim > 0) {
        oa += i * a.strides[0];
        ob += i * b.strides[0];
        oc += i * c.strides[0];
    }
}

// The math functions by element type, so that templates pick expf for
// float and exp for double.
#define HORA_MATH1(NAME, F32, F64)                                        \
    __device__ __forceinline__ float NAME(float x) { return F32(x); }   \
    __device__ __forceinline__ double NAME(double x) { return F64(x); }
#define HORA_MATH2(NAME, F32, F64)                                                 \
    __device__ __forceinline__ float NAME(float x, float y) { return F32(x, y); }  \
    __device__ __forceinline__ double NAME(double x, double y) { return F64(x, y); }

HORA_MATH1(m_exp, expf, exp)
HORA_MATH1(m_log, logf, log)
HORA_MATH1(m_sqrt, sqrtf, sqrt)
HORA_MATH1(m_abs, fabsf, fabs)
HORA_MATH1(m_tanh, tanhf, tanh)
HORA_MATH1(m_erf, erff, erf)
HORA_MATH1(m_floor, floorf, floor)
HORA_MATH1(m_ceil, ceilf, ceil)
HORA_MATH1(m_rint, rintf, rint)
HORA_MATH1(m_sin, sinf, sin)
HORA_MATH1(m_cos, cosf, cos)
HORA_MATH1(m_tan, tanf, tan)
HORA_MATH1(m_asin, asinf, asin)
HORA_MATH1(m_acos, acosf, acos)
HORA_MATH1(m_atan, atanf, atan)
HORA_MATH1(m_sinh, sinhf, sinh)
HORA_MATH1(m_cosh, coshf, cosh)
HORA_MATH1(m_asinh, asinhf, asinh)
HORA_MATH1(m_acosh, acoshf, acosh)
HORA_MATH1(m_atanh, atanhf, atanh)
HORA_MATH2(m_pow, powf, pow)
HORA_MATH2(m_fmod, fmodf, fmod)

// ---- Block-level reductions (blockDim.x = HORA_BLOCK, one dimension) ----

// hora_block_sum returns the sum of v over the block's HORA_BLOCK threads
// (blockDim.x = HORA_BLOCK, one dimension), using sh (HORA_BLOCK slots).
// Every thread of the block must call it.
__device__ __forceinline__ double hora_block_sum(double* sh, double v)
{
    int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int s = HORA_BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) {
            sh[t] += sh[t + s];
        }
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

#define R_MAX 0
#define R_MIN 1

// hora_better reports whether candidate (v at position iv) beats the best
// so far (b at ib) of a Max (op R_MAX) or Min: a NaN beats numbers, the
// earlier position breaks ties (of NaNs too); a negative position means
// none.
template <typename T>
__device__ __forceinline__ bool hora_better(int op, T v, long long iv, T b, long long ib)
{
    if (iv < 0) {
        return false;
    }
    if (ib < 0) {
        return true;
    }
    bool vn = isnan(v), bn = isnan(b);
    if (vn || bn) {
        return vn && (!bn || iv < ib);
    }
    if (op == R_MIN) {
        if (v < b) {
            return true;
        }
        if (v > b) {
            return false;
        }
    } else {
        if (v > b) {
            return true;
        }
        if (v < b) {
            return false;
        }
    }
    return iv < ib;
}

// hora_block_best reduces the (value, position) pairs of the block's
// HORA_BLOCK threads (one dimension) with hora_better into sv[0], si[0].
// Every thread of the block must call it; the caller syncs before reusing
// sv and si.
template <typename T>
__device__ __forceinline__ void hora_block_best(int op, T* sv, long long* si, T v, long long iv)
{
    int t = threadIdx.x;
    sv[t] = v;
    si[t] = iv;
    __syncthreads();
    for (int s = HORA_BLOCK / 2; s > 0; s >>= 1) {
        if (t < s && hora_better(op, sv[t + s], si[t + s], sv[t], si[t])) {
            sv[t] = sv[t + s];
            si[t] = si[t + s];
        }
        __syncthreads();
    }
}

// hora_act applies activation act (HORA_ACT_*); a NaN stays a NaN.
template <typename T>
__device__ __forceinline__ T hora_act(int act, T v)
{
    if (act == HORA_ACT_RELU) {
        if (v < (T)0) {
            v = (T)0;
        }
    } else if (act == HORA_ACT_RELU6) {
        if (v < (T)0) {
            v = (T)0;
        }
        if (v > (T)6) {
            v = (T)6;
        }
    }
    return v;
}

// ---- IEEE binary16 ("half") conversions, as device/cpu/half.go ----
// To half: round to nearest, ties to even; magnitudes from 65520 up give
// ±Inf; a NaN stays a quiet NaN keeping its sign and the top of its
// payload; zeros keep their sign. From half: exact.

// hora_round_shift returns m / 2^s rounded to nearest, ties to even (0 < s < 64).
__device__ __forceinline__ unsigned long long hora_round_shift(unsigned long long m, unsigned int s)
{
    unsigned long long q = m >> s;
    unsigned long long rem = m & ((1ULL << s) - 1ULL);
    unsigned long long half = 1ULL << (s - 1);
    if (rem > half || (rem == half && (q & 1ULL) == 1ULL)) {
        q++;
    }
    return q;
}

__device__ __forceinline__ unsigned short hora_f32_to_f16(float f)
{
    unsigned int b = __float_as_uint(f);
    unsigned short sign = (unsigned short)((b >> 16) & 0x8000u);
    b &= 0x7fffffffu;
    if (b >= 0x38800000u && b < 0x477ff000u) { // [2^-14, 65520): a normal half
        b -= (127u - 15u) << 23;
        b += 0x0fffu + ((b >> 13) & 1u);
        return (unsigned short)(sign | (unsigned short)(b >> 13));
    }
    if (b < 0x33000000u) { // below 2^-25: rounds to zero
        return sign;
    }
    if (b < 0x38800000u) { // [2^-25, 2^-14): a subnormal half (or 2^-14)
        unsigned int e = b >> 23;
        unsigned long long m = (unsigned long long)((b & 0x7fffffu) | 0x800000u);
        return (unsigned short)(sign | (unsigned short)hora_round_shift(m, 126u - e));
    }
    if (b <= 0x7f800000u) { // [65520, Inf]
        return (unsigned short)(sign | 0x7c00u);
    }
    return (unsigned short)(sign | 0x7e00u | ((b >> 13) & 0x3ffu)); // NaN
}

__device__ __forceinline__ unsigned short hora_f64_to_f16(double f)
{
    unsigned long long b = (unsigned long long)__double_as_longlong(f);
    unsigned short sign = (unsigned short)((b >> 48) & 0x8000ULL);
    b &= 0x7fffffffffffffffULL;
    if (b >= 0x3f10000000000000ULL && b < 0x40effe0000000000ULL) { // [2^-14, 65520)
        b -= (unsigned long long)(1023 - 15) << 52;
        b += (1ULL << 41) - 1ULL + ((b >> 42) & 1ULL);
        return (unsigned short)(sign | (unsigned short)(b >> 42));
    }
    if (b < 0x3e60000000000000ULL) { // below 2^-25
        return sign;
    }
    if (b < 0x3f10000000000000ULL) { // [2^-25, 2^-14)
        unsigned int e = (unsigned int)(b >> 52);
        unsigned long long m = (b & ((1ULL << 52) - 1ULL)) | (1ULL << 52);
        return (unsigned short)(sign | (unsigned short)hora_round_shift(m, 1051u - e));
    }
    if (b <= 0x7ff0000000000000ULL) { // [65520, Inf]
        return (unsigned short)(sign | 0x7c00u);
    }
    return (unsigned short)(sign | 0x7e00u | (unsigned short)((b >> 42) & 0x3ffULL));
}

__device__ __forceinline__ float hora_f16_to_f32(unsigned short h)
{
    unsigned int sign = ((unsigned int)h & 0x8000u) << 16;
    unsigned int em = (unsigned int)h & 0x7fffu;
    if (em >= 0x7c00u) { // Inf or NaN: keep the payload
        return __uint_as_float(sign | 0x7f800000u | ((em & 0x3ffu) << 13));
    }
    if (em >= 0x0400u) { // normal: rebias the exponent
        return __uint_as_float(sign | ((em << 13) + ((127u - 15u) << 23)));
    }
    // Zero or subnormal: em·2^-24, exact in float32.
    return __uint_as_float(sign | __float_as_uint((float)em * 5.9604644775390625e-08f));
}
