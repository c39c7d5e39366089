package dist

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/dist/internal/check"
)

// Single returns the Communicator of a group of one rank: Rank and
// LocalRank 0, Size and LocalSize 1. It is what a program started without
// a launcher uses, so that the same training code runs on one process.
//
// Its collectives validate their arguments like every transport and then
// have nothing to exchange: Allreduce and Broadcast leave the buffer as it
// is, Allgather copies src into dst (with the device's Copy kernel, so any
// device's buffers work), Barrier returns. Each collective returns
// ctx.Err() when ctx is already done, and ErrClosed after Close. Abort does
// nothing. Each call returns a new, independent communicator.
func Single() Communicator { return &single{} }

// single is the group of one.
type single struct {
	closed atomic.Bool
}

var _ Communicator = (*single)(nil)

func (s *single) Rank() int      { return 0 }
func (s *single) Size() int      { return 1 }
func (s *single) LocalRank() int { return 0 }
func (s *single) LocalSize() int { return 1 }

// Allreduce leaves b unchanged: the reduction over one rank is the rank's
// own value (Average divides by 1).
func (s *single) Allreduce(ctx context.Context, b device.Buffer, op ReduceOp) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := check.Args(s.Size(), "allreduce", b, op, -1); err != nil {
		return err
	}
	return ctx.Err()
}

// Broadcast checks that root is 0 and leaves b unchanged.
func (s *single) Broadcast(ctx context.Context, b device.Buffer, root int) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := check.Args(s.Size(), "broadcast", b, ReduceOp(0), root); err != nil {
		return err
	}
	return ctx.Err()
}

// Allgather copies src into dst.
func (s *single) Allgather(ctx context.Context, dst, src device.Buffer) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := check.Allgather(s.Size(), dst, src); err != nil {
		return err
	}
	if dn, sn := dst.Device().Name(), src.Device().Name(); dn != sn {
		return fmt.Errorf("dist: allgather: destination on %s, source on %s", dn, sn)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if n := src.Len(); n > 0 {
		l := device.Contiguous([]int{n})
		src.Device().Kernels().Copy(dst, l, src, l)
	}
	return nil
}

// Barrier returns at once (or ctx.Err()).
func (s *single) Barrier(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// Abort does nothing: there is no other rank to tell.
func (s *single) Abort(error) {}

// Close makes later collectives return ErrClosed. It is idempotent.
func (s *single) Close() error {
	s.closed.Store(true)
	return nil
}
