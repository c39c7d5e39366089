// Hora CUDA emulator: a fake cuBLAS (libcublas.so.12) for the host CPU.
//
// Matrices are column major, alpha and beta host pointers (the default
// pointer mode). Products accumulate in double. With the TF32 math mode
// (or a FAST_TF32 compute type) float32 inputs are first rounded to
// TensorFloat-32 (10 mantissa bits), as tensor cores do, so that tests
// see the precision a GPU gives. Operands are checked to lie inside live
// allocations of the fake driver (libcuda.so.1, linked).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <mutex>
#include <set>
#include <vector>

#define API extern "C" __attribute__((visibility("default")))

extern "C" int horaEmuCheckRange(unsigned long long p, unsigned long long bytes);
extern "C" void horaEmuCountGemm(void);

enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
};

enum { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14 };

enum {
    CUBLAS_COMPUTE_32F = 68,
    CUBLAS_COMPUTE_32F_PEDANTIC = 69,
    CUBLAS_COMPUTE_32F_FAST_16F = 74,
    CUBLAS_COMPUTE_32F_FAST_16BF = 75,
    CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
};

namespace {

struct Handle {
    void* stream = nullptr;
    int mathMode = 0;
};

std::mutex g_mu;
std::set<Handle*> g_handles;

bool valid(Handle* h)
{
    std::lock_guard<std::mutex> l(g_mu);
    return g_handles.count(h) != 0;
}

float tf32(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) { // finite: round to nearest even at 13 dropped bits
        u = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
    }
    memcpy(&x, &u, 4);
    return x;
}

