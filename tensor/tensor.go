package tensor

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
)

// Tensor is an n-dimensional strided view of a device buffer. Several
// tensors may share one buffer (views); operations return new tensors and
// never modify their inputs, except the methods documented as in-place.
type Tensor struct {
	buf     device.Buffer
	shape   []int
	strides []int
	offset  int
	arena   *Arena // where results computed from t take their buffers (nil: the device)
	gen     uint64 // the arena's generation when t was made
	dims    [8]int // inline storage for the shape and strides of up to 4 dimensions
}

// setContiguous gives t a dense row-major layout of the given shape, stored
// inline when it has at most 4 dimensions.
func (t *Tensor) setContiguous(shape []int) {
	r := len(shape)
	if r <= len(t.dims)/2 {
		t.shape, t.strides = t.dims[:r:r], t.dims[r:2*r:2*r]
	} else {
		t.shape, t.strides = make([]int, r), make([]int, r)
	}
	copy(t.shape, shape)
	s := 1
	for i := r - 1; i >= 0; i-- {
		t.strides[i] = s
		s *= shape[i]
	}
}

// The CPU device used by the constructors that take no device: the one
// device.Open("cpu") returns.
var cpuDevice device.Device = cpu.Default()

// CPU returns the CPU device that FromFloat32, Zeros and friends use; it
// is the device that device.Open("cpu") returns.
func CPU() device.Device { return cpuDevice }

// New returns a zero-filled dense tensor of the given type and shape on dev.
// It panics if the device cannot allocate the memory.
func New(dev device.Device, dt device.DType, shape ...int) *Tensor {
	n := numElements(shape)
	b, err := dev.Alloc(dt, n)
	if err != nil {
		panic(&DeviceError{Op: fmt.Sprintf("allocating %v%v on %s", dt, slices.Clone(shape), dev.Name()), Err: err})
	}
	t := &Tensor{buf: b}
	t.setContiguous(shape)
	return t
}

// DeviceError is the panic value of a tensor operation whose device
// failed: an allocation (a GPU out of memory), a copy, or a read, which
// also reports a kernel that failed on the device. A program that wants
// such failures as errors recovers it (package train does).
type DeviceError struct {
	Op  string // what the tensor package was doing: "read", "allocating float32[128 10] on cuda:0"
	Err error  // the device's error
}

