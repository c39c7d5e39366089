package nccl

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/device/cuda"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/transport"
)

// Comm is one rank of an NCCL communicator, on one GPU. Its collectives
// reduce the buffers of its cuda.Device in place, on the device's stream
// (after the work queued there before), and return once the result is in
// the buffer, like the other transports. Buffers of another GPU or of
// another device type are handled as described at New. New makes Comms.
type Comm struct {
	base   dist.Communicator
	dev    *cuda.Device
	api    *api
	rank   int
	size   int
	reason string

	mu     sync.RWMutex // held for reading while handle is used, for writing to end it
	handle uintptr      // the ncclComm_t; 0 once destroyed or aborted

	closed atomic.Bool
	errMu  sync.Mutex
	broken error // the failure that made the communicator unusable

	divisors map[device.DType]device.Buffer // Size, for Average's division (see average)

	guard transport.Guard // checks usable and the arguments
}

var _ dist.Communicator = (*Comm)(nil)

// New returns the communicator of this rank for the group of base, whose
// collectives run through NCCL on dev's GPU. Every rank of base must call
// New, each with its own GPU (NCCL refuses two ranks on one GPU).
//
// base carries the setup and what NCCL does not: rank 0 creates the NCCL
// group's id and broadcasts it with base, then every rank joins the
// group. Rank, Size, LocalRank and LocalSize are base's; Barrier is
// base's, and so are the collectives of CPU buffers. The caller keeps
// base open while the communicator is used, and closes it after Close.
//
// When NCCL cannot be used on some rank (the library is not found, is
// older than 2.10, or HORA_NCCL=0 is set), every rank gets a host-staging
// communicator instead (see Staged) and the error is nil: Reason says
// which path is used and why, for a log line. New returns an error when
// base fails, when rank 0 cannot create the group's id, or when this
// rank cannot join the group; a rank that fails while joining leaves the
// others waiting in NCCL (until ctx ends, where NCCL reports progress).
//
// The collectives accept Float32, Float64, Int64 and Float16 buffers
// (transport.CheckArgs). A buffer of dev is reduced where it is; one of
// another GPU, or a mix of devices in Allgather, is copied through the
// host into a temporary buffer of dev and back (slow, but every rank
// still takes part in the same NCCL call); CPU buffers go to base.
// Average is NCCL's ncclAvg for Int64 data (the sum divided by Size,
// truncated toward zero) and when Size is a power of two (NCCL
// premultiplies each rank's values by 1/Size, which is exact then); for
// other sizes the floating-point types are summed by NCCL and divided
// by Size on the GPU, so that the result is the sum divided by Size as
// on the other transports. NCCL combines Float16 values in half
// precision, rounding at each step, and its Max and Min may drop a NaN
// (CUDA's fmaxf and fminf ignore one) where the other transports
// propagate it.
//
// ctx is checked before each collective is queued: once NCCL has queued
// it, it cannot be interrupted, and the call waits for it (the stream
// synchronisation). Where NCCL reports a collective still in progress
// after that (a nonblocking communicator, or the fake NCCL of the tests),
// the wait ends with ctx, which breaks the communicator.
func New(ctx context.Context, base dist.Communicator, dev *cuda.Device) (dist.Communicator, error) {
	return newComm(ctx, base, dev, library)
}

