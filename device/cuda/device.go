package cuda

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/hora-dl/hora/device"
)

func init() {
	device.Register("cuda", func(ordinal int) (device.Device, error) { return Open(ordinal) })
}

// stagingBytes is the size of each Device's pinned host buffer, through
// which Write and Read move data in pieces.
const stagingBytes = 8 << 20

var (
	libsOnce sync.Once
	libsAPI  *driverAPI
	libsErr  error

	openMu  sync.Mutex
	devices = map[int]*Device{} // one Device per ordinal, as device.Open("cuda:N") returns
)

// loadDriver loads libcuda and initialises it, once per process.
func loadDriver() (*driverAPI, error) {
	libsOnce.Do(func() {
		h, path, err := OpenLibrary("the CUDA driver (libcuda.so.1)", driverNames)
		if err != nil {
			libsErr = fmt.Errorf("%w: %v", device.ErrUnavailable, err)
			return
		}
		a := &driverAPI{}
		if err := bind(h, path, a.symbols()); err != nil {
			libsErr = fmt.Errorf("%w: %v", device.ErrUnavailable, err)
			return
		}
		if err := a.check("cuInit", a.cuInit(0)); err != nil {
			libsErr = fmt.Errorf("%w: %v", device.ErrUnavailable, err)
			return
		}
		libsAPI = a
	})
	return libsAPI, libsErr
}

// Available reports whether the CUDA driver loads and sees at least one
// GPU; when it does not, the error says why.
func Available() (int, error) {
	a, err := loadDriver()
	if err != nil {
		return 0, err
	}
	var n int32
	if err := a.check("cuDeviceGetCount", a.cuDeviceGetCount(&n)); err != nil {
		return 0, fmt.Errorf("%w: %v", device.ErrUnavailable, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("cuda: the driver loaded but sees no GPU: %w", device.ErrUnavailable)
	}
	return int(n), nil
}

// Device is one NVIDIA GPU: its primary context, one stream on which all
// of its work runs in order, a caching allocator and a pinned staging
// buffer. Open returns the same Device for the same ordinal.
type Device struct {
	ordinal int
	name    string // "cuda:0"
	gpu     string // the GPU's name ("NVIDIA H100 80GB HBM3")
	arch    int    // compute capability × 10 (90 for sm_90)
	sms     int    // multiprocessors

	api     *driverAPI
	w       *worker
	ctx     uintptr
	stream  uintptr
	mem     *allocator
	staging unsafe.Pointer // pinned, stagingBytes
	stageMu sync.Mutex

	kern    *kernels
	blasMu  sync.Mutex
	blas    *blasState
	modOnce sync.Once
	mod     *module
	modErr  error

	errMu  sync.Mutex
	err    error // the first failure of an asynchronous call, reported by the next Sync, Read or Write
	closed atomic.Bool

	tf32     atomic.Bool
	autocast atomic.Int32 // a device.DType: 0, BFloat16 or Float16 (SetAutocast)
}

// Open returns the Device for GPU ordinal, starting it on first use. It
// returns an error wrapping device.ErrUnavailable when the driver or the
// GPU is missing.
func Open(ordinal int) (*Device, error) {
	openMu.Lock()
	defer openMu.Unlock()
	if d := devices[ordinal]; d != nil && !d.closed.Load() {
		return d, nil
	}
	n, err := Available()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda:%d: this machine has %d GPU(s) (cuda:0 to cuda:%d): %w", ordinal, n, n-1, device.ErrUnavailable)
	}
	d, err := start(libsAPI, ordinal)
	if err != nil {
		return nil, err
	}
	devices[ordinal] = d
	return d, nil
}

// start retains the primary context of GPU ordinal on a new worker and
// creates the stream, allocator and staging buffer.
func start(a *driverAPI, ordinal int) (*Device, error) {
	d := &Device{ordinal: ordinal, name: fmt.Sprintf("cuda:%d", ordinal), api: a}
	d.tf32.Store(true)
	w, err := newWorker(func() error {
		var dev int32
		if err := a.check("cuDeviceGet", a.cuDeviceGet(&dev, int32(ordinal))); err != nil {
			return err
		}
		var buf [256]byte
		if err := a.check("cuDeviceGetName", a.cuDeviceGetName(&buf[0], int32(len(buf)), dev)); err != nil {
			return err
		}
		d.gpu = goString(&buf[0])
		var major, minor, sms int32
		if err := a.check("cuDeviceGetAttribute", a.cuDeviceGetAttribute(&major, attrComputeCapabilityMajor, dev)); err != nil {
			return err
		}
		if err := a.check("cuDeviceGetAttribute", a.cuDeviceGetAttribute(&minor, attrComputeCapabilityMinor, dev)); err != nil {
			return err
		}
		if err := a.check("cuDeviceGetAttribute", a.cuDeviceGetAttribute(&sms, attrMultiprocessorCount, dev)); err != nil {
			return err
		}
		d.arch, d.sms = int(major*10+minor), int(sms)
		if err := a.check("cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain(&d.ctx, dev)); err != nil {
			return err
		}
		if err := a.check("cuCtxSetCurrent", a.cuCtxSetCurrent(d.ctx)); err != nil {
			return err
		}
		if err := a.check("cuStreamCreate", a.cuStreamCreate(&d.stream, 1 /* CU_STREAM_NON_BLOCKING */)); err != nil {
			return err
		}
		return a.check("cuMemAllocHost_v2", a.cuMemAllocHost(&d.staging, stagingBytes))
	})
	if err != nil {
		return nil, fmt.Errorf("cuda:%d: %w", ordinal, err)
	}
	d.w = w
	d.mem = newAllocator(driverMemory{a})
	d.kern = &kernels{d: d}
	return d, nil
}

