package onnx

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// TestInputs checks nodeCtx.inputs against declarations of every kind:
// what it returns and what its errors say.
func TestInputs(t *testing.T) {
	t.Parallel()
	a, b, v := autograd.Constant(tensor.Zeros(1)), autograd.Constant(tensor.Zeros(2)), autograd.Constant(tensor.Zeros(3))
	ctx := func(op string, in ...*autograd.Var) *nodeCtx {
		names := make([]string, len(in))
		for i, x := range in {
			if x != nil {
				names[i] = "x"
			}
		}
		return newNodeCtx(&onnxpb.NodeProto{OpType: &op, Input: names}, 0, 17, tensor.CPU(), false).withInputs(in...)
	}
	for _, tc := range []struct {
		name string
		c    *nodeCtx
		decl []string
		want []*autograd.Var
		err  string
	}{
		{"all given", ctx("Conv", a, b, v), []string{"X", "W", "B?"}, []*autograd.Var{a, b, v}, ""},
		{"optional left out", ctx("Conv", a, b), []string{"X", "W", "B?"}, []*autograd.Var{a, b, nil}, ""},
		{"optional empty", ctx("Clip", a, nil, v), []string{"input", "min?", "max?"}, []*autograd.Var{a, nil, v}, ""},
		{"trailing empty inputs", ctx("Relu", a, nil, nil), []string{"X"}, []*autograd.Var{a}, ""},
		{"required left out", ctx("Conv", a), []string{"X", "W", "B?"}, nil,
			"input 1 (W) is missing: the node has one input; Conv takes 2 to 3 inputs (X, W, B?)"},
		{"required empty", ctx("Sub", nil, b), []string{"A", "B"}, nil,
			"input 0 (A) is missing: the node leaves it empty; Sub takes 2 inputs (A, B)"},
		{"too many", ctx("Relu", a, b), []string{"X"}, nil,
			"the node has 2 inputs; Relu takes one input (X)"},
		{"none declared", ctx("Constant", a), nil, nil,
			"the node has one input; Constant takes no inputs"},
		{"variadic", ctx("Sum", a, b, v), []string{"data..."}, []*autograd.Var{a, b, v}, ""},
		{"variadic after fixed", ctx("Loop", nil, a, b), []string{"M?", "cond?", "v_initial?..."}, []*autograd.Var{nil, a, b}, ""},
		{"optional variadic empty", ctx("Loop", a), []string{"M?", "cond?", "v_initial?..."}, []*autograd.Var{a, nil}, ""},
		{"variadic empty", ctx("Max"), []string{"data..."}, nil,
			"input 0 (data_0) is missing: the node has no inputs; Max takes at least one input (data...)"},
		{"variadic element empty", ctx("Concat", a, nil, b), []string{"inputs..."}, nil,
			"input 1 (inputs_1) is missing: the node leaves it empty; Concat takes at least one input (inputs...)"},
		{"optional variadic element empty", ctx("Loop", a, b, v, nil, a), []string{"M?", "cond?", "v_initial?..."}, nil,
			"input 3 (v_initial_1) is missing: the node leaves it empty; Loop takes any number of inputs (M?, cond?, v_initial?...)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.c.inputs(tc.decl...)
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestInputErrorNamesTheNode checks the whole message of an input error
// from a model: the node, its operator, the opset and the input.
func TestInputErrorNamesTheNode(t *testing.T) {
	t.Parallel()
	s := graphSpec{
		nodes:   []*onnxpb.NodeProto{node("Gemm", "fc", []string{"x"}, []string{"y"})},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, 2, 3)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, 2, 3)},
	}
	m := s.load(t)
	_, err := m.Run(autograd.Constant(tensor.Zeros(2, 3)))
	assert.EqualError(t, err, `onnx: node "fc" (Gemm, opset 17): input 1 (B) is missing: the node has one input; Gemm takes 2 to 3 inputs (A, B, C?)`)
}