// newComm is New with the loader of the library, which the tests replace.
func newComm(ctx context.Context, base dist.Communicator, dev *cuda.Device, lib func() (*api, error)) (dist.Communicator, error) {
	if base == nil || dev == nil {
		return nil, errors.New("dist/nccl: New needs a base communicator and a device")
	}
	rank, size := base.Rank(), base.Size()
	a, why := lib()
	if why == nil && os.Getenv("HORA_NCCL") == "0" {
		why = errors.New("HORA_NCCL=0")
	}

	// Every rank must take the same path: NCCL only where all have it.
	flag, err := cpu.Default().Alloc(device.Int64, 1)
	if err != nil {
		return nil, err
	}
	if why == nil {
		flag.(*cpu.Buffer).Int64s()[0] = 1
	}
	if err := base.Allreduce(ctx, flag, dist.Min); err != nil {
		return nil, fmt.Errorf("dist/nccl: rank %d: agreeing on NCCL: %w", rank, err)
	}
	if flag.(*cpu.Buffer).Int64s()[0] == 0 {
		reason := "NCCL not found on another rank"
		switch {
		case errors.Is(why, cuda.ErrLibraryNotFound):
			reason = "NCCL not found (HORA_CUDA_LIBS can name its folder)"
		case why != nil:
			reason = "NCCL not used (" + why.Error() + ")"
		}
		return staged(base, dev, reason+": host staging through the base communicator"), nil
	}

	// Rank 0 makes the group's id (16 words), and a last word saying
	// whether it could.
	msg, err := cpu.Default().Alloc(device.Int64, 17)
	if err != nil {
		return nil, err
	}
	words := msg.(*cpu.Buffer).Int64s()
	var idErr error
	if rank == 0 {
		var id uniqueID
		if idErr = a.check("ncclGetUniqueId", a.ncclGetUniqueId(&id)); idErr == nil {
			for i := range 16 {
				words[i] = int64(binary.LittleEndian.Uint64(id.Internal[8*i:]))
			}
			words[16] = 1
		}
	}
	if err := base.Broadcast(ctx, msg, 0); err != nil {
		return nil, fmt.Errorf("dist/nccl: rank %d: broadcasting the NCCL id: %w", rank, err)
	}
	if words[16] != 1 {
		if idErr != nil {
			return nil, fmt.Errorf("dist/nccl: rank 0: %w", idErr)
		}
		return nil, fmt.Errorf("dist/nccl: rank %d: rank 0 could not create the NCCL group's id", rank)
	}
	var id uniqueID
	for i := range 16 {
		binary.LittleEndian.PutUint64(id.Internal[8*i:], uint64(words[i]))
	}

	c := &Comm{
		base: base, dev: dev, api: a, rank: rank, size: size,
		reason: fmt.Sprintf("NCCL %s (%s) on %s", versionString(a.version), a.path, dev.Name()),
	}
	c.guard = transport.Guard{Comm: c, State: func(string) error { return c.usable() }}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var h uintptr
	err = dev.Do(func() error {
		return a.check("ncclCommInitRank", a.ncclCommInitRank(&h, int32(size), id, int32(rank)))
	})
	if err != nil {
		return nil, fmt.Errorf("dist/nccl: rank %d: %w", rank, err)
	}
	c.handle = h
	if err := c.wait(ctx, "ncclCommInitRank"); err != nil {
		c.mu.Lock()
		a.ncclCommAbort(c.handle)
		c.handle = 0
		c.mu.Unlock()
		return nil, fmt.Errorf("dist/nccl: rank %d: %w", rank, err)
	}
	return c, nil
}

// Rank returns base's Rank.
func (c *Comm) Rank() int { return c.rank }

// Size returns base's Size.
func (c *Comm) Size() int { return c.size }

// LocalRank returns base's LocalRank.
func (c *Comm) LocalRank() int { return c.base.LocalRank() }

// LocalSize returns base's LocalSize.
func (c *Comm) LocalSize() int { return c.base.LocalSize() }

// Device returns the GPU of this rank.
func (c *Comm) Device() *cuda.Device { return c.dev }

