package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPackedBMatchesSgemm: for every kernel, in all four layouts, on
// both paths, with k over one and several k blocks, a packed op(B) gives
// SgemmEpilogue's result bit for bit on the column range asked for (from
// the first column, from a panel boundary inside, to the end) and leaves
// every other element of C as it was.
func TestPackedBMatchesSgemm(t *testing.T) {
	defer setKernel(kernels[0].name)
	for _, kern := range kernels {
		require.True(t, setKernel(kern.name))
		nr := kern.nr
		rng := rand.New(rand.NewPCG(31, 32))
		var ws Workspace
		i := 0
		for _, tr := range transCombos {
			for _, m := range []int{1, 2, kern.mr + 1, 37} {
				for _, n := range []int{1, nr - 1, nr + 3, 3*nr + 5} {
					for _, k := range []int{1, 17, kern.kc + 9} {
						for _, path := range []int{pathSmall, pathPacked} {
							ab := alphaBetas[i%len(alphaBetas)]
							tc := gemmCase{transA: tr[0], transB: tr[1], m: m, n: n, k: k, alpha: ab[0], beta: ab[1],
								padA: i % 3, padB: i % 2 * 5, padC: i % 4}
							i++
							name := fmt.Sprintf("%s/%v/path%d", kern.name, tc, path)
							testPackedB(t, name, rng, &ws, tc, path, i%2 == 0)
						}
					}
				}
			}
		}
	}
}

func testPackedB(t *testing.T, name string, rng *rand.Rand, ws *Workspace, tc gemmCase, path int, withEpilogue bool) {
	t.Helper()
	saved := forcePath
	defer func() { forcePath = saved }()
	forcePath = path
	d := newGemmData(rng, tc)
	var e Epilogue
	if withEpilogue {
		e = Epilogue{Bias: randMatrix(rng, 1, tc.m, tc.m), Lo: 0, Hi: float32(math.Inf(1))}
	}
	pb := make([]float32, PackedBSize(tc.k, tc.n))
	PackB(pb, tc.transB, d.b, d.ldb, tc.k, tc.n)

	want := slices.Clone(d.cbuf)
	if withEpilogue {
		SgemmEpilogue(ws, tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, d.a, d.lda, d.b, d.ldb, tc.beta, want[d.coff:], d.ldc, e)
	} else {
		Sgemm(ws, tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, d.a, d.lda, d.b, d.ldb, tc.beta, want[d.coff:], d.ldc)
	}
	nr := PanelWidth()
	ranges := [][2]int{{0, tc.n}}
	if tc.n > nr {
		ranges = append(ranges, [2]int{nr, tc.n}, [2]int{0, nr})
	}
	for _, r := range ranges {
		got := slices.Clone(d.cbuf)
		SgemmPackedB(ws, tc.transA, tc.m, tc.n, tc.k, r[0], r[1], tc.alpha, d.a, d.lda, pb, tc.beta, got[d.coff:], d.ldc, e)
		for x := range got {
			w := want[x]
			if row, col := (x-d.coff)/d.ldc, (x-d.coff)%d.ldc; x < d.coff || row >= tc.m || col < r[0] || col >= r[1] {
				w = d.cbuf[x] // outside the range: untouched
			}
			if math.Float32bits(got[x]) != math.Float32bits(w) && !(got[x] != got[x] && w != w) {
				t.Fatalf("%s, columns [%d, %d): element %d of C's storage is %v, want %v", name, r[0], r[1], x, got[x], w)
			}
		}
	}
}

// TestPackedBChecksArguments requires a short buffer and a column range
// off the panels to panic with a message naming them.
func TestPackedBChecksArguments(t *testing.T) {
	nr := PanelWidth()
	b := make([]float32, 4*(nr+1))
	require.PanicsWithValue(t, fmt.Sprintf("gemm: PackB of a 4×%d op(B) into 3 floats, need %d", nr+1, PackedBSize(4, nr+1)),
		func() { PackB(make([]float32, 3), false, b, nr+1, 4, nr+1) })
	pb := make([]float32, PackedBSize(4, nr+1))
	PackB(pb, false, b, nr+1, 4, nr+1)
	var ws Workspace
	a, c := make([]float32, 4), make([]float32, nr+1)
	require.PanicsWithValue(t, fmt.Sprintf("gemm: SgemmPackedB of columns [1, %d) of %d (panels of %d)", nr+1, nr+1, nr),
		func() { SgemmPackedB(&ws, false, 1, nr+1, 4, 1, nr+1, 1, a, 4, pb, 0, c, nr+1, Epilogue{}) })
	require.PanicsWithValue(t, fmt.Sprintf("gemm: SgemmPackedB of a 4×%d op(B) from 5 floats, need %d", nr+1, PackedBSize(4, nr+1)),
		func() { SgemmPackedB(&ws, false, 1, nr+1, 4, 0, nr+1, 1, a, 4, pb[:5], 0, c, nr+1, Epilogue{}) })
}

// TestPackBColumnsFillsPackB: for every kernel, in both layouts of B,
// with k over one and several k blocks, packing op(B)'s panels in two
// pieces with PackBColumns gives PackB's layout; a range that starts
// inside a panel or ends past n panics.
func TestPackBColumnsFillsPackB(t *testing.T) {
	defer setKernel(kernels[0].name)
	for _, kern := range kernels {
		require.True(t, setKernel(kern.name))
		nr := kern.nr
		rng := rand.New(rand.NewPCG(33, 34))
		for _, transB := range []bool{false, true} {
			for _, n := range []int{1, nr + 3, 3*nr + 5} {
				for _, k := range []int{1, 17, kern.kc + 9} {
					rb, cb := k, n
					if transB {
						rb, cb = n, k
					}
					b := randMatrix(rng, rb, cb, cb)
					want := make([]float32, PackedBSize(k, n))
					PackB(want, transB, b, cb, k, n)
					got := make([]float32, PackedBSize(k, n))
					panels := (n + nr - 1) / nr
					PackBColumns(got, transB, b, cb, k, n, 0, panels/2*nr)
					PackBColumns(got, transB, b, cb, k, n, panels/2*nr, n)
					used := k * panels * nr
					require.Equal(t, want[:used], got[:used], "%s, transB %v, k %d, n %d", kern.name, transB, k, n)
				}
			}
		}
		b := make([]float32, 64*64)
		dst := make([]float32, PackedBSize(64, 64))
		require.Panics(t, func() { PackBColumns(dst, false, b, 64, 64, 64, 1, 64) }, "%s: a range inside a panel", kern.name)
		require.Panics(t, func() { PackBColumns(dst, false, b, 64, 64, 64, 0, 65) }, "%s: past n", kern.name)
	}
}
