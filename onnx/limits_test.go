package onnx

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// Tests of the bounds on what a hostile model can ask for: outputs whose
// size comes from attributes (maxOutputElements), integer division by
// zero, and the work of loops (maxUnrolledNodes).

// ones returns a float32 tensor of ones.
func ones(shape ...int) *autograd.Var {
	return autograd.Constant(tensor.Full(tensor.CPU(), device.Float32, 1, shape...))
}

// An output, or a padded input, larger than maxOutputElements because of
// the attributes is an error before anything is allocated. The limit is
// lowered so that the sizes asked for stay small.
func TestWindowAttributesBounded(t *testing.T) {
	defer func(n int) { maxOutputElements = n }(maxOutputElements)
	maxOutputElements = 1 << 16
	const huge = int64(1) << 62
	x, w := ones(1, 1, 4, 4), ones(1, 1, 3, 3)
	for _, c := range []struct {
		name  string
		op    string
		attrs []any
		in    []*autograd.Var
		want  string
	}{
		{"ConvTranspose strides", "ConvTranspose", []any{"strides", []int64{1024, 1024}}, []*autograd.Var{x, w},
			"full (uncropped) output shape [1 1 3075 3075] has more than 65536 elements"},
		{"ConvTranspose output_shape", "ConvTranspose", []any{"output_shape", []int64{1024, 1024}}, []*autograd.Var{x, w},
			"output shape [1 1 1024 1024] has more than 65536 elements"},
		{"ConvTranspose output_padding", "ConvTranspose", []any{"output_padding", []int64{1024, 1024}}, []*autograd.Var{x, w},
			"output shape [1 1 1030 1030] has more than 65536 elements"},
		{"ConvTranspose dilations", "ConvTranspose", []any{"dilations", []int64{1024, 1024}}, []*autograd.Var{x, w},
			"full (uncropped) output shape [1 1 2052 2052] has more than 65536 elements"},
		{"ConvTranspose SAME_UPPER", "ConvTranspose", []any{"auto_pad", "SAME_UPPER", "strides", []int64{1024, 1024}}, []*autograd.Var{x, w},
			"full (uncropped) output shape [1 1 3075 3075] has more than 65536 elements"},
		{"ConvTranspose 1-D", "ConvTranspose", []any{"strides", []int64{60000}}, []*autograd.Var{ones(1, 1, 4), ones(1, 1, 3)},
			"output extent 180003 along spatial axis 0 (input X [1 1 4], kernel [3], strides [60000], dilations [1], output_padding [0]) is above the limit of 65536"},
		{"ConvTranspose huge strides", "ConvTranspose", []any{"strides", []int64{huge, 1}}, []*autograd.Var{x, w},
			"attribute strides = [4611686018427387904 1]: values must be in [1, 65536]"},
		{"ConvTranspose huge output_shape", "ConvTranspose", []any{"output_shape", []int64{huge, 1}}, []*autograd.Var{x, w},
			"attribute output_shape = [4611686018427387904 1]: values must be at most 65536"},
		{"ConvTranspose huge pads", "ConvTranspose", []any{"pads", []int64{huge, huge, 0, 0}}, []*autograd.Var{x, w},
			"attribute pads = [4611686018427387904 4611686018427387904 0 0]: values must be in [0, 65536]"},
		{"Conv pads", "Conv", []any{"pads", []int64{0, 0, 1024, 1024}}, []*autograd.Var{x, w},
			"padded input shape [1 1 1028 1028] has more than 65536 elements"},
		{"Conv huge dilations", "Conv", []any{"dilations", []int64{huge, huge}}, []*autograd.Var{x, w},
			"attribute dilations = [4611686018427387904 4611686018427387904]: values must be in [1, 65536]"},
		{"Conv 3-D pads", "Conv", []any{"pads", []int64{64, 64, 64, 64, 64, 64}}, []*autograd.Var{ones(1, 1, 2, 2, 2), ones(1, 1, 1, 1, 1)},
			"padded input shape [1 1 130 130 130] has more than 65536 elements"},
		{"MaxPool pads", "MaxPool", []any{"kernel_shape", []int64{1, 1}, "pads", []int64{512, 512, 512, 512}}, []*autograd.Var{x},
			"padded input shape [1 1 1028 1028] has more than 65536 elements"},
		{"AveragePool pads", "AveragePool", []any{"kernel_shape", []int64{1, 1}, "pads", []int64{512, 512, 512, 512}}, []*autograd.Var{x},
			"padded input shape [1 1 1028 1028] has more than 65536 elements"},
		{"LRN size", "LRN", []any{"size", int64(1 << 20)}, []*autograd.Var{ones(1, 4, 2, 2)},
			"attribute size = 1048576 must be in [1, 65536]"},
		{"RoiAlign output size", "RoiAlign", []any{"output_height", int64(1024), "output_width", int64(1024)},
			[]*autograd.Var{x, ones(1, 4), autograd.Constant(tensor.FromInt64([]int64{0}, 1))},
			"output shape [1 1 1024 1024] has more than 65536 elements"},
	} {
		opset := 17
		if c.op == "RoiAlign" {
			opset = 16
		}
		_, err := callOpT(t, c.op, opset, 1, c.attrs, c.in...)
		assert.ErrorContains(t, err, c.want, c.name)
	}
}

