package cuda

import (
	"fmt"

	"github.com/hora-dl/hora/device"
)

// The kernels' Go side: each method of kernels checks what it is given,
// picks the kernel of kernels/*.cu for the element type (by its suffix,
// see suffix) and queues it on the stream. This file holds Copy, Fill and
// the helpers the others share.

// The device's kernels implement the primitive set and every optional one.
var (
	_ device.Kernels              = (*kernels)(nil)
	_ device.FusedKernels         = (*kernels)(nil)
	_ device.BatchNormKernels     = (*kernels)(nil)
	_ device.OptimizerKernels     = (*kernels)(nil)
	_ device.ConvBiasActKernels   = (*kernels)(nil)
	_ device.MaxPoolValuesKernels = (*kernels)(nil)
)

// suffix returns the suffix of the kernels for element type dt.
func suffix(dt device.DType) string {
	switch dt {
	case device.Float32:
		return "f32"
	case device.Float64:
		return "f64"
	case device.Int64:
		return "i64"
	case device.Float16:
		return "f16"
	}
	panic(fmt.Sprintf("cuda: no kernels for %v", dt))
}

// floatSuffix returns the suffix of the floating-point kernels of op for
// b's element type, panicking for any other type (Float16, a storage type
// only, included) as the CPU device does.
func floatSuffix(op string, b device.Buffer) string {
	switch dt := b.DType(); dt {
	case device.Float32, device.Float64:
		return suffix(dt)
	case device.Float16:
		panic(fmt.Sprintf("cuda: %s: float16 is a storage type: only Alloc, Read, Write, Slice and Copy take it (Copy it to float32 first)", op))
	default:
		panic(fmt.Sprintf("cuda: %s on %v", op, dt))
	}
}

// noHalf panics when any of the buffers (nil ones are skipped) is
// Float16, which only Copy takes.
func noHalf(op string, bs ...device.Buffer) {
	for _, b := range bs {
		if b != nil && b.DType() == device.Float16 {
			floatSuffix(op, b)
		}
	}
}

// scalar returns v as the kernels' scalar argument for type dt: a
// float32 for float32 kernels, else a float64.
func scalar(dt device.DType, v float64) any {
	if dt == device.Float32 {
		return float32(v)
	}
	return v
}

// rowGrid returns the grid of a block-per-row kernel over rows rows.
func rowGrid(rows int) [3]int { return [3]int{max(1, min(rows, maxGrid)), 1, 1} }

// rowBlock is the block of the block-per-row kernels: HORA_BLOCK
// (kernels/common.cuh) threads, the size of their shared-memory trees.
var rowBlock = [3]int{256, 1, 1}

// coalesce returns the views ls, which share the shape of ls[0], as kernel
// arguments with the axes of length 1 dropped and neighbouring axes merged
// wherever every view steps through the pair as through one axis (dense
// views become one axis of stride 1). Element i in row-major order of the
// merged shape is element i of the original one. It panics when more than
// MaxDims axes remain.
func coalesce(ls ...device.Layout) []stridedArg {
	shape := ls[0].Shape
	var mshape []int               // innermost first
	mstr := make([][]int, len(ls)) // per view, innermost first
	for ax := len(shape) - 1; ax >= 0; ax-- {
		if shape[ax] == 1 {
			continue
		}
		if j := len(mshape) - 1; j >= 0 {
			merge := true
			for v, l := range ls {
				if l.Strides[ax] != mstr[v][j]*mshape[j] {
					merge = false
					break
				}
			}
			if merge {
				mshape[j] *= shape[ax]
				continue
			}
		}
		mshape = append(mshape, shape[ax])
		for v, l := range ls {
			mstr[v] = append(mstr[v], l.Strides[ax])
		}
	}
	nd := len(mshape)
	out := make([]stridedArg, len(ls))
	for v, l := range ls {
		m := device.Layout{Shape: make([]int, nd), Strides: make([]int, nd), Offset: l.Offset}
		for j := 0; j < nd; j++ {
			m.Shape[nd-1-j], m.Strides[nd-1-j] = mshape[j], mstr[v][j]
		}
		out[v] = strided(m)
	}
	return out
}

// isDenseArg reports whether a coalesced view is dense (from its offset).
func isDenseArg(s stridedArg) bool {
	return s.NDim == 0 || (s.NDim == 1 && s.Strides[0] == 1)
}

// memcpy queues a device-to-device copy of n elements of dst's type from
// src at element soff to dst at element doff.
func (k *kernels) memcpy(dst *Buffer, doff int, src *Buffer, soff int, n int) {
	d, size := k.d, dst.dt.Size()
	dp, sp, bytes := dst.ptr+uintptr(doff*size), src.ptr+uintptr(soff*size), uintptr(n*size)
	d.w.post(func() {
		d.fail(d.api.check("cuMemcpyDtoDAsync_v2", d.api.cuMemcpyDtoDAsync(dp, sp, bytes, d.stream)))
	})
}

// Copy copies the strided view src into the strided view dst, converting
// between Float32, Float64, Int64 and Float16 (copy_<src>_<dst> of
// kernels/copy.cu); a dense copy between buffers of one type is a memcpy.
func (k *kernels) Copy(dst device.Buffer, dl device.Layout, src device.Buffer, sl device.Layout) {
	n := device.NumElements(dl.Shape)
	if n == 0 {
		return
	}
	d, s := k.buf(dst), k.buf(src)
	v := coalesce(dl, sl)
	if d.dt == s.dt && isDenseArg(v[0]) && isDenseArg(v[1]) {
		k.memcpy(d, dl.Offset, s, sl.Offset, n)
		return
	}
	k.launch1D("copy_"+suffix(s.dt)+"_"+suffix(d.dt), n, d, v[0], s, v[1], int64(n))
}

// Fill sets the first n elements of dst to v (converted as the CPU
// device does: float32(v), or int64(v) truncating).
func (k *kernels) Fill(dst device.Buffer, n int, v float64) {
	noHalf("Fill", dst)
	var val any
	switch dst.DType() {
	case device.Float32:
		val = float32(v)
	case device.Float64:
		val = v
	case device.Int64:
		val = int64(v)
	default:
		panic(fmt.Sprintf("cuda: Fill on %v", dst.DType()))
	}
	k.launch1D("fill_"+suffix(dst.DType()), n, dst, int64(n), val)
}
