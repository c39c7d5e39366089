// Package check validates the arguments of a collective, for the two
// places that need it: dist's own single-rank communicator (dist.Single)
// and dist/transport, which offers it to every other transport as
// transport.CheckArgs and transport.CheckAllgather.
//
// It sits below both: dist/transport imports dist for the Communicator
// and ReduceOp types, so dist cannot import dist/transport, and this
// package, which imports neither, holds the one copy of the checks and
// their messages. It takes the group's size instead of a communicator,
// and the reduce op as a type parameter (dist.ReduceOp, which it cannot
// name).
package check

import (
	"errors"
	"fmt"

	"github.com/hora-dl/hora/device"
)

// Op is dist.ReduceOp: an integer code with a Valid method.
type Op interface {
	~int
	Valid() bool
}

// Args validates the arguments of a collective named what, in a group of
// size ranks: a non-nil buffer of a type the transports reduce, a valid
// op and a root in range. Pass op 0 or root -1 to skip those checks,
// except that for what == "allreduce" the op is always checked (op 0 is
// invalid) and for what == "broadcast" the root is always checked (root
// -1 is out of range).
func Args[O Op](size int, what string, b device.Buffer, op O, root int) error {
	if b == nil {
		return fmt.Errorf("dist: %s: nil buffer", what)
	}
	switch b.DType() {
	case device.Float32, device.Float64, device.Int64, device.Float16:
	default:
		return fmt.Errorf("dist: %s: unsupported type %v (want float32, float64, int64 or float16)", what, b.DType())
	}
	if (op != 0 || what == "allreduce") && !op.Valid() {
		return fmt.Errorf("dist: %s: invalid reduce op %d", what, int(op))
	}
	if (root != -1 || what == "broadcast") && (root < 0 || root >= size) {
		return fmt.Errorf("dist: %s: root %d out of range [0, %d)", what, root, size)
	}
	return nil
}

// noOp is the op of the collectives that take none.
type noOp int

func (noOp) Valid() bool { return false }

// Allgather validates Allgather's buffers in a group of size ranks: src
// as Args checks it, dst of the same type, and dst holding size copies
// of src.
func Allgather(size int, dst, src device.Buffer) error {
	if err := Args(size, "allgather", src, noOp(0), -1); err != nil {
		return err
	}
	if dst == nil {
		return errors.New("dist: allgather: nil destination buffer")
	}
	if dst.DType() != src.DType() {
		return fmt.Errorf("dist: allgather: destination is %v, source is %v", dst.DType(), src.DType())
	}
	if want := size * src.Len(); dst.Len() != want {
		return fmt.Errorf("dist: allgather: destination has %d elements, want %d (%d ranks × %d)", dst.Len(), want, size, src.Len())
	}
	return nil
}
