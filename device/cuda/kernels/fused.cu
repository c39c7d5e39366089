// Fused kernels (device.FusedKernels): bias and activation, their
// gradients, batch normalisation, softmax cross-entropy and the SGD and
// Adam updates, with the CPU device's formulas (device/cpu/fused.go).
// Reductions (BiasGrad, BatchNorm, the cross-entropy) run a block per
// channel or row and accumulate in double along a tree.

// bias_act computes y[o,c,i] = act(x[o,c,i] + bias[c]) (bias may be null;
// y may be x).
#define HORA_BIAS_ACT(SUF, T)                                                                           \
    extern "C" __global__ void bias_act_##SUF(T* y, const T* x, const T* bias, long long outer,          \
                                              long long channels, long long inner, int act)             \
    {                                                                                                   \
        long long total = outer * channels * inner;                                                     \
        HORA_LOOP(e, total)                                                                             \
        {                                                                                               \
            T v = x[e];                                                                                 \
            if (bias) {                                                                                 \
                v += bias[(e / inner) % channels];                                                      \
            }                                                                                           \
            y[e] = hora_act(act, v);                                                                    \
        }                                                                                               \
    }

HORA_BIAS_ACT(f32, float)
HORA_BIAS_ACT(f64, double)

// act_grad computes dx = dy·act'(y) from the activation's output y: for
// ReLU dy where y > 0; for ReLU6 0 where y <= 0 or y >= 6 (PyTorch's
// hardtanh backward; a NaN y passes dy). dx may be dy.
#define HORA_ACT_GRAD(SUF, T)                                                                           \
    extern "C" __global__ void act_grad_##SUF(T* dx, const T* dy, const T* y, long long n, int act)      \
    {                                                                                                   \
        HORA_LOOP(i, n)                                                                                 \
        {                                                                                               \
            T g = dy[i], v = y[i];                                                                      \
            if (act == HORA_ACT_RELU) {                                                                 \
                if (!(v > (T)0)) {                                                                      \
                    g = (T)0;                                                                           \
                }                                                                                       \
            } else if (act == HORA_ACT_RELU6) {                                                         \
                if (v <= (T)0 || v >= (T)6) {                                                           \
                    g = (T)0;                                                                           \
                }                                                                                       \
            }                                                                                           \
            dx[i] = g;                                                                                  \
        }                                                                                               \
    }

HORA_ACT_GRAD(f32, float)
HORA_ACT_GRAD(f64, double)

// bias_grad sets db[y·channels + c] = Σ dy[o,c,i] over slice y =
// blockIdx.y of the outer×inner terms of channel c: a block per channel
// and slice (gridDim.y slices; the Go side adds the slices' sums when
// there are several). (With inner = 1 the Go side uses reduce_cols_sum
// instead, which reads rows whole.)
#define HORA_BIAS_GRAD(SUF, T)                                                                          \
    extern "C" __global__ void bias_grad_##SUF(T* __restrict__ db, const T* __restrict__ dy,            \
                                               long long outer, long long channels, long long inner)    \
    {                                                                                                   \
        __shared__ double sh[HORA_BLOCK];                                                               \
        long long count = outer * inner;                                                                \
        long long slice = (count + gridDim.y - 1) / gridDim.y;                                          \
        long long lo = blockIdx.y * slice, hi = lo + slice < count ? lo + slice : count;                \
        for (long long c = blockIdx.x; c < channels; c += gridDim.x) {                                  \
            double acc = 0;                                                                             \
            /* (o, i) follows t without a 64-bit division per term. */                                  \
            long long t0 = lo + threadIdx.x, o = t0 / inner, i = t0 - o * inner;                        \
            for (long long t = t0; t < hi; t += HORA_BLOCK) {                                           \
                acc += (double)dy[(o * channels + c) * inner + i];                                      \
                i += HORA_BLOCK;                                                                        \
                if (i >= inner) {                                                                       \
                    o += i / inner;                                                                     \
                    i %= inner;                                                                         \
                }                                                                                       \
            }                                                                                           \
            acc = hora_block_sum(sh, acc);                                                              \
            if (threadIdx.x == 0) {                                                                     \
                db[blockIdx.y * channels + c] = (T)acc;                                                 \
            }                                                                                           \
        }                                                                                               \
    }

HORA_BIAS_GRAD(f32, float)
HORA_BIAS_GRAD(f64, double)