// driverMemory is the allocator's memory: cuMemAlloc_v2 and cuMemFree_v2.
type driverMemory struct{ a *driverAPI }

func (m driverMemory) memAlloc(n int) (uintptr, error) {
	var p uintptr
	return p, m.a.check("cuMemAlloc_v2", m.a.cuMemAlloc(&p, uintptr(n)))
}

func (m driverMemory) memFree(p uintptr) error { return m.a.check("cuMemFree_v2", m.a.cuMemFree(p)) }

// Name returns "cuda:N".
func (d *Device) Name() string { return d.name }

// GPU returns the GPU's name as the driver reports it.
func (d *Device) GPU() string { return d.gpu }

// ComputeCapability returns the GPU's compute capability × 10 (90 for an H100).
func (d *Device) ComputeCapability() int { return d.arch }

// Stream returns the CUstream on which all of d's work runs (for
// libraries such as NCCL that queue work beside Hora's).
func (d *Device) Stream() uintptr { return d.stream }

// Do runs f on the goroutine that owns d's CUDA context (where the
// context is current), after all work queued before, and returns its
// error. Libraries bound elsewhere (dist/nccl) call through it.
func (d *Device) Do(f func() error) error {
	if d.closed.Load() {
		return fmt.Errorf("%s: device is closed", d.name)
	}
	return d.w.do(f)
}

// SetTF32 turns TensorFloat-32 for float32 matrix products and
// convolutions on (the default, as PyTorch's
// torch.backends.cuda.matmul.allow_tf32 once was) or off (full float32
// precision, slower).
func (d *Device) SetTF32(on bool) { d.tf32.Store(on) }

// TF32 reports whether float32 matrix products may use TensorFloat-32.
func (d *Device) TF32() bool { return d.tf32.Load() }

// SetAutocast makes float32 matrix products (and so convolutions)
// compute with inputs rounded to dt — BFloat16, or device.Float16 — with
// products accumulated and stored in float32, as torch.autocast does for
// these operations; 0 or Float32 turns it off. Weights stay float32 (the
// master copy); only the products' inputs are rounded. Float16 needs
// loss scaling (optim.GradScaler) for its gradients not to underflow.
func (d *Device) SetAutocast(dt device.DType) error {
	switch dt {
	case 0, device.Float32:
		d.autocast.Store(0)
	case BFloat16, device.Float16:
		d.autocast.Store(int32(dt))
	default:
		return fmt.Errorf("%s: autocast to %v is not supported (bfloat16, float16 or float32)", d.name, dt)
	}
	return nil
}

// Autocast returns the type SetAutocast set (0 when off).
func (d *Device) Autocast() device.DType { return device.DType(d.autocast.Load()) }

// BFloat16 names bfloat16 for SetAutocast. It is not a storage type of
// the device package: tensors stay float32, and only the inputs of
// matrix products are rounded to it.
const BFloat16 device.DType = 100

// MemoryStats returns the caching allocator's counters.
func (d *Device) MemoryStats() MemoryStats { return d.mem.Stats() }

// EmptyCache gives the memory of freed buffers back to the driver (as
// torch.cuda.empty_cache).
func (d *Device) EmptyCache() error {
	return d.Do(func() error { return d.mem.empty() })
}

// fail records the first error of an asynchronous call.
func (d *Device) fail(err error) {
	if err == nil {
		return
	}
	d.errMu.Lock()
	if d.err == nil {
		d.err = err
	}
	d.errMu.Unlock()
}

// takeErr returns and clears the recorded error.
func (d *Device) takeErr() error {
	d.errMu.Lock()
	defer d.errMu.Unlock()
	err := d.err
	d.err = nil
	return err
}

// Buffer is GPU memory holding Len elements of one DType.
type Buffer struct {
	dev   *Device
	dt    device.DType
	n     int
	ptr   uintptr
	class int // the allocator's size class; 0 for a slice, which owns nothing
	freed atomic.Bool
}

