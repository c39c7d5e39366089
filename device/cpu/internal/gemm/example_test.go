package gemm_test

import (
	"fmt"

	"github.com/hora-dl/hora/device/cpu/internal/gemm"
)

func ExampleSgemm() {
	var ws gemm.Workspace // one per goroutine, reused across calls
	// C (2×2) = A (2×3) · B (3×2)
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{1, 0, 0, 1, 1, 1}
	c := make([]float32, 4)
	gemm.Sgemm(&ws, false, false, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2)
	fmt.Println(c)

	// C = Aᵀ·Bᵀ - C, with A stored 3×2 and B stored 2×3.
	at := []float32{1, 4, 2, 5, 3, 6}
	bt := []float32{1, 0, 1, 0, 1, 1}
	gemm.Sgemm(&ws, true, true, 2, 2, 3, 1, at, 2, bt, 3, -1, c, 2)
	fmt.Println(c)
	// Output:
	// [4 5 10 11]
	// [0 0 0 0]
}

func ExampleSgemmPackedB() {
	var ws gemm.Workspace
	// B (3×2) packed once, then multiplied by two different A (2×3).
	b := []float32{1, 0, 0, 1, 1, 1}
	pb := make([]float32, gemm.PackedBSize(3, 2))
	gemm.PackB(pb, false, b, 2, 3, 2)
	c := make([]float32, 4)
	for _, a := range [][]float32{{1, 2, 3, 4, 5, 6}, {1, 0, 0, 0, 1, 0}} {
		gemm.SgemmPackedB(&ws, false, 2, 2, 3, 0, 2, 1, a, 3, pb, 0, c, 2, gemm.Epilogue{})
		fmt.Println(c)
	}
	// Output:
	// [4 5 10 11]
	// [1 0 0 1]
}
