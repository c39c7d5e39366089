// Package shm speeds up the collectives of ranks that share one host: Wrap
// decorates any dist.Communicator (MPI's, in practice) so that Allreduce
// and small Allgathers of CPU buffers go through a shared memory segment
// instead of the wrapped transport's messages; WrapHierarchical does the
// same for the ranks of each host of several, reducing between hosts
// through another communicator.
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
// to the wrapped communicator. A rank that aborts or closes marks it in
// the segment, so the others of its host fail with a *dist.RankError
// instead of waiting; a rank that closes right after its last collective
// (as rank 0 does at the end of a run) fails none of them, since the
// arrival counter says it had arrived.
//
//	c, err := mpi.InitWorld()        // the ranks mpirun started
//	c, err = shm.Wrap(ctx, c, 0)     // mpi.Arrange does this on one host
//
// # Several hosts: the hierarchical allreduce
//
// Wrap applies only when all the ranks share a host. WrapHierarchical
// reduces in two levels instead, as Horovod's hierarchical allreduce: the
// ranks of each host share a segment through a communicator of their own
// (Levels.Host, for MPI a sub-communicator of the host's ranks), and the
// step between the two barriers above gains a step between hosts. Only
// the first Shares ranks of each host (the fewest any host holds) own a
// share of each piece: every rank of the host copies the owners' shares of
// its values into its slot; each owner sums its share over the host, then
// reduces the sum with the owners of the same share on the other hosts
// through Levels.Cross (for MPI, a communicator of one rank per host),
// divides it by the world's size for Average, and leaves it in its slot,
// from which the host's other ranks copy it. The segment's pieces are set
// by the largest host, so that the pieces and their shares agree on every
// host. The hierarchical communicator stands for Levels.World: it reports
// the world's ranks, and its Broadcast, Allgather, Barrier and what
// shared memory does not reduce go there. Its Layout reports the hosts and
// the ranks they hold.
//
// The algorithm does not depend on MPI: the tests run it, and the
// conformance suite on it, over dist/local's goroutine ranks laid out as
// 2 + 2, 3 + 1 and 2 + 3 ranks on "hosts" (and count the calls between
// hosts). Package dist/mpi builds the communicators (mpi.Arrange) and
// documents the measurements between hosts.
package shm
