package onnx

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// TestLanesGiveTheWholeBatchsOutputs imports a MobileNet exported by Hora
// frozen and runs batches of 1 to 7 images: the first run of a batch size
// keeps the batch whole, the next ones split it into lanes (two cores or
// more; the first run's memory per image against the weights decides),
// and every run gives the Hora model's outputs.
func TestLanesGiveTheWholeBatchsOutputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	net, file := exportedMobileNet(t, rng)
	m, err := Import(bytes.NewReader(file), Frozen())
	require.NoError(t, err)
	layers.Eval(m)
	require.True(t, m.lanes, "a MobileNet treats each image on its own")
	weights := m.weightBytes
	m.weightBytes = 0 // as if two images' activations outweighed them

	dev := tensor.CPU()
	for batch := 1; batch <= 7; batch++ {
		x := tensor.RandNormal(rng, 0, 1, batch, 1, 28, 28)
		want := net.Forward(autograd.Constant(x)).Value.Float32s()
		in := []*autograd.Var{autograd.Constant(x)}
		_, lanes := m.laneSplit(dev, in)
		assert.Equal(t, 1, lanes, "batch %d: the first run keeps the batch whole", batch)
		for run := range 3 {
			outs, err := m.Run(autograd.Constant(x))
			require.NoError(t, err)
			assert.Equal(t, []int{batch, 10}, outs[0].Value.Shape())
			assert.InDeltaSlice(t, want, outs[0].Value.Float32s(), 1e-4, "batch %d, run %d", batch, run)
		}
		_, lanes = m.laneSplit(dev, in)
		if lr, ok := dev.(interface{ Lanes() int }); ok && lr.Lanes() > 1 && batch > laneBatch {
			assert.Greater(t, lanes, 1, "batch %d: later runs split it", batch)
		}
		assert.Equal(t, 1, func() int { _, n := m.laneSplit(dev, []*autograd.Var{autograd.Leaf(x)}); return n }(),
			"batch %d: a run that may record gradients keeps the batch whole", batch)
	}

	// Weights larger than two images' activations keep the batch whole
	// (each lane would read them again for every chunk).
	assert.Greater(t, weights, 0)
	m.weightBytes = 1 << 40
	_, lanes := m.laneSplit(dev, []*autograd.Var{autograd.Constant(tensor.Zeros(6, 1, 28, 28))})
	assert.Equal(t, 1, lanes, "weights larger than a chunk's activations")
}

