package onnx

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

func graphAttr(name string, g *onnxpb.GraphProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_GRAPH.Enum(), G: g}
}

// loopSpec is y = x·w^M: a Loop whose body multiplies the carried value by
// the parameter w, read from the outer graph.
func loopSpec(t *testing.T, trips int64, withCond bool) graphSpec {
	body := &onnxpb.GraphProto{
		Name: ptr("body"),
		Node: []*onnxpb.NodeProto{
			node("Mul", "mul", []string{"v_in", "w"}, []string{"v_out"}),
			node("Identity", "keep", []string{"cond_in"}, []string{"cond_out"}),
		},
		Input: []*onnxpb.ValueInfoProto{tensorInfo("i", onnxpb.TensorProto_INT64), tensorInfo("cond_in", onnxpb.TensorProto_BOOL),
			tensorInfo("v_in", f32, 2)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("cond_out", onnxpb.TensorProto_BOOL), tensorInfo("v_out", f32, 2)},
	}
	inits := []*onnxpb.TensorProto{initTensor(t, "w", tensor.FromFloat32([]float32{2, -0.5}, 2), f32)}
	m := "M"
	if trips >= 0 {
		inits = append(inits, initTensor(t, "M", tensor.FromInt64([]int64{trips}), onnxpb.TensorProto_INT64))
	} else {
		m = ""
	}
	cond := ""
	if withCond {
		cond = "cond"
		inits = append(inits, initTensor(t, "cond", tensor.FromInt64([]int64{1}), onnxpb.TensorProto_BOOL))
	}
	return graphSpec{
		nodes:   []*onnxpb.NodeProto{node("Loop", "loop", []string{m, cond, "x"}, []string{"y"}, graphAttr("body", body))},
		inits:   inits,
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, 2)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, 2)},
	}
}

func TestLoopIsTrainable(t *testing.T) {
	m := loopSpec(t, 3, true).load(t)
	require.Len(t, m.Parameters(), 1, "w, read inside the body, is a parameter")
	x := autograd.Constant(tensor.FromFloat32([]float32{1, 4}, 2))
	outs, err := m.Run(x)
	require.NoError(t, err)
	assert.Equal(t, []float32{8, -0.5}, outs[0].Value.Float32s())
	require.NoError(t, autograd.Backward(autograd.SumAll(outs[0])))
	// d/dw (x·w³) = 3·x·w².
	assert.InDeltaSlice(t, []float32{12, 3}, m.Parameters()[0].Grad.Float32s(), 1e-6)
}

func TestLoopWithoutEnd(t *testing.T) {
	defer func(n int) { maxUnrolledNodes = n }(maxUnrolledNodes)
	maxUnrolledNodes = 50
	m := loopSpec(t, -1, true).load(t)
	_, err := m.Run(autograd.Constant(tensor.FromFloat32([]float32{1, 1}, 2)))
	assert.ErrorContains(t, err, `node "loop" (Loop, opset 17): iteration 25: body: one run may evaluate at most 50 nodes of Loop, Scan and If subgraphs, and 50 are done (a loop that does not end?)`)
}

func TestIfReadsOuterValues(t *testing.T) {
	branch := func(name, op string) *onnxpb.GraphProto {
		return &onnxpb.GraphProto{
			Name:   &name,
			Node:   []*onnxpb.NodeProto{node(op, name+"_op", []string{"x"}, []string{name + "_y"})},
			Output: []*onnxpb.ValueInfoProto{tensorInfo(name+"_y", f32, 2)},
		}
	}
	s := graphSpec{
		nodes: []*onnxpb.NodeProto{node("If", "if", []string{"c"}, []string{"y"},
			graphAttr("then_branch", branch("then", "Relu")), graphAttr("else_branch", branch("else", "Neg")))},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("c", onnxpb.TensorProto_BOOL), tensorInfo("x", f32, 2)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, 2)},
	}
	m := s.load(t)
	x := autograd.Constant(tensor.FromFloat32([]float32{-1, 2}, 2))
	for cond, want := range map[int64][]float32{1: {0, 2}, 0: {1, -2}} {
		outs, err := m.Run(autograd.Constant(tensor.FromInt64([]int64{cond}).Reshape()), x)
		require.NoError(t, err)
		assert.Equal(t, want, outs[0].Value.Float32s())
	}

	// A branch reading a value defined nowhere is an error at import.
	bad := branch("then", "Relu")
	bad.Node[0].Input = []string{"nothing"}
	s.nodes[0].Attribute[0] = graphAttr("then_branch", bad)
	_, err := Import(bytes.NewReader(s.bytes(t)))
	assert.ErrorContains(t, err, `attribute then_branch: graph "then": onnx: node "then_op" (Relu, opset 17): input 0 "nothing" is not a graph input`)
}
