package cuda_test

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cuda"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// gpuOrSkip returns cuda:0 (the emulator's unless HORA_CUDA_TEST=gpu), or
// skips when there is none.
func gpuOrSkip(t *testing.T) *cuda.Device {
	t.Helper()
	d, err := cuda.Open(0)
	if err != nil {
		if os.Getenv("HORA_CUDA_TEST") == "gpu" { // a missing GPU or library is a failure there
			t.Fatalf("HORA_CUDA_TEST=gpu, but no CUDA device: %v", err)
		}
		t.Skipf("no CUDA device: %v", err)
	}
	d.SetTF32(false)
	t.Cleanup(func() { d.SetTF32(true) })
	return d
}

// TestTrainingMatchesCPU trains the same models from the same weights on
// the GPU and on the CPU for a few steps, and compares every parameter:
// the whole stack (layers, autograd, optimizers, fused kernels) must give
// the CPU's numbers on the GPU, up to float32 rounding (sums in another
// order).
func TestTrainingMatchesCPU(t *testing.T) {
	gpu := gpuOrSkip(t)
	for _, tc := range []struct {
		name  string
		build func(rng *rand.Rand) (layers.Layer, error)
		adam  bool
	}{
		{"mlp", func(rng *rand.Rand) (layers.Layer, error) {
			return models.NewMLP(models.MLPConfig{In: 28 * 28, Hidden: []int{64, 32}, Classes: 10, Activation: "relu"}, rng)
		}, false},
		{"cnn", func(rng *rand.Rand) (layers.Layer, error) { return models.NewCNN(10, rng), nil }, false},
		{"lenet5", func(rng *rand.Rand) (layers.Layer, error) { return models.NewLeNet5(10, rng), nil }, false},
		// Adam's first steps move each weight by about lr·sign(g), so a
		// gradient within rounding of zero could flip a step; a large eps
		// keeps those steps tiny.
		{"mlp-adam", func(rng *rand.Rand) (layers.Layer, error) {
			return models.NewMLP(models.MLPConfig{In: 28 * 28, Hidden: []int{32}, Classes: 10, Activation: "relu"}, rng)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var params [2][]*autograd.Param
			for i, dev := range []device.Device{tensor.CPU(), gpu} {
				m, err := tc.build(rand.New(rand.NewPCG(7, 7)))
				require.NoError(t, err)
				layers.To(m, dev)
				var opt optim.Optimizer
				if tc.adam {
					opt, err = optim.NewAdam(m.Parameters(), optim.AdamConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-3})
				} else {
					opt, err = optim.NewSGD(m.Parameters(), optim.SGDConfig{LR: 0.05, Momentum: 0.9})
				}
				require.NoError(t, err)
				rng := rand.New(rand.NewPCG(1, 2))
				for step := 0; step < 3; step++ {
					const batch = 8
					x := make([]float32, batch*28*28)
					for j := range x {
						x[j] = float32(rng.NormFloat64())
					}
					y := make([]int64, batch)
					for j := range y {
						y[j] = rng.Int64N(10)
					}
					xt, err := tensor.FromSlice(dev, x, batch, 1, 28, 28)
					require.NoError(t, err)
					yt, err := tensor.FromSlice(dev, y, batch)
					require.NoError(t, err)
					loss := layers.CrossEntropy(m.Forward(autograd.Constant(xt)), yt, layers.CrossEntropyOptions{})
					require.NoError(t, autograd.Backward(loss))
					require.NoError(t, opt.Step())
					opt.ZeroGrad()
				}
				params[i] = m.Parameters()
			}
			for j, p := range params[0] {
				want := p.Value.Float32s()
				got := params[1][j].Value.To(tensor.CPU()).Float32s()
				require.Len(t, got, len(want))
				worst := 0.0
				for k := range want {
					d := math.Abs(float64(got[k]-want[k])) / math.Max(1e-3, math.Abs(float64(want[k])))
					worst = math.Max(worst, d)
				}
				require.Less(t, worst, 1e-4, "parameter %s: worst relative difference", p.Name)
			}
		})
	}
}

// TestGroupStepsEqualPerParameterSteps updates 40 parameters of assorted
// sizes (more than one launch's 32, an empty one among them) with the
// multi-tensor kernels and with one kernel each: the results must be
// identical, for SGD with momentum and for AdamW.
func TestGroupStepsEqualPerParameterSteps(t *testing.T) {
	gpu := gpuOrSkip(t)
	rng := rand.New(rand.NewPCG(3, 4))
	random := func(n int) *tensor.Tensor {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		v, err := tensor.FromSlice(gpu, x, n)
		require.NoError(t, err)
		return v
	}
	const count = 40
	var ps, gs, bufs, ms, vs []*tensor.Tensor
	for i := 0; i < count; i++ {
		n := (i*37)%300 + 1
		if i == 7 {
			n = 0
		}
		ps, gs, bufs = append(ps, random(n)), append(gs, random(n)), append(bufs, random(n))
		ms, vs = append(ms, random(n)), append(vs, random(n).Abs())
	}
	clone := func(ts []*tensor.Tensor) []*tensor.Tensor {
		out := make([]*tensor.Tensor, len(ts))
		for i, x := range ts {
			out[i] = x.Clone()
		}
		return out
	}
	p2, b2, m2, v2 := clone(ps), clone(bufs), clone(ms), clone(vs)

	k := gpu.Kernels().(device.MultiStepKernels)
	buffers := func(ts []*tensor.Tensor) []device.Buffer {
		bs := make([]device.Buffer, len(ts))
		for i, x := range ts {
			bs[i] = x.Buffer()
		}
		return bs
	}
	ns := make([]int, len(ps))
	for i, p := range ps {
		ns[i] = p.Len()
	}
	sgd := device.SGDHyper{LR: 0.1, Momentum: 0.9, Dampening: 0.1, WeightDecay: 1e-4, Nesterov: true}
	require.True(t, k.SGDSteps(sgd, buffers(ps), buffers(gs), buffers(bufs), ns))
	for i := range p2 {
		k.SGDStep(sgd, p2[i].Buffer(), gs[i].Buffer(), b2[i].Buffer(), ns[i])
	}
	adam := device.AdamHyper{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Step: 3, Decoupled: true}
	require.True(t, k.AdamSteps(adam, buffers(ps), buffers(gs), buffers(ms), buffers(vs), ns))
	for i := range p2 {
		k.AdamStep(adam, p2[i].Buffer(), gs[i].Buffer(), m2[i].Buffer(), v2[i].Buffer(), nil, ns[i])
	}
	for i := range ps {
		require.Equal(t, p2[i].Float32s(), ps[i].Float32s(), "parameter %d", i)
		require.Equal(t, b2[i].Float32s(), bufs[i].Float32s(), "momentum %d", i)
		require.Equal(t, m2[i].Float32s(), ms[i].Float32s(), "m %d", i)
		require.Equal(t, v2[i].Float32s(), vs[i].Float32s(), "v %d", i)
	}
	// Float64 has no multi-tensor kernel: the caller is told so.
	p64, g64 := ps[0].Cast(device.Float64), gs[0].Cast(device.Float64)
	assert.False(t, k.SGDSteps(device.SGDHyper{LR: 0.1}, buffers([]*tensor.Tensor{p64}), buffers([]*tensor.Tensor{g64}), []device.Buffer{nil}, ns[:1]))
}
