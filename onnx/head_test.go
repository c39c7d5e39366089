package onnx

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// The weights of the small classifiers below: features h = relu(x·W1ᵀ +
// b1) of 3 values from inputs of 4, then 2 classes.
var (
	headW1 = []float32{0.5, -1, 0.25, 2, 1, -0.5, 0.75, 0.1, -0.2, 0.3, 1.5, -1} // [3, 4]
	headB1 = []float32{0.1, 0.2, -0.3}
	headW2 = []float32{1, -1, 0.5, 2, 0.25, -0.75} // [2, 3] (out, in)
	headB2 = []float32{0.05, -0.1}
)

// headFeatures computes relu(x·W1ᵀ + b1) for a batch of rows of 4.
func headFeatures(x []float32) []float32 {
	var h []float32
	for i := 0; i+4 <= len(x); i += 4 {
		for o := range 3 {
			s := headB1[o]
			for k := range 4 {
				s += x[i+k] * headW1[4*o+k]
			}
			h = append(h, max(s, 0))
		}
	}
	return h
}

// headLogits computes h·W2ᵀ + b2 for rows of 3 features.
func headLogits(h []float32) []float32 {
	var y []float32
	for i := 0; i+3 <= len(h); i += 3 {
		for o := range 2 {
			s := headB2[o]
			for k := range 3 {
				s += h[i+k] * headW2[3*o+k]
			}
			y = append(y, s)
		}
	}
	return y
}

// transpose2 returns the [c, r] transpose of a row-major [r, c] matrix.
func transpose2(v []float32, r, c int) []float32 {
	out := make([]float32, len(v))
	for i := range r {
		for j := range c {
			out[j*r+i] = v[i*c+j]
		}
	}
	return out
}

// headSpec is x → Gemm "fc1" → Relu → the classifier nodes, which read
// "h" and whose last output is the graph output "y" ([batch, 2]). The
// initializers are fc1.weight, fc1.bias, fc.weight ([2, 3] as out×in,
// or [3, 2] with wT) and fc.bias.
func headSpec(t testing.TB, wT bool, classifier ...*onnxpb.NodeProto) graphSpec {
	w := tensor.FromFloat32(headW2, 2, 3)
	if wT {
		w = tensor.FromFloat32(transpose2(headW2, 2, 3), 3, 2)
	}
	return graphSpec{
		nodes: append([]*onnxpb.NodeProto{
			node("Gemm", "fc1", []string{"x", "fc1.weight", "fc1.bias"}, []string{"h0"}, intAttr("transB", 1)),
			node("Relu", "relu", []string{"h0"}, []string{"h"}),
		}, classifier...),
		inits: []*onnxpb.TensorProto{
			initTensor(t, "fc1.weight", tensor.FromFloat32(headW1, 3, 4), f32),
			initTensor(t, "fc1.bias", tensor.FromFloat32(headB1, 3), f32),
			initTensor(t, "fc.weight", w, f32),
			initTensor(t, "fc.bias", tensor.FromFloat32(headB2, 2), f32),
		},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, -1, 4)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, -1, 2)},
	}
}

var headInput = []float32{1, 2, -1, 0.5, -0.5, 0.25, 2, -1, 0, 1, 1, 1} // [3, 4]

