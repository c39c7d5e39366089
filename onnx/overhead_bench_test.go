package onnx

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/tensor"
)

// BenchmarkNodeOverhead times what a frozen model's run costs per node
// besides its kernels: 100 Conv+Relu nodes (1×1, 8 channels) on a 4×4
// image, whose kernels take a few dozen nanoseconds each. It reports the
// time per node.
func BenchmarkNodeOverhead(b *testing.B) {
	rng := rand.New(rand.NewPCG(17, 18))
	var ls []layers.Layer
	const nodes = 100
	for range nodes {
		ls = append(ls, layers.NewConv2d(8, 8, 1, 1, layers.Conv2dConfig{}, rng), layers.ReLU{})
	}
	net := layers.NewSequential(ls...)
	layers.Eval(net)
	x := tensor.RandNormal(rng, 0, 1, 1, 8, 4, 4)
	var buf bytes.Buffer
	require.NoError(b, Export(net, []*tensor.Tensor{x}, &buf, ExportOptions{}))
	m, err := Import(bytes.NewReader(buf.Bytes()), Frozen())
	require.NoError(b, err)
	layers.Eval(m)
	arena := tensor.NewArena()
	for b.Loop() {
		if _, err := m.Run(autograd.NoGrad(autograd.Constant(x.WithArena(arena)))); err != nil {
			b.Fatal(err)
		}
		arena.Reset()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/nodes, "ns/node")
}
