package transport

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/internal/check"
)

// CheckArgs validates the arguments of a collective the same way for every
// transport: a non-nil buffer of a type the transports reduce, a defined
// op and a root in range. Pass op 0 or root -1 to skip those checks,
// except that for what == "allreduce" the op is always checked (op 0 is
// invalid) and for what == "broadcast" the root is always checked (root
// -1 is out of range), so a transport calls
// CheckArgs(c, "allreduce", b, op, -1) and CheckArgs(c, "broadcast", b, 0, root).
// Guard makes these calls.
func CheckArgs(c dist.Communicator, what string, b device.Buffer, op dist.ReduceOp, root int) error {
	return check.Args(c.Size(), what, b, op, root)
}

// CheckAllgather validates Allgather's buffers: src as CheckArgs checks
// it, dst of the same type, and dst holding Size() copies of src.
func CheckAllgather(c dist.Communicator, dst, src device.Buffer) error {
	return check.Allgather(c.Size(), dst, src)
}
