package onnxpb_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/hora-dl/hora/onnx/onnxpb"
)

// The files in ../testdata/wire were written with the schema in the proto
// package onnx: hora_cnn by Hora's exporter,
// pytorch_cnn by torch.onnx.export (PyTorch 1.13), and
// onnx_conv_with_strides_padding by the onnx 1.12 Python package (a case
// of its conformance suite). They must parse and serialize again to the
// same bytes whatever the schema's package name, which the wire format
// does not hold.

// TestWireFormatUnchanged parses every model and tensor file of
// ../testdata/wire, checks that the schema knows all their fields and
// that serializing them again gives the same bytes.
func TestWireFormatUnchanged(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "wire", "*", "*.onnx"))
	require.NoError(t, err)
	tensors, err := filepath.Glob(filepath.Join("..", "testdata", "wire", "*", "test_data_set_*", "*.pb"))
	require.NoError(t, err)
	require.Len(t, files, 3)
	require.Len(t, tensors, 7)
	check := func(path string, m proto.Message) {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, proto.Unmarshal(data, m), path)
		assert.Empty(t, unknownFields(m.ProtoReflect()), "%s: fields the schema does not know", path)
		again, err := proto.Marshal(m)
		require.NoError(t, err)
		assert.Equal(t, data, again, "%s: serialized again", path)
	}
	for _, path := range files {
		check(path, &onnxpb.ModelProto{})
	}
	for _, path := range tensors {
		check(path, &onnxpb.TensorProto{})
	}
}

// unknownFields returns the full names of the messages within m that hold
// fields their schema does not define.
func unknownFields(m protoreflect.Message) []string {
	var out []string
	if len(m.GetUnknown()) > 0 {
		out = append(out, string(m.Descriptor().FullName()))
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Message() == nil:
		case fd.IsList():
			for i := range v.List().Len() {
				out = append(out, unknownFields(v.List().Get(i).Message())...)
			}
		case !fd.IsMap():
			out = append(out, unknownFields(v.Message())...)
		}
		return true
	})
	return out
}
