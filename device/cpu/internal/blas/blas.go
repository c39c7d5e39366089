package blas

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// ErrNotFound is returned by Load when no BLAS library is found, or when
// the environment variable HORA_BLAS is "none" or "off". Callers fall back
// to their pure Go kernels; test with errors.Is.
var ErrNotFound = errors.New("blas: no BLAS library found")

// Library is a loaded BLAS. Its methods are safe for concurrent use; each
// call runs on the calling goroutine's thread only.
type Library struct {
	path    string  // the name or path that was opened
	vendor  string  // "OpenBLAS", "MKL", "BLIS", or "" when unknown
	version string  // the library's version, "" when unknown
	core    string  // OpenBLAS's kernel set (corename), "" for others
	arch    string  // BLIS's architecture, "" for others
	threads int     // threads per call as reported by the library, 0 if unknown
	ilp64   bool    // the Fortran interface takes 64-bit integers
	sgemm   uintptr // sgemm_
	dgemm   uintptr // dgemm_
	name    string  // Name's answer
}

var (
	loadOnce sync.Once
	loaded   *Library
	loadErr  error
)

// Load finds and opens a BLAS, once per process: later calls return the
// same Library and error.
//
// When the environment variable HORA_BLAS is set it is the library to open
// (a file name searched like dlopen does, or a path); "none" or "off"
// disables BLAS and returns ErrNotFound, and a library that cannot be
// opened, or has no sgemm_ and dgemm_, is an error naming it. Otherwise
// Load opens the first of libopenblas.so.0, libopenblas.so, libmkl_rt.so.2,
// libmkl_rt.so, libblis.so.4 and libblis.so found by the dynamic loader
// (LD_LIBRARY_PATH, ld.so.cache, ...), or returns ErrNotFound. It never
// falls back to a generic libblas.so.3, which may be the slow reference
// BLAS.
//
// The library is set to one thread per call (openblas_set_num_threads,
// MKL_Set_Num_Threads, bli_thread_set_num_threads). While the library is
// opened, OPENBLAS_NUM_THREADS is 1 (so that OpenBLAS starts no thread
// pool) and OPENBLAS_CORETYPE picks OpenBLAS's kernels (see coreType):
// on a processor with AVX-512 they are the AVX-512 ones (SkylakeX) when
// the variable is unset on AMD (OpenBLAS 0.3.21 takes Zen 4 and Zen 5 for
// Haswell and would run AVX2 kernels at half the speed) or names a core
// without AVX-512, and HORA_OPENBLAS_CORETYPE, when set, is used as it is.
// The environment is restored afterwards.
func Load() (*Library, error) {
	loadOnce.Do(func() { loaded, loadErr = load(os.Getenv("HORA_BLAS")) })
	return loaded, loadErr
}

// defaultNames are the libraries Load tries, in order, when HORA_BLAS is
// not set.
var defaultNames = []string{
	"libopenblas.so.0", "libopenblas.so",
	"libmkl_rt.so.2", "libmkl_rt.so",
	"libblis.so.4", "libblis.so",
}

// candidates returns the libraries to try for the value of HORA_BLAS, and
// whether the user named one.
func candidates(horaBLAS string) (names []string, explicit bool, err error) {
	v := strings.TrimSpace(horaBLAS)
	switch strings.ToLower(v) {
	case "":
		return defaultNames, false, nil
	case "none", "off":
		return nil, true, fmt.Errorf("%w (disabled by HORA_BLAS=%s)", ErrNotFound, horaBLAS)
	}
	return []string{v}, true, nil
}

// avx512Cores are OpenBLAS core types whose kernels use AVX-512.
var avx512Cores = map[string]bool{"skylakex": true, "cooperlake": true, "sapphirerapids": true}

// coreType returns the OPENBLAS_CORETYPE to open OpenBLAS with, or "" to
// leave the variable as it is, and a note for Name when the user's value
// is replaced. user is the value of OPENBLAS_CORETYPE (userSet: whether it
// is set), force that of HORA_OPENBLAS_CORETYPE.
//
//   - HORA_OPENBLAS_CORETYPE set: it wins.
//   - No AVX-512 on this CPU: leave it (OpenBLAS picks AVX2 or older kernels).
//   - OPENBLAS_CORETYPE unset: SkylakeX on AMD (misdetected as Haswell),
//     nothing on Intel (detected correctly).
//   - OPENBLAS_CORETYPE names a core without AVX-512 (e.g. Haswell): SkylakeX,
//     since those kernels run at half the speed this CPU can reach.
func coreType(user string, userSet bool, force, vendor string, avx512 bool) (core, note string) {
	switch {
	case force != "":
		return force, ""
	case !avx512:
		return "", ""
	case !userSet:
		if vendor == "AuthenticAMD" {
			return "SkylakeX", ""
		}
		return "", ""
	case avx512Cores[strings.ToLower(strings.TrimSpace(user))]:
		return "", ""
	}
	return "SkylakeX", fmt.Sprintf("OPENBLAS_CORETYPE=%s replaced: this CPU has AVX-512; HORA_OPENBLAS_CORETYPE=%s forces it", user, user)
}

