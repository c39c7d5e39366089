package cuda_test

import (
	"fmt"

	"github.com/hora-dl/hora/device/cuda"
	"github.com/hora-dl/hora/tensor"
)

// Example moves a tensor to the first GPU, computes there and reads the
// result back. Without a GPU, Open says why.
func Example() {
	gpu, err := cuda.Open(0)
	if err != nil {
		fmt.Println("no GPU:", err) // wraps device.ErrUnavailable
		return
	}
	fmt.Println(gpu.Name(), gpu.GPU())
	x := tensor.FromFloat32([]float32{1, 2, 3, 4}, 2, 2).To(gpu)
	y := tensor.MatMul(x, x).Exp()
	fmt.Println(y.To(tensor.CPU()).Float32s())
}
