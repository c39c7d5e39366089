//go:build mpi && cgo

package mpi

/*
#cgo pkg-config: ompi-c
#include "hora_mpi.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/transport"
)

// built is true: this file is compiled with the `mpi` tag and cgo.
const built = true

// abortGrace is how long Abort waits for the MPI thread to call MPI_Abort
// (it may be inside a blocking call) before it exits the process itself.
const abortGrace = 5 * time.Second

// The states of a Comm.
const (
	stateOpen int32 = iota
	stateBroken
	stateClosed
)

// ErrFinalized is returned by Open after Close: MPI can be initialized
// only once per process.
var ErrFinalized = errors.New("dist/mpi: MPI was closed (Close) and cannot be opened again in this process")

// world is the process's one MPI: MPI_Init_thread may run once per
// process, so this is package state by necessity.
var world struct {
	mu   sync.Mutex
	comm *Comm // MPI_COMM_WORLD; nil until the first successful Open
	err  error // the error of a failed MPI_Init_thread
}

// proc is the MPI of this process: the goroutine, locked to its OS
// thread, that makes every MPI call, and the state every communicator
// shares (an abandoned collective leaves MPI itself in doubt, so it breaks
// them all).
type proc struct {
	reqs   chan *request // to the MPI goroutine
	exited chan struct{} // closed when the MPI goroutine has ended

	abortCh   chan struct{} // closed by Abort
	abortOnce sync.Once

	state atomic.Int32 // stateOpen, stateBroken, stateClosed (finalized)

	// pinned holds the pins of abandoned collectives' buffers, which MPI
	// may still write; only the MPI goroutine touches it.
	pinned []*runtime.Pinner
}

// Comm is an MPI communicator: MPI_COMM_WORLD (Open), or a group of its
// ranks (Split, SplitHost). It implements dist.Communicator and
// dist.MultiAllreducer for CPU buffers (*cpu.Buffer) of the types Float32,
// Float64, Int64 and Float16.
//
// One goroutine, locked to its OS thread, makes every MPI call of the
// process, from MPI_Init_thread to MPI_Finalize; the methods hand it a
// request naming their communicator and wait for the answer. Like every
// dist.Communicator, a Comm is used by one goroutine at a time (Abort
// excepted), and the communicators of a process one at a time: each
// collective runs to completion on the MPI thread before the next starts.
type Comm struct {
	p                    *proc
	id                   C.int // hora_mpi.h's number: 0 is MPI_COMM_WORLD
	rank, size           int
	localRank, localSize int

	guard     transport.Guard // checks usable and the arguments
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var (
	_ dist.Communicator    = (*Comm)(nil)
	_ dist.MultiAllreducer = (*Comm)(nil)
)

// kind is what a request asks of the MPI goroutine.
type kind uint8

const (
	opAllreduce kind = iota + 1
	opBroadcast
	opAllgather
	opBarrier
	opRawAllreduce
	opSplit
	opFree
	opClose
)

func (k kind) String() string {
	switch k {
	case opAllreduce:
		return "allreduce"
	case opBroadcast:
		return "broadcast"
	case opAllgather:
		return "allgather"
	case opBarrier:
		return "barrier"
	case opRawAllreduce:
		return "raw allreduce"
	case opSplit:
		return "split"
	case opFree:
		return "free"
	}
	return "close"
}

// request is one call handed to the MPI goroutine.
type request struct {
	ctx    context.Context
	kind   kind
	comm   C.int            // the communicator's number
	bufs   []unsafe.Pointer // allreduce's buffers, reduced as one
	counts []C.int64_t      // their lengths
	buf    unsafe.Pointer   // the buffer of the others (dst for allgather)
	src    unsafe.Pointer   // allgather's source
	n      int              // elements of buf (of src for allgather)
	elem   int              // bytes per element
	dtype  C.int            // HORA_F32...
	op     C.int            // HORA_SUM...
	root   int
	color  int        // split's color (C.HORA_SPLIT_HOST: by host)
	key    int        // split's key
	split  *Comm      // split's result: a new communicator, or nil
	done   chan error // buffered: the MPI goroutine never blocks on it
}

// Open initializes MPI (MPI_Init_thread, on a goroutine locked to its OS
// thread that makes every later MPI call) and returns the communicator of
// all the ranks (MPI_COMM_WORLD). It works with or without a launcher
// (alone, it is a group of one); programs normally call Init, which opens
// MPI only under a launcher.
//
// MPI is initialized once per process: later calls return the same Comm,
// and after Close they return ErrFinalized.
//
// Before MPI_Init_thread, Open sets
// OMPI_MCA_coll_libnbc_iallreduce_algorithm unless the environment sets
// it, to the algorithm iallreduceAlgorithm picks for the job's layout
// (the ring, or Rabenseifner's across hosts): with MPI_IN_PLACE,
// OpenMPI's default is a binomial tree, 1.6 to 2.4 times slower from 16 MB
// on (see the package doc).
func Open() (*Comm, error) {
	world.mu.Lock()
	defer world.mu.Unlock()
	if c := world.comm; c != nil {
		if c.p.state.Load() == stateClosed {
			return nil, ErrFinalized
		}
		return c, nil
	}
	if world.err != nil {
		return nil, world.err
	}
	setDefault("OMPI_MCA_coll_libnbc_iallreduce_algorithm", iallreduceAlgorithm(launcherLayout()))
	p := &proc{
		reqs:    make(chan *request),
		exited:  make(chan struct{}),
		abortCh: make(chan struct{}),
	}
	c := p.newComm(0)
	ready := make(chan error, 1)
	go p.loop(c, ready)
	if err := <-ready; err != nil {
		world.err = err
		return nil, err
	}
	world.comm = c
	return c, nil
}

// newComm returns the Comm of communicator id.
func (p *proc) newComm(id C.int) *Comm {
	c := &Comm{p: p, id: id}
	c.guard = transport.Guard{Comm: c, State: c.usable}
	return c
}

// openCommunicator is Open for InitWorld.
func openCommunicator() (dist.Communicator, error) {
	c, err := Open()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// setDefault sets the environment variable k to v unless it is set.
func setDefault(k, v string) {
	if _, ok := os.LookupEnv(k); !ok {
		os.Setenv(k, v)
	}
}

// Rank returns this process's rank in the communicator.
func (c *Comm) Rank() int { return c.rank }

// Size returns the number of ranks in the communicator.
func (c *Comm) Size() int { return c.size }

// LocalRank returns this process's rank among the communicator's ranks on
// its host (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED).
func (c *Comm) LocalRank() int { return c.localRank }

// LocalSize returns the number of the communicator's ranks on this
// process's host.
func (c *Comm) LocalSize() int { return c.localSize }

// Split returns the communicator of the ranks of c that pass the same
// color (MPI_Comm_split), ranked by key, then by rank in c; a rank that
// passes a negative color joins none and gets nil. SplitHost groups the
// ranks by host instead. Every rank of c must call it (it is collective),
// and it blocks until they have: unlike the collectives, it cannot be
// abandoned. Close the communicators it returns before c; Close of
// MPI_COMM_WORLD frees any left.
func (c *Comm) Split(color, key int) (*Comm, error) {
	return c.split(max(color, -1), key)
}

// SplitHost returns the communicator of the ranks of c on this host
// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED), ranked as in c: its
// Rank is c's LocalRank. It is collective and blocks, like Split.
func (c *Comm) SplitHost() (*Comm, error) {
	return c.split(C.HORA_SPLIT_HOST, 0)
}

func (c *Comm) split(color, key int) (*Comm, error) {
	if err := c.usable("split"); err != nil {
		return nil, err
	}
	r := &request{ctx: context.Background(), kind: opSplit, color: color, key: key}
	if err := c.do(r); err != nil {
		return nil, err
	}
	return r.split, nil
}

// Allreduce reduces b in place across the ranks, in pieces of at most
// MaxPieceBytes, with MPI_Iallreduce and MPI_IN_PLACE. Average is a sum
// divided by Size (truncated toward zero for Int64; computed in float32
// and rounded to nearest even for Float16). Float16 sums, minimums and
// maximums use MPI ops of this package that convert each pair to float32
// and round the result back, so with more than two ranks a sum is rounded
// once per rank combined.
func (c *Comm) Allreduce(ctx context.Context, b device.Buffer, op dist.ReduceOp) error {
	if err := c.guard.Allreduce(b, op); err != nil {
		return err
	}
	return c.allreduce(ctx, []device.Buffer{b}, op)
}

// AllreduceMany reduces the concatenation of bufs (CPU buffers of one
// type) as Allreduce reduces one buffer, without a fusion buffer: the
// concatenation goes in pieces of at most MaxPieceBytes; a piece that lies
// in one buffer is reduced in place, and the others are copied into a
// staging area of the MPI thread while the piece before them is reduced,
// and back while the piece after them is (see the package doc).
func (c *Comm) AllreduceMany(ctx context.Context, bufs []device.Buffer, op dist.ReduceOp) error {
	if err := c.guard.AllreduceMany(bufs, op); err != nil {
		return err
	}
	for _, b := range bufs[min(1, len(bufs)):] {
		if b.DType() != bufs[0].DType() {
			return fmt.Errorf("dist/mpi: allreduce: buffers of types %v and %v reduced as one", bufs[0].DType(), b.DType())
		}
	}
	return c.allreduce(ctx, bufs, op)
}

// allreduce reduces the concatenation of bufs (checked by the guard, of
// one type).
func (c *Comm) allreduce(ctx context.Context, bufs []device.Buffer, op dist.ReduceOp) error {
	cbs := make([]*cpu.Buffer, len(bufs))
	var ptrs []unsafe.Pointer
	var counts []C.int64_t
	for i, b := range bufs {
		cb, ptr, n, err := hostBuffer("allreduce", b)
		if err != nil {
			return err
		}
		cbs[i] = cb
		if n > 0 {
			ptrs = append(ptrs, ptr)
			counts = append(counts, C.int64_t(n))
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var err error
	if len(ptrs) > 0 {
		dt := bufs[0].DType()
		err = c.do(&request{ctx: ctx, kind: opAllreduce, bufs: ptrs, counts: counts, elem: dt.Size(),
			dtype: cType(dt), op: cOp(op)})
	}
	if err == nil && op == dist.Average && c.size > 1 {
		for _, cb := range cbs {
			divide(cb, c.size)
		}
	}
	runtime.KeepAlive(cbs)
	return err
}

// Broadcast copies root's b into every rank's b, in pieces of at most
// MaxPieceBytes (MPI_Ibcast).
func (c *Comm) Broadcast(ctx context.Context, b device.Buffer, root int) error {
	if err := c.guard.Broadcast(b, root); err != nil {
		return err
	}
	cb, ptr, n, err := hostBuffer("broadcast", b)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if n > 0 {
		err = c.do(&request{ctx: ctx, kind: opBroadcast, buf: ptr, n: n, elem: b.DType().Size(), root: root})
	}
	runtime.KeepAlive(cb)
	return err
}

// Allgather concatenates every rank's src into dst, in rank order, with
// one MPI_Iallgather (src may hold at most 2 GiB).
func (c *Comm) Allgather(ctx context.Context, dst, src device.Buffer) error {
	if err := c.guard.Allgather(dst, src); err != nil {
		return err
	}
	cs, sp, n, err := hostBuffer("allgather", src)
	if err != nil {
		return err
	}
	cd, dp, _, err := hostBuffer("allgather", dst)
	if err != nil {
		return err
	}
	if bytes := n * src.DType().Size(); bytes > math.MaxInt32 {
		return fmt.Errorf("dist/mpi: allgather: source of %d bytes (at most %d)", bytes, math.MaxInt32)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if n > 0 {
		err = c.do(&request{ctx: ctx, kind: opAllgather, buf: dp, src: sp, n: n, elem: src.DType().Size()})
	}
	runtime.KeepAlive(cs)
	runtime.KeepAlive(cd)
	return err
}

// Barrier returns once every rank has entered it (MPI_Ibarrier).
func (c *Comm) Barrier(ctx context.Context) error {
	if err := c.guard.Barrier(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.do(&request{ctx: ctx, kind: opBarrier})
}

// RawAllreduce sums buf across the ranks with blocking MPI_Allreduce calls
// (MPI_IN_PLACE, MPI_FLOAT, MPI_SUM) in pieces of at most MaxPieceBytes,
// on the MPI thread, and nothing else: it is the reference that Hora's
// fused allreduce is benchmarked against. A blocking call cannot be
// abandoned: when ctx ends, RawAllreduce returns ctx's error and marks the
// communicator broken, but the MPI thread stays in the call.
func (c *Comm) RawAllreduce(ctx context.Context, buf []float32) error {
	if err := c.usable("raw allreduce"); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(buf) == 0 {
		return nil
	}
	err := c.do(&request{ctx: ctx, kind: opRawAllreduce, buf: unsafe.Pointer(unsafe.SliceData(buf)), n: len(buf), elem: 4})
	runtime.KeepAlive(buf)
	return err
}

// Abort prints "hora: rank R: aborting: err" to standard error and ends
// the job: the MPI thread calls MPI_Abort(MPI_COMM_WORLD, 1), which makes
// the launcher kill every rank (whichever communicator Abort is called
// on; R is the rank in it). It does not return; if the MPI thread does
// not get to MPI_Abort within a few seconds (it is inside a blocking call,
// or MPI is finalized), Abort exits the process with status 1, which also
// makes mpirun end the job.
func (c *Comm) Abort(err error) {
	fmt.Fprintf(os.Stderr, "hora: rank %d: aborting: %v\n", c.rank, err)
	p := c.p
	p.abortOnce.Do(func() {
		C.hora_cancel(C.HORA_ABORT) // for a collective in progress
		close(p.abortCh)            // for an idle MPI goroutine
	})
	select {
	case <-p.exited:
	case <-time.After(abortGrace):
		fmt.Fprintf(os.Stderr, "hora: rank %d: MPI_Abort did not happen within %v (the MPI thread is busy): exiting\n", c.rank, abortGrace)
	}
	os.Exit(1)
}

// Close makes later collectives on c return dist.ErrClosed. Closing
// MPI_COMM_WORLD finalizes MPI (MPI_Finalize on the MPI thread, which then
// ends), after which every communicator of the process is closed; all
// ranks must call it. A broken MPI (see dist.ErrBroken) is not finalized,
// since MPI_Finalize would wait for ranks that may be stuck in the
// abandoned collective: Close then returns an error wrapping
// dist.ErrBroken, and the process should exit with a non-zero status
// (mpirun then ends the job). Closing a communicator of Split or SplitHost
// frees it (MPI_Comm_free; not when MPI is broken or finalized). Close is
// idempotent.
func (c *Comm) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		if c.id != 0 {
			if c.p.state.Load() == stateOpen {
				c.closeErr = c.do(&request{ctx: context.Background(), kind: opFree})
			}
			return
		}
		broken := c.p.state.Swap(stateClosed) == stateBroken
		if broken {
			c.closeErr = fmt.Errorf("dist/mpi: close: %w: MPI not finalized, exit with a non-zero status", dist.ErrBroken)
			return
		}
		r := &request{ctx: context.Background(), kind: opClose, done: make(chan error, 1)}
		select {
		case c.p.reqs <- r:
			c.closeErr = <-r.done
		case <-c.p.exited:
		}
	})
	return c.closeErr
}

// usable returns the error of a collective called on a closed or broken
// communicator.
func (c *Comm) usable(what string) error {
	if c.closed.Load() {
		return fmt.Errorf("dist/mpi: %s: %w", what, dist.ErrClosed)
	}
	switch c.p.state.Load() {
	case stateClosed:
		return fmt.Errorf("dist/mpi: %s: %w", what, dist.ErrClosed)
	case stateBroken:
		return fmt.Errorf("dist/mpi: %s: %w", what, dist.ErrBroken)
	}
	return nil
}

// hostBuffer returns b as a CPU buffer, the address of its first element
// and its length.
func hostBuffer(what string, b device.Buffer) (*cpu.Buffer, unsafe.Pointer, int, error) {
	cb, ok := b.(*cpu.Buffer)
	if !ok {
		return nil, nil, 0, fmt.Errorf("dist/mpi: %s: buffer on device %s: MPI reduces CPU buffers only (move the data to the CPU, or use dist/nccl for GPU buffers)",
			what, b.Device().Name())
	}
	p := unsafe.Pointer(unsafe.SliceData(cb.Bytes()))
	n := cb.Len()
	if n > 0 && p == nil {
		return nil, nil, 0, fmt.Errorf("dist/mpi: %s: %v buffer of %d elements has no memory (freed?)", what, cb.DType(), n)
	}
	return cb, p, n, nil
}

// cType returns the C code of a type (hora_mpi.h).
func cType(dt device.DType) C.int {
	switch dt {
	case device.Float32:
		return C.HORA_F32
	case device.Float64:
		return C.HORA_F64
	case device.Int64:
		return C.HORA_I64
	case device.Float16:
		return C.HORA_F16
	}
	return 0
}

// cOp returns the C code of a reduction (hora_mpi.h).
func cOp(op dist.ReduceOp) C.int {
	switch op {
	case dist.Sum:
		return C.HORA_SUM
	case dist.Average:
		return C.HORA_AVG
	case dist.Min:
		return C.HORA_MIN
	case dist.Max:
		return C.HORA_MAX
	}
	return 0
}

// divide divides b's elements by n, the last step of Average.
func divide(b *cpu.Buffer, n int) {
	switch b.DType() {
	case device.Float32:
		s, d := b.Float32s(), float32(n)
		for i := range s {
			s[i] /= d
		}
	case device.Float64:
		s, d := b.Float64s(), float64(n)
		for i := range s {
			s[i] /= d
		}
	case device.Int64:
		s, d := b.Int64s(), int64(n)
		for i := range s {
			s[i] /= d
		}
	case device.Float16:
		s := b.Float16s()
		C.hora_half_div((*C.uint16_t)(unsafe.Pointer(unsafe.SliceData(s))), C.int64_t(len(s)), C.int(n))
	}
}

// do hands r, a request on c, to the MPI goroutine and waits for its
// answer or for r.ctx to end. A collective abandoned because its context
// ended breaks MPI.
func (c *Comm) do(r *request) error {
	p := c.p
	r.comm = c.id
	r.done = make(chan error, 1)
	select {
	case p.reqs <- r:
	case <-p.exited:
		return c.usable(r.kind.String())
	case <-r.ctx.Done():
		return r.ctx.Err() // not started: the communicator is still usable
	}
	select {
	case err := <-r.done:
		return err
	case <-r.ctx.Done():
		select {
		case err := <-r.done: // it finished at the same time
			return err
		default:
		}
		p.state.CompareAndSwap(stateOpen, stateBroken)
		return fmt.Errorf("dist/mpi: %v abandoned, communicator broken: %w", r.kind, r.ctx.Err())
	}
}

// loop is the MPI goroutine: it initializes MPI, sets up w (the
// communicator of MPI_COMM_WORLD), reports on ready, and runs the
// requests until Close.
func (p *proc) loop(w *Comm, ready chan<- error) {
	// Never unlocked: when the goroutine ends, so does its thread, the one
	// MPI was initialized (and finalized) on.
	runtime.LockOSThread()
	defer close(p.exited)
	var provided, rank, size, lrank, lsize C.int
	if rc := C.hora_init(&provided, &rank, &size, &lrank, &lsize); rc != C.MPI_SUCCESS {
		ready <- mpiError("init", rc)
		return
	}
	w.rank, w.size, w.localRank, w.localSize = int(rank), int(size), int(lrank), int(lsize)
	ready <- nil
	for {
		select {
		case r := <-p.reqs:
			if r.kind == opClose {
				var err error
				if rc := C.hora_finalize(); rc != C.MPI_SUCCESS {
					err = mpiError("finalize", rc)
				}
				r.done <- err
				return
			}
			r.done <- p.exec(r)
		case <-p.abortCh:
			C.hora_abort(1)
		}
	}
}

// exec runs a request on the MPI goroutine. The buffers are pinned while
// MPI holds their addresses; those of an abandoned collective stay pinned
// for good, since MPI may still write them.
func (p *proc) exec(r *request) error {
	switch r.kind {
	case opSplit:
		return p.split(r)
	case opFree:
		if rc := C.hora_comm_free(r.comm); rc != C.MPI_SUCCESS {
			return mpiError("free", rc)
		}
		return nil
	}
	pin := new(runtime.Pinner)
	for _, b := range r.bufs {
		pin.Pin(b)
	}
	for _, b := range []unsafe.Pointer{r.buf, r.src} {
		if b != nil {
			pin.Pin(b)
		}
	}
	state, err := p.run(r)
	switch {
	case state == C.HORA_CANCELED:
		p.pinned = append(p.pinned, pin)
		p.state.CompareAndSwap(stateOpen, stateBroken)
		return fmt.Errorf("dist/mpi: %v abandoned, communicator broken: %w", r.kind, r.ctx.Err())
	case err != nil:
		// The ranks may now disagree on what was done.
		p.pinned = append(p.pinned, pin)
		p.state.CompareAndSwap(stateOpen, stateBroken)
		return err
	}
	pin.Unpin()
	return nil
}

// split makes the communicator of a split request (a blocking call).
func (p *proc) split(r *request) error {
	var id, rank, size, lrank, lsize C.int
	if rc := C.hora_split(r.comm, C.int(r.color), C.int(r.key), &id, &rank, &size, &lrank, &lsize); rc != C.MPI_SUCCESS {
		return mpiError("split", rc)
	}
	if id >= 0 {
		c := p.newComm(id)
		c.rank, c.size, c.localRank, c.localSize = int(rank), int(size), int(lrank), int(lsize)
		r.split = c
	}
	return nil
}

// run makes r's MPI calls: one cgo call that returns when the collective
// is done or abandoned, while a watcher goroutine turns the end of r.ctx
// into hora_cancel. (Polling from Go instead would need a P after every
// test: with GOMAXPROCS=1, as under mpirun's default binding of a rank to
// one core, each one waits for the compute goroutines' time slice.)
func (p *proc) run(r *request) (C.int, error) {
	if r.kind == opRawAllreduce {
		if rc := C.hora_raw_allreduce(r.comm, (*C.float)(r.buf), C.int64_t(r.n), MaxPieceBytes); rc != C.MPI_SUCCESS {
			return 0, mpiError("allreduce", rc)
		}
		return C.HORA_DONE, nil
	}
	C.hora_reset_cancel()
	var stop, stopped chan struct{}
	if done := r.ctx.Done(); done != nil {
		stop, stopped = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			select {
			case <-done:
				C.hora_cancel(C.HORA_CANCELED)
			case <-stop:
			}
		}()
	}
	var state, rc C.int
	switch r.kind {
	case opAllreduce:
		rc = C.hora_allreduce_many(r.comm, &r.bufs[0], &r.counts[0], C.int(len(r.bufs)), r.dtype, r.op, MaxPieceBytes, &state)
	case opBroadcast:
		rc = C.hora_broadcast(r.comm, r.buf, C.int64_t(r.n*r.elem), C.int(r.root), MaxPieceBytes, &state)
	case opAllgather:
		rc = C.hora_allgather(r.comm, r.src, r.buf, C.int(r.n*r.elem), &state)
	case opBarrier:
		rc = C.hora_barrier(r.comm, &state)
	}
	if stop != nil {
		close(stop)
		<-stopped // no cancel from this watcher can reach a later collective
	}
	if rc != C.MPI_SUCCESS {
		return state, mpiError(r.kind.String(), rc)
	}
	return state, nil
}

// mpiError describes an MPI error code.
func mpiError(what string, rc C.int) error {
	var buf [512]C.char
	C.hora_error_string(rc, &buf[0], C.int(len(buf)))
	return fmt.Errorf("dist/mpi: %s: MPI error %d: %s", what, int(rc), C.GoString(&buf[0]))
}
