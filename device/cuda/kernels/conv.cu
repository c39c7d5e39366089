// Convolution helpers (Kernels.Conv2D, Conv2DGradInput, Conv2DGradWeight):
// im2col / col2im for the cuBLAS path, and direct kernels for depthwise
// convolutions (one input channel per group), whose matrix products are
// too small for cuBLAS to pay.
//
// The column matrix of images [n0, n0+nb) is nb × (C·KH·KW) × (OH·OW):
// row c·KH·KW + kh·KW + kw of image i holds, for every output position,
// the input x[n0+i, c] under tap (kh, kw) (0 in the padding).

#define HORA_IM2COL(SUF, T)                                                                                     \
    extern "C" __global__ void im2col_##SUF(T* __restrict__ col, const T* __restrict__ x, ConvShape s,         \
                                            long long n0, long long nb)                                        \
    {                                                                                                           \
        long long ohw = (long long)s.oh * s.ow, kk = (long long)s.kh * s.kw, ckk = (long long)s.c * kk;        \
        long long total = nb * ckk * ohw;                                                                       \
        HORA_LOOP(e, total)                                                                                     \
        {                                                                                                       \
            long long p = e % ohw;                                                                              \
            long long r = (e / ohw) % ckk;                                                                      \
            long long img = e / (ohw * ckk);                                                                    \
            long long c = r / kk;                                                                               \
            int k = (int)(r - c * kk);                                                                          \
            int kh = k / s.kw, kw = k - kh * s.kw;                                                              \
            int oy = (int)(p / s.ow), ox = (int)(p - (long long)oy * s.ow);                                     \
            int h = oy * s.sh - s.ph + kh * s.dh, w = ox * s.sw - s.pw + kw * s.dw;                             \
            T v = 0;                                                                                            \
            if (h >= 0 && h < s.h && w >= 0 && w < s.w) {                                                       \
                v = x[(((n0 + img) * s.c + c) * s.h + h) * (long long)s.w + w];                                \
            }                                                                                                   \
            col[e] = v;                                                                                         \
        }                                                                                                       \
    }

HORA_IM2COL(f32, float)
HORA_IM2COL(f64, double)

// col2im sets dx of images [n0, n0+nb) to the sums of their column
// matrix's entries over the taps that read each input position: one
// thread per input element (no atomics).
#define HORA_COL2IM(SUF, T)                                                                                     \
    extern "C" __global__ void col2im_##SUF(T* __restrict__ dx, const T* __restrict__ col, ConvShape s,        \
                                            long long n0, long long nb)                                        \
    {                                                                                                           \
        long long ohw = (long long)s.oh * s.ow, kk = (long long)s.kh * s.kw, ckk = (long long)s.c * kk;        \
        long long hw = (long long)s.h * s.w;                                                                    \
        long long total = nb * s.c * hw;                                                                        \
        HORA_LOOP(e, total)                                                                                     \
        {                                                                                                       \
            long long pix = e % hw;                                                                             \
            long long c = (e / hw) % s.c;                                                                       \
            long long img = e / (hw * s.c);                                                                     \
            int h = (int)(pix / s.w), w = (int)(pix - (long long)h * s.w);                                      \
            const T* cp = col + (img * ckk + c * kk) * ohw;                                                     \
            T acc = 0;                                                                                          \
            for (int kh = 0; kh < s.kh; kh++) {                                                                 \
                int hh = h + s.ph - kh * s.dh;                                                                  \
                if (hh < 0 || hh % s.sh != 0 || hh / s.sh >= s.oh) {                                            \
                    continue;                                                                                   \
                }                                                                                               \
                int oy = hh / s.sh;                                                                             \
                for (int kw = 0; kw < s.kw; kw++) {                                                             \
                    int ww = w + s.pw - kw * s.dw;                                                              \
                    if (ww < 0 || ww % s.sw != 0 || ww / s.sw >= s.ow) {                                        \
                        continue;                                                                               \
                    }                                                                                           \
                    acc += cp[(kh * s.kw + kw) * ohw + (long long)oy * s.ow + ww / s.sw];                       \
                }                                                                                               \
            }                                                                                                   \
            dx[n0 * s.c * hw + e] = acc;                                                                        \
        }                                                                                                       \
    }

