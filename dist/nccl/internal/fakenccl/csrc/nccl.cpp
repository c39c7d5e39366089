// A fake NCCL (libnccl.so.2) for testing dist/nccl without a GPU, beside
// the CUDA emulator of device/cuda/internal/emu, whose device pointers are
// host addresses. It implements the part of NCCL's C ABI that dist/nccl
// binds, with NCCL's types, enum values, result codes and reduction
// semantics, on the host CPU.
//
// The ranks of a communicator are threads of one process. A process-wide
// table holds the groups by unique id. Work completes asynchronously, as
// on a GPU: ncclCommInitRank and every collective register this rank's
// part and return at once; the last rank to arrive does the work for all
// of them (the reduction in plain loops) and marks it done. Until then
// ncclCommGetAsyncError reports ncclInProgress, which is how dist/nccl
// waits (on a GPU its stream synchronisation already waited, and NCCL
// reports ncclSuccess). This lets several ranks share one emulated device,
// whose calls run one at a time on one thread.
//
// Mismatched collectives (different kinds, counts, types, ops or roots)
// fail on every rank with ncclInvalidUsage, reported asynchronously;
// ncclCommAbort makes the other ranks' pending and later operations fail
// with ncclRemoteError.
//
// Test hook (not NCCL): horaFakeNcclLiveComms returns the number of
// communicators created and not yet destroyed or aborted.

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include <unistd.h>

namespace {

enum Result {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
};

enum DataType {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
};

enum RedOp { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 };

enum Kind { kAllReduce = 1, kBroadcast = 2, kAllGather = 3 };

const char kMagic[16] = "HORA-FAKE-NCCL";

int typeSize(int dt) {
  switch (dt) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
  }
  return 0;
}

// roundTo rounds x to a binary format with mant significand bits (the
// leading one included), emin the exponent of its smallest normal and
// maxv its largest finite value: to nearest, ties to even, overflowing to
// infinity, with gradual underflow.
double roundTo(double x, int mant, int emin, double maxv) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  double a = std::fabs(x);
  int ex;
  std::frexp(a, &ex);  // a = f·2^ex, f in [0.5, 1): the leading bit is 2^(ex-1)
  int k = ex - 1 - (mant - 1);
  if (k < emin - (mant - 1)) k = emin - (mant - 1);
  double r = std::ldexp(std::rint(std::ldexp(a, -k)), k);  // rint: ties to even
  if (r > maxv) r = INFINITY;
  return x < 0 ? -r : r;
}

double halfToDouble(uint16_t h) {
  int sign = h >> 15, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  double v;
  if (e == 31)
    v = f ? NAN : INFINITY;
  else if (e == 0)
    v = std::ldexp(double(f), -24);
  else
    v = std::ldexp(double(f | 0x400), e - 25);
  return sign ? -v : v;
}

uint16_t doubleToHalf(double x) {
  if (std::isnan(x)) return 0x7e00;
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double r = std::fabs(roundTo(x, 11, -14, 65504.0));
  if (std::isinf(r)) return sign | 0x7c00;
  if (r == 0) return sign;
  if (r < std::ldexp(1.0, -14)) return sign | uint16_t(std::ldexp(r, 24));  // subnormal
  int ex;
  double f = std::frexp(r, &ex);  // r = f·2^ex
  return sign | uint16_t((ex - 1 + 15) << 10) | uint16_t(std::ldexp(f, 11) - 1024);
}

