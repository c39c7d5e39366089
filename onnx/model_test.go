package onnx

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// graphSpec describes a small model for the interpreter's tests.
type graphSpec struct {
	opset   int64
	nodes   []*onnxpb.NodeProto
	inits   []*onnxpb.TensorProto
	inputs  []*onnxpb.ValueInfoProto
	outputs []*onnxpb.ValueInfoProto
}

func (g graphSpec) model() *onnxpb.ModelProto {
	opset := g.opset
	if opset == 0 {
		opset = 17
	}
	return &onnxpb.ModelProto{
		IrVersion:   ptr(int64(8)),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: ptr(""), Version: ptr(opset)}},
		Graph: &onnxpb.GraphProto{
			Name: ptr("test"), Node: g.nodes, Initializer: g.inits,
			Input: g.inputs, Output: g.outputs,
		},
	}
}

func (g graphSpec) bytes(t testing.TB) []byte {
	data, err := proto.Marshal(g.model())
	require.NoError(t, err)
	return data
}

func (g graphSpec) load(t testing.TB, opts ...Option) *Model {
	m, err := Import(bytes.NewReader(g.bytes(t)), opts...)
	require.NoError(t, err)
	return m
}

func node(op, name string, inputs, outputs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: &op, Name: &name, Input: inputs, Output: outputs, Attribute: attrs}
}

func intAttr(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_INT.Enum(), I: &v}
}

// valueInfo declares a tensor value; dims < 0 are dynamic ("batch").
func tensorInfo(name string, dt DataType, dims ...int64) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		if d < 0 {
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}})
		} else {
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
		}
	}
	return &onnxpb.ValueInfoProto{Name: &name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: ptr(int32(dt)), Shape: shape}}}}
}

func initTensor(t testing.TB, name string, v *tensor.Tensor, dt DataType) *onnxpb.TensorProto {
	tp, err := TensorToProto(v, name, dt)
	require.NoError(t, err)
	return tp
}

const f32 = onnxpb.TensorProto_FLOAT

// mlpSpec is Gemm → Relu → MatMul with a dynamic batch and a
// Shape → Gather → Concat → Reshape chain like PyTorch's flatten.
func mlpSpec(t testing.TB) graphSpec {
	w1 := tensor.FromFloat32([]float32{0.5, -1, 0.25, 2, 1, -0.5}, 3, 2) // [out=3, in=2]
	b1 := tensor.FromFloat32([]float32{0.1, 0.2, -0.3}, 3)
	w2 := tensor.FromFloat32([]float32{1, -1, 0.5}, 3, 1)
	return graphSpec{
		nodes: []*onnxpb.NodeProto{
			node("Shape", "shape", []string{"x"}, []string{"s"}),
			node("Gather", "batch", []string{"s", "zero"}, []string{"b"}, intAttr("axis", 0)),
			node("Unsqueeze", "unsq", []string{"b", "axes0"}, []string{"b1"}),
			node("Concat", "cat", []string{"b1", "minus1"}, []string{"newshape"}, intAttr("axis", 0)),
			node("Reshape", "flatten", []string{"x", "newshape"}, []string{"xf"}),
			node("Gemm", "fc1", []string{"xf", "fc1.weight", "fc1.bias"}, []string{"h"}, intAttr("transB", 1)),
			node("Relu", "relu", []string{"h"}, []string{"hr"}),
			node("MatMul", "fc2", []string{"hr", "fc2.weight"}, []string{"y"}),
		},
		inits: []*onnxpb.TensorProto{
			initTensor(t, "fc1.weight", w1, f32), initTensor(t, "fc1.bias", b1, f32), initTensor(t, "fc2.weight", w2, f32),
			initTensor(t, "zero", tensor.FromInt64([]int64{0}), onnxpb.TensorProto_INT64),
			initTensor(t, "axes0", tensor.FromInt64([]int64{0}, 1), onnxpb.TensorProto_INT64),
			initTensor(t, "minus1", tensor.FromInt64([]int64{-1}, 1), onnxpb.TensorProto_INT64),
		},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, -1, 1, 2)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, -1, 1)},
	}
}

// mlpReference computes mlpSpec's output by hand.
func mlpReference(x []float32) []float32 {
	w1 := []float32{0.5, -1, 0.25, 2, 1, -0.5}
	b1 := []float32{0.1, 0.2, -0.3}
	w2 := []float32{1, -1, 0.5}
	var out []float32
	for i := 0; i+1 < len(x); i += 2 {
		y := float32(0)
		for o := 0; o < 3; o++ {
			h := x[i]*w1[2*o] + x[i+1]*w1[2*o+1] + b1[o]
			y += max(h, 0) * w2[o]
		}
		out = append(out, y)
	}
	return out
}

