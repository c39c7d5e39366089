// Package dist is Hora's data parallelism: the same training program runs
// as N ranks (processes started by mpirun, or goroutines), each on its own
// shard of the data, and they keep identical parameters by averaging
// their gradients every step. It follows Horovod's recipe.
//
// # Overview
//
//   - Communicator is a group of ranks running collectives (Allreduce,
//     Broadcast, Allgather, Barrier). Transports implement it: dist/mpi
//     (OpenMPI, processes on one or many hosts), dist/shm (shared memory,
//     layered over MPI for ranks on one host), dist/local (goroutines in
//     one process, for tests and several devices), and Single (one rank).
//     dist/disttest is the conformance suite they all pass, and
//     dist/transport holds what writing one takes (argument checks, the
//     guard every collective starts with, host-memory reduction).
//   - Engine runs named collectives for one rank in a background
//     goroutine: in rounds, the ranks' engines agree on which names every
//     rank has submitted (negotiation), then reduce those, fusing small
//     tensors into one buffer (tensor fusion). It reports tensors that some
//     ranks never submit, and collectives that some rank never joins (it
//     stopped, or its host is unreachable: a watchdog goroutine sees the
//     engine blocked, and names the silent ranks when a PeerWatcher such
//     as dist/liveness's Monitor knows them); after StallShutdown it fails
//     the operations with a *StallError (stall detection). It records a
//     Chrome-tracing Timeline.
//   - DistributedOptimizer wraps any optim.Optimizer: it broadcasts the
//     parameters and optimizer state from rank 0, averages each gradient
//     as soon as backward produces it (gradient-ready hooks), scales the
//     learning rate with the number of ranks (with optional warm-up), and
//     can compress gradients to float16 and accumulate several backward
//     passes per step.
//   - DistributedSampler gives each rank a disjoint shard of the data,
//     reshuffled each epoch, with the same number of batches everywhere.
//
// The smallest use, in a program started with mpirun -np N:
//
//	comm, err := mpi.Init()                   // this process's rank
//	engine, err := dist.NewEngine(comm, dist.EngineConfig{})
//	opt, err = dist.NewDistributedOptimizer(ctx, opt, engine, dist.OptimizerConfig{})
//	sampler, err := dist.NewDistributedSampler(n, comm.Rank(), comm.Size(), dist.SamplerConfig{Shuffle: true})
//	// ... train as usual on loader.BatchesOf(ctx, sampler.Indices(epoch));
//	// Step averages the gradients before it updates.
//
// # Invariants
//
// Every rank must create its DistributedOptimizer with the same parameters
// in the same order, and submit the same names with the same types and
// lengths. With per-rank batch B and a DistributedSampler, N ranks compute
// the same parameters as one process with batch N·B (and the learning rate
// scaled the same way), up to floating-point rounding; the tests check
// this to 1e-5 after 20 steps of SGD with momentum and of Adam.
package dist
