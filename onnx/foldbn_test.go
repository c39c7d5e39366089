package onnx

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/tensor"
)

// countOps counts the nodes of each operator that a model runs.
func countOps(m *Model) map[string]int {
	ops := map[string]int{}
	for _, n := range m.nodes {
		ops[n.proto.GetOpType()]++
	}
	return ops
}

// randomizeBatchNorms gives every BatchNorm of a model random running
// statistics and affine parameters, so that folding them is not an
// identity.
func randomizeBatchNorms(t *testing.T, model layers.Layer, rng *rand.Rand) {
	t.Helper()
	for name, v := range layers.StateDict(model) {
		switch {
		case strings.HasSuffix(name, "running_var"):
			v.CopyFrom(tensor.RandUniform(rng, 0.5, 2, v.Shape()...).Cast(v.DType()))
		case strings.HasSuffix(name, "running_mean"), strings.HasSuffix(name, "bias"):
			v.CopyFrom(tensor.RandNormal(rng, 0, 0.5, v.Shape()...).Cast(v.DType()))
		case strings.HasSuffix(name, "bn1.weight"), strings.HasSuffix(name, "bn2.weight"), strings.HasSuffix(name, "downsample.1.weight"):
			v.CopyFrom(tensor.RandUniform(rng, 0.5, 1.5, v.Shape()...).Cast(v.DType()))
		}
	}
}

// TestFrozenFoldsBatchNorm exports networks with BatchNorm (a Conv →
// BatchNorm → ReLU stack and a ResNet with residual blocks and a
// downsampling shortcut) and imports them twice: as they are and Frozen.
// The frozen model must run no BatchNormalization (every one follows a
// Conv), fuse the ReLUs that followed them, and give the unfolded model's
// outputs to within float32 rounding.
func TestFrozenFoldsBatchNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	resnet, err := models.NewResNet(models.ResNetConfig{Layers: []int{1, 1}, Widths: []int{8, 16}, InChannels: 3, Classes: 5, Stem: "cifar"}, rng)
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		model layers.Layer
		shape []int
	}{
		{"conv-bn-relu", layers.NewSequential(
			layers.NewConv2d(3, 6, 3, 3, layers.Conv2dConfig{PadH: 1, PadW: 1}, rng), layers.NewBatchNorm2d(6, layers.BatchNormConfig{}), layers.ReLU{},
			layers.NewConv2d(6, 4, 1, 1, layers.Conv2dConfig{NoBias: true}, rng), layers.NewBatchNorm2d(4, layers.BatchNormConfig{Eps: 1e-3})), []int{2, 3, 7, 7}},
		{"resnet", resnet, []int{2, 3, 12, 12}},
	} {
		t.Run(c.name, func(t *testing.T) {
			randomizeBatchNorms(t, c.model, rng)
			layers.Eval(c.model)
			x := tensor.RandNormal(rng, 0, 1, c.shape...)
			var buf bytes.Buffer
			require.NoError(t, Export(c.model, []*tensor.Tensor{x}, &buf, ExportOptions{}))
			plain, err := Import(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			frozen, err := Import(bytes.NewReader(buf.Bytes()), Frozen())
			require.NoError(t, err)
			before, after := countOps(plain), countOps(frozen)
			require.Positive(t, before["BatchNormalization"])
			assert.Zero(t, after["BatchNormalization"], "BatchNormalization nodes left")
			assert.Less(t, after["Relu"], before["Relu"], "ReLUs fused into the Convs")
			assert.Equal(t, before["Conv"], after["Conv"])
			assert.Empty(t, frozen.Parameters())
			assert.Empty(t, frozen.buffers, "running statistics of inference-mode nodes are constants")

			for _, n := range []int{c.shape[0], 3} {
				shape := append([]int{n}, c.shape[1:]...)
				xn := tensor.RandNormal(rng, 0, 1, shape...)
				want, err := plain.Run(autograd.Constant(xn))
				require.NoError(t, err)
				got, err := frozen.Run(autograd.Constant(xn))
				require.NoError(t, err)
				w, g := want[0].Value.Float32s(), got[0].Value.Float32s()
				require.Len(t, g, len(w))
				for i := range w {
					require.InDelta(t, w[i], g[i], 1e-5+1e-5*math.Abs(float64(w[i])), "output %d of batch %d", i, n)
				}
			}
		})
	}
}

// TestFoldBatchNormKeepsWhatItCannotFold: a BatchNormalization after a
// Conv whose output is read twice stays.
func TestFoldBatchNormKeepsWhatItCannotFold(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	conv := layers.NewConv2d(2, 3, 3, 3, layers.Conv2dConfig{PadH: 1, PadW: 1}, rng)
	bn := layers.NewBatchNorm2d(3, layers.BatchNormConfig{})
	twice := convBNTwice{conv, bn}
	layers.Eval(twice)
	x := tensor.RandNormal(rng, 0, 1, 2, 2, 5, 5)
	var buf bytes.Buffer
	require.NoError(t, Export(twice, []*tensor.Tensor{x}, &buf, ExportOptions{}))
	plain, err := Import(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	frozen, err := Import(bytes.NewReader(buf.Bytes()), Frozen())
	require.NoError(t, err)
	assert.Equal(t, 1, countOps(frozen)["BatchNormalization"])
	want, err := plain.Run(autograd.Constant(x))
	require.NoError(t, err)
	got, err := frozen.Run(autograd.Constant(x))
	require.NoError(t, err)
	assert.Equal(t, want[0].Value.Float32s(), got[0].Value.Float32s())
}

// convBNTwice adds a Conv's output to its normalization: the Conv's
// output is read twice.
type convBNTwice struct {
	conv *layers.Conv2d
	bn   *layers.BatchNorm
}

func (m convBNTwice) Parameters() []*autograd.Param {
	return append(m.conv.Parameters(), m.bn.Parameters()...)
}
func (m convBNTwice) Children() []layers.Module { return []layers.Module{m.conv, m.bn} }
func (m convBNTwice) Forward(x *autograd.Var) *autograd.Var {
	y := m.conv.Forward(x)
	return autograd.Add(m.bn.Forward(y), y)
}

// BenchmarkFrozenResNet times the inference of a ResNet exported by Hora
// (CIFAR stem, basic blocks [2 2 2], widths [32 64 128], batch 32 of
// 3×32×32) imported as it is and Frozen, its BatchNormalization nodes
// folded into the convolutions and its ReLUs fused.
func BenchmarkFrozenResNet(b *testing.B) {
	rng := rand.New(rand.NewPCG(15, 16))
	net, err := models.NewResNet(models.ResNetConfig{Layers: []int{2, 2, 2}, Widths: []int{32, 64, 128}, InChannels: 3, Classes: 10, Stem: "cifar"}, rng)
	require.NoError(b, err)
	layers.Eval(net)
	x := tensor.RandNormal(rng, 0, 1, 32, 3, 32, 32)
	var buf bytes.Buffer
	require.NoError(b, Export(net, []*tensor.Tensor{x}, &buf, ExportOptions{}))
	for _, frozen := range []bool{false, true} {
		name := "plain"
		var opts []Option
		if frozen {
			name, opts = "frozen", []Option{Frozen()}
		}
		m, err := Import(bytes.NewReader(buf.Bytes()), opts...)
		require.NoError(b, err)
		layers.Eval(m)
		b.Run(name, func(b *testing.B) {
			arena := tensor.NewArena()
			for b.Loop() {
				if _, err := m.Run(autograd.NoGrad(autograd.Constant(x.WithArena(arena)))); err != nil {
					b.Fatal(err)
				}
				arena.Reset()
			}
		})
	}
}
