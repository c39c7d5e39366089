package tensor_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/hora-dl/hora/tensor"
)

func Example() {
	x := tensor.FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	b := tensor.FromFloat32([]float32{10, 20, 30}) // broadcast over rows
	y := x.Add(b)
	fmt.Println(y)
	fmt.Println(tensor.MatMul(x, x.T())) // x.T() is a view: no copy
	fmt.Println(y.Sum(1, false), y.ArgMax(0, false))
	// Output:
	// Tensor([[11, 22, 33], [14, 25, 36]], float32)
	// Tensor([[14, 32], [32, 77]], float32)
	// Tensor([66, 75], float32) Tensor([1, 1, 1], int64)
}

func ExampleTensor_Reshape() {
	x := tensor.FromFloat32([]float32{0, 1, 2, 3, 4, 5}, 2, 3)
	v := x.Reshape(3, -1) // a view of x's memory
	v.Index(0, 0).Fill(9)
	fmt.Println(v.Shape(), x)
	// Output: [3 2] Tensor([[9, 9, 2], [3, 4, 5]], float32)
}

func ExampleConv2D() {
	x := tensor.FromFloat32([]float32{
		1, 2, 3,
		4, 5, 6,
		7, 8, 9,
	}, 1, 1, 3, 3) // N×C×H×W
	w := tensor.FromFloat32([]float32{1, 0, 0, -1}, 1, 1, 2, 2) // OutC×C×KH×KW
	fmt.Println(tensor.Conv2D(x, w, tensor.ConvOptions{}))
	// Output: Tensor([[[[-4, -4], [-4, -4]]]], float32)
}

func ExampleKaimingUniform() {
	rng := rand.New(rand.NewPCG(1, 2)) // seeded: the same weights every run
	w := tensor.KaimingUniform(rng, 0, 4, 3)
	v := tensor.KaimingUniform(rand.New(rand.NewPCG(1, 2)), 0, 4, 3)
	fmt.Println(w.Shape(), tensor.AllClose(w, v, 0, 0))
	// Output: [4 3] true
}

// ExampleArena shows a loop whose every step computes from a fresh input:
// with the input in an arena, each step reuses the memory of the one
// before (a steady state allocates no tensor memory).
func ExampleArena() {
	w := tensor.FromFloat32([]float32{1, 2, 3, 4}, 2, 2) // lives outside the arena
	arena := tensor.NewArena()
	for step := range 3 {
		x, err := arena.FromSlice(tensor.CPU(), []float32{float32(step), 1}, 1, 2)
		if err != nil {
			panic(err)
		}
		y := tensor.MatMul(x, w.T()).Relu() // y uses the arena too
		fmt.Println(y.Float32s())           // read what you need…
		arena.Reset()                       // …before the memory is recycled
	}
	// Output:
	// [2 4]
	// [3 7]
	// [4 10]
}

// A model's weights at inference never change: marked constant, they let
// the convolution keep its transformed filters from one call to the next.
func ExampleTensor_MarkConstant() {
	rng := rand.New(rand.NewPCG(1, 2))
	w := tensor.RandNormal(rng, 0, 1, 64, 64, 3, 3).MarkConstant()
	x := tensor.RandNormal(rng, 0, 1, 1, 64, 16, 16)
	opts := tensor.ConvOptions{PadH: 1, PadW: 1}
	first := tensor.Conv2D(x, w, opts)  // transforms w's filters and keeps them
	second := tensor.Conv2D(x, w, opts) // reuses them
	fmt.Println(first.Shape(), tensor.AllClose(first, second, 0, 0))

	w.CopyFrom(w.MulScalar(2)) // a write through CopyFrom drops what was kept
	fmt.Println(tensor.AllClose(tensor.Conv2D(x, w, opts), first.MulScalar(2), 1e-5, 1e-5))
	// Output:
	// [1 64 16 16] true
	// true
}