func TestImportRunsAndTrains(t *testing.T) {
	m := mlpSpec(t).load(t)
	assert.Equal(t, 17, m.Opset)
	require.Len(t, m.Inputs, 1)
	assert.Equal(t, "x: float[batch,1,2]", m.Inputs[0].String())
	var names []string
	for _, p := range m.Parameters() {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"fc1.weight", "fc1.bias", "fc2.weight"}, names, "float initializers are the parameters; int ones are constants")
	assert.Contains(t, m.Summary(), "3 parameters (12 values)")

	// Two batch sizes: the shape chain is recomputed per input shape.
	for _, batch := range []int{4, 1, 4} {
		xs := make([]float32, 2*batch)
		for i := range xs {
			xs[i] = float32(i%5) - 2
		}
		outs, err := m.Run(autograd.Constant(tensor.FromFloat32(xs, batch, 1, 2)))
		require.NoError(t, err)
		require.Equal(t, []int{batch, 1}, outs[0].Shape())
		assert.InDeltaSlice(t, mlpReference(xs), outs[0].Value.Float32s(), 1e-6)
	}

	// Gradients reach the initializers.
	x := tensor.FromFloat32([]float32{1, 2, -1, 0.5}, 2, 1, 2)
	loss := autograd.SumAll(m.Forward(autograd.Constant(x)))
	require.NoError(t, autograd.Backward(loss))
	for _, p := range m.Parameters() {
		require.NotNil(t, p.Grad, p.Name)
	}
	// d loss / d fc2.weight = sum over the batch of relu(h).
	h := func(x0, x1 float32) []float32 {
		return []float32{max(0.5*x0-x1+0.1, 0), max(0.25*x0+2*x1+0.2, 0), max(x0-0.5*x1-0.3, 0)}
	}
	h1, h2 := h(1, 2), h(-1, 0.5)
	assert.InDeltaSlice(t, []float32{h1[0] + h2[0], h1[1] + h2[1], h1[2] + h2[2]}, m.Parameters()[2].Grad.Float32s(), 1e-6)
}

func TestImportOptions(t *testing.T) {
	m := mlpSpec(t).load(t, Frozen())
	assert.Empty(t, m.Parameters())
	outs, err := m.Run(autograd.Constant(tensor.FromFloat32([]float32{1, 2}, 1, 1, 2)))
	require.NoError(t, err)
	assert.InDeltaSlice(t, mlpReference([]float32{1, 2}), outs[0].Value.Float32s(), 1e-6)

	m = mlpSpec(t).load(t, Trainable(func(name string) bool { return strings.HasPrefix(name, "fc2") }))
	require.Len(t, m.Parameters(), 1)
	assert.Equal(t, "fc2.weight", m.Parameters()[0].Name)
}

