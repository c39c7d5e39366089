package blas_test

import (
	"errors"
	"fmt"

	"github.com/hora-dl/hora/device/cpu/internal/blas"
)

func ExampleLibrary_Sgemm() {
	lib, err := blas.Load()
	if errors.Is(err, blas.ErrNotFound) {
		fmt.Println("no BLAS, use the pure Go kernels:", err)
		return
	} else if err != nil {
		panic(err)
	}
	fmt.Println(lib.Name()) // e.g. OpenBLAS 0.3.21 SkylakeX (1 thread)

	// C (2×2) = A (2×3) · B (3×2), row-major.
	a := []float32{
		1, 2, 3,
		4, 5, 6,
	}
	b := []float32{
		1, 0,
		0, 1,
		1, 1,
	}
	c := make([]float32, 2*2)
	lib.Sgemm(false, false, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2)
	fmt.Println(c) // [4 5 10 11]
}