double bf16ToDouble(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t doubleToBf16(double x) {
  if (std::isnan(x)) return 0x7fc0;
  float f = float(roundTo(x, 8, -126, 3.3895313892515355e38));  // exact in float
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t(u >> 16);
}

// The element types, each with its NCCL arithmetic: every operation on
// two elements is rounded to the element type (as NCCL's kernels do).
template <typename T>
struct Arith {
  using V = T;
  static V load(const void* p, long long i) { return static_cast<const T*>(p)[i]; }
  static void store(void* p, long long i, V v) { static_cast<T*>(p)[i] = v; }
  static V add(V a, V b) { return V(a + b); }
  static V mul(V a, V b) { return V(a * b); }
  static V max(V a, V b) { return a < b ? b : a; }
  static V min(V a, V b) { return b < a ? b : a; }
};

// Signed integers wrap around on overflow, as on a GPU.
template <typename T, typename U>
struct IntArith : Arith<T> {
  using V = T;
  static V add(V a, V b) { return V(U(a) + U(b)); }
  static V mul(V a, V b) { return V(U(a) * U(b)); }
};

template <>
struct Arith<float> {
  using V = float;
  static V load(const void* p, long long i) { return static_cast<const float*>(p)[i]; }
  static void store(void* p, long long i, V v) { static_cast<float*>(p)[i] = v; }
  static V add(V a, V b) { return a + b; }
  static V mul(V a, V b) { return a * b; }
  static V max(V a, V b) { return std::fmax(a, b); }
  static V min(V a, V b) { return std::fmin(a, b); }
};

template <>
struct Arith<double> {
  using V = double;
  static V load(const void* p, long long i) { return static_cast<const double*>(p)[i]; }
  static void store(void* p, long long i, V v) { static_cast<double*>(p)[i] = v; }
  static V add(V a, V b) { return a + b; }
  static V mul(V a, V b) { return a * b; }
  static V max(V a, V b) { return std::fmax(a, b); }
  static V min(V a, V b) { return std::fmin(a, b); }
};

// Half and bfloat16 compute in double (exact for one operation on two of
// them) and round the result back.
template <uint16_t (*Enc)(double), double (*Dec)(uint16_t)>
struct Arith16 {
  using V = double;
  static V load(const void* p, long long i) { return Dec(static_cast<const uint16_t*>(p)[i]); }
  static void store(void* p, long long i, V v) { static_cast<uint16_t*>(p)[i] = Enc(v); }
  static V round(V v) { return Dec(Enc(v)); }
  static V add(V a, V b) { return round(a + b); }
  static V mul(V a, V b) { return round(a * b); }
  static V max(V a, V b) { return std::fmax(a, b); }
  static V min(V a, V b) { return std::fmin(a, b); }
};

using HalfArith = Arith16<doubleToHalf, halfToDouble>;
using BF16Arith = Arith16<doubleToBf16, bf16ToDouble>;

template <typename A>
constexpr bool isFloat() {
  return std::is_floating_point<typename A::V>::value;
}

// One rank's part of a collective.
struct Part {
  int kind = 0;
  size_t count = 0;
  int dtype = 0;
  int op = 0;
  int root = 0;
  const void* send = nullptr;
  void* recv = nullptr;
};

// reduce computes the all-reduce of parts' send buffers into every recv
// buffer, in chunks, combining the ranks in rank order. ncclAvg is NCCL's:
// for floating-point types each input is first multiplied by 1/nranks
// (rounded to the type), then summed; for integers the sum is divided by
// nranks, truncating.
template <typename A>
void reduce(const std::vector<Part>& parts) {
  using V = typename A::V;
  const long long n = (long long)parts[0].count;
  const int op = parts[0].op;
  const int nranks = (int)parts.size();
  V scale = V(0);
  if (op == ncclAvg && isFloat<A>()) {
    std::vector<unsigned char> tmp(sizeof(V) > 8 ? sizeof(V) : 8);
    A::store(tmp.data(), 0, V(1.0 / nranks));  // rounded to the element type
    scale = A::load(tmp.data(), 0);
  }
  const long long chunk = 4096;
  std::vector<V> acc(chunk);
  for (long long c = 0; c < n; c += chunk) {
    long long e = c + chunk < n ? c + chunk : n;
    for (int r = 0; r < nranks; r++) {
      for (long long i = c; i < e; i++) {
        V x = A::load(parts[r].send, i);
        V& a = acc[i - c];
        if (op == ncclAvg && isFloat<A>()) x = A::mul(x, scale);
        if (r == 0) {
          a = x;
          continue;
        }
        switch (op) {
          case ncclSum:
          case ncclAvg:
            a = A::add(a, x);
            break;
          case ncclProd:
            a = A::mul(a, x);
            break;
          case ncclMax:
            a = A::max(a, x);
            break;
          case ncclMin:
            a = A::min(a, x);
            break;
        }
      }
    }
    if (op == ncclAvg && !isFloat<A>()) {
      for (long long i = c; i < e; i++) acc[i - c] = V(acc[i - c] / V(nranks));
    }
    for (int r = 0; r < nranks; r++) {
      for (long long i = c; i < e; i++) A::store(parts[r].recv, i, acc[i - c]);
    }
  }
}

void reduceAny(const std::vector<Part>& parts) {
  switch (parts[0].dtype) {
    case ncclInt8:
      return reduce<IntArith<int8_t, uint8_t>>(parts);
    case ncclUint8:
      return reduce<Arith<uint8_t>>(parts);
    case ncclInt32:
      return reduce<IntArith<int32_t, uint32_t>>(parts);
    case ncclUint32:
      return reduce<Arith<uint32_t>>(parts);
    case ncclInt64:
      return reduce<IntArith<int64_t, uint64_t>>(parts);
    case ncclUint64:
      return reduce<Arith<uint64_t>>(parts);
    case ncclFloat16:
      return reduce<HalfArith>(parts);
    case ncclFloat32:
      return reduce<Arith<float>>(parts);
    case ncclFloat64:
      return reduce<Arith<double>>(parts);
    case ncclBfloat16:
      return reduce<BF16Arith>(parts);
  }
}

// An operation of a group: the ranks' parts, and its outcome once every
// rank has arrived.
struct Op {
  std::vector<Part> parts;
  std::vector<bool> posted;
  int arrived = 0;
  bool done = false;
  int result = ncclSuccess;
};

struct Group {
  std::string id;
  int nranks = 0;
  int joined = 0;
  int alive = 0;  // communicators not yet destroyed
  bool aborted = false;
  std::vector<bool> ranks;                  // which ranks joined
  std::map<long long, std::shared_ptr<Op>> ops;  // pending operations by sequence number
};

struct Comm {
  std::shared_ptr<Group> g;
  int rank = 0;
  long long seq = 0;         // operations this rank has posted
  std::shared_ptr<Op> last;  // its latest operation
  int sticky = ncclSuccess;  // the first asynchronous error
};

std::mutex mu;  // guards everything below and every Group, Op and Comm
std::map<std::string, std::shared_ptr<Group>> groups;
std::atomic<long long> idCounter{0};
std::atomic<long long> liveComms{0};

// run does the work of op, whose every rank has posted its part.
void run(Group& g, Op& op) {
  const Part& p0 = op.parts[0];
  for (int r = 1; r < g.nranks; r++) {
    const Part& p = op.parts[r];
    if (p.kind != p0.kind || p.count != p0.count || p.dtype != p0.dtype ||
        (p0.kind == kAllReduce && p.op != p0.op) || (p0.kind == kBroadcast && p.root != p0.root)) {
      op.result = ncclInvalidUsage;
      op.done = true;
      return;
    }
  }
  size_t bytes = p0.count * typeSize(p0.dtype);
  if (p0.count > 0) {
    switch (p0.kind) {
      case kAllReduce:
        reduceAny(op.parts);
        break;
      case kBroadcast: {
        const void* src = op.parts[p0.root].send;
        if (src == nullptr) {
          op.result = ncclInvalidArgument;
          break;
        }
        for (int r = 0; r < g.nranks; r++) std::memmove(op.parts[r].recv, src, bytes);
        break;
      }
      case kAllGather:
        for (int q = 0; q < g.nranks; q++)
          for (int r = 0; r < g.nranks; r++)
            std::memmove(static_cast<char*>(op.parts[r].recv) + q * bytes, op.parts[q].send, bytes);
        break;
    }
  }
  op.done = true;
}

int post(void* comm, const Part& part) {
  if (comm == nullptr) return ncclInvalidArgument;
  if (typeSize(part.dtype) == 0) return ncclInvalidArgument;
  if (part.kind == kAllReduce && (part.op < ncclSum || part.op > ncclAvg)) return ncclInvalidArgument;
  // (ncclBroadcast reads sendbuff on the root only; run checks it there.)
  if (part.count > 0 && (part.recv == nullptr || (part.kind != kBroadcast && part.send == nullptr)))
    return ncclInvalidArgument;
  Comm* c = static_cast<Comm*>(comm);
  std::lock_guard<std::mutex> lock(mu);
  Group& g = *c->g;
  if (part.kind == kBroadcast && (part.root < 0 || part.root >= g.nranks)) return ncclInvalidArgument;
  if (g.aborted) {
    c->sticky = ncclRemoteError;
    return ncclSuccess;  // reported asynchronously, as on a GPU
  }
  long long seq = c->seq++;
  auto& slot = g.ops[seq];
  if (!slot) {
    slot = std::make_shared<Op>();
    slot->parts.resize(g.nranks);
    slot->posted.assign(g.nranks, false);
  }
  std::shared_ptr<Op> op = slot;
  op->parts[c->rank] = part;
  op->posted[c->rank] = true;
  c->last = op;
  if (++op->arrived == g.nranks) {
    run(g, *op);
    g.ops.erase(seq);
  }
  return ncclSuccess;
}

}  // namespace

