// Hora CUDA emulator: a fake NVRTC (libnvrtc.so.12) that compiles CUDA C
// for the host CPU with g++.
//
// nvrtcCompileProgram puts prelude.h before the program, preprocesses it
// with g++ -E, finds the kernels (declarations marked by the prelude's
// __global__), appends a launch trampoline per kernel and builds a shared
// library with g++ -O2 -shared -fPIC. The "CUBIN" is that library's bytes
// after a header that the fake driver's cuModuleLoadData checks. Builds are
// cached by a hash of everything that goes into them (HORA_EMU_CACHE). The
// compiler is g++, or HORA_EMU_CXX.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mutex>
#include <set>
#include <string>
#include <vector>

extern char** environ;

#define API extern "C" __attribute__((visibility("default")))

// The version of the emulated compilation: part of the cache key.
static const char kEmuVersion[] = "hora-emu-nvrtc 4";

// The image header cuModuleLoadData checks, then the size as a
// little-endian uint64, then the shared library.
static const char kImageMagic[8] = {'H', 'O', 'R', 'A', 'E', 'M', 'U', 1};

static const char kPrelude[] =
#include "prelude_gen.inc"
    ;

enum {
    NVRTC_SUCCESS = 0,
    NVRTC_ERROR_OUT_OF_MEMORY = 1,
    NVRTC_ERROR_PROGRAM_CREATION_FAILURE = 2,
    NVRTC_ERROR_INVALID_INPUT = 3,
    NVRTC_ERROR_INVALID_PROGRAM = 4,
    NVRTC_ERROR_INVALID_OPTION = 5,
    NVRTC_ERROR_COMPILATION = 6,
    NVRTC_ERROR_BUILTIN_OPERATION_FAILURE = 7,
    NVRTC_ERROR_INTERNAL_ERROR = 11,
};

