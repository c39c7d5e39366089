package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBatchNormPlanes checks BatchNorm's float32 vector path (the strided
// kernels of package norm, planes of vecPlane values or more) against the
// float64 element loops on the same values: statistics, outputs and all
// three gradients, with and without an affine transform, around the
// vector width and the kernels' chunk of 256 values.
func TestBatchNormPlanes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, inner := range []int{vecPlane, 17, 31, 49, 196, 255, 256, 300} {
		for _, outer := range []int{1, 3, 7} {
			for _, affine := range []bool{false, true} {
				const channels = 3
				n := outer * channels * inner
				x32, dy32 := make([]float32, n), make([]float32, n)
				for i := range x32 {
					x32[i] = float32(rng.NormFloat64()*2 + 5)
					dy32[i] = float32(rng.NormFloat64())
				}
				var w32, b32 []float32
				if affine {
					w32, b32 = []float32{0.5, -1.5, 2}, []float32{0.25, 1, -3}
				}
				a32 := batchNormArgs[float32]{y: make([]float32, n), x: x32, mean: make([]float32, channels),
					variance: make([]float32, channels), weight: w32, bias: b32, outer: outer, channels: channels, inner: inner, eps: 1e-5}
				a64 := batchNormArgs[float64]{y: make([]float64, n), x: widen(x32), mean: make([]float64, channels),
					variance: make([]float64, channels), weight: widen(w32), bias: widen(b32), outer: outer, channels: channels, inner: inner, eps: 1e-5}
				a32.run(0, channels)
				a64.run(0, channels)
				requireClose(t, a64.mean, a32.mean, 1e-6, "mean inner=%d outer=%d", inner, outer)
				requireClose(t, a64.variance, a32.variance, 1e-5, "variance inner=%d outer=%d", inner, outer)
				requireClose(t, a64.y, a32.y, 1e-5, "y inner=%d outer=%d affine=%v", inner, outer, affine)

				g32 := batchNormGradArgs[float32]{batchNormArgs: a32, dx: make([]float32, n)}
				g32.y = dy32
				g64 := batchNormGradArgs[float64]{batchNormArgs: a64, dx: make([]float64, n)}
				g64.y = widen(dy32)
				g64.mean, g64.variance = widen(a32.mean), widen(a32.variance) // the same statistics
				if affine {
					g32.dweight, g32.dbias = make([]float32, channels), make([]float32, channels)
					g64.dweight, g64.dbias = make([]float64, channels), make([]float64, channels)
				}
				g32.run(0, channels)
				g64.run(0, channels)
				requireClose(t, g64.dx, g32.dx, 1e-5, "dx inner=%d outer=%d affine=%v", inner, outer, affine)
				if affine {
					requireClose(t, g64.dweight, g32.dweight, 1e-5, "dweight inner=%d outer=%d", inner, outer)
					requireClose(t, g64.dbias, g32.dbias, 1e-5, "dbias inner=%d outer=%d", inner, outer)
				}
			}
		}
	}
}

func widen(s []float32) []float64 {
	if s == nil {
		return nil
	}
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
}

// requireClose checks got against want with a tolerance relative to the
// largest |want| (the scale of the quantity).
func requireClose(t *testing.T, want []float64, got []float32, rel float64, msg string, args ...any) {
	t.Helper()
	scale := 1.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(v))
	}
	for i := range want {
		require.InDelta(t, want[i], float64(got[i]), rel*scale, append([]any{msg + " [%d]"}, append(args, i)...)...)
	}
}

// TestLayerNormFloat32 checks LayerNorm's float32 kernels (package vec's
// loops) against the float64 ones on the same values: each row's mean and
// rstd, the output and the three gradients, around the vector width.
func TestLayerNormFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	d := New()
	k := d.Kernels().(kernels)
	for _, cols := range []int{1, 7, 16, 17, 64, 130} {
		for _, rows := range []int{1, 5, 33} {
			for _, affine := range []bool{false, true} {
				n := rows * cols
				x, dy := make([]float32, n), make([]float32, n)
				for i := range x {
					x[i] = float32(rng.NormFloat64()*3 + 2)
					dy[i] = float32(rng.NormFloat64())
				}
				var w, b []float32
				if affine {
					w, b = make([]float32, cols), make([]float32, cols)
					for i := range w {
						w[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
					}
				}
				a32 := layerNormArgs[float32]{y: make([]float32, n), x: x, mean: make([]float32, rows), rstd: make([]float32, rows), weight: w, bias: b, cols: cols, eps: 1e-5}
				a64 := layerNormArgs[float64]{y: make([]float64, n), x: widen(x), mean: make([]float64, rows), rstd: make([]float64, rows), weight: widen(w), bias: widen(b), cols: cols, eps: 1e-5}
				a32.run(0, rows)
				a64.run(0, rows)
				requireClose(t, a64.mean, a32.mean, 1e-6, "mean cols=%d rows=%d", cols, rows)
				requireClose(t, a64.rstd, a32.rstd, 1e-5, "rstd cols=%d rows=%d", cols, rows)
				requireClose(t, a64.y, a32.y, 1e-5, "y cols=%d rows=%d affine=%v", cols, rows, affine)

				g32, g64 := a32, a64
				g32.y, g64.y = dy, widen(dy)
				g64.mean, g64.rstd = widen(a32.mean), widen(a32.rstd)
				dx32, dx64 := make([]float32, n), make([]float64, n)
				var dw32, db32 []float32
				var dw64, db64 []float64
				if affine {
					dw32, db32, dw64, db64 = make([]float32, cols), make([]float32, cols), make([]float64, cols), make([]float64, cols)
				}
				layerNormGrad(k.d, g32, dx32, dw32, db32, rows)
				layerNormGrad(k.d, g64, dx64, dw64, db64, rows)
				requireClose(t, dx64, dx32, 1e-5, "dx cols=%d rows=%d affine=%v", cols, rows, affine)
				if affine {
					requireClose(t, dw64, dw32, 1e-5, "dweight cols=%d rows=%d", cols, rows)
					requireClose(t, db64, db32, 1e-5, "dbias cols=%d rows=%d", cols, rows)
				}
			}
		}
	}
}
