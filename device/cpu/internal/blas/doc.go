// Package blas calls an optimized BLAS (OpenBLAS, Intel MKL or BLIS) found
// at run time, without cgo: the shared library is opened with purego's
// Dlopen and its Fortran GEMM routines are called through purego.SyscallN,
// so CGO_ENABLED=0 builds keep working and machines without the library
// simply get ErrNotFound.
//
// The library is set to one thread: Hora splits the work between its own
// goroutines (one per core) and each of them calls Sgemm or Dgemm on its
// share, concurrently. Matrices are row-major, with the argument convention
// of CBLAS row-major and gonum's blas.Float32/Float64.
//
// Smallest use:
//
//	lib, err := blas.Load() // HORA_BLAS=none disables it
//	if err != nil {
//		return err // errors.Is(err, blas.ErrNotFound): fall back to pure Go
//	}
//	// C (2×2) = A (2×3) · B (3×2)
//	a := []float32{1, 2, 3, 4, 5, 6}
//	b := []float32{1, 0, 0, 1, 1, 1}
//	c := make([]float32, 4)
//	lib.Sgemm(false, false, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2)
//
// Load finds the library once per process. On AMD processors with AVX-512
// (Zen 4, Zen 5), which OpenBLAS 0.3.21 mistakes for Haswell, it sets
// OPENBLAS_CORETYPE=SkylakeX while opening OpenBLAS unless the variable is
// already set; see Load.
package blas
