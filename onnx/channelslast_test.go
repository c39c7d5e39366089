package onnx

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/tensor"
)

// exportedMobileNet returns a small MobileNet for 1×28×28 images in
// evaluation mode, its parameters and running statistics random (so that
// the biases BatchNorm folds into the convolutions are not zero), and the
// model exported.
func exportedMobileNet(t *testing.T, rng *rand.Rand) (*models.Net, []byte) {
	net, err := models.NewMobileNet(models.MobileNetSmallConfig(1, 10), rng)
	require.NoError(t, err)
	for _, b := range layers.BuffersOf(net) { // running statistics that are not the identity
		if b.Value.DType().IsFloat() {
			b.Value = tensor.RandUniform(rng, 0.5, 1.5, b.Value.Shape()...)
		}
	}
	for _, p := range net.Parameters() {
		p.Value = tensor.RandUniform(rng, -0.5, 0.5, p.Value.Shape()...)
	}
	layers.Eval(net)
	var buf bytes.Buffer
	require.NoError(t, Export(net, []*tensor.Tensor{tensor.RandNormal(rng, 0, 1, 1, 1, 28, 28)}, &buf, ExportOptions{}))
	return net, buf.Bytes()
}

// TestChannelsLastChain imports a MobileNet exported by Hora (a stride-2
// stem, depthwise-separable blocks on 14×14 and 7×7 planes, pooling, a
// classifier) frozen: every Conv, the last one's output read by the
// global average pooling, is planned to write channels-last order;
// inference runs (the chain in channels-last order on the CPU, and the
// pooling of channels-last order) at batch 1 and 3, each twice
// (the second from the arena's recycled memory), give the Hora model's
// (its running statistics and parameters random, so that the folded
// biases are not zero)
// outputs within float32 rounding, and so does the model imported with
// its parameters, run while it may record gradients (no channels-last
// order then).
func TestChannelsLastChain(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	net, file := exportedMobileNet(t, rng)

	m, err := Import(bytes.NewReader(file), Frozen())
	require.NoError(t, err)
	layers.Eval(m)
	var convs, marked int
	var last *graphNode
	for _, n := range m.nodes {
		if n.proto.GetOpType() == "Conv" {
			convs++
			last = n
			if n.channelsLast {
				marked++
			}
		}
	}
	require.Greater(t, convs, 3)
	assert.Equal(t, convs, marked, "every Conv is channels-last")
	readers := 0
	for _, n := range m.nodes {
		if slices.Contains(n.inputs, last.outputs[0]) {
			readers++
			assert.Equal(t, "GlobalAveragePool", n.proto.GetOpType(), "the last Conv's reader")
		}
	}
	assert.Equal(t, 1, readers, "readers of the last Conv's output")

	trainable, err := Import(bytes.NewReader(file))
	require.NoError(t, err)
	layers.Eval(trainable)
	for _, batch := range []int{1, 3} {
		x := tensor.RandNormal(rng, 0, 1, batch, 1, 28, 28)
		want := net.Forward(autograd.Constant(x)).Value.Float32s()
		for run := range 2 {
			outs, err := m.Run(autograd.Constant(x))
			require.NoError(t, err)
			assert.InDeltaSlice(t, want, outs[0].Value.Float32s(), 1e-4, "batch %d, run %d", batch, run)
		}
		outs, err := trainable.Run(autograd.Constant(x))
		require.NoError(t, err)
		assert.InDeltaSlice(t, want, outs[0].Value.Float32s(), 1e-4, "batch %d, the model with parameters", batch)
	}
}
