package blas

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadOrSkip returns the process's library or skips the test when there is
// none.
func loadOrSkip(tb testing.TB) *Library {
	tb.Helper()
	l, err := Load()
	if errors.Is(err, ErrNotFound) {
		tb.Skipf("no BLAS library on this machine (install libopenblas0 or set HORA_BLAS): %v", err)
	}
	require.NoError(tb, err)
	return l
}

// amdAVX512 reports whether this CPU is one that OpenBLAS 0.3.21 misdetects.
func amdAVX512() bool { return cpuVendor() == "AuthenticAMD" && hasAVX512() }

func TestLoad(t *testing.T) {
	l := loadOrSkip(t)
	t.Logf("Name=%q Vendor=%q CoreName=%q Path=%q CPU=%s AVX-512=%v OPENBLAS_CORETYPE=%q",
		l.Name(), l.Vendor(), l.CoreName(), l.Path(), cpuVendor(), hasAVX512(), os.Getenv("OPENBLAS_CORETYPE"))
	assert.NotEmpty(t, l.Name())
	if l.Vendor() != "" {
		assert.Equal(t, 1, l.Threads(), "the library must run one thread per call")
		assert.Contains(t, l.Name(), "(1 thread)")
	}
	l2, err := Load()
	require.NoError(t, err)
	assert.Same(t, l, l2, "Load opens the library once per process")
}

// TestCoreName checks the kernel set OpenBLAS runs in this process: the
// one coreType picks, or OpenBLAS's own choice when it picks none.
func TestCoreName(t *testing.T) {
	l := loadOrSkip(t)
	if l.Vendor() != "OpenBLAS" {
		t.Skipf("%s is not OpenBLAS", l.Name())
	}
	t.Logf("OpenBLAS runs %q kernels (CPU %s, AVX-512 %v): %s", l.CoreName(), cpuVendor(), hasAVX512(), l.Name())
	user, userSet := os.LookupEnv("OPENBLAS_CORETYPE")
	want, _ := coreType(user, userSet, os.Getenv("HORA_OPENBLAS_CORETYPE"), cpuVendor(), hasAVX512())
	if want == "" {
		want = user
	}
	if want == "" {
		t.Skip("OpenBLAS's own detection applies")
	}
	assert.True(t, strings.EqualFold(want, l.CoreName()), "want %q kernels, runs %q", want, l.CoreName())
	if amdAVX512() && os.Getenv("HORA_OPENBLAS_CORETYPE") == "" {
		assert.Equal(t, "SkylakeX", l.CoreName(), "an AMD CPU with AVX-512 must run the AVX-512 kernels")
	}
}

func TestCandidates(t *testing.T) {
	names, explicit, err := candidates("")
	require.NoError(t, err)
	assert.False(t, explicit)
	assert.Equal(t, defaultNames, names)
	assert.NotContains(t, names, "libblas.so.3", "the reference BLAS may be slow")

	for _, v := range []string{"none", "off", "OFF", " None "} {
		_, _, err := candidates(v)
		require.ErrorIs(t, err, ErrNotFound, v)
		assert.Contains(t, err.Error(), "HORA_BLAS")
	}

	names, explicit, err = candidates("/opt/lib/libopenblas.so")
	require.NoError(t, err)
	assert.True(t, explicit)
	assert.Equal(t, []string{"/opt/lib/libopenblas.so"}, names)
}

func TestCoreType(t *testing.T) {
	for _, tc := range []struct {
		name, user string
		userSet    bool
		force      string
		vendor     string
		avx512     bool
		want       string
		noted      bool
	}{
		{name: "Zen 4/5, unset: misdetected as Haswell", vendor: "AuthenticAMD", avx512: true, want: "SkylakeX"},
		{name: "Zen 3: AVX2 kernels are right", vendor: "AuthenticAMD"},
		{name: "Intel AVX-512: OpenBLAS detects it", vendor: "GenuineIntel", avx512: true},
		{name: "AVX-512 core kept", user: "Cooperlake", userSet: true, vendor: "GenuineIntel", avx512: true},
		{name: "Haswell on an AVX-512 CPU", user: "Haswell", userSet: true, vendor: "AuthenticAMD", avx512: true, want: "SkylakeX", noted: true},
		{name: "Haswell without AVX-512 kept", user: "Haswell", userSet: true, vendor: "AuthenticAMD"},
		{name: "HORA_OPENBLAS_CORETYPE wins", user: "SkylakeX", userSet: true, force: "Haswell", vendor: "AuthenticAMD", avx512: true, want: "Haswell"},
	} {
		core, note := coreType(tc.user, tc.userSet, tc.force, tc.vendor, tc.avx512)
		assert.Equal(t, tc.want, core, tc.name)
		assert.Equal(t, tc.noted, note != "", "%s: note %q", tc.name, note)
	}
}

