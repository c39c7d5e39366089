package onnx

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// pads1 is the Conv attribute pads = 1 on every side.
func pads1() *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: ptr("pads"), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: []int64{1, 1, 1, 1}}
}

// TestAddFusedIntoConv checks residual blocks' Conv + Add (+ Relu): the
// Add folds into the Conv whose output only it reads, whichever input
// that is and even when its other input is computed after the Conv; a
// Conv whose output is read again keeps its Add. The outputs have the
// bits of the unfused operations, also where the shortcut broadcasts and
// the fused kernel does not apply.
func TestAddFusedIntoConv(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	w1, b1 := tensor.RandNormal(rng, 0, 0.3, 4, 4, 3, 3), tensor.RandNormal(rng, 0, 1, 4)
	w2 := tensor.RandNormal(rng, 0, 0.3, 4, 4, 1, 1)
	w3, b3 := tensor.RandNormal(rng, 0, 0.3, 4, 4, 3, 3), tensor.RandNormal(rng, 0, 1, 4)
	w4 := tensor.RandNormal(rng, 0, 0.3, 4, 4, 3, 3)
	shift := tensor.RandNormal(rng, 0, 1, 1, 4, 1, 1)
	s := graphSpec{
		nodes: []*onnxpb.NodeProto{
			node("Conv", "conv1", []string{"x", "w1", "b1"}, []string{"c1"}, pads1()),
			node("Sigmoid", "sig", []string{"x"}, []string{"z"}), // computed after conv1, read by its Add
			node("Add", "add1", []string{"c1", "z"}, []string{"s1"}),
			node("Relu", "relu1", []string{"s1"}, []string{"r1"}),
			node("Conv", "conv2", []string{"r1", "w2"}, []string{"c2"}),
			node("Add", "add2", []string{"r1", "c2"}, []string{"s2"}), // the Conv is input B
			node("Conv", "conv3", []string{"s2", "w3", "b3"}, []string{"c3"}, pads1()),
			node("Add", "add3", []string{"c3", "shift"}, []string{"s3"}), // broadcasts
			node("Conv", "conv4", []string{"s3", "w4"}, []string{"c4"}, pads1()),
			node("Add", "add4", []string{"c4", "s3"}, []string{"s4"}),
			node("Mul", "mul", []string{"s4", "c4"}, []string{"out"}), // c4 is read again: no fusion
		},
		inits: []*onnxpb.TensorProto{initTensor(t, "w1", w1, f32), initTensor(t, "b1", b1, f32), initTensor(t, "w2", w2, f32),
			initTensor(t, "w3", w3, f32), initTensor(t, "b3", b3, f32), initTensor(t, "w4", w4, f32), initTensor(t, "shift", shift, f32)},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, -1, 4, 6, 5)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("out", f32, -1, 4, 6, 5)},
	}
	m := s.load(t)
	assert.Contains(t, m.Summary(), "7 nodes: Add×1 Conv×4 Mul×1 Sigmoid×1", "three Adds fold into their Convs")

	x := tensor.RandNormal(rng, 0, 1, 2, 4, 6, 5)
	pad := tensor.ConvOptions{PadH: 1, PadW: 1}
	conv := func(x, w, b *tensor.Tensor, o tensor.ConvOptions) *tensor.Tensor {
		return tensor.Conv2DBiasAct(x, w, b, o, device.ActNone)
	}
	r1 := tensor.AddAct(conv(x, w1, b1, pad), x.Sigmoid(), device.ActReLU)
	s2 := tensor.AddAct(r1, conv(r1, w2, nil, tensor.ConvOptions{}), device.ActNone)
	s3 := conv(s2, w3, b3, pad).Add(shift)
	c4 := conv(s3, w4, nil, pad)
	want := c4.Add(s3).Mul(c4)
	for range 2 { // the second run reuses the first's memory
		outs, err := m.Run(autograd.NoGrad(autograd.Constant(x)))
		require.NoError(t, err)
		assert.Equal(t, want.Float32s(), outs[0].Value.Float32s())
	}
}

// TestAddFusedIntoConvErrors checks that an Add folded into a Conv still
// reports its own errors, naming it: a shortcut of another element type,
// and one whose shape does not broadcast.
func TestAddFusedIntoConvErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	w := tensor.RandNormal(rng, 0, 1, 4, 2, 3, 3)
	for _, tc := range []struct {
		name     string
		shortcut *onnxpb.ValueInfoProto
		value    *tensor.Tensor
		want     string
	}{
		{"type", tensorInfo("r", onnxpb.TensorProto_DOUBLE, -1, 4, 5, 5), tensor.RandNormal(rng, 0, 1, 1, 4, 5, 5).Cast(device.Float64), "add"},
		{"shape", tensorInfo("r", f32, -1, 3, 5, 5), tensor.RandNormal(rng, 0, 1, 1, 3, 5, 5), "add"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := graphSpec{
				nodes: []*onnxpb.NodeProto{
					node("Conv", "conv", []string{"x", "w"}, []string{"c"}, pads1()),
					node("Add", "add", []string{"c", "r"}, []string{"y"}),
				},
				inits:   []*onnxpb.TensorProto{initTensor(t, "w", w, f32)},
				inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, -1, 2, 5, 5), tc.shortcut},
				outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, -1, 4, 5, 5)},
			}
			m := s.load(t)
			_, err := m.Run(autograd.Constant(tensor.RandNormal(rng, 0, 1, 1, 2, 5, 5)), autograd.Constant(tc.value))
			require.Error(t, err)
			assert.ErrorContains(t, err, `"add"`)
			t.Log(err)
		})
	}
}

