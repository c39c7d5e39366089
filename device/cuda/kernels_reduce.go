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

// colGrid returns the grid of a column reduction: strips of 32 along
// inner by the outer index (grid-stride in both).
func colGrid(outer, inner int) [3]int {
	return [3]int{max(1, min((inner+31)/32, maxGrid)), max(1, min(outer, 65535)), 1}
}