// The error names the node and its operator.
func TestConvTransposeHugeOutputNamesNode(t *testing.T) {
	s := graphSpec{
		nodes: []*onnxpb.NodeProto{node("ConvTranspose", "deconv", []string{"x", "w"}, []string{"y"},
			attrInts("output_shape", 100000, 100000))},
		inits:   []*onnxpb.TensorProto{initTensor(t, "w", tensor.Full(tensor.CPU(), device.Float32, 1, 1, 1, 3, 3), f32)},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, 1, 1, 2, 2)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, 1, 1, 100000, 100000)},
	}
	_, err := s.load(t).Run(ones(1, 1, 2, 2))
	assert.EqualError(t, err, `onnx: node "deconv" (ConvTranspose, opset 17): output shape [1 1 100000 100000] has more than 1073741824 elements`)
}

func TestIntegerDivisionByZero(t *testing.T) {
	ints := func(v ...int64) *autograd.Var { return autograd.Constant(tensor.FromInt64(v, len(v))) }
	floats := func(v ...float32) *autograd.Var { return autograd.Constant(tensor.FromFloat32(v, len(v))) }
	for _, c := range []struct {
		op    string
		attrs []any
	}{{"Div", nil}, {"Mod", nil}, {"Mod", []any{"fmod", int64(1)}}} {
		_, err := callOpT(t, c.op, 13, 1, c.attrs, ints(7, 8), ints(0, 2))
		assert.EqualError(t, err, "integer division by zero in input B", c.op)
		// A zero broadcast from a scalar too.
		_, err = callOpT(t, c.op, 13, 1, c.attrs, ints(7, 8), autograd.Constant(tensor.FromInt64([]int64{0})))
		assert.EqualError(t, err, "integer division by zero in input B", c.op)
	}
	// Nonzero divisors work as before.
	out, err := callOpT(t, "Div", 13, 1, nil, ints(7, -7), ints(2, 2))
	require.NoError(t, err)
	assert.Equal(t, []int64{3, -3}, out[0].Value.Int64s())

	// Floats follow IEEE.
	out, err = callOpT(t, "Div", 13, 1, nil, floats(1, -1, 0), floats(0, 0, 0))
	require.NoError(t, err)
	v := out[0].Value.Float32s()
	assert.True(t, math.IsInf(float64(v[0]), 1) && math.IsInf(float64(v[1]), -1) && math.IsNaN(float64(v[2])), "%v", v)
	out, err = callOpT(t, "Mod", 13, 1, []any{"fmod", int64(1)}, floats(1), floats(0))
	require.NoError(t, err)
	assert.True(t, math.IsNaN(float64(out[0].Value.Float32s()[0])))

	// In a model, the error names the node.
	s := graphSpec{
		nodes:   []*onnxpb.NodeProto{node("Div", "div", []string{"a", "b"}, []string{"y"})},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("a", onnxpb.TensorProto_INT64, 2), tensorInfo("b", onnxpb.TensorProto_INT64, 2)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", onnxpb.TensorProto_INT64, 2)},
	}
	_, err = s.load(t).Run(ints(7, 8), ints(0, 2))
	assert.EqualError(t, err, `onnx: node "div" (Div, opset 17): integer division by zero in input B`)
}