// load is Load without the once.
func load(horaBLAS string) (*Library, error) {
	names, explicit, err := candidates(horaBLAS)
	if err != nil {
		return nil, err
	}
	user, userSet := os.LookupEnv("OPENBLAS_CORETYPE")
	core, note := coreType(user, userSet, os.Getenv("HORA_OPENBLAS_CORETYPE"), cpuVendor(), hasAVX512())
	restore := setTempEnv(map[string]string{"OPENBLAS_NUM_THREADS": "1"}, map[string]string{"OPENBLAS_CORETYPE": core})
	defer restore()

	for _, name := range names {
		l, err := open(name)
		if err == nil {
			if note != "" && l.vendor == "OpenBLAS" {
				l.name += " [" + note + "]"
			}
			return l, nil
		}
		if explicit {
			return nil, fmt.Errorf("blas: cannot use HORA_BLAS=%s: %w", name, err)
		}
	}
	return nil, fmt.Errorf("%w (tried %s; set HORA_BLAS to a library path)", ErrNotFound, strings.Join(names, ", "))
}

// setTempEnv sets, in Go's environment and in the C library's, the
// variables of defaults that are not set already and every variable of
// overrides (skipping empty values in both), and returns the function that
// restores the environment as it was.
func setTempEnv(defaults, overrides map[string]string) (restore func()) {
	type saved struct {
		key, value string
		was        bool
	}
	var undo []saved
	set := func(k, v string) {
		old, was := os.LookupEnv(k)
		setenv(k, v)
		undo = append(undo, saved{k, old, was})
	}
	for k, v := range defaults {
		if _, ok := os.LookupEnv(k); !ok && v != "" {
			set(k, v)
		}
	}
	for k, v := range overrides {
		if v != "" {
			set(k, v)
		}
	}
	return func() {
		for _, u := range undo {
			if u.was {
				setenv(u.key, u.value)
			} else {
				unsetenv(u.key)
			}
		}
	}
}

// describe builds Name's answer.
func (l *Library) describe() string {
	var parts []string
	switch l.vendor {
	case "":
		parts = append(parts, "BLAS "+l.path)
	case "MKL":
		parts = append(parts, "Intel MKL")
	default:
		parts = append(parts, l.vendor)
	}
	for _, s := range []string{l.version, l.core, l.arch} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if l.ilp64 {
		parts = append(parts, "ILP64")
	}
	switch l.threads {
	case 0:
		parts = append(parts, "(threads not set)")
	case 1:
		parts = append(parts, "(1 thread)")
	default:
		parts = append(parts, fmt.Sprintf("(%d threads)", l.threads))
	}
	return strings.Join(parts, " ")
}

// Name describes the library and how it runs, e.g.
// "OpenBLAS 0.3.21 SkylakeX (1 thread)".
func (l *Library) Name() string { return l.name }

// CoreName is the kernel set OpenBLAS runs (openblas_get_corename), e.g.
// "SkylakeX" or "Haswell"; "" for other libraries.
func (l *Library) CoreName() string { return l.core }

// Vendor is "OpenBLAS", "MKL" or "BLIS", or "" for a library named by
// HORA_BLAS that is none of them.
func (l *Library) Vendor() string { return l.vendor }

// Path is the library name or path that was opened, e.g. "libopenblas.so.0".
func (l *Library) Path() string { return l.path }

// Threads is the number of threads the library uses per call as it reports
// it (1 after Load), or 0 when it cannot be asked.
func (l *Library) Threads() int { return l.threads }

// gemmArgs holds the scalar arguments of one call of the Fortran sgemm_ or
// dgemm_, which takes every argument by address. The fields are in
// column-major terms, i.e. already swapped for the row-major product. A
// block is taken from argPool for the duration of a call so that the
// addresses passed to C (which escape) need no allocation per call.
type gemmArgs struct {
	m, n, k, lda, ldb, ldc int64 // int32 in the low half for LP64 libraries
	dalpha, dbeta          float64
	salpha, sbeta          float32
	transA, transB         byte

	a, b, c unsafe.Pointer // the matrices, kept alive during the call
	argv    [15]uintptr    // the arguments of the call
}

var argPool = sync.Pool{New: func() any { return new(gemmArgs) }}

// setInt stores v in an integer argument slot, as int32 for LP64 libraries.
func (l *Library) setInt(p *int64, v int) {
	if l.ilp64 {
		*p = int64(v)
	} else {
		*(*int32)(unsafe.Pointer(p)) = int32(v)
	}
}

// args takes an argument block and fills its integer and transpose
// arguments for the row-major product C (m×n) = op(A) (m×k) · op(B) (k×n),
// which the column-major routine computes as Cᵀ = op(B)ᵀ·op(A)ᵀ.
func (l *Library) args(transA, transB bool, m, n, k, lda, ldb, ldc int) *gemmArgs {
	p := argPool.Get().(*gemmArgs)
	p.transA, p.transB = transChar(transB), transChar(transA)
	l.setInt(&p.m, n)
	l.setInt(&p.n, m)
	l.setInt(&p.k, k)
	l.setInt(&p.lda, ldb)
	l.setInt(&p.ldb, lda)
	l.setInt(&p.ldc, ldc)
	return p
}

