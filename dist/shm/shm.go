package shm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/transport"
	"github.com/hora-dl/hora/internal/hostcpu"
)

// DefaultSegmentBytes is the shared memory a group maps, for all ranks
// together: the ranks' slots, twice (see the package doc).
const DefaultSegmentBytes = 64 << 20

// lineBytes keeps each rank's counter on its own cache line.
const lineBytes = 128

// comm is a Communicator whose Allreduce and Allgather of CPU buffers go
// through shared memory; everything else goes to the wrapped one. In a
// hierarchical comm (WrapHierarchical) the segment is shared by the ranks
// of one host, and each piece's shares are reduced across the hosts by
// cross between the two halves of the shared-memory reduction.
type comm struct {
	dist.Communicator                   // every rank (Rank, Size, Broadcast, Abort, ...): the wrapped communicator
	host              dist.Communicator // the ranks that share the segment: the wrapped one, or this host's
	hier              bool              // made by WrapHierarchical: host is not the wrapped communicator
	cross             dist.Communicator // hierarchical: the owners of this rank's share on every host; else nil
	shares            int               // how many of host's ranks own a share of each piece
	layout            Layout
	ranks             []int // the wrapped communicator's rank of each of host's ranks
	seg               []byte
	slot              int              // bytes of one rank's slot
	slots             [2][]byte        // the two halves, each host.Size() slots back to back
	count             *atomic.Uint32   // arrivals at barriers, all of host's ranks together
	gone              []*atomic.Uint64 // per rank of host: 1 after Abort, 2 after Close
	seq               uint64           // barriers passed by this rank
	spin              time.Duration    // how long a barrier polls before sleeping
	ops               uint64           // shared-memory operations done (selects the half)
	broken            error            // why the collectives fail: another rank left, an abandoned barrier, Close
	guard             transport.Guard  // checks broken (usable) and the arguments
}

// Layout says how the ranks of a group are spread over hosts.
type Layout struct {
	Hosts  int // the number of hosts
	Fewest int // the fewest ranks a host holds
	Most   int // the most ranks a host holds
}

// LayoutOf returns the layout of c's ranks, given this rank's place among
// the ranks of its host (its rank and their number there; for an MPI
// communicator, LocalRank and LocalSize). It is collective over c.
func LayoutOf(ctx context.Context, c dist.Communicator, hostRank, hostSize int) (Layout, error) {
	b, err := cpu.Default().Alloc(device.Int64, 2)
	if err != nil {
		return Layout{}, err
	}
	v := b.(*cpu.Buffer).Int64s()
	v[0], v[1] = int64(hostSize), -int64(hostSize)
	if err := c.Allreduce(ctx, b, dist.Max); err != nil {
		return Layout{}, err
	}
	l := Layout{Most: int(v[0]), Fewest: int(-v[1])}
	v[0], v[1] = 0, 0
	if hostRank == 0 {
		v[0] = 1
	}
	if err := c.Allreduce(ctx, b, dist.Sum); err != nil {
		return Layout{}, err
	}
	l.Hosts = int(v[0])
	return l, nil
}

// Wrap returns c with Allreduce (float32, float64, int64) and Allgather of
// CPU buffers done in shared memory, when all of c's ranks run on this
// host (LocalSize == Size > 1); otherwise it returns c itself. It is
// collective: every rank calls it, after which the ranks use only the
// returned Communicator. Closing it unmaps the memory and closes c.
func Wrap(ctx context.Context, c dist.Communicator, segmentBytes int) (dist.Communicator, error) {
	size := c.Size()
	if size < 2 || c.LocalSize() != size {
		return c, nil
	}
	slot, err := slotBytes(segmentBytes, size)
	if err != nil {
		return nil, err
	}
	s := &comm{Communicator: c, host: c, shares: size, layout: Layout{Hosts: 1, Fewest: size, Most: size}}
	for r := range size {
		s.ranks = append(s.ranks, r)
	}
	seg, err := mapShared(ctx, c, segmentLen(size, slot))
	if err != nil {
		return nil, err
	}
	if seg == nil {
		return c, nil // no shared memory here: the wrapped transport does it all
	}
	s.attach(seg, slot)
	return s, nil
}

