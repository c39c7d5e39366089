package onnxpb_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

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

// TestRegisteredUnderHoraPackage checks that every message and enum of
// onnxpb is registered under hora.onnx, none under onnx: another Go ONNX
// library (owulveryck/onnx-go, say) registers onnx.AttributeProto and the
// rest, and two registrations of one name make a program panic at start.
func TestRegisteredUnderHoraPackage(t *testing.T) {
	fd := onnxpb.File_onnx_onnxpb_onnx_proto
	assert.Equal(t, protoreflect.FullName("hora.onnx"), fd.Package())

	var names []protoreflect.FullName
	var walk func(msgs protoreflect.MessageDescriptors, enums protoreflect.EnumDescriptors)
	walk = func(msgs protoreflect.MessageDescriptors, enums protoreflect.EnumDescriptors) {
		for i := range enums.Len() {
			names = append(names, enums.Get(i).FullName())
		}
		for i := range msgs.Len() {
			names = append(names, msgs.Get(i).FullName())
			walk(msgs.Get(i).Messages(), msgs.Get(i).Enums())
		}
	}
	walk(fd.Messages(), fd.Enums())
	require.NotEmpty(t, names)
	for _, name := range names {
		assert.True(t, strings.HasPrefix(string(name), "hora.onnx."), "%s is not under hora.onnx", name)
		_, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
		assert.NoError(t, err, "%s is registered", name)
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName("hora.onnx.AttributeProto")
	require.NoError(t, err)
	assert.Equal(t, (&onnxpb.AttributeProto{}).ProtoReflect().Type(), mt)

	_, err = protoregistry.GlobalTypes.FindMessageByName("onnx.AttributeProto")
	assert.ErrorIs(t, err, protoregistry.NotFound)
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		assert.False(t, strings.HasPrefix(string(mt.Descriptor().FullName()), "onnx."), "message %s is registered under onnx", mt.Descriptor().FullName())
		return true
	})
	protoregistry.GlobalTypes.RangeEnums(func(et protoreflect.EnumType) bool {
		assert.False(t, strings.HasPrefix(string(et.Descriptor().FullName()), "onnx."), "enum %s is registered under onnx", et.Descriptor().FullName())
		return true
	})
}

// TestBesideAnotherONNXSchema registers, next to onnxpb's, a schema of
// package onnx with ONNX's message names, as another Go ONNX library does:
// the registry must accept it. It works on a copy of the global registry.
func TestBesideAnotherONNXSchema(t *testing.T) {
	files := new(protoregistry.Files)
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		require.NoError(t, files.RegisterFile(fd))
		return true
	})
	other := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("github.com/owulveryck/onnx-go/internal/onnx/ir/onnx.proto3"),
		Package: proto.String("onnx"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("AttributeProto")},
			{Name: proto.String("ModelProto")},
			{Name: proto.String("TensorProto")},
		},
		EnumType: []*descriptorpb.EnumDescriptorProto{{
			Name:  proto.String("Version"),
			Value: []*descriptorpb.EnumValueDescriptorProto{{Name: proto.String("_START_VERSION"), Number: proto.Int32(0)}},
		}},
	}
	fd, err := protodesc.NewFile(other, files)
	require.NoError(t, err)
	assert.NoError(t, files.RegisterFile(fd), "a schema of package onnx registers beside onnxpb")
}
