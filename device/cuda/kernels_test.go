package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/device/devicetest"
)

// These tests check the kernels that device/devicetest does not (the
// fused kernels other than BiasAct and ActGrad, MaxPool2DValues, the
// chunked convolution paths) against the CPU device: the same inputs go
// to both, and every output must agree within the float type's tolerance
// relative to the largest output.

// twin holds a buffer on the CPU and its copy on the GPU.
type twin struct{ c, g device.Buffer }

// pairEnv runs kernels on both devices.
type pairEnv struct {
	t   *testing.T
	gpu *Device
	cpu *cpu.Device
	rng *rand.Rand
}

func newPairEnv(t *testing.T, seed uint64) *pairEnv {
	d := testDevice(t)
	d.SetTF32(false) // full float32 matrix products, as the CPU's
	t.Cleanup(func() { d.SetTF32(true) })
	return &pairEnv{t: t, gpu: d, cpu: cpu.New(), rng: rand.New(rand.NewPCG(seed, 7))}
}

func (e *pairEnv) ks() (device.Kernels, device.Kernels) { return e.cpu.Kernels(), e.gpu.Kernels() }

// put uploads vals (converted to dt) to both devices.
func (e *pairEnv) put(dt device.DType, vals []float64) twin {
	e.t.Helper()
	var tw twin
	for i, dev := range []device.Device{e.cpu, e.gpu} {
		b, err := dev.Alloc(dt, len(vals))
		require.NoError(e.t, err)
		require.NoError(e.t, dev.Write(b, devicetest.HostSlice(dt, vals)))
		e.t.Cleanup(b.Free)
		if i == 0 {
			tw.c = b
		} else {
			tw.g = b
		}
	}
	return tw
}

// rand returns a twin of n values uniform in [lo, hi).
func (e *pairEnv) rand(dt device.DType, n int, lo, hi float64) twin {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(float32(lo + (hi-lo)*e.rng.Float64()))
	}
	return e.put(dt, v)
}

// garbage returns a twin of n elements holding values a kernel must overwrite.
func (e *pairEnv) garbage(dt device.DType, n int) twin {
	v := make([]float64, n)
	for i := range v {
		v[i] = -7 - float64(i%5)
	}
	return e.put(dt, v)
}

// same checks that tw holds the same values on both devices.
func (e *pairEnv) same(tw twin, what string, args ...any) {
	e.t.Helper()
	want, got := devicetest.Download(e.t, e.cpu, tw.c), devicetest.Download(e.t, e.gpu, tw.g)
	rtol := 1e-12
	if tw.c.DType() == device.Float32 {
		rtol = 2e-6
	}
	var ref float64
	for _, w := range want {
		if !math.IsInf(w, 0) && !math.IsNaN(w) {
			ref = math.Max(ref, math.Abs(w))
		}
	}
	bad := 0
	for i := range want {
		w, g := want[i], got[i]
		ok := w == g || (math.IsNaN(w) && math.IsNaN(g)) || math.Abs(g-w) <= rtol*(math.Abs(w)+ref)
		if !ok {
			if bad < 5 {
				e.t.Errorf("%s: [%d] got %.10g, want %.10g (CPU)", fmt.Sprintf(what, args...), i, g, w)
			}
			bad++
		}
	}
	if bad > 5 {
		e.t.Errorf("%s: %d of %d values differ", fmt.Sprintf(what, args...), bad, len(want))
	}
}

var testFloatTypes = []device.DType{device.Float32, device.Float64}

