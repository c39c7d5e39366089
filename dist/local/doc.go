// Package local is a dist.Communicator whose ranks are goroutines of one
// process: the transport of the tests, and of one host that drives several
// devices from one program.
//
// New makes the communicators of a group; Run starts one goroutine per
// rank and collects their errors:
//
//	errs := local.Run(4, func(c dist.Communicator) error {
//		return c.Allreduce(ctx, grads, dist.Average)
//	})
//
// # Semantics
//
// The semantics are those of MPI. Rank r's k-th collective meets every
// other rank's k-th collective; all ranks must make the same call (same
// collective, DType, length, op and root), otherwise every rank's call
// fails with an error that names the first rank that differs from rank 0
// and both values ("dist: allreduce #3: rank 0 has 1000 float32, rank 2
// has 999 float32"); collectives are numbered from 1. Such a mismatch
// leaves the data untouched and the group usable. Arguments that
// transport.CheckArgs or transport.CheckAllgather reject fail on the
// calling rank alone, before any rank is met, and are not counted.
//
// Allreduce combines the ranks' values in rank order, so every rank gets
// the same bits whatever the group's timing. Float16 data are converted to
// float32, combined, and rounded back to half once. Average is the sum
// divided by Size (for Int64, truncated toward zero). Min and Max return
// NaN when any rank has one.
//
// # Failures
//
// A collective never waits for a rank that cannot come: a rank whose ctx
// ends while it waits for the others (or has ended before the call)
// returns an error wrapping ctx.Err() and breaks the group; the others' pending and later collectives return
// a *dist.RankError naming it (wrapping dist.ErrBroken), and its own later
// ones dist.ErrBroken. Abort(err) on rank r makes the others' pending and
// later collectives return &dist.RankError{Rank: r, Err: err}; Close on
// rank r makes them return a *dist.RankError naming r and wrapping
// dist.ErrClosed. Once every rank has arrived, a collective runs to
// completion without looking at ctx (it only copies memory).
//
// # Performance
//
// Buffers are not copied into a shared area: once all ranks have arrived,
// each rank reduces its share of the elements (1/Size of them) across
// every rank's buffer, in chunks that stay in cache, and writes the result
// straight into every buffer; Broadcast splits the copying the same way,
// and in Allgather each rank copies its src into every rank's dst. A
// collective in steady state allocates nothing. Only CPU
// buffers (*cpu.Buffer) are accepted; others return an error.
package local