func TestLoadErrors(t *testing.T) {
	_, err := load("none")
	require.ErrorIs(t, err, ErrNotFound)

	_, err = load("/nonexistent/libblas.so")
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), "/nonexistent/libblas.so")
	assert.Contains(t, err.Error(), "HORA_BLAS")
	t.Log(err)

	// A library without sgemm_: the C library itself.
	if _, err := Load(); err == nil {
		_, err = load("libc.so.6")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "sgemm_")
	}
}

// TestSetenvReachesC checks that os.Setenv changes the environment the C
// library sees (getenv), which is what OpenBLAS reads when it is opened:
// true with cgo and with purego's fake cgo under CGO_ENABLED=0.
func TestSetenvReachesC(t *testing.T) {
	if !haveCEnv() {
		t.Skip("libc's getenv is not reachable")
	}
	const key = "HORA_BLAS_TEST_SETENV"
	t.Setenv(key, "x") // restores at the end
	require.NoError(t, os.Setenv(key, "from-os.Setenv"))
	assert.Equal(t, "from-os.Setenv", cGetenv(key), "os.Setenv does not reach libc")
	require.NoError(t, os.Unsetenv(key))
	assert.Empty(t, cGetenv(key), "os.Unsetenv does not reach libc")

	restore := setTempEnv(map[string]string{key: "temp"}, nil)
	assert.Equal(t, "temp", cGetenv(key))
	assert.Equal(t, "temp", os.Getenv(key))
	restore()
	assert.Empty(t, cGetenv(key))
	_, ok := os.LookupEnv(key)
	assert.False(t, ok)

	t.Setenv(key, "user")
	restore = setTempEnv(map[string]string{key: "temp"}, nil)
	assert.Equal(t, "user", cGetenv(key), "a default does not replace the user's value")
	restore()
	assert.Equal(t, "user", cGetenv(key))
	restore = setTempEnv(nil, map[string]string{key: "override"})
	assert.Equal(t, "override", cGetenv(key), "an override does")
	restore()
	assert.Equal(t, "user", cGetenv(key), "and is undone")
}

// childResult is what TestChild reports to the parent test.
type childResult struct {
	Err, Name, Core, Vendor string
	NotFound                bool
	EnvAfter, CEnvAfter     string // OPENBLAS_CORETYPE after Load
}

// TestChild is run as a subprocess by TestLoadSubprocess with
// HORA_BLAS_TEST_CHILD=1: it loads the library in a fresh process (so that
// the environment it was given applies) and prints the result as JSON.
func TestChild(t *testing.T) {
	if os.Getenv("HORA_BLAS_TEST_CHILD") != "1" {
		t.Skip("run by TestLoadSubprocess")
	}
	var r childResult
	l, err := Load()
	if err != nil {
		r.Err, r.NotFound = err.Error(), errors.Is(err, ErrNotFound)
	} else {
		r.Name, r.Core, r.Vendor = l.Name(), l.CoreName(), l.Vendor()
		// A product through the library, for good measure.
		c := []float32{7}
		l.Sgemm(false, false, 1, 1, 2, 1, []float32{1, 2}, 2, []float32{3, 4}, 1, 0, c, 1)
		if c[0] != 11 {
			r.Err = fmt.Sprintf("1·3 + 2·4 = %v", c[0])
		}
	}
	r.EnvAfter, r.CEnvAfter = os.Getenv("OPENBLAS_CORETYPE"), cGetenv("OPENBLAS_CORETYPE")
	out, _ := json.Marshal(r)
	fmt.Printf("CHILD:%s\n", out)
}

