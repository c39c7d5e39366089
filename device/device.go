package device

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// DType is the element type of a Buffer.
type DType int

// The element types. Every device supports Float32, Float64 and Int64.
const (
	Float32 DType = iota + 1 // 32-bit IEEE float: weights, activations
	Float64                  // 64-bit IEEE float: gradient checks
	Int64                    // 64-bit signed integer: labels, indices
	// Float16 is the IEEE 754 binary16 ("half") float, held on the host as
	// its bits in a []uint16. It is a storage type, not a compute type:
	// a device that supports it (the CPU does) allocates it, reads and
	// writes it, converts it to and from the other types with
	// Kernels.Copy and slices it (Slicer), which is what gradient
	// compression needs; every other kernel rejects it with a panic, and
	// IsFloat reports false for it. Devices that do not store it return
	// an error from Alloc.
	Float16
)

// String returns the PyTorch-style name of the type ("float32").
func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case Int64:
		return "int64"
	case Float16:
		return "float16"
	}
	return "dtype(" + strconv.Itoa(int(d)) + ")"
}

// Size returns the size of one element in bytes.
func (d DType) Size() int {
	switch d {
	case Float32:
		return 4
	case Float64, Int64:
		return 8
	case Float16:
		return 2
	}
	return 0
}

// IsFloat reports whether d is a floating-point type the kernels compute
// in: Float32 or Float64. It is false for Float16, which is a storage type
// only (see Float16), so that checks such as "needs floating-point
// tensors" keep half-precision data away from the compute kernels.
func (d DType) IsFloat() bool { return d == Float32 || d == Float64 }

// Buffer is a flat array of Len elements of one DType owned by a Device.
type Buffer interface {
	// Device returns the device that owns the buffer.
	Device() Device
	// DType returns the element type.
	DType() DType
	// Len returns the number of elements.
	Len() int
	// Free releases the memory. It is idempotent; a freed buffer must not be used.
	Free()
}

// Device is a place where buffers live and kernels run.
type Device interface {
	// Name returns the device spec, such as "cpu" or "cuda:1".
	Name() string
	// Alloc returns a zero-filled buffer of n elements.
	Alloc(dt DType, n int) (Buffer, error)
	// Write copies src ([]float32, []float64, []int64, or []uint16 (IEEE
	// binary16 bits) for Float16, matching dst's DType and length) into dst.
	Write(dst Buffer, src any) error
	// Read copies src into dst ([]float32, []float64, []int64 or []uint16,
	// matching src's DType and length), after all queued work on src is done.
	Read(dst any, src Buffer) error
	// Sync waits for all queued work.
	Sync() error
	// Kernels returns the device's compute kernels.
	Kernels() Kernels
	// Close releases the device.
	Close() error
}

// ConstantMarker is implemented by devices whose buffers can be marked as
// never written again, as a model's weights at inference are. Kernels may
// then keep forms derived from such a buffer (a filter transformed for
// Winograd, or packed for a direct convolution) from one call to the next
// instead of computing them on every call. Writing to a marked buffer
// through the device (Write) drops those forms; writing to it any other
// way (as a kernel's output, or through its backing slice) gives wrong
// results.
type ConstantMarker interface {
	// MarkConstant marks b as never written again.
	MarkConstant(b Buffer)
}

// LaneRunner is implemented by devices whose cores can each run a piece
// of independent work on their own (the CPU): an inference run of a batch
// of images, say, runs as several runs of a few images side by side, each
// on one core with its activations in that core's caches, instead of
// every layer of the whole batch split across the cores.
type LaneRunner interface {
	// Lanes returns how many pieces of work run side by side: the cores
	// a kernel is split over now (1 inside RunLanes).
	Lanes() int
	// RunLanes calls fn(0), …, fn(n-1), each on its own goroutine, and
	// returns when all have returned. Until then the device's kernels run
	// on their calling goroutine alone, whoever calls them.
	RunLanes(n int, fn func(lane int))
}

// CacheSharer is implemented by devices whose worker threads may or may
// not share a cache from one moment to the next (the CPU, whose threads a
// VM's host may run on cores of one core complex or of two): memory that
// one thread wrote and another then writes crosses between caches, which
// costs little while they share one and much while they do not.
type CacheSharer interface {
	// SharesCache reports whether the device's threads share a cache now
	// (as last measured).
	SharesCache() bool
}

// Slicer is implemented by devices whose buffers can be viewed in part,
// without a copy (a fusion buffer's prefix handed to a collective).
type Slicer interface {
	// Slice returns a buffer sharing elements [off, off+n) of b: writes
	// through either are seen by the other. It returns an error (not a
	// panic) when off or n is negative or off+n exceeds b.Len(). Freeing
	// the slice does not free b; b must outlive the slice.
	Slice(b Buffer, off, n int) (Buffer, error)
}

// SliceOf returns a buffer sharing elements [off, off+n) of b, using the
// Slicer of b's device. It returns an error for bounds outside [0, b.Len()],
// and one wrapping ErrNotImplemented when the device cannot slice.
func SliceOf(b Buffer, off, n int) (Buffer, error) {
	if off < 0 || n < 0 || off > b.Len()-n {
		return nil, fmt.Errorf("device: slice [%d, %d+%d) of a %v buffer of %d elements is out of range", off, off, n, b.DType(), b.Len())
	}
	s, ok := b.Device().(Slicer)
	if !ok {
		return nil, fmt.Errorf("device: slice of a %s buffer: %w", b.Device().Name(), ErrNotImplemented)
	}
	return s.Slice(b, off, n)
}

// Sentinel errors returned by devices.
var (
	// ErrUnavailable means the device or its library is not present on this machine.
	ErrUnavailable = errors.New("device unavailable")
	// ErrNotImplemented means the device lacks a kernel.
	ErrNotImplemented = errors.New("not implemented on this device")
	// ErrUnknownDevice means no backend is registered under the requested name.
	ErrUnknownDevice = errors.New("unknown device")
)

var (
	registryMu sync.Mutex
	registry   = map[string]func(ordinal int) (Device, error){}
)

// Register makes a backend available to Open under name. Backends call it
// from their init function. Registering a name twice panics.
func Register(name string, open func(ordinal int) (Device, error)) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("device: Register called twice for " + name)
	}
	registry[name] = open
}

// Registered returns the names of the registered backends, sorted.
func Registered() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open opens the device named by spec: a backend name optionally followed by
// ":ordinal", such as "cpu" or "cuda:0".
func Open(spec string) (Device, error) {
	name, ord := spec, 0
	if i := strings.IndexByte(spec, ':'); i >= 0 {
		name = spec[:i]
		n, err := strconv.Atoi(spec[i+1:])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("device %q: ordinal must be a non-negative integer", spec)
		}
		ord = n
	}
	registryMu.Lock()
	open, ok := registry[name]
	registryMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("device %q: %w (registered: %s)", spec, ErrUnknownDevice, strings.Join(Registered(), ", "))
	}
	return open(ord)
}