// loopBody returns a Loop body passing its carried value v on. Its
// condition is cond_in through Identity (only M ends the loop) or, when
// live, Not(Not(cond_in)), which Hora cannot tell stays true. With scan,
// it also returns the outer value "block" at each iteration.
func loopBody(live, scan bool) *onnxpb.GraphProto {
	keep := node("Identity", "keep", []string{"cond_in"}, []string{"cond_out"})
	nodes := []*onnxpb.NodeProto{keep}
	if live {
		nodes = []*onnxpb.NodeProto{node("Not", "not1", []string{"cond_in"}, []string{"nc"}), node("Not", "not2", []string{"nc"}, []string{"cond_out"})}
	}
	nodes = append(nodes, node("Identity", "pass", []string{"v_in"}, []string{"v_out"}))
	outputs := []*onnxpb.ValueInfoProto{tensorInfo("cond_out", onnxpb.TensorProto_BOOL), tensorInfo("v_out", f32, 2)}
	if scan {
		nodes = append(nodes, node("Identity", "emit", []string{"block"}, []string{"s_out"}))
		outputs = append(outputs, tensorInfo("s_out", f32, 10))
	}
	return &onnxpb.GraphProto{
		Name:   ptr("body"),
		Node:   nodes,
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("i", onnxpb.TensorProto_INT64), tensorInfo("cond_in", onnxpb.TensorProto_BOOL), tensorInfo("v_in", f32, 2)},
		Output: outputs,
	}
}

// loopModel is y = Loop(M = trips, cond = true, x) with body (and, with
// scan, the stacked scan output "stacked").
func loopModel(t *testing.T, trips int64, body *onnxpb.GraphProto, scan bool) *Model {
	outs := []string{"y"}
	outInfo := []*onnxpb.ValueInfoProto{tensorInfo("y", f32, 2)}
	if scan {
		outs = append(outs, "stacked")
		outInfo = append(outInfo, tensorInfo("stacked", f32, -1, 10))
	}
	s := graphSpec{
		nodes: []*onnxpb.NodeProto{node("Loop", "loop", []string{"M", "cond", "x"}, outs, graphAttr("body", body))},
		inits: []*onnxpb.TensorProto{
			initTensor(t, "M", tensor.FromInt64([]int64{trips}), onnxpb.TensorProto_INT64),
			initTensor(t, "cond", tensor.FromInt64([]int64{1}), onnxpb.TensorProto_BOOL),
			initTensor(t, "block", tensor.Full(tensor.CPU(), device.Float32, 1, 10), f32),
		},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, 2)},
		outputs: outInfo,
	}
	m, err := Import(bytes.NewReader(s.bytes(t)))
	require.NoError(t, err)
	return m
}

// runBounded runs m on x = [1, 1] and fails the test when that takes more
// than a few seconds.
func runBounded(t *testing.T, m *Model) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := m.Run(ones(2))
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the run took more than 5 s")
		return nil
	}
}

// A loop that only its trip count M = 2^62 ends is refused before its
// first iteration, under the default limit.
func TestLoopHugeTripCountRefused(t *testing.T) {
	start := time.Now()
	err := runBounded(t, loopModel(t, 1<<62, loopBody(false, false), false))
	assert.EqualError(t, err, `onnx: node "loop" (Loop, opset 17): trip count M = 4611686018427387904 with 2 nodes in the body, which keeps the condition true, unrolls more than the limit of 1048576 nodes`)
	assert.Less(t, time.Since(start), time.Second)

	// The same with a scan output of 10 floats per iteration.
	err = runBounded(t, loopModel(t, 1<<62, loopBody(false, true), true))
	assert.ErrorContains(t, err, "trip count M = 4611686018427387904 with 3 nodes in the body")

	// A trip count within the limit runs.
	_, err = loopModel(t, 1000, loopBody(false, false), false).Run(ones(2))
	assert.NoError(t, err)
}

// A loop whose body computes its condition may end before M, so it runs,
// and stops with an error when it passes the limit.
func TestLoopLiveConditionBounded(t *testing.T) {
	defer func(n int) { maxUnrolledNodes = n }(maxUnrolledNodes)
	maxUnrolledNodes = 1000
	err := runBounded(t, loopModel(t, 1<<62, loopBody(true, false), false))
	assert.EqualError(t, err, `onnx: node "loop" (Loop, opset 17): iteration 333: body: one run may evaluate at most 1000 nodes of Loop, Scan and If subgraphs, and 999 are done (a loop that does not end?)`)

	// Its scan output is bounded too.
	defer func(n int) { maxOutputElements = n }(maxOutputElements)
	maxOutputElements = 100
	err = runBounded(t, loopModel(t, 1<<62, loopBody(true, true), true))
	assert.EqualError(t, err, `onnx: node "loop" (Loop, opset 17): scan output 0 shape [11 10] has more than 100 elements`)
}