// runChild runs TestChild in a new process with the environment of this
// one, less HORA_BLAS and OPENBLAS_CORETYPE, plus env.
func runChild(t *testing.T, env ...string) childResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.v")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HORA_BLAS=") && !strings.HasPrefix(kv, "OPENBLAS_CORETYPE=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HORA_BLAS_TEST_CHILD=1")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.ENOEXEC) {
		// Another architecture's test binary under an emulator
		// (make test-arm64: qemu-user without binfmt_misc).
		t.Skipf("cannot start a child test process of another architecture: %v", err)
	}
	require.NoError(t, err, "%s", out)
	for _, line := range strings.Split(string(out), "\n") {
		if s, ok := strings.CutPrefix(line, "CHILD:"); ok {
			var r childResult
			require.NoError(t, json.Unmarshal([]byte(s), &r))
			t.Logf("%v: %+v", env, r)
			return r
		}
	}
	t.Fatalf("no result from the child process:\n%s", out)
	return childResult{}
}

// TestLoadSubprocess checks Load's handling of the environment in fresh
// processes, since the library is opened once per process.
func TestLoadSubprocess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Run("none", func(t *testing.T) {
		for _, v := range []string{"none", "off"} {
			r := runChild(t, "HORA_BLAS="+v)
			assert.True(t, r.NotFound, "HORA_BLAS=%s must give ErrNotFound: %+v", v, r)
		}
	})
	t.Run("nonexistent", func(t *testing.T) {
		r := runChild(t, "HORA_BLAS=/nonexistent/libopenblas.so")
		assert.False(t, r.NotFound)
		assert.Contains(t, r.Err, "/nonexistent/libopenblas.so")
		assert.Contains(t, r.Err, "No such file", "the dlopen error is given")
	})

	if _, err := Load(); err != nil {
		t.Skipf("no BLAS library: %v", err)
	}
	t.Run("default", func(t *testing.T) {
		r := runChild(t)
		require.Empty(t, r.Err)
		assert.Empty(t, r.EnvAfter, "OPENBLAS_CORETYPE is removed again after Load")
		assert.Empty(t, r.CEnvAfter, "OPENBLAS_CORETYPE is removed again from libc's environment")
		if r.Vendor == "OpenBLAS" && amdAVX512() {
			assert.Equal(t, "SkylakeX", r.Core, "AMD with AVX-512 must run SkylakeX kernels")
		}
	})
	t.Run("user-coretype", func(t *testing.T) {
		r := runChild(t, "OPENBLAS_CORETYPE=Haswell")
		require.Empty(t, r.Err)
		assert.Equal(t, "Haswell", r.EnvAfter, "the user's OPENBLAS_CORETYPE is restored after loading")
		if r.Vendor != "OpenBLAS" {
			return
		}
		if hasAVX512() {
			assert.Equal(t, "SkylakeX", r.Core, "Haswell kernels on an AVX-512 CPU are replaced")
			assert.Contains(t, r.Name, "OPENBLAS_CORETYPE=Haswell replaced")
		} else {
			assert.Equal(t, "Haswell", r.Core, "the user's OPENBLAS_CORETYPE is kept")
		}
	})
	t.Run("forced-coretype", func(t *testing.T) {
		r := runChild(t, "OPENBLAS_CORETYPE=SkylakeX", "HORA_OPENBLAS_CORETYPE=Haswell")
		require.Empty(t, r.Err)
		assert.Equal(t, "SkylakeX", r.EnvAfter)
		if r.Vendor == "OpenBLAS" {
			assert.Equal(t, "Haswell", r.Core, "HORA_OPENBLAS_CORETYPE wins")
		}
	})
	t.Run("explicit", func(t *testing.T) {
		l, _ := Load()
		r := runChild(t, "HORA_BLAS="+l.Path())
		require.Empty(t, r.Err)
		assert.Equal(t, l.Vendor(), r.Vendor)
	})
}

