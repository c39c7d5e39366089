// Hora CUDA emulator: a fake CUDA driver (libcuda.so.1) for the host CPU.
//
// Device memory is host memory (a device pointer is a host address), all
// work runs synchronously when it is queued, and a kernel launch runs
// the kernel's blocks one after another on the calling thread, each
// block's threads as cooperative fibers that switch only at
// __syncthreads(). Kernel modules are shared libraries built by the fake
// NVRTC (nvrtc.cpp) from the CUDA C with prelude.h. See doc.go.
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#if !defined(__x86_64__) || defined(HORA_EMU_UCONTEXT)
#define HORA_FIBER_UCONTEXT 1
#include <ucontext.h>
#endif

#define API extern "C" __attribute__((visibility("default")))

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_NOT_SUPPORTED = 801,
};

// The image header the fake NVRTC puts before the module's .so bytes.
static const char kImageMagic[8] = {'H', 'O', 'R', 'A', 'E', 'M', 'U', 1};

static const int kDevices = 2;
static const unsigned long long kDefaultTotalMem = 16ull << 30;

#ifndef HORA_FIBER_UCONTEXT
// hora_emu_switch saves the callee-saved registers and the stack pointer
// in *from and continues at the stack pointer to (System V x86-64).
extern "C" void hora_emu_switch(void** from, void* to);
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl hora_emu_switch\n"
    ".hidden hora_emu_switch\n"
    ".type hora_emu_switch,@function\n"
    "hora_emu_switch:\n"
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    ".size hora_emu_switch, .-hora_emu_switch\n");

#endif

