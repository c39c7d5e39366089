package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// forEachKernel runs f as a subtest for every micro-kernel this CPU can run
// (avx512, avx2, go on an AVX-512 machine), selecting it first; a kernel
// with a small-product path twice, every product forced through the packed
// path ("avx512/packed"), then through the small one ("avx512/small").
func forEachKernel(t *testing.T, f func(t *testing.T, kern *kernelInfo)) {
	t.Helper()
	defer setKernel(kernels[0].name)
	defer func() { forcePath = pathAuto }()
	for _, kern := range kernels {
		paths := map[string]int{"": pathAuto}
		if kern.small != nil {
			paths = map[string]int{"/packed": pathPacked, "/small": pathSmall}
		}
		for _, suffix := range []string{"", "/packed", "/small"} {
			path, ok := paths[suffix]
			if !ok {
				continue
			}
			t.Run(kern.name+suffix, func(t *testing.T) {
				require.True(t, setKernel(kern.name))
				forcePath = path
				f(t, kern)
			})
		}
	}
}

// sentinel fills the parts of the test buffers that Sgemm must neither
// read (A and B) nor write (C): NaN in A and B so that reading them spoils
// the result, an unlikely finite value in C.
const cSentinel = float32(-7777.25)

// gemmCase is one Sgemm call of the tests, on sub-matrix views: every
// matrix is stored with extra columns (pad) and C starts at an offset in a
// larger buffer, all of it filled with sentinels.
type gemmCase struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	padA, padB     int // lda - row length, ldb - row length
	padC           int // ldc - n
	nanC           bool
}

func (tc gemmCase) String() string {
	return fmt.Sprintf("tA=%v tB=%v m=%d n=%d k=%d alpha=%v beta=%v pad=%d,%d,%d nanC=%v",
		tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, tc.beta, tc.padA, tc.padB, tc.padC, tc.nanC)
}

// gemmData holds the operands of a gemmCase.
type gemmData struct {
	tc            gemmCase
	a, b          []float32
	lda, ldb, ldc int
	cbuf          []float32 // C's storage, with sentinels around it
	coff          int       // C's first element in cbuf
	c0            []float32 // C before the call (m×n, dense)
}

func newGemmData(rng *rand.Rand, tc gemmCase) *gemmData {
	d := &gemmData{tc: tc}
	ra, ca := tc.m, tc.k
	if tc.transA {
		ra, ca = tc.k, tc.m
	}
	rb, cb := tc.k, tc.n
	if tc.transB {
		rb, cb = tc.n, tc.k
	}
	d.lda, d.ldb, d.ldc = max(1, ca+tc.padA), max(1, cb+tc.padB), max(1, tc.n+tc.padC)
	d.a = randMatrix(rng, ra, ca, d.lda)
	d.b = randMatrix(rng, rb, cb, d.ldb)
	// C starts at row 1, column 1 of a buffer with a row above and below.
	d.coff = d.ldc + min(1, tc.padC)
	d.cbuf = make([]float32, (tc.m+2)*d.ldc+1)
	for i := range d.cbuf {
		d.cbuf[i] = cSentinel
	}
	d.c0 = make([]float32, tc.m*tc.n)
	for i := range tc.m {
		for j := range tc.n {
			v := 2*rng.Float32() - 1
			if tc.nanC {
				v = float32(math.NaN())
			}
			d.c0[i*tc.n+j] = v
			d.cbuf[d.coff+i*d.ldc+j] = v
		}
	}
	return d
}

// randMatrix returns a rows×cols matrix with row stride ld, uniform in
// [-1, 1), NaN in the padding.
func randMatrix(rng *rand.Rand, rows, cols, ld int) []float32 {
	s := make([]float32, rows*ld)
	for i := range s {
		if i%ld < cols {
			s[i] = 2*rng.Float32() - 1
		} else {
			s[i] = float32(math.NaN())
		}
	}
	return s
}

func (d *gemmData) opA(i, p int) float64 {
	if d.tc.transA {
		return float64(d.a[p*d.lda+i])
	}
	return float64(d.a[i*d.lda+p])
}

func (d *gemmData) opB(p, j int) float64 {
	if d.tc.transB {
		return float64(d.b[j*d.ldb+p])
	}
	return float64(d.b[p*d.ldb+j])
}