func TestKernelsBatchNorm(t *testing.T) {
	e := newPairEnv(t, 1)
	kc, kg := e.ks()
	fc, fg := kc.(device.BatchNormKernels), kg.(device.BatchNormKernels)
	for _, sh := range [][3]int{{4, 3, 5}, {2, 5, 1}, {3, 2, 300}, {1, 1, 1}} {
		outer, ch, inner := sh[0], sh[1], sh[2]
		n := outer * ch * inner
		for _, dt := range testFloatTypes {
			for _, affine := range []bool{false, true} {
				name := fmt.Sprintf("%dx%dx%d/%v/affine=%v", outer, ch, inner, dt, affine)
				x := e.rand(dt, n, -2, 3)
				var w, b twin
				if affine {
					w, b = e.rand(dt, ch, 0.5, 1.5), e.rand(dt, ch, -1, 1)
				}
				y, mean, vr := e.garbage(dt, n), e.garbage(dt, ch), e.garbage(dt, ch)
				fc.BatchNorm(y.c, mean.c, vr.c, x.c, w.c, b.c, outer, ch, inner, 1e-5)
				fg.BatchNorm(y.g, mean.g, vr.g, x.g, w.g, b.g, outer, ch, inner, 1e-5)
				e.same(y, "BatchNorm y %s", name)
				e.same(mean, "BatchNorm mean %s", name)
				e.same(vr, "BatchNorm variance %s", name)

				dy := e.rand(dt, n, -1, 1)
				for _, grads := range []bool{false, true} {
					dx := e.garbage(dt, n)
					var dw, db twin
					if grads {
						dw, db = e.garbage(dt, ch), e.garbage(dt, ch)
					}
					fc.BatchNormGrad(dx.c, dw.c, db.c, dy.c, x.c, mean.c, vr.c, w.c, outer, ch, inner, 1e-5)
					fg.BatchNormGrad(dx.g, dw.g, db.g, dy.g, x.g, mean.g, vr.g, w.g, outer, ch, inner, 1e-5)
					e.same(dx, "BatchNormGrad dx %s", name)
					if grads {
						e.same(dw, "BatchNormGrad dweight %s", name)
						e.same(db, "BatchNormGrad dbias %s", name)
					}
				}
			}
		}
	}
}

func TestKernelsBiasGrad(t *testing.T) {
	e := newPairEnv(t, 2)
	kc, kg := e.ks()
	fc, fg := kc.(device.FusedKernels), kg.(device.FusedKernels)
	for _, sh := range [][3]int{{5, 7, 1}, {3, 4, 9}, {300, 3, 1}, {2, 3, 1000}, {0, 3, 4}} {
		for _, dt := range testFloatTypes {
			outer, ch, inner := sh[0], sh[1], sh[2]
			dy := e.rand(dt, outer*ch*inner, -1, 1)
			db := e.garbage(dt, ch)
			fc.BiasGrad(db.c, dy.c, outer, ch, inner)
			fg.BiasGrad(db.g, dy.g, outer, ch, inner)
			e.same(db, "BiasGrad %v %v", sh, dt)
		}
	}
}

func TestKernelsSoftmaxCrossEntropy(t *testing.T) {
	e := newPairEnv(t, 3)
	kc, kg := e.ks()
	fc, fg := kc.(device.FusedKernels), kg.(device.FusedKernels)
	for _, sh := range [][2]int{{5, 7}, {3, 1000}, {300, 10}, {1, 1}} {
		rows, classes := sh[0], sh[1]
		for _, dt := range testFloatTypes {
			for _, smoothing := range []float64{0, 0.1} {
				logits := e.rand(dt, rows*classes, -8, 8)
				lv := make([]float64, rows)
				for i := range lv {
					lv[i] = float64(e.rng.IntN(classes))
				}
				labels := e.put(device.Int64, lv)
				loss, grad := e.garbage(dt, 1), e.garbage(dt, rows*classes)
				require.NoError(t, fc.SoftmaxCrossEntropy(loss.c, grad.c, logits.c, labels.c, rows, classes, smoothing))
				require.NoError(t, fg.SoftmaxCrossEntropy(loss.g, grad.g, logits.g, labels.g, rows, classes, smoothing))
				e.same(loss, "SoftmaxCrossEntropy loss %v %v %g", sh, dt, smoothing)
				e.same(grad, "SoftmaxCrossEntropy grad %v %v %g", sh, dt, smoothing)
			}
		}
	}
	// Bad labels: the first one is reported, and nothing is written.
	for _, lv := range [][]float64{{1, 3, 2, -1, 7}, {4, 0, 0, 0, 0}} {
		labels := e.put(device.Int64, lv)
		logits := e.rand(device.Float32, 5*4, -1, 1)
		loss, grad := e.garbage(device.Float32, 1), e.garbage(device.Float32, 5*4)
		err := fg.SoftmaxCrossEntropy(loss.g, grad.g, logits.g, labels.g, 5, 4, 0)
		var ie *device.IndexError
		require.True(t, errors.As(err, &ie), "error %v", err)
		want := fc.SoftmaxCrossEntropy(loss.c, grad.c, logits.c, labels.c, 5, 4, 0)
		assert.Equal(t, want, err)
		e.same(grad, "SoftmaxCrossEntropy with a bad label left grad alone")
	}
}