// Levels are the communicators of a hierarchical allreduce, seen from one
// rank (see WrapHierarchical).
type Levels struct {
	// World is every rank: the communicator that the hierarchical one
	// stands for, and that runs what shared memory does not.
	World dist.Communicator
	// Host is the ranks of World on this host, in World's order.
	Host dist.Communicator
	// Shares is how many of each host's ranks reduce across hosts: each
	// piece of an allreduce is cut into Shares shares, and Host's rank j <
	// Shares reduces share j between the hosts. It is at most the fewest
	// ranks any host holds, the same on every rank.
	Shares int
	// Cross is, on Host's ranks below Shares, the ranks of the same Host
	// rank on every host, one per host; nil on the others.
	Cross dist.Communicator
}

// WrapHierarchical returns a communicator that stands for l.World and
// reduces in two levels, as Horovod's hierarchical allreduce: within each
// host through a shared segment, as Wrap does, except that between the
// step in which each rank reduces its share of the host's values and the
// step in which the ranks copy each other's results, the owners of the
// shares reduce them across the hosts through l.Cross. Allreduce and
// AllreduceMany of CPU float32, float64 and int64 buffers go this way
// (Average divides by World's size at the end); everything else goes to
// World. It is collective over World: every rank calls it, after which
// the ranks use only the returned communicator, whose Close unmaps the
// memory and closes Cross, Host and World, in that order. When a host
// cannot map shared memory, every rank returns an error and closes
// nothing.
func WrapHierarchical(ctx context.Context, l Levels, segmentBytes int) (dist.Communicator, error) {
	host := l.Host
	if l.Shares < 1 || l.Shares > host.Size() || (l.Cross != nil) != (host.Rank() < l.Shares) {
		return nil, fmt.Errorf("dist/shm: hierarchical: %d shares, host rank %d of %d, cross communicator %v: inconsistent",
			l.Shares, host.Rank(), host.Size(), l.Cross != nil)
	}
	layout, err := LayoutOf(ctx, l.World, host.Rank(), host.Size())
	if err != nil {
		return nil, err
	}
	// The slots of the largest host set every host's piece, so that the
	// pieces and their shares match across hosts.
	slot, err := slotBytes(segmentBytes, layout.Most)
	if err != nil {
		return nil, err
	}
	ranks, err := cpu.Default().Alloc(device.Int64, host.Size())
	if err != nil {
		return nil, err
	}
	me, err := cpu.Default().Alloc(device.Int64, 1)
	if err != nil {
		return nil, err
	}
	me.(*cpu.Buffer).Int64s()[0] = int64(l.World.Rank())
	if err := host.Allgather(ctx, ranks, me); err != nil {
		return nil, err
	}
	seg, mapErr := mapShared(ctx, host, segmentLen(host.Size(), slot))
	// Every host must have its segment, or none uses one.
	bad, err := cpu.Default().Alloc(device.Int64, 1)
	if err != nil {
		return nil, err
	}
	if mapErr != nil || seg == nil {
		bad.(*cpu.Buffer).Int64s()[0] = 1
	}
	if err := l.World.Allreduce(ctx, bad, dist.Max); err != nil {
		return nil, errors.Join(mapErr, err)
	}
	if bad.(*cpu.Buffer).Int64s()[0] != 0 {
		if seg != nil {
			munmap(seg)
		}
		if mapErr == nil {
			mapErr = errors.New("a host has no shared memory")
		}
		return nil, fmt.Errorf("dist/shm: hierarchical: %w", mapErr)
	}
	s := &comm{Communicator: l.World, host: host, hier: true, cross: l.Cross, shares: l.Shares, layout: layout}
	for _, r := range ranks.(*cpu.Buffer).Int64s() {
		s.ranks = append(s.ranks, int(r))
	}
	s.attach(seg, slot)
	return s, nil
}

// slotBytes returns the bytes of one rank's slot when size ranks share a
// segment of segmentBytes (0: DefaultSegmentBytes).
func slotBytes(segmentBytes, size int) (int, error) {
	if segmentBytes <= 0 {
		segmentBytes = DefaultSegmentBytes
	}
	slot := (segmentBytes / (2 * size)) &^ (lineBytes - 1)
	if slot < 64<<10 {
		return 0, fmt.Errorf("dist/shm: a segment of %d bytes is too small for %d ranks", segmentBytes, size)
	}
	return slot, nil
}