// TestAddFusedIntoConvExports checks that a model whose Adds fold into its
// Convs exports again as Conv, Add and Relu: a ResNet exported, imported
// Frozen (BatchNorm folded, so each block's last Conv takes its Add),
// exported from that import and imported again gives the same outputs.
func TestAddFusedIntoConvExports(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	resnet, err := models.NewResNet(models.ResNetConfig{Layers: []int{1, 1}, Widths: []int{8, 16}, InChannels: 3, Classes: 5, Stem: "cifar"}, rng)
	require.NoError(t, err)
	randomizeBatchNorms(t, resnet, rng)
	layers.Eval(resnet)
	x := tensor.RandNormal(rng, 0, 1, 2, 3, 12, 12)
	var first bytes.Buffer
	require.NoError(t, Export(resnet, []*tensor.Tensor{x}, &first, ExportOptions{}))
	frozen, err := Import(bytes.NewReader(first.Bytes()), Frozen())
	require.NoError(t, err)
	fused := 0
	for _, n := range frozen.nodes {
		if n.add != nil {
			fused++
		}
	}
	require.Equal(t, 2, fused, "each residual block's Add folds into its last Conv")

	var second bytes.Buffer
	require.NoError(t, Export(frozen, []*tensor.Tensor{x}, &second, ExportOptions{}))
	again, err := Import(bytes.NewReader(second.Bytes()))
	require.NoError(t, err)
	assert.Contains(t, again.OpTypes(), "Add", "the Adds are exported")
	want, err := frozen.Run(autograd.Constant(x))
	require.NoError(t, err)
	got, err := again.Run(autograd.Constant(x))
	require.NoError(t, err)
	assert.InDeltaSlice(t, want[0].Value.Float32s(), got[0].Value.Float32s(), 1e-5)
}

// TestAddFusedIntoConvOtherRanks checks 1-D and 3-D convolutions whose
// Add is folded into them (they run the Conv, then the Add): their
// outputs have the bits of the same graph with an Identity between the
// Conv and the Add, which keeps them apart.
func TestAddFusedIntoConvOtherRanks(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	for _, spatial := range [][]int64{{9}, {4, 5, 6}, {6, 7}} {
		n := len(spatial)
		w := tensor.RandNormal(rng, 0, 0.5, append([]int{3, 2}, slices.Repeat([]int{3}, n)...)...)
		pads := &onnxpb.AttributeProto{Name: ptr("pads"), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: make([]int64, 2*n)}
		for i := range pads.Ints {
			pads.Ints[i] = 1
		}
		dims := append([]int64{-1, 3}, spatial...)
		spec := func(apart bool) graphSpec {
			conv := node("Conv", "conv", []string{"x", "w"}, []string{"c"}, pads)
			add := node("Add", "add", []string{"c", "r"}, []string{"s"})
			nodes := []*onnxpb.NodeProto{conv, add, node("Relu", "relu", []string{"s"}, []string{"y"})}
			if apart {
				conv.Output = []string{"c0"}
				nodes = append([]*onnxpb.NodeProto{conv, node("Identity", "id", []string{"c0"}, []string{"c"})}, nodes[1:]...)
			}
			return graphSpec{nodes: nodes, inits: []*onnxpb.TensorProto{initTensor(t, "w", w, f32)},
				inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, append([]int64{-1, 2}, spatial...)...), tensorInfo("r", f32, dims...)},
				outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, dims...)}}
		}
		fused, apart := spec(false).load(t), spec(true).load(t)
		require.Contains(t, fused.Summary(), "1 nodes: Conv×1", "spatial %v", spatial)
		shape := make([]int, n)
		for i, d := range spatial {
			shape[i] = int(d)
		}
		x := autograd.Constant(tensor.RandNormal(rng, 0, 1, append([]int{2, 2}, shape...)...))
		r := autograd.Constant(tensor.RandNormal(rng, 0, 1, append([]int{2, 3}, shape...)...))
		want, err := apart.Run(x, r)
		require.NoError(t, err)
		got, err := fused.Run(x, r)
		require.NoError(t, err, "spatial %v", spatial)
		assert.Equal(t, want[0].Value.Float32s(), got[0].Value.Float32s(), "spatial %v", spatial)
	}
}