// run calls Sgemm on the case's operands.
func (d *gemmData) run(ws *Workspace) {
	tc := d.tc
	Sgemm(ws, tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, d.a, d.lda, d.b, d.ldb, tc.beta, d.cbuf[d.coff:], d.ldc)
}

// check compares C with a float64 reference: |got - want| must be within
// 2e-7*(k+2) of the sum of the magnitudes of the terms (a bound on float32
// rounding, about 3.4·k·eps), and every sentinel must be intact.
func (d *gemmData) check(t *testing.T) {
	t.Helper()
	tc := d.tc
	bad := 0
	for i := range tc.m {
		for j := range tc.n {
			var sum, mag float64
			for p := range tc.k {
				x := d.opA(i, p) * d.opB(p, j)
				sum += x
				mag += math.Abs(x)
			}
			want := float64(tc.alpha) * sum
			mag *= math.Abs(float64(tc.alpha))
			if tc.beta != 0 {
				c0 := float64(d.c0[i*tc.n+j])
				want += float64(tc.beta) * c0
				mag += math.Abs(float64(tc.beta) * c0)
			}
			got := float64(d.cbuf[d.coff+i*d.ldc+j])
			if tol := 2e-7*float64(tc.k+2)*mag + 1e-30; !(math.Abs(got-want) <= tol) {
				if bad++; bad <= 5 {
					t.Errorf("%v: C[%d][%d] = %v, want %v (tolerance %.3g)", tc, i, j, got, want, tol)
				}
			}
		}
	}
	for idx, v := range d.cbuf {
		r, col := (idx-d.coff)/d.ldc, (idx-d.coff)%d.ldc
		if idx >= d.coff && r < tc.m && col < tc.n {
			continue
		}
		if v != cSentinel {
			if bad++; bad <= 5 {
				t.Errorf("%v: element %d outside C (row %d, column %d) changed to %v", tc, idx, r, col, v)
			}
		}
	}
	if bad > 5 {
		t.Errorf("%v: %d bad elements in all", tc, bad)
	}
}

func runCase(t *testing.T, rng *rand.Rand, ws *Workspace, tc gemmCase) {
	t.Helper()
	d := newGemmData(rng, tc)
	d.run(ws)
	d.check(t)
}

var transCombos = [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}}

var alphaBetas = [][2]float32{{1, 0}, {1, 1}, {1, 0.3}, {-0.5, 0}, {-0.5, 1}, {-0.5, 0.3}}

// testSizes returns the sizes tried for m and n with a kernel: tiny ones,
// around the tile sizes, and primes.
func testSizes(kern *kernelInfo) []int {
	s := []int{1, 2, 3, kern.mr - 1, kern.mr, kern.mr + 1, kern.nr - 1, kern.nr, kern.nr + 1, 37, 67, 131}
	slices.Sort(s)
	return slices.Compact(s)
}

// TestSgemmShapes covers all four transpose combinations on every pair of
// test sizes for m and n, with k, alpha/beta and the padding varying along.
func TestSgemmShapes(t *testing.T) {
	forEachKernel(t, func(t *testing.T, kern *kernelInfo) {
		rng := rand.New(rand.NewPCG(1, 2))
		var ws Workspace
		sizes := testSizes(kern)
		ks := []int{1, 2, 3, 16, 17, 37, 67, 131}
		n := 0
		for _, tr := range transCombos {
			for _, m := range sizes {
				for _, nn := range sizes {
					ab := alphaBetas[n%len(alphaBetas)]
					runCase(t, rng, &ws, gemmCase{
						transA: tr[0], transB: tr[1], m: m, n: nn, k: ks[n%len(ks)],
						alpha: ab[0], beta: ab[1], padA: n % 3, padB: n % 2 * 5, padC: n % 4,
					})
					n++
				}
			}
		}
	})
}

// TestSgemmAlphaBeta tries every alpha/beta pair on a few shapes.
func TestSgemmAlphaBeta(t *testing.T) {
	forEachKernel(t, func(t *testing.T, kern *kernelInfo) {
		rng := rand.New(rand.NewPCG(3, 4))
		var ws Workspace
		for _, ab := range alphaBetas {
			for _, tr := range transCombos {
				for _, sz := range [][3]int{{kern.mr, kern.nr, 5}, {kern.mr + 1, kern.nr - 1, 67}, {37, 67, 131}} {
					runCase(t, rng, &ws, gemmCase{transA: tr[0], transB: tr[1], m: sz[0], n: sz[1], k: sz[2], alpha: ab[0], beta: ab[1]})
				}
			}
		}
	})
}

