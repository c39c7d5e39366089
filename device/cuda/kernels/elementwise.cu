// Elementwise kernels: Unary, Binary and Where (Kernels.Unary, Binary,
// Where), in float32 and float64, with the CPU device's semantics
// (device/cpu/kernels.go).

// device.UnaryOp.
#define U_NEG 1
#define U_EXP 2
#define U_LOG 3
#define U_SQRT 4
#define U_ABS 5
#define U_SIGN 6
#define U_TANH 7
#define U_SIGMOID 8
#define U_RELU 9
#define U_ERF 10
#define U_RECIP 11
#define U_ADD_SCALAR 12
#define U_MUL_SCALAR 13
#define U_POW_SCALAR 14
#define U_MAX_SCALAR 15
#define U_MIN_SCALAR 16
#define U_GT_SCALAR 17
#define U_FLOOR 18
#define U_CEIL 19
#define U_ROUND 20
#define U_SIN 21
#define U_COS 22
#define U_TAN 23
#define U_ASIN 24
#define U_ACOS 25
#define U_ATAN 26
#define U_SINH 27
#define U_COSH 28
#define U_ASINH 29
#define U_ACOSH 30
#define U_ATANH 31
#define U_ISNAN 32
#define U_ISINF 33

template <typename T>
__device__ __forceinline__ T hora_sigmoid(T x)
{
    if (x >= (T)0) {
        return (T)1 / ((T)1 + m_exp(-x));
    }
    T e = m_exp(x);
    return e / ((T)1 + e);
}

// The op is the same for every element: the switch is outside the loops.
#define HORA_UNARY_CASE(OP, EXPR)   \
    case OP:                        \
        HORA_LOOP(i, n)             \
        {                           \
            T x = src[i];           \
            dst[i] = (EXPR);        \
        }                           \
        break;

template <typename T>
__device__ void unary_run(int op, T* dst, const T* src, long long n, T s)
{
    switch (op) {
        HORA_UNARY_CASE(U_NEG, -x)
        HORA_UNARY_CASE(U_EXP, m_exp(x))
        HORA_UNARY_CASE(U_LOG, m_log(x))
        HORA_UNARY_CASE(U_SQRT, m_sqrt(x))
        HORA_UNARY_CASE(U_ABS, m_abs(x))
        HORA_UNARY_CASE(U_SIGN, x > (T)0 ? (T)1 : (x < (T)0 ? (T)-1 : x)) // 0 and NaN stay
        HORA_UNARY_CASE(U_TANH, m_tanh(x))
        HORA_UNARY_CASE(U_SIGMOID, hora_sigmoid(x))
        HORA_UNARY_CASE(U_RELU, x > (T)0 ? x : (T)0)
        HORA_UNARY_CASE(U_ERF, m_erf(x))
        HORA_UNARY_CASE(U_RECIP, (T)1 / x)
        HORA_UNARY_CASE(U_ADD_SCALAR, x + s)
        HORA_UNARY_CASE(U_MUL_SCALAR, x * s)
        HORA_UNARY_CASE(U_POW_SCALAR, m_pow(x, s))
        HORA_UNARY_CASE(U_MAX_SCALAR, (x > s || isnan(x)) ? x : s) // a NaN x stays; ties keep s
        HORA_UNARY_CASE(U_MIN_SCALAR, (x < s || isnan(x)) ? x : s)
        HORA_UNARY_CASE(U_GT_SCALAR, x > s ? (T)1 : (T)0)
        HORA_UNARY_CASE(U_FLOOR, m_floor(x))
        HORA_UNARY_CASE(U_CEIL, m_ceil(x))
        HORA_UNARY_CASE(U_ROUND, m_rint(x)) // halves to even
        HORA_UNARY_CASE(U_SIN, m_sin(x))
        HORA_UNARY_CASE(U_COS, m_cos(x))
        HORA_UNARY_CASE(U_TAN, m_tan(x))
        HORA_UNARY_CASE(U_ASIN, m_asin(x))
        HORA_UNARY_CASE(U_ACOS, m_acos(x))
        HORA_UNARY_CASE(U_ATAN, m_atan(x))
        HORA_UNARY_CASE(U_SINH, m_sinh(x))
        HORA_UNARY_CASE(U_COSH, m_cosh(x))
        HORA_UNARY_CASE(U_ASINH, m_asinh(x))
        HORA_UNARY_CASE(U_ACOSH, m_acosh(x))
        HORA_UNARY_CASE(U_ATANH, m_atanh(x))
        HORA_UNARY_CASE(U_ISNAN, isnan(x) ? (T)1 : (T)0)
        HORA_UNARY_CASE(U_ISINF, isinf(x) ? (T)1 : (T)0)
    default:
        break;
    }
}