namespace {

// ---- errors ----

struct ErrorInfo {
    int code;
    const char* name;
    const char* text;
};

const ErrorInfo kErrors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER", "CUDA driver version is insufficient for CUDA runtime version"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorInfo* findError(int code)
{
    for (const ErrorInfo& e : kErrors) {
        if (e.code == code) return &e;
    }
    return nullptr;
}

// ---- global state ----

std::atomic<bool> g_inited{false};

struct Context {
    int dev;
    int refs;
};
Context g_ctx[kDevices] = {{0, 0}, {1, 0}};
thread_local Context* t_ctx = nullptr;

struct Stream {
    unsigned flags;
};

struct Module;
struct Function;

// The state a kernel module shares with the emulator (prelude.h).
struct Uint3 {
    unsigned int x, y, z;
};
struct ModuleState {
    Uint3 threadIdx, blockIdx, blockDim, gridDim;
    void (*sync)(void);
};

struct Function {
    Module* mod;
    std::string name;
    void (*launch)(void**);
    std::vector<int> argSizes; // sizeof each parameter
};

struct Module {
    void* dl;
    ModuleState* st;
    char* sharedBegin; // the section of the __shared__ arrays
    char* sharedEnd;
    std::map<std::string, Function*> funcs;
};

std::mutex g_mu;                           // guards everything below
std::map<uintptr_t, size_t> g_dev;         // live device allocations: start → bytes (see guards)
std::map<uintptr_t, size_t> g_host;        // live pinned host allocations
unsigned long long g_live_bytes = 0;
long long g_alloc_calls = 0;
long long g_mem_limit_override = -1;       // horaEmuSetMemLimit
std::set<Stream*> g_streams;
std::set<Module*> g_modules;
std::set<Function*> g_funcs;
std::atomic<long long> g_launches{0};
std::atomic<long long> g_gemms{0};

void warn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void warn(const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("hora cuda emulator: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

// check returns the error every call that needs the driver initialised
// and a current context returns otherwise.
CUresult check()
{
    if (!g_inited.load()) return CUDA_ERROR_NOT_INITIALIZED;
    if (t_ctx == nullptr || t_ctx->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
    return CUDA_SUCCESS;
}

// memLimit returns the emulated device's memory size (g_mu held).
unsigned long long memLimit()
{
    if (g_mem_limit_override >= 0) return (unsigned long long)g_mem_limit_override;
    const char* s = getenv("HORA_EMU_MEM_LIMIT");
    if (s != nullptr && *s != 0) {
        char* end = nullptr;
        unsigned long long v = strtoull(s, &end, 10);
        if (end != s) return v;
    }
    return kDefaultTotalMem;
}

// inDevice reports whether [p, p+n) lies in one live device allocation (g_mu held).
bool inDevice(uintptr_t p, size_t n)
{
    auto it = g_dev.upper_bound(p);
    if (it == g_dev.begin()) return false;
    --it;
    return p >= it->first && p - it->first <= it->second && n <= it->second - (p - it->first);
}

// Guards: each device allocation of n bytes lies between kGuard bytes
// before it and its rounding to 256 bytes plus kGuard bytes after it,
// filled with kGuardByte. A launch checks the guards of the allocations
// its pointer arguments point into, so a kernel writing past the end (or
// before the start) of a buffer fails with CUDA_ERROR_ILLEGAL_ADDRESS.
const size_t kGuard = 256;
const unsigned char kGuardByte = 0xfb;

size_t roundUp256(size_t n) { return (n + 255) & ~(size_t)255; }

// guardDamage describes the bytes of p's guards (n bytes allocated) that
// were written, or returns "" when they are intact.
std::string guardDamage(uintptr_t p, size_t n)
{
    static unsigned char pattern[kGuard + 256];
    static bool init = (memset(pattern, kGuardByte, sizeof pattern), true);
    (void)init;
    const unsigned char* front = (const unsigned char*)(p - kGuard);
    const unsigned char* tail = (const unsigned char*)(p + n);
    size_t tailBytes = roundUp256(n) - n + kGuard;
    std::string out;
    char buf[160];
    if (memcmp(front, pattern, kGuard) != 0) {
        size_t first = 0;
        while (front[first] == kGuardByte) first++;
        snprintf(buf, sizeof buf, "bytes up to %zu before its start were written", kGuard - first);
        out += buf;
    }
    if (memcmp(tail, pattern, tailBytes) != 0) {
        size_t last = tailBytes;
        while (tail[last - 1] == kGuardByte) last--;
        size_t first = 0;
        while (tail[first] == kGuardByte) first++;
        snprintf(buf, sizeof buf, "%sbytes %zu to %zu past its end were written", out.empty() ? "" : "; ", first, last - 1);
        out += buf;
    }
    return out;
}

void resetGuards(uintptr_t p, size_t n)
{
    memset((void*)(p - kGuard), kGuardByte, kGuard);
    memset((void*)(p + n), kGuardByte, roundUp256(n) - n + kGuard);
}

bool checkDeviceRange(const char* fn, const char* what, CUdeviceptr p, size_t n)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (inDevice((uintptr_t)p, n)) return true;
    warn("%s: %s range [0x%llx, +%zu bytes) is not inside one live device allocation", fn, what, p, n);
    return false;
}

bool validStream(void* s)
{
    uintptr_t v = (uintptr_t)s;
    if (v == 0 || v == 1 || v == 2) return true; // the NULL, legacy and per-thread default streams
    std::lock_guard<std::mutex> l(g_mu);
    return g_streams.count((Stream*)s) != 0;
}

// ---- fibers ----

const size_t kStackBytes = 64 << 10;

struct Fiber {
#ifdef HORA_FIBER_UCONTEXT
    ucontext_t uc;
#else
    void* sp;
#endif
    char* mem;       // the mapping: a guard page, then the stack
    size_t memBytes;
    Uint3 tid;
};

// The running launch. Launches are serialised by g_launch_mu, so one
// scheduler suffices; it runs on the launching thread.
struct Scheduler {
#ifdef HORA_FIBER_UCONTEXT
    ucontext_t uc;
#else
    void* sp;
#endif
    Fiber* cur;
    ModuleState* st;
    void (*fn)(void**);
    void** args;
    unsigned bx, by, bz;     // block dims
    unsigned nthreads;       // bx*by*bz
    unsigned next;           // next thread of the block not yet started
    unsigned finished;       // threads of the block that returned
    std::vector<Fiber*> waiting; // threads at the barrier, in arrival order
    std::vector<Fiber*> idle;    // fibers ready to start threads
    std::vector<Fiber*> all;
};

std::mutex g_launch_mu;
Scheduler g_s;

[[noreturn]] void fiberMain();

#ifdef HORA_FIBER_UCONTEXT

void fiberInit(Fiber* f)
{
    getcontext(&f->uc);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    f->uc.uc_stack.ss_sp = f->mem + page;
    f->uc.uc_stack.ss_size = f->memBytes - page;
    f->uc.uc_link = nullptr;
    makecontext(&f->uc, (void (*)())fiberMain, 0);
}

inline void resume(Fiber* f)
{
    g_s.cur = f;
    swapcontext(&g_s.uc, &f->uc);
}

inline void yieldToScheduler(Fiber* self) { swapcontext(&self->uc, &g_s.uc); }

#else

[[noreturn]] void fiberEntry() { fiberMain(); }

void fiberInit(Fiber* f)
{
    uintptr_t top = ((uintptr_t)f->mem + f->memBytes) & ~(uintptr_t)15;
    void** sp = (void**)top;
    *--sp = nullptr;                             // the entry function's return address slot
    *--sp = (void*)&fiberEntry;                  // where hora_emu_switch returns to
    for (int i = 0; i < 6; i++) *--sp = nullptr; // rbp rbx r12 r13 r14 r15
    f->sp = sp;
}

inline void resume(Fiber* f)
{
    g_s.cur = f;
    hora_emu_switch(&g_s.sp, f->sp);
}

inline void yieldToScheduler(Fiber* self) { hora_emu_switch(&self->sp, g_s.sp); }

#endif

Fiber* newFiber()
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t bytes = kStackBytes + page;
    void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    mprotect(m, page, PROT_NONE); // a stack overflow faults instead of corrupting memory
    Fiber* f = new Fiber();
    f->mem = (char*)m;
    f->memBytes = bytes;
    fiberInit(f);
    g_s.all.push_back(f);
    return f;
}

// setThread makes thread t of the block the running one.
inline void setThread(Fiber* self, unsigned t)
{
    Uint3 tid;
    if (g_s.by == 1 && g_s.bz == 1) {
        tid.x = t, tid.y = 0, tid.z = 0;
    } else {
        tid.x = t % g_s.bx;
        tid.y = (t / g_s.bx) % g_s.by;
        tid.z = t / (g_s.bx * g_s.by);
    }
    self->tid = tid;
    g_s.st->threadIdx = tid;
}

// fiberMain runs the block's threads that have not started, one after
// another on this fiber, until they are all started; a thread that
// reaches __syncthreads suspends the fiber, and the scheduler starts the
// remaining threads on another. Then the fiber idles until the scheduler
// resumes it for the next block.
void fiberMain()
{
    Fiber* self = g_s.cur;
    for (;;) {
        while (g_s.next < g_s.nthreads) {
            setThread(self, g_s.next++);
            g_s.fn(g_s.args);
            g_s.finished++;
        }
        g_s.idle.push_back(self);
        yieldToScheduler(self);
    }
}

// syncthreads is __syncthreads: the calling thread waits until the
// scheduler releases the barrier.
void syncthreads()
{
    Fiber* self = g_s.cur;
    g_s.waiting.push_back(self);
    yieldToScheduler(self);
}

// ---- crash reports ----

// While a launch runs, a crash (a wild pointer, an integer division by
// zero, a fiber's stack overflow) on the launching thread first prints
// which kernel, block and thread crashed, then goes to the handler that
// was there before (the Go runtime's, which prints the goroutines).
const int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
struct sigaction g_prevAction[65];
std::atomic<bool> g_inLaunch{false};
pthread_t g_launchThread;
const char* g_launchKernel = "";
size_t g_pageSize = 4096;

void crashHandler(int sig, siginfo_t* info, void* uctx)
{
    if (g_inLaunch.load() && pthread_equal(pthread_self(), g_launchThread)) {
        const ModuleState* st = g_s.st;
        const char* what = sig == SIGSEGV ? "a segmentation fault (a wild pointer?)"
                         : sig == SIGBUS  ? "a bus error"
                         : sig == SIGFPE  ? "an arithmetic exception (an integer division by zero? a GPU would not trap)"
                                          : "an illegal instruction";
        uintptr_t addr = (uintptr_t)info->si_addr;
        if (sig == SIGSEGV) {
            for (Fiber* f : g_s.all) {
                if (addr >= (uintptr_t)f->mem && addr < (uintptr_t)f->mem + g_pageSize) {
                    what = "a stack overflow (more than 64 KiB of local variables?)";
                }
            }
        }
        char buf[512];
        int n = snprintf(buf, sizeof buf,
                         "hora cuda emulator: kernel %s crashed with %s at address %p, in block (%u, %u, %u) of grid "
                         "(%u, %u, %u), thread (%u, %u, %u) of block (%u, %u, %u)\n",
                         g_launchKernel, what, info->si_addr, st->blockIdx.x, st->blockIdx.y, st->blockIdx.z, st->gridDim.x,
                         st->gridDim.y, st->gridDim.z, st->threadIdx.x, st->threadIdx.y, st->threadIdx.z, st->blockDim.x,
                         st->blockDim.y, st->blockDim.z);
        if (n > 0) {
            ssize_t w = write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
            (void)w;
        }
        g_inLaunch.store(false);
    }
    struct sigaction* prev = &g_prevAction[sig];
    if ((prev->sa_flags & SA_SIGINFO) && prev->sa_sigaction != nullptr) {
        prev->sa_sigaction(sig, info, uctx);
    } else if (prev->sa_handler == SIG_DFL || prev->sa_handler == SIG_IGN) {
        signal(sig, SIG_DFL); // the faulting instruction runs again and kills the process
    } else {
        prev->sa_handler(sig);
    }
}

void installCrashHandler()
{
    static bool done = false; // g_launch_mu held
    if (done) return;
    done = true;
    g_pageSize = (size_t)sysconf(_SC_PAGESIZE);
    for (int sig : kCrashSignals) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = crashHandler;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
        sigfillset(&sa.sa_mask);
        sigaction(sig, &sa, &g_prevAction[sig]);
    }
}

// runBlock runs every thread of the current block; it returns false when
// some threads wait at a barrier that others, having returned, never reach.
bool runBlock()
{
    g_s.next = 0;
    g_s.finished = 0;
    g_s.waiting.clear();
    for (;;) {
        while (g_s.next < g_s.nthreads) {
            Fiber* f;
            if (!g_s.idle.empty()) {
                f = g_s.idle.back();
                g_s.idle.pop_back();
            } else if ((f = newFiber()) == nullptr) {
                warn("cannot map a fiber stack: %s", strerror(errno));
                return false;
            }
            resume(f);
        }
        if (g_s.waiting.empty()) return true;
        if (g_s.finished > 0) return false;
        std::vector<Fiber*> ws;
        ws.swap(g_s.waiting);
        for (Fiber* f : ws) {
            g_s.st->threadIdx = f->tid;
            resume(f);
        }
    }
}

} // namespace

