// 2-D pooling (Kernels.MaxPool2D, MaxPool2DGrad, AvgPool2D, AvgPool2DGrad,
// MaxPoolValuesKernels.MaxPool2DValues) over planes of N·C, one thread per
// output element (forward) or per input element (backward, gathering from
// the windows that cover it: no atomics, and the CPU's order of sums).

// maxpool writes the maximum of each window to y and, unless arg is null,
// its flat position in the H×W plane to arg. As the CPU's reference loop:
// windows are scanned in row-major order, the first maximum wins, a NaN
// wins over numbers (the last NaN is kept), padding never wins; a window
// wholly in the padding gives 0 at position -1.
#define HORA_MAXPOOL(SUF, T)                                                                                   \
    extern "C" __global__ void maxpool_##SUF(T* __restrict__ y, long long* __restrict__ arg,                  \
                                             const T* __restrict__ x, PoolShape p)                            \
    {                                                                                                          \
        long long ohw = (long long)p.oh * p.ow, hw = (long long)p.h * p.w;                                     \
        long long total = (long long)p.n * p.c * ohw;                                                          \
        HORA_LOOP(e, total)                                                                                    \
        {                                                                                                      \
            long long plane = e / ohw, q = e - plane * ohw;                                                    \
            int i = (int)(q / p.ow), j = (int)(q - (long long)i * p.ow);                                       \
            const T* xp = x + plane * hw;                                                                      \
            T best = 0;                                                                                        \
            long long where = -1;                                                                              \
            for (int kh = 0; kh < p.kh; kh++) {                                                                \
                int h = i * p.sh - p.ph + kh;                                                                  \
                if (h < 0 || h >= p.h) {                                                                       \
                    continue;                                                                                  \
                }                                                                                              \
                for (int kw = 0; kw < p.kw; kw++) {                                                            \
                    int w = j * p.sw - p.pw + kw;                                                              \
                    if (w < 0 || w >= p.w) {                                                                   \
                        continue;                                                                              \
                    }                                                                                          \
                    long long at = (long long)h * p.w + w;                                                     \
                    T v = xp[at];                                                                              \
                    if (where < 0 || v > best || isnan(v)) {                                                   \
                        best = v;                                                                              \
                        where = at;                                                                            \
                    }                                                                                          \
                }                                                                                              \
            }                                                                                                  \
            y[e] = best;                                                                                       \
            if (arg) {                                                                                         \
                arg[e] = where;                                                                                \
            }                                                                                                  \
        }                                                                                                      \
    }

HORA_MAXPOOL(f32, float)
HORA_MAXPOOL(f64, double)

// hora_cover sets [*lo, *hi) to the output rows (or columns) whose windows
// (k wide, stride s, padding pad, out outputs) cover input row h.
__device__ __forceinline__ void hora_cover(int h, int k, int s, int pad, int out, int* lo, int* hi)
{
    int a = h + pad - k + 1; // the window of output i covers h when i*s >= a and i*s <= h + pad
    int l = a <= 0 ? 0 : (a + s - 1) / s;
    int u = h + pad < 0 ? -1 : (h + pad) / s;
    if (u > out - 1) {
        u = out - 1;
    }
    *lo = l;
    *hi = u + 1;
}

// hora_pool_window finds, for input element e (flat over n·c·h·w), its
// plane, its position in the plane, and the output rows [i0, i1) and
// columns [j0, j1) whose windows cover it.
__device__ __forceinline__ void hora_pool_window(PoolShape p, long long e, long long* plane, long long* at, int* i0,
                                                 int* i1, int* j0, int* j1)
{
    long long hw = (long long)p.h * p.w;
    *plane = e / hw;
    *at = e - *plane * hw;
    int h = (int)(*at / p.w), w = (int)(*at - (long long)h * p.w);
    hora_cover(h, p.kh, p.sh, p.ph, p.oh, i0, i1);
    hora_cover(w, p.kw, p.sw, p.pw, p.ow, j0, j1);
}

