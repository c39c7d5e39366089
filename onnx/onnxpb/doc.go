// Package onnxpb is the Go code that protoc-gen-go generates from
// onnx.proto, the ONNX model format (IR version 8): ModelProto,
// GraphProto, NodeProto, TensorProto and the rest, with ONNX's message
// names, field numbers and enum values, so that it reads and writes the
// files of every ONNX tool.
//
// The messages are registered under the proto package hora.onnx rather
// than ONNX's onnx, so that a program can link Hora beside another Go
// ONNX library; the package name is not written in the files. Regenerate
// the code with make proto.
package onnxpb