// batch_norm normalises x (outer×channels×inner) per channel with the
// batch's mean and biased variance (two passes, in double), writing them
// to mean and variance: y = (x - mean)·s + bias with
// s = weight/sqrt(variance+eps) (weight and bias may be null). Subtracting
// first keeps a value near the mean exact whether or not the compiler
// fuses the multiply-add (x·s + (bias - mean·s) cancels). A block per
// channel.
#define HORA_BATCH_NORM(SUF, T)                                                                         \
    extern "C" __global__ void batch_norm_##SUF(T* y, T* __restrict__ mean, T* __restrict__ variance,    \
                                                const T* x, const T* __restrict__ weight,                \
                                                const T* __restrict__ bias, long long outer,             \
                                                long long channels, long long inner, double eps)         \
    {                                                                                                   \
        __shared__ double sh[HORA_BLOCK];                                                               \
        long long count = outer * inner;                                                                \
        double cnt = (double)count;                                                                     \
        for (long long c = blockIdx.x; c < channels; c += gridDim.x) {                                  \
            double acc = 0;                                                                             \
            for (long long t = threadIdx.x; t < count; t += HORA_BLOCK) {                               \
                long long o = t / inner, i = t - o * inner;                                             \
                acc += (double)x[(o * channels + c) * inner + i];                                       \
            }                                                                                           \
            double mu = hora_block_sum(sh, acc) / cnt;                                                  \
            acc = 0;                                                                                    \
            for (long long t = threadIdx.x; t < count; t += HORA_BLOCK) {                               \
                long long o = t / inner, i = t - o * inner;                                             \
                double d = (double)x[(o * channels + c) * inner + i] - mu;                              \
                acc += d * d;                                                                           \
            }                                                                                           \
            double var = hora_block_sum(sh, acc) / cnt;                                                 \
            double scale = 1.0 / sqrt(var + eps);                                                       \
            if (weight) {                                                                               \
                scale *= (double)weight[c];                                                             \
            }                                                                                           \
            T m = (T)mu, s = (T)scale, b = bias ? bias[c] : (T)0;                                       \
            for (long long t = threadIdx.x; t < count; t += HORA_BLOCK) {                               \
                long long o = t / inner, i = t - o * inner;                                             \
                long long at = (o * channels + c) * inner + i;                                          \
                y[at] = (x[at] - m) * s + b;                                                            \
            }                                                                                           \
            if (threadIdx.x == 0) {                                                                     \
                mean[c] = (T)mu;                                                                        \
                variance[c] = (T)var;                                                                   \
            }                                                                                           \
        }                                                                                               \
    }

HORA_BATCH_NORM(f32, float)
HORA_BATCH_NORM(f64, double)

// batch_norm_grad computes, per channel, with x̂ = (x-mean)·invstd:
// dbias = Σ dy, dweight = Σ dy·x̂ (each unless null) and
// dx = weight·invstd·(dy - dbias/n - x̂·dweight/n) (weight may be null).
// A block per channel.
#define HORA_BATCH_NORM_GRAD(SUF, T)                                                                    \
    extern "C" __global__ void batch_norm_grad_##SUF(T* dx, T* __restrict__ dweight, T* __restrict__ dbias, \
                                                     const T* dy, const T* __restrict__ x,              \
                                                     const T* __restrict__ mean,                        \
                                                     const T* __restrict__ variance,                    \
                                                     const T* __restrict__ weight, long long outer,     \
                                                     long long channels, long long inner, double eps)   \
    {                                                                                                   \
        __shared__ double sh[HORA_BLOCK];                                                               \
        long long count = outer * inner;                                                                \
        double cnt = (double)count;                                                                     \
        for (long long c = blockIdx.x; c < channels; c += gridDim.x) {                                  \
            double mu = (double)mean[c];                                                                \
            double invstd = 1.0 / sqrt((double)variance[c] + eps);                                      \
            double sdy = 0, sdyx = 0;                                                                   \
            for (long long t = threadIdx.x; t < count; t += HORA_BLOCK) {                               \
                long long o = t / inner, i = t - o * inner;                                             \
                long long at = (o * channels + c) * inner + i;                                          \
                double g = (double)dy[at];                                                              \
                sdy += g;                                                                               \
                sdyx += g * ((double)x[at] - mu) * invstd;                                              \
            }                                                                                           \
            sdy = hora_block_sum(sh, sdy);                                                              \
            sdyx = hora_block_sum(sh, sdyx);                                                            \
            if (threadIdx.x == 0) {                                                                     \
                if (dbias) {                                                                            \
                    dbias[c] = (T)sdy;                                                                  \
                }                                                                                       \
                if (dweight) {                                                                          \
                    dweight[c] = (T)sdyx;                                                               \
                }                                                                                       \
            }                                                                                           \
            double k = (weight ? (double)weight[c] : 1.0) * invstd;                                     \
            for (long long t = threadIdx.x; t < count; t += HORA_BLOCK) {                               \
                long long o = t / inner, i = t - o * inner;                                             \
                long long at = (o * channels + c) * inner + i;                                          \
                double xhat = ((double)x[at] - mu) * invstd;                                            \
                dx[at] = (T)(k * ((double)dy[at] - sdy / cnt - xhat * sdyx / cnt));                     \
            }                                                                                           \
        }                                                                                               \
    }

