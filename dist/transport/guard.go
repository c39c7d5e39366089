package transport

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/dist"
)

// Guard is the check a transport's collectives start with, before any
// work: first whether the communicator can run collectives at all
// (State), then the call's arguments (CheckArgs, CheckAllgather). Each
// method returns the first failure, or nil when the collective may go
// ahead. A transport keeps one Guard in its communicator, made when the
// communicator is, and calls it in the first line of each collective:
//
//	c.guard = transport.Guard{Comm: c, State: c.usable}
//	...
//	if err := c.guard.Broadcast(b, root); err != nil {
//		return err
//	}
//
// What comes after the guard differs between transports and stays in
// them: where ctx is checked (a transport that breaks its group when ctx
// ends checks it while waiting for the others), which devices' buffers
// are accepted, what an empty buffer or a group of one skips.
type Guard struct {
	// Comm is the communicator the calls are made on: its Size bounds
	// Broadcast's root and gives Allgather's destination length.
	Comm dist.Communicator
	// State returns why Comm cannot run the collective named what
	// ("allreduce", "broadcast", "allgather", "barrier") now, typically
	// dist.ErrClosed after Close or an error wrapping dist.ErrBroken, and
	// nil when it can. A nil State means the communicator is always
	// usable.
	State func(what string) error
}

// Allreduce checks an Allreduce of b with op: State, then
// CheckArgs(Comm, "allreduce", b, op, -1).
func (g Guard) Allreduce(b device.Buffer, op dist.ReduceOp) error {
	if err := g.state("allreduce"); err != nil {
		return err
	}
	return CheckArgs(g.Comm, "allreduce", b, op, -1)
}

// AllreduceMany checks an allreduce of several buffers as one (see
// dist.MultiAllreducer): State, then each buffer as Allreduce checks it.
// With no buffers, only State is checked.
func (g Guard) AllreduceMany(bufs []device.Buffer, op dist.ReduceOp) error {
	if err := g.state("allreduce"); err != nil {
		return err
	}
	for _, b := range bufs {
		if err := CheckArgs(g.Comm, "allreduce", b, op, -1); err != nil {
			return err
		}
	}
	return nil
}

// Broadcast checks a Broadcast of b from root: State, then
// CheckArgs(Comm, "broadcast", b, 0, root).
func (g Guard) Broadcast(b device.Buffer, root int) error {
	if err := g.state("broadcast"); err != nil {
		return err
	}
	return CheckArgs(g.Comm, "broadcast", b, 0, root)
}

// Allgather checks an Allgather of src into dst: State, then
// CheckAllgather(Comm, dst, src).
func (g Guard) Allgather(dst, src device.Buffer) error {
	if err := g.state("allgather"); err != nil {
		return err
	}
	return CheckAllgather(g.Comm, dst, src)
}

// Barrier checks a Barrier: State alone, since it takes no arguments.
func (g Guard) Barrier() error {
	return g.state("barrier")
}

// state calls State, if set.
func (g Guard) state(what string) error {
	if g.State == nil {
		return nil
	}
	return g.State(what)
}
