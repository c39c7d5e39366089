//go:build (linux || darwin || freebsd || netbsd) && (amd64 || arm64)

package blas

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// callGemm calls the Fortran sgemm_ or dgemm_ at fn with the scalars in p
// and the matrices a, b, c of the row-major call. Every argument is an
// address, so purego.SyscallN's integer registers and stack slots carry
// them all; the two trailing 1s are the hidden lengths of the two character
// arguments that gfortran-compiled libraries expect (ignored by others).
//
// Passing the addresses to SyscallN directly would allocate the variadic
// argument slice on every call (SyscallN is go:uintptrescapes), so they are
// written to p.argv, inside the pooled block, instead. Storing a, b and c
// in p makes them escape, so they are heap objects, which do not move, and
// p keeps them alive until the call returns. alpha and beta point into p.
func callGemm(fn uintptr, p *gemmArgs, alpha, beta, a, b, c unsafe.Pointer) {
	p.a, p.b, p.c = a, b, c
	// Column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: B is the first operand.
	p.argv = [15]uintptr{
		uintptr(unsafe.Pointer(&p.transA)), uintptr(unsafe.Pointer(&p.transB)),
		uintptr(unsafe.Pointer(&p.m)), uintptr(unsafe.Pointer(&p.n)), uintptr(unsafe.Pointer(&p.k)),
		uintptr(alpha),
		uintptr(p.b), uintptr(unsafe.Pointer(&p.lda)),
		uintptr(p.a), uintptr(unsafe.Pointer(&p.ldb)),
		uintptr(beta),
		uintptr(p.c), uintptr(unsafe.Pointer(&p.ldc)),
		1, 1,
	}
	purego.SyscallN(fn, p.argv[:]...)
	runtime.KeepAlive(p)
	p.a, p.b, p.c = nil, nil, nil
}

// open opens one library and sets it up.
func open(name string) (*Library, error) {
	h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, err
	}
	sym := func(s string) uintptr {
		p, err := purego.Dlsym(h, s)
		if err != nil {
			return 0
		}
		return p
	}
	l := &Library{path: name, sgemm: sym("sgemm_"), dgemm: sym("dgemm_")}
	if l.sgemm == 0 || l.dgemm == 0 {
		_ = purego.Dlclose(h)
		return nil, fmt.Errorf("%s has no sgemm_ and dgemm_", name)
	}
	switch {
	case sym("openblas_get_config") != 0:
		setupOpenBLAS(l, sym)
	case sym("MKL_Get_Version_String") != 0:
		setupMKL(l, sym)
	case sym("bli_info_get_version_str") != 0:
		setupBLIS(l, sym)
	}
	l.name = l.describe()
	return l, nil
}

// register makes fn call the C function at addr when addr is not 0.
func register(fn any, addr uintptr) bool {
	if addr == 0 {
		return false
	}
	purego.RegisterFunc(fn, addr)
	return true
}

func setupOpenBLAS(l *Library, sym func(string) uintptr) {
	l.vendor = "OpenBLAS"
	var config, corename func() string
	if register(&config, sym("openblas_get_config")) {
		cfg := config() // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ... SkylakeX MAX_THREADS=64"
		if f := strings.Fields(cfg); len(f) >= 2 && f[0] == "OpenBLAS" {
			l.version = f[1]
		}
		l.ilp64 = strings.Contains(cfg, "USE64BITINT")
	}
	if register(&corename, sym("openblas_get_corename")) {
		l.core = corename()
	}
	var setThreads func(int32)
	var getThreads func() int32
	if register(&setThreads, sym("openblas_set_num_threads")) {
		setThreads(1)
	}
	if register(&getThreads, sym("openblas_get_num_threads")) {
		l.threads = int(getThreads())
	}
}

func setupMKL(l *Library, sym func(string) uintptr) {
	l.vendor = "MKL"
	// The interface layer must be chosen before any other MKL call.
	var setLayer func(int32) int32
	if register(&setLayer, sym("MKL_Set_Interface_Layer")) {
		const lp64 = 0
		l.ilp64 = setLayer(lp64)&1 == 1 // 1: MKL_INTERFACE_ILP64
	}
	var version func(*byte, int32)
	if register(&version, sym("MKL_Get_Version_String")) {
		var buf [256]byte
		version(&buf[0], int32(len(buf)))
		s := string(buf[:])
		if i := strings.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		// "Intel(R) oneAPI Math Kernel Library Version 2024.0-Product Build ..."
		if _, after, ok := strings.Cut(s, "Version "); ok {
			v, _, _ := strings.Cut(after, " ")
			v, _, _ = strings.Cut(v, "-")
			l.version = v
		}
	}
	// MKL_Set_Num_Threads takes its argument by value; the lower-case
	// mkl_set_num_threads_ is the Fortran interface, by address.
	var setThreads func(int32)
	var setThreadsF func(*int32)
	var getThreads func() int32
	if register(&setThreads, sym("MKL_Set_Num_Threads")) {
		setThreads(1)
	} else if register(&setThreadsF, sym("mkl_set_num_threads_")) {
		one := int32(1)
		setThreadsF(&one)
	}
	if register(&getThreads, sym("MKL_Get_Max_Threads")) {
		l.threads = int(getThreads())
	}
}

func setupBLIS(l *Library, sym func(string) uintptr) {
	l.vendor = "BLIS"
	var version func() string
	if register(&version, sym("bli_info_get_version_str")) {
		l.version = version()
	}
	var intSize func() int64 // gint_t
	if register(&intSize, sym("bli_info_get_blas_int_type_size")) {
		l.ilp64 = intSize() == 64
	}
	var archID func() int32 // arch_t
	var archString func(int32) string
	if register(&archID, sym("bli_arch_query_id")) && register(&archString, sym("bli_arch_string")) {
		l.arch = archString(archID())
	}
	var setThreads func(int64) // dim_t
	var getThreads func() int64
	if register(&setThreads, sym("bli_thread_set_num_threads")) {
		setThreads(1)
	}
	if register(&getThreads, sym("bli_thread_get_num_threads")) {
		l.threads = int(getThreads())
	}
}

// libc's getenv, setenv and unsetenv, found in the process.
var (
	cGetenvFn   func(string) string
	cSetenvFn   func(string, string, int32) int32
	cUnsetenvFn func(string) int32
	haveCEnv    = sync.OnceValue(func() bool {
		return register(&cGetenvFn, globalSym("getenv")) &&
			register(&cSetenvFn, globalSym("setenv")) &&
			register(&cUnsetenvFn, globalSym("unsetenv"))
	})
)

func globalSym(name string) uintptr {
	p, err := purego.Dlsym(purego.RTLD_DEFAULT, name)
	if err != nil {
		return 0
	}
	return p
}

// cGetenv is the C library's getenv ("" when unset), as the BLAS library
// sees the environment.
func cGetenv(key string) string {
	if !haveCEnv() {
		return os.Getenv(key)
	}
	return cGetenvFn(key)
}

// setenv sets an environment variable in Go's environment and makes sure
// that the C library sees it too. With cgo, and with purego's fake cgo
// under CGO_ENABLED=0, os.Setenv already calls libc's setenv; the check
// costs nothing and covers a runtime where it would not.
func setenv(key, value string) {
	_ = os.Setenv(key, value)
	if haveCEnv() && cGetenvFn(key) != value {
		cSetenvFn(key, value, 1)
	}
}

// unsetenv removes an environment variable from Go's and the C library's
// environment.
func unsetenv(key string) {
	_ = os.Unsetenv(key)
	if haveCEnv() && cGetenvFn(key) != "" {
		cUnsetenvFn(key)
	}
}
