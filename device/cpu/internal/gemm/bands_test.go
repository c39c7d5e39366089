package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// toBandsForTest lays the m×k row-major a out in bands of mr rows, as
// SgemmBands reads A.
func toBandsForTest(a []float32, m, k, mr int) []float32 {
	out := make([]float32, m*k)
	for b0 := 0; b0 < m; b0 += mr {
		rows := min(mr, m-b0)
		for i := range rows {
			for p := range k {
				out[b0*k+p*rows+i] = a[(b0+i)*k+p]
			}
		}
	}
	return out
}

// TestSgemmBandsMatchesBands checks that SgemmBands gives each band the
// bits of SgemmEpilogue on that band (op(A) the band read transposed), on
// both its loop orders (a B within and past the L2 block: one band, a
// partial last band, k split into blocks), with and without an epilogue,
// writing nothing outside C.
func TestSgemmBandsMatchesBands(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	setupBlocking()
	mr := active.mr
	for _, d := range [][3]int{ // m, n, k
		{16, 12544, 32}, {24, 3136, 144}, {2*mr + 3, 12000, 40}, {mr, 9000, 32}, {3, 50, 7}, {40, 300, 500}, {37, 20000, 24},
	} {
		m, n, k := d[0], d[1], d[2]
		for _, withBias := range []bool{false, true} {
			t.Run(fmt.Sprintf("%dx%dx%d/bias=%v", m, n, k, withBias), func(t *testing.T) {
				a := randSlice(r, m*k)
				banded := toBandsForTest(a, m, k, mr)
				ldb, ldc := n+3, n+5
				b := randSlice(r, k*ldb)
				var e Epilogue
				if withBias {
					e = Epilogue{Bias: randSlice(r, m), Lo: 0, Hi: 6}
				}
				got := make([]float32, m*ldc)
				for i := range got {
					got[i] = float32(math.NaN())
				}
				want := slices.Clone(got)
				ws := new(Workspace)
				SgemmBands(ws, m, n, k, banded, b, ldb, got, ldc, e)
				for b0 := 0; b0 < m; b0 += mr {
					rows := min(mr, m-b0)
					band := e
					if e.Bias != nil {
						band.Bias = e.Bias[b0 : b0+rows]
					}
					sgemm(ws, true, false, rows, n, k, 1, banded[b0*k:], rows, b, ldb, 0, want[b0*ldc:], ldc, band)
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("element (%d, %d) = %g, band by band %g", i/ldc, i%ldc, got[i], want[i])
					}
				}
			})
		}
	}
}