extern "C" {

typedef struct {
  char internal[128];
} ncclUniqueId;

int ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = 22105;  // 2.21.5
  return ncclSuccess;
}

const char* ncclGetErrorString(int result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
  }
  return "unknown result code";
}

int ncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return ncclInvalidArgument;
  std::memset(id->internal, 0, sizeof(id->internal));
  std::memcpy(id->internal, kMagic, sizeof(kMagic));
  long long n = ++idCounter;
  long long pid = getpid();
  std::memcpy(id->internal + 16, &pid, 8);
  std::memcpy(id->internal + 24, &n, 8);
  // The rest is a pattern of the counter, so that an id that lost bytes
  // on its way to the other ranks does not match.
  for (int i = 32; i < 128; i++) id->internal[i] = char((n * 131 + i * 7) & 0xff);
  return ncclSuccess;
}

int ncclCommInitRank(void** comm, int nranks, ncclUniqueId id, int rank) {
  if (comm == nullptr || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  if (std::memcmp(id.internal, kMagic, sizeof(kMagic)) != 0) return ncclInvalidArgument;
  std::string key(id.internal, sizeof(id.internal));
  std::lock_guard<std::mutex> lock(mu);
  auto& g = groups[key];
  if (!g) {
    g = std::make_shared<Group>();
    g->id = key;
    g->nranks = nranks;
    g->ranks.assign(nranks, false);
  }
  if (g->nranks != nranks || g->ranks[rank]) return ncclInvalidUsage;
  g->ranks[rank] = true;
  g->joined++;
  g->alive++;
  Comm* c = new Comm;
  c->g = g;
  c->rank = rank;
  *comm = c;
  ++liveComms;
  return ncclSuccess;
}

int ncclCommGetAsyncError(void* comm, int* asyncError) {
  if (comm == nullptr || asyncError == nullptr) return ncclInvalidArgument;
  Comm* c = static_cast<Comm*>(comm);
  std::lock_guard<std::mutex> lock(mu);
  if (c->sticky == ncclSuccess) {
    if (c->g->aborted)
      c->sticky = ncclRemoteError;
    else if (c->last && c->last->done && c->last->result != ncclSuccess)
      c->sticky = c->last->result;
  }
  if (c->sticky != ncclSuccess)
    *asyncError = c->sticky;
  else if (c->g->joined < c->g->nranks || (c->last && !c->last->done))
    *asyncError = ncclInProgress;
  else
    *asyncError = ncclSuccess;
  return ncclSuccess;
}

int ncclCommCount(const void* comm, int* count) {
  if (comm == nullptr || count == nullptr) return ncclInvalidArgument;
  std::lock_guard<std::mutex> lock(mu);
  *count = static_cast<const Comm*>(comm)->g->nranks;
  return ncclSuccess;
}

int ncclCommUserRank(const void* comm, int* rank) {
  if (comm == nullptr || rank == nullptr) return ncclInvalidArgument;
  *rank = static_cast<const Comm*>(comm)->rank;
  return ncclSuccess;
}

static void release(Comm* c) {
  Group& g = *c->g;
  if (--g.alive == 0) {
    auto it = groups.find(g.id);
    if (it != groups.end() && it->second.get() == &g) groups.erase(it);
  }
  delete c;
  --liveComms;
}

int ncclCommDestroy(void* comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  std::lock_guard<std::mutex> lock(mu);
  release(static_cast<Comm*>(comm));
  return ncclSuccess;
}

int ncclCommAbort(void* comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  std::lock_guard<std::mutex> lock(mu);
  Comm* c = static_cast<Comm*>(comm);
  c->g->aborted = true;
  release(c);
  return ncclSuccess;
}

int ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, int datatype, int op, void* comm,
                  void* stream) {
  (void)stream;
  Part p;
  p.kind = kAllReduce;
  p.count = count;
  p.dtype = datatype;
  p.op = op;
  p.send = sendbuff;
  p.recv = recvbuff;
  return post(comm, p);
}

int ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, int datatype, int root, void* comm,
                  void* stream) {
  (void)stream;
  Part p;
  p.kind = kBroadcast;
  p.count = count;
  p.dtype = datatype;
  p.root = root;
  p.send = sendbuff;
  p.recv = recvbuff;
  return post(comm, p);
}

int ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, int datatype, void* comm,
                  void* stream) {
  (void)stream;
  Part p;
  p.kind = kAllGather;
  p.count = sendcount;
  p.dtype = datatype;
  p.send = sendbuff;
  p.recv = recvbuff;
  return post(comm, p);
}

long long horaFakeNcclLiveComms() { return liveComms.load(); }

}  // extern "C"
