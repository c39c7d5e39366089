// Indexing along the middle axis (Kernels.Gather, ScatterAdd, IndexSelect,
// IndexAdd). The big tensor is outer×n×inner and the small one
// outer×m×inner; Gather and ScatterAdd take an index per element of the
// small tensor, IndexSelect and IndexAdd one per slice (m). The tensor
// package checks indices before calling; an index outside [0, n) that
// gets here anyway is skipped (a gather writes 0) rather than read or
// written out of bounds.

// gather (slices = 0) and index_select (slices = 1): one thread per
// element of dst (outer×m×inner).
#define HORA_GATHER(SUF, T)                                                                                    \
    extern "C" __global__ void gather_##SUF(T* __restrict__ dst, const T* __restrict__ src,                  \
                                            const long long* __restrict__ idx, long long outer, long long n,  \
                                            long long m, long long inner, int slices)                         \
    {                                                                                                          \
        long long total = outer * m * inner;                                                                   \
        HORA_LOOP(e, total)                                                                                    \
        {                                                                                                      \
            long long i = e % inner, oj = e / inner;                                                           \
            long long j = oj % m, o = oj / m;                                                                  \
            long long t = slices ? idx[j] : idx[e];                                                            \
            dst[e] = (t >= 0 && t < n) ? src[(o * n + t) * inner + i] : (T)0;                                  \
        }                                                                                                      \
    }

HORA_GATHER(f32, float)
HORA_GATHER(f64, double)
HORA_GATHER(i64, long long)

// scatter_add (slices = 0) and index_add (slices = 1) of floats: one
// thread per element of src, adding atomically into dst.
#define HORA_SCATTER_ADD(SUF, T)                                                                               \
    extern "C" __global__ void scatter_add_##SUF(T* __restrict__ dst, const T* __restrict__ src,             \
                                                 const long long* __restrict__ idx, long long outer,          \
                                                 long long n, long long m, long long inner, int slices)       \
    {                                                                                                          \
        long long total = outer * m * inner;                                                                   \
        HORA_LOOP(e, total)                                                                                    \
        {                                                                                                      \
            long long i = e % inner, oj = e / inner;                                                           \
            long long j = oj % m, o = oj / m;                                                                  \
            long long t = slices ? idx[j] : idx[e];                                                            \
            if (t >= 0 && t < n) {                                                                             \
                hora_atomic_add(&dst[(o * n + t) * inner + i], src[e]);                                        \
            }                                                                                                  \
        }                                                                                                      \
    }

HORA_SCATTER_ADD(f32, float)
HORA_SCATTER_ADD(f64, double)

// scatter_add_i64 is scatter_add for int64 data, which has no atomicAdd
// here: one thread per element of dst (outer×n×inner) adds, in order of j,
// every src element whose index points at it. It is race-free and exact,
// at the cost of scanning all m indices per element.
extern "C" __global__ void scatter_add_i64(long long* __restrict__ dst, const long long* __restrict__ src,
                                           const long long* __restrict__ idx, long long outer, long long n,
                                           long long m, long long inner, int slices)
{
    long long total = outer * n * inner;
    HORA_LOOP(e, total)
    {
        long long i = e % inner, ot = e / inner;
        long long t = ot % n, o = ot / n;
        long long acc = dst[e];
        for (long long j = 0; j < m; j++) {
            long long s = (o * m + j) * inner + i;
            if ((slices ? idx[j] : idx[s]) == t) {
                acc += src[s];
            }
        }
        dst[e] = acc;
    }
}
