package redteam

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/hora-dl/hora/onnx/onnxpb"
)

// A small builder of ONNX models, for the hostile ones.

// Element types.
const (
	f32   = onnxpb.TensorProto_FLOAT
	i64   = onnxpb.TensorProto_INT64
	u8    = onnxpb.TensorProto_UINT8
	boolT = onnxpb.TensorProto_BOOL
)

func ptr[T any](v T) *T { return &v }

// vi describes a tensor value; a negative dimension is the dynamic
// dimension "batch".
func vi(name string, elem onnxpb.TensorProto_DataType, dims ...int64) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		dim := &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}}
		if d < 0 {
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}
		}
		shape.Dim = append(shape.Dim, dim)
	}
	return &onnxpb.ValueInfoProto{Name: ptr(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: ptr(int32(elem)), Shape: shape}}}}
}

// node is one operator.
func node(op, name string, in, out []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: ptr(op), Name: ptr(name), Input: in, Output: out, Attribute: attrs}
}

func attrInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: ptr(name), Type: onnxpb.AttributeProto_INT.Enum(), I: &v}
}

func attrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: ptr(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func attrGraph(name string, g *onnxpb.GraphProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: ptr(name), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: g}
}

// floatTensor is a FLOAT tensor with its values as raw data.
func floatTensor(name string, dims []int64, vals []float32) *onnxpb.TensorProto {
	raw := make([]byte, 0, 4*len(vals))
	for _, v := range vals {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
	}
	return &onnxpb.TensorProto{Name: ptr(name), DataType: ptr(int32(f32)), Dims: dims, RawData: raw}
}

// intTensor is an INT64 tensor.
func intTensor(name string, dims []int64, vals []int64) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: ptr(name), DataType: ptr(int32(i64)), Dims: dims, Int64Data: vals}
}

// boolTensor is a BOOL scalar.
func boolScalar(name string, v bool) *onnxpb.TensorProto {
	b := int32(0)
	if v {
		b = 1
	}
	return &onnxpb.TensorProto{Name: ptr(name), DataType: ptr(int32(boolT)), Int32Data: []int32{b}}
}

// externalTensor is a tensor whose data lies in another file.
func externalTensor(name string, elem onnxpb.TensorProto_DataType, dims []int64, kv ...string) *onnxpb.TensorProto {
	tp := &onnxpb.TensorProto{Name: ptr(name), DataType: ptr(int32(elem)), Dims: dims,
		DataLocation: onnxpb.TensorProto_EXTERNAL.Enum()}
	for i := 0; i+1 < len(kv); i += 2 {
		tp.ExternalData = append(tp.ExternalData, &onnxpb.StringStringEntryProto{Key: ptr(kv[i]), Value: ptr(kv[i+1])})
	}
	return tp
}

// ramp returns n values 0, 0.01, 0.02, …
func ramp(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i%17) * 0.01
	}
	return v
}

// modelBytes serializes a graph as an opset-17 model.
func modelBytes(e *env, g *onnxpb.GraphProto) []byte {
	e.t.Helper()
	if g.Name == nil {
		g.Name = ptr("redteam")
	}
	m := &onnxpb.ModelProto{
		IrVersion:    ptr(int64(8)),
		ProducerName: ptr("redteam"),
		OpsetImport:  []*onnxpb.OperatorSetIdProto{{Version: ptr(int64(17))}},
		Graph:        g,
	}
	b, err := proto.Marshal(m)
	e.must(err)
	return b
}

// tensorBytes serializes a tensor (a backend test's input_0.pb).
func tensorBytes(e *env, tp *onnxpb.TensorProto) []byte {
	e.t.Helper()
	b, err := proto.Marshal(tp)
	e.must(err)
	return b
}

// onnxCase writes a backend-test folder rel for onnxcheck: model.onnx
// and test_data_set_0 with the inputs and expected outputs; it returns
// the folder.
func (e *env) onnxCase(rel string, model []byte, inputs, outputs []*onnxpb.TensorProto) string {
	e.t.Helper()
	e.write(filepath.Join(rel, "model.onnx"), model)
	for i, tp := range inputs {
		e.write(filepath.Join(rel, "test_data_set_0", "input_"+strconv.Itoa(i)+".pb"), tensorBytes(e, tp))
	}
	for i, tp := range outputs {
		e.write(filepath.Join(rel, "test_data_set_0", "output_"+strconv.Itoa(i)+".pb"), tensorBytes(e, tp))
	}
	return e.path(rel)
}

// identityGraph is y = x for a float vector of n, with extra initializers.
func identityGraph(n int64, inits ...*onnxpb.TensorProto) *onnxpb.GraphProto {
	return &onnxpb.GraphProto{
		Node:        []*onnxpb.NodeProto{node("Identity", "id", []string{"x"}, []string{"y"})},
		Initializer: inits,
		Input:       []*onnxpb.ValueInfoProto{vi("x", f32, n)},
		Output:      []*onnxpb.ValueInfoProto{vi("y", f32, n)},
	}
}

// classifierGraph is a model that trains on the tiny data set: input
// [batch, 1, 8, 8] (inputDims, when given, replaces that declaration),
// Flatten, then Gemm to the 4 classes' logits. W may be replaced.
func classifierGraph(inputDims []int64, w *onnxpb.TensorProto) *onnxpb.GraphProto {
	if inputDims == nil {
		inputDims = []int64{-1, 1, tinySide, tinySide}
	}
	features := int64(tinySide * tinySide)
	if w == nil {
		w = floatTensor("W", []int64{features, tinyClasses}, ramp(int(features)*tinyClasses))
	}
	outBatch := inputDims[0]
	return &onnxpb.GraphProto{
		Node: []*onnxpb.NodeProto{
			node("Flatten", "flatten", []string{"input"}, []string{"flat"}, attrInt("axis", 1)),
			node("Gemm", "fc", []string{"flat", "W", "B"}, []string{"output"}),
		},
		Initializer: []*onnxpb.TensorProto{w, floatTensor("B", []int64{tinyClasses}, make([]float32, tinyClasses))},
		Input:       []*onnxpb.ValueInfoProto{vi("input", f32, inputDims...)},
		Output:      []*onnxpb.ValueInfoProto{vi("output", f32, outBatch, tinyClasses)},
	}
}

// onnxTrainConfig writes the tiny data set and a config that fine-tunes
// the ONNX file modelFile (model name "onnx") into rel.
func (e *env) onnxTrainConfig(rel, modelFile string) string {
	e.t.Helper()
	data := e.data("data")
	return e.writeString(rel, `data: {name: idx, dir: "`+data+`"}
model: {name: onnx, file: "`+modelFile+`"}
optimizer: {name: sgd, lr: 0.1}
train: {epochs: 1, batch_size: 16}
output: {progress: false, plot: false}
`)
}
