package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/internal/filekind"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// DataType is an ONNX element type (TensorProto.DataType).
type DataType = onnxpb.TensorProto_DataType

// maxElements bounds the size of one tensor read from a file, so that a
// corrupt dims field is an error rather than an attempt to allocate
// terabytes.
const maxElements = 1 << 34

// hostType returns the Hora element type that holds ONNX type dt, or an
// error wrapping ErrUnsupported.
func hostType(dt DataType) (device.DType, error) {
	switch dt {
	case onnxpb.TensorProto_FLOAT:
		return device.Float32, nil
	case onnxpb.TensorProto_DOUBLE:
		return device.Float64, nil
	case onnxpb.TensorProto_INT64, onnxpb.TensorProto_INT32, onnxpb.TensorProto_INT16, onnxpb.TensorProto_INT8,
		onnxpb.TensorProto_UINT8, onnxpb.TensorProto_UINT16, onnxpb.TensorProto_UINT32, onnxpb.TensorProto_UINT64,
		onnxpb.TensorProto_BOOL:
		return device.Int64, nil
	}
	return 0, fmt.Errorf("%w: element type %s", ErrUnsupported, typeName(dt))
}

// typeName returns the lower-case ONNX name of dt ("float", "int64").
func typeName(dt DataType) string {
	if name, ok := onnxpb.TensorProto_DataType_name[int32(dt)]; ok {
		return strings.ToLower(name)
	}
	return "type " + strconv.Itoa(int(dt))
}

// elemSize returns the size in bytes of one element of dt in raw_data.
func elemSize(dt DataType) int {
	switch dt {
	case onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT32, onnxpb.TensorProto_UINT32:
		return 4
	case onnxpb.TensorProto_DOUBLE, onnxpb.TensorProto_INT64, onnxpb.TensorProto_UINT64:
		return 8
	case onnxpb.TensorProto_INT16, onnxpb.TensorProto_UINT16, onnxpb.TensorProto_FLOAT16, onnxpb.TensorProto_BFLOAT16:
		return 2
	case onnxpb.TensorProto_INT8, onnxpb.TensorProto_UINT8, onnxpb.TensorProto_BOOL:
		return 1
	}
	return 0
}

// protoShape checks tp's dims and returns them as a shape and the element
// count.
func protoShape(tp *onnxpb.TensorProto) ([]int, int, error) {
	shape := make([]int, len(tp.GetDims()))
	n := int64(1)
	for i, d := range tp.GetDims() {
		if d < 0 {
			return nil, 0, fmt.Errorf("dimension %d is %d", i, d)
		}
		if d > maxElements {
			return nil, 0, fmt.Errorf("dimension %d is %d, more than the %d elements a tensor may have", i, d, int64(maxElements))
		}
		shape[i] = int(d)
		if d > 0 && n > maxElements/d {
			return nil, 0, fmt.Errorf("shape %v has more than %d elements", tp.GetDims(), int64(maxElements))
		}
		n *= d
	}
	return shape, int(n), nil
}

// tensorFromProto converts a TensorProto to a tensor on the CPU. src is
// the file it was read from (the model), beside which external data files
// are looked up ("" when the tensor cannot have external data). Errors
// name the tensor.
func tensorFromProto(tp *onnxpb.TensorProto, src string) (*tensor.Tensor, error) {
	t, err := tensorFromProtoRaw(tp, src)
	if err != nil {
		name := tp.GetName()
		if name == "" {
			name = "(unnamed)"
		}
		return nil, fmt.Errorf("tensor %q: %w", name, err)
	}
	return t, nil
}