// refGemm is the naive float64 C = alpha·op(A)·op(B) + beta·C, row-major;
// it also returns, per element, alpha·Σ|a||b| + |beta·c| for the error bound.
func refGemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) (want, mag []float64) {
	want = append([]float64(nil), c...)
	mag = make([]float64, len(c))
	for i := range m {
		for j := range n {
			var s, sa float64
			for p := range k {
				var x, y float64
				if transA {
					x = a[p*lda+i]
				} else {
					x = a[i*lda+p]
				}
				if transB {
					y = b[j*ldb+p]
				} else {
					y = b[p*ldb+j]
				}
				s += x * y
				sa += math.Abs(x * y)
			}
			idx := i*ldc + j
			if beta == 0 {
				want[idx] = alpha * s
				mag[idx] = math.Abs(alpha) * sa
			} else {
				want[idx] = alpha*s + beta*c[idx]
				mag[idx] = math.Abs(alpha)*sa + math.Abs(beta*c[idx])
			}
		}
	}
	return want, mag
}

// gemmCase is one product to check.
type gemmCase struct {
	transA, transB bool
	m, n, k        int
	padA, padB     int // lda - row length of A as stored, same for B
	padC           int
	alpha, beta    float64
	nanC           bool // fill C with NaN (beta must be 0)
}

func (tc gemmCase) String() string {
	return fmt.Sprintf("tA=%v,tB=%v,m=%d,n=%d,k=%d,pad=%d/%d/%d,alpha=%v,beta=%v,nanC=%v",
		tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.padA, tc.padB, tc.padC, tc.alpha, tc.beta, tc.nanC)
}

// operands makes A, B and C for tc as float64 with their strides, C's
// padding filled with a sentinel.
func (tc gemmCase) operands(rng *rand.Rand) (a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	rowsA, colsA := tc.m, tc.k
	if tc.transA {
		rowsA, colsA = tc.k, tc.m
	}
	rowsB, colsB := tc.k, tc.n
	if tc.transB {
		rowsB, colsB = tc.n, tc.k
	}
	lda, ldb, ldc = max(1, colsA)+tc.padA, max(1, colsB)+tc.padB, max(1, tc.n)+tc.padC
	fill := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.Float64()*2 - 1
		}
		return x
	}
	a = fill(max(0, rowsA*lda))
	b = fill(max(0, rowsB*ldb))
	c = fill(max(0, tc.m*ldc))
	for i := range tc.m {
		for j := range ldc {
			if j >= tc.n {
				c[i*ldc+j] = 1234
			} else if tc.nanC {
				c[i*ldc+j] = math.NaN()
			}
		}
	}
	return
}

func gemmCases() []gemmCase {
	var cases []gemmCase
	sizes := [][3]int{{1, 1, 1}, {2, 3, 4}, {7, 5, 3}, {17, 33, 9}, {64, 64, 64}, {31, 129, 67}, {100, 3, 250}, {3, 100, 1}}
	scalars := [][2]float64{{1, 0}, {1, 1}, {-0.5, 2}, {0, 0.5}, {1.5, 0}}
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			for si, s := range sizes {
				ab := scalars[si%len(scalars)]
				cases = append(cases,
					gemmCase{transA: tA, transB: tB, m: s[0], n: s[1], k: s[2], alpha: ab[0], beta: ab[1]},
					gemmCase{transA: tA, transB: tB, m: s[0], n: s[1], k: s[2], padA: 3, padB: 5, padC: 2, alpha: 1, beta: 0, nanC: true},
					gemmCase{transA: tA, transB: tB, m: s[0], n: s[1], k: s[2], padA: 1, padB: 0, padC: 7, alpha: -1, beta: -1},
				)
			}
		}
	}
	// Empty products: k == 0 scales C, m or n == 0 does nothing.
	for _, s := range [][3]int{{3, 4, 0}, {0, 4, 5}, {3, 0, 5}, {0, 0, 0}} {
		cases = append(cases,
			gemmCase{m: s[0], n: s[1], k: s[2], padC: 1, alpha: 1, beta: 0, nanC: true},
			gemmCase{m: s[0], n: s[1], k: s[2], padC: 1, alpha: 1, beta: 0.5},
			gemmCase{transA: true, transB: true, m: s[0], n: s[1], k: s[2], alpha: 2, beta: 1})
	}
	return cases
}