// TestSgemmLarge uses sizes bigger than the kernels' blocking in every
// dimension but nc, with sub-matrix views.
func TestSgemmLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large GEMM in -short mode")
	}
	forEachKernel(t, func(t *testing.T, kern *kernelInfo) {
		rng := rand.New(rand.NewPCG(5, 6))
		var ws Workspace
		for i, tr := range transCombos {
			runCase(t, rng, &ws, gemmCase{
				transA: tr[0], transB: tr[1], m: 300, n: 520, k: 700,
				alpha: -0.5, beta: float32(i%2) * 0.3, padA: 3, padB: 7, padC: 5,
			})
		}
	})
}

// TestSgemmSmallBlocks shrinks the blocking sizes so that small matrices
// span several blocks in every dimension, with and without the last block
// of each being partial.
func TestSgemmSmallBlocks(t *testing.T) {
	forEachKernel(t, func(t *testing.T, kern *kernelInfo) {
		saved := *kern
		defer func() { *kern = saved }()
		rng := rand.New(rand.NewPCG(7, 8))
		var ws Workspace
		for _, bl := range [][3]int{{5, 1, 1}, {16, 2, 2}, {40, 3, 2}} {
			kern.kc, kern.mc, kern.nc = bl[0], bl[1]*kern.mr, bl[2]*kern.nr
			for i, tr := range transCombos {
				for _, sz := range [][3]int{
					{3*kern.mr + 1, 3*kern.nr - 1, 3*bl[0] + 2},
					{4 * kern.mr, 2 * kern.nr, 2 * bl[0]},
					{2*kern.mr - 1, 5*kern.nr + 3, 101},
				} {
					runCase(t, rng, &ws, gemmCase{
						transA: tr[0], transB: tr[1], m: sz[0], n: sz[1], k: sz[2],
						alpha: -0.5, beta: float32(i) * 0.25, padA: 2, padB: 1, padC: 3,
					})
				}
			}
		}
	})
}

// TestSgemmBetaZeroNaN: with beta == 0 C is not read, so NaNs in it
// disappear, including when k == 0 or alpha == 0.
func TestSgemmBetaZeroNaN(t *testing.T) {
	forEachKernel(t, func(t *testing.T, kern *kernelInfo) {
		rng := rand.New(rand.NewPCG(9, 10))
		var ws Workspace
		for _, tr := range transCombos {
			for _, sz := range [][3]int{{1, 1, 1}, {kern.mr + 3, kern.nr + 5, 40}, {67, 37, 131}, {5, 7, 0}} {
				for _, alpha := range []float32{1, -0.5, 0} {
					tc := gemmCase{transA: tr[0], transB: tr[1], m: sz[0], n: sz[1], k: sz[2], alpha: alpha, padC: 2, nanC: true}
					d := newGemmData(rng, tc)
					d.run(&ws)
					d.check(t)
					for i := range tc.m {
						for j := range tc.n {
							v := d.cbuf[d.coff+i*d.ldc+j]
							require.False(t, math.IsNaN(float64(v)), "%v: C[%d][%d] is NaN", tc, i, j)
						}
					}
				}
			}
		}
	})
}

// TestSgemmScaleOnly: k == 0 or alpha == 0 means C = beta*C; A and B are
// not read (they are all NaN here).
func TestSgemmScaleOnly(t *testing.T) {
	forEachKernel(t, func(t *testing.T, kern *kernelInfo) {
		var ws Workspace
		nan := float32(math.NaN())
		for _, k := range []int{0, 3} {
			for _, alpha := range []float32{0, 1} {
				if k != 0 && alpha != 0 {
					continue
				}
				for _, beta := range []float32{0, 1, 0.3} {
					const m, n, ldc = 3, 4, 6
					a := slices.Repeat([]float32{nan}, m*max(k, 1))
					b := slices.Repeat([]float32{nan}, max(k, 1)*n)
					c := make([]float32, m*ldc)
					for i := range c {
						c[i] = float32(i)
					}
					Sgemm(&ws, false, false, m, n, k, alpha, a, max(k, 1), b, n, beta, c, ldc)
					for i := range m {
						for j := range ldc {
							want := float32(i*ldc + j)
							if j < n {
								want *= beta
							}
							require.Equal(t, want, c[i*ldc+j], "k=%d alpha=%v beta=%v C[%d][%d]", k, alpha, beta, i, j)
						}
					}
				}
			}
		}
	})
}