double bf16ToDouble(uint16_t v)
{
    uint32_t u = (uint32_t)v << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

// Element loaders: the element i of an operand as a double.
struct LoadF32 {
    bool tf;
    double operator()(const void* p, long long i) const
    {
        float v = ((const float*)p)[i];
        return tf ? tf32(v) : v;
    }
};
struct LoadF64 {
    double operator()(const void* p, long long i) const { return ((const double*)p)[i]; }
};
struct LoadBF16 {
    double operator()(const void* p, long long i) const { return bf16ToDouble(((const uint16_t*)p)[i]); }
};

// f16ToDouble widens IEEE binary16 bits (subnormals, infinities and NaNs included).
double f16ToDouble(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v;
    if (exp == 0) {
        v = ldexp((double)man, -24);
    } else if (exp == 31) {
        v = man ? NAN : INFINITY;
    } else {
        v = ldexp((double)(man | 0x400), exp - 25);
    }
    return sign ? -v : v;
}

struct LoadF16 {
    double operator()(const void* p, long long i) const { return f16ToDouble(((const uint16_t*)p)[i]); }
};

const char* opName(int op) { return op == 0 ? "N" : "T"; }

// span returns the bytes an ld × cols column-major operand with rows used
// rows spans.
unsigned long long span(int rows, int cols, int ld, int esize)
{
    if (rows == 0 || cols == 0) return 0;
    return ((unsigned long long)(cols - 1) * (unsigned long long)ld + (unsigned long long)rows) * (unsigned long long)esize;
}

bool inRange(const char* fn, const char* what, const void* base, long long stride, int batch, int rows, int cols, int ld, int esize)
{
    unsigned long long n = span(rows, cols, ld, esize);
    if (n == 0) return true;
    for (int b = 0; b < batch; b++) {
        unsigned long long p = (unsigned long long)(uintptr_t)base + (unsigned long long)((long long)b * stride * esize);
        if (!horaEmuCheckRange(p, n)) {
            fprintf(stderr,
                    "hora cuda emulator: %s: %s of batch %d (%d × %d, leading dimension %d, at 0x%llx, %llu bytes) is not "
                    "inside one live device allocation\n",
                    fn, what, b, rows, cols, ld, p, n);
            return false;
        }
    }
    return true;
}

// gemm computes C = alpha op(A) op(B) + beta C for each batch.
template <typename LA, typename LB, typename TC>
int gemm(const char* fn, Handle* h, int ta, int tb, int m, int n, int k, double alpha, const void* A, int lda, long long sa,
         int esA, LA loadA, const void* B, int ldb, long long sb, int esB, LB loadB, double beta, TC* C, int ldc, long long sc,
         int batch)
{
    if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((ta != 0 && ta != 1 && ta != 2) || (tb != 0 && tb != 1 && tb != 2) || m < 0 || n < 0 || k < 0 || batch < 0) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    ta = ta != 0, tb = tb != 0; // real matrices: conjugate transpose is transpose
    int rowsA = ta ? k : m, colsA = ta ? m : k;
    int rowsB = tb ? n : k, colsB = tb ? k : n;
    if (lda < (rowsA > 1 ? rowsA : 1) || ldb < (rowsB > 1 ? rowsB : 1) || ldc < (m > 1 ? m : 1)) {
        fprintf(stderr, "hora cuda emulator: %s: bad leading dimension (op %s%s, m %d n %d k %d, lda %d ldb %d ldc %d)\n", fn,
                opName(ta), opName(tb), m, n, k, lda, ldb, ldc);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    bool readAB = k > 0 && alpha != 0;
    if ((readAB && (!inRange(fn, "A", A, sa, batch, rowsA, colsA, lda, esA) || !inRange(fn, "B", B, sb, batch, rowsB, colsB, ldb, esB))) ||
        !inRange(fn, "C", C, sc, batch, m, n, ldc, (int)sizeof(TC))) {
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    horaEmuCountGemm();
    std::vector<double> pa, pb;
    if (readAB) {
        pa.resize((size_t)m * k);
        pb.resize((size_t)n * k);
    }
    for (int b = 0; b < batch; b++) {
        TC* c = C + (long long)b * sc;
        if (readAB) {
            const char* a = (const char*)A + (long long)b * sa * esA;
            const char* bb = (const char*)B + (long long)b * sb * esB;
            // pa row i = row i of op(A); pb row j = column j of op(B)
            for (int i = 0; i < m; i++) {
                for (int p = 0; p < k; p++) {
                    pa[(size_t)i * k + p] = loadA(a, ta ? (long long)i * lda + p : (long long)p * lda + i);
                }
            }
            for (int j = 0; j < n; j++) {
                for (int p = 0; p < k; p++) {
                    pb[(size_t)j * k + p] = loadB(bb, tb ? (long long)p * ldb + j : (long long)j * ldb + p);
                }
            }
        }
        for (int j = 0; j < n; j++) {
            for (int i = 0; i < m; i++) {
                double acc = 0;
                if (readAB) {
                    const double* x = &pa[(size_t)i * k];
                    const double* y = &pb[(size_t)j * k];
                    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                    int p = 0;
                    for (; p + 4 <= k; p += 4) {
                        s0 += x[p] * y[p];
                        s1 += x[p + 1] * y[p + 1];
                        s2 += x[p + 2] * y[p + 2];
                        s3 += x[p + 3] * y[p + 3];
                    }
                    for (; p < k; p++) s0 += x[p] * y[p];
                    acc = alpha * ((s0 + s1) + (s2 + s3));
                }
                TC* out = &c[(long long)j * ldc + i];
                if (beta != 0) acc += beta * (double)*out; // beta == 0: C is not read (it may hold NaN)
                *out = (TC)acc;
            }
        }
    }
    return CUBLAS_STATUS_SUCCESS;
}

bool useTF32(Handle* h) { return (h->mathMode & 0xf) == 3; }

} // namespace

API int cublasCreate_v2(void** handle)
{
    if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    Handle* h = new Handle();
    std::lock_guard<std::mutex> l(g_mu);
    g_handles.insert(h);
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasDestroy_v2(void* handle)
{
    Handle* h = (Handle*)handle;
    std::lock_guard<std::mutex> l(g_mu);
    if (g_handles.erase(h) == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasSetStream_v2(void* handle, void* stream)
{
    Handle* h = (Handle*)handle;
    if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasSetMathMode(void* handle, int mode)
{
    Handle* h = (Handle*)handle;
    if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    int base = mode & ~16; // CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION may be or'ed in
    if (base < 0 || base > 3) return CUBLAS_STATUS_INVALID_VALUE;
    h->mathMode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasGetMathMode(void* handle, int* mode)
{
    Handle* h = (Handle*)handle;
    if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = h->mathMode;
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasSgemmStridedBatched(void* handle, int ta, int tb, int m, int n, int k, const float* alpha, const float* A, int lda,
                                  long long sa, const float* B, int ldb, long long sb, const float* beta, float* C, int ldc,
                                  long long sc, int batch)
{
    Handle* h = (Handle*)handle;
    if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    LoadF32 ld{useTF32(h)};
    return gemm("cublasSgemmStridedBatched", h, ta, tb, m, n, k, *alpha, A, lda, sa, 4, ld, B, ldb, sb, 4, ld, *beta, C, ldc, sc,
                batch);
}

API int cublasDgemmStridedBatched(void* handle, int ta, int tb, int m, int n, int k, const double* alpha, const double* A,
                                  int lda, long long sa, const double* B, int ldb, long long sb, const double* beta, double* C,
                                  int ldc, long long sc, int batch)
{
    Handle* h = (Handle*)handle;
    if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    return gemm("cublasDgemmStridedBatched", h, ta, tb, m, n, k, *alpha, A, lda, sa, 8, LoadF64{}, B, ldb, sb, 8, LoadF64{},
                *beta, C, ldc, sc, batch);
}

API int cublasGemmStridedBatchedEx(void* handle, int ta, int tb, int m, int n, int k, const void* alpha, const void* A, int at,
                                   int lda, long long sa, const void* B, int bt, int ldb, long long sb, const void* beta, void* C,
                                   int ct, int ldc, long long sc, int batch, int compute, int algo)
{
    static const char* fn = "cublasGemmStridedBatchedEx";
    Handle* h = (Handle*)handle;
    if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    if (!(algo == -1 || (algo >= 0 && algo <= 23) || (algo >= 99 && algo <= 115))) return CUBLAS_STATUS_INVALID_VALUE;
    if (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_PEDANTIC && compute != CUBLAS_COMPUTE_32F_FAST_16F &&
        compute != CUBLAS_COMPUTE_32F_FAST_16BF && compute != CUBLAS_COMPUTE_32F_FAST_TF32) {
        fprintf(stderr, "hora cuda emulator: %s: compute type %d is not emulated\n", fn, compute);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (at != bt || (at != CUDA_R_32F && at != CUDA_R_16BF && at != CUDA_R_16F) || ct != CUDA_R_32F) {
        fprintf(stderr, "hora cuda emulator: %s: types A %d, B %d, C %d are not emulated (32F, 16F or 16BF inputs, 32F output)\n", fn,
                at, bt, ct);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    double a = *(const float*)alpha, b = *(const float*)beta;
    if (at == CUDA_R_16F) {
        return gemm(fn, h, ta, tb, m, n, k, a, A, lda, sa, 2, LoadF16{}, B, ldb, sb, 2, LoadF16{}, b, (float*)C, ldc, sc, batch);
    }
    if (at == CUDA_R_16BF) {
        return gemm(fn, h, ta, tb, m, n, k, a, A, lda, sa, 2, LoadBF16{}, B, ldb, sb, 2, LoadBF16{}, b, (float*)C, ldc, sc, batch);
    }
    bool tf = compute != CUBLAS_COMPUTE_32F_PEDANTIC && (compute == CUBLAS_COMPUTE_32F_FAST_TF32 || useTF32(h));
    LoadF32 ld{tf};
    return gemm(fn, h, ta, tb, m, n, k, a, A, lda, sa, 4, ld, B, ldb, sb, 4, ld, b, (float*)C, ldc, sc, batch);
}