// Device returns the GPU that holds b.
func (b *Buffer) Device() device.Device { return b.dev }

// DType returns the element type.
func (b *Buffer) DType() device.DType { return b.dt }

// Len returns the number of elements.
func (b *Buffer) Len() int { return b.n }

// Ptr returns b's device address (a CUdeviceptr).
func (b *Buffer) Ptr() uintptr { return b.ptr }

// Free returns b's memory to the device's cache, after the work queued
// before it. It is idempotent.
func (b *Buffer) Free() {
	if b.class == 0 || !b.freed.CompareAndSwap(false, true) || b.dev.closed.Load() {
		return
	}
	b.dev.w.post(func() { b.dev.mem.release(b.ptr, b.class) })
}

// bytes returns the size of b's elements in bytes.
func (b *Buffer) bytes() int { return b.n * b.dt.Size() }

// Alloc returns a zero-filled buffer of n elements of dt (Float32,
// Float64, Int64 or the storage type Float16).
func (d *Device) Alloc(dt device.DType, n int) (device.Buffer, error) {
	return d.alloc(dt, n, true)
}

// alloc returns a buffer, zero-filled when zero is set.
func (d *Device) alloc(dt device.DType, n int, zero bool) (*Buffer, error) {
	if dt.Size() == 0 {
		return nil, fmt.Errorf("%s: alloc: unknown dtype %v", d.name, dt)
	}
	if n < 0 {
		return nil, fmt.Errorf("%s: alloc: negative length %d", d.name, n)
	}
	b := &Buffer{dev: d, dt: dt, n: n}
	if d.closed.Load() {
		return nil, fmt.Errorf("%s: alloc: device is closed", d.name)
	}
	// A cached block needs no driver call: the caller need not wait for
	// the kernels queued before (they run before any use of the block
	// queued after, on the one stream).
	if p, class, ok := d.mem.cached(max(n*dt.Size(), 1)); ok {
		b.ptr, b.class = p, class
		if zero && n > 0 {
			d.w.post(func() {
				d.fail(d.api.check("cuMemsetD8Async", d.api.cuMemsetD8Async(p, 0, uintptr(n*dt.Size()), d.stream)))
			})
		}
		return b, nil
	}
	err := d.Do(func() error {
		p, class, err := d.mem.alloc(max(n*dt.Size(), 1))
		if err != nil {
			return err
		}
		b.ptr, b.class = p, class
		if zero && n > 0 {
			return d.api.check("cuMemsetD8Async", d.api.cuMemsetD8Async(p, 0, uintptr(n*dt.Size()), d.stream))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: alloc %d × %v (%d bytes): %w", d.name, n, dt, n*dt.Size(), err)
	}
	return b, nil
}

// own returns b as a *Buffer of d, panicking (a programming error) when
// it is another device's buffer.
func (d *Device) own(b device.Buffer) *Buffer {
	cb, ok := b.(*Buffer)
	if !ok || cb.dev != d {
		panic(fmt.Sprintf("%s: buffer of %s passed to this device", d.name, b.Device().Name()))
	}
	return cb
}

// hostBytes returns the bytes of a host slice that Write and Read accept,
// checking its type against dt and its length against n.
func hostBytes(s any, dt device.DType, n int) ([]byte, error) {
	var p unsafe.Pointer
	var l int
	var got device.DType
	switch v := s.(type) {
	case []float32:
		got, l = device.Float32, len(v)
		if l > 0 {
			p = unsafe.Pointer(&v[0])
		}
	case []float64:
		got, l = device.Float64, len(v)
		if l > 0 {
			p = unsafe.Pointer(&v[0])
		}
	case []int64:
		got, l = device.Int64, len(v)
		if l > 0 {
			p = unsafe.Pointer(&v[0])
		}
	case []uint16:
		got, l = device.Float16, len(v)
		if l > 0 {
			p = unsafe.Pointer(&v[0])
		}
	default:
		return nil, fmt.Errorf("unsupported host type %T", s)
	}
	if got != dt || l != n {
		return nil, fmt.Errorf("host slice is %d × %v, buffer is %d × %v", l, got, n, dt)
	}
	if l == 0 {
		return nil, nil
	}
	return unsafe.Slice((*byte)(p), l*dt.Size()), nil
}

// Write copies the host slice src into dst through the pinned staging buffer.
func (d *Device) Write(dst device.Buffer, src any) error {
	b := d.own(dst)
	host, err := hostBytes(src, b.dt, b.n)
	if err != nil {
		return fmt.Errorf("%s: write: %w", d.name, err)
	}
	d.stageMu.Lock()
	defer d.stageMu.Unlock()
	err = d.Do(func() error {
		if err := d.takeErr(); err != nil {
			return err
		}
		stage := unsafe.Slice((*byte)(d.staging), stagingBytes)
		for off := 0; off < len(host); off += stagingBytes {
			n := copy(stage, host[off:])
			if err := d.api.check("cuMemcpyHtoDAsync_v2", d.api.cuMemcpyHtoDAsync(b.ptr+uintptr(off), d.staging, uintptr(n), d.stream)); err != nil {
				return err
			}
			if err := d.api.check("cuStreamSynchronize", d.api.cuStreamSynchronize(d.stream)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: write %d × %v: %w", d.name, b.n, b.dt, err)
	}
	return nil
}

// Read copies src into the host slice dst after the work queued on src.
func (d *Device) Read(dst any, src device.Buffer) error {
	b := d.own(src)
	host, err := hostBytes(dst, b.dt, b.n)
	if err != nil {
		return fmt.Errorf("%s: read: %w", d.name, err)
	}
	d.stageMu.Lock()
	defer d.stageMu.Unlock()
	err = d.Do(func() error {
		if err := d.takeErr(); err != nil {
			return err
		}
		stage := unsafe.Slice((*byte)(d.staging), stagingBytes)
		for off := 0; off < len(host); off += stagingBytes {
			n := min(stagingBytes, len(host)-off)
			if err := d.api.check("cuMemcpyDtoHAsync_v2", d.api.cuMemcpyDtoHAsync(d.staging, b.ptr+uintptr(off), uintptr(n), d.stream)); err != nil {
				return err
			}
			if err := d.api.check("cuStreamSynchronize", d.api.cuStreamSynchronize(d.stream)); err != nil {
				return err
			}
			copy(host[off:off+n], stage)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: read %d × %v: %w", d.name, b.n, b.dt, err)
	}
	return nil
}

// Sync waits for all queued work and returns the first error of any
// asynchronous call since the last Sync, Read or Write.
func (d *Device) Sync() error {
	err := d.Do(func() error {
		if err := d.takeErr(); err != nil {
			return err
		}
		return d.api.check("cuStreamSynchronize", d.api.cuStreamSynchronize(d.stream))
	})
	if err != nil {
		return fmt.Errorf("%s: %w", d.name, err)
	}
	return nil
}

// Slice returns a view of elements [off, off+n) of b (device.Slicer).
func (d *Device) Slice(b device.Buffer, off, n int) (device.Buffer, error) {
	cb := d.own(b)
	if off < 0 || n < 0 || off > cb.n-n {
		return nil, fmt.Errorf("%s: slice [%d, %d) of %d elements is out of range", d.name, off, off+n, cb.n)
	}
	return cb.view(off, n), nil
}

// view returns elements [off, off+n) of b as a buffer that owns nothing
// (its Free does nothing); the caller checks the bounds.
func (b *Buffer) view(off, n int) *Buffer {
	return &Buffer{dev: b.dev, dt: b.dt, n: n, ptr: b.ptr + uintptr(off*b.dt.Size())}
}

// Kernels returns the GPU's kernels. They are queued on the stream and
// return at once; an error (a kernel that fails to launch) is reported
// by the next Sync, Read or Write.
func (d *Device) Kernels() device.Kernels { return d.kern }

// Close waits for the queued work, frees the cache, the staging buffer
// and the stream, and releases the primary context. Buffers of d must
// not be used afterwards.
func (d *Device) Close() error {
	openMu.Lock()
	defer openMu.Unlock()
	if d.closed.Load() {
		return nil
	}
	err := d.w.do(func() error {
		first := d.takeErr()
		keep := func(e error) {
			if first == nil {
				first = e
			}
		}
		if e := d.api.check("cuStreamSynchronize", d.api.cuStreamSynchronize(d.stream)); e != nil {
			keep(e)
		}
		d.closeBLAS()
		if d.mod != nil {
			d.mod.unload(d.api)
		}
		if e := d.mem.empty(); e != nil {
			keep(e)
		}
		if e := d.api.check("cuMemFreeHost", d.api.cuMemFreeHost(d.staging)); e != nil {
			keep(e)
		}
		if e := d.api.check("cuStreamDestroy_v2", d.api.cuStreamDestroy(d.stream)); e != nil {
			keep(e)
		}
		var dev int32
		if e := d.api.check("cuDeviceGet", d.api.cuDeviceGet(&dev, int32(d.ordinal))); e == nil {
			if e := d.api.check("cuDevicePrimaryCtxRelease_v2", d.api.cuDevicePrimaryCtxRelease(dev)); e != nil {
				keep(e)
			}
		}
		return first
	})
	d.closed.Store(true)
	d.w.stop()
	delete(devices, d.ordinal)
	if err != nil {
		return fmt.Errorf("%s: close: %w", d.name, err)
	}
	return nil
}
