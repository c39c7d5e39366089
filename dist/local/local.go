package local

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/transport"
)

// New returns the n communicators of a new group of n ranks in this
// process, indexed by rank. Each is meant for one goroutine (see Run);
// LocalRank equals Rank and LocalSize equals Size. It returns an error
// when n < 1.
func New(n int) ([]dist.Communicator, error) {
	if n < 1 {
		return nil, fmt.Errorf("dist/local: group of %d ranks (want at least 1)", n)
	}
	g := &group{
		size:     n,
		wake:     make([]chan struct{}, n),
		calls:    make([]call, n),
		f32:      make([][]float32, n),
		f64:      make([][]float64, n),
		i64:      make([][]int64, n),
		f16:      make([][]uint16, n),
		brokenCh: make(chan struct{}),
		brokenBy: -1,
	}
	comms := make([]dist.Communicator, n)
	for r := range n {
		g.wake[r] = make(chan struct{}, 1)
		c := &comm{g: g, rank: r, scratch: newScratch()}
		c.guard = transport.Guard{Comm: c, State: c.usable}
		comms[r] = c
	}
	return comms, nil
}

// kind is the collective a call makes.
type kind uint8

const (
	allreduce kind = iota + 1
	broadcast
	allgather
	barrier
)

func (k kind) String() string {
	switch k {
	case allreduce:
		return "allreduce"
	case broadcast:
		return "broadcast"
	case allgather:
		return "allgather"
	}
	return "barrier"
}

// call is one rank's side of a collective, posted for the others to check.
type call struct {
	kind kind
	dt   device.DType
	n    int // elements of the buffer (of src, for allgather)
	op   dist.ReduceOp
	root int
}

// group is the state the ranks share. Everything but the slice tables is
// guarded by mu; a rank writes its own entry of the tables (and of calls)
// under mu before it arrives, and the others read them only between the
// arrival and the departure of the same collective.
type group struct {
	size int

	mu      sync.Mutex
	arrived int             // ranks waiting in the current phase
	gen     uint64          // phases completed
	wake    []chan struct{} // per rank: a token when its phase completes
	calls   []call          // per rank: the current collective
	verdict error           // of the last arrival: nil, or the mismatch

	// The buffers of the current collective (the destinations, for
	// allgather), per rank; only the table of its DType is set.
	f32 [][]float32
	f64 [][]float64
	i64 [][]int64
	f16 [][]uint16

	brokenCh chan struct{} // closed when the group breaks
	brokenBy int           // the rank that broke it, or -1
	rankErr  error         // what the other ranks get: a *dist.RankError
	selfErr  error         // what brokenBy gets
}

// breakLocked marks the group broken by rank r, unless it already is.
// cause is what the other ranks see inside their *dist.RankError, self
// what rank r's later collectives return.
func (g *group) breakLocked(r int, cause, self error) {
	if g.brokenBy >= 0 {
		return
	}
	g.brokenBy = r
	g.rankErr = &dist.RankError{Rank: r, Err: cause}
	g.selfErr = self
	close(g.brokenCh)
}

// errLocked returns the error of rank r in a broken group.
func (g *group) errLocked(r int) error {
	if r == g.brokenBy {
		return g.selfErr
	}
	return g.rankErr
}

// checkLocked compares every rank's call with rank 0's, for the
// collective numbered seq, and describes the first difference.
func (g *group) checkLocked(seq int) error {
	a := &g.calls[0]
	for r := 1; r < g.size; r++ {
		b := &g.calls[r]
		switch {
		case b.kind != a.kind:
			return fmt.Errorf("dist: collective #%d: rank 0 called %v, rank %d called %v", seq, a.kind, r, b.kind)
		case a.kind == barrier:
		case b.n != a.n || b.dt != a.dt:
			return fmt.Errorf("dist: %v #%d: rank 0 has %d %v, rank %d has %d %v", a.kind, seq, a.n, a.dt, r, b.n, b.dt)
		case a.kind == allreduce && b.op != a.op:
			return fmt.Errorf("dist: allreduce #%d: rank 0 has op %v, rank %d has op %v", seq, a.op, r, b.op)
		case a.kind == broadcast && b.root != a.root:
			return fmt.Errorf("dist: broadcast #%d: rank 0 has root %d, rank %d has root %d", seq, a.root, r, b.root)
		}
	}
	return nil
}

// comm is one rank's handle on a group.
type comm struct {
	g       *group
	rank    int
	seq     int // collectives this rank has entered, the current one included
	closed  atomic.Bool
	guard   transport.Guard // checks closed (usable) and the arguments
	scratch *scratch
}

