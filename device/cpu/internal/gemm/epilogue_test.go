package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSgemmEpilogueMatchesSeparatePass requires SgemmEpilogue to apply
// the epilogue and give the bits of Sgemm followed by the bias and clamp
// in a pass of their own (AddScalarClamp's operations: an add, a max, a
// min, NaN kept), on small products (tiles of every height and partial
// widths, k over several blocks, transposed operands, beta 0 and 1, NaN in
// the input), with every kernel on each of its paths (packed and small).
func TestSgemmEpilogueMatchesSeparatePass(t *testing.T) {
	forEachKernel(t, func(t *testing.T, _ *kernelInfo) { checkEpilogue(t) })
}

func checkEpilogue(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	inf := float32(math.Inf(1))
	for _, tc := range []struct {
		m, n, k        int
		transA, transB bool
		beta           float32
	}{
		{144, 416, 24, false, false, 0},
		{96, 33, 16, false, false, 0},
		{13, 7, 5, false, false, 0},
		{1, 1, 1, false, false, 0},
		{160, 49, 960, false, false, 0}, // three k blocks
		{30, 50, 800, false, false, 1},
		{20, 40, 30, true, false, 0},
		{20, 40, 30, false, true, 0.5},
		{2048, 2048, 64, false, false, 0}, // the packed path
	} {
		a := randFloats(r, tc.m*tc.k)
		b := randFloats(r, tc.k*tc.n)
		a[len(a)/2] = float32(math.NaN())
		lda, ldb := tc.k, tc.n
		if tc.transA {
			lda = tc.m
		}
		if tc.transB {
			ldb = tc.k
		}
		c0 := randFloats(r, tc.m*tc.n)
		bias := randFloats(r, tc.m)
		for _, clamp := range [][2]float32{{-inf, inf}, {0, inf}, {0, 6}} {
			want := append([]float32(nil), c0...)
			var ws Workspace
			Sgemm(&ws, tc.transA, tc.transB, tc.m, tc.n, tc.k, 1.5, a, lda, b, ldb, tc.beta, want, tc.n)
			plain := append([]float32(nil), want...)
			for i := range tc.m {
				for j := range tc.n {
					v := want[i*tc.n+j] + bias[i]
					if v < clamp[0] {
						v = clamp[0]
					}
					if v > clamp[1] {
						v = clamp[1]
					}
					want[i*tc.n+j] = v
				}
			}
			got := append([]float32(nil), c0...)
			applied := SgemmEpilogue(&ws, tc.transA, tc.transB, tc.m, tc.n, tc.k, 1.5, a, lda, b, ldb, tc.beta, got, tc.n,
				Epilogue{Bias: bias, Lo: clamp[0], Hi: clamp[1]})
			if !applied {
				t.Fatalf("%+v (path %d): the epilogue was not applied", tc, forcePath)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("%+v clamp %v (path %d): C[%d] = %v, want %v (without the epilogue %v)", tc, clamp, forcePath, i, got[i], want[i], plain[i])
				}
			}
		}
	}
}

func randFloats(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = r.Float32()*2 - 1
	}
	return s
}

// TestSgemmEpilogueAllocatesNothing requires a steady-state call on the
// small path (several row bands, several k blocks) to allocate nothing.
func TestSgemmEpilogueAllocatesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	m, n, k := 60, 70, 900
	a, b, c, bias := randFloats(r, m*k), randFloats(r, k*n), make([]float32, m*n), randFloats(r, m)
	var ws Workspace
	e := Epilogue{Bias: bias, Lo: 0, Hi: 6}
	if !SgemmEpilogue(&ws, false, false, m, n, k, 1, a, k, b, n, 0, c, n, e) {
		t.Skip("the product does not take the small path on this machine")
	}
	if allocs := testing.AllocsPerRun(10, func() {
		SgemmEpilogue(&ws, false, false, m, n, k, 1, a, k, b, n, 0, c, n, e)
	}); allocs != 0 {
		t.Fatalf("SgemmEpilogue allocates %v times per call, want 0", allocs)
	}
}