// Error says what failed and why.
func (e *DeviceError) Error() string { return "tensor: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the device's error.
func (e *DeviceError) Unwrap() error { return e.Err }

// Zeros returns a float32 tensor of zeros on the CPU.
func Zeros(shape ...int) *Tensor { return New(cpuDevice, device.Float32, shape...) }

// Full returns a tensor on dev filled with v.
func Full(dev device.Device, dt device.DType, v float64, shape ...int) *Tensor {
	t := New(dev, dt, shape...)
	if v != 0 {
		t.Fill(v)
	}
	return t
}

// ZerosLike returns a dense tensor of zeros with t's device, type, shape
// and arena (see Arena).
func ZerosLike(t *Tensor) *Tensor { return newOut(true, t.DType(), t.shape, t) }

// FullLike returns a dense tensor filled with v with t's device, type,
// shape and arena.
func FullLike(t *Tensor, v float64) *Tensor {
	out := newOut(v == 0, t.DType(), t.shape, t)
	if v != 0 {
		out.Fill(v)
	}
	return out
}

// Empty returns a dense tensor of type dt and the given shape for the
// result of an operation on inputs: on the first input's device, its
// memory taken from the arena of the first input that has one (see
// Arena). Its contents are arbitrary, so it suits code above this package
// that runs a device kernel which writes every element (autograd's fused
// batch normalisation).
func Empty(dt device.DType, shape []int, inputs ...*Tensor) *Tensor {
	if len(inputs) == 0 {
		panic("tensor: Empty needs at least one input to take the device from")
	}
	return newOut(false, dt, shape, inputs...)
}

// FromFloat32 returns a float32 CPU tensor holding a copy of data. It
// panics when data does not fill shape. With no shape, one value makes a
// 0-dimensional scalar and any other number of values a vector; pass the
// shape (FromFloat32(v, 1)) for a one-element vector.
func FromFloat32(data []float32, shape ...int) *Tensor {
	return fromSlice(cpuDevice, device.Float32, data, len(data), shape)
}

// FromFloat64 returns a float64 CPU tensor holding a copy of data (see
// FromFloat32 for the shape rules).
func FromFloat64(data []float64, shape ...int) *Tensor {
	return fromSlice(cpuDevice, device.Float64, data, len(data), shape)
}

// FromInt64 returns an int64 CPU tensor holding a copy of data (see
// FromFloat32 for the shape rules).
func FromInt64(data []int64, shape ...int) *Tensor {
	return fromSlice(cpuDevice, device.Int64, data, len(data), shape)
}

// FromSlice returns a tensor on dev holding a copy of data ([]float32,
// []float64, []int64, or []uint16 for a device.Float16 tensor of IEEE
// binary16 bits, on devices that store that type). It returns an error (not a panic) when the data
// does not fit the shape, since data often comes from files.
func FromSlice(dev device.Device, data any, shape ...int) (*Tensor, error) {
	dt, err := checkSlice(data, shape)
	if err != nil {
		return nil, err
	}
	t := New(dev, dt, shape...)
	if err := dev.Write(t.buf, data); err != nil {
		return nil, err
	}
	return t, nil
}

// checkSlice returns the element type of data ([]float32, []float64,
// []int64 or []uint16) after checking that it fills shape exactly.
func checkSlice(data any, shape []int) (device.DType, error) {
	var dt device.DType
	var n int
	switch d := data.(type) {
	case []float32:
		dt, n = device.Float32, len(d)
	case []float64:
		dt, n = device.Float64, len(d)
	case []int64:
		dt, n = device.Int64, len(d)
	case []uint16:
		dt, n = device.Float16, len(d)
	default:
		return 0, fmt.Errorf("tensor: unsupported data type %T", data)
	}
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("tensor: negative dimension in shape %v", shape)
		}
	}
	if device.NumElements(shape) != n {
		return 0, fmt.Errorf("tensor: %d values do not fill shape %v (%d elements)", n, shape, device.NumElements(shape))
	}
	return dt, nil
}

func fromSlice(dev device.Device, dt device.DType, data any, n int, shape []int) *Tensor {
	if len(shape) == 0 && n != 1 {
		shape = []int{n}
	}
	t, err := FromSlice(dev, data, shape...)
	if err != nil {
		panic(err.Error())
	}
	return t
}

// Scalar returns a 0-dimensional float32 CPU tensor.
func Scalar(v float32) *Tensor { return FromFloat32([]float32{v}) }

// Device returns the device holding the data.
func (t *Tensor) Device() device.Device { return t.live().Device() }

// DType returns the element type.
func (t *Tensor) DType() device.DType { return t.live().DType() }

// Buffer returns the underlying buffer (shared with every view of it).
func (t *Tensor) Buffer() device.Buffer { return t.live() }

// live returns t's buffer, panicking with a clear message when t's arena
// has been Reset since t was made (the buffer is then gone).
func (t *Tensor) live() device.Buffer {
	if t.buf == nil {
		t.checkLive()
		panic("tensor: use of a tensor with no buffer")
	}
	return t.buf
}

// Layout returns the view's shape, strides and offset into Buffer.
func (t *Tensor) Layout() device.Layout {
	return device.Layout{Shape: t.Shape(), Strides: append([]int(nil), t.strides...), Offset: t.offset}
}

// layout is Layout without the copies, for handing to kernels (which
// never modify or keep a Layout's slices).
func (t *Tensor) layout() device.Layout {
	return device.Layout{Shape: t.shape, Strides: t.strides, Offset: t.offset}
}

// Shape returns a copy of the shape.
func (t *Tensor) Shape() []int { return append([]int(nil), t.shape...) }

// Dims returns the shape itself, without Shape's copy, for code that only
// reads it on a hot path (an inference run's per-node checks): the caller
// must not modify it.
func (t *Tensor) Dims() []int { return t.shape }

// Rank returns the number of dimensions.
func (t *Tensor) Rank() int { return len(t.shape) }

// Dim returns the length of axis i; negative i counts from the end.
func (t *Tensor) Dim(i int) int { return t.shape[t.axis(i)] }