var _ dist.Communicator = (*comm)(nil)

func (c *comm) Rank() int      { return c.rank }
func (c *comm) Size() int      { return c.g.size }
func (c *comm) LocalRank() int { return c.rank }
func (c *comm) LocalSize() int { return c.g.size }

// Allreduce reduces b over the ranks: each rank reduces its share of the
// elements across every rank's buffer and writes the result into all of
// them.
func (c *comm) Allreduce(ctx context.Context, b device.Buffer, op dist.ReduceOp) error {
	if err := c.guard.Allreduce(b, op); err != nil {
		return err
	}
	cb, err := cpuBuffer("allreduce", b)
	if err != nil {
		return err
	}
	n := cb.Len()
	if err := c.arrive(ctx, call{kind: allreduce, dt: cb.DType(), n: n, op: op}, cb); err != nil || n == 0 || c.g.size == 1 {
		c.forget() // nothing to do (a rank alone has the result), or nothing will be done
		return err
	}
	g := c.g
	lo, hi := segment(n, g.size, c.rank)
	switch cb.DType() {
	case device.Float32:
		reduce(g.f32, lo, hi, op, c.scratch.f32a)
	case device.Float64:
		reduce(g.f64, lo, hi, op, c.scratch.f64)
	case device.Int64:
		reduce(g.i64, lo, hi, op, c.scratch.i64)
	case device.Float16:
		reduceHalf(g.f16, lo, hi, op, c.scratch)
	}
	return c.depart()
}

// Broadcast copies root's b into the others': each rank copies its share
// of the elements.
func (c *comm) Broadcast(ctx context.Context, b device.Buffer, root int) error {
	if err := c.guard.Broadcast(b, root); err != nil {
		return err
	}
	cb, err := cpuBuffer("broadcast", b)
	if err != nil {
		return err
	}
	n := cb.Len()
	if err := c.arrive(ctx, call{kind: broadcast, dt: cb.DType(), n: n, root: root}, cb); err != nil || n == 0 || c.g.size == 1 {
		c.forget() // nothing to do (a rank alone is the root), or nothing will be done
		return err
	}
	g := c.g
	lo, hi := segment(n, g.size, c.rank)
	switch cb.DType() {
	case device.Float32:
		spread(g.f32, root, lo, hi)
	case device.Float64:
		spread(g.f64, root, lo, hi)
	case device.Int64:
		spread(g.i64, root, lo, hi)
	case device.Float16:
		spread(g.f16, root, lo, hi)
	}
	return c.depart()
}

// Allgather writes, on every rank, this rank's src into its place of dst.
func (c *comm) Allgather(ctx context.Context, dst, src device.Buffer) error {
	if err := c.guard.Allgather(dst, src); err != nil {
		return err
	}
	cs, err := cpuBuffer("allgather", src)
	if err != nil {
		return err
	}
	cd, err := cpuBuffer("allgather", dst)
	if err != nil {
		return err
	}
	n := cs.Len()
	if err := c.arrive(ctx, call{kind: allgather, dt: cs.DType(), n: n}, cd); err != nil || n == 0 {
		c.forget() // nothing to do, or nothing will be done
		return err
	}
	g := c.g
	lo := c.rank * n
	switch cs.DType() {
	case device.Float32:
		gather(g.f32, lo, cs.Float32s())
	case device.Float64:
		gather(g.f64, lo, cs.Float64s())
	case device.Int64:
		gather(g.i64, lo, cs.Int64s())
	case device.Float16:
		gather(g.f16, lo, cs.Float16s())
	}
	return c.depart()
}

// Barrier returns once every rank has called it.
func (c *comm) Barrier(ctx context.Context) error {
	if err := c.guard.Barrier(); err != nil {
		return err
	}
	return c.arrive(ctx, call{kind: barrier}, nil)
}

// Abort breaks the group: the other ranks' pending and later collectives
// return &dist.RankError{Rank: c.Rank(), Err: err}; this rank's later ones
// return an error wrapping dist.ErrBroken.
func (c *comm) Abort(err error) {
	if err == nil {
		err = errors.New("aborted")
	}
	g := c.g
	g.mu.Lock()
	g.breakLocked(c.rank, err, fmt.Errorf("%w (this rank aborted: %v)", dist.ErrBroken, err))
	g.mu.Unlock()
}

// Close makes this rank's later collectives return dist.ErrClosed, and the
// other ranks' pending and later ones a *dist.RankError naming this rank
// (they cannot complete without it). It is idempotent.
func (c *comm) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	g := c.g
	g.mu.Lock()
	g.breakLocked(c.rank, dist.ErrClosed, dist.ErrClosed)
	g.mu.Unlock()
	return nil
}