// segmentLen returns the bytes of the segment of size ranks: the arrival
// counter, a line of flags per rank and two slots per rank.
func segmentLen(size, slot int) int { return (size+1)*lineBytes + 2*size*slot }

// attach lays s out over seg.
func (s *comm) attach(seg []byte, slot int) {
	size := s.host.Size()
	s.seg, s.slot, s.spin = seg, slot, spinTime
	s.guard = transport.Guard{Comm: s, State: s.usable}
	if cpus := hostcpu.Online(); cpus > 0 && size > cpus {
		// More ranks than cores: a spinning rank would hold a core that
		// the rank it waits for needs, so wait in the kernel at once.
		s.spin = 0
	}
	s.count = (*atomic.Uint32)(unsafe.Pointer(&seg[0]))
	for r := range size {
		s.gone = append(s.gone, (*atomic.Uint64)(unsafe.Pointer(&seg[(r+1)*lineBytes])))
	}
	data := seg[(size+1)*lineBytes:]
	s.slots[0], s.slots[1] = data[:size*slot], data[size*slot:]
}

// LocalRank returns this rank's place among the ranks on its host.
func (s *comm) LocalRank() int { return s.host.LocalRank() }

// LocalSize returns the number of ranks on this rank's host.
func (s *comm) LocalSize() int { return s.host.LocalSize() }

// Layout returns how the ranks are spread over hosts.
func (s *comm) Layout() Layout { return s.layout }

// mapShared creates (rank 0) or opens (the others) a file in /dev/shm,
// maps it, and unlinks it once every rank has it mapped.
func mapShared(ctx context.Context, c dist.Communicator, size int) ([]byte, error) {
	dir := "/dev/shm"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = os.TempDir()
	}
	const nameWords = 64
	nameBuf, _ := cpu.Default().Alloc(device.Int64, nameWords)
	words := nameBuf.(*cpu.Buffer).Int64s()
	var f *os.File
	var ferr error
	if c.Rank() == 0 {
		if f, ferr = os.CreateTemp(dir, "hora-dist-*.shm"); ferr == nil {
			if ferr = f.Truncate(int64(size)); ferr == nil {
				putString(words, f.Name())
			}
		}
		if ferr != nil {
			words[0] = -1 // tell the others
		}
	}
	if err := c.Broadcast(ctx, nameBuf, 0); err != nil {
		return nil, err
	}
	if words[0] < 0 {
		return nil, fmt.Errorf("dist/shm: rank 0 could not create the shared segment in %s", dir)
	}
	if c.Rank() != 0 {
		f, ferr = os.OpenFile(getString(words), os.O_RDWR, 0)
	}
	var seg []byte
	if ferr == nil {
		seg, ferr = mmap(f, size)
		f.Close()
	}
	// Agree that everyone has the mapping before rank 0 unlinks the file.
	ok, _ := cpu.Default().Alloc(device.Int64, 1)
	if ferr != nil {
		ok.(*cpu.Buffer).Int64s()[0] = 1
	}
	if err := c.Allreduce(ctx, ok, dist.Max); err != nil {
		return nil, err
	}
	if c.Rank() == 0 {
		os.Remove(getString(words))
	}
	if ok.(*cpu.Buffer).Int64s()[0] != 0 {
		if seg != nil {
			munmap(seg)
		}
		if errors.Is(ferr, errUnsupported) {
			return nil, nil
		}
		if ferr == nil {
			ferr = errors.New("another rank could not map it")
		}
		return nil, fmt.Errorf("dist/shm: mapping the shared segment: %w", ferr)
	}
	return seg, nil
}

func putString(words []int64, s string) {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	clear(b)
	copy(b[:len(b)-1], s)
}

func getString(words []int64) string {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	n := 0
	for n < len(b) && b[n] != 0 {
		n++
	}
	return string(b[:n])
}

