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
// independently by mistake) and arranges the fastest transport for the
// ranks' layout; otherwise it returns dist.Single():
//
//	comm, err := mpi.Init()
//	if err != nil {
//		return err
//	}
//	defer comm.Close()
//	err = comm.Allreduce(ctx, grads, dist.Average)
//
// Init is InitWorld (MPI_COMM_WORLD's Comm, or dist.Single()) followed by
// Arrange with mode "auto"; a program that lets its user choose calls the
// two itself and logs Describe's name of the result:
//
//	world, err := mpi.InitWorld()
//	comm, err := mpi.Arrange(ctx, world, cfg.Hierarchical) // "auto", "on", "off"
//	log.Printf("transport: %s", mpi.Describe(comm))
//
// # Layouts
//
// Arrange picks the transport from where the ranks run (MPI's
// MPI_COMM_TYPE_SHARED grouping, the LocalRank and LocalSize of the
// world):
//
//   - every rank on one host: shared memory (package dist/shm) for
//     Allreduce and small Allgathers, MPI for the rest. "shared memory + MPI"
//   - several hosts, one of which holds several ranks: the hierarchical
//     allreduce below. "hierarchical: shared memory on 2 hosts × 2 ranks +
//     MPI between hosts"
//   - one rank per host, mode "off" (or HORA_HIERARCHICAL=off), or
//     HORA_SHM=0: MPI alone. "MPI"
//
// # The hierarchical allreduce
//
// As Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE, with shared memory where
// Horovod uses NCCL within a host. With S the fewest ranks any host holds,
// the first S ranks of each host own a share each of every piece (a slot
// of the host's shared segment): all the host's ranks copy the owners'
// shares of their values into their slots; each owner sums its share
// over the host, then allreduces the sum with the owners of the same
// share on the other hosts through an MPI communicator of its own (one
// rank per host); and the host's ranks copy the results from the owners'
// slots (shm.WrapHierarchical). With one share (a host holds one rank)
// this is a leader per host. The communicators come from SplitHost (the
// host's ranks) and Split (the owners of share j, one per host); all run
// on the one MPI thread, each request naming its communicator. With 2
// ranks per host, each host's link carries each byte of the buffer once
// each way where a ring over all 4 ranks carries it 1.5 times: where the
// links are the bottleneck, the hierarchical allreduce can reach 1.5
// times the ring's bus bandwidth. Average divides the sum by the world's
// size at the end, so float32, float64 and int64 results are those of MPI
// alone (up to the order of float additions); float16 buffers, buffers of
// other devices, Broadcast, Allgather and Barrier go to MPI_COMM_WORLD.
//
// The results are shared through the segment, every owner's from its
// slot, rather than by an MPI broadcast from a leader: on one host (2
// ranks, the AMD EPYC below, other jobs running) the whole shared-memory
// allreduce of 16 MiB, reduction included, took 1.6–2.4 ms, and
// MPI_Ibcast of the same 16 MiB alone 2.0–2.5 ms.
//
// Measured with scripts/cluster/bench.sh on a cluster of network
// namespaces on one 2-core AMD EPYC VM (the 4 ranks share its 2 cores;
// links shaped by tc tbf: 1gbit is 0.125 GB/s each way, where a ring
// reaches at most 0.125 bus GB/s and the hierarchical allreduce 0.1875),
// 2 hosts × 2 ranks, bus bandwidth algbw · 2(n−1)/n in GB/s of the plain
// MPI_Allreduce in 16 MiB pieces and of 16 tensors fused through
// dist.Engine, two runs (one run for the last two rows: unshaped links
// and 10gbit ones, where TCP over the shared cores is the bottleneck):
//
//	link     MiB   MPI_Allreduce   fused, MPI alone   fused, hierarchical
//	1gbit      4   0.12 / 0.07     0.11 / 0.11        0.16 / 0.16
//	1gbit     16   0.10 / 0.09     0.12 / 0.10        0.15 / 0.15
//	1gbit     64   0.06 / 0.09     0.09 / 0.10        0.16 / 0.14
//	none      64   0.22            0.38               0.51
//	10gbit    64   0.13            0.22               0.34
//
// The hierarchical allreduce ran at 1.3–1.8 times MPI alone at 1gbit,
// and at 1.0–2.0 times on the other links (4, 16, 64 MiB).
//
// # Fused tensors between hosts
//
// Comm implements dist.MultiAllreducer, so the engine hands it the fused
// tensors themselves instead of copying them into a fusion buffer and
// back. AllreduceMany cuts their concatenation into pieces of
// MaxPieceBytes (the last one shorter); a piece that lies in one tensor
// is reduced there, in place, and the others in a staging area of the MPI
// thread: piece k+1 is copied in while piece k is reduced, piece k-1 is
// copied out while piece k is, in chunks of 256 KiB between MPI_Test calls
// so that the reduction keeps progressing. One piece is in flight at a
// time: with two, OpenMPI 4.1 took up to ten times as long for 16 MiB
// pieces, on one host and between hosts; and full pieces matter between
// hosts, where 16 MiB went at 0.4–0.8 times the plain MPI_Allreduce's
// bus bandwidth as sixteen pieces of 1 MiB, against 1.0–1.2 times as one
// staged piece (2 hosts × 2 ranks). Reducing in place with derived
// datatypes (MPI_Type_create_hindexed) was not tried: libnbc's ring
// needs a count of at least the number of ranks, and one derived element
// per piece would fall back to its binomial tree.
//
// Between hosts the copies hide behind the network. Fused over MPI alone,
// as a ratio to the plain MPI_Allreduce in 16 MiB pieces of the same run,
// at 4, 16 and 64 MiB, on the cluster above (two runs at 1gbit, one on
// the other links):
//
//	             1gbit       unshaped    10gbit
//	2 hosts × 1  1.35–1.76   1.23–1.69   1.23–1.71
//	2 hosts × 2  0.92–1.66   0.96–1.73   1.26–3.13
//
// (above 1 because the blocking MPI_Allreduce that OpenMPI's tuned
// component picks reached only half the link between 2 hosts × 1 rank,
// 0.06 bus GB/s, where libnbc's ring reached 0.09–0.10). On one host,
// MPI's shared-memory transport is CPU work on the same thread, so the
// staged copies do not overlap: fused over MPI alone (HORA_SHM=0) runs
// there at 0.45–0.97 times the plain MPI_Allreduce, as before
// AllreduceMany; on one host Arrange uses shared memory, at 1.2–3.2 times
// it.
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
// it, or 3 (Rabenseifner's) for a power-of-two job whose hosts hold
// several ranks each, where it moves less over the links between hosts
// (2 hosts × 2 ranks at 1 Gbit/s, 4 MiB through MPI alone: 0.14–0.16 GB/s
// against the ring's 0.11–0.12). Measured with 2 ranks, float32 sum, median ms per call of blocking
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
// scripts/cluster/mpi-tests.sh runs the same binary across hosts (network
// namespaces of this machine, as root): 2 hosts × 2 ranks (hierarchical),
// 2 × 1 and 3 × 1 (MPI alone), and 3 + 1 ranks on 2 hosts (hierarchical
// with one share per piece).
//
// Ranks other than 0 print their test output only when they fail
// (HORA_MPI_TEST_OUTPUT=all shows it always); a failure on any rank makes
// every rank exit with a failure.
package mpi
