package onnx

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// TestConvAttrsCachedPerShape runs one model's SAME_UPPER, stride-2 Conv
// on inputs whose padding differs (5×5: one row and column on each side;
// 6×6: one at the end only), then the first shape again: each run must
// give what a freshly imported model gives, so the attributes a node
// keeps are those of the shapes it is run on.
func TestConvAttrsCachedPerShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	autoPad, same := "auto_pad", []byte("SAME_UPPER")
	dyn := func(name string) *onnxpb.TensorShapeProto_Dimension {
		return &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: name}}
	}
	fixed := func(v int64) *onnxpb.TensorShapeProto_Dimension {
		return &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: v}}
	}
	x := &onnxpb.ValueInfoProto{Name: ptr("x"), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: ptr(int32(f32)), Shape: &onnxpb.TensorShapeProto{
			Dim: []*onnxpb.TensorShapeProto_Dimension{fixed(1), fixed(2), dyn("h"), dyn("w")}}}}}}
	spec := graphSpec{
		nodes: []*onnxpb.NodeProto{node("Conv", "conv", []string{"x", "w", "b"}, []string{"y"},
			attrInts("kernel_shape", 3, 3), attrInts("strides", 2, 2),
			&onnxpb.AttributeProto{Name: &autoPad, Type: onnxpb.AttributeProto_STRING.Enum(), S: same})},
		inits: []*onnxpb.TensorProto{
			initTensor(t, "w", tensor.RandNormal(rng, 0, 1, 3, 2, 3, 3), f32),
			initTensor(t, "b", tensor.RandNormal(rng, 0, 1, 3), f32),
		},
		inputs:  []*onnxpb.ValueInfoProto{x},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", f32, 1, 3, -1, -1)},
	}
	m := spec.load(t, Frozen())
	for _, size := range []int{5, 6, 5} {
		in := tensor.RandNormal(rng, 0, 1, 1, 2, size, size)
		got, err := m.Run(autograd.Constant(in))
		require.NoError(t, err)
		want, err := spec.load(t, Frozen()).Run(autograd.Constant(in))
		require.NoError(t, err)
		assert.Equal(t, want[0].Value.Shape(), got[0].Value.Shape(), "%d×%d", size, size)
		assert.Equal(t, want[0].Value.Float32s(), got[0].Value.Float32s(), "%d×%d", size, size)
	}
}