// TestSgemmEmpty: m == 0 or n == 0 touches nothing, and accepts empty
// slices.
func TestSgemmEmpty(t *testing.T) {
	var ws Workspace
	Sgemm(&ws, false, false, 0, 0, 0, 1, nil, 1, nil, 1, 0, nil, 1)
	Sgemm(&ws, false, false, 0, 5, 0, 1, nil, 1, nil, 5, 0, nil, 5)
	Sgemm(&ws, true, true, 0, 5, 3, 1, nil, 1, make([]float32, 15), 3, 0, nil, 5)
	c := []float32{1, 2, 3}
	Sgemm(&ws, false, false, 3, 0, 2, 1, make([]float32, 6), 2, nil, 1, 0, c, 1)
	require.Equal(t, []float32{1, 2, 3}, c)
}

// TestSgemmSplitDeterministic: computing C in two row halves or two column
// halves, on two goroutines with a Workspace each, gives bit for bit the
// result of a single call, wherever the split falls.
func TestSgemmSplitDeterministic(t *testing.T) {
	forEachKernel(t, func(t *testing.T, kern *kernelInfo) {
		rng := rand.New(rand.NewPCG(11, 12))
		const m, n, k = 101, 150, 421
		for _, tr := range transCombos {
			d := newGemmData(rng, gemmCase{transA: tr[0], transB: tr[1], m: m, n: n, k: k, alpha: -0.5, beta: 0.3})
			var ws [2]Workspace
			whole := slices.Clone(d.cbuf)
			Sgemm(&ws[0], tr[0], tr[1], m, n, k, -0.5, d.a, d.lda, d.b, d.ldb, 0.3, whole[d.coff:], d.ldc)
			for _, split := range []int{1, kern.mr, 50, 2*kern.mr + 1, m - 1} {
				rows := slices.Clone(d.cbuf)
				var wg sync.WaitGroup
				wg.Go(func() {
					var a []float32 // rows split.. of op(A)
					if tr[0] {
						a = d.a[split:]
					} else {
						a = d.a[split*d.lda:]
					}
					Sgemm(&ws[1], tr[0], tr[1], m-split, n, k, -0.5, a, d.lda, d.b, d.ldb, 0.3, rows[d.coff+split*d.ldc:], d.ldc)
				})
				Sgemm(&ws[0], tr[0], tr[1], split, n, k, -0.5, d.a, d.lda, d.b, d.ldb, 0.3, rows[d.coff:], d.ldc)
				wg.Wait()
				require.Equal(t, whole, rows, "rows split at %d, trans %v", split, tr)
			}
			for _, split := range []int{1, kern.nr, 75, kern.nr + 3, n - 1} {
				cols := slices.Clone(d.cbuf)
				var wg sync.WaitGroup
				wg.Go(func() {
					var b []float32 // columns split.. of op(B)
					if tr[1] {
						b = d.b[split*d.ldb:]
					} else {
						b = d.b[split:]
					}
					Sgemm(&ws[1], tr[0], tr[1], m, n-split, k, -0.5, d.a, d.lda, b, d.ldb, 0.3, cols[d.coff+split:], d.ldc)
				})
				Sgemm(&ws[0], tr[0], tr[1], m, split, k, -0.5, d.a, d.lda, d.b, d.ldb, 0.3, cols[d.coff:], d.ldc)
				wg.Wait()
				require.Equal(t, whole, cols, "columns split at %d, trans %v", split, tr)
			}
		}
	})
}

// TestSgemmAllocs: once a Workspace has grown, Sgemm allocates nothing.
func TestSgemmAllocs(t *testing.T) {
	forEachKernel(t, func(t *testing.T, kern *kernelInfo) {
		rng := rand.New(rand.NewPCG(13, 14))
		var ws Workspace
		big := newGemmData(rng, gemmCase{m: 150, n: 170, k: 450, alpha: 1, beta: 0.5, padC: 3})
		small := newGemmData(rng, gemmCase{transA: true, transB: true, m: 7, n: 9, k: 11, alpha: 1, beta: 0})
		big.run(&ws) // warm-up: the workspace grows
		allocs := testing.AllocsPerRun(5, func() {
			big.run(&ws)
			small.run(&ws)
		})
		assert.Zero(t, allocs)
	})
}

