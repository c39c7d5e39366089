package cpu_test

import (
	"fmt"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu" // importing it registers "cpu"
)

// Example opens the CPU device by name, as programs that take the device
// from a config do, and runs one kernel on buffers of its own.
func Example() {
	dev, err := device.Open("cpu")
	if err != nil {
		panic(err)
	}
	x, _ := dev.Alloc(device.Float32, 4)
	y, _ := dev.Alloc(device.Float32, 4)
	if err := dev.Write(x, []float32{-2, -1, 1, 2}); err != nil {
		panic(err)
	}
	dev.Kernels().Unary(device.Relu, y, x, 4, 0)
	out := make([]float32, 4)
	if err := dev.Read(out, y); err != nil {
		panic(err)
	}
	fmt.Println(dev.Name(), out)
	// Output: cpu [0 0 1 2]
}

// ExampleDevice_Backend prints how the CPU device multiplies matrices; it
// depends on the machine (a BLAS library found at run time, the CPU's
// vector instructions) and on HORA_GEMM and HORA_BLAS.
func ExampleDevice_Backend() {
	fmt.Println(cpu.Default().Backend() != "")
	// Output: true
}

// ExampleDevice_RunLanes sums the halves of a slice side by side, one
// lane per core; inside a lane the device's kernels run serially.
func ExampleDevice_RunLanes() {
	d := cpu.New()
	d.SetThreads(2)
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	sums := make([]float64, d.Lanes())
	d.RunLanes(len(sums), func(lane int) {
		part := xs[lane*len(xs)/len(sums) : (lane+1)*len(xs)/len(sums)]
		for _, x := range part {
			sums[lane] += x
		}
		fmt.Println("lane", lane, "threads", d.Threads())
	})
	fmt.Println(sums)
	// Unordered output:
	// lane 0 threads 1
	// lane 1 threads 1
	// [10 26]
}
