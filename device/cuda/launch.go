package cuda

import (
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"github.com/hora-dl/hora/device"
)

// kernels implements device.Kernels (and device.FusedKernels) for a
// Device by launching the CUDA C kernels in kernels/*.cu on its stream.
type kernels struct{ d *Device }

// blockSize is the number of threads per block of the one-dimensional
// kernels; their loops stride over the grid, so any grid covers any n.
const blockSize = 256

// maxGrid caps a one-dimensional grid.
const maxGrid = 1 << 16

// grid1D returns the number of blocks of blockSize threads for n items.
func grid1D(n int) int { return max(1, min((n+blockSize-1)/blockSize, maxGrid)) }

// launch1D queues kernel name over n items: grid1D(n) blocks of blockSize
// threads, no dynamic shared memory.
func (k *kernels) launch1D(name string, n int, args ...any) {
	if n == 0 {
		return
	}
	k.launch(name, [3]int{grid1D(n), 1, 1}, [3]int{blockSize, 1, 1}, 0, args...)
}

// launch queues kernel name on the stream with the given grid and block
// dimensions and dynamic shared memory in bytes. Each argument is a
// device.Buffer (passed as its device address), nil (a null pointer), an
// int32, int64, uint32, float32 or float64, or a struct of such fixed-size
// fields laid out as its C counterpart (copied byte for byte). Go's int
// is refused: say which C type. An error is recorded for the next Sync.
func (k *kernels) launch(name string, grid, block [3]int, shared int, args ...any) {
	d := k.d
	packed, err := packArgs(d, args)
	if err != nil {
		panic(fmt.Sprintf("cuda: kernel %s: %v", name, err)) // a programming error in this package
	}
	d.w.post(func() {
		m, err := d.module()
		if err != nil {
			d.fail(err)
			return
		}
		f, err := m.function(d.api, name)
		if err != nil {
			d.fail(err)
			return
		}
		ptrs := packed.pointers()
		var pp *unsafe.Pointer
		if len(ptrs) > 0 {
			pp = &ptrs[0]
		}
		r := d.api.cuLaunchKernel(f, uint32(grid[0]), uint32(grid[1]), uint32(grid[2]),
			uint32(block[0]), uint32(block[1]), uint32(block[2]), uint32(shared), d.stream, pp, nil)
		if err := d.api.check("cuLaunchKernel", r); err != nil {
			d.fail(fmt.Errorf("kernel %s (grid %v, block %v): %w", name, grid, block, err))
		}
	})
}

// argPack holds kernel arguments' bytes, each at an 8-byte aligned offset.
type argPack struct {
	data []byte
	offs []int
}

// pointers returns the address of each argument, as cuLaunchKernel's
// kernelParams wants them.
func (p *argPack) pointers() []unsafe.Pointer {
	out := make([]unsafe.Pointer, len(p.offs))
	for i, o := range p.offs {
		out[i] = unsafe.Pointer(&p.data[o])
	}
	return out
}

func (p *argPack) add(b []byte) {
	off := (len(p.data) + 7) &^ 7
	p.data = append(p.data, make([]byte, off-len(p.data))...)
	p.offs = append(p.offs, off)
	p.data = append(p.data, b...)
}

func (p *argPack) addUint64(v uint64) {
	var b [8]byte
	*(*uint64)(unsafe.Pointer(&b[0])) = v
	p.add(b[:])
}

func (p *argPack) addUint32(v uint32) {
	var b [4]byte
	*(*uint32)(unsafe.Pointer(&b[0])) = v
	p.add(b[:])
}

// packArgs lays out args for a launch on d (see launch).
func packArgs(d *Device, args []any) (*argPack, error) {
	p := &argPack{data: make([]byte, 0, 8*len(args)+64)}
	for i, a := range args {
		switch v := a.(type) {
		case nil:
			p.addUint64(0)
		case *Buffer:
			if v == nil {
				p.addUint64(0)
				continue
			}
			p.addUint64(uint64(d.own(v).ptr))
		case device.Buffer:
			p.addUint64(uint64(d.own(v).ptr))
		case int32:
			p.addUint32(uint32(v))
		case uint32:
			p.addUint32(v)
		case int64:
			p.addUint64(uint64(v))
		case float32:
			p.addUint32(math.Float32bits(v))
		case float64:
			p.addUint64(math.Float64bits(v))
		case int, uint, uintptr:
			return nil, fmt.Errorf("argument %d is a Go %T: pass int32 or int64", i, a)
		default:
			rv := reflect.ValueOf(a)
			if rv.Kind() != reflect.Struct {
				return nil, fmt.Errorf("argument %d has unsupported type %T", i, a)
			}
			cp := reflect.New(rv.Type())
			cp.Elem().Set(rv)
			p.add(unsafe.Slice((*byte)(cp.UnsafePointer()), rv.Type().Size()))
		}
	}
	return p, nil
}

// scratch returns an uninitialised buffer of n elements of dt for one
// kernel's temporary use; the caller frees it after queuing the kernels
// that use it (the stream keeps the order, so the memory is not reused
// before they ran). An allocation failure is recorded for the next Sync
// and nil returned.
func (k *kernels) scratch(dt device.DType, n int) *Buffer {
	b, err := k.d.alloc(dt, n, false)
	if err != nil {
		k.d.fail(err)
		return nil
	}
	return b
}

// buf returns b as a *Buffer of this device (nil stays nil).
func (k *kernels) buf(b device.Buffer) *Buffer {
	if b == nil {
		return nil
	}
	return k.d.own(b)
}

// MaxDims is the largest rank of a strided view the kernels take (a
// Layout is passed by value as a fixed-size struct).
const MaxDims = 8

// stridedArg is the C struct Strided (kernels/common.cuh): a view's rank,
// shape, strides and offset in elements.
type stridedArg struct {
	NDim    int32
	_       int32
	Shape   [MaxDims]int64
	Strides [MaxDims]int64
	Offset  int64
}

// strided converts a device.Layout for a kernel; it panics on a rank above MaxDims.
func strided(l device.Layout) stridedArg {
	if len(l.Shape) > MaxDims {
		panic(fmt.Sprintf("cuda: a view of rank %d (shape %v) exceeds the kernels' %d dimensions", len(l.Shape), l.Shape, MaxDims))
	}
	s := stridedArg{NDim: int32(len(l.Shape)), Offset: int64(l.Offset)}
	for i := range l.Shape {
		s.Shape[i], s.Strides[i] = int64(l.Shape[i]), int64(l.Strides[i])
	}
	return s
}