func TestBadFiles(t *testing.T) {
	good := mlpSpec(t).bytes(t)
	for name, data := range map[string][]byte{
		"empty":     nil,
		"garbage":   []byte("this is not a protobuf \xff\xfe\x00"),
		"truncated": good[:len(good)/2],
	} {
		_, err := Import(bytes.NewReader(data))
		require.Error(t, err, name)
		t.Logf("%s: %v", name, err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.onnx")
	require.NoError(t, os.WriteFile(path, good[:len(good)-7], 0o644))
	_, err := Load(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path, "the error names the file")
	_, err = Load(filepath.Join(dir, "missing.onnx"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestBadGraphs(t *testing.T) {
	spec := mlpSpec(t)

	s := spec
	s.opset = 18
	_, err := Import(bytes.NewReader(s.bytes(t)))
	assert.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "opset 18")

	s = spec
	s.nodes = append([]*onnxpb.NodeProto{}, spec.nodes...)
	s.nodes[6] = node("FancyRelu", "act", []string{"h"}, []string{"hr"})
	_, err = Import(bytes.NewReader(s.bytes(t)))
	var ne *NodeError
	require.ErrorAs(t, err, &ne)
	assert.ErrorIs(t, err, ErrUnsupported)
	assert.Equal(t, `onnx: node "act" (FancyRelu, opset 17): not supported: operator FancyRelu`, err.Error())

	s = spec
	s.nodes = append([]*onnxpb.NodeProto{}, spec.nodes...)
	s.nodes[5], s.nodes[6] = s.nodes[6], s.nodes[5] // Relu before the Gemm that computes its input
	_, err = Import(bytes.NewReader(s.bytes(t)))
	assert.ErrorContains(t, err, `node "relu" (Relu, opset 17): input 0 "h" is not a graph input, an initializer or an output of an earlier node`)

	s = spec
	s.outputs = []*onnxpb.ValueInfoProto{tensorInfo("nothing", f32)}
	_, err = Import(bytes.NewReader(s.bytes(t)))
	assert.ErrorContains(t, err, `graph output "nothing" is not computed by any node`)

	s = spec
	s.nodes = append([]*onnxpb.NodeProto{}, spec.nodes...)
	s.nodes[6] = node("Relu", "relu", []string{"h"}, []string{"h"})
	_, err = Import(bytes.NewReader(s.bytes(t)))
	assert.ErrorContains(t, err, `output "h" is already defined`)

	s = spec
	s.inits = append([]*onnxpb.TensorProto{}, spec.inits...)
	bad := proto.Clone(s.inits[0]).(*onnxpb.TensorProto)
	bad.RawData = bad.RawData[:5]
	s.inits[0] = bad
	_, err = Import(bytes.NewReader(s.bytes(t)))
	assert.ErrorContains(t, err, `tensor "fc1.weight": raw data has 5 bytes, want 24 for 6 elements of float`)
}

func TestBadInputs(t *testing.T) {
	m := mlpSpec(t).load(t)
	_, err := m.Run()
	assert.ErrorContains(t, err, "Run got 0 inputs, the model takes 1 (x: float[batch,1,2])")
	_, err = m.Run(autograd.Constant(tensor.Zeros(3, 2, 2)))
	assert.EqualError(t, err, `onnx: input "x": shape [3 2 2], want x: float[batch,1,2] (dimension 1 is 2, want 1)`)
	_, err = m.Run(autograd.Constant(tensor.Zeros(3, 2)))
	assert.ErrorContains(t, err, `input "x": shape [3 2] has rank 2, want rank 3`)
	_, err = m.Run(autograd.Constant(tensor.Zeros(3, 1, 2).Cast(device.Int64)))
	assert.EqualError(t, err, `onnx: input "x": element type int64, want float32 (ONNX float)`)
	_, err = m.RunNamed(map[string]*autograd.Var{"y": autograd.Constant(tensor.Zeros(3, 1, 2))})
	assert.ErrorContains(t, err, "missing input x")
}

func TestPanickingOperatorIsAnError(t *testing.T) {
	register("HoraTestPanic", 1, false, func(c *nodeCtx) ([]*autograd.Var, error) {
		in, err := c.inputs("x")
		if err != nil {
			return nil, err
		}
		_ = in[0].Value.Add(tensor.Zeros(7, 7)) // shapes that do not broadcast
		return in, nil
	})
	defer delete(registry, "HoraTestPanic")
	s := graphSpec{
		nodes:   []*onnxpb.NodeProto{node("HoraTestPanic", "boom", []string{"x"}, []string{"y"})},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, 2, 3)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, 2, 3)},
	}
	m := s.load(t)
	_, err := m.Run(autograd.Constant(tensor.Zeros(2, 3)))
	var ne *NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "boom", strings.Trim(ne.Node, `"`))
	assert.Contains(t, err.Error(), "do not broadcast")
}

func TestBatchNormStatisticsAreBuffers(t *testing.T) {
	c := 2
	s := graphSpec{
		nodes: []*onnxpb.NodeProto{node("BatchNormalization", "bn", []string{"x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"}, []string{"y"})},
		inits: []*onnxpb.TensorProto{
			initTensor(t, "bn.weight", tensor.FromFloat32([]float32{1, 2}, c), f32),
			initTensor(t, "bn.bias", tensor.FromFloat32([]float32{0, 1}, c), f32),
			initTensor(t, "bn.running_mean", tensor.FromFloat32([]float32{0.5, -0.5}, c), f32),
			initTensor(t, "bn.running_var", tensor.FromFloat32([]float32{1, 4}, c), f32),
		},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, -1, 2)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, -1, 2)},
	}
	m := s.load(t)
	require.Len(t, m.Parameters(), 2)
	require.Len(t, m.Buffers(), 2)
	assert.Equal(t, "bn.running_mean", m.Buffers()[0].Name)
	sd := layers.StateDict(m)
	assert.Len(t, sd, 4, "parameters and buffers are checkpointed")
}

