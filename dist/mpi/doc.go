// Package mpi is the dist.Communicator of processes started by mpirun:
// OpenMPI through cgo, following Horovod's design.
//
// # Building and running
//
// MPI support is compiled in only with the build tag `mpi` (and cgo); it
// needs the OpenMPI headers and pkg-config file (Debian: libopenmpi-dev,
// plus openmpi-bin for mpirun):
//
//	go build -tags mpi ./cmd/train     # make build does it
//	mpirun -np 2 bin/train -config configs/fashion-mnist-mlp.yaml
//
// As root, mpirun also wants --allow-run-as-root; more ranks than cores
// need --oversubscribe. Built reports whether a program has MPI support.
// Init is what programs call: under a launcher with several ranks it opens
// MPI (or, in a program built without the tag, returns an error wrapping
// dist.ErrNoMPI that says how to rebuild, so that N copies never train
// independently by mistake); otherwise it returns dist.Single():
//
//	comm, err := mpi.Init()
//	if err != nil {
//		return err
//	}
//	defer comm.Close()
//	err = comm.Allreduce(ctx, grads, dist.Average)
//
// # Threading
//
// MPI is initialized with MPI_THREAD_FUNNELED on one goroutine locked to
// its OS thread (runtime.LockOSThread); that thread makes every MPI call
// of the process, from MPI_Init_thread to MPI_Finalize or MPI_Abort. The
// Comm's methods validate their arguments (a transport.Guard), hand a request
// to it over a channel and wait for the answer. A collective is one cgo
// call that returns when it is done: polling it from Go instead would need
// a P after every test, and under mpirun's default binding of each rank to
// one core (GOMAXPROCS=1) every one of those waits for the compute
// goroutines' time slice. MPI is initialized once per process: Open
// returns the same Comm until Close, which runs MPI_Finalize and ends the
// thread; after it Open returns ErrFinalized.
//
// # Pieces
//
// Allreduce and Broadcast move large buffers in pieces of at most
// MaxPieceBytes (16 MiB), one collective after the other, in place
// (MPI_IN_PLACE). OpenMPI mallocs a temporary buffer of the message's size
// for every reduction, and glibc serves sizes above its 32 MiB mmap
// threshold limit with fresh, page-faulting mappings each time: measured
// with 2 ranks on a 2-core Zen 5, a single MPI_Allreduce of 64 MiB of
// float32 takes 150–160 ms (0.4 GB/s) and of 256 MiB 600–650 ms, but in
// 16 MiB pieces 10–11 ms and 49–53 ms (5–6 GB/s). Allgather is one call
// (no temporary buffer, so no cliff: 64 MiB gathered in ~5 ms).
//
// # Cancellation: nonblocking collectives
//
// Every collective is nonblocking (MPI_Iallreduce, MPI_Ibcast,
// MPI_Iallgather, MPI_Ibarrier), polled with MPI_Test by the MPI thread,
// which also watches the request's context: when ctx ends the thread
// abandons the collective (MPI cannot cancel one), the call returns an
// error wrapping ctx's, and the communicator is broken: later collectives
// return an error wrapping dist.ErrBroken, and Close skips MPI_Finalize
// (which would wait for the other ranks) and returns such an error; the
// process should then exit with a non-zero status, which makes mpirun end
// the job. An abandoned collective's buffer stays pinned and may still be
// written by MPI.
//
// Nonblocking reductions are as fast as blocking ones only with the ring
// algorithm of OpenMPI's libnbc: with MPI_IN_PLACE its default is a
// binomial tree. Open therefore sets
// OMPI_MCA_coll_libnbc_iallreduce_algorithm=1 unless the environment sets
// it. Measured with 2 ranks, float32 sum, median ms per call of blocking
// MPI_Allreduce in 16 MiB pieces / MPI_Iallreduce pieces with the ring /
// with OpenMPI's default, from C on the 2-core Zen 5 (two runs):
//
//	  1 MiB   0.08–0.18 / 0.08–0.18 / 0.17–0.28
//	 16 MiB   2.2–2.3   / 2.3       / 4.6–5.1
//	 64 MiB   9.9–11.0  / 9.3–11.6  / 21.6–22.2
//	256 MiB  53         / 47–49     / 94–96
//
// This package's BenchmarkAllreduce (Comm.Allreduce against RawAllreduce)
// agrees: on the Zen 5 (other jobs running) 0.24 / 0.25, 3.1 / 3.2,
// 14.4 / 14.5 and 53 / 56 ms; on an idle 16-core Xeon with one core per
// rank 4.9–5.3 / 4.6–5.3, 24–25 / 24–25 and 97–107 / 98–103 ms from
// 16 MiB on.
//
// # Polling and CPU use
//
// A rank waiting for a late peer should leave its core to the compute
// threads. The MPI thread therefore tests a request in a tight loop for
// 2 ms plus the time its bytes take at 0.5 GB/s (a tenth of the unloaded
// bandwidth, so that a piece still completes while spinning when a compute
// thread shares the core), then sleeps between tests, from 10 µs doubling
// to 200 µs. A rank that waits 500 ms for a peer uses ~30 ms of CPU
// (TestWaitingRankSleeps). With a busy compute thread beside each rank
// (BenchmarkAllreduceUnderLoad, on the Xeon, ranks bound to one core
// each), 64 MiB take 45–85 ms with this policy, as with RawAllreduce's
// blocking calls (40–77 ms); a policy that spun only for the unloaded
// time and slept up to 1 ms took 280–300 ms.
//
// OpenMPI's mpi_yield_when_idle (sched_yield whenever a progress call
// finds nothing to do) is left to the user. It does not change the
// bandwidth of an idle machine (within noise, 1–256 MiB, both machines),
// but beside a busy compute thread it hands the core over on every idle
// test: 64 MiB then take ~220 ms (Hora) and 570–620 ms (blocking
// MPI_Allreduce) instead of 40–85 ms, for a noisy gain in compute
// throughput (2200–4200 against 1600–2400 Mflop/s). (OpenMPI turns it on
// by itself when mpirun oversubscribes the cores.)
//
// # Types and ops
//
// Buffers must be CPU buffers (*cpu.Buffer); others are an error. Float32,
// Float64 and Int64 map to MPI_FLOAT, MPI_DOUBLE and MPI_INT64_T with MPI's
// own ops. Float16 is a 2-byte MPI type with this package's MPI ops
// (written in C): each combines a pair in float32 and rounds back to
// nearest, ties to even, like device/cpu's Float32ToFloat16; min and max
// keep a NaN once one is seen. Average is a sum divided by Size afterwards
// (truncated toward zero for Int64; for Float16 in float32, then rounded).
//
// # Failures
//
// Abort prints "hora: rank R: aborting: <err>" and calls MPI_Abort on the
// MPI thread (also while it polls a collective), which makes mpirun kill
// every rank. A rank that dies (a signal, or exit with a non-zero status)
// while the others wait in a collective makes mpirun end the job within
// about two seconds with a message naming the rank (TestRankDeath).
//
// # Tests
//
// The tests that need ranks skip outside a launcher; run the test binary
// under mpirun, and directly for the tests that start their own mpirun
// jobs (rank death, abandoned collectives):
//
//	go test -c -tags mpi -o bin/mpi.test ./dist/mpi
//	bin/mpi.test
//	mpirun --allow-run-as-root -np 2 bin/mpi.test
//	mpirun --allow-run-as-root -np 3 --oversubscribe bin/mpi.test
//	mpirun --allow-run-as-root -np 2 bin/mpi.test -test.run='^$' -test.bench=. -test.benchtime=20x
//
// Ranks other than 0 print their test output only when they fail
// (HORA_MPI_TEST_OUTPUT=all shows it always); a failure on any rank makes
// every rank exit with a failure.
package mpi
