//go:build linux

package vec

import (
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// fenced is a page of float32s between two inaccessible pages: a slice at its
// start or end faults on any access outside it.
type fenced struct {
	mem  []byte
	page []float32
}

func newFenced(t *testing.T) fenced {
	ps := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 3*ps, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Munmap(mem) })
	require.NoError(t, syscall.Mprotect(mem[ps:2*ps], syscall.PROT_READ|syscall.PROT_WRITE))
	page := unsafe.Slice((*float32)(unsafe.Pointer(&mem[ps])), ps/4)
	for i := range page {
		page[i] = float32(i%7) - 2.5
	}
	return fenced{mem, page}
}

// at returns n elements at the start (end == false) or the end of the page.
func (f fenced) at(n int, end bool) []float32 {
	if end {
		return f.page[len(f.page)-n:]
	}
	return f.page[:n]
}

// TestFenced runs every function on slices against inaccessible memory, so
// that a masked tail that reads or writes one element too many (or a loop
// that starts before the slice) crashes the test.
func TestFenced(t *testing.T) {
	fs := make([]fenced, 4)
	for i := range fs {
		fs[i] = newFenced(t)
	}
	forKernels(t, func(t *testing.T) {
		for n := 1; n <= 70; n++ {
			for _, end := range []bool{false, true} {
				d, a, b, c := fs[0].at(n, end), fs[1].at(n, end), fs[2].at(n, end), fs[3].at(n, end)
				Add(d, a, b)
				Sub(d, a, b)
				Mul(d, a, b)
				Div(d, a, b)
				AddScalar(d, a, 1)
				MulScalar(d, a, 1)
				AddScalarReLU(d, a, 1)
				Axpy(d, 0.5, a)
				ReLU(d, a)
				ReLUGrad(d, a, b)
				Sum(a)
				Dot(a, b)
				Max(a)
				ArgMax(a)
				indexK(a, 1e9, 0)
				indexK(a, 1e9, 1)
				Exp(d, a)
				expShiftSumK(d, a, -1)
				for _, rows := range []int{1, 3, 4, 5} {
					if rows*n <= len(fs[0].page) {
						AddRows(fs[0].at(rows*n, end), fs[1].at(rows*n, end), b)
						AddRowsReLU(fs[0].at(rows*n, end), fs[1].at(rows*n, end), b)
						SumRows(d, fs[1].at(rows*n, end))
					}
				}
				SoftmaxCrossEntropy(a, n, []int64{int64(n - 1)}, d, 1)
				for i := range c {
					c[i] = 1
				}
				SGDMomentum(d, a, b, 0.1, 0.9, 0, 0.1, true, false)
				SGDMomentum(d, a, b, 0.1, 0.9, 0, 0, false, true)
				SGDMomentum(d, a, nil, 0.1, 0, 0, 0.1, false, false)
				Adam(d, a, b, c, 0.1, 0.9, 0.999, 1e-8, 0.1, 2, true)
				Adam(d, a, b, c, 0.1, 0.9, 0.999, 1e-8, 0.1, 2, false)
			}
		}
	})
}