// TestWithoutHead removes classifiers of every recognized form: the
// model imported whole gives the logits, imported WithoutHead the
// features, and Head describes the classifier.
func TestWithoutHead(t *testing.T) {
	t.Parallel()
	gemmT := node("Gemm", "fc", []string{"h", "fc.weight", "fc.bias"}, []string{"y"}, intAttr("transB", 1))
	unnamed := node("Gemm", "", []string{"h", "fc.weight", "fc.bias"}, []string{"y"})
	matmul := node("MatMul", "fc/MatMul", []string{"h", "fc.weight"}, []string{"mm"})
	for _, tc := range []struct {
		name       string
		spec       graphSpec
		want       HeadInfo
		withoutB   bool // the classifier has no bias
		softmaxOut bool // the whole model outputs softmax(logits)
	}{
		{"Gemm transB", headSpec(t, false, gemmT),
			HeadInfo{Node: "fc", Op: "Gemm", InFeatures: 3, OutFeatures: 2, Weight: "fc.weight", Bias: "fc.bias", Features: "h"}, false, false},
		{"unnamed Gemm", headSpec(t, true, unnamed),
			HeadInfo{Node: "Gemm_2", Op: "Gemm", InFeatures: 3, OutFeatures: 2, Weight: "fc.weight", Bias: "fc.bias", Features: "h"}, false, false},
		{"MatMul+Add", headSpec(t, true, matmul, node("Add", "fc/Add", []string{"mm", "fc.bias"}, []string{"y"})),
			HeadInfo{Node: "fc/MatMul", Op: "MatMul+Add", InFeatures: 3, OutFeatures: 2, Weight: "fc.weight", Bias: "fc.bias", Features: "h"}, false, false},
		{"bias+MatMul", headSpec(t, true, matmul, node("Add", "fc/Add", []string{"fc.bias", "mm"}, []string{"y"})),
			HeadInfo{Node: "fc/MatMul", Op: "MatMul+Add", InFeatures: 3, OutFeatures: 2, Weight: "fc.weight", Bias: "fc.bias", Features: "h"}, false, false},
		{"MatMul", headSpec(t, true, node("MatMul", "fc", []string{"h", "fc.weight"}, []string{"y"})),
			HeadInfo{Node: "fc", Op: "MatMul", InFeatures: 3, OutFeatures: 2, Weight: "fc.weight", Features: "h"}, true, false},
		{"Gemm, Softmax, Identity", headSpec(t, false,
			node("Gemm", "fc", []string{"h", "fc.weight", "fc.bias"}, []string{"logits"}, intAttr("transB", 1)),
			node("Softmax", "", []string{"logits"}, []string{"p"}, intAttr("axis", 1)),
			node("Identity", "out", []string{"p"}, []string{"y"})),
			HeadInfo{Node: "fc", Op: "Gemm", InFeatures: 3, OutFeatures: 2, Weight: "fc.weight", Bias: "fc.bias", Features: "h",
				Dropped: []string{"Softmax_3", "out"}}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := autograd.Constant(tensor.FromFloat32(headInput, 3, 4))
			h := headFeatures(headInput)

			whole := tc.spec.load(t)
			_, ok := whole.Head()
			assert.False(t, ok, "imported with its head")
			outs, err := whole.Run(x)
			require.NoError(t, err)
			logits := headLogits(h)
			if tc.withoutB {
				for i := range logits {
					logits[i] -= headB2[i%2]
				}
			}
			if tc.softmaxOut {
				for i := 0; i < len(logits); i += 2 {
					a, b := math.Exp(float64(logits[i])), math.Exp(float64(logits[i+1]))
					logits[i], logits[i+1] = float32(a/(a+b)), float32(b/(a+b))
				}
			}
			assert.InDeltaSlice(t, logits, outs[0].Value.Float32s(), 1e-5, "the whole model")

			m := tc.spec.load(t, WithoutHead())
			head, ok := m.Head()
			require.True(t, ok)
			assert.Equal(t, tc.want, head)
			require.Len(t, m.Outputs, 1)
			assert.Equal(t, "h: float[batch,3]", m.Outputs[0].String())
			var params []string
			for _, p := range m.Parameters() {
				params = append(params, p.Name)
			}
			assert.Equal(t, []string{"fc1.weight", "fc1.bias"}, params, "the classifier's initializers are gone")
			assert.Equal(t, []string{"Gemm", "Relu"}, m.OpTypes())
			y := m.Forward(x)
			assert.Equal(t, []int{3, 3}, y.Shape())
			assert.InDeltaSlice(t, h, y.Value.Float32s(), 1e-6, "the features")
		})
	}
}

// TestWithoutHeadWithAppendedLinear puts a new classifier after the cut
// model and trains both.
func TestWithoutHeadWithAppendedLinear(t *testing.T) {
	t.Parallel()
	m := headSpec(t, false, node("Gemm", "fc", []string{"h", "fc.weight", "fc.bias"}, []string{"y"}, intAttr("transB", 1))).load(t, WithoutHead())
	lin := layers.NewLinear(3, 5, true, rand.New(rand.NewPCG(1, 2)))
	net := layers.NewSequential(m, lin)
	loss := autograd.SumAll(net.Forward(autograd.Constant(tensor.FromFloat32(headInput, 3, 4))))
	require.NoError(t, autograd.Backward(loss))
	require.Len(t, net.Parameters(), 4)
	for _, p := range net.Parameters() {
		assert.NotNil(t, p.Grad, p.Name)
	}
}