func TestKernelsSGDStep(t *testing.T) {
	e := newPairEnv(t, 4)
	kc, kg := e.ks()
	fc, fg := kc.(device.OptimizerKernels), kg.(device.OptimizerKernels)
	for _, dt := range testFloatTypes {
		for _, h := range []device.SGDHyper{
			{LR: 0.1},
			{LR: 0.05, WeightDecay: 1e-3},
			{LR: 0.05, Momentum: 0.9},
			{LR: 0.05, Momentum: 0.9, Dampening: 0.1, WeightDecay: 1e-2},
			{LR: 0.05, Momentum: 0.9, Nesterov: true, WeightDecay: 1e-4},
		} {
			n := 1000
			p, buf := e.rand(dt, n, -1, 1), e.put(dt, make([]float64, n))
			for step := 0; step < 3; step++ {
				g := e.rand(dt, n, -1, 1)
				h.First = step == 0
				var bc, bg device.Buffer
				if h.Momentum != 0 {
					bc, bg = buf.c, buf.g
				}
				fc.SGDStep(h, p.c, g.c, bc, n)
				fg.SGDStep(h, p.g, g.g, bg, n)
			}
			e.same(p, "SGDStep %+v %v param", h, dt)
			if h.Momentum != 0 {
				e.same(buf, "SGDStep %+v %v momentum", h, dt)
			}
		}
	}
}

func TestKernelsAdamStep(t *testing.T) {
	e := newPairEnv(t, 5)
	kc, kg := e.ks()
	fc, fg := kc.(device.OptimizerKernels), kg.(device.OptimizerKernels)
	for _, dt := range testFloatTypes {
		for _, h := range []device.AdamHyper{
			{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8},
			{LR: 1e-2, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 1e-2},
			{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-2, Decoupled: true},
			{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, AMSGrad: true},
			{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, Decoupled: true, AMSGrad: true},
		} {
			n := 1000
			p := e.rand(dt, n, -1, 1)
			m, v := e.put(dt, make([]float64, n)), e.put(dt, make([]float64, n))
			var mv twin
			if h.AMSGrad {
				mv = e.put(dt, make([]float64, n))
			}
			for step := 1; step <= 3; step++ {
				g := e.rand(dt, n, -1, 1)
				h.Step = step
				fc.AdamStep(h, p.c, g.c, m.c, v.c, mv.c, n)
				fg.AdamStep(h, p.g, g.g, m.g, v.g, mv.g, n)
			}
			e.same(p, "AdamStep %+v %v param", h, dt)
			e.same(m, "AdamStep %+v %v m", h, dt)
			e.same(v, "AdamStep %+v %v v", h, dt)
			if h.AMSGrad {
				e.same(mv, "AdamStep %+v %v maxV", h, dt)
			}
		}
	}
}

func convP(n, c, h, w, oc, kh, kw, sh, sw, ph, pw, dh, dw, g int) device.ConvParams {
	return device.ConvParams{N: n, C: c, H: h, W: w, OutC: oc, KH: kh, KW: kw,
		StrideH: sh, StrideW: sw, PadH: ph, PadW: pw, DilH: dh, DilW: dw, Groups: g}
}

func TestKernelsConv2DBiasActMaxPool(t *testing.T) {
	e := newPairEnv(t, 6)
	kc, kg := e.ks()
	fc, fg := kc.(device.FusedKernels), kg.(device.FusedKernels)
	for _, p := range []device.ConvParams{
		convP(2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1),
		convP(1, 4, 9, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4),
	} {
		q := device.PoolParams{N: p.N, C: p.OutC, H: p.OutH(), W: p.OutW(), KH: 2, KW: 2, StrideH: 2, StrideW: 2}
		for _, dt := range testFloatTypes {
			for _, act := range []device.Activation{device.ActNone, device.ActReLU, device.ActReLU6} {
				x := e.rand(dt, p.N*p.C*p.H*p.W, -3, 3)
				w := e.rand(dt, p.OutC*(p.C/p.Groups)*p.KH*p.KW, -1, 1)
				b := e.rand(dt, p.OutC, -1, 1)
				ny := q.N * q.C * q.OutH() * q.OutW()
				y, arg := e.garbage(dt, ny), e.garbage(device.Int64, ny)
				fc.Conv2DBiasActMaxPool(p, q, act, y.c, arg.c, x.c, w.c, b.c)
				fg.Conv2DBiasActMaxPool(p, q, act, y.g, arg.g, x.g, w.g, b.g)
				e.same(y, "Conv2DBiasActMaxPool %+v %v %v", p, dt, act)
				e.same(arg, "Conv2DBiasActMaxPool argmax %+v %v %v", p, dt, act)
			}
		}
	}
}