// unary computes dst[i] = op(src[i], s) for i < n.
extern "C" __global__ void unary_f32(int op, float* dst, const float* src, long long n, float s)
{
    unary_run<float>(op, dst, src, n, s);
}

extern "C" __global__ void unary_f64(int op, double* dst, const double* src, long long n, double s)
{
    unary_run<double>(op, dst, src, n, s);
}

// device.BinaryOp.
#define B_ADD 1
#define B_SUB 2
#define B_MUL 3
#define B_DIV 4
#define B_POW 5
#define B_MAXIMUM 6
#define B_MINIMUM 7
#define B_EQUAL 8
#define B_NOT_EQUAL 9
#define B_LESS 10
#define B_LESS_EQUAL 11
#define B_GREATER 12
#define B_GREATER_EQUAL 13
#define B_MOD 14
#define B_REM 15

// hora_floor_mod is x - y·⌊x/y⌋ computed exactly: the remainder with the
// sign of y (NaN when y is 0).
template <typename T>
__device__ __forceinline__ T hora_floor_mod(T x, T y)
{
    T r = m_fmod(x, y);
    if (r != (T)0 && ((r < (T)0) != (y < (T)0))) {
        r += y;
    }
    return r;
}

#define HORA_BINARY_CASE(OP, EXPR)                  \
    case OP:                                        \
        HORA_LOOP(i, n)                             \
        {                                           \
            long long ia, ib;                       \
            strided_at2(al, bl, i, ia, ib);         \
            T x = a[ia], y = b[ib];                 \
            dst[i] = (EXPR);                        \
        }                                           \
        break;

template <typename T>
__device__ void binary_run(int op, T* dst, const T* a, const Strided& al,
                           const T* b, const Strided& bl, long long n)
{
    switch (op) {
        HORA_BINARY_CASE(B_ADD, x + y)
        HORA_BINARY_CASE(B_SUB, x - y)
        HORA_BINARY_CASE(B_MUL, x * y)
        HORA_BINARY_CASE(B_DIV, x / y)
        HORA_BINARY_CASE(B_POW, m_pow(x, y))
        HORA_BINARY_CASE(B_MAXIMUM, (x >= y || isnan(x)) ? x : y) // NaN from either side
        HORA_BINARY_CASE(B_MINIMUM, (x <= y || isnan(x)) ? x : y)
        HORA_BINARY_CASE(B_EQUAL, x == y ? (T)1 : (T)0)
        HORA_BINARY_CASE(B_NOT_EQUAL, x != y ? (T)1 : (T)0)
        HORA_BINARY_CASE(B_LESS, x < y ? (T)1 : (T)0)
        HORA_BINARY_CASE(B_LESS_EQUAL, x <= y ? (T)1 : (T)0)
        HORA_BINARY_CASE(B_GREATER, x > y ? (T)1 : (T)0)
        HORA_BINARY_CASE(B_GREATER_EQUAL, x >= y ? (T)1 : (T)0)
        HORA_BINARY_CASE(B_MOD, hora_floor_mod(x, y))
        HORA_BINARY_CASE(B_REM, m_fmod(x, y))
    default:
        break;
    }
}

// binary computes the dense dst[0:n] = op(a, b) over the views al and bl
// (of one shape, n elements).
extern "C" __global__ void binary_f32(int op, float* dst, const float* a, Strided al,
                                      const float* b, Strided bl, long long n)
{
    binary_run<float>(op, dst, a, al, b, bl, n);
}

extern "C" __global__ void binary_f64(int op, double* dst, const double* a, Strided al,
                                      const double* b, Strided bl, long long n)
{
    binary_run<double>(op, dst, a, al, b, bl, n);
}

// where computes the dense dst[0:n] = cond != 0 ? a : b over three views
// of one shape.
#define HORA_WHERE(SUF, T)                                                                                     \
    extern "C" __global__ void where_##SUF(T* dst, const T* c, Strided cl,          \
                                           const T* a, Strided al, const T* b,      \
                                           Strided bl, long long n)                                           \
    {                                                                                                          \
        HORA_LOOP(i, n)                                                                                        \
        {                                                                                                      \
            long long ic, ia, ib;                                                                              \
            strided_at3(cl, al, bl, i, ic, ia, ib);                                                            \
            dst[i] = c[ic] != (T)0 ? a[ia] : b[ib];                                                            \
        }                                                                                                      \
    }

HORA_WHERE(f32, float)
HORA_WHERE(f64, double)