HORA_COL2IM(f32, float)
HORA_COL2IM(f64, double)

// conv_dw computes a depthwise convolution (C = groups: output channel oc
// reads input channel oc / (OC/groups) only) with its bias (or none) and
// activation: one thread per output element.
#define HORA_CONV_DW(SUF, T)                                                                                    \
    extern "C" __global__ void conv_dw_##SUF(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, \
                                             const T* __restrict__ bias, ConvShape s, int act)                 \
    {                                                                                                           \
        long long ohw = (long long)s.oh * s.ow, hw = (long long)s.h * s.w;                                      \
        int ocg = s.oc / s.groups;                                                                              \
        long long total = (long long)s.n * s.oc * ohw;                                                          \
        HORA_LOOP(e, total)                                                                                     \
        {                                                                                                       \
            long long p = e % ohw;                                                                              \
            long long nc = e / ohw;                                                                             \
            int oc = (int)(nc % s.oc);                                                                          \
            long long n = nc / s.oc;                                                                            \
            int oy = (int)(p / s.ow), ox = (int)(p - (long long)oy * s.ow);                                     \
            const T* xp = x + (n * s.c + oc / ocg) * hw;                                                        \
            const T* wp = w + (long long)oc * s.kh * s.kw;                                                      \
            T acc = 0;                                                                                          \
            for (int kh = 0; kh < s.kh; kh++) {                                                                 \
                int h = oy * s.sh - s.ph + kh * s.dh;                                                           \
                if (h < 0 || h >= s.h) {                                                                        \
                    continue;                                                                                   \
                }                                                                                               \
                for (int kw = 0; kw < s.kw; kw++) {                                                             \
                    int ww = ox * s.sw - s.pw + kw * s.dw;                                                      \
                    if (ww < 0 || ww >= s.w) {                                                                  \
                        continue;                                                                               \
                    }                                                                                           \
                    acc += xp[(long long)h * s.w + ww] * wp[kh * s.kw + kw];                                    \
                }                                                                                               \
            }                                                                                                   \
            if (bias) {                                                                                         \
                acc += bias[oc];                                                                                \
            }                                                                                                   \
            y[e] = hora_act(act, acc);                                                                          \
        }                                                                                                       \
    }

HORA_CONV_DW(f32, float)
HORA_CONV_DW(f64, double)

// conv_dw_grad_input is the input gradient of a depthwise convolution:
// one thread per input element, gathering over its channel's outputs.
#define HORA_CONV_DW_GRAD_INPUT(SUF, T)                                                                         \
    extern "C" __global__ void conv_dw_grad_input_##SUF(T* __restrict__ dx, const T* __restrict__ dy,          \
                                                        const T* __restrict__ w, ConvShape s)                  \
    {                                                                                                           \
        long long ohw = (long long)s.oh * s.ow, hw = (long long)s.h * s.w;                                      \
        int ocg = s.oc / s.groups;                                                                              \
        long long total = (long long)s.n * s.c * hw;                                                            \
        HORA_LOOP(e, total)                                                                                     \
        {                                                                                                       \
            long long pix = e % hw;                                                                             \
            long long nc = e / hw;                                                                              \
            int c = (int)(nc % s.c);                                                                            \
            long long n = nc / s.c;                                                                             \
            int h = (int)(pix / s.w), wx = (int)(pix - (long long)h * s.w);                                     \
            T acc = 0;                                                                                          \
            for (int j = 0; j < ocg; j++) {                                                                     \
                int oc = c * ocg + j;                                                                           \
                const T* gp = dy + (n * s.oc + oc) * ohw;                                                       \
                const T* wp = w + (long long)oc * s.kh * s.kw;                                                  \
                for (int kh = 0; kh < s.kh; kh++) {                                                             \
                    int hh = h + s.ph - kh * s.dh;                                                              \
                    if (hh < 0 || hh % s.sh != 0 || hh / s.sh >= s.oh) {                                        \
                        continue;                                                                               \
                    }                                                                                           \
                    int oy = hh / s.sh;                                                                         \
                    for (int kw = 0; kw < s.kw; kw++) {                                                         \
                        int ww = wx + s.pw - kw * s.dw;                                                         \
                        if (ww < 0 || ww % s.sw != 0 || ww / s.sw >= s.ow) {                                    \
                            continue;                                                                           \
                        }                                                                                       \
                        acc += gp[(long long)oy * s.ow + ww / s.sw] * wp[kh * s.kw + kw];                       \
                    }                                                                                           \
                }                                                                                               \
            }                                                                                                   \
            dx[e] = acc;                                                                                        \
        }                                                                                                       \
    }