func TestExternalData(t *testing.T) {
	dir := t.TempDir()
	spec := mlpSpec(t)
	w := proto.Clone(spec.inits[0]).(*onnxpb.TensorProto)
	raw := w.RawData
	// The weights live at offset 16 of a side file.
	side := append(make([]byte, 16), raw...)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "weights.bin"), side, 0o644))
	w.RawData = nil
	w.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
	w.ExternalData = []*onnxpb.StringStringEntryProto{
		{Key: ptr("location"), Value: ptr("weights.bin")},
		{Key: ptr("offset"), Value: ptr("16")},
		{Key: ptr("length"), Value: ptr("24")},
	}
	spec.inits = append([]*onnxpb.TensorProto{w}, spec.inits[1:]...)
	path := filepath.Join(dir, "model.onnx")
	require.NoError(t, os.WriteFile(path, spec.bytes(t), 0o644))
	m, err := Load(path)
	require.NoError(t, err)
	outs, err := m.Run(autograd.Constant(tensor.FromFloat32([]float32{1, 2}, 1, 1, 2)))
	require.NoError(t, err)
	assert.InDeltaSlice(t, mlpReference([]float32{1, 2}), outs[0].Value.Float32s(), 1e-6)

	_, err = Import(bytes.NewReader(spec.bytes(t)))
	assert.ErrorContains(t, err, "use onnx.Load")

	w.ExternalData[0].Value = ptr("../../etc/passwd")
	require.NoError(t, os.WriteFile(path, spec.bytes(t), 0o644))
	_, err = Load(path)
	assert.ErrorContains(t, err, "outside the model's folder")

	w.ExternalData[0].Value = ptr("weights.bin")
	w.ExternalData[2].Value = ptr("20")
	require.NoError(t, os.WriteFile(path, spec.bytes(t), 0o644))
	_, err = Load(path)
	assert.ErrorContains(t, err, "length 20 bytes, want 24")
}

func TestTensorProtoRoundTrip(t *testing.T) {
	for _, dt := range []DataType{onnxpb.TensorProto_INT8, onnxpb.TensorProto_UINT8, onnxpb.TensorProto_INT16,
		onnxpb.TensorProto_INT32, onnxpb.TensorProto_INT64, onnxpb.TensorProto_UINT32, onnxpb.TensorProto_BOOL} {
		vals := []int64{0, 1, 7, 100}
		if dt != onnxpb.TensorProto_UINT8 && dt != onnxpb.TensorProto_UINT32 && dt != onnxpb.TensorProto_BOOL {
			vals = append(vals, -3)
		}
		if dt == onnxpb.TensorProto_BOOL {
			vals = []int64{0, 1, 1, 0}
		}
		tp, err := TensorToProto(tensor.FromInt64(vals, len(vals)), "v", dt)
		require.NoError(t, err)
		back, err := tensorFromProto(tp, "")
		require.NoError(t, err, typeName(dt))
		assert.Equal(t, vals, back.Int64s(), typeName(dt))
	}
	_, err := tensorFromProto(&onnxpb.TensorProto{Name: ptr("h"), DataType: ptr(int32(onnxpb.TensorProto_FLOAT16)), Dims: []int64{1}}, "")
	assert.True(t, errors.Is(err, ErrUnsupported))
	assert.ErrorContains(t, err, `tensor "h": not supported: element type float16`)
	_, err = tensorFromProto(&onnxpb.TensorProto{Name: ptr("big"), DataType: ptr(int32(f32)), Dims: []int64{1 << 40, 1 << 40}}, "")
	assert.ErrorContains(t, err, "more than")
}

func TestReluFusedIntoConvAndGemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	w := tensor.RandNormal(rng, 0, 1, 3, 2, 3, 3)
	b := tensor.RandNormal(rng, 0, 1, 3)
	fw := tensor.RandNormal(rng, 0, 1, 4, 3*4*4)
	s := graphSpec{
		nodes: []*onnxpb.NodeProto{
			node("Conv", "conv", []string{"x", "w", "b"}, []string{"c"}, &onnxpb.AttributeProto{Name: ptr("pads"), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: []int64{1, 1, 1, 1}}),
			node("Relu", "relu1", []string{"c"}, []string{"r"}),
			node("Flatten", "flat", []string{"r"}, []string{"f"}),
			node("Gemm", "fc", []string{"f", "fw"}, []string{"g"}, intAttr("transB", 1)),
			node("Relu", "relu2", []string{"g"}, []string{"y"}),
		},
		inits:   []*onnxpb.TensorProto{initTensor(t, "w", w, f32), initTensor(t, "b", b, f32), initTensor(t, "fw", fw, f32)},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, -1, 2, 4, 4)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, -1, 4)},
	}
	m := s.load(t)
	assert.Contains(t, m.Summary(), "3 nodes: Conv×1 Flatten×1 Gemm×1", "both Relus are fused")
	assert.Equal(t, []string{"Conv", "Relu", "Flatten", "Gemm"}, m.OpTypes(), "OpTypes lists the file's operators")

	x := tensor.RandNormal(rng, 0, 1, 2, 2, 4, 4)
	c := tensor.Conv2D(x, w, tensor.ConvOptions{PadH: 1, PadW: 1}).Add(b.Reshape(1, 3, 1, 1)).Relu()
	want := tensor.MatMul(c.Reshape(2, -1), fw.T()).Relu()
	outs, err := m.Run(autograd.Constant(x))
	require.NoError(t, err)
	assert.InDeltaSlice(t, want.Float32s(), outs[0].Value.Float32s(), 1e-5)
}

