// Package disttest is the conformance suite of dist.Communicator: every
// transport (dist.Single, dist/local, dist/mpi under mpirun, NCCL) runs the
// same cases, the way gonum's testblas checks every BLAS.
//
// A transport's test hands RunAll a function that runs one Case on every
// rank of the group under test:
//
//	func TestConformance(t *testing.T) {
//		disttest.RunAll(t, 4, func(c disttest.Case) []error {
//			return local.Run(4, func(comm dist.Communicator) error {
//				return c.Run(context.Background(), comm)
//			})
//		})
//	}
//
// A transport where this process is one rank (MPI) calls c.Run with its
// own communicator and returns a one-element slice; the cases run in the
// same order on every rank.
//
// # What is checked
//
// Allreduce for every op and DType at lengths 0, 1, 2, 7, 13, 1009 and
// 65537, and once per DType over 16 MiB; Broadcast from every root and
// Allgather for every DType at the same lengths, and a few of them over
// 16 MiB (the size beyond which some transports split a collective);
// Float16 rounding where it is deterministic; Barrier; argument errors, which every rank makes
// identically and which must fail on every rank without waiting; and a
// long mixed sequence of collectives, which checks that a group stays
// usable. Values are small multiples of 1/4 (Int64: integers, some near
// ±2^55 so that a trip through float64 shows), chosen so that every result
// is exact and the expected values are computed in the test with integer
// arithmetic, independently of any transport. They differ by rank and
// repeat with a prime period (65521), so an element moved by any power of
// two shows. The float values stay exact in Float16 for groups of up to
// 64 ranks.
//
// A Case always makes all of its collectives, even after a check fails,
// and returns the failures at the end, so that a failing check never
// leaves the other ranks waiting. RunAll gives each case two minutes.
package disttest
