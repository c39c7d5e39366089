// Package nccl is the dist.Communicator of GPU ranks: it reduces the
// buffers of a cuda.Device with NVIDIA's NCCL (libnccl.so.2), loaded at
// run time with purego like the rest of device/cuda (no cgo; the program
// builds with CGO_ENABLED=0 and runs where NCCL is missing).
//
// Each rank (a process, started by mpirun or srun, or a goroutine) has
// its own GPU and a base communicator of another transport (dist/mpi,
// dist/local) that carries the setup: New has rank 0 create the NCCL
// group's id and broadcast it with base, and every rank joins the group
// (ncclCommInitRank) on its GPU:
//
//	base, err := mpi.Init()
//	dev, err := cuda.Open(base.LocalRank())
//	comm, err := nccl.New(ctx, base, dev)
//	log.Printf("collectives: %s", nccl.Reason(comm))
//
// The collectives of GPU buffers call ncclAllReduce, ncclBroadcast and
// ncclAllGather in place, on the device's goroutine and stream, so that
// they run after the kernels queued before them and before those queued
// after; each returns once its result is in the buffer, as with the other
// transports. CPU buffers and Barrier go to base.
//
// # Without NCCL
//
// When the library is not found on some rank (cuda.NCCLNames in
// cuda.LibraryDirs: HORA_CUDA_LIBS, LD_LIBRARY_PATH, PyTorch's pip
// packages, the system folders), is older than 2.10, or HORA_NCCL=0 is
// set, the ranks agree (through base) on host staging instead: Staged
// copies each GPU buffer to host memory, runs base's collective there and
// copies the result back. New returns it with a nil error, and Reason
// says which path is used and why.
//
// # Testing
//
// The tests run without a GPU: they build the CUDA emulator of
// device/cuda/cudaemu and a fake NCCL (dist/nccl/internal/fakenccl)
// whose ranks are threads of the test process, and point HORA_CUDA_LIBS at
// them. HORA_CUDA_TEST=gpu runs them on the real libraries instead.
package nccl