HORA_BATCH_NORM_GRAD(f32, float)
HORA_BATCH_NORM_GRAD(f64, double)

// xent_check_labels writes to out[0] the first position of labels[0:rows]
// outside [0, classes) (or -1) and to out[1] its value. One block.
extern "C" __global__ void xent_check_labels(long long* __restrict__ out, const long long* __restrict__ labels,
                                             long long rows, long long classes)
{
    __shared__ long long first[HORA_BLOCK];
    long long bad = -1;
    for (long long r = threadIdx.x; r < rows; r += HORA_BLOCK) {
        long long l = labels[r];
        if (l < 0 || l >= classes) {
            bad = r;
            break;
        }
    }
    int t = threadIdx.x;
    first[t] = bad;
    __syncthreads();
    for (int s = HORA_BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) {
            long long o = first[t + s];
            if (o >= 0 && (first[t] < 0 || o < first[t])) {
                first[t] = o;
            }
        }
        __syncthreads();
    }
    if (t == 0) {
        out[0] = first[0];
        out[1] = first[0] >= 0 ? labels[first[0]] : 0;
    }
}

// softmax_xent computes, for each row of logits (a block per row), the
// gradient of the mean smoothed cross-entropy into grad and the row's loss
// -Σ_i target_i·log p_i (target: on for the label, off elsewhere) into
// loss[row], which sum_parts then averages.
#define HORA_SOFTMAX_XENT(SUF, T)                                                                       \
    extern "C" __global__ void softmax_xent_##SUF(T* __restrict__ grad, double* __restrict__ loss,        \
                                                  const T* __restrict__ logits,                         \
                                                  const long long* __restrict__ labels, long long rows,  \
                                                  long long classes, double scale, double off, double on) \
    {                                                                                                   \
        __shared__ T sv[HORA_BLOCK];                                                                    \
        __shared__ long long si[HORA_BLOCK];                                                            \
        __shared__ double sh[HORA_BLOCK];                                                               \
        for (long long r = blockIdx.x; r < rows; r += gridDim.x) {                                      \
            const T* x = logits + r * classes;                                                          \
            T* g = grad + r * classes;                                                                  \
            T best = 0;                                                                                 \
            long long bi = -1;                                                                          \
            for (long long t = threadIdx.x; t < classes; t += HORA_BLOCK) {                             \
                if (hora_better(R_MAX, x[t], t, best, bi)) {                                            \
                    best = x[t];                                                                        \
                    bi = t;                                                                             \
                }                                                                                       \
            }                                                                                           \
            hora_block_best(R_MAX, sv, si, best, bi);                                                   \
            T m = sv[0];                                                                                \
            __syncthreads();                                                                            \
            double z = 0;                                                                               \
            for (long long t = threadIdx.x; t < classes; t += HORA_BLOCK) {                             \
                T e = m_exp(x[t] - m);                                                                  \
                g[t] = e;                                                                               \
                z += (double)e;                                                                         \
            }                                                                                           \
            z = hora_block_sum(sh, z);                                                                  \
            double logz = log(z) + (double)m;                                                           \
            long long label = labels[r];                                                                \
            double l = 0;                                                                               \
            for (long long t = threadIdx.x; t < classes; t += HORA_BLOCK) {                             \
                double tg = t == label ? on : off;                                                      \
                if (tg != 0) {                                                                          \
                    l -= tg * ((double)x[t] - logz);                                                    \
                }                                                                                       \
                g[t] = (T)(((double)g[t] / z - tg) * scale);                                            \
            }                                                                                           \
            l = hora_block_sum(sh, l);                                                                  \
            if (threadIdx.x == 0) {                                                                     \
                loss[r] = l;                                                                            \
            }                                                                                           \
        }                                                                                               \
    }