HORA_CONV_DW_GRAD_INPUT(f32, float)
HORA_CONV_DW_GRAD_INPUT(f64, double)

// conv_dw_grad_weight is the weight gradient of a depthwise convolution:
// a block of HORA_BLOCK threads per weight element and slice y =
// blockIdx.y of the batch's output positions, summing (in double, along a
// tree) into dw[y·nw + weight]; the Go side adds the gridDim.y slices'
// sums when there are several.
#define HORA_CONV_DW_GRAD_WEIGHT(SUF, T)                                                                                    \
    extern "C" __global__ void conv_dw_grad_weight_##SUF(T* __restrict__ dw, const T* __restrict__ dy,                      \
                                                         const T* __restrict__ x, ConvShape s)                              \
    {                                                                                                                       \
        __shared__ double sh[HORA_BLOCK];                                                                                   \
        long long ohw = (long long)s.oh * s.ow, hw = (long long)s.h * s.w;                                                  \
        int ocg = s.oc / s.groups;                                                                                          \
        int kk = s.kh * s.kw;                                                                                               \
        long long nw = (long long)s.oc * kk;                                                                                \
        long long terms = (long long)s.n * ohw;                                                                             \
        long long slice = (terms + gridDim.y - 1) / gridDim.y;                                                              \
        bool small = ohw <= 0x7fffffff; /* p fits an int: 32-bit division */                                                \
        long long lo = blockIdx.y * slice, hi = lo + slice < terms ? lo + slice : terms;                                    \
        for (long long widx = blockIdx.x; widx < nw; widx += gridDim.x) {                                                   \
            int oc = (int)(widx / kk), k = (int)(widx % kk);                                                                \
            int kh = k / s.kw, kw = k - kh * s.kw;                                                                          \
            int c = oc / ocg;                                                                                               \
            double acc = 0;                                                                                                 \
            /* (n, p) follows t without a 64-bit division per term. */                                                      \
            long long t0 = lo + threadIdx.x, n = t0 / ohw, p = t0 - n * ohw;                                                \
            for (long long t = t0; t < hi; t += HORA_BLOCK) {                                                               \
                int oy = small ? (int)p / s.ow : (int)(p / s.ow), ox = (int)(p - (long long)oy * s.ow);                     \
                int h = oy * s.sh - s.ph + kh * s.dh, ww = ox * s.sw - s.pw + kw * s.dw;                                    \
                if (h >= 0 && h < s.h && ww >= 0 && ww < s.w) {                                                             \
                    acc += (double)dy[(n * s.oc + oc) * ohw + p] * (double)x[(n * s.c + c) * hw + (long long)h * s.w + ww]; \
                }                                                                                                           \
                p += HORA_BLOCK;                                                                                            \
                if (p >= ohw) {                                                                                             \
                    n += p / ohw;                                                                                           \
                    p %= ohw;                                                                                               \
                }                                                                                                           \
            }                                                                                                               \
            acc = hora_block_sum(sh, acc);                                                                                  \
            if (threadIdx.x == 0) {                                                                                         \
                dw[blockIdx.y * nw + widx] = (T)acc;                                                                        \
            }                                                                                                               \
        }                                                                                                                   \
    }

HORA_CONV_DW_GRAD_WEIGHT(f32, float)
HORA_CONV_DW_GRAD_WEIGHT(f64, double)
