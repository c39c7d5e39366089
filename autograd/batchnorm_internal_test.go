package autograd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// batchNormRun is one BatchNorm computation with its gradients.
type batchNormRun struct {
	y, mean, variance, dx, dw, db *tensor.Tensor
}

// runBatchNorm computes bn(x, w, b) (w and b may be nil) and its
// gradients for the output gradient dy, on fresh leaves.
func runBatchNorm(t *testing.T, bn func(x, w, b *Var) (*Var, *tensor.Tensor, *tensor.Tensor), x, w, b, dy *tensor.Tensor) batchNormRun {
	t.Helper()
	xv := Leaf(x.Clone())
	var wv, bv *Var
	if w != nil {
		wv, bv = Leaf(w.Clone()), Leaf(b.Clone())
	}
	y, mean, variance := bn(xv, wv, bv)
	require.NoError(t, BackwardWith(y, dy))
	r := batchNormRun{y: y.Value, mean: mean, variance: variance, dx: xv.Grad}
	if w != nil {
		r.dw, r.db = wv.Grad, bv.Grad
	}
	return r
}

// assertClose checks got against want elementwise, relative to the
// largest magnitude of want.
func assertClose(t *testing.T, want, got *tensor.Tensor, tol float64, what string) {
	t.Helper()
	require.Equal(t, want.Shape(), got.Shape(), what)
	wv, gv := want.Values(), got.Values()
	scale := 1.0
	for _, v := range wv {
		scale = math.Max(scale, math.Abs(v))
	}
	for i := range wv {
		if math.Abs(wv[i]-gv[i]) > tol*scale {
			t.Errorf("%s: [%d] = %.10g, want %.10g", what, i, gv[i], wv[i])
			return
		}
	}
}

// TestBatchNormFusedMatchesComposed checks that the CPU's fused kernels
// and the composition give the same values, statistics and gradients, and
// that both agree with the closed form of the gradient:
// dx = w/σ·(dy - mean(dy) - x̂·mean(dy·x̂)), dw = Σ dy·x̂, db = Σ dy.
func TestBatchNormFusedMatchesComposed(t *testing.T) {
	t.Parallel()
	const eps = 1e-5
	k, ok := tensor.CPU().Kernels().(device.BatchNormKernels)
	require.True(t, ok, "the CPU has batch normalisation kernels")
	fused := func(x, w, b *Var) (*Var, *tensor.Tensor, *tensor.Tensor) {
		return batchNormFused(k, nil, x, w, b, eps, device.ActNone)
	}
	composed := func(x, w, b *Var) (*Var, *tensor.Tensor, *tensor.Tensor) { return batchNormComposed(x, w, b, eps) }
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		tol := map[device.DType]float64{device.Float32: 2e-5, device.Float64: 1e-12}[dt]
		for _, shape := range [][]int{{6, 3}, {4, 3, 5, 2}, {2, 4, 7}, {1, 2, 3}} {
			for _, affine := range []bool{true, false} {
				t.Run(fmt.Sprintf("%v/%v/affine=%v", dt, shape, affine), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(len(shape)), 9))
					c := shape[1]
					x := tensor.RandNormal(rng, 1, 2, shape...).Cast(dt)
					dy := tensor.RandNormal(rng, 0, 1, shape...).Cast(dt)
					var w, b *tensor.Tensor
					if affine {
						w, b = tensor.RandUniform(rng, 0.5, 1.5, c).Cast(dt), tensor.RandNormal(rng, 0, 1, c).Cast(dt)
					}
					f := runBatchNorm(t, fused, x, w, b, dy)
					cp := runBatchNorm(t, composed, x, w, b, dy)
					for _, r := range []batchNormRun{f, cp} {
						assert.Equal(t, dt, r.y.DType())
						assert.Equal(t, []int{c}, r.mean.Shape())
						assert.Equal(t, []int{c}, r.variance.Shape())
					}
					assertClose(t, cp.y, f.y, tol, "output")
					assertClose(t, cp.mean, f.mean, tol, "mean")
					assertClose(t, cp.variance, f.variance, tol, "variance")
					assertClose(t, cp.dx, f.dx, tol, "input gradient")
					if affine {
						assertClose(t, cp.dw, f.dw, tol, "weight gradient")
						assertClose(t, cp.db, f.db, tol, "bias gradient")
					}

					// The closed form, in float64.
					axes, bshape := []int{0}, []int{1, c}
					for i := 2; i < len(shape); i++ {
						axes, bshape = append(axes, i), append(bshape, 1)
					}
					x64, dy64 := x.Cast(device.Float64), dy.Cast(device.Float64)
					mean := x64.MeanAxes(axes, true)
					d := x64.Sub(mean)
					variance := d.Mul(d).MeanAxes(axes, true)
					invstd := variance.AddScalar(eps).Sqrt().Recip()
					xhat := d.Mul(invstd)
					scale := tensor.FullLike(invstd, 1)
					if affine {
						scale = w.Cast(device.Float64).Reshape(bshape...)
					}
					wantDX := dy64.Sub(dy64.MeanAxes(axes, true)).Sub(xhat.Mul(dy64.Mul(xhat).MeanAxes(axes, true))).Mul(invstd).Mul(scale)
					for _, r := range []batchNormRun{f, cp} {
						assertClose(t, mean.Reshape(c), r.mean, tol, "mean against the definition")
						assertClose(t, variance.Reshape(c), r.variance, tol, "variance against the definition")
						assertClose(t, wantDX, r.dx, 10*tol, "input gradient against the closed form")
						if affine {
							assertClose(t, dy64.Mul(xhat).SumAxes(axes, false), r.dw, 10*tol, "weight gradient against the closed form")
							assertClose(t, dy64.SumAxes(axes, false), r.db, 10*tol, "bias gradient against the closed form")
						}
					}
				})
			}
		}
	}
}