// TestWithoutHeadErrors checks the messages of models without a
// classifier to remove.
func TestWithoutHeadErrors(t *testing.T) {
	t.Parallel()
	noHead := headSpec(t, false)
	noHead.nodes = noHead.nodes[:1]
	noHead.nodes = append(noHead.nodes,
		node("MatMul", "proj", []string{"h0", "fc.weight"}, []string{"p"}),
		node("Relu", "relu", []string{"h0"}, []string{"y"}))
	plain := graphSpec{
		nodes:   []*onnxpb.NodeProto{node("Relu", "", []string{"x"}, []string{"y"})},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, -1, 4)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, -1, 4)},
	}
	computedWeight := graphSpec{
		nodes:   []*onnxpb.NodeProto{node("Gemm", "fc", []string{"x", "w"}, []string{"y"}, intAttr("transB", 1))},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, -1, 4), tensorInfo("w", f32, 2, 4)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, -1, 2)},
	}
	passThrough := graphSpec{
		nodes:   []*onnxpb.NodeProto{node("Identity", "id", []string{"x"}, []string{"y"})},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, -1, 4)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, -1, 4)},
	}
	twoOutputs := headSpec(t, false, node("Gemm", "fc", []string{"h", "fc.weight", "fc.bias"}, []string{"y"}, intAttr("transB", 1)))
	twoOutputs.outputs = append(twoOutputs.outputs, tensorInfo("h", f32, -1, 3))
	for _, tc := range []struct {
		name string
		spec graphSpec
		err  string
	}{
		{"no classifier", noHead,
			`onnx: WithoutHead: graph output "y" is computed by node "relu" (Relu), expected the classifier: a Gemm whose B is an initializer, MatMul by an initializer then Add of an initializer, or MatMul by an initializer; ` +
				`the graph's Gemm and MatMul nodes with an initializer weight: "fc1" (Gemm, 4→3), "proj" (MatMul, 2→3)`},
		{"no candidates", plain,
			`onnx: WithoutHead: graph output "y" is computed by node "Relu_0" (Relu), expected the classifier: a Gemm whose B is an initializer, MatMul by an initializer then Add of an initializer, or MatMul by an initializer; ` +
				`the graph has no Gemm or MatMul with an initializer weight`},
		{"weight is an input", computedWeight,
			`onnx: WithoutHead: graph output "y" is computed by node "fc" (Gemm), expected the classifier: a Gemm whose B is an initializer, MatMul by an initializer then Add of an initializer, or MatMul by an initializer; ` +
				`the graph has no Gemm or MatMul with an initializer weight`},
		{"output is the input", passThrough,
			`onnx: WithoutHead: graph output "y" is not computed by a node, so there is no classifier to remove; the graph has no Gemm or MatMul with an initializer weight`},
		{"two outputs", twoOutputs,
			`onnx: WithoutHead: the head is cut from a model with one output; this one has 2 ("y", "h"); ` +
				`the graph's Gemm and MatMul nodes with an initializer weight: "fc1" (Gemm, 4→3), "fc" (Gemm, 3→2)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Import(bytes.NewReader(tc.spec.bytes(t)), WithoutHead())
			require.Error(t, err)
			assert.Equal(t, tc.err, err.Error())
			var he *HeadError
			assert.ErrorAs(t, err, &he)
		})
	}
}

// twoInputSpec has inputs a and b; y = Gemm(relu(a)) needs a only, the
// dead node "mix" reads both, and z (not a graph output unless asked)
// adds them.
func twoInputSpec(t testing.TB, outputZ bool) graphSpec {
	s := headSpec(t, false, node("Gemm", "fc", []string{"h", "fc.weight", "fc.bias"}, []string{"y"}, intAttr("transB", 1)))
	s.nodes[0].Input[0] = "a"
	s.nodes = append(s.nodes, node("Add", "mix", []string{"a", "b"}, []string{"z"}))
	s.inputs = []*onnxpb.ValueInfoProto{tensorInfo("a", f32, -1, 4), tensorInfo("b", f32, -1, 4)}
	if outputZ {
		s.outputs = append(s.outputs, tensorInfo("z", f32, -1, 4))
	}
	return s
}

// TestInputOption feeds a model of two inputs through one of them.
func TestInputOption(t *testing.T) {
	t.Parallel()
	x := autograd.Constant(tensor.FromFloat32(headInput, 3, 4))
	want := headLogits(headFeatures(headInput))

	// Without the option, Run takes both inputs and Forward says what to do.
	m := twoInputSpec(t, false).load(t)
	require.Len(t, m.Inputs, 2)
	outs, err := m.Run(x, x)
	require.NoError(t, err)
	assert.InDeltaSlice(t, want, outs[0].Value.Float32s(), 1e-5)
	assert.PanicsWithError(t, `onnx: Forward needs a model with one input; this one has 2 ("a", "b"): import it with onnx.Input(name) to feed it through one of them, or call Run with all of them`,
		func() { m.Forward(x) })

	m = twoInputSpec(t, false).load(t, Input("a"))
	require.Len(t, m.Inputs, 1)
	assert.Equal(t, "a: float[batch,4]", m.Inputs[0].String())
	assert.Equal(t, []string{"Gemm", "Relu"}, m.OpTypes(), "the dead node (Add) is pruned")
	assert.InDeltaSlice(t, want, m.Forward(x).Value.Float32s(), 1e-5)

	// With WithoutHead too.
	m = twoInputSpec(t, false).load(t, Input("a"), WithoutHead())
	require.Len(t, m.Inputs, 1)
	assert.InDeltaSlice(t, headFeatures(headInput), m.Forward(x).Value.Float32s(), 1e-6)

	_, err = Import(bytes.NewReader(twoInputSpec(t, false).bytes(t)), Input("c"))
	assert.EqualError(t, err, `onnx: Input("c"): the model has no graph input "c"; its inputs: a: float[batch,4], b: float[batch,4]`)
	_, err = Import(bytes.NewReader(twoInputSpec(t, true).bytes(t)), Input("a"))
	assert.EqualError(t, err, `onnx: Input("a"): the outputs ("y", "z") also need graph input b: float[batch,4], which is not an initializer: the model cannot run from "a" alone`)
	// An initializer listed among the inputs (older files) is no input to choose.
	s := twoInputSpec(t, false)
	s.inputs = append(s.inputs, tensorInfo("fc.weight", f32, 2, 3))
	_, err = Import(bytes.NewReader(s.bytes(t)), Input("fc.weight"))
	assert.EqualError(t, err, `onnx: Input("fc.weight"): the model has no graph input "fc.weight"; its inputs: a: float[batch,4], b: float[batch,4]`)
	m = s.load(t, Input("a"), WithoutHead())
	require.Len(t, m.Inputs, 1, "the dropped classifier's weight does not become an input")
}

// bnSpec is one BatchNormalization of 2 channels on x [batch, 2, 3].
func bnSpec(t testing.TB) graphSpec {
	return graphSpec{
		nodes: []*onnxpb.NodeProto{node("BatchNormalization", "bn", []string{"x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"}, []string{"y"})},
		inits: []*onnxpb.TensorProto{
			initTensor(t, "bn.weight", tensor.FromFloat32([]float32{1.5, 0.5}, 2), f32),
			initTensor(t, "bn.bias", tensor.FromFloat32([]float32{0.25, -1}, 2), f32),
			initTensor(t, "bn.running_mean", tensor.FromFloat32([]float32{0.5, -0.5}, 2), f32),
			initTensor(t, "bn.running_var", tensor.FromFloat32([]float32{1, 4}, 2), f32),
		},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, -1, 2, 3)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, -1, 2, 3)},
	}
}

// TestFrozenBatchNorm checks that a BatchNormalization whose scale and
// bias do not train runs as in inference in training mode: the running
// statistics normalize and stay as they are.
func TestFrozenBatchNorm(t *testing.T) {
	t.Parallel()
	xs := []float32{1, 2, 3, -1, 0, 5, 0.5, -2, 4, 2, 2, -3}
	x := tensor.FromFloat32(xs, 2, 2, 3)
	// (x - mean)/√(var + ε)·scale + bias with the running statistics.
	var inference []float32
	mean, variance, scale, bias := []float32{0.5, -0.5}, []float32{1, 4}, []float32{1.5, 0.5}, []float32{0.25, -1}
	for i, v := range xs {
		c := i / 3 % 2
		inference = append(inference, (v-mean[c])/float32(math.Sqrt(float64(variance[c])+1e-5))*scale[c]+bias[c])
	}
	runTraining := func(m *Model) []float32 {
		layers.Train(m)
		outs, err := m.Run(autograd.Constant(x))
		require.NoError(t, err)
		return outs[0].Value.Float32s()
	}
	stats := func(m *Model) [][]float32 {
		return [][]float32{m.Buffers()[0].Value.Float32s(), m.Buffers()[1].Value.Float32s()}
	}
	initial := [][]float32{mean, variance}

	frozen := bnSpec(t).load(t)
	for _, p := range frozen.Parameters() {
		p.Freeze()
	}
	assert.InDeltaSlice(t, inference, runTraining(frozen), 1e-5, "frozen parameters")
	assert.Equal(t, initial, stats(frozen), "the running statistics are not updated")

	constants := bnSpec(t).load(t, Trainable(func(string) bool { return false }))
	assert.InDeltaSlice(t, inference, runTraining(constants), 1e-5, "constants")
	assert.Equal(t, initial, stats(constants))

	// Training scale or bias: the batch's statistics, which update the
	// running ones.
	half := bnSpec(t).load(t)
	half.Parameters()[0].Freeze()
	y := runTraining(half)
	assert.InDelta(t, 0.25, (y[0]+y[1]+y[2]+y[6]+y[7]+y[8])/6, 1e-5, "channel 0 is normalized with its batch mean, then shifted by the bias")
	assert.NotEqual(t, initial, stats(half))

	// Evaluation mode is unchanged by freezing.
	layers.Eval(frozen)
	outs, err := frozen.Run(autograd.Constant(x))
	require.NoError(t, err)
	assert.InDeltaSlice(t, inference, outs[0].Value.Float32s(), 1e-5)
}