// Allreduce replaces b, on every rank, with the elementwise reduction of
// all ranks' b (ncclAllReduce, in place).
func (c *Comm) Allreduce(ctx context.Context, b device.Buffer, op dist.ReduceOp) error {
	if err := c.guard.Allreduce(b, op); err != nil {
		return err
	}
	if !isCUDA(b) {
		return c.base.Allreduce(ctx, b, op)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	n, dt := b.Len(), b.DType()
	if n == 0 {
		return nil
	}
	buf, back, free, err := c.onDevice(b, true)
	if err != nil {
		return fmt.Errorf("dist/nccl: allreduce: %w", err)
	}
	defer free()
	nop, divide := redOp(op), false
	if op == dist.Average && dt != device.Int64 && c.size&(c.size-1) != 0 {
		nop, divide = ncclSum, true
	}
	p := buf.Ptr()
	err = c.run(ctx, "allreduce", func(h uintptr) error {
		return c.api.check("ncclAllReduce", c.api.ncclAllReduce(p, p, uintptr(n), dataType(dt), nop, h, c.dev.Stream()))
	})
	if err == nil && divide {
		err = c.average(buf)
	}
	if err == nil && back != nil {
		err = back()
	}
	return err
}

// Broadcast copies root's b into every other rank's b (ncclBroadcast, in
// place).
func (c *Comm) Broadcast(ctx context.Context, b device.Buffer, root int) error {
	if err := c.guard.Broadcast(b, root); err != nil {
		return err
	}
	if !isCUDA(b) {
		return c.base.Broadcast(ctx, b, root)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	n, dt := b.Len(), b.DType()
	if n == 0 {
		return nil
	}
	buf, back, free, err := c.onDevice(b, c.rank == root)
	if err != nil {
		return fmt.Errorf("dist/nccl: broadcast: %w", err)
	}
	defer free()
	p := buf.Ptr()
	err = c.run(ctx, "broadcast", func(h uintptr) error {
		return c.api.check("ncclBroadcast", c.api.ncclBroadcast(p, p, uintptr(n), dataType(dt), int32(root), h, c.dev.Stream()))
	})
	if err == nil && back != nil {
		err = back()
	}
	return err
}

// Allgather concatenates every rank's src, in rank order, into dst on
// every rank (ncclAllGather). It goes through NCCL when either buffer is
// a GPU's, and to base when both are the CPU's.
func (c *Comm) Allgather(ctx context.Context, dst, src device.Buffer) error {
	if err := c.guard.Allgather(dst, src); err != nil {
		return err
	}
	if !isCUDA(dst) && !isCUDA(src) {
		return c.base.Allgather(ctx, dst, src)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	n, dt := src.Len(), src.DType()
	if n == 0 {
		return nil
	}
	sb, _, freeSrc, err := c.onDevice(src, true)
	if err != nil {
		return fmt.Errorf("dist/nccl: allgather: %w", err)
	}
	defer freeSrc()
	db, back, freeDst, err := c.onDevice(dst, false)
	if err != nil {
		return fmt.Errorf("dist/nccl: allgather: %w", err)
	}
	defer freeDst()
	sp, dp := sb.Ptr(), db.Ptr()
	err = c.run(ctx, "allgather", func(h uintptr) error {
		return c.api.check("ncclAllGather", c.api.ncclAllGather(sp, dp, uintptr(n), dataType(dt), h, c.dev.Stream()))
	})
	if err == nil && back != nil {
		err = back()
	}
	return err
}

// Barrier returns once every rank has called it (base's Barrier). The
// collectives before it have completed on this rank.
func (c *Comm) Barrier(ctx context.Context) error {
	if err := c.guard.Barrier(); err != nil {
		return err
	}
	return c.base.Barrier(ctx)
}

// Abort ends the group after a fatal error on this rank: it aborts the
// NCCL communicator (ncclCommAbort, which also ends this rank's NCCL work
// that hangs) and then base (base.Abort), which fails the other ranks'
// collectives or ends the job. Later collectives on this rank return an
// error wrapping dist.ErrBroken. It may be called while another goroutine
// waits in a collective.
func (c *Comm) Abort(err error) {
	if err == nil {
		err = errors.New("aborted")
	}
	c.mu.Lock()
	if c.handle != 0 {
		c.api.ncclCommAbort(c.handle)
		c.handle = 0
	}
	c.mu.Unlock()
	c.fail(fmt.Errorf("this rank aborted: %v", err))
	c.base.Abort(err)
}

// Close destroys the NCCL communicator (ncclCommDestroy) and frees this
// Comm's buffers; base stays open (its owner closes it). Later
// collectives return dist.ErrClosed. Close is idempotent.
func (c *Comm) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.mu.Lock()
	h := c.handle
	c.handle = 0
	c.mu.Unlock()
	for _, b := range c.divisors {
		b.Free()
	}
	c.divisors = nil
	if h == 0 {
		return nil
	}
	err := c.dev.Do(func() error { return c.api.check("ncclCommDestroy", c.api.ncclCommDestroy(h)) })
	if err != nil {
		return fmt.Errorf("dist/nccl: close: %w", err)
	}
	return nil
}

// usable returns dist.ErrClosed after Close, the broken state's error
// after a failure, and nil otherwise.
func (c *Comm) usable() error {
	if c.closed.Load() {
		return dist.ErrClosed
	}
	c.errMu.Lock()
	defer c.errMu.Unlock()
	if c.broken != nil {
		return fmt.Errorf("dist/nccl: %w (%v)", dist.ErrBroken, c.broken)
	}
	return nil
}

// fail records err as what broke the communicator, unless something did
// already, and returns it.
func (c *Comm) fail(err error) error {
	c.errMu.Lock()
	if c.broken == nil {
		c.broken = err
	}
	c.errMu.Unlock()
	return err
}

// run queues a collective with enqueue (given the ncclComm_t) on the
// device's goroutine, ordered with the work queued there before, and
// waits until it is done. A failure breaks the communicator.
func (c *Comm) run(ctx context.Context, what string, enqueue func(h uintptr) error) error {
	c.mu.RLock()
	h := c.handle
	if h == 0 {
		c.mu.RUnlock()
		if err := c.usable(); err != nil {
			return err
		}
		return dist.ErrClosed
	}
	err := c.dev.Do(func() error { return enqueue(h) })
	c.mu.RUnlock()
	if err != nil {
		return c.fail(fmt.Errorf("dist/nccl: %s: %w", what, err))
	}
	if err := c.dev.Sync(); err != nil {
		return c.fail(fmt.Errorf("dist/nccl: %s: %w", what, err))
	}
	return c.wait(ctx, what)
}

// wait polls ncclCommGetAsyncError until NCCL no longer reports the
// communicator's work in progress, and returns the error it reports. With
// a blocking communicator on a GPU the stream synchronisation has waited
// already and the first poll answers; the fake NCCL of the tests, whose
// work completes when the last rank arrives, answers ncclInProgress until
// then. When ctx ends first, the operation is abandoned and the
// communicator broken.
func (c *Comm) wait(ctx context.Context, what string) error {
	if c.api.ncclCommGetAsyncError == nil {
		return nil
	}
	var timer *time.Timer
	for k := 0; ; k++ {
		c.mu.RLock()
		h := c.handle
		if h == 0 {
			c.mu.RUnlock()
			if err := c.usable(); err != nil {
				return err
			}
			return dist.ErrClosed
		}
		var state int32
		r := c.api.ncclCommGetAsyncError(h, &state)
		c.mu.RUnlock()
		if err := c.api.check("ncclCommGetAsyncError", r); err != nil {
			return c.fail(fmt.Errorf("dist/nccl: %s: %w", what, err))
		}
		if state != ncclInProgress {
			if err := c.api.check(what+" (asynchronous error)", state); err != nil {
				return c.fail(fmt.Errorf("dist/nccl: %w", err))
			}
			return nil
		}
		if k < 50 {
			runtime.Gosched()
			continue
		}
		d := min(time.Duration(k-49)*20*time.Microsecond, time.Millisecond)
		if timer == nil {
			timer = time.NewTimer(d)
			defer timer.Stop()
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return c.fail(fmt.Errorf("dist/nccl: %s abandoned, communicator broken: %w", what, ctx.Err()))
		case <-timer.C:
		}
	}
}

// average divides b, the sum of the ranks' buffers, by Size on the GPU:
// Float16 through a float32 copy, so that the quotient is rounded once.
func (c *Comm) average(b *cuda.Buffer) error {
	n := b.Len()
	lay := device.Contiguous([]int{n})
	bcast := device.Layout{Shape: []int{n}, Strides: []int{0}}
	k := c.dev.Kernels()
	switch b.DType() {
	case device.Float32, device.Float64:
		d, err := c.divisor(b.DType())
		if err != nil {
			return err
		}
		k.Binary(device.Div, b, b, lay, d, bcast)
	case device.Float16:
		d, err := c.divisor(device.Float32)
		if err != nil {
			return err
		}
		s, err := c.dev.Alloc(device.Float32, n)
		if err != nil {
			return fmt.Errorf("dist/nccl: allreduce: %w", err)
		}
		defer s.Free()
		k.Copy(s, lay, b, lay)
		k.Binary(device.Div, s, s, lay, d, bcast)
		k.Copy(b, lay, s, lay)
	}
	if err := c.dev.Sync(); err != nil {
		return c.fail(fmt.Errorf("dist/nccl: allreduce: average: %w", err))
	}
	return nil
}

// divisor returns a one-element buffer of dt on the GPU holding Size.
func (c *Comm) divisor(dt device.DType) (device.Buffer, error) {
	if d := c.divisors[dt]; d != nil {
		return d, nil
	}
	d, err := c.dev.Alloc(dt, 1)
	if err != nil {
		return nil, fmt.Errorf("dist/nccl: allreduce: %w", err)
	}
	switch dt {
	case device.Float32:
		err = c.dev.Write(d, []float32{float32(c.size)})
	case device.Float64:
		err = c.dev.Write(d, []float64{float64(c.size)})
	}
	if err != nil {
		d.Free()
		return nil, fmt.Errorf("dist/nccl: allreduce: %w", err)
	}
	if c.divisors == nil {
		c.divisors = map[device.DType]device.Buffer{}
	}
	c.divisors[dt] = d
	return d, nil
}

// isCUDA reports whether b is a GPU's buffer.
func isCUDA(b device.Buffer) bool {
	_, ok := b.(*cuda.Buffer)
	return ok
}

// onDevice returns b as a buffer of this rank's GPU. A buffer of another
// device is replaced by a temporary one, holding b's data when in is set;
// back then copies the temporary buffer into b (nil when b is the GPU's).
// free releases the temporary buffer.
func (c *Comm) onDevice(b device.Buffer, in bool) (buf *cuda.Buffer, back func() error, free func(), err error) {
	if cb, ok := b.(*cuda.Buffer); ok && cb.Device() == device.Device(c.dev) {
		return cb, nil, func() {}, nil
	}
	t, err := c.dev.Alloc(b.DType(), b.Len())
	if err != nil {
		return nil, nil, nil, err
	}
	hb, err := cpu.Default().Alloc(b.DType(), b.Len())
	if err != nil {
		t.Free()
		return nil, nil, nil, err
	}
	host := hostData(hb.(*cpu.Buffer))
	if in {
		if err := b.Device().Read(host, b); err != nil {
			t.Free()
			return nil, nil, nil, err
		}
		if err := c.dev.Write(t, host); err != nil {
			t.Free()
			return nil, nil, nil, err
		}
	}
	back = func() error {
		if err := c.dev.Read(host, t); err != nil {
			return err
		}
		return b.Device().Write(b, host)
	}
	return t.(*cuda.Buffer), back, t.Free, nil
}