// usable returns dist.ErrClosed after Close, and nil before: the state
// this rank's guard checks (a broken group is reported on arrival).
func (c *comm) usable(string) error {
	if c.closed.Load() {
		return dist.ErrClosed
	}
	return nil
}

// cpuBuffer returns b as a CPU buffer, or an error naming its device.
func cpuBuffer(what string, b device.Buffer) (*cpu.Buffer, error) {
	cb, ok := b.(*cpu.Buffer)
	if !ok {
		return nil, fmt.Errorf("dist: %s: %v buffer on device %s: dist/local handles CPU buffers only", what, b.DType(), b.Device().Name())
	}
	return cb, nil
}

// arrive posts this rank's call and buffer and waits for every rank to
// post theirs. It returns nil when all ranks made the same call and the
// collective's work may start; otherwise the mismatch (on every rank),
// this rank's ctx error (which breaks the group), or the error of a broken
// group.
func (c *comm) arrive(ctx context.Context, cl call, b *cpu.Buffer) error {
	g := c.g
	c.seq++
	g.mu.Lock()
	if g.brokenBy >= 0 {
		err := g.errLocked(c.rank)
		g.mu.Unlock()
		return err
	}
	if err := ctx.Err(); err != nil {
		err = c.abandonLocked(cl.kind, err)
		g.mu.Unlock()
		return err
	}
	g.calls[c.rank] = cl
	if b != nil {
		switch b.DType() {
		case device.Float32:
			g.f32[c.rank] = b.Float32s()
		case device.Float64:
			g.f64[c.rank] = b.Float64s()
		case device.Int64:
			g.i64[c.rank] = b.Int64s()
		case device.Float16:
			g.f16[c.rank] = b.Float16s()
		}
	}
	return c.waitLocked(ctx, cl.kind, true)
}

// depart waits until every rank has finished its share of the work (the
// others write into this rank's buffer), then forgets this rank's buffer.
// It does not watch ctx: once all ranks have arrived, the collective runs
// to completion (a broken group still ends the wait).
func (c *comm) depart() error {
	g := c.g
	g.mu.Lock()
	if g.brokenBy >= 0 {
		err := g.errLocked(c.rank)
		g.mu.Unlock()
		return err
	}
	err := c.waitLocked(context.Background(), 0, false)
	if err == nil {
		// Only now: in a group that broke meanwhile, another rank may
		// still be working on this rank's buffer.
		c.forget()
	}
	return err
}

// forget drops this rank's buffer from the tables once every rank has
// passed the collective's work (nobody reads the entry again until this
// rank's next arrival), so that the group does not keep it alive.
func (c *comm) forget() {
	g := c.g
	g.f32[c.rank], g.f64[c.rank], g.i64[c.rank], g.f16[c.rank] = nil, nil, nil, nil
}

// waitLocked counts this rank in the current phase and waits for the
// others; it is called with g.mu held and releases it. The last rank to
// arrive completes the phase (and, for an arrival, checks the calls). A
// waiting rank leaves when the group breaks or ctx ends; leaving because
// of ctx breaks the group.
func (c *comm) waitLocked(ctx context.Context, k kind, arrival bool) error {
	g := c.g
	g.arrived++
	if g.arrived == g.size {
		if arrival {
			g.verdict = g.checkLocked(c.seq)
		}
		err := g.verdict
		g.arrived = 0
		g.gen++
		for r, w := range g.wake {
			if r != c.rank {
				w <- struct{}{} // never blocks: the rank took its last token before arriving
			}
		}
		g.mu.Unlock()
		if arrival {
			return err
		}
		return nil
	}
	gen := g.gen
	g.mu.Unlock()

	select {
	case <-c.g.wake[c.rank]:
		if arrival {
			return g.verdict // written before the token was sent
		}
		return nil
	case <-g.brokenCh:
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gen != gen { // the phase completed after all: take the token
		<-g.wake[c.rank]
		if arrival {
			return g.verdict
		}
		return nil
	}
	g.arrived--
	if g.brokenBy >= 0 {
		return g.errLocked(c.rank)
	}
	return c.abandonLocked(k, ctx.Err())
}

// abandonLocked breaks the group because this rank's ctx ended before its
// collective could start, and returns this rank's error.
func (c *comm) abandonLocked(k kind, ctxErr error) error {
	c.g.breakLocked(c.rank, fmt.Errorf("abandoned %v #%d (%v): %w", k, c.seq, ctxErr, dist.ErrBroken), dist.ErrBroken)
	return fmt.Errorf("dist: %v #%d: %w", k, c.seq, ctxErr)
}