namespace {

struct Program {
    std::string src, name;
    std::vector<std::pair<std::string, std::string>> headers; // include name, text
    std::string log;
    std::string image; // header + library; empty before a successful compile
    bool compiled = false;
};

std::mutex g_mu;
std::set<Program*> g_progs;

bool valid(Program* p)
{
    std::lock_guard<std::mutex> l(g_mu);
    return g_progs.count(p) != 0;
}

// ---- files and processes ----

bool readFile(const std::string& path, std::string* out)
{
    FILE* f = fopen(path.c_str(), "rb");
    if (f == nullptr) return false;
    out->clear();
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
    bool ok = !ferror(f);
    fclose(f);
    return ok;
}

bool writeFile(const std::string& path, const std::string& data)
{
    FILE* f = fopen(path.c_str(), "wb");
    if (f == nullptr) return false;
    bool ok = fwrite(data.data(), 1, data.size(), f) == data.size();
    return fclose(f) == 0 && ok;
}

bool mkdirAll(const std::string& dir)
{
    std::string cur;
    size_t i = 0;
    while (i <= dir.size()) {
        size_t j = dir.find('/', i);
        if (j == std::string::npos) j = dir.size();
        cur = dir.substr(0, j);
        if (!cur.empty() && mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return false;
        i = j + 1;
    }
    return true;
}

void removeAll(const std::string& dir)
{
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return;
    while (struct dirent* e = readdir(d)) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        std::string p = dir + "/" + e->d_name;
        struct stat st;
        if (lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            removeAll(p);
        } else {
            unlink(p.c_str());
        }
    }
    closedir(d);
    rmdir(dir.c_str());
}

std::string tempRoot()
{
    const char* t = getenv("TMPDIR");
    return t != nullptr && *t != 0 ? t : "/tmp";
}

std::string cacheDir()
{
    const char* c = getenv("HORA_EMU_CACHE");
    if (c != nullptr && *c != 0) return c;
    return tempRoot() + "/hora-emu-cache-" + std::to_string((long)getuid());
}

std::string compiler()
{
    const char* c = getenv("HORA_EMU_CXX");
    return c != nullptr && *c != 0 ? c : "g++";
}

// run runs argv with its standard output and error in the file outPath
// and returns its exit status (-1 when it could not start).
int run(const std::vector<std::string>& argv, const std::string& outPath, std::string* err)
{
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, outPath.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int r = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (r != 0) {
        *err = "cannot run " + argv[0] + ": " + strerror(r) + "\n";
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            *err = "waiting for " + argv[0] + ": " + strerror(errno) + "\n";
            return -1;
        }
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    *err = argv[0] + " was killed by signal " + std::to_string(WTERMSIG(status)) + "\n";
    return 128 + WTERMSIG(status);
}

// ---- hashing (FNV-1a, two independent 64-bit lanes) ----

struct Hash {
    uint64_t a = 14695981039346656037ull, b = 0x9e3779b97f4a7c15ull;
    void add(const std::string& s)
    {
        for (unsigned char c : s) {
            a = (a ^ c) * 1099511628211ull;
            b = (b ^ c) * 0x100000001b3ull;
            b ^= b >> 29;
        }
        // a separator, so that ("ab","c") and ("a","bc") differ
        a = (a ^ 0xff) * 1099511628211ull;
        b = (b + s.size()) * 0xbf58476d1ce4e5b9ull;
    }
    std::string hex() const
    {
        char buf[40];
        snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
        return buf;
    }
};

// ---- kernels ----

bool isIdent(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

// skipSpace skips white space and preprocessor line markers.
size_t skipSpace(const std::string& s, size_t i)
{
    for (;;) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
        if (i < s.size() && s[i] == '#' && (i == 0 || s[i - 1] == '\n')) {
            while (i < s.size() && s[i] != '\n') i++;
            continue;
        }
        return i;
    }
}

// skipSpaceBack returns the index just after the last non-space character before i.
size_t skipSpaceBack(const std::string& s, size_t i)
{
    while (i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t' || s[i - 1] == '\n' || s[i - 1] == '\r')) i--;
    return i;
}

// findKernels returns the kernels of the preprocessed program: the names
// declared extern "C" __global__ void NAME(...).
bool findKernels(const std::string& ii, std::vector<std::string>* names, std::string* err)
{
    static const std::string marker = "__attribute__((__hora_global__))";
    std::set<std::string> seen;
    for (size_t pos = ii.find(marker); pos != std::string::npos; pos = ii.find(marker, pos + 1)) {
        // the tokens after the marker, up to '('
        std::vector<std::string> toks;
        size_t i = skipSpace(ii, pos + marker.size());
        while (i < ii.size() && isIdent(ii[i])) {
            size_t j = i;
            while (j < ii.size() && isIdent(ii[j])) j++;
            toks.push_back(ii.substr(i, j - i));
            i = skipSpace(ii, j);
        }
        std::string what = toks.empty() ? std::string("?") : toks.back();
        if (i >= ii.size() || ii[i] != '(' || toks.size() < 2 || toks[0] != "void") {
            *err += "error: a __global__ function (" + what + ") must be declared extern \"C\" __global__ void NAME(...)\n";
            continue;
        }
        // extern "C" before the marker
        size_t b = skipSpaceBack(ii, pos);
        static const std::string ec = "\"C\"";
        bool externC = b >= ec.size() && ii.compare(b - ec.size(), ec.size(), ec) == 0;
        if (externC) {
            size_t e = skipSpaceBack(ii, b - ec.size());
            externC = e >= 6 && ii.compare(e - 6, 6, "extern") == 0 && (e == 6 || !isIdent(ii[e - 7]));
        }
        if (!externC) {
            *err += "error: kernel " + what + " must be declared extern \"C\" __global__ void " + what + "(...)\n";
            continue;
        }
        if (seen.insert(what).second) names->push_back(what);
    }
    return err->empty();
}

std::string quoteLine(const std::string& name)
{
    std::string q;
    for (char c : name) {
        if (c == '"' || c == '\\') q += '\\';
        if (c == '\n') c = ' ';
        q += c;
    }
    return q;
}

// checkIncludes returns an error for each #include of text (the file
// name) that names no header given to nvrtcCreateProgram: NVRTC has no
// system headers, and Hora's kernels include nothing.
std::string checkIncludes(const std::string& name, const std::string& text, const Program* p)
{
    std::string err;
    size_t line = 1;
    for (size_t i = 0; i < text.size(); line++) {
        size_t end = text.find('\n', i);
        if (end == std::string::npos) end = text.size();
        size_t j = i;
        while (j < end && (text[j] == ' ' || text[j] == '\t')) j++;
        if (j < end && text[j] == '#') {
            j++;
            while (j < end && (text[j] == ' ' || text[j] == '\t')) j++;
            if (text.compare(j, 7, "include") == 0) {
                j += 7;
                while (j < end && (text[j] == ' ' || text[j] == '\t')) j++;
                std::string inc;
                if (j < end && (text[j] == '"' || text[j] == '<')) {
                    char close = text[j] == '"' ? '"' : '>';
                    size_t k = text.find(close, j + 1);
                    if (k != std::string::npos && k < end) inc = text.substr(j + 1, k - j - 1);
                }
                bool found = false;
                for (auto& hd : p->headers) found = found || hd.first == inc;
                if (!found) {
                    err += name + "(" + std::to_string(line) + "): catastrophic error: cannot open source file \"" + inc + "\"\n";
                }
            }
        }
        i = end + 1;
    }
    return err;
}

// compile builds p's library, or fills p->log and returns an nvrtcResult.
int compile(Program* p, int numOpts, const char* const* opts)
{
    std::string arch, stdv = "c++17";
    std::vector<std::string> defs; // -D, -U, -I for the preprocessor
    bool virtualArch = false;
    bool fmad = true; // NVRTC contracts a*b+c into one fused multiply-add unless --fmad=false
    for (int i = 0; i < numOpts; i++) {
        if (opts == nullptr || opts[i] == nullptr) return NVRTC_ERROR_INVALID_INPUT;
        std::string o = opts[i];
        auto value = [&](const char* prefix) -> const char* {
            size_t n = strlen(prefix);
            return o.compare(0, n, prefix) == 0 ? o.c_str() + n : nullptr;
        };
        const char* v;
        if ((v = value("--gpu-architecture=")) || (v = value("-arch=")) || (v = value("-arch "))) {
            std::string a = v;
            if (a.compare(0, 3, "sm_") == 0 && a.size() > 3) {
                arch = a.substr(3);
                virtualArch = false;
            } else if (a.compare(0, 8, "compute_") == 0 && a.size() > 8) {
                arch = a.substr(8);
                virtualArch = true;
            } else {
                p->log = "nvrtc: error: invalid value for --gpu-architecture: " + a + "\n";
                return NVRTC_ERROR_INVALID_OPTION;
            }
            for (char c : arch) {
                if (!isIdent(c)) {
                    p->log = "nvrtc: error: invalid value for --gpu-architecture: " + a + "\n";
                    return NVRTC_ERROR_INVALID_OPTION;
                }
            }
        } else if ((v = value("--fmad=")) || (v = value("-fmad="))) {
            std::string f = v;
            if (f != "true" && f != "false") {
                p->log = "nvrtc: error: invalid value for --fmad: " + f + "\n";
                return NVRTC_ERROR_INVALID_OPTION;
            }
            fmad = f == "true";
        } else if ((v = value("--std=")) || (v = value("-std="))) {
            stdv = v;
            if (stdv != "c++03" && stdv != "c++11" && stdv != "c++14" && stdv != "c++17" && stdv != "c++20") {
                p->log = "nvrtc: error: invalid value for --std: " + stdv + "\n";
                return NVRTC_ERROR_INVALID_OPTION;
            }
            if (stdv == "c++03" || stdv == "c++11") stdv = "c++14"; // the prelude needs C++14
        } else if ((v = value("--define-macro=")) || (v = value("-D"))) {
            defs.push_back(std::string("-D") + v);
        } else if ((v = value("--undefine-macro=")) || (v = value("-U"))) {
            defs.push_back(std::string("-U") + v);
        } else if ((v = value("--include-path=")) || (v = value("-I"))) {
            defs.push_back(std::string("-I") + v);
        } else if (o == "-default-device" || o == "--device-as-default-execution-space" || o == "-lineinfo" ||
                   o == "--generate-line-info" || o == "-G" || o == "--device-debug" || o == "--use_fast_math" ||
                   o == "-use_fast_math" || o == "-w" || o == "--disable-warnings" || o == "-restrict" ||
                   o == "--restrict" || o == "-dlto" || o == "--dlink-time-opt" || o == "--extra-device-vectorization" ||
                   o == "-extra-device-vectorization" || o == "-dw" || o == "--device-w" || value("--ftz=") || value("-ftz=") || value("--prec-div=") || value("-prec-div=") ||
                   value("--prec-sqrt=") || value("-prec-sqrt=") || value("--maxrregcount=") || value("-maxrregcount=") ||
                   value("--relocatable-device-code=") || value("-rdc=") || value("-dopt=") || value("--dopt=") ||
                   value("--split-compile=") || value("-split-compile=") || value("--diag-suppress=") ||
                   value("-diag-suppress=") || value("--minimal") || value("--ptxas-options=") || value("-Xptxas")) {
            // accepted, no effect on the host
        } else {
            p->log = "nvrtc: error: unrecognized option: " + o + "\n";
            return NVRTC_ERROR_INVALID_OPTION;
        }
    }
    if (arch.empty()) {
        p->log = "nvrtc (Hora emulator): error: no --gpu-architecture=sm_NN option\n";
        return NVRTC_ERROR_INVALID_OPTION;
    }
    bool includePaths = false;
    for (const std::string& d : defs) includePaths = includePaths || d.compare(0, 2, "-I") == 0;
    if (!includePaths) {
        std::string err = checkIncludes(p->name, p->src, p);
        for (auto& hd : p->headers) err += checkIncludes(hd.first, hd.second, p);
        if (!err.empty()) {
            p->log = err;
            return NVRTC_ERROR_COMPILATION;
        }
    }
    std::string cudaArch = arch;
    while (!cudaArch.empty() && !(cudaArch.back() >= '0' && cudaArch.back() <= '9')) cudaArch.pop_back(); // sm_90a
    cudaArch += "0";

    std::string cxx = compiler();
    std::vector<std::string> ppArgs = {cxx, "-std=" + stdv, "-E", "-x", "c++", "-D__CUDACC__", "-D__CUDACC_RTC__",
                                       "-D__CUDA_ARCH__=" + cudaArch};
    ppArgs.insert(ppArgs.end(), defs.begin(), defs.end());
    std::vector<std::string> ccArgs = {cxx, "-std=" + stdv, "-O2", "-shared", "-fPIC", "-fvisibility=hidden",
                                       "-fno-math-errno", "-fno-weak", "-Wall", "-Wno-attributes", "-Wno-unused-function",
                                       "-Wno-unused-variable", "-Wno-unused-but-set-variable"};
    // A GPU rounds a*b+c once (fused multiply-add) wherever the compiler
    // contracts it, as NVRTC does by default: where this CPU has FMA, the
    // emulated kernels contract too, so that results which depend on it
    // (cancellation in x*s + b) differ from a plain CPU here as on a GPU.
    bool contract = fmad && __builtin_cpu_supports("fma");
    ccArgs.push_back(contract ? "-ffp-contract=fast" : "-ffp-contract=off");
    if (contract) ccArgs.push_back("-mfma");

    Hash h;
    h.add(kEmuVersion);
    for (const std::string& a : ppArgs) h.add(a);
    for (const std::string& a : ccArgs) h.add(a);
    h.add(kPrelude);
    h.add(p->name);
    h.add(p->src);
    for (auto& hd : p->headers) h.add(hd.first), h.add(hd.second);
    std::string key = h.hex();

    std::string cache = cacheDir();
    std::string cached = cache + "/kernels-" + key + ".so";
    std::string lib;
    bool haveCache = mkdirAll(cache);
    int lockFd = -1;
    if (haveCache) {
        // One process builds a given program; the others wait for it.
        lockFd = open((cache + "/kernels-" + key + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (lockFd >= 0) {
            while (flock(lockFd, LOCK_EX) != 0 && errno == EINTR) {
            }
        }
    }
    struct Unlock {
        int fd;
        ~Unlock()
        {
            if (fd >= 0) close(fd);
        }
    } unlock{lockFd};
    if (!haveCache || !readFile(cached, &lib) || lib.empty()) {
        std::string tmpl = tempRoot() + "/hora-nvrtc-XXXXXX";
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back(0);
        if (mkdtemp(buf.data()) == nullptr) {
            p->log = "nvrtc (Hora emulator): cannot create a temporary folder in " + tempRoot() + ": " + strerror(errno) + "\n";
            return NVRTC_ERROR_INTERNAL_ERROR;
        }
        std::string dir = buf.data();
        struct Remove {
            std::string dir;
            ~Remove()
            {
                if (getenv("HORA_EMU_KEEP") == nullptr) removeAll(dir);
            }
        } remove{dir};
        bool ok = writeFile(dir + "/hora_prelude.h", kPrelude);
        for (auto& hd : p->headers) {
            std::string hp = dir + "/" + hd.first;
            size_t slash = hp.rfind('/');
            ok = ok && mkdirAll(hp.substr(0, slash)) && writeFile(hp, hd.second);
        }
        ok = ok && writeFile(dir + "/program.cu", "#include \"hora_prelude.h\"\n#line 1 \"" + quoteLine(p->name) + "\"\n" + p->src + "\n");
        if (!ok) {
            p->log = "nvrtc (Hora emulator): cannot write to " + dir + "\n";
            return NVRTC_ERROR_INTERNAL_ERROR;
        }
        std::string logPath = dir + "/log.txt", err;
        ppArgs.push_back("-I" + dir);
        ppArgs.push_back(dir + "/program.cu");
        ppArgs.push_back("-o");
        ppArgs.push_back(dir + "/program.ii");
        int st = run(ppArgs, logPath, &err);
        std::string ii, log;
        readFile(logPath, &log);
        if (st != 0) {
            p->log = log + err;
            return NVRTC_ERROR_COMPILATION;
        }
        if (!readFile(dir + "/program.ii", &ii)) {
            p->log = "nvrtc (Hora emulator): cannot read the preprocessed program\n";
            return NVRTC_ERROR_INTERNAL_ERROR;
        }
        std::vector<std::string> kernels;
        if (!findKernels(ii, &kernels, &err)) {
            p->log = log + err;
            return NVRTC_ERROR_COMPILATION;
        }
        ii += "\n# 1 \"<hora emulator launch trampolines>\"\n";
        for (const std::string& k : kernels) {
            ii += "extern \"C\" __attribute__((visibility(\"default\"))) void __hora_launch_" + k + "(void** a) { __hora_call(" + k +
                  ", a); }\n";
            ii += "extern \"C\" __attribute__((visibility(\"default\"))) int __hora_argsizes_" + k +
                  "(int* s) { return __hora_argsizes(" + k + ", s); }\n";
        }
        if (!writeFile(dir + "/program.ii", ii)) {
            p->log = "nvrtc (Hora emulator): cannot write to " + dir + "\n";
            return NVRTC_ERROR_INTERNAL_ERROR;
        }
        ccArgs.push_back(dir + "/program.ii");
        ccArgs.push_back("-o");
        ccArgs.push_back(dir + "/program.so");
        st = run(ccArgs, logPath, &err);
        readFile(logPath, &log);
        p->log = log + err;
        if (st != 0) return NVRTC_ERROR_COMPILATION;
        if (!readFile(dir + "/program.so", &lib) || lib.empty()) {
            p->log += "nvrtc (Hora emulator): cannot read the built library\n";
            return NVRTC_ERROR_INTERNAL_ERROR;
        }
        if (!p->log.empty() && getenv("HORA_EMU_VERBOSE") != nullptr) fprintf(stderr, "%s", p->log.c_str());
        if (haveCache) {
            std::string tmp = cached + ".tmp-" + std::to_string((long)getpid());
            if (writeFile(tmp, lib)) {
                if (rename(tmp.c_str(), cached.c_str()) != 0) unlink(tmp.c_str());
            } else {
                unlink(tmp.c_str());
            }
        }
    }
    if (virtualArch) {
        p->image.clear(); // no CUBIN for a virtual architecture, as NVRTC
    } else {
        uint64_t n = lib.size();
        p->image.assign(kImageMagic, sizeof kImageMagic);
        p->image.append((const char*)&n, 8);
        p->image += lib;
    }
    return NVRTC_SUCCESS;
}

} // namespace

API int nvrtcVersion(int* major, int* minor)
{
    if (major == nullptr || minor == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    *major = 12;
    *minor = 8;
    return NVRTC_SUCCESS;
}

API const char* nvrtcGetErrorString(int r)
{
    switch (r) {
    case 0: return "NVRTC_SUCCESS";
    case 1: return "NVRTC_ERROR_OUT_OF_MEMORY";
    case 2: return "NVRTC_ERROR_PROGRAM_CREATION_FAILURE";
    case 3: return "NVRTC_ERROR_INVALID_INPUT";
    case 4: return "NVRTC_ERROR_INVALID_PROGRAM";
    case 5: return "NVRTC_ERROR_INVALID_OPTION";
    case 6: return "NVRTC_ERROR_COMPILATION";
    case 7: return "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE";
    case 8: return "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION";
    case 9: return "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION";
    case 10: return "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID";
    case 11: return "NVRTC_ERROR_INTERNAL_ERROR";
    }
    return "NVRTC_ERROR unknown";
}

API int nvrtcGetNumSupportedArchs(int* n)
{
    if (n == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    *n = 13;
    return NVRTC_SUCCESS;
}

API int nvrtcGetSupportedArchs(int* archs)
{
    static const int a[] = {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 89, 90};
    if (archs == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    memcpy(archs, a, sizeof a);
    return NVRTC_SUCCESS;
}

API int nvrtcCreateProgram(void** prog, const char* src, const char* name, int numHeaders, const char* const* headers,
                           const char* const* includeNames)
{
    if (prog == nullptr) return NVRTC_ERROR_INVALID_PROGRAM;
    if (src == nullptr || numHeaders < 0 || (numHeaders > 0 && (headers == nullptr || includeNames == nullptr)))
        return NVRTC_ERROR_INVALID_INPUT;
    Program* p = new Program();
    p->src = src;
    p->name = name != nullptr && *name != 0 ? name : "default_program";
    for (int i = 0; i < numHeaders; i++) {
        if (headers[i] == nullptr || includeNames[i] == nullptr || includeNames[i][0] == 0 || includeNames[i][0] == '/' ||
            strstr(includeNames[i], "..") != nullptr) {
            delete p;
            return NVRTC_ERROR_INVALID_INPUT;
        }
        p->headers.emplace_back(includeNames[i], headers[i]);
    }
    std::lock_guard<std::mutex> l(g_mu);
    g_progs.insert(p);
    *prog = p;
    return NVRTC_SUCCESS;
}

API int nvrtcDestroyProgram(void** prog)
{
    if (prog == nullptr) return NVRTC_ERROR_INVALID_PROGRAM;
    Program* p = (Program*)*prog;
    {
        std::lock_guard<std::mutex> l(g_mu);
        if (g_progs.erase(p) == 0) return NVRTC_ERROR_INVALID_PROGRAM;
    }
    delete p;
    *prog = nullptr;
    return NVRTC_SUCCESS;
}

API int nvrtcCompileProgram(void* prog, int numOpts, const char* const* opts)
{
    Program* p = (Program*)prog;
    if (!valid(p)) return NVRTC_ERROR_INVALID_PROGRAM;
    if (numOpts < 0 || (numOpts > 0 && opts == nullptr)) return NVRTC_ERROR_INVALID_INPUT;
    p->log.clear();
    p->image.clear();
    p->compiled = false;
    int r = compile(p, numOpts, opts);
    p->compiled = r == NVRTC_SUCCESS;
    return r;
}

API int nvrtcGetProgramLogSize(void* prog, size_t* n)
{
    Program* p = (Program*)prog;
    if (!valid(p)) return NVRTC_ERROR_INVALID_PROGRAM;
    if (n == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    *n = p->log.size() + 1;
    return NVRTC_SUCCESS;
}

API int nvrtcGetProgramLog(void* prog, char* log)
{
    Program* p = (Program*)prog;
    if (!valid(p)) return NVRTC_ERROR_INVALID_PROGRAM;
    if (log == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    memcpy(log, p->log.c_str(), p->log.size() + 1);
    return NVRTC_SUCCESS;
}

API int nvrtcGetCUBINSize(void* prog, size_t* n)
{
    Program* p = (Program*)prog;
    if (!valid(p)) return NVRTC_ERROR_INVALID_PROGRAM;
    if (n == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    if (!p->compiled) return NVRTC_ERROR_INVALID_PROGRAM;
    *n = p->image.size();
    return NVRTC_SUCCESS;
}

API int nvrtcGetCUBIN(void* prog, char* image)
{
    Program* p = (Program*)prog;
    if (!valid(p)) return NVRTC_ERROR_INVALID_PROGRAM;
    if (image == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    if (!p->compiled) return NVRTC_ERROR_INVALID_PROGRAM;
    memcpy(image, p->image.data(), p->image.size());
    return NVRTC_SUCCESS;
}