// Len returns the number of elements.
func (t *Tensor) Len() int { return device.NumElements(t.shape) }

// Strides returns a copy of the strides, in elements.
func (t *Tensor) Strides() []int { return append([]int(nil), t.strides...) }

// axis resolves a possibly negative axis, panicking when out of range.
func (t *Tensor) axis(i int) int {
	r := len(t.shape)
	if i < 0 {
		i += r
	}
	if i < 0 || i >= r {
		panic(fmt.Sprintf("tensor: axis %d out of range for shape %v", i, t.shape))
	}
	return i
}

// MarkConstant declares that t's values never change again (a model's
// weights at inference), so that kernels may keep forms derived from them
// from one call to the next instead of recomputing them (a convolution's
// transformed or packed filters; see device.ConstantMarker). It returns t.
// A tensor in an arena is left as it is, as are tensors on devices that
// keep no derived forms. Writing to t afterwards other than with CopyFrom
// (or the device's Write) gives wrong results.
func (t *Tensor) MarkConstant() *Tensor {
	if cm, ok := t.Device().(device.ConstantMarker); ok && t.arena == nil {
		cm.MarkConstant(t.buf)
	}
	return t
}

// IsContiguous reports whether the view is dense row-major starting at the
// beginning of its buffer, which is what kernels expect.
func (t *Tensor) IsContiguous() bool {
	if t.offset != 0 || t.Len() != t.buf.Len() {
		return false
	}
	s := 1
	for i := len(t.shape) - 1; i >= 0; i-- {
		if t.shape[i] != 1 && t.strides[i] != s {
			return false
		}
		s *= t.shape[i]
	}
	return true
}

// Contiguous returns t if it is contiguous, else a dense copy.
func (t *Tensor) Contiguous() *Tensor {
	if t.IsContiguous() {
		return t
	}
	out := newOut(false, t.DType(), t.shape, t)
	t.kernels().Copy(out.buf, out.layout(), t.buf, t.layout())
	return out
}

// Clone returns a dense copy that shares nothing with t.
func (t *Tensor) Clone() *Tensor {
	out := newOut(false, t.DType(), t.shape, t)
	t.kernels().Copy(out.buf, out.layout(), t.buf, t.layout())
	return out
}

// Cast returns t converted to dt (t itself when it already has that type).
func (t *Tensor) Cast(dt device.DType) *Tensor {
	if t.DType() == dt {
		return t
	}
	out := newOut(false, dt, t.shape, t)
	t.kernels().Copy(out.buf, out.layout(), t.buf, t.layout())
	return out
}

// To returns t on dev, copying through host memory when the device differs.
func (t *Tensor) To(dev device.Device) *Tensor {
	if t.Device() == dev {
		return t
	}
	c := t.Contiguous()
	var data any
	switch t.DType() {
	case device.Float32:
		data = c.Float32s()
	case device.Float64:
		data = c.Float64s()
	case device.Int64:
		data = c.Int64s()
	case device.Float16:
		data = c.Float16s()
	default:
		panic(fmt.Sprintf("tensor: moving a %v tensor %v to %s: unsupported type", t.DType(), t.shape, dev.Name()))
	}
	out, err := FromSlice(dev, data, t.shape...)
	if err != nil {
		panic(&DeviceError{Op: fmt.Sprintf("moving %v to %s", t.shape, dev.Name()), Err: err})
	}
	return out
}

// CopyFrom copies src into t in place (t may be a view: the buffer it shares
// changes). src must broadcast to t's shape; types are converted. src may
// overlap t (views of one buffer): it is then read as it was before the copy.
func (t *Tensor) CopyFrom(src *Tensor) {
	sameDevice("CopyFrom", t, src)
	if src.buf == t.buf {
		src = src.Clone() // the views may overlap
	}
	sl := src.broadcastLayout(t.shape, "CopyFrom", t)
	t.kernels().Copy(t.buf, t.layout(), src.buf, sl)
}

// Fill sets every element of t (in place) to v.
func (t *Tensor) Fill(v float64) {
	if t.IsContiguous() {
		t.kernels().Fill(t.buf, t.Len(), v)
		return
	}
	t.CopyFrom(Full(t.Device(), t.DType(), v))
}

