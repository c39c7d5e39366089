//go:build !mpi || !cgo

package mpi_test

import (
	"context"
	"fmt"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/mpi"
)

// Without a launcher, Init returns a group of one; under
// `mpirun -np N` (in a program built with -tags mpi) the same code
// averages over the N ranks.
func ExampleInit() {
	comm, err := mpi.Init()
	if err != nil {
		fmt.Println(err) // started by mpirun, but built without MPI support
		return
	}
	defer comm.Close()
	grads, _ := cpu.Default().Alloc(device.Float32, 3)
	_ = cpu.Default().Write(grads, []float32{1, 2, 3})
	if err := comm.Allreduce(context.Background(), grads, dist.Average); err != nil {
		fmt.Println(err)
		return
	}
	out := make([]float32, 3)
	_ = cpu.Default().Read(out, grads)
	fmt.Printf("rank %d of %d: %v\n", comm.Rank(), comm.Size(), out)
	// Output: rank 0 of 1: [1 2 3]
}