func TestDgemm(t *testing.T) {
	l := loadOrSkip(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range gemmCases() {
		a, lda, b, ldb, c, ldc := tc.operands(rng)
		want, mag := refGemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c, ldc)
		l.Dgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c, ldc)
		checkClose(t, tc, c, want, mag, ldc, 1e-14)
	}
}

func TestSgemm(t *testing.T) {
	l := loadOrSkip(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range gemmCases() {
		a, lda, b, ldb, c, ldc := tc.operands(rng)
		// Round the operands to float32 so that the reference is exact.
		a32, b32, c32 := to32(a), to32(b), to32(c)
		a, b, c = to64(a32), to64(b32), to64(c32)
		want, mag := refGemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c, ldc)
		l.Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, float32(tc.alpha), a32, lda, b32, ldb, float32(tc.beta), c32, ldc)
		checkClose(t, tc, to64(c32), want, mag, ldc, 1e-6)
	}
}

// checkClose compares got with want within tol·(k+2)·mag per element, and
// C's padding with the sentinel.
func checkClose(t *testing.T, tc gemmCase, got, want, mag []float64, ldc int, tol float64) {
	t.Helper()
	bad := 0
	for i := range tc.m {
		for j := range ldc {
			idx := i*ldc + j
			if j >= tc.n {
				if got[idx] != 1234 {
					t.Errorf("%v: C[%d,%d] beyond n was written: %v", tc, i, j, got[idx])
					bad++
				}
				continue
			}
			if math.IsNaN(got[idx]) || math.Abs(got[idx]-want[idx]) > tol*float64(tc.k+2)*(mag[idx]+1e-300) {
				if want[idx] == 0 && got[idx] == 0 {
					continue
				}
				t.Errorf("%v: C[%d,%d] = %v, want %v", tc, i, j, got[idx], want[idx])
				bad++
			}
			if bad > 5 {
				return
			}
		}
	}
}

func to32(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}

func to64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func TestGemmPanics(t *testing.T) {
	l := loadOrSkip(t)
	a := make([]float32, 6) // 2×3
	b := make([]float32, 6) // 3×2
	c := make([]float32, 4) // 2×2
	for _, tc := range []struct {
		want string
		f    func()
	}{
		{"m (-1) < 0", func() { l.Sgemm(false, false, -1, 2, 3, 1, a, 3, b, 2, 0, c, 2) }},
		{"n (-1) < 0", func() { l.Sgemm(false, false, 2, -1, 3, 1, a, 3, b, 2, 0, c, 2) }},
		{"k (-1) < 0", func() { l.Sgemm(false, false, 2, 2, -1, 1, a, 3, b, 2, 0, c, 2) }},
		{"lda (2)", func() { l.Sgemm(false, false, 2, 2, 3, 1, a, 2, b, 2, 0, c, 2) }},
		{"lda (1)", func() { l.Sgemm(true, false, 2, 2, 3, 1, a, 1, b, 2, 0, c, 2) }},
		{"ldb (1)", func() { l.Sgemm(false, false, 2, 2, 3, 1, a, 3, b, 1, 0, c, 2) }},
		{"ldb (2)", func() { l.Sgemm(false, true, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2) }},
		{"ldc (1)", func() { l.Sgemm(false, false, 2, 2, 3, 1, a, 3, b, 2, 0, c, 1) }},
		{"len(a) (5)", func() { l.Sgemm(false, false, 2, 2, 3, 1, a[:5], 3, b, 2, 0, c, 2) }},
		{"len(a) (6)", func() { l.Sgemm(false, false, 2, 2, 3, 1, a, 4, b, 2, 0, c, 2) }},
		{"len(b) (5)", func() { l.Sgemm(false, false, 2, 2, 3, 1, a, 3, b[:5], 2, 0, c, 2) }},
		{"len(c) (3)", func() { l.Sgemm(false, false, 2, 2, 3, 1, a, 3, b, 2, 0, c[:3], 2) }},
		{"len(c) (0)", func() { l.Sgemm(false, false, 2, 2, 0, 1, nil, 1, nil, 2, 0, c[:0], 2) }},
		{"Dgemm: len(b) (0)", func() { l.Dgemm(false, false, 1, 1, 1, 1, []float64{1}, 1, nil, 1, 0, []float64{0}, 1) }},
	} {
		msg := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			tc.f()
			return "no panic"
		}()
		assert.Contains(t, msg, tc.want)
	}
	if !l.ilp64 {
		assert.PanicsWithValue(t, "blas: Sgemm: ldc (2147483648) does not fit the library's 32-bit integers", func() {
			l.Sgemm(false, false, 1, 1, 1, 1, a, 1, b, 1, 0, c, math.MaxInt32+1)
		})
	}
	// k == 0 reads neither A nor B.
	assert.NotPanics(t, func() { l.Sgemm(false, false, 2, 2, 0, 1, nil, 1, nil, 2, 0, c, 2) })
}