func (t *Tensor) kernels() device.Kernels { return t.Device().Kernels() }

func read[T any](t *Tensor, want device.DType) []T {
	if t.DType() != want {
		panic(fmt.Sprintf("tensor: reading %v tensor as %v", t.DType(), want))
	}
	c := t.Contiguous()
	out := make([]T, c.Len())
	if err := c.Device().Read(out, c.buf); err != nil {
		panic(&DeviceError{Op: "read", Err: err})
	}
	return out
}

// Float32s returns a copy of a float32 tensor's elements in row-major order.
func (t *Tensor) Float32s() []float32 { return read[float32](t, device.Float32) }

// Float64s returns a copy of a float64 tensor's elements in row-major order.
func (t *Tensor) Float64s() []float64 { return read[float64](t, device.Float64) }

// Int64s returns a copy of an int64 tensor's elements in row-major order.
func (t *Tensor) Int64s() []int64 { return read[int64](t, device.Int64) }

// Float16s returns a copy of a float16 tensor's elements in row-major
// order, as IEEE binary16 bits.
func (t *Tensor) Float16s() []uint16 { return read[uint16](t, device.Float16) }

// Values returns the elements as float64, whatever the type.
func (t *Tensor) Values() []float64 { return t.Cast(device.Float64).Float64s() }

// Item returns the only element of a one-element tensor.
func (t *Tensor) Item() float64 {
	if t.Len() != 1 {
		panic(fmt.Sprintf("tensor: Item of shape %v (%d elements)", t.shape, t.Len()))
	}
	switch t.DType() { // read it as it is: no converted copy to allocate
	case device.Float32:
		return float64(t.Float32s()[0])
	case device.Float64:
		return t.Float64s()[0]
	}
	return t.Values()[0]
}

// String formats small tensors fully and large ones by shape and type.
func (t *Tensor) String() string {
	if t.Len() > 64 {
		return fmt.Sprintf("Tensor(%v, %v, %s)", t.shape, t.DType(), t.Device().Name())
	}
	var b strings.Builder
	vals := t.Values()
	b.WriteString("Tensor(")
	formatNested(&b, vals, t.shape)
	fmt.Fprintf(&b, ", %v)", t.DType())
	return b.String()
}

func formatNested(b *strings.Builder, vals []float64, shape []int) {
	if len(shape) == 0 {
		fmt.Fprintf(b, "%g", vals[0])
		return
	}
	if len(vals) == 0 {
		b.WriteString("[]") // a shape with a zero dimension
		return
	}
	b.WriteByte('[')
	step := len(vals) / max(shape[0], 1)
	for i := 0; i < shape[0]; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		formatNested(b, vals[i*step:(i+1)*step], shape[1:])
	}
	b.WriteByte(']')
}

// AllClose reports whether a and b have the same shape and every pair of
// elements satisfies |x - y| <= atol + rtol*|y|.
func AllClose(a, b *Tensor, rtol, atol float64) bool {
	if !slices.Equal(a.shape, b.shape) {
		return false
	}
	x, y := a.Values(), b.Values()
	for i := range x {
		if math.IsNaN(x[i]) != math.IsNaN(y[i]) || math.Abs(x[i]-y[i]) > atol+rtol*math.Abs(y[i]) {
			return false
		}
	}
	return true
}

func sameDevice(op string, ts ...*Tensor) {
	for _, u := range ts[1:] {
		if u.Device() != ts[0].Device() {
			panic(fmt.Sprintf("tensor: %s: tensors on %s and %s", op, ts[0].Device().Name(), u.Device().Name()))
		}
	}
}

func sameFloat(op string, ts ...*Tensor) {
	sameDevice(op, ts...)
	for _, u := range ts {
		if !u.DType().IsFloat() {
			panic(fmt.Sprintf("tensor: %s needs floating-point tensors, found %v %v", op, u.DType(), u.shape))
		}
		if u.DType() != ts[0].DType() {
			panic(fmt.Sprintf("tensor: %s: types %v %v and %v %v differ", op, ts[0].DType(), ts[0].shape, u.DType(), u.shape))
		}
	}
}
