// Reductions along the middle axis of a dense outer×n×inner tensor
// (Kernels.Reduce), with the block-level trees of common.cuh. Sums
// accumulate in double (float32 included) along a tree; Max, Min and
// ArgMax keep the first extreme, and a NaN wins (the first NaN, for
// ArgMax), as device.ReduceOp says.

// reduce_rows_sum sums rows of n elements (inner = 1): a block per row.
#define HORA_REDUCE_ROWS_SUM(SUF, T)                                                                         \
    extern "C" __global__ void reduce_rows_sum_##SUF(T* __restrict__ dst, const T* __restrict__ src,       \
                                                     long long outer, long long n)                         \
    {                                                                                                        \
        __shared__ double sh[HORA_BLOCK];                                                                    \
        for (long long r = blockIdx.x; r < outer; r += gridDim.x) {                                          \
            const T* row = src + r * n;                                                                      \
            double acc = 0;                                                                                  \
            for (long long t = threadIdx.x; t < n; t += HORA_BLOCK) {                                        \
                acc += (double)row[t];                                                                       \
            }                                                                                                \
            acc = hora_block_sum(sh, acc);                                                                   \
            if (threadIdx.x == 0) {                                                                          \
                dst[r] = (T)acc;                                                                             \
            }                                                                                                \
        }                                                                                                    \
    }

HORA_REDUCE_ROWS_SUM(f32, float)
HORA_REDUCE_ROWS_SUM(f64, double)

// reduce_rows_cmp takes the maximum (op R_MAX) or minimum of rows of n
// elements (inner = 1) into dst and its position into arg (either may be
// null): a block per row.
#define HORA_REDUCE_ROWS_CMP(SUF, T)                                                                         \
    extern "C" __global__ void reduce_rows_cmp_##SUF(T* __restrict__ dst, long long* __restrict__ arg,     \
                                                     const T* __restrict__ src, long long outer, long long n, \
                                                     int op)                                                 \
    {                                                                                                        \
        __shared__ T sv[HORA_BLOCK];                                                                         \
        __shared__ long long si[HORA_BLOCK];                                                                 \
        for (long long r = blockIdx.x; r < outer; r += gridDim.x) {                                          \
            const T* row = src + r * n;                                                                      \
            T best = 0;                                                                                      \
            long long bi = -1;                                                                               \
            for (long long t = threadIdx.x; t < n; t += HORA_BLOCK) {                                        \
                T v = row[t];                                                                                \
                if (hora_better(op, v, t, best, bi)) {                                                       \
                    best = v;                                                                                \
                    bi = t;                                                                                  \
                }                                                                                            \
            }                                                                                                \
            hora_block_best(op, sv, si, best, bi);                                                           \
            if (threadIdx.x == 0) {                                                                          \
                if (dst) {                                                                                   \
                    dst[r] = sv[0];                                                                          \
                }                                                                                            \
                if (arg) {                                                                                   \
                    arg[r] = si[0];                                                                          \
                }                                                                                            \
            }                                                                                                \
            __syncthreads();                                                                                 \
        }                                                                                                    \
    }

HORA_REDUCE_ROWS_CMP(f32, float)
HORA_REDUCE_ROWS_CMP(f64, double)

// The column kernels (inner > 1) run blocks of HORA_COLS × HORA_COL_ROWS
// threads: x along inner (coalesced), y along n; blockIdx.x picks a strip
// of inner, blockIdx.y the outer index (both grid-stride).
#define HORA_COLS 32
#define HORA_COL_ROWS 8

#define HORA_REDUCE_COLS_SUM(SUF, T)                                                                          \
    extern "C" __global__ void reduce_cols_sum_##SUF(T* __restrict__ dst, const T* __restrict__ src,        \
                                                     long long outer, long long n, long long inner)         \
    {                                                                                                         \
        __shared__ double sh[HORA_COL_ROWS][HORA_COLS];                                                       \
        int tx = threadIdx.x, ty = threadIdx.y;                                                               \
        for (long long o = blockIdx.y; o < outer; o += gridDim.y) {                                           \
            for (long long i0 = (long long)blockIdx.x * HORA_COLS; i0 < inner; i0 += (long long)gridDim.x * HORA_COLS) { \
                long long i = i0 + tx;                                                                        \
                double acc = 0;                                                                               \
                if (i < inner) {                                                                              \
                    const T* col = src + o * n * inner + i;                                                   \
                    for (long long t = ty; t < n; t += HORA_COL_ROWS) {                                       \
                        acc += (double)col[t * inner];                                                        \
                    }                                                                                         \
                }                                                                                             \
                sh[ty][tx] = acc;                                                                             \
                __syncthreads();                                                                              \
                for (int s = HORA_COL_ROWS / 2; s > 0; s >>= 1) {                                             \
                    if (ty < s) {                                                                             \
                        sh[ty][tx] += sh[ty + s][tx];                                                         \
                    }                                                                                         \
                    __syncthreads();                                                                          \
                }                                                                                             \
                if (ty == 0 && i < inner) {                                                                   \
                    dst[o * inner + i] = (T)sh[0][tx];                                                        \
                }                                                                                             \
                __syncthreads();                                                                              \
            }                                                                                                 \
        }                                                                                                     \
    }

HORA_REDUCE_COLS_SUM(f32, float)
HORA_REDUCE_COLS_SUM(f64, double)