func tensorFromProtoRaw(tp *onnxpb.TensorProto, src string) (*tensor.Tensor, error) {
	if tp == nil {
		return nil, fmt.Errorf("missing tensor value")
	}
	dt := DataType(tp.GetDataType())
	ht, err := hostType(dt)
	if err != nil {
		return nil, err
	}
	shape, n, err := protoShape(tp)
	if err != nil {
		return nil, err
	}
	if tp.GetSegment() != nil {
		return nil, fmt.Errorf("%w: segmented tensors", ErrUnsupported)
	}
	raw := tp.GetRawData()
	if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		if raw, err = readExternal(tp, src, n*elemSize(dt)); err != nil {
			return nil, err
		}
	}
	if raw != nil || n == 0 && typedLen(tp, dt) == 0 {
		if len(raw) != n*elemSize(dt) {
			return nil, fmt.Errorf("raw data has %d bytes, want %d for %d elements of %s", len(raw), n*elemSize(dt), n, typeName(dt))
		}
		return fromRaw(raw, dt, ht, shape, n), nil
	}
	if got := typedLen(tp, dt); got != n {
		return nil, fmt.Errorf("has %d %s values, want %d for shape %v", got, typeName(dt), n, shape)
	}
	switch dt {
	case onnxpb.TensorProto_FLOAT:
		return tensor.FromFloat32(append([]float32(nil), tp.GetFloatData()...), shape...), nil
	case onnxpb.TensorProto_DOUBLE:
		return tensor.FromFloat64(append([]float64(nil), tp.GetDoubleData()...), shape...), nil
	case onnxpb.TensorProto_INT64:
		return tensor.FromInt64(append([]int64(nil), tp.GetInt64Data()...), shape...), nil
	case onnxpb.TensorProto_UINT32, onnxpb.TensorProto_UINT64:
		vals := make([]int64, n)
		for i, v := range tp.GetUint64Data() {
			vals[i] = int64(v)
		}
		return tensor.FromInt64(vals, shape...), nil
	default: // the types stored in int32_data
		vals := make([]int64, n)
		for i, v := range tp.GetInt32Data() {
			vals[i] = int64(v)
		}
		return tensor.FromInt64(vals, shape...), nil
	}
}

// typedLen returns the number of values in the typed field that holds dt.
func typedLen(tp *onnxpb.TensorProto, dt DataType) int {
	switch dt {
	case onnxpb.TensorProto_FLOAT:
		return len(tp.GetFloatData())
	case onnxpb.TensorProto_DOUBLE:
		return len(tp.GetDoubleData())
	case onnxpb.TensorProto_INT64:
		return len(tp.GetInt64Data())
	case onnxpb.TensorProto_UINT32, onnxpb.TensorProto_UINT64:
		return len(tp.GetUint64Data())
	}
	return len(tp.GetInt32Data())
}

// fromRaw decodes little-endian raw data of ONNX type dt into a tensor of
// Hora type ht.
func fromRaw(raw []byte, dt DataType, ht device.DType, shape []int, n int) *tensor.Tensor {
	le := binary.LittleEndian
	switch dt {
	case onnxpb.TensorProto_FLOAT:
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return tensor.FromFloat32(vals, shape...)
	case onnxpb.TensorProto_DOUBLE:
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return tensor.FromFloat64(vals, shape...)
	}
	vals := make([]int64, n)
	for i := range vals {
		switch dt {
		case onnxpb.TensorProto_INT64, onnxpb.TensorProto_UINT64:
			vals[i] = int64(le.Uint64(raw[8*i:]))
		case onnxpb.TensorProto_INT32:
			vals[i] = int64(int32(le.Uint32(raw[4*i:])))
		case onnxpb.TensorProto_UINT32:
			vals[i] = int64(le.Uint32(raw[4*i:]))
		case onnxpb.TensorProto_INT16:
			vals[i] = int64(int16(le.Uint16(raw[2*i:])))
		case onnxpb.TensorProto_UINT16:
			vals[i] = int64(le.Uint16(raw[2*i:]))
		case onnxpb.TensorProto_INT8:
			vals[i] = int64(int8(raw[i]))
		case onnxpb.TensorProto_UINT8:
			vals[i] = int64(raw[i])
		case onnxpb.TensorProto_BOOL:
			if raw[i] != 0 {
				vals[i] = 1
			}
		}
	}
	_ = ht
	return tensor.FromInt64(vals, shape...)
}

