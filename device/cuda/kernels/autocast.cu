// Rounding float32 to bfloat16 for autocast matrix products: a bfloat16
// is the upper half of a float32, rounded to nearest, ties to even; a NaN
// stays a (quiet) NaN.
extern "C" __global__ void f32_to_bf16(const float* __restrict__ x, unsigned short* __restrict__ y, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {
        unsigned int u = __float_as_uint(x[i]);
        if ((u & 0x7fffffffu) > 0x7f800000u) {
            y[i] = (unsigned short)((u >> 16) | 0x40u);
        } else {
            y[i] = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        }
    }
}

// autocast_half_bits rounds x to IEEE binary16 (nearest, ties to even;
// overflow to ±Inf, NaN kept a NaN, subnormals kept).
__device__ __forceinline__ unsigned short autocast_half_bits(float x)
{
    unsigned int u = __float_as_uint(x);
    unsigned int sign = (u >> 16) & 0x8000u;
    unsigned int a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (unsigned short)(sign | 0x7e00u);          // NaN
    if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);         // rounds to Inf (≥ 65520)
    if (a >= 0x38800000u) {                                                // normal half
        unsigned int r = a - 0x38000000u;                                  // rebias exponent 127 → 15
        r = (r + 0xfffu + ((r >> 13) & 1u)) >> 13;
        return (unsigned short)(sign | r);
    }
    if (a < 0x33000000u) return (unsigned short)sign;                      // below half the smallest subnormal
    // Subnormal half: shift the mantissa (with its implicit 1) into place.
    unsigned int e = a >> 23;
    unsigned int m = (a & 0x7fffffu) | 0x800000u;
    unsigned int shift = 126u - e;                                         // mantissa bits below the half's last place
    unsigned int q = m >> shift;
    unsigned int rem = m & ((1u << shift) - 1u);
    unsigned int half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (unsigned short)(sign | q);
}

// f32_to_f16 rounds float32 to float16 for autocast matrix products.
extern "C" __global__ void f32_to_f16(const float* __restrict__ x, unsigned short* __restrict__ y, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {
        y[i] = autocast_half_bits(x[i]);
    }
}
