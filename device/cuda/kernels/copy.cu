// Copy between strided views with conversion among float32, float64,
// int64 and the storage type float16 (Kernels.Copy), and Fill.

// Conversions, named by source and destination type. float to int64
// truncates toward zero (a C conversion); to float16 rounds to nearest
// even (from float64 directly, not through float32; an int64 through
// float64, as the CPU device does).

#define HORA_COPY(SN, ST, DN, DT, CONV)                                                                           \
    extern "C" __global__ void copy_##SN##_##DN(DT* __restrict__ dst, Strided dl, const ST* __restrict__ src, \
                                                Strided sl, long long n)                                      \
    {                                                                                                         \
        HORA_LOOP(i, n)                                                                                       \
        {                                                                                                     \
            long long d, s;                                                                                   \
            strided_at2(dl, sl, i, d, s);                                                                     \
            ST v = src[s];                                                                                    \
            dst[d] = CONV;                                                                                    \
        }                                                                                                     \
    }

HORA_COPY(f32, float, f32, float, v)
HORA_COPY(f32, float, f64, double, (double)v)
HORA_COPY(f32, float, i64, long long, (long long)v)
HORA_COPY(f32, float, f16, unsigned short, hora_f32_to_f16(v))
HORA_COPY(f64, double, f32, float, (float)v)
HORA_COPY(f64, double, f64, double, v)
HORA_COPY(f64, double, i64, long long, (long long)v)
HORA_COPY(f64, double, f16, unsigned short, hora_f64_to_f16(v))
HORA_COPY(i64, long long, f32, float, (float)v)
HORA_COPY(i64, long long, f64, double, (double)v)
HORA_COPY(i64, long long, i64, long long, v)
HORA_COPY(i64, long long, f16, unsigned short, hora_f64_to_f16((double)v))
HORA_COPY(f16, unsigned short, f32, float, hora_f16_to_f32(v))
HORA_COPY(f16, unsigned short, f64, double, (double)hora_f16_to_f32(v))
HORA_COPY(f16, unsigned short, i64, long long, (long long)hora_f16_to_f32(v))
HORA_COPY(f16, unsigned short, f16, unsigned short, v)

// fill sets dst[0:n] to v.
#define HORA_FILL(SUF, T)                                                       \
    extern "C" __global__ void fill_##SUF(T* __restrict__ dst, long long n, T v) \
    {                                                                           \
        HORA_LOOP(i, n) { dst[i] = v; }                                         \
    }

HORA_FILL(f32, float)
HORA_FILL(f64, double)
HORA_FILL(i64, long long)