// readExternal reads the want bytes of an external-data tensor: the file
// named by its "location" entry (see externalPath), from "offset" for
// "length" bytes (default: the rest of the file). The file must be a
// regular file, and offset and length are checked against its size and
// want before anything is allocated. Errors name the file and wrap
// ErrBadFile.
func readExternal(tp *onnxpb.TensorProto, src string, want int) ([]byte, error) {
	var location string
	offset, length := int64(0), int64(-1)
	for _, kv := range tp.GetExternalData() {
		var err error
		switch kv.GetKey() {
		case "location":
			location = kv.GetValue()
		case "offset":
			offset, err = strconv.ParseInt(kv.GetValue(), 10, 64)
		case "length":
			length, err = strconv.ParseInt(kv.GetValue(), 10, 64)
		}
		if err != nil || offset < 0 || length < -1 {
			return nil, badFile(fmt.Errorf("external data %s %q is not a valid byte count", kv.GetKey(), kv.GetValue()))
		}
	}
	if location == "" {
		return nil, badFile(fmt.Errorf("external data has no location"))
	}
	if src == "" {
		return nil, badFile(fmt.Errorf("external data %q: the model was not read from a file, so there is no folder to find it in (use onnx.Load)", location))
	}
	path, err := externalPath(src, location)
	if err != nil {
		return nil, badFile(err)
	}
	f, st, err := filekind.OpenRegular(path)
	if err != nil {
		return nil, badFile(fmt.Errorf("external data: %w", err))
	}
	defer f.Close()
	size := st.Size()
	if length < 0 {
		length = max(size-offset, 0)
	}
	if offset > size || length > size-offset {
		return nil, badFile(fmt.Errorf("external data file %s has %d bytes, fewer than offset %d + length %d", path, size, offset, length))
	}
	if length != int64(want) {
		return nil, badFile(fmt.Errorf("external data file %s: length %d bytes, want %d for shape %v of %s",
			path, length, want, tp.GetDims(), typeName(DataType(tp.GetDataType()))))
	}
	buf := make([]byte, length)
	if _, err := f.ReadAt(buf, offset); err != nil {
		return nil, badFile(fmt.Errorf("external data: reading %s: %w", path, err))
	}
	return buf, nil
}

// TensorToProto converts t to a TensorProto named name, holding its
// values as raw data of ONNX type dt (Int64 tensors may be written as any
// integer type or BOOL; float tensors as FLOAT or DOUBLE).
func TensorToProto(t *tensor.Tensor, name string, dt DataType) (*onnxpb.TensorProto, error) {
	tp := &onnxpb.TensorProto{Name: &name, DataType: ptr(int32(dt))}
	for _, d := range t.Shape() {
		tp.Dims = append(tp.Dims, int64(d))
	}
	size := elemSize(dt)
	if size == 0 || dt == onnxpb.TensorProto_FLOAT16 || dt == onnxpb.TensorProto_BFLOAT16 {
		return nil, fmt.Errorf("tensor %q: %w: element type %s", name, ErrUnsupported, typeName(dt))
	}
	le := binary.LittleEndian
	raw := make([]byte, t.Len()*size)
	switch dt {
	case onnxpb.TensorProto_FLOAT:
		for i, v := range t.Cast(device.Float32).Contiguous().Float32s() {
			le.PutUint32(raw[4*i:], math.Float32bits(v))
		}
	case onnxpb.TensorProto_DOUBLE:
		for i, v := range t.Cast(device.Float64).Contiguous().Float64s() {
			le.PutUint64(raw[8*i:], math.Float64bits(v))
		}
	default:
		vals := t.Cast(device.Int64).Contiguous().Int64s()
		for i, v := range vals {
			switch size {
			case 8:
				le.PutUint64(raw[8*i:], uint64(v))
			case 4:
				le.PutUint32(raw[4*i:], uint32(v))
			case 2:
				le.PutUint16(raw[2*i:], uint16(v))
			case 1:
				if dt == onnxpb.TensorProto_BOOL && v != 0 {
					v = 1
				}
				raw[i] = byte(v)
			}
		}
	}
	tp.RawData = raw
	return tp, nil
}

// protoTypeOf returns the ONNX type that matches a Hora tensor type.
func protoTypeOf(dt device.DType) DataType {
	switch dt {
	case device.Float64:
		return onnxpb.TensorProto_DOUBLE
	case device.Int64:
		return onnxpb.TensorProto_INT64
	case device.Float16:
		return onnxpb.TensorProto_FLOAT16
	}
	return onnxpb.TensorProto_FLOAT
}

func ptr[T any](v T) *T { return &v }