HORA_SOFTMAX_XENT(f32, float)
HORA_SOFTMAX_XENT(f64, double)

// hora_fma32 is x·y + z rounded once to double then to float (the CPU's
// fma32): the product of two floats is exact in double.
__device__ __forceinline__ float hora_fma32(float x, float y, float z)
{
    return (float)((double)x * (double)y + (double)z);
}

// hora_mul32 is the float product x·y, rounded on its own (never fused
// into a following addition).
__device__ __forceinline__ float hora_mul32(float x, float y) { return (float)((double)x * (double)y); }

// The SGD variants (bits of flags), as the CPU's vec.SGDMomentum.
#define SGD_WD 1
#define SGD_MOMENTUM 2
#define SGD_FIRST 4
#define SGD_NESTEROV 8

// sgd_elem_f32 is torch.optim.SGD's update of element i in PyTorch's
// float32 order of operations (device/cpu/internal/vec sgdGo): wd, mom,
// omd = 1-dampening and neglr = -lr as float32.
__device__ __forceinline__ void sgd_elem_f32(float* p, const float* g, float* buf, long long i, float wd, float mom,
                                             float omd, float neglr, int flags)
{
    float pi = p[i], gi = g[i];
    if (flags & SGD_WD) {
        gi = hora_fma32(pi, wd, gi);
    }
    if (flags & SGD_MOMENTUM) {
        float b = gi;
        if (!(flags & SGD_FIRST)) {
            b = hora_fma32(gi, omd, hora_mul32(buf[i], mom));
        }
        buf[i] = b;
        if (flags & SGD_NESTEROV) {
            gi = hora_fma32(b, mom, gi);
        } else {
            gi = b;
        }
    }
    p[i] = hora_fma32(gi, neglr, pi);
}

// sgd_step_f32 updates one float32 parameter (sgd_elem_f32).
extern "C" __global__ void sgd_step_f32(float* p, const float* g, float* buf, long long n, float wd, float mom,
                                        float omd, float neglr, int flags)
{
    HORA_LOOP(i, n)
    {
        sgd_elem_f32(p, g, buf, i, wd, mom, omd, neglr, flags);
    }
}

// sgd_step_f64 is torch.optim.SGD's update in float64 (the CPU's
// sgdRange): damp = 1-dampening.
extern "C" __global__ void sgd_step_f64(double* p, const double* g, double* buf, long long n, double lr, double mom,
                                        double damp, double wd, int flags)
{
    HORA_LOOP(i, n)
    {
        double d = g[i];
        if (flags & SGD_WD) {
            d += wd * p[i];
        }
        if (flags & SGD_MOMENTUM) {
            double b = (flags & SGD_FIRST) ? d : mom * buf[i] + damp * d;
            buf[i] = b;
            if (flags & SGD_NESTEROV) {
                d += mom * b;
            } else {
                d = b;
            }
        }
        p[i] -= lr * d;
    }
}

// adam_elem_f32 is torch.optim.Adam's (AdamW's) update of element i in
// PyTorch's float32 order of operations, without AMSGrad
// (device/cpu/internal/vec adamGo): l2 = 1 adds wd·param to the gradient,
// else param is scaled by wd (1 - lr·weight_decay for AdamW, 1 for no
// decay).
__device__ __forceinline__ void adam_elem_f32(float* p, const float* g, float* m, float* v, long long i, float b1,
                                              float omb1, float b2, float omb2, float bc2sqrt, float eps,
                                              float negstep, float wd, int l2)
{
    float pi = p[i], gi = g[i];
    if (l2) {
        gi = hora_fma32(pi, wd, gi);
    } else {
        pi = hora_mul32(pi, wd);
    }
    float mi = hora_fma32(gi, omb1, hora_mul32(m[i], b1));
    m[i] = mi;
    float vi = hora_mul32(v[i], b2) + hora_mul32(hora_mul32(omb2, gi), gi);
    v[i] = vi;
    float d = sqrtf(vi) / bc2sqrt + eps;
    p[i] = pi + hora_mul32(negstep, mi) / d;
}