// spinTime is how long a rank polls a barrier before it sleeps (when
// there are no more ranks than cores). Waking a
// sleeping process takes hundreds of microseconds on the machines this
// was measured on, and the rank has nothing else to do meanwhile: its
// training goroutine is waiting for the same reduction.
const spinTime = time.Millisecond

// barrier returns once every rank has reached this rank's next barrier.
// All ranks add to one shared arrival counter; the last to arrive wakes
// the others, which spin for up to spinTime and then sleep in the
// kernel (a futex on the counter), waking now and then to check ctx and
// whether a rank aborted or closed.
func (s *comm) barrier(ctx context.Context) error {
	s.seq++
	target := uint32(s.seq * uint64(s.host.Size()))
	if s.count.Add(1) == target {
		wake(s.count)
		return nil
	}
	var spinUntil time.Time
	for i := 0; ; i++ {
		cur := s.count.Load()
		if int32(cur-target) >= 0 {
			return nil
		}
		if i%256 != 255 {
			continue
		}
		// Spin for up to spinTime: the others are usually about to
		// arrive, and waking from the futex takes far longer.
		if spinUntil.IsZero() {
			spinUntil = time.Now().Add(s.spin)
		}
		if time.Now().Before(spinUntil) {
			continue
		}
		if err := s.peerGone(target); err != nil {
			s.broken = err
			return err
		}
		if err := ctx.Err(); err != nil {
			s.broken = dist.ErrBroken
			return fmt.Errorf("dist/shm: abandoned waiting for the other ranks: %w", err)
		}
		wait(s.count, cur, 10*time.Millisecond)
	}
}

// peerGone returns the error of a rank of the host that aborted or
// closed before reaching the barrier whose arrivals end at target, or nil.
// A rank arrives before it can close, so a rank seen gone may still have
// arrived: the barrier then holds, and only the count, read after the
// gone words, tells (a rank that leaves right after the last collective
// of a run is not an error for the ranks still finishing it).
func (s *comm) peerGone(target uint32) error {
	var gone error
	for q, g := range s.gone {
		switch g.Load() {
		case goneAborted:
			gone = &dist.RankError{Rank: s.worldRank(q), Err: errors.New("aborted")}
		case goneClosed:
			gone = &dist.RankError{Rank: s.worldRank(q), Err: dist.ErrClosed}
		}
		if gone != nil {
			break
		}
	}
	if gone == nil || int32(s.count.Load()-target) >= 0 {
		return nil
	}
	return gone
}

// usable returns the error that broke the communicator, or nil: the
// state its guard checks.
func (s *comm) usable(string) error { return s.broken }

// half returns this operation's half of the slots.
func (s *comm) half() []byte {
	h := s.slots[s.ops%2]
	s.ops++
	return h
}

// Allreduce reduces CPU float32, float64 and int64 buffers in shared
// memory (see AllreduceMany); others go to the wrapped communicator.
func (s *comm) Allreduce(ctx context.Context, b device.Buffer, op dist.ReduceOp) error {
	return s.AllreduceMany(ctx, []device.Buffer{b}, op)
}

// AllreduceMany reduces the concatenation of CPU buffers of one type in
// shared memory, in pieces of one slot. Each of the first shares ranks of
// the host owns a share of every piece: every rank copies the owners'
// shares of its values into its slot; each owner reduces its own share in
// its own buffers (its values, then the others' from their slots), has
// cross reduce it across the hosts when the communicator is hierarchical,
// and leaves the result in its slot, from which the others copy it.
func (s *comm) AllreduceMany(ctx context.Context, bufs []device.Buffer, op dist.ReduceOp) error {
	if err := s.guard.AllreduceMany(bufs, op); err != nil {
		return err
	}
	if len(bufs) == 0 {
		return nil
	}
	dt := bufs[0].DType()
	cbs := make([]*cpu.Buffer, len(bufs))
	for i, b := range bufs {
		cb, ok := b.(*cpu.Buffer)
		if !ok || b.DType() != dt || dt == device.Float16 {
			return s.fallback(ctx, bufs, op)
		}
		cbs[i] = cb
	}
	switch dt {
	case device.Float32:
		return allreduce(ctx, s, bufs, slices(cbs, (*cpu.Buffer).Float32s), op)
	case device.Float64:
		return allreduce(ctx, s, bufs, slices(cbs, (*cpu.Buffer).Float64s), op)
	case device.Int64:
		return allreduce(ctx, s, bufs, slices(cbs, (*cpu.Buffer).Int64s), op)
	}
	return s.fallback(ctx, bufs, op)
}

