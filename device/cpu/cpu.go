package cpu

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/hora-dl/hora/device"
)

func init() {
	device.Register("cpu", func(ordinal int) (device.Device, error) {
		if ordinal != 0 {
			return nil, fmt.Errorf("cpu:%d: only cpu:0 exists: %w", ordinal, device.ErrUnavailable)
		}
		return Default(), nil
	})
}

// Device is the CPU device. Its buffers are Go slices, its kernels run on
// all cores (runtime.GOMAXPROCS).
type Device struct {
	workers atomic.Int64 // 0: runtime.GOMAXPROCS(0) at each call
	lanes   atomic.Int64 // RunLanes calls in progress: kernels run serially while > 0
	pool    workerPool
	gemm    gemmBackend
	cache   cacheState // whether the threads share a cache (SharesCache)
}

// defaultDevice is the one device that device.Open("cpu") and the tensor
// package hand out, so that their tensors can be mixed. Its only mutable
// setting is the thread count (SetThreads).
var defaultDevice = &Device{}

// Default returns the shared CPU device that device.Open("cpu") returns
// (and that the tensor package's CPU constructors use). It uses
// runtime.GOMAXPROCS(0) goroutines, read at each kernel call.
func Default() *Device { return defaultDevice }

// New returns a new CPU device that uses runtime.GOMAXPROCS(0) goroutines,
// read now. Tensors on different Devices cannot be mixed in one operation;
// most code wants Default.
func New() *Device {
	d := &Device{}
	d.workers.Store(int64(runtime.GOMAXPROCS(0)))
	return d
}

// SetThreads sets the number of goroutines a kernel is split over; n ≤ 0
// goes back to runtime.GOMAXPROCS(0) read at each call. A data-parallel
// rank sets it to its share of the host's cores while GOMAXPROCS leaves
// room for the communication goroutine.
func (d *Device) SetThreads(n int) { d.workers.Store(int64(max(n, 0))) }

// Threads returns the number of goroutines a kernel is split over now.
func (d *Device) Threads() int { return d.numWorkers() }

// Name returns "cpu".
func (d *Device) Name() string { return "cpu" }

// Buffer is a CPU buffer: exactly one of its slices is set, per DType.
type Buffer struct {
	dev *Device
	dt  device.DType
	f32 []float32
	f64 []float64
	i64 []int64
	f16 []uint16 // IEEE binary16 bits
	// forms are the forms kernels derived from a constant buffer (see
	// MarkConstant and derived.go); nil when the buffer is not constant.
	forms *derivedForms
}

// Device returns the owning device.
func (b *Buffer) Device() device.Device { return b.dev }

// DType returns the element type.
func (b *Buffer) DType() device.DType { return b.dt }

// Len returns the number of elements.
func (b *Buffer) Len() int {
	switch b.dt {
	case device.Float32:
		return len(b.f32)
	case device.Float64:
		return len(b.f64)
	case device.Int64:
		return len(b.i64)
	case device.Float16:
		return len(b.f16)
	}
	return 0
}

// Free drops the slice; the garbage collector reclaims the memory (once
// no slice of the buffer, see Device.Slice, holds it either).
func (b *Buffer) Free() { b.f32, b.f64, b.i64, b.f16, b.forms = nil, nil, nil, nil, nil }

// Float32s returns the backing slice of a Float32 buffer (nil otherwise).
// Writes to it change the buffer.
func (b *Buffer) Float32s() []float32 { return b.f32 }

// Bytes returns the buffer's memory, whatever its type (nil when it is
// empty or freed). Transports hand it to MPI or copy it into shared
// memory; writes to it change the buffer.
func (b *Buffer) Bytes() []byte {
	var p unsafe.Pointer
	switch b.dt {
	case device.Float32:
		p = unsafe.Pointer(unsafe.SliceData(b.f32))
	case device.Float64:
		p = unsafe.Pointer(unsafe.SliceData(b.f64))
	case device.Int64:
		p = unsafe.Pointer(unsafe.SliceData(b.i64))
	case device.Float16:
		p = unsafe.Pointer(unsafe.SliceData(b.f16))
	}
	if p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(p), b.Len()*b.dt.Size())
}

// Float64s returns the backing slice of a Float64 buffer (nil otherwise).
func (b *Buffer) Float64s() []float64 { return b.f64 }

// Int64s returns the backing slice of an Int64 buffer (nil otherwise).
func (b *Buffer) Int64s() []int64 { return b.i64 }

