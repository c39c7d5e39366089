package devicetest

import (
	"fmt"
	"math"
	"testing"

	"github.com/hora-dl/hora/device"
)

// matmulRef computes MatMulParams' reference loop on c in place and
// returns the magnitude of the terms of each element of c.
func matmulRef(p device.MatMulParams, c, a, b []float64) (mag []float64) {
	mag = make([]float64, len(c))
	for bt := 0; bt < p.Batch; bt++ {
		for i := 0; i < p.M; i++ {
			for j := 0; j < p.N; j++ {
				var sum, abs float64
				for l := 0; l < p.K; l++ {
					var x, y float64
					if p.TransA {
						x = a[p.AOff+bt*p.AStride+l*p.M+i]
					} else {
						x = a[p.AOff+bt*p.AStride+i*p.K+l]
					}
					if p.TransB {
						y = b[p.BOff+bt*p.BStride+j*p.K+l]
					} else {
						y = b[p.BOff+bt*p.BStride+l*p.N+j]
					}
					sum += x * y
					abs += math.Abs(x * y)
				}
				ci := p.COff + bt*p.CStride + i*p.N + j
				old := 0.0
				if p.Beta != 0 { // BLAS: C is not read when beta is 0
					old = p.Beta * c[ci]
				}
				c[ci] = p.Alpha*sum + old
				mag[ci] = math.Abs(p.Alpha)*abs + math.Abs(old)
			}
		}
	}
	return mag
}

// matLen is the buffer length a matrix operand needs.
func matLen(batch, off, stride, size int) int {
	if batch == 0 {
		return off + size
	}
	return off + (batch-1)*stride + size
}

// TestMatMul checks Kernels.MatMul for every TransA/TransB combination,
// batches with shared (stride 0) operands, alpha and beta, and offsets.
// Elements of C outside the matrices must keep their values; when Beta is
// 0, C's previous contents (even NaN) must not matter.
func TestMatMul(t *testing.T, dev device.Device) {
	k := dev.Kernels()
	rng := newRand(6)
	type mcase struct {
		name                 string
		batch, m, n, kk      int
		alpha, beta          float64
		aOff, bOff, cOff     int
		shareA, shareB, gapC bool
		nanC                 bool
	}
	cases := []mcase{
		{name: "1x1x1", batch: 1, m: 1, n: 1, kk: 1, alpha: 1},
		{name: "small", batch: 1, m: 3, n: 4, kk: 5, alpha: 1},
		{name: "vector", batch: 1, m: 7, n: 1, kk: 3, alpha: 1},
		{name: "row", batch: 1, m: 1, n: 9, kk: 6, alpha: 1},
		{name: "odd", batch: 1, m: 17, n: 33, kk: 65, alpha: 1},
		{name: "alpha-beta", batch: 1, m: 5, n: 6, kk: 7, alpha: 2, beta: 0.25},
		{name: "accumulate", batch: 1, m: 4, n: 3, kk: 8, alpha: 1, beta: 1},
		{name: "alpha-only", batch: 1, m: 4, n: 5, kk: 3, alpha: -0.5},
		{name: "beta-zero-nan", batch: 2, m: 3, n: 4, kk: 5, alpha: 1, nanC: true},
		{name: "k0", batch: 2, m: 3, n: 4, kk: 0, alpha: 1, beta: 0.5},
		{name: "k0-beta-zero-nan", batch: 1, m: 3, n: 4, kk: 0, alpha: 1, nanC: true},
		{name: "batch", batch: 3, m: 4, n: 5, kk: 6, alpha: 1},
		{name: "batch-shareA", batch: 4, m: 3, n: 5, kk: 2, alpha: 1, shareA: true},
		{name: "batch-shareB", batch: 4, m: 6, n: 2, kk: 3, alpha: 1, shareB: true},
		{name: "batch-offsets-gap", batch: 3, m: 3, n: 4, kk: 5, alpha: 1.5, beta: -1, aOff: 3, bOff: 7, cOff: 2, gapC: true},
		{name: "batch-parallel", batch: 8, m: 32, n: 40, kk: 33, alpha: 1, beta: 0.5},
		{name: "large", batch: 1, m: 130, n: 129, kk: 140, alpha: 1},
	}
	for _, tc := range cases {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				for _, dt := range floatTypes {
					t.Run(fmt.Sprintf("%s/TA=%v/TB=%v/%v", tc.name, ta, tb, dt), func(t *testing.T) {
						p := device.MatMulParams{
							Batch: tc.batch, M: tc.m, N: tc.n, K: tc.kk,
							TransA: ta, TransB: tb, Alpha: tc.alpha, Beta: tc.beta,
							AOff: tc.aOff, BOff: tc.bOff, COff: tc.cOff,
							AStride: tc.m*tc.kk + 1, BStride: tc.kk * tc.n, CStride: tc.m * tc.n,
						}
						if tc.shareA {
							p.AStride = 0
						}
						if tc.shareB {
							p.BStride = 0
						}
						if tc.gapC {
							p.CStride += 3
						}
						av := randFloats(rng, matLen(p.Batch, p.AOff, p.AStride, p.M*p.K), -1, 1)
						bv := randFloats(rng, matLen(p.Batch, p.BOff, p.BStride, p.K*p.N), -1, 1)
						cv := randFloats(rng, matLen(p.Batch, p.COff, p.CStride, p.M*p.N)+2, -1, 1)
						if tc.nanC {
							for i := range cv {
								cv[i] = math.NaN()
							}
						}
						a, b, c := Upload(t, dev, dt, av), Upload(t, dev, dt, bv), Upload(t, dev, dt, cv)
						want := append([]float64(nil), cv...)
						mag := matmulRef(p, want, av, bv)
						k.MatMul(p, c, a, b)
						checkClose(t, dt, Download(t, dev, c), want, mag, "MatMul %+v", p)
					})
				}
			}
		}
	}
}
