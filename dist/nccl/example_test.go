package nccl_test

import (
	"context"
	"log"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cuda"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/nccl"
)

// Example averages a gradient over the ranks of a job. A program started
// by mpirun gets its base communicator from dist/mpi.Init; alone, it is
// dist.Single(), a group of one.
func Example() {
	ctx := context.Background()
	base := dist.Single()
	dev, err := cuda.Open(base.LocalRank()) // one GPU per rank of this host
	if err != nil {
		log.Fatal(err)
	}
	comm, err := nccl.New(ctx, base, dev)
	if err != nil {
		log.Fatal(err)
	}
	defer comm.Close()
	log.Printf("rank %d of %d: %s", comm.Rank(), comm.Size(), nccl.Reason(comm))

	grad, err := dev.Alloc(device.Float32, 1<<20)
	if err != nil {
		log.Fatal(err)
	}
	defer grad.Free()
	if err := comm.Allreduce(ctx, grad, dist.Average); err != nil {
		log.Fatal(err)
	}
}
