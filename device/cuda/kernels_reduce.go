package cuda

import (
	"fmt"

	"github.com/hora-dl/hora/device"
)

// The reductions' op argument (kernels/common.cuh R_MAX, R_MIN).
const (
	reduceMax int32 = 0
	reduceMin int32 = 1
	reduceSum int32 = 2 // reduce_small only
)

// smallAxis is the longest reduced axis that reduce_small handles, with a
// thread per output element; longer ones get a block per row or per strip
// of columns.
const smallAxis = 16

// colBlock is the block of the column reductions: HORA_COLS threads along
// inner by HORA_COL_ROWS along the reduced axis.
var colBlock = [3]int{32, 8, 1}

// Reduce reduces the dense src (outer×n×inner) along its middle axis into
// dst (outer×inner): short axes with a thread per output (reduce_small_*),
// longer ones with inner = 1 a block per row (reduce_rows_*), otherwise
// blocks of columns (reduce_cols_*). ArgMax writes Int64.
func (k *kernels) Reduce(op device.ReduceOp, dst, src device.Buffer, outer, n, inner int) {
	sfx := floatSuffix("Reduce", src)
	noHalf("Reduce", dst)
	if n == 0 {
		panic("cuda: reduce over an empty axis")
	}
	if outer*inner == 0 {
		return
	}
	var out, arg device.Buffer
	cmp := reduceMax
	switch op {
	case device.ReduceSum:
		k.reduceSum(sfx, dst, src, outer, n, inner)
		return
	case device.ReduceMax:
		out = dst
	case device.ReduceMin:
		out, cmp = dst, reduceMin
	case device.ReduceArgMax:
		arg = dst
	default:
		panic(fmt.Sprintf("cuda: unknown reduce op %d", op))
	}
	if n <= smallAxis {
		k.launch1D("reduce_small_"+sfx, outer*inner, out, arg, src, int64(outer), int64(n), int64(inner), cmp)
		return
	}
	if inner == 1 {
		k.launch("reduce_rows_cmp_"+sfx, rowGrid(outer), rowBlock, 0, out, arg, src, int64(outer), int64(n), cmp)
		return
	}
	k.launch("reduce_cols_cmp_"+sfx, colGrid(outer, inner), colBlock, 0, out, arg, src, int64(outer), int64(n), int64(inner), cmp)
}

// reduceSum sums the middle axis of outer×n×inner (kernel suffix sfx).
func (k *kernels) reduceSum(sfx string, dst, src device.Buffer, outer, n, inner int) {
	if n <= smallAxis {
		k.launch1D("reduce_small_"+sfx, outer*inner, dst, nil, src, int64(outer), int64(n), int64(inner), reduceSum)
		return
	}
	if inner == 1 {
		k.launch("reduce_rows_sum_"+sfx, rowGrid(outer), rowBlock, 0, dst, src, int64(outer), int64(n))
		return
	}
	k.launch("reduce_cols_sum_"+sfx, colGrid(outer, inner), colBlock, 0, dst, src, int64(outer), int64(n), int64(inner))
}

// launchSliced runs name, a kernel that computes rows sums of terms terms
// each with a block per row and slice (bias_grad, conv_dw_grad_weight:
// grid rows × slices, slice blockIdx.y writing its rows at
// out[blockIdx.y·rows:]), so that a few long sums still fill the GPU. With
// one slice the kernel writes dst directly; with several, a scratch
// buffer of their partial sums is added up into dst by reduceSum. The
// slices are fixed by the sizes, so the result does not vary between runs.
func (k *kernels) launchSliced(name, sfx string, dst device.Buffer, rows, terms int, args ...any) {
	slices := sliceCount(rows, terms, k.d.sms)
	if slices == 1 {
		k.launch(name, rowGrid(rows), rowBlock, 0, append([]any{dst}, args...)...)
		return
	}
	part := k.scratch(dst.DType(), slices*rows)
	if part == nil {
		return
	}
	defer part.Free()
	k.launch(name, [3]int{rowGrid(rows)[0], slices, 1}, rowBlock, 0, append([]any{part}, args...)...)
	k.reduceSum(sfx, dst, part, 1, slices, rows)
}

// sliceCount returns into how many slices to cut each of rows sums of
// terms terms: enough for about eight blocks per multiprocessor (sms) in
// all (a full one holds 2048 threads), but no slice under 16 terms per
// thread of a block, and at most 1024.
func sliceCount(rows, terms, sms int) int {
	s := (8*max(sms, 1) + rows - 1) / rows
	s = min(s, terms/(16*rowBlock[0]), 1024)
	return max(s, 1)
}

// colGrid returns the grid of a column reduction: strips of 32 along
// inner by the outer index (grid-stride in both).
func colGrid(outer, inner int) [3]int {
	return [3]int{max(1, min((inner+31)/32, maxGrid)), max(1, min(outer, 65535)), 1}
}