// TestBatchNormComposedGradCheck checks the composition's gradients by
// finite differences (the fused kernels' are checked in TestGradCheck).
func TestBatchNormComposedGradCheck(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(4, 2))
	for _, shape := range [][]int{{5, 3}, {2, 3, 2, 2}} {
		c := shape[1]
		x := tensor.RandNormal(rng, 0, 1, shape...).Cast(device.Float64)
		w := tensor.RandUniform(rng, 0.5, 2, c).Cast(device.Float64)
		b := tensor.RandNormal(rng, 0, 1, c).Cast(device.Float64)
		require.NoError(t, GradCheck(func(xs []*Var) *Var {
			y, _, _ := batchNormComposed(xs[0], xs[1], xs[2], 1e-5)
			return y
		}, []*tensor.Tensor{x, w, b}, GradCheckOptions{}), "affine %v", shape)
		require.NoError(t, GradCheck(func(xs []*Var) *Var {
			y, _, _ := batchNormComposed(xs[0], nil, nil, 1e-5)
			return y
		}, []*tensor.Tensor{x}, GradCheckOptions{}), "no affine %v", shape)
	}
}

// TestBatchNormChoosesPath checks which computation BatchNorm runs: the
// fused one (a single recorded BatchNorm operation) for dense or strided
// inputs of one float type on the CPU, the composition for an empty input.
func TestBatchNormChoosesPath(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(8, 1))
	x := tensor.RandNormal(rng, 0, 1, 4, 3, 5)
	w, b := Leaf(tensor.RandUniform(rng, 0.5, 1.5, 3)), Leaf(tensor.RandNormal(rng, 0, 1, 3))

	y, _, _ := BatchNorm(Leaf(x), w, b, 1e-5)
	assert.Equal(t, "BatchNorm", y.Op().Name, "dense float32: fused")

	// A strided input (BatchNorm1d of a transposed N×L×C sequence) is
	// made dense and normalised by the kernel too, with the gradient of
	// the strided input.
	xt := Leaf(x.Permute(0, 2, 1).Contiguous())
	yt, _, _ := BatchNorm(Permute(xt, 0, 2, 1), w, b, 1e-5)
	assert.Equal(t, "BatchNorm", yt.Op().Name, "strided float32: fused")
	assertClose(t, y.Value, yt.Value, 1e-6, "strided input")
	dy := tensor.RandNormal(rng, 0, 1, 4, 3, 5)
	xd := Leaf(x)
	yd, _, _ := BatchNorm(xd, nil, nil, 1e-5)
	require.NoError(t, BackwardWith(yd, dy))
	ys, _, _ := BatchNorm(Permute(xt, 0, 2, 1), nil, nil, 1e-5)
	// A strided output gradient (the output transposed downstream).
	require.NoError(t, BackwardWith(Permute(ys, 0, 2, 1), dy.Permute(0, 2, 1)))
	assertClose(t, xd.Grad.Permute(0, 2, 1), xt.Grad, 1e-6, "gradient of the strided input")

	empty, mean, _ := BatchNorm(Leaf(tensor.Zeros(0, 3, 5)), w, b, 1e-5)
	assert.NotEqual(t, "BatchNorm", empty.Op().Name, "empty input: composed")
	assert.Equal(t, []int{0, 3, 5}, empty.Value.Shape())
	assert.Equal(t, []int{3}, mean.Shape())

	// Mixed types have no kernel; the composition reports them.
	assert.PanicsWithValue(t, "tensor: Add: types float64 [4 3 5] and float32 [1 3 1] differ", func() {
		BatchNorm(Leaf(x.Cast(device.Float64)), Leaf(w.Value.Cast(device.Float64)), b, 1e-5)
	})
}