// TestConcurrent calls Sgemm and Dgemm from several goroutines at once, on
// different C, as Hora's workers do.
func TestConcurrent(t *testing.T) {
	l := loadOrSkip(t)
	const workers, rounds = 4, 6
	type job struct {
		tc        gemmCase
		a, b, c   []float32
		want, mag []float64
		lda, ldb  int
		ldc       int
	}
	rng := rand.New(rand.NewPCG(5, 6))
	jobs := make([][]job, workers)
	for w := range workers {
		for r := range rounds {
			tc := gemmCase{transA: r%2 == 1, transB: w%2 == 1, m: 50 + 37*w + r, n: 120 - 11*r, k: 200 + 13*w, padA: r, padC: w, alpha: 1, beta: 0.5}
			if r == 0 {
				tc.m, tc.n, tc.k = 300, 257, 311 // big enough to run for a while
			}
			a, lda, b, ldb, c, ldc := tc.operands(rng)
			j := job{tc: tc, a: to32(a), b: to32(b), c: to32(c), lda: lda, ldb: ldb, ldc: ldc}
			j.want, j.mag = refGemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, to64(j.a), lda, to64(j.b), ldb, tc.beta, to64(j.c), ldc)
			jobs[w] = append(jobs[w], j)
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for _, j := range jobs[w] {
				l.Sgemm(j.tc.transA, j.tc.transB, j.tc.m, j.tc.n, j.tc.k, float32(j.tc.alpha), j.a, j.lda, j.b, j.ldb, float32(j.tc.beta), j.c, j.ldc)
				// A float64 product in between, on a C of its own.
				d := make([]float64, 16*16)
				l.Dgemm(false, true, 16, 16, 16, 1, make([]float64, 256), 16, make([]float64, 256), 16, 0, d, 16)
			}
		})
	}
	wg.Wait()
	for w := range workers {
		for _, j := range jobs[w] {
			checkClose(t, j.tc, to64(j.c), j.want, j.mag, j.ldc, 1e-6)
		}
	}
}

func TestAllocs(t *testing.T) {
	l := loadOrSkip(t)
	const m, n, k = 33, 65, 17
	a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	ad, bd, cd := make([]float64, m*k), make([]float64, k*n), make([]float64, m*n)
	for _, tr := range []struct {
		a, b     bool
		lda, ldb int
	}{{false, false, k, n}, {true, true, m, k}} {
		assert.Zero(t, testing.AllocsPerRun(200, func() {
			l.Sgemm(tr.a, tr.b, m, n, k, 1.5, a, tr.lda, b, tr.ldb, 0.5, c, n)
		}), "Sgemm allocates")
		assert.Zero(t, testing.AllocsPerRun(200, func() {
			l.Dgemm(tr.a, tr.b, m, n, k, 1.5, ad, tr.lda, bd, tr.ldb, 0.5, cd, n)
		}), "Dgemm allocates")
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		l.Sgemm(false, false, m, n, 0, 1, nil, 1, nil, n, 0, c, n)
	}), "Sgemm with k == 0 allocates")
}