// Float16s returns the backing slice of a Float16 buffer, the elements'
// IEEE binary16 bits (nil otherwise). Float32ToFloat16 and
// Float16ToFloat32 convert to and from it.
func (b *Buffer) Float16s() []uint16 { return b.f16 }

// Alloc returns a zeroed buffer.
func (d *Device) Alloc(dt device.DType, n int) (device.Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("cpu: alloc of %d elements", n)
	}
	b := &Buffer{dev: d, dt: dt}
	switch dt {
	case device.Float32:
		b.f32 = make([]float32, n)
	case device.Float64:
		b.f64 = make([]float64, n)
	case device.Int64:
		b.i64 = make([]int64, n)
	case device.Float16:
		b.f16 = make([]uint16, n)
	default:
		return nil, fmt.Errorf("cpu: alloc: unsupported %v", dt)
	}
	return b, nil
}

// Write copies a host slice into dst: []float32, []float64, []int64, or
// []uint16 (IEEE binary16 bits) for a Float16 buffer.
func (d *Device) Write(dst device.Buffer, src any) error {
	b, ok := dst.(*Buffer)
	if !ok {
		return fmt.Errorf("cpu: write: buffer of device %s", dst.Device().Name())
	}
	b.forms.drop() // forms derived from the old values
	switch s := src.(type) {
	case []float32:
		return copyChecked("write", b.dt, device.Float32, b.f32, s)
	case []float64:
		return copyChecked("write", b.dt, device.Float64, b.f64, s)
	case []int64:
		return copyChecked("write", b.dt, device.Int64, b.i64, s)
	case []uint16:
		return copyChecked("write", b.dt, device.Float16, b.f16, s)
	}
	return fmt.Errorf("cpu: write: unsupported source %T", src)
}

// Read copies src into a host slice of its type ([]uint16 for Float16).
func (d *Device) Read(dst any, src device.Buffer) error {
	b, ok := src.(*Buffer)
	if !ok {
		return fmt.Errorf("cpu: read: buffer of device %s", src.Device().Name())
	}
	switch s := dst.(type) {
	case []float32:
		return copyChecked("read", b.dt, device.Float32, s, b.f32)
	case []float64:
		return copyChecked("read", b.dt, device.Float64, s, b.f64)
	case []int64:
		return copyChecked("read", b.dt, device.Int64, s, b.i64)
	case []uint16:
		return copyChecked("read", b.dt, device.Float16, s, b.f16)
	}
	return fmt.Errorf("cpu: read: unsupported destination %T", dst)
}

// copyChecked copies src into dst after checking that the buffer's type is
// want and that the lengths agree.
func copyChecked[T any](op string, have, want device.DType, dst, src []T) error {
	if have != want {
		return fmt.Errorf("cpu: %s: %v buffer used as %v", op, have, want)
	}
	if len(dst) != len(src) {
		return fmt.Errorf("cpu: %s: %d elements into %d", op, len(src), len(dst))
	}
	copy(dst, src)
	return nil
}

// The CPU device's buffers can be sliced.
var _ device.Slicer = (*Device)(nil)

// Slice returns a buffer sharing elements [off, off+n) of the CPU buffer b,
// without a copy. It returns an error when b is not a CPU buffer or the
// range is outside [0, b.Len()]. The slice reports b's device; freeing it
// leaves b untouched, and freeing b leaves the slice's memory alive.
func (d *Device) Slice(b device.Buffer, off, n int) (device.Buffer, error) {
	cb, ok := b.(*Buffer)
	if !ok {
		return nil, fmt.Errorf("cpu: slice: buffer of device %s", b.Device().Name())
	}
	if off < 0 || n < 0 || off > cb.Len()-n {
		return nil, fmt.Errorf("cpu: slice: [%d, %d+%d) is outside a %v buffer of %d elements", off, off, n, cb.dt, cb.Len())
	}
	s := &Buffer{dev: cb.dev, dt: cb.dt}
	end := off + n
	switch cb.dt {
	case device.Float32:
		s.f32 = cb.f32[off:end:end]
	case device.Float64:
		s.f64 = cb.f64[off:end:end]
	case device.Int64:
		s.i64 = cb.i64[off:end:end]
	case device.Float16:
		s.f16 = cb.f16[off:end:end]
	default:
		return nil, fmt.Errorf("cpu: slice: unsupported %v", cb.dt)
	}
	return s, nil
}

// Sync returns at once: CPU kernels finish before they return.
func (d *Device) Sync() error { return nil }

// Kernels returns the CPU kernels.
func (d *Device) Kernels() device.Kernels { return kernels{d} }

// Close does nothing; the CPU device holds no resources.
func (d *Device) Close() error { return nil }