#define HORA_REDUCE_COLS_CMP(SUF, T)                                                                          \
    extern "C" __global__ void reduce_cols_cmp_##SUF(T* __restrict__ dst, long long* __restrict__ arg,      \
                                                     const T* __restrict__ src, long long outer, long long n, \
                                                     long long inner, int op)                                \
    {                                                                                                         \
        __shared__ T sv[HORA_COL_ROWS][HORA_COLS];                                                            \
        __shared__ long long si[HORA_COL_ROWS][HORA_COLS];                                                    \
        int tx = threadIdx.x, ty = threadIdx.y;                                                               \
        for (long long o = blockIdx.y; o < outer; o += gridDim.y) {                                           \
            for (long long i0 = (long long)blockIdx.x * HORA_COLS; i0 < inner; i0 += (long long)gridDim.x * HORA_COLS) { \
                long long i = i0 + tx;                                                                        \
                T best = 0;                                                                                   \
                long long bi = -1;                                                                            \
                if (i < inner) {                                                                              \
                    const T* col = src + o * n * inner + i;                                                   \
                    for (long long t = ty; t < n; t += HORA_COL_ROWS) {                                       \
                        T v = col[t * inner];                                                                 \
                        if (hora_better(op, v, t, best, bi)) {                                                \
                            best = v;                                                                         \
                            bi = t;                                                                           \
                        }                                                                                     \
                    }                                                                                         \
                }                                                                                             \
                sv[ty][tx] = best;                                                                            \
                si[ty][tx] = bi;                                                                              \
                __syncthreads();                                                                              \
                for (int s = HORA_COL_ROWS / 2; s > 0; s >>= 1) {                                             \
                    if (ty < s && hora_better(op, sv[ty + s][tx], si[ty + s][tx], sv[ty][tx], si[ty][tx])) {  \
                        sv[ty][tx] = sv[ty + s][tx];                                                          \
                        si[ty][tx] = si[ty + s][tx];                                                          \
                    }                                                                                         \
                    __syncthreads();                                                                          \
                }                                                                                             \
                if (ty == 0 && i < inner) {                                                                   \
                    if (dst) {                                                                                \
                        dst[o * inner + i] = sv[0][tx];                                                       \
                    }                                                                                         \
                    if (arg) {                                                                                \
                        arg[o * inner + i] = si[0][tx];                                                       \
                    }                                                                                         \
                }                                                                                             \
                __syncthreads();                                                                              \
            }                                                                                                 \
        }                                                                                                     \
    }

HORA_REDUCE_COLS_CMP(f32, float)
HORA_REDUCE_COLS_CMP(f64, double)

// sum_parts adds the n partial sums in parts and writes (T)(sum·scale) to
// out[0] (one block of HORA_BLOCK threads).
#define HORA_SUM_PARTS(SUF, T)                                                                                \
    extern "C" __global__ void sum_parts_##SUF(T* __restrict__ out, const double* __restrict__ parts,       \
                                               long long n, double scale)                                   \
    {                                                                                                         \
        __shared__ double sh[HORA_BLOCK];                                                                     \
        double acc = 0;                                                                                       \
        for (long long t = threadIdx.x; t < n; t += HORA_BLOCK) {                                             \
            acc += parts[t];                                                                                  \
        }                                                                                                     \
        acc = hora_block_sum(sh, acc);                                                                        \
        if (threadIdx.x == 0) {                                                                               \
            out[0] = (T)(acc * scale);                                                                        \
        }                                                                                                     \
    }

HORA_SUM_PARTS(f32, float)
HORA_SUM_PARTS(f64, double)

// reduce_small reduces short axes (small n): a thread per output element
// scans its n inputs in order, summing in double (op R_SUM) or keeping the
// best as hora_better says (R_MAX, R_MIN; dst and arg may be null).
#define R_SUM 2

#define HORA_REDUCE_SMALL(SUF, T)                                                                             \
    extern "C" __global__ void reduce_small_##SUF(T* __restrict__ dst, long long* __restrict__ arg,          \
                                                  const T* __restrict__ src, long long outer, long long n,   \
                                                  long long inner, int op)                                   \
    {                                                                                                         \
        long long total = outer * inner;                                                                      \
        HORA_LOOP(e, total)                                                                                   \
        {                                                                                                     \
            long long o = e / inner, i = e - o * inner;                                                       \
            const T* p = src + o * n * inner + i;                                                             \
            if (op == R_SUM) {                                                                                \
                double acc = 0;                                                                               \
                for (long long t = 0; t < n; t++) {                                                           \
                    acc += (double)p[t * inner];                                                              \
                }                                                                                             \
                dst[e] = (T)acc;                                                                              \
                continue;                                                                                     \
            }                                                                                                 \
            T best = 0;                                                                                       \
            long long bi = -1;                                                                                \
            for (long long t = 0; t < n; t++) {                                                               \
                T v = p[t * inner];                                                                           \
                if (hora_better(op, v, t, best, bi)) {                                                        \
                    best = v;                                                                                 \
                    bi = t;                                                                                   \
                }                                                                                             \
            }                                                                                                 \
            if (dst) {                                                                                        \
                dst[e] = best;                                                                                \
            }                                                                                                 \
            if (arg) {                                                                                        \
                arg[e] = bi;                                                                                  \
            }                                                                                                 \
        }                                                                                                     \
    }

HORA_REDUCE_SMALL(f32, float)
HORA_REDUCE_SMALL(f64, double)
