// Package transport is for people writing a dist.Communicator: the
// argument checks, the guard every collective starts with, and the
// elementwise reduction in host memory that Hora's transports (dist/local,
// dist/mpi, dist/shm, dist/nccl) share, so that a new transport behaves
// like them, down to its error messages. Programs that train with dist
// do not need it.
//
// A transport's collectives start with one line that calls its Guard:
//
//	func (c *comm) Allreduce(ctx context.Context, b device.Buffer, op dist.ReduceOp) error {
//		if err := c.guard.Allreduce(b, op); err != nil {
//			return err // closed or broken, or invalid arguments
//		}
//		// ... exchange the ranks' values, combining them with Combine
//	}
//
// and the conformance suite dist/disttest checks the result.
//
// # Where it sits
//
// This package imports dist, for the Communicator and ReduceOp types its
// functions take, as every transport does; dist imports no transport.
// dist's own single-rank communicator, dist.Single, cannot import this
// package therefore: it checks its arguments with dist/internal/check,
// the code that CheckArgs and CheckAllgather call, and takes the guard's
// steps itself (ErrClosed after Close, then the arguments).
package transport