// maxpool_grad sets each dx element to the sum of the dy whose recorded
// maximum it is.
#define HORA_MAXPOOL_GRAD(SUF, T)                                                                              \
    extern "C" __global__ void maxpool_grad_##SUF(T* __restrict__ dx, const T* __restrict__ dy,               \
                                                  const long long* __restrict__ arg, PoolShape p)             \
    {                                                                                                          \
        long long ohw = (long long)p.oh * p.ow, hw = (long long)p.h * p.w;                                     \
        long long total = (long long)p.n * p.c * hw;                                                           \
        HORA_LOOP(e, total)                                                                                    \
        {                                                                                                      \
            long long plane, at;                                                                               \
            int i0, i1, j0, j1;                                                                                \
            hora_pool_window(p, e, &plane, &at, &i0, &i1, &j0, &j1);                                           \
            const T* g = dy + plane * ohw;                                                                     \
            const long long* a = arg + plane * ohw;                                                            \
            T acc = 0;                                                                                         \
            for (int i = i0; i < i1; i++) {                                                                    \
                for (int j = j0; j < j1; j++) {                                                                \
                    long long q = (long long)i * p.ow + j;                                                     \
                    if (a[q] == at) {                                                                          \
                        acc += g[q];                                                                           \
                    }                                                                                          \
                }                                                                                              \
            }                                                                                                  \
            dx[e] = acc;                                                                                       \
        }                                                                                                      \
    }

HORA_MAXPOOL_GRAD(f32, float)
HORA_MAXPOOL_GRAD(f64, double)

// hora_pool_divisor is the number of elements average pooling divides the
// window of output (i, j) by.
__device__ __forceinline__ int hora_pool_divisor(const PoolShape& p, int i, int j)
{
    if (p.count_pad) {
        return p.kh * p.kw;
    }
    int h0 = i * p.sh - p.ph, w0 = j * p.sw - p.pw;
    int h1 = h0 + p.kh < p.h ? h0 + p.kh : p.h;
    int w1 = w0 + p.kw < p.w ? w0 + p.kw : p.w;
    return (h1 - (h0 > 0 ? h0 : 0)) * (w1 - (w0 > 0 ? w0 : 0));
}

// avgpool averages each window (the sum times 1/divisor, as the CPU).
#define HORA_AVGPOOL(SUF, T)                                                                                   \
    extern "C" __global__ void avgpool_##SUF(T* __restrict__ y, const T* __restrict__ x, PoolShape p)         \
    {                                                                                                          \
        long long ohw = (long long)p.oh * p.ow, hw = (long long)p.h * p.w;                                     \
        long long total = (long long)p.n * p.c * ohw;                                                          \
        HORA_LOOP(e, total)                                                                                    \
        {                                                                                                      \
            long long plane = e / ohw, q = e - plane * ohw;                                                    \
            int i = (int)(q / p.ow), j = (int)(q - (long long)i * p.ow);                                       \
            const T* xp = x + plane * hw;                                                                      \
            int h0 = i * p.sh - p.ph, w0 = j * p.sw - p.pw;                                                    \
            int h1 = h0 + p.kh < p.h ? h0 + p.kh : p.h, w1 = w0 + p.kw < p.w ? w0 + p.kw : p.w;                \
            T sum = 0;                                                                                         \
            for (int h = h0 > 0 ? h0 : 0; h < h1; h++) {                                                       \
                for (int w = w0 > 0 ? w0 : 0; w < w1; w++) {                                                   \
                    sum += xp[(long long)h * p.w + w];                                                         \
                }                                                                                              \
            }                                                                                                  \
            y[e] = sum * ((T)1 / (T)hora_pool_divisor(p, i, j));                                               \
        }                                                                                                      \
    }

HORA_AVGPOOL(f32, float)
HORA_AVGPOOL(f64, double)

// avgpool_grad spreads each dy evenly over its window: one thread per
// input element, summing dy·(1/divisor) of the windows that cover it.
#define HORA_AVGPOOL_GRAD(SUF, T)                                                                              \
    extern "C" __global__ void avgpool_grad_##SUF(T* __restrict__ dx, const T* __restrict__ dy, PoolShape p)  \
    {                                                                                                          \
        long long ohw = (long long)p.oh * p.ow, hw = (long long)p.h * p.w;                                     \
        long long total = (long long)p.n * p.c * hw;                                                           \
        HORA_LOOP(e, total)                                                                                    \
        {                                                                                                      \
            long long plane, at;                                                                               \
            int i0, i1, j0, j1;                                                                                \
            hora_pool_window(p, e, &plane, &at, &i0, &i1, &j0, &j1);                                           \
            const T* g = dy + plane * ohw;                                                                     \
            T acc = 0;                                                                                         \
            for (int i = i0; i < i1; i++) {                                                                    \
                for (int j = j0; j < j1; j++) {                                                                \
                    acc += g[(long long)i * p.ow + j] * ((T)1 / (T)hora_pool_divisor(p, i, j));                \
                }                                                                                              \
            }                                                                                                  \
            dx[e] = acc;                                                                                       \
        }                                                                                                      \
    }

HORA_AVGPOOL_GRAD(f32, float)
HORA_AVGPOOL_GRAD(f64, double)