// TestSgemmPanics checks the argument checks and their messages.
func TestSgemmPanics(t *testing.T) {
	s := func(n int) []float32 { return make([]float32, n) }
	var ws Workspace
	for _, tc := range []struct {
		name string
		call func()
		msg  string
	}{
		{"nil workspace", func() { Sgemm(nil, false, false, 1, 1, 1, 1, s(1), 1, s(1), 1, 0, s(1), 1) },
			"gemm: nil *Workspace"},
		{"negative m", func() { Sgemm(&ws, false, false, -1, 2, 3, 1, s(6), 3, s(6), 2, 0, s(4), 2) },
			"gemm: negative dimension: m = -1, n = 2, k = 3"},
		{"negative n", func() { Sgemm(&ws, false, false, 1, -2, 3, 1, s(6), 3, s(6), 2, 0, s(4), 2) },
			"gemm: negative dimension: m = 1, n = -2, k = 3"},
		{"negative k", func() { Sgemm(&ws, false, false, 1, 2, -3, 1, s(6), 3, s(6), 2, 0, s(4), 2) },
			"gemm: negative dimension: m = 1, n = 2, k = -3"},
		{"lda", func() { Sgemm(&ws, false, false, 2, 2, 3, 1, s(6), 2, s(6), 2, 0, s(4), 2) },
			"gemm: lda = 2 < max(1, 3): A is 2×3, so its row stride must be at least 3"},
		{"lda transposed", func() { Sgemm(&ws, true, false, 4, 2, 3, 1, s(12), 3, s(6), 2, 0, s(8), 2) },
			"gemm: lda = 3 < max(1, 4): A is 3×4 (transposed), so its row stride must be at least 4"},
		{"lda zero", func() { Sgemm(&ws, false, false, 2, 2, 0, 1, nil, 0, nil, 2, 0, s(4), 2) },
			"gemm: lda = 0 < max(1, 0)"},
		{"ldb", func() { Sgemm(&ws, false, false, 2, 5, 3, 1, s(6), 3, s(15), 4, 0, s(10), 5) },
			"gemm: ldb = 4 < max(1, 5): B is 3×5, so its row stride must be at least 5"},
		{"ldb transposed", func() { Sgemm(&ws, false, true, 2, 5, 3, 1, s(6), 3, s(15), 2, 0, s(10), 5) },
			"gemm: ldb = 2 < max(1, 3): B is 5×3 (transposed)"},
		{"ldc", func() { Sgemm(&ws, false, false, 2, 5, 3, 1, s(6), 3, s(15), 5, 0, s(10), 4) },
			"gemm: ldc = 4 < max(1, 5): C is 2×5"},
		{"short a", func() { Sgemm(&ws, false, false, 2, 2, 3, 1, s(6), 4, s(6), 2, 0, s(4), 2) },
			"gemm: len(a) = 6 < 7: A is 2×3 with lda = 4 needs (2-1)*4+3 elements"},
		{"short b", func() { Sgemm(&ws, false, true, 2, 2, 3, 1, s(6), 3, s(5), 3, 0, s(4), 2) },
			"gemm: len(b) = 5 < 6: B is 2×3 (transposed) with ldb = 3 needs (2-1)*3+3 elements"},
		{"short c", func() { Sgemm(&ws, false, false, 2, 2, 3, 1, s(6), 3, s(6), 2, 0, s(4), 3) },
			"gemm: len(c) = 4 < 5: C is 2×2 with ldc = 3 needs (2-1)*3+2 elements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r, "no panic")
				require.Contains(t, fmt.Sprint(r), tc.msg)
			}()
			tc.call()
		})
	}
}

// TestKernel: Kernel names the first of the available kernels, and the
// pure-Go one is always available.
func TestKernel(t *testing.T) {
	require.Contains(t, []string{"avx512", "avx2", "neon", "go"}, Kernel())
	require.Equal(t, kernels[0].name, Kernel())
	require.Equal(t, "go", kernels[len(kernels)-1].name)
	t.Logf("kernel %s; available: %d", Kernel(), len(kernels))
}