// ---- initialisation and devices ----

API CUresult cuInit(unsigned int flags)
{
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    g_inited.store(true);
    return CUDA_SUCCESS;
}

API CUresult cuDriverGetVersion(int* v)
{
    if (v == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *v = 13000;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetCount(int* n)
{
    if (!g_inited.load()) return CUDA_ERROR_NOT_INITIALIZED;
    if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *n = kDevices;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGet(int* dev, int ordinal)
{
    if (!g_inited.load()) return CUDA_ERROR_NOT_INITIALIZED;
    if (dev == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetName(char* name, int len, int dev)
{
    if (!g_inited.load()) return CUDA_ERROR_NOT_INITIALIZED;
    if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "%s", "Hora CUDA emulator");
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetAttribute(int* v, int attr, int dev)
{
    if (!g_inited.load()) return CUDA_ERROR_NOT_INITIALIZED;
    if (v == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
    switch (attr) {
    case 1: *v = 1024; break;         // MAX_THREADS_PER_BLOCK
    case 2: *v = 1024; break;         // MAX_BLOCK_DIM_X
    case 3: *v = 1024; break;         // MAX_BLOCK_DIM_Y
    case 4: *v = 64; break;           // MAX_BLOCK_DIM_Z
    case 5: *v = 2147483647; break;   // MAX_GRID_DIM_X
    case 6: *v = 65535; break;        // MAX_GRID_DIM_Y
    case 7: *v = 65535; break;        // MAX_GRID_DIM_Z
    case 8: *v = 49152; break;        // MAX_SHARED_MEMORY_PER_BLOCK
    case 10: *v = 32; break;          // WARP_SIZE
    case 16: *v = 4; break;           // MULTIPROCESSOR_COUNT
    case 75: *v = 9; break;           // COMPUTE_CAPABILITY_MAJOR
    case 76: *v = 0; break;           // COMPUTE_CAPABILITY_MINOR
    default: *v = 0; break;
    }
    return CUDA_SUCCESS;
}

API CUresult cuDeviceTotalMem_v2(size_t* bytes, int dev)
{
    if (!g_inited.load()) return CUDA_ERROR_NOT_INITIALIZED;
    if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
    std::lock_guard<std::mutex> l(g_mu);
    *bytes = (size_t)memLimit();
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxRetain(void** ctx, int dev)
{
    if (!g_inited.load()) return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
    std::lock_guard<std::mutex> l(g_mu);
    g_ctx[dev].refs++;
    *ctx = &g_ctx[dev];
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxRelease_v2(int dev)
{
    if (!g_inited.load()) return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
    std::lock_guard<std::mutex> l(g_mu);
    if (g_ctx[dev].refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
    g_ctx[dev].refs--;
    return CUDA_SUCCESS;
}

API CUresult cuCtxSetCurrent(void* ctx)
{
    if (!g_inited.load()) return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx == nullptr) {
        t_ctx = nullptr;
        return CUDA_SUCCESS;
    }
    for (int i = 0; i < kDevices; i++) {
        if (ctx == &g_ctx[i]) {
            std::lock_guard<std::mutex> l(g_mu);
            if (g_ctx[i].refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
            t_ctx = &g_ctx[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_CONTEXT;
}

// ---- streams ----

API CUresult cuStreamCreate(void** s, unsigned int flags)
{
    if (CUresult r = check()) return r;
    if (s == nullptr || flags > 1) return CUDA_ERROR_INVALID_VALUE;
    Stream* st = new Stream{flags};
    std::lock_guard<std::mutex> l(g_mu);
    g_streams.insert(st);
    *s = st;
    return CUDA_SUCCESS;
}

API CUresult cuStreamDestroy_v2(void* s)
{
    if (CUresult r = check()) return r;
    std::lock_guard<std::mutex> l(g_mu);
    if (g_streams.erase((Stream*)s) == 0) return CUDA_ERROR_INVALID_HANDLE;
    delete (Stream*)s;
    return CUDA_SUCCESS;
}

API CUresult cuStreamSynchronize(void* s)
{
    if (CUresult r = check()) return r;
    return validStream(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

// ---- memory ----

API CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes)
{
    if (CUresult r = check()) return r;
    if (p == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> l(g_mu);
    g_alloc_calls++;
    unsigned long long limit = memLimit();
    if (bytes > limit || g_live_bytes > limit - bytes) return CUDA_ERROR_OUT_OF_MEMORY;
    char* m = (char*)aligned_alloc(256, kGuard + roundUp256(bytes) + kGuard);
    if (m == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t u = (uintptr_t)(m + kGuard);
    memset((void*)u, 0xff, bytes); // garbage (NaN as floats): the GPU does not zero new memory either
    resetGuards(u, bytes);
    g_dev[u] = bytes;
    g_live_bytes += bytes;
    *p = (CUdeviceptr)u;
    return CUDA_SUCCESS;
}

API CUresult cuMemFree_v2(CUdeviceptr p)
{
    if (CUresult r = check()) return r;
    std::lock_guard<std::mutex> l(g_mu);
    auto it = g_dev.find((uintptr_t)p);
    if (it == g_dev.end()) {
        warn("cuMemFree_v2(0x%llx): not a live allocation", p);
        return CUDA_ERROR_INVALID_VALUE;
    }
    std::string damage = guardDamage(it->first, it->second);
    if (!damage.empty()) warn("cuMemFree_v2(0x%llx): allocation of %zu bytes: %s", p, it->second, damage.c_str());
    g_live_bytes -= it->second;
    g_dev.erase(it);
    free((void*)((uintptr_t)p - kGuard));
    return CUDA_SUCCESS;
}

API CUresult cuMemAllocHost_v2(void** p, size_t bytes)
{
    if (CUresult r = check()) return r;
    if (p == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    void* m = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
    if (m == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
    std::lock_guard<std::mutex> l(g_mu);
    g_host[(uintptr_t)m] = bytes;
    *p = m;
    return CUDA_SUCCESS;
}

API CUresult cuMemFreeHost(void* p)
{
    if (CUresult r = check()) return r;
    std::lock_guard<std::mutex> l(g_mu);
    if (g_host.erase((uintptr_t)p) == 0) {
        warn("cuMemFreeHost(%p): not a live pinned allocation", p);
        return CUDA_ERROR_INVALID_VALUE;
    }
    free(p);
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, void* s)
{
    if (CUresult r = check()) return r;
    if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
    if (bytes == 0) return CUDA_SUCCESS;
    if (src == nullptr || !checkDeviceRange("cuMemcpyHtoDAsync_v2", "destination", dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
    memcpy((void*)(uintptr_t)dst, src, bytes);
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, void* s)
{
    if (CUresult r = check()) return r;
    if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
    if (bytes == 0) return CUDA_SUCCESS;
    if (dst == nullptr || !checkDeviceRange("cuMemcpyDtoHAsync_v2", "source", src, bytes)) return CUDA_ERROR_INVALID_VALUE;
    memcpy(dst, (const void*)(uintptr_t)src, bytes);
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void* s)
{
    if (CUresult r = check()) return r;
    if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
    if (bytes == 0) return CUDA_SUCCESS;
    if (!checkDeviceRange("cuMemcpyDtoDAsync_v2", "destination", dst, bytes) ||
        !checkDeviceRange("cuMemcpyDtoDAsync_v2", "source", src, bytes))
        return CUDA_ERROR_INVALID_VALUE;
    memmove((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, bytes);
    return CUDA_SUCCESS;
}

API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t bytes, void* s)
{
    if (CUresult r = check()) return r;
    if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
    if (bytes == 0) return CUDA_SUCCESS;
    if (!checkDeviceRange("cuMemsetD8Async", "destination", dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
    memset((void*)(uintptr_t)dst, v, bytes);
    return CUDA_SUCCESS;
}

API CUresult cuMemGetInfo_v2(size_t* freeBytes, size_t* total)
{
    if (CUresult r = check()) return r;
    if (freeBytes == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> l(g_mu);
    unsigned long long limit = memLimit();
    *total = (size_t)limit;
    *freeBytes = g_live_bytes >= limit ? 0 : (size_t)(limit - g_live_bytes);
    return CUDA_SUCCESS;
}

// ---- modules ----

API CUresult cuModuleLoadData(void** mod, const void* image)
{
    if (CUresult r = check()) return r;
    if (mod == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (memcmp(image, kImageMagic, sizeof kImageMagic) != 0) {
        warn("cuModuleLoadData: the image is not the fake NVRTC's");
        return CUDA_ERROR_INVALID_IMAGE;
    }
    uint64_t n;
    memcpy(&n, (const char*)image + 8, 8);
    if (n == 0 || n > (1ull << 32)) return CUDA_ERROR_INVALID_IMAGE;
    const char* tmp = getenv("TMPDIR");
    std::string path = std::string(tmp != nullptr && *tmp != 0 ? tmp : "/tmp") + "/hora-emu-module-XXXXXX.so";
    std::vector<char> pathBuf(path.begin(), path.end());
    pathBuf.push_back(0);
    int fd = mkstemps(pathBuf.data(), 3);
    if (fd < 0) {
        warn("cuModuleLoadData: cannot create %s: %s", path.c_str(), strerror(errno));
        return CUDA_ERROR_INVALID_IMAGE;
    }
    const char* data = (const char*)image + 16;
    for (uint64_t off = 0; off < n;) {
        ssize_t w = write(fd, data + off, (size_t)(n - off));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            warn("cuModuleLoadData: writing %s: %s", pathBuf.data(), strerror(errno));
            close(fd);
            unlink(pathBuf.data());
            return CUDA_ERROR_INVALID_IMAGE;
        }
        off += (uint64_t)w;
    }
    close(fd);
    void* dl = dlopen(pathBuf.data(), RTLD_NOW | RTLD_LOCAL);
    unlink(pathBuf.data()); // a unique file per load: each load has its own state
    if (dl == nullptr) {
        warn("cuModuleLoadData: %s", dlerror());
        return CUDA_ERROR_INVALID_IMAGE;
    }
    ModuleState* (*state)(void) = (ModuleState * (*)(void)) dlsym(dl, "__hora_module_state");
    if (state == nullptr) {
        dlclose(dl);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    void (*shared)(char**, char**) = (void (*)(char**, char**))dlsym(dl, "__hora_module_shared");
    Module* m = new Module();
    m->dl = dl;
    m->st = state();
    m->st->sync = syncthreads;
    m->sharedBegin = m->sharedEnd = nullptr;
    if (shared != nullptr) shared(&m->sharedBegin, &m->sharedEnd);
    std::lock_guard<std::mutex> l(g_mu);
    g_modules.insert(m);
    *mod = m;
    return CUDA_SUCCESS;
}

API CUresult cuModuleGetFunction(void** f, void* mod, const char* name)
{
    if (CUresult r = check()) return r;
    if (f == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> l(g_mu);
    Module* m = (Module*)mod;
    if (g_modules.count(m) == 0) return CUDA_ERROR_INVALID_HANDLE;
    auto it = m->funcs.find(name);
    if (it != m->funcs.end()) {
        *f = it->second;
        return CUDA_SUCCESS;
    }
    void (*launch)(void**) = (void (*)(void**))dlsym(m->dl, (std::string("__hora_launch_") + name).c_str());
    int (*sizes)(int*) = (int (*)(int*))dlsym(m->dl, (std::string("__hora_argsizes_") + name).c_str());
    if (launch == nullptr || sizes == nullptr) return CUDA_ERROR_NOT_FOUND;
    Function* fn = new Function{m, name, launch, std::vector<int>((size_t)sizes(nullptr))};
    sizes(fn->argSizes.data());
    m->funcs[name] = fn;
    g_funcs.insert(fn);
    *f = fn;
    return CUDA_SUCCESS;
}

API CUresult cuModuleUnload(void* mod)
{
    if (CUresult r = check()) return r;
    Module* m = (Module*)mod;
    {
        std::lock_guard<std::mutex> l(g_mu);
        if (g_modules.erase(m) == 0) return CUDA_ERROR_INVALID_HANDLE;
        for (auto& kv : m->funcs) {
            g_funcs.erase(kv.second);
            delete kv.second;
        }
    }
    std::lock_guard<std::mutex> ll(g_launch_mu); // not while one of its kernels runs
    dlclose(m->dl);
    delete m;
    return CUDA_SUCCESS;
}

// ---- launches ----

namespace {
struct Function;
CUresult run(Function* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, void** params);
} // namespace

API CUresult cuLaunchKernel(void* f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
                            unsigned int bz, unsigned int sharedBytes, void* s, void** params, void** extra)
{
    if (CUresult r = check()) return r;
    Function* fn = (Function*)f;
    {
        std::lock_guard<std::mutex> l(g_mu);
        if (g_funcs.count(fn) == 0) return CUDA_ERROR_INVALID_HANDLE;
    }
    if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || bx > 1024 || by > 1024 || bz > 64 ||
        (unsigned long long)bx * by * bz > 1024 || gx > 2147483647u || gy > 65535 || gz > 65535) {
        warn("cuLaunchKernel %s: invalid grid (%u, %u, %u) or block (%u, %u, %u)", fn->name.c_str(), gx, gy, gz, bx, by, bz);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (sharedBytes > 49152) return CUDA_ERROR_INVALID_VALUE;
    if (extra != nullptr) {
        warn("cuLaunchKernel %s: the extra argument is not supported", fn->name.c_str());
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!fn->argSizes.empty() && params == nullptr) {
        warn("cuLaunchKernel %s: %zu parameters but kernelParams is NULL", fn->name.c_str(), fn->argSizes.size());
        return CUDA_ERROR_INVALID_VALUE;
    }
    // The allocations the kernel's pointers point into, whose guards are checked after it ran.
    std::vector<std::pair<uintptr_t, size_t>> bufs;
    {
        std::lock_guard<std::mutex> l(g_mu);
        for (size_t i = 0; i < fn->argSizes.size(); i++) {
            if (fn->argSizes[i] != 8 || params[i] == nullptr) continue;
            uint64_t v;
            memcpy(&v, params[i], 8);
            auto it = g_dev.upper_bound((uintptr_t)v);
            if (it == g_dev.begin()) continue;
            --it;
            if (v - it->first <= it->second) bufs.push_back(*it);
        }
    }
    CUresult r = run(fn, gx, gy, gz, bx, by, bz, params);
    std::lock_guard<std::mutex> l(g_mu);
    for (auto& b : bufs) {
        if (g_dev.count(b.first) == 0) continue;
        std::string damage = guardDamage(b.first, b.second);
        if (damage.empty()) continue;
        warn("kernel %s (grid (%u, %u, %u), block (%u, %u, %u)) wrote outside the allocation 0x%llx of %zu bytes: %s",
             fn->name.c_str(), gx, gy, gz, bx, by, bz, (unsigned long long)b.first, b.second, damage.c_str());
        resetGuards(b.first, b.second);
        r = CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    return r;
}

namespace {

// run runs the launch's blocks one after another.
CUresult run(Function* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, void** params)
{
    std::lock_guard<std::mutex> l(g_launch_mu);
    g_launches++;
    if (getenv("HORA_EMU_NO_CRASH_HANDLER") == nullptr) installCrashHandler();
    g_launchThread = pthread_self();
    g_launchKernel = fn->name.c_str();
    g_inLaunch.store(true);
    struct Done {
        ~Done() { g_inLaunch.store(false); }
    } done;
    Module* m = fn->mod;
    if (m->sharedBegin != nullptr && m->sharedEnd > m->sharedBegin) {
        memset(m->sharedBegin, 0xff, (size_t)(m->sharedEnd - m->sharedBegin)); // shared memory starts as garbage
    }
    ModuleState* st = fn->mod->st;
    g_s.st = st;
    g_s.fn = fn->launch;
    g_s.args = params;
    g_s.bx = bx, g_s.by = by, g_s.bz = bz;
    g_s.nthreads = bx * by * bz;
    st->blockDim = Uint3{bx, by, bz};
    st->gridDim = Uint3{gx, gy, gz};
    for (unsigned z = 0; z < gz; z++) {
        for (unsigned y = 0; y < gy; y++) {
            for (unsigned x = 0; x < gx; x++) {
                st->blockIdx = Uint3{x, y, z};
                if (runBlock()) continue;
                warn("kernel %s, block (%u, %u, %u) of grid (%u, %u, %u), block (%u, %u, %u): %zu thread(s) wait at "
                     "__syncthreads() while %u returned without reaching it",
                     fn->name.c_str(), x, y, z, gx, gy, gz, bx, by, bz, g_s.waiting.size(), g_s.finished);
                // The waiting threads are abandoned: their fibers start afresh.
                for (Fiber* w : g_s.waiting) {
                    fiberInit(w);
                    g_s.idle.push_back(w);
                }
                g_s.waiting.clear();
                return CUDA_ERROR_LAUNCH_FAILED;
            }
        }
    }
    return CUDA_SUCCESS;
}

} // namespace

// ---- errors ----

API CUresult cuGetErrorName(CUresult code, const char** name)
{
    if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const ErrorInfo* e = findError(code);
    if (e == nullptr) {
        *name = nullptr;
        return CUDA_ERROR_INVALID_VALUE;
    }
    *name = e->name;
    return CUDA_SUCCESS;
}

API CUresult cuGetErrorString(CUresult code, const char** text)
{
    if (text == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const ErrorInfo* e = findError(code);
    if (e == nullptr) {
        *text = nullptr;
        return CUDA_ERROR_INVALID_VALUE;
    }
    *text = e->text;
    return CUDA_SUCCESS;
}

// ---- emulator extras (not CUDA) ----

// horaEmuStats returns a counter: 0 live device allocations, 1 calls of
// cuMemAlloc_v2 so far, 2 kernel launches so far, 3 bytes in live device
// allocations, 4 cuBLAS matrix products so far.
API long long horaEmuStats(int what)
{
    std::lock_guard<std::mutex> l(g_mu);
    switch (what) {
    case 0: return (long long)g_dev.size();
    case 1: return g_alloc_calls;
    case 2: return g_launches.load();
    case 3: return (long long)g_live_bytes;
    case 4: return g_gemms.load();
    }
    return -1;
}

// horaEmuSetMemLimit sets the emulated device memory in bytes (what
// HORA_EMU_MEM_LIMIT sets); a negative limit goes back to the variable.
API void horaEmuSetMemLimit(long long bytes)
{
    std::lock_guard<std::mutex> l(g_mu);
    g_mem_limit_override = bytes < 0 ? -1 : bytes;
}

// horaEmuCheckRange reports whether [p, p+bytes) lies inside one live
// device allocation (the fake cuBLAS checks its operands with it).
API int horaEmuCheckRange(CUdeviceptr p, unsigned long long bytes)
{
    std::lock_guard<std::mutex> l(g_mu);
    return inDevice((uintptr_t)p, (size_t)bytes) ? 1 : 0;
}

// horaEmuCountGemm counts a cuBLAS matrix product in horaEmuStats(4).
API void horaEmuCountGemm(void) { g_gemms++; }