func TestKernelsMaxPool2DValues(t *testing.T) {
	e := newPairEnv(t, 7)
	kc, kg := e.ks()
	vc, vg := kc.(device.MaxPoolValuesKernels), kg.(device.MaxPoolValuesKernels)
	for _, p := range []device.PoolParams{
		{N: 2, C: 3, H: 7, W: 8, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
		{N: 1, C: 2, H: 6, W: 6, KH: 2, KW: 2, StrideH: 2, StrideW: 2},
	} {
		for _, dt := range testFloatTypes {
			x := e.rand(dt, p.N*p.C*p.H*p.W, -2, -1)
			y := e.garbage(dt, p.N*p.C*p.OutH()*p.OutW())
			vc.MaxPool2DValues(p, y.c, x.c)
			vg.MaxPool2DValues(p, y.g, x.g)
			e.same(y, "MaxPool2DValues %+v %v", p, dt)
		}
	}
}

// TestKernelsConvChunks makes the convolutions' scratch budget tiny, so
// that they work through the images in several chunks (and the weight
// gradient sums its partials across chunks).
func TestKernelsConvChunks(t *testing.T) {
	e := newPairEnv(t, 8)
	kc, kg := e.ks()
	saved := colBudget
	defer func() { colBudget = saved }()
	for _, budget := range []int{1, 2000, 5000} {
		colBudget = budget
		for _, p := range []device.ConvParams{
			convP(5, 3, 6, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1),
			convP(4, 4, 5, 6, 6, 3, 2, 2, 1, 1, 0, 1, 1, 2),
			convP(3, 6, 4, 4, 6, 1, 1, 1, 1, 0, 0, 1, 1, 3),
			convP(7, 4, 3, 5, 2, 1, 1, 1, 1, 0, 0, 1, 1, 1),
		} {
			for _, dt := range testFloatTypes {
				nx, nw, ny := p.N*p.C*p.H*p.W, p.OutC*(p.C/p.Groups)*p.KH*p.KW, p.N*p.OutC*p.OutH()*p.OutW()
				x, w, dy := e.rand(dt, nx, -1, 1), e.rand(dt, nw, -1, 1), e.rand(dt, ny, -1, 1)
				y, dx, dw := e.garbage(dt, ny), e.garbage(dt, nx), e.garbage(dt, nw)
				kc.Conv2D(p, y.c, x.c, w.c)
				kg.Conv2D(p, y.g, x.g, w.g)
				e.same(y, "Conv2D budget %d %+v %v", budget, p, dt)
				kc.Conv2DGradInput(p, dx.c, dy.c, w.c)
				kg.Conv2DGradInput(p, dx.g, dy.g, w.g)
				e.same(dx, "Conv2DGradInput budget %d %+v %v", budget, p, dt)
				kc.Conv2DGradWeight(p, dw.c, dy.c, x.c)
				kg.Conv2DGradWeight(p, dw.g, dy.g, x.g)
				e.same(dw, "Conv2DGradWeight budget %d %+v %v", budget, p, dt)
			}
		}
	}
}

// TestKernelsRejectFloat16 checks that the compute kernels refuse the
// storage type Float16, as the CPU device's do.
func TestKernelsRejectFloat16(t *testing.T) {
	d := testDevice(t)
	h, err := d.Alloc(device.Float16, 4)
	require.NoError(t, err)
	defer h.Free()
	f, err := d.Alloc(device.Float32, 4)
	require.NoError(t, err)
	defer f.Free()
	k := d.Kernels()
	assert.PanicsWithValue(t, "cuda: Unary: float16 is a storage type: only Alloc, Read, Write, Slice and Copy take it (Copy it to float32 first)",
		func() { k.Unary(device.Exp, h, h, 4, 0) })
	assert.Panics(t, func() { k.Unary(device.Exp, f, h, 4, 0) })
	assert.Panics(t, func() { k.Fill(h, 4, 1) })
	assert.Panics(t, func() { k.Reduce(device.ReduceSum, f, h, 1, 4, 1) })
	require.NoError(t, d.Sync())
}

// TestKernelsReduceLong checks the block reductions (axes longer than
// reduce_small's) with ties and NaNs, which the conformance suite only
// puts on short axes.
func TestKernelsReduceLong(t *testing.T) {
	e := newPairEnv(t, 9)
	kc, kg := e.ks()
	for _, sh := range [][3]int{{3, 40, 1}, {2, 40, 5}, {1, 300, 33}, {4, 17, 2}, {2, 1000, 1}} {
		outer, n, inner := sh[0], sh[1], sh[2]
		for _, dt := range testFloatTypes {
			for _, nans := range []int{0, 1, 3} {
				v := make([]float64, outer*n*inner)
				for i := range v {
					v[i] = float64(e.rng.IntN(9)-4) / 2
				}
				for j := 0; j < nans*outer*inner; j++ {
					v[e.rng.IntN(len(v))] = math.NaN()
				}
				src := e.put(dt, v)
				for _, op := range []device.ReduceOp{device.ReduceSum, device.ReduceMax, device.ReduceMin, device.ReduceArgMax} {
					odt := dt
					if op == device.ReduceArgMax {
						odt = device.Int64
					}
					dst := e.garbage(odt, outer*inner)
					kc.Reduce(op, dst.c, src.c, outer, n, inner)
					kg.Reduce(op, dst.g, src.g, outer, n, inner)
					e.same(dst, "Reduce %d over %v (%v, %d NaNs per output)", op, sh, dt, nans)
				}
			}
		}
	}
}

// TestKernelsSlicedSums checks the long sums that bias_grad and
// conv_dw_grad_weight cut into slices (a block per row and slice, then
// reduceSum over the slices): sizes with several slices on the emulator's
// four multiprocessors, against the CPU.
func TestKernelsSlicedSums(t *testing.T) {
	e := newPairEnv(t, 11)
	kc, kg := e.ks()
	fc, fg := kc.(device.FusedKernels), kg.(device.FusedKernels)
	for _, sh := range [][3]int{{40, 3, 1000}, {7, 1, 20000}, {5000, 2, 3}} {
		outer, ch, inner := sh[0], sh[1], sh[2]
		require.Greater(t, sliceCount(ch, outer*inner, 4), 1, "shape %v", sh)
		for _, dt := range testFloatTypes {
			dy := e.rand(dt, outer*ch*inner, -1, 1)
			db := e.garbage(dt, ch)
			fc.BiasGrad(db.c, dy.c, outer, ch, inner)
			fg.BiasGrad(db.g, dy.g, outer, ch, inner)
			e.same(db, "BiasGrad %v %v", sh, dt)
		}
	}
	for _, p := range []device.ConvParams{
		convP(16, 1, 32, 32, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1), // one weight: a single long sum
		convP(20, 1, 24, 24, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1), // like a first layer on grey images
		convP(30, 2, 64, 64, 2, 3, 3, 2, 2, 1, 1, 1, 1, 2), // depthwise, strided
	} {
		nw := p.OutC * (p.C / p.Groups) * p.KH * p.KW
		require.Greater(t, sliceCount(nw, p.N*p.OutH()*p.OutW(), 4), 1, "%+v", p)
		for _, dt := range testFloatTypes {
			x := e.rand(dt, p.N*p.C*p.H*p.W, -1, 1)
			dy := e.rand(dt, p.N*p.OutC*p.OutH()*p.OutW(), -1, 1)
			dw := e.garbage(dt, nw)
			kc.Conv2DGradWeight(p, dw.c, dy.c, x.c)
			kg.Conv2DGradWeight(p, dw.g, dy.g, x.g)
			e.same(dw, "Conv2DGradWeight %+v %v", p, dt)
		}
	}
}

func TestSliceCount(t *testing.T) {
	assert.Equal(t, 1, sliceCount(2000, 1<<20, 132), "enough rows: one slice")
	assert.Equal(t, 33, sliceCount(32, 1024*784, 132), "32 channels of 1024×28×28")
	assert.Equal(t, 4, sliceCount(288, 1024*784, 132), "a 3×3 weight gradient of 32 channels")
	assert.Equal(t, 1, sliceCount(1, 100, 132), "short sums stay whole")
	assert.Equal(t, 1024, sliceCount(1, 1<<40, 1<<20), "at most 1024")
}
