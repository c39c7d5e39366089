// Package shm speeds up the collectives of ranks that share one host: Wrap
// decorates any dist.Communicator (MPI's, in practice) so that Allreduce
// and small Allgathers of CPU buffers go through a shared memory segment
// instead of the wrapped transport's messages.
//
// # Why
//
// OpenMPI's shared-memory transport moves a 2 MB allreduce between two
// processes of this project's 2-core machine in about 0.5 ms; going
// through a mapping both processes see directly takes a fraction of that,
// and the gradients of a small model fit in the cache shared by the
// cores. Training scales better when that time is short, since the
// largest gradient of a network is usually the last one backward
// produces.
//
// # How
//
// Rank 0 creates a file in /dev/shm, every rank maps it, and rank 0
// unlinks it once all have (so nothing is left behind, even after a
// crash). The segment holds one arrival counter and one line of abort
// flags per rank and, twice over, one slot per rank. An allreduce goes a
// slot's worth at a time, each rank owning a share of the elements: each
// rank copies the others' shares of its values into its slot; after a
// barrier each rank reduces its own share in its own buffer, reading the
// others' slots, and leaves the result in its slot; after a second barrier
// each rank copies the others' shares of the result from their slots.
// Consecutive operations use the two halves of the segment in turn, which
// makes a third barrier unnecessary. The barrier is one shared counter: a
// rank spins on it for up to a millisecond (waking a sleeping process
// takes longer than that here), then sleeps on it as a futex, so a rank
// waiting for a busy one costs little.
//
// Other types (float16), other devices, Broadcast and large Allgathers go
// to the wrapped communicator, as does everything when the ranks are not
// all on one host. A rank that aborts or closes marks it in the segment,
// so the others fail with a *dist.RankError instead of waiting.
//
//	c, err := mpi.Init()            // the ranks mpirun started
//	c, err = shm.Wrap(ctx, c, 0)    // mpi.Init does this itself
package shm