// TestPlanLanes plans lanes for small graphs around a Conv: those whose
// output item i depends on input item i alone may split their batch, the
// others (a reduction over the batch, a reshape, a batch-sized constant,
// MaxPool's indices, a Dropout, whose masks are drawn per run, …) may
// not, nor may a graph without a Conv or whose input's first axis is not
// dynamic.
func TestPlanLanes(t *testing.T) {
	rng := rand.New(rand.NewPCG(83, 84))
	w := initTensor(t, "w", tensor.RandNormal(rng, 0, 1, 4, 2, 3, 3), f32)
	fc := initTensor(t, "fc", tensor.RandNormal(rng, 0, 1, 4, 3), f32)
	batchConst := initTensor(t, "c4", tensor.RandNormal(rng, 0, 1, 4, 4, 6, 6), f32)
	rowConst := initTensor(t, "c1", tensor.RandNormal(rng, 0, 1, 1, 4, 1, 1), f32)
	shape := initTensor(t, "shape", tensor.FromInt64([]int64{-1, 144}, 2), onnxpb.TensorProto_INT64)
	conv := node("Conv", "conv", []string{"x", "w"}, []string{"c"}, attrInts("pads", 1, 1, 1, 1))
	// head ends a graph: pooling, Flatten, Gemm on what tail reads.
	head := func(from string) []*onnxpb.NodeProto {
		return []*onnxpb.NodeProto{
			node("GlobalAveragePool", "pool", []string{from}, []string{"p"}),
			node("Flatten", "flat", []string{"p"}, []string{"f"}),
			node("Gemm", "fc", []string{"f", "fc"}, []string{"y"}),
		}
	}
	for _, c := range []struct {
		name  string
		nodes []*onnxpb.NodeProto
		inits []*onnxpb.TensorProto
		lanes bool
		batch int64 // the input's first axis: -1 (dynamic, "batch") unless set
	}{
		{"conv, relu, pooling, gemm", append([]*onnxpb.NodeProto{conv, node("Relu", "relu", []string{"c"}, []string{"r"})}, head("r")...), nil, true, 0},
		{"add of a constant broadcast over the batch", append([]*onnxpb.NodeProto{conv, node("Add", "add", []string{"c", "c1"}, []string{"a"})}, head("a")...),
			[]*onnxpb.TensorProto{rowConst}, true, 0},
		{"softmax over the classes", append(append([]*onnxpb.NodeProto{conv}, head("c")...)[:4:4], node("Softmax", "sm", []string{"y"}, []string{"s"})), nil, true, 0},
		{"add of a constant with an axis against the batch", append([]*onnxpb.NodeProto{conv, node("Add", "add", []string{"c", "c4"}, []string{"a"})}, head("a")...),
			[]*onnxpb.TensorProto{batchConst}, false, 0},
		{"softmax over the batch", append(append([]*onnxpb.NodeProto{conv}, head("c")...)[:4:4], node("Softmax", "sm", []string{"y"}, []string{"s"}, intAttr("axis", 0))), nil, false, 0},
		{"reshape", []*onnxpb.NodeProto{conv, node("Reshape", "rs", []string{"c", "shape"}, []string{"f"}), node("Gemm", "fc", []string{"f", "fc144"}, []string{"y"})},
			[]*onnxpb.TensorProto{shape, initTensor(t, "fc144", tensor.RandNormal(rng, 0, 1, 144, 3), f32)}, false, 0},
		{"gemm of the batch transposed", []*onnxpb.NodeProto{conv, node("GlobalAveragePool", "pool", []string{"c"}, []string{"p"}),
			node("Flatten", "flat", []string{"p"}, []string{"f"}), node("Gemm", "fc", []string{"f", "fcT"}, []string{"y"}, intAttr("transA", 1))},
			[]*onnxpb.TensorProto{initTensor(t, "fcT", tensor.RandNormal(rng, 0, 1, 2, 3), f32)}, false, 0},
		{"max pooling with indices", append([]*onnxpb.NodeProto{conv, node("MaxPool", "mp", []string{"c"}, []string{"m", "idx"}, attrInts("kernel_shape", 2, 2))}, head("m")...), nil, false, 0},
		{"mean over the batch", append([]*onnxpb.NodeProto{conv, node("ReduceMean", "mean", []string{"c"}, []string{"r"}, attrInts("axes", 0))}, head("r")...), nil, false, 0},
		{"a static first axis", append([]*onnxpb.NodeProto{conv}, head("c")...), nil, false, 4},
		{"dropout", append([]*onnxpb.NodeProto{conv, node("Dropout", "drop", []string{"c"}, []string{"d"})}, head("d")...), nil, false, 0},
		{"no conv", []*onnxpb.NodeProto{node("GlobalAveragePool", "pool", []string{"x"}, []string{"p"}),
			node("Flatten", "flat", []string{"p"}, []string{"f"}), node("Gemm", "fc", []string{"f", "fc2"}, []string{"y"})},
			[]*onnxpb.TensorProto{initTensor(t, "fc2", tensor.RandNormal(rng, 0, 1, 2, 3), f32)}, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := c.nodes[len(c.nodes)-1].GetOutput()[0]
			g := graphSpec{
				nodes:   c.nodes,
				inits:   append([]*onnxpb.TensorProto{w, fc}, c.inits...),
				inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, cmp.Or(c.batch, -1), 2, 6, 6)},
				outputs: []*onnxpb.ValueInfoProto{tensorInfo(out, f32)},
			}
			m := g.load(t, Frozen())
			assert.Equal(t, c.lanes, m.lanes)
		})
	}
}

// TestLaneChunks splits batches into chunks of at most laneBatch items, a
// multiple of the lanes in number (but never more than the items), each
// chunk at least one item, the sizes as even as can be, larger first.
func TestLaneChunks(t *testing.T) {
	for _, c := range []struct {
		n, lanes int
		sizes    []int
	}{
		{3, 2, []int{2, 1}},
		{4, 2, []int{2, 2}},
		{6, 2, []int{2, 2, 1, 1}},
		{7, 2, []int{2, 2, 2, 1}},
		{32, 2, []int{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}},
		{3, 16, []int{1, 1, 1}},
		{40, 16, slices.Concat(slices.Repeat([]int{2}, 8), slices.Repeat([]int{1}, 24))}, // 32 chunks: two rounds of 16
	} {
		chunks, first := laneChunks(c.n, c.lanes)
		sizes := make([]int, chunks)
		for k := range sizes {
			sizes[k] = first(k+1) - first(k)
		}
		assert.Equal(t, c.sizes, sizes, "%d items on %d lanes", c.n, c.lanes)
		assert.Equal(t, 0, first(0))
		assert.Equal(t, c.n, first(chunks))
	}
}