// fallback reduces the buffers with the wrapped communicator, as one when
// it can.
func (s *comm) fallback(ctx context.Context, bufs []device.Buffer, op dist.ReduceOp) error {
	if m, ok := s.Communicator.(dist.MultiAllreducer); ok {
		return m.AllreduceMany(ctx, bufs, op)
	}
	for _, b := range bufs {
		if err := s.Communicator.Allreduce(ctx, b, op); err != nil {
			return err
		}
	}
	return nil
}

func slices[T any](bs []*cpu.Buffer, get func(*cpu.Buffer) []T) [][]T {
	out := make([][]T, len(bs))
	for i, b := range bs {
		out[i] = get(b)
	}
	return out
}

// view returns rank r's slot in half h as n elements of T.
func view[T transport.Number](s *comm, h []byte, r, n int) []T {
	return unsafe.Slice((*T)(unsafe.Pointer(&h[r*s.slot])), n)
}

// spans walks the elements [off, off+len(part)) of the concatenation of
// bufs, calling fn with each buffer's slice of them and its position in
// part.
func spans[T any](bufs [][]T, off, n int, fn func(b []T, at int)) {
	start := 0 // of the current buffer in the concatenation
	for _, b := range bufs {
		end := start + len(b)
		lo, hi := max(off, start), min(off+n, end)
		if lo < hi {
			fn(b[lo-start:hi-start], lo-off)
		}
		if end >= off+n {
			return
		}
		start = end
	}
}

// allreduce reduces the concatenation of bufs, whose elements are vals.
func allreduce[T transport.Number](ctx context.Context, s *comm, bufs []device.Buffer, vals [][]T, op dist.ReduceOp) error {
	var zero T
	piece := s.slot / int(unsafe.Sizeof(zero))
	size, rank := s.host.Size(), s.host.Rank()
	total := 0
	for _, b := range vals {
		total += len(b)
	}
	for off := 0; off < total; off += piece {
		n := min(piece, total-off)
		h := s.half()
		mine := view[T](s, h, rank, n)
		lo, hi := s.share(n, rank)
		// The owners need only their shares of this rank's values.
		for q := range s.shares {
			if qlo, qhi := s.share(n, q); q != rank && qlo < qhi {
				spans(vals, off+qlo, qhi-qlo, func(b []T, at int) { copy(mine[qlo+at:], b) })
			}
		}
		if err := s.barrier(ctx); err != nil {
			return err
		}
		// Reduce this rank's share in its own buffers (its values, then the
		// others' in rank order), then across the hosts, and leave the
		// result in its slot.
		if lo < hi {
			spans(vals, off+lo, hi-lo, func(dst []T, at int) {
				for q := range size {
					if q != rank {
						transport.Combine(dst, view[T](s, h, q, n)[lo+at:lo+at+len(dst)], op)
					}
				}
			})
			if s.cross != nil {
				if err := s.acrossHosts(ctx, bufs, off+lo, hi-lo, op); err != nil {
					return err
				}
			}
			spans(vals, off+lo, hi-lo, func(dst []T, at int) {
				if op == dist.Average {
					transport.Divide(dst, s.Size())
				}
				copy(mine[lo+at:], dst)
			})
		}
		if err := s.barrier(ctx); err != nil {
			return err
		}
		// The others' shares of the result, from their slots.
		for q := range s.shares {
			if qlo, qhi := s.share(n, q); q != rank && qlo < qhi {
				res := view[T](s, h, q, n)
				spans(vals, off+qlo, qhi-qlo, func(b []T, at int) { copy(b, res[qlo+at:]) })
			}
		}
	}
	return nil
}