// adam_step_f32 updates one float32 parameter (adam_elem_f32).
extern "C" __global__ void adam_step_f32(float* p, const float* g, float* m, float* v, long long n, float b1,
                                         float omb1, float b2, float omb2, float bc2sqrt, float eps, float negstep,
                                         float wd, int l2)
{
    HORA_LOOP(i, n)
    {
        adam_elem_f32(p, g, m, v, i, b1, omb1, b2, omb2, bc2sqrt, eps, negstep, wd, l2);
    }
}

// The generic Adam variants (bits of flags).
#define ADAM_WD 1
#define ADAM_DECOUPLED 2

// adam_step_gen is the CPU's generic adamRange (float64, and float32 with
// AMSGrad): maxv (null without AMSGrad) keeps the largest v.
#define HORA_ADAM_GEN(SUF, T)                                                                           \
    extern "C" __global__ void adam_step_gen_##SUF(T* p, const T* g, T* m, T* v, T* maxv, long long n,   \
                                                   T step, T sqrtbc2, T b1, T b2, T eps, T c1, T c2,    \
                                                   T decay, T wd, int flags)                            \
    {                                                                                                   \
        HORA_LOOP(i, n)                                                                                 \
        {                                                                                               \
            T gi = g[i], pi = p[i];                                                                     \
            if (flags & ADAM_WD) {                                                                      \
                if (flags & ADAM_DECOUPLED) {                                                           \
                    pi *= decay;                                                                        \
                } else {                                                                                \
                    gi += wd * pi;                                                                      \
                }                                                                                       \
            }                                                                                           \
            T mi = b1 * m[i] + c1 * gi;                                                                 \
            T vi = b2 * v[i] + c2 * gi * gi;                                                            \
            m[i] = mi;                                                                                  \
            v[i] = vi;                                                                                  \
            if (maxv) {                                                                                 \
                T mv = maxv[i];                                                                         \
                vi = (vi > mv || isnan(vi)) ? vi : mv;                                                  \
                maxv[i] = vi;                                                                           \
            }                                                                                           \
            T denom = m_sqrt(vi) / sqrtbc2 + eps;                                                       \
            p[i] = pi - step * mi / denom;                                                              \
        }                                                                                               \
    }

HORA_ADAM_GEN(f32, float)
HORA_ADAM_GEN(f64, double)

// Multi-tensor updates: one launch updates up to HORA_MULTI parameters of
// a group (same hyper-parameters), block row blockIdx.y for tensor
// blockIdx.y, its blocks striding over that tensor's elements.
#define HORA_MULTI 32

// MultiTensor lists the tensors of one launch (Go: multiTensorArg): the
// element counts and the addresses of the parameters, gradients and two
// state buffers (momentum; or Adam's m and v), 0 where unused.
struct MultiTensor {
    long long n[HORA_MULTI];
    long long p[HORA_MULTI];
    long long g[HORA_MULTI];
    long long a[HORA_MULTI];
    long long b[HORA_MULTI];
    int count;
    int pad;
};

// sgd_multi_f32 is sgd_step_f32 over the tensors of t.
extern "C" __global__ void sgd_multi_f32(MultiTensor t, float wd, float mom, float omd, float neglr, int flags)
{
    int k = blockIdx.y;
    if (k >= t.count) return;
    float* p = (float*)t.p[k];
    const float* g = (const float*)t.g[k];
    float* buf = (float*)t.a[k];
    long long n = t.n[k];
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {
        sgd_elem_f32(p, g, buf, i, wd, mom, omd, neglr, flags);
    }
}

// adam_multi_f32 is adam_step_f32 over the tensors of t.
extern "C" __global__ void adam_multi_f32(MultiTensor t, float b1, float omb1, float b2, float omb2, float bc2sqrt,
                                          float eps, float negstep, float wd, int l2)
{
    int k = blockIdx.y;
    if (k >= t.count) return;
    float* p = (float*)t.p[k];
    const float* g = (const float*)t.g[k];
    float* m = (float*)t.a[k];
    float* v = (float*)t.b[k];
    long long n = t.n[k];
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {
        adam_elem_f32(p, g, m, v, i, b1, omb1, b2, omb2, bc2sqrt, eps, negstep, wd, l2);
    }
}