// TestBatchNormRejectsParameters checks the panic for a weight without a
// bias and for parameters of the wrong length.
func TestBatchNormRejectsParameters(t *testing.T) {
	t.Parallel()
	x := Leaf(tensor.Zeros(2, 3))
	assert.PanicsWithValue(t, "autograd: BatchNorm: input [2 3] (N×C×…) takes a weight and a bias of shape [C], or neither; found [3] and []",
		func() { BatchNorm(x, Leaf(tensor.Zeros(3)), nil, 1e-5) })
	assert.PanicsWithValue(t, "autograd: BatchNorm: input [2 3] (N×C×…) takes a weight and a bias of shape [C], or neither; found [2] and [2]",
		func() { BatchNorm(x, Leaf(tensor.Zeros(2)), Leaf(tensor.Zeros(2)), 1e-5) })
	assert.PanicsWithValue(t, "autograd: BatchNorm: input [3] (N×C×…) takes a weight and a bias of shape [C], or neither; found [] and []",
		func() { BatchNorm(Leaf(tensor.Zeros(3)), nil, nil, 1e-5) })
}

// TestBatchNormActMatchesSeparate checks that BatchNormAct's fused kernels
// give, bit for bit, the values and gradients of BatchNorm followed by
// Relu or ReLU6 as separate operations, on planes the CPU gathers (7×7,
// 14×14) and on planes it does not (1, 4×4 = 16 is gathered, 16×16), in
// both float types, with inputs on both sides of 0 and 6.
func TestBatchNormActMatchesSeparate(t *testing.T) {
	t.Parallel()
	const eps = 1e-5
	k := tensor.CPU().Kernels().(device.BatchNormKernels)
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		for _, shape := range [][]int{{4, 3, 7, 7}, {3, 2, 14, 14}, {5, 3}, {2, 3, 16, 16}, {3, 2, 4, 4}} {
			for _, act := range []device.Activation{device.ActReLU, device.ActReLU6} {
				t.Run(fmt.Sprintf("%v/%v/%v", dt, shape, act), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(shape[0]), uint64(act)))
					c := shape[1]
					x := tensor.RandNormal(rng, 1, 2, shape...).Cast(dt)
					g := tensor.RandNormal(rng, 0, 1, shape...).Cast(dt)
					w := tensor.RandUniform(rng, 0.5, 4, c).Cast(dt)
					b := tensor.RandNormal(rng, 2, 2, c).Cast(dt)
					run := func(fused bool) []*tensor.Tensor {
						xv, wv, bv := Leaf(x.Clone()), Leaf(w.Clone()), Leaf(b.Clone())
						var y *Var
						if fused {
							y, _, _ = BatchNormAct(xv, wv, bv, eps, act)
							require.Equal(t, "BatchNorm", y.Op().Name, "one fused operation")
						} else {
							y, _, _ = batchNormFused(k, nil, xv, wv, bv, eps, device.ActNone)
							y = ActivationOf(y, act)
						}
						require.NoError(t, Backward(SumAll(Mul(y, Constant(g)))))
						return []*tensor.Tensor{y.Value, xv.Grad, wv.Grad, bv.Grad}
					}
					want, got := run(false), run(true)
					for i, name := range []string{"output", "input gradient", "weight gradient", "bias gradient"} {
						assert.Equal(t, want[i].Values(), got[i].Values(), name)
					}
				})
			}
		}
	}
}
