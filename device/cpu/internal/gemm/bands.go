package gemm

import "fmt"

// stripBands is the most bands of rows SgemmBands runs strip after strip.
// mobilenet_v2 at batch 32 on 2 Zen 5 threads: its 32→16 layer on 112×112
// (two bands, of 14 rows and 2) 2.9 → 2.3 ms and its 144→24 layer on
// 56×56 3.0 → 2.8; but its stem (3→32, three bands over a 1.35 MB column
// matrix) 3.7 → 4.2 ms and its 16→96 layer (seven bands) 6.4 → 7.0: a
// strip then writes a tile into each of many rows of C far apart.
const stripBands = 2

// SgemmBands computes C (m×n, row stride ldc) = A·B followed by the
// epilogue e (a nil Bias: none), with A (m×k) laid out in bands of
// Blocking().MR rows, each band k-major: element (b0+i, p) of the band
// starting at row b0 lies at a[b0·k + p·rows + i], rows being the band's
// height (MR, or what is left of A). That is the layout of constant
// convolution weights kept in bands, which a tile then reads as one
// stream. B is k×n as stored (row stride ldb).
//
// Each band gets the bits SgemmEpilogue gives it (band by band, op(A) the
// band read transposed, lda = rows). When B's k block exceeds L2 (twice
// the packed path's L2 block) and A has at most stripBands bands, every
// band runs over a strip of B before the next strip, so B streams from
// memory once instead of once per band. It reports whether it applied e
// (see SgemmEpilogue), and panics on bad arguments.
func SgemmBands(ws *Workspace, m, n, k int, a []float32, b []float32, ldb int, c []float32, ldc int, e Epilogue) bool {
	setupBlocking()
	kern := active
	mr := kern.mr
	if m < 0 || n < 0 || k < 0 || len(a) < m*k || (e.Bias != nil && len(e.Bias) < m) {
		panic(fmt.Sprintf("gemm: SgemmBands of %d×%d by %d×%d: %d values of A, %d biases", m, k, k, n, len(a), len(e.Bias)))
	}
	if m == 0 || n == 0 {
		return true
	}
	kb := blockSize(k, kern.kc, 1)
	if kern.small == nil || forcePath == pathPacked || k == 0 || m <= mr || (m+mr-1)/mr > stripBands || kb*n <= 2*kern.kc*kern.nc {
		done := true
		for b0 := 0; b0 < m; b0 += mr {
			rows := min(mr, m-b0)
			band := e
			if e.Bias != nil {
				band.Bias = e.Bias[b0 : b0+rows]
			}
			done = sgemm(ws, true, false, rows, n, k, 1, a[b0*k:], rows, b, ldb, 0, c[b0*ldc:], ldc, band) && done
		}
		return done
	}
	checkArgs(ws, false, false, m, n, k, a, k, b, ldb, c, ldc)
	nr := kern.nr
	for pc := 0; pc < k; pc += kb {
		kbl := min(kb, k-pc)
		beta := float32(1)
		if pc == 0 {
			beta = 0
		}
		var last Epilogue
		if pc+kbl == k {
			last = e
		}
		for j := 0; j < n; j += nr {
			for b0 := 0; b0 < m; b0 += mr {
				rows := min(mr, m-b0)
				band := last
				if last.Bias != nil {
					band.Bias = last.Bias[b0:]
				}
				kern.small(kbl, a[b0*k+pc*rows:], 1, rows, b[pc*ldb+j:], ldb, 1, c[b0*ldc+j:], ldc, 1, beta, rows, min(nr, n-j), band)
			}
		}
	}
	return true
}
