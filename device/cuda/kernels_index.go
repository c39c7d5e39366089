package cuda

import (
	"fmt"

	"github.com/hora-dl/hora/device"
)

// indexSuffix returns the kernel suffix of the indexing kernels for dst's
// type (they also take Int64 data) and checks idx is Int64.
func indexSuffix(op string, dst, src, idx device.Buffer) string {
	noHalf(op, dst, src, idx)
	if idx.DType() != device.Int64 {
		panic(fmt.Sprintf("cuda: %s with %v indices", op, idx.DType()))
	}
	return suffix(dst.DType())
}

// Gather reads the dense src (outer×n×inner) at the Int64 indices idx
// (outer×m×inner) into dst (gather_<type> of kernels/index.cu).
func (k *kernels) Gather(dst, src, idx device.Buffer, outer, n, m, inner int) {
	sfx := indexSuffix("Gather", dst, src, idx)
	k.launch1D("gather_"+sfx, outer*m*inner, dst, src, idx, int64(outer), int64(n), int64(m), int64(inner), int32(0))
}

// IndexSelect picks whole slices: dst[o,j,i] = src[o, idx[j], i].
func (k *kernels) IndexSelect(dst, src, idx device.Buffer, outer, n, m, inner int) {
	sfx := indexSuffix("IndexSelect", dst, src, idx)
	k.launch1D("gather_"+sfx, outer*m*inner, dst, src, idx, int64(outer), int64(n), int64(m), int64(inner), int32(1))
}

// ScatterAdd adds src (outer×m×inner) into dst at the per-element indices
// idx: with atomicAdd for floats, race-free by destination for Int64.
func (k *kernels) ScatterAdd(dst, src, idx device.Buffer, outer, n, m, inner int) {
	k.scatterAdd("ScatterAdd", dst, src, idx, outer, n, m, inner, 0)
}

// IndexAdd adds whole slices: dst[o, idx[j], i] += src[o,j,i].
func (k *kernels) IndexAdd(dst, src, idx device.Buffer, outer, n, m, inner int) {
	k.scatterAdd("IndexAdd", dst, src, idx, outer, n, m, inner, 1)
}

func (k *kernels) scatterAdd(op string, dst, src, idx device.Buffer, outer, n, m, inner int, slices int32) {
	sfx := indexSuffix(op, dst, src, idx)
	if outer*m*inner == 0 {
		return
	}
	if sfx == "i64" { // a thread per destination element
		k.launch1D("scatter_add_i64", outer*n*inner, dst, src, idx, int64(outer), int64(n), int64(m), int64(inner), slices)
		return
	}
	k.launch1D("scatter_add_"+sfx, outer*m*inner, dst, src, idx, int64(outer), int64(n), int64(m), int64(inner), slices)
}