func transChar(t bool) byte {
	if t {
		return 'T'
	}
	return 'N'
}

// Sgemm computes C = alpha·op(A)·op(B) + beta·C on row-major float32
// matrices, with the argument convention of CBLAS row-major and gonum's
// blas.Float32: op(X) is X, or Xᵀ when transX is true; op(A) is m×k, op(B)
// is k×n and C is m×n; lda, ldb and ldc are the row strides of A, B and C
// as stored. When beta is 0, C is not read (NaNs in C are overwritten).
//
// Sgemm runs on the calling goroutine's thread only, is safe to call from
// several goroutines at once (on distinct C), and allocates nothing in
// steady state. It panics, naming the argument, when a dimension is
// negative, a stride is too small or a slice too short, before calling the
// library. The slices must not be modified by another goroutine during the
// call.
func (l *Library) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	l.check("Sgemm", transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scale(m, n, beta, c, ldc)
		return
	}
	p := l.args(transA, transB, m, n, k, lda, ldb, ldc)
	p.salpha, p.sbeta = alpha, beta
	callGemm(l.sgemm, p, unsafe.Pointer(&p.salpha), unsafe.Pointer(&p.sbeta),
		unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), unsafe.Pointer(&c[0]))
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
	argPool.Put(p)
}

// Dgemm is Sgemm for float64 matrices: C = alpha·op(A)·op(B) + beta·C,
// row-major, with the same conventions, checks and guarantees.
func (l *Library) Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	l.check("Dgemm", transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scale(m, n, beta, c, ldc)
		return
	}
	p := l.args(transA, transB, m, n, k, lda, ldb, ldc)
	p.dalpha, p.dbeta = alpha, beta
	callGemm(l.dgemm, p, unsafe.Pointer(&p.dalpha), unsafe.Pointer(&p.dbeta),
		unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), unsafe.Pointer(&c[0]))
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
	argPool.Put(p)
}

// scale sets C = beta·C for the k == 0 case; beta == 0 zeroes C without
// reading it.
func scale[T float32 | float64](m, n int, beta T, c []T, ldc int) {
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		switch beta {
		case 0:
			clear(row)
		case 1:
		default:
			for j := range row {
				row[j] *= beta
			}
		}
	}
}

// check panics, like a BLAS, on invalid arguments: C code reading out of
// bounds would corrupt memory instead of panicking.
func (l *Library) check(fn string, transA, transB bool, m, n, k, lenA, lda, lenB, ldb, lenC, ldc int) {
	if m < 0 {
		panic(fmt.Sprintf("blas: %s: m (%d) < 0", fn, m))
	}
	if n < 0 {
		panic(fmt.Sprintf("blas: %s: n (%d) < 0", fn, n))
	}
	if k < 0 {
		panic(fmt.Sprintf("blas: %s: k (%d) < 0", fn, k))
	}
	rowsA, colsA := m, k
	if transA {
		rowsA, colsA = k, m
	}
	rowsB, colsB := k, n
	if transB {
		rowsB, colsB = n, k
	}
	if lda < max(1, colsA) {
		panic(fmt.Sprintf("blas: %s: lda (%d) < max(1, %d), the row length of A", fn, lda, colsA))
	}
	if ldb < max(1, colsB) {
		panic(fmt.Sprintf("blas: %s: ldb (%d) < max(1, %d), the row length of B", fn, ldb, colsB))
	}
	if ldc < max(1, n) {
		panic(fmt.Sprintf("blas: %s: ldc (%d) < max(1, n=%d)", fn, ldc, n))
	}
	if !l.ilp64 {
		for _, v := range [...]struct {
			name string
			v    int
		}{{"m", m}, {"n", n}, {"k", k}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}} {
			if v.v > math.MaxInt32 {
				panic(fmt.Sprintf("blas: %s: %s (%d) does not fit the library's 32-bit integers", fn, v.name, v.v))
			}
		}
	}
	if m == 0 || n == 0 {
		return
	}
	if k > 0 {
		if !fits(rowsA, colsA, lda, lenA) {
			panic(fmt.Sprintf("blas: %s: len(a) (%d) < %d×%d with lda %d", fn, lenA, rowsA, colsA, lda))
		}
		if !fits(rowsB, colsB, ldb, lenB) {
			panic(fmt.Sprintf("blas: %s: len(b) (%d) < %d×%d with ldb %d", fn, lenB, rowsB, colsB, ldb))
		}
	}
	if !fits(m, n, ldc, lenC) {
		panic(fmt.Sprintf("blas: %s: len(c) (%d) < %d×%d with ldc %d", fn, lenC, m, n, ldc))
	}
}

// fits reports whether a rows×cols matrix with row stride ld (rows, cols
// > 0, ld >= cols) lies within a slice of length n: (rows-1)·ld + cols <= n.
func fits(rows, cols, ld, n int) bool {
	return rows-1 <= (n-cols)/ld && (rows-1)*ld+cols <= n
}