// acrossHosts reduces the elements [off, off+n) of the concatenation of
// bufs, this rank's share of a piece, summed over its host, with its
// owners on the other hosts (s.cross); Average is a sum there, divided by
// the world's size afterwards.
func (s *comm) acrossHosts(ctx context.Context, bufs []device.Buffer, off, n int, op dist.ReduceOp) error {
	var parts []device.Buffer
	start := 0 // of the current buffer in the concatenation
	for _, b := range bufs {
		end := start + b.Len()
		if lo, hi := max(off, start), min(off+n, end); lo < hi {
			part, err := device.SliceOf(b, lo-start, hi-lo)
			if err != nil {
				return err
			}
			parts = append(parts, part)
		}
		start = end
	}
	if op == dist.Average {
		op = dist.Sum
	}
	var err error
	if m, ok := s.cross.(dist.MultiAllreducer); ok {
		err = m.AllreduceMany(ctx, parts, op)
	} else {
		for _, p := range parts {
			if err = s.cross.Allreduce(ctx, p, op); err != nil {
				break
			}
		}
	}
	if err != nil {
		// The hosts may now disagree on what was done.
		s.broken = fmt.Errorf("dist/shm: reducing across hosts: %w", err)
		return s.broken
	}
	return nil
}

// share returns the elements [lo, hi) of n that rank r of the host
// reduces: about n/shares for the first shares ranks, in whole cache
// lines, and none for the others.
func (s *comm) share(n, r int) (lo, hi int) {
	if r >= s.shares {
		return n, n
	}
	const align = 32
	blocks := (n + align - 1) / align
	return min(n, r*blocks/s.shares*align), min(n, (r+1)*blocks/s.shares*align)
}

// Allgather copies every rank's src through shared memory when it fits in
// a slot and all the ranks share the segment; otherwise the wrapped
// communicator does it.
func (s *comm) Allgather(ctx context.Context, dst, src device.Buffer) error {
	if err := s.guard.Allgather(dst, src); err != nil {
		return err
	}
	cs, ok1 := src.(*cpu.Buffer)
	cd, ok2 := dst.(*cpu.Buffer)
	bytes := src.Len() * src.DType().Size()
	if !ok1 || !ok2 || bytes > s.slot || s.hier {
		return s.Communicator.Allgather(ctx, dst, src)
	}
	h := s.half()
	copy(h[s.Rank()*s.slot:], cs.Bytes())
	if err := s.barrier(ctx); err != nil {
		return err
	}
	out := cd.Bytes()
	for q := range s.Size() {
		copy(out[q*bytes:(q+1)*bytes], h[q*s.slot:q*s.slot+bytes])
	}
	return nil
}

// Barrier passes through shared memory when all the ranks share the
// segment, and through the wrapped communicator otherwise.
func (s *comm) Barrier(ctx context.Context) error {
	if err := s.guard.Barrier(); err != nil {
		return err
	}
	if s.hier {
		return s.Communicator.Barrier(ctx)
	}
	return s.barrier(ctx)
}

// Unwrap returns the wrapped communicator (the world, for a hierarchical
// one).
func (s *comm) Unwrap() dist.Communicator { return s.Communicator }

// worldRank returns the rank of host rank q in the wrapped communicator.
func (s *comm) worldRank(q int) int { return s.ranks[q] }

// Values of a rank's gone word.
const (
	goneAborted = 1
	goneClosed  = 2
)

// Abort tells the other ranks of the host, which may be waiting in shared
// memory, then aborts the wrapped communicator.
func (s *comm) Abort(err error) {
	if s.seg != nil {
		s.gone[s.host.Rank()].Store(goneAborted)
	}
	s.Communicator.Abort(err)
}

// Close unmaps the segment and closes the communicators: for a
// hierarchical one, the one between hosts and the host's, then the
// wrapped one.
func (s *comm) Close() error {
	var errs []error
	if s.seg != nil {
		s.gone[s.host.Rank()].CompareAndSwap(0, goneClosed)
		munmap(s.seg)
		s.seg = nil
		s.slots = [2][]byte{}
		s.broken = dist.ErrClosed
		if s.cross != nil {
			errs = append(errs, s.cross.Close())
		}
		if s.hier {
			errs = append(errs, s.host.Close())
		}
	}
	errs = append(errs, s.Communicator.Close())
	return errors.Join(errs...)
}