// TestReluFusedIntoAdd checks a residual block's Add followed by Relu:
// fused when the Relu is the Add's only reader (same shapes: the one-pass
// kernel; broadcast: the composed path), kept apart when the sum is read
// again, with the same values as the unfused graph.
func TestReluFusedIntoAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	bias := tensor.RandNormal(rng, 0, 1, 3, 1, 1)
	s := graphSpec{
		nodes: []*onnxpb.NodeProto{
			node("Add", "add1", []string{"x", "y"}, []string{"s1"}),
			node("Relu", "relu1", []string{"s1"}, []string{"r1"}),
			node("Add", "add2", []string{"r1", "bias"}, []string{"s2"}),
			node("Relu", "relu2", []string{"s2"}, []string{"r2"}),
			node("Add", "add3", []string{"r2", "x"}, []string{"s3"}),
			node("Relu", "relu3", []string{"s3"}, []string{"r3"}),
			node("Mul", "mul", []string{"r3", "s3"}, []string{"out"}),
		},
		inits:   []*onnxpb.TensorProto{initTensor(t, "bias", bias, f32)},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, -1, 3, 4, 5), tensorInfo("y", f32, -1, 3, 4, 5)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("out", f32, -1, 3, 4, 5)},
	}
	m := s.load(t)
	assert.Contains(t, m.Summary(), "5 nodes: Add×3 Mul×1 Relu×1", "the first two Relus are fused, the third's input is read again")

	x, y := tensor.RandNormal(rng, 0, 1, 2, 3, 4, 5), tensor.RandNormal(rng, 0, 1, 2, 3, 4, 5)
	r2 := x.Add(y).Relu().Add(bias).Relu()
	s3 := r2.Add(x)
	want := s3.Relu().Mul(s3)
	outs, err := m.Run(autograd.Constant(x), autograd.Constant(y))
	require.NoError(t, err)
	assert.Equal(t, want.Float32s(), outs[0].Value.Float32s())
}

func TestClipFusedIntoConvAsReLU6(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 7))
	w := tensor.RandNormal(rng, 0, 3, 4, 1, 3, 3) // depthwise: 4 groups
	for _, opset := range []int64{11, 17} {
		s := graphSpec{
			opset: opset,
			nodes: []*onnxpb.NodeProto{
				node("Conv", "dw", []string{"x", "w"}, []string{"c"}, intAttr("group", 4),
					&onnxpb.AttributeProto{Name: ptr("pads"), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: []int64{1, 1, 1, 1}}),
				node("Clip", "relu6", []string{"c", "lo", "hi"}, []string{"y"}),
			},
			inits: []*onnxpb.TensorProto{initTensor(t, "w", w, f32),
				initTensor(t, "lo", tensor.FromFloat32([]float32{0}).Reshape(), f32), initTensor(t, "hi", tensor.FromFloat32([]float32{6}).Reshape(), f32)},
			inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", f32, -1, 4, 5, 5)},
			outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, -1, 4, 5, 5)},
		}
		m := s.load(t)
		assert.Contains(t, m.Summary(), "1 nodes: Conv×1", "opset %d: Clip(0, 6) is fused", opset)
		x := tensor.RandNormal(rng, 0, 1, 2, 4, 5, 5)
		want := tensor.Conv2D(x, w, tensor.ConvOptions{PadH: 1, PadW: 1, Groups: 4}).MaxScalar(0).MinScalar(6)
		outs, err := m.Run(autograd.Constant(x))
		require.NoError(t, err)
		assert.InDeltaSlice(t, want.Float32s(), outs[0].Value.Float32s(), 1e-5)
		assert.Greater(t, want.MaxAll().Item(), 5.99, "the test reaches the upper bound")
	}
}

func TestNilInput(t *testing.T) {
	m := mlpSpec(t).load(t)
	_, err := m.Run(nil)
	assert.EqualError(t, err, `onnx: input "x" is nil`)
}
