package nccl

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/device/cuda"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/transport"
)

// Staged returns a communicator that runs base's collectives on device
// buffers through host memory: each collective copies the buffer to a
// CPU buffer (its device's Read), runs base's collective on it and copies
// the result back (Write). CPU buffers go to base directly. It is what
// New returns when NCCL cannot be used; dev is the GPU of this rank, named
// by Reason. Rank, Size, LocalRank, LocalSize and Barrier are base's;
// Abort aborts base; Close leaves base open (its owner closes it).
func Staged(base dist.Communicator, dev *cuda.Device) dist.Communicator {
	return staged(base, dev, "host staging through the base communicator")
}

func staged(base dist.Communicator, dev *cuda.Device, reason string) *stagedComm {
	if dev != nil {
		reason += " (" + dev.Name() + ")"
	}
	s := &stagedComm{base: base, dev: dev, reason: reason}
	s.guard = transport.Guard{Comm: s, State: s.usable}
	return s
}

// stagedComm is Staged's communicator.
type stagedComm struct {
	base   dist.Communicator
	dev    *cuda.Device
	reason string
	closed atomic.Bool
	guard  transport.Guard // checks closed (usable) and the arguments
	host   [2]*cpu.Buffer  // staging, reused: [0] for the source / the buffer, [1] for Allgather's destination
}

var _ dist.Communicator = (*stagedComm)(nil)

func (s *stagedComm) Rank() int      { return s.base.Rank() }
func (s *stagedComm) Size() int      { return s.base.Size() }
func (s *stagedComm) LocalRank() int { return s.base.LocalRank() }
func (s *stagedComm) LocalSize() int { return s.base.LocalSize() }

func (s *stagedComm) Allreduce(ctx context.Context, b device.Buffer, op dist.ReduceOp) error {
	if err := s.guard.Allreduce(b, op); err != nil {
		return err
	}
	if isCPU(b) {
		return s.base.Allreduce(ctx, b, op)
	}
	h, err := s.toHost(0, b, true)
	if err != nil {
		return fmt.Errorf("dist/nccl: allreduce: %w", err)
	}
	if err := s.base.Allreduce(ctx, h, op); err != nil {
		return err
	}
	return s.fromHost(b, h)
}

func (s *stagedComm) Broadcast(ctx context.Context, b device.Buffer, root int) error {
	if err := s.guard.Broadcast(b, root); err != nil {
		return err
	}
	if isCPU(b) {
		return s.base.Broadcast(ctx, b, root)
	}
	h, err := s.toHost(0, b, s.base.Rank() == root)
	if err != nil {
		return fmt.Errorf("dist/nccl: broadcast: %w", err)
	}
	if err := s.base.Broadcast(ctx, h, root); err != nil {
		return err
	}
	return s.fromHost(b, h)
}

func (s *stagedComm) Allgather(ctx context.Context, dst, src device.Buffer) error {
	if err := s.guard.Allgather(dst, src); err != nil {
		return err
	}
	if isCPU(dst) && isCPU(src) {
		return s.base.Allgather(ctx, dst, src)
	}
	hs, err := s.toHost(0, src, true)
	if err != nil {
		return fmt.Errorf("dist/nccl: allgather: %w", err)
	}
	hd, err := s.toHost(1, dst, false)
	if err != nil {
		return fmt.Errorf("dist/nccl: allgather: %w", err)
	}
	if err := s.base.Allgather(ctx, hd, hs); err != nil {
		return err
	}
	return s.fromHost(dst, hd)
}

func (s *stagedComm) Barrier(ctx context.Context) error {
	if err := s.guard.Barrier(); err != nil {
		return err
	}
	return s.base.Barrier(ctx)
}

func (s *stagedComm) Abort(err error) { s.base.Abort(err) }

// usable returns dist.ErrClosed after Close, and nil before: the state
// the guard checks.
func (s *stagedComm) usable(string) error {
	if s.closed.Load() {
		return dist.ErrClosed
	}
	return nil
}

func (s *stagedComm) Close() error {
	s.closed.Store(true)
	s.host = [2]*cpu.Buffer{}
	return nil
}

// toHost returns a CPU buffer of b's type and length (b itself when it is
// a CPU buffer), holding b's data when read is set. It reuses the staging
// buffer of the slot, which it grows as needed.
func (s *stagedComm) toHost(slot int, b device.Buffer, read bool) (*cpu.Buffer, error) {
	if cb, ok := b.(*cpu.Buffer); ok {
		return cb, nil
	}
	dt, n := b.DType(), b.Len()
	h := s.host[slot]
	if h == nil || h.DType() != dt || h.Len() < n {
		nb, err := cpu.Default().Alloc(dt, max(n, 1))
		if err != nil {
			return nil, err
		}
		h = nb.(*cpu.Buffer)
		s.host[slot] = h
	}
	v, err := cpu.Default().Slice(h, 0, n)
	if err != nil {
		return nil, err
	}
	hv := v.(*cpu.Buffer)
	if read && n > 0 {
		if err := b.Device().Read(hostData(hv), b); err != nil {
			return nil, err
		}
	}
	return hv, nil
}

// fromHost copies the staging buffer h into b, unless b is h.
func (s *stagedComm) fromHost(b device.Buffer, h *cpu.Buffer) error {
	if device.Buffer(h) == b || b.Len() == 0 {
		return nil
	}
	if err := b.Device().Write(b, hostData(h)); err != nil {
		return fmt.Errorf("dist/nccl: %w", err)
	}
	return nil
}

// isCPU reports whether b is a CPU buffer.
func isCPU(b device.Buffer) bool {
	_, ok := b.(*cpu.Buffer)
	return ok
}

// hostData returns the slice of a CPU buffer.
func hostData(b *cpu.Buffer) any {
	switch b.DType() {
	case device.Float32:
		return b.Float32s()
	case device.Float64:
		return b.Float64s()
	case device.Int64:
		return b.Int64s()
	case device.Float16:
		return b.Float16s()
	}
	panic(fmt.Sprintf("dist/nccl: no host type for %v", b.DType()))
}

// Reason says how c, a communicator of New or Staged, runs the
// collectives of GPU buffers, for a log line: "NCCL 2.21.5
// (/usr/lib/x86_64-linux-gnu/libnccl.so.2) on cuda:0", or "NCCL not used
// (...): host staging through the base communicator (cuda:0)". It returns
// "" for other communicators.
func Reason(c dist.Communicator) string {
	switch v := c.(type) {
	case *Comm:
		return v.reason
	case *stagedComm:
		return v.reason
	}
	return ""
}

// UsesNCCL reports whether c is an NCCL communicator of New (rather than
// host staging or another transport).
func UsesNCCL(c dist.Communicator) bool {
	_, ok := c.(*Comm)
	return ok
}