// Nested loops share one budget: each is small, together they are not.
func TestNestedLoopsShareTheLimit(t *testing.T) {
	defer func(n int) { maxUnrolledNodes = n }(maxUnrolledNodes)
	maxUnrolledNodes = 1000
	inner := loopBody(false, false)
	outer := &onnxpb.GraphProto{
		Name: ptr("outer"),
		Node: []*onnxpb.NodeProto{
			node("Identity", "keep_outer", []string{"ocond_in"}, []string{"ocond_out"}),
			node("Loop", "inner", []string{"M", "", "ov_in"}, []string{"ov_out"}, graphAttr("body", inner)),
		},
		Input: []*onnxpb.ValueInfoProto{tensorInfo("oi", onnxpb.TensorProto_INT64), tensorInfo("ocond_in", onnxpb.TensorProto_BOOL),
			tensorInfo("ov_in", f32, 2)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("ocond_out", onnxpb.TensorProto_BOOL), tensorInfo("ov_out", f32, 2)},
	}
	// 30 outer iterations of 2 nodes, each running 30 inner ones of 2:
	// 1860 nodes.
	err := runBounded(t, loopModel(t, 30, outer, false))
	assert.ErrorContains(t, err, `onnx: node "loop" (Loop, opset 17): iteration 16: body: onnx: node "inner" (Loop, opset 17): iteration 3: body: one run may evaluate at most 1000 nodes`)
}

// Scan's steps come from its input's shape: too many steps for its body
// are refused up front.
func TestScanStepsBounded(t *testing.T) {
	defer func(n int) { maxUnrolledNodes = n }(maxUnrolledNodes)
	maxUnrolledNodes = 1000
	body := &onnxpb.GraphProto{
		Name:   ptr("body"),
		Node:   []*onnxpb.NodeProto{node("Identity", "pass", []string{"s_in"}, []string{"s_out"})},
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("s_in", f32, 1)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("s_out", f32, 1)},
	}
	s := graphSpec{
		nodes:   []*onnxpb.NodeProto{node("Scan", "scan", []string{"x"}, []string{"y"}, graphAttr("body", body), attrInt("num_scan_inputs", 1))},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, -1, 1)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, -1, 1)},
	}
	m := s.load(t)
	_, err := m.Run(ones(1000, 1))
	assert.NoError(t, err)
	_, err = m.Run(ones(1001, 1))
	assert.EqualError(t, err, `onnx: node "scan" (Scan, opset 17): 1001 steps with 1 nodes in the body unroll more than the limit of 1000 nodes`)
}

// Outputs that grow by ordinary operations, not by attributes: a Concat
// of a value with itself, an outer product, a broadcast of [n, 1] with
// [1, n]. Each is refused before it is made.
func TestGrowingOutputsBounded(t *testing.T) {
	defer func(n int) { maxOutputElements = n }(maxOutputElements)
	maxOutputElements = 1 << 16
	v := ones(1 << 15)
	col, row := ones(1<<9, 1), ones(1, 1<<9)
	for _, c := range []struct {
		op    string
		attrs []any
		in    []*autograd.Var
		want  string
	}{
		{"Concat", []any{"axis", int64(0)}, []*autograd.Var{v, v, v}, "output shape [98304] has dimension 98304, above the limit of 65536"},
		{"MatMul", nil, []*autograd.Var{col, row}, "output shape [512 512] has more than 65536 elements"},
		{"MatMul", nil, []*autograd.Var{ones(4, 1<<8, 1), ones(4, 1, 1<<8)}, "output shape [4 256 256] has more than 65536 elements"},
		{"Gemm", nil, []*autograd.Var{col, row}, "output shape [512 512] has more than 65536 elements"},
		{"Mul", nil, []*autograd.Var{col, row}, "output shape [512 512] has more than 65536 elements"},
	} {
		_, err := callOpT(t, c.op, 17, 1, c.attrs, c.in...)
		assert.ErrorContains(t, err, c.want, c.op)
	}
	// Within the limit they still compute.
	_, err := callOpT(t, "Concat", 17, 1, []any{"axis", int64(0)}, v, v)
	assert.NoError(t, err)
	_, err = callOpT(t, "MatMul", 17, 1, nil, ones(1<<7, 1), ones(1, 1<<7))
	assert.NoError(t, err)
}
