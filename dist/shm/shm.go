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
// through shared memory; everything else goes to the wrapped one.
type comm struct {
	dist.Communicator
	seg    []byte
	slot   int              // bytes of one rank's slot
	slots  [2][]byte        // the two halves, each size slots back to back
	count  *atomic.Uint32   // arrivals at barriers, all ranks together
	gone   []*atomic.Uint64 // per rank: 1 after Abort, 2 after Close
	seq    uint64           // barriers passed by this rank
	spin   time.Duration    // how long a barrier polls before sleeping
	ops    uint64           // shared-memory operations done (selects the half)
	broken error            // why the collectives fail: another rank left, an abandoned barrier, Close
	guard  transport.Guard  // checks broken (usable) and the arguments
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
	if segmentBytes <= 0 {
		segmentBytes = DefaultSegmentBytes
	}
	slot := (segmentBytes / (2 * size)) &^ (lineBytes - 1)
	if slot < 64<<10 {
		return nil, fmt.Errorf("dist/shm: a segment of %d bytes is too small for %d ranks", segmentBytes, size)
	}
	total := (size+1)*lineBytes + 2*size*slot
	seg, err := mapShared(ctx, c, total)
	if err != nil {
		return nil, err
	}
	if seg == nil {
		return c, nil // no shared memory here: the wrapped transport does it all
	}
	s := &comm{Communicator: c, seg: seg, slot: slot, spin: spinTime}
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
	return s, nil
}

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
	target := uint32(s.seq * uint64(s.Size()))
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
		for q, g := range s.gone {
			switch g.Load() {
			case goneAborted:
				s.broken = &dist.RankError{Rank: q, Err: errors.New("aborted")}
				return s.broken
			case goneClosed:
				s.broken = &dist.RankError{Rank: q, Err: dist.ErrClosed}
				return s.broken
			}
		}
		if err := ctx.Err(); err != nil {
			s.broken = dist.ErrBroken
			return fmt.Errorf("dist/shm: abandoned waiting for the other ranks: %w", err)
		}
		wait(s.count, cur, 10*time.Millisecond)
	}
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
// shared memory, in pieces of one slot. Each rank owns a share of every
// piece: it copies the others' shares of its values into its slot, reduces
// its own share in place (its values, then the others' from their slots)
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
		return allreduce(ctx, s, slices(cbs, (*cpu.Buffer).Float32s), op)
	case device.Float64:
		return allreduce(ctx, s, slices(cbs, (*cpu.Buffer).Float64s), op)
	case device.Int64:
		return allreduce(ctx, s, slices(cbs, (*cpu.Buffer).Int64s), op)
	}
	return s.fallback(ctx, bufs, op)
}

// fallback reduces the buffers one by one with the wrapped communicator.
func (s *comm) fallback(ctx context.Context, bufs []device.Buffer, op dist.ReduceOp) error {
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

func allreduce[T transport.Number](ctx context.Context, s *comm, bufs [][]T, op dist.ReduceOp) error {
	var zero T
	piece := s.slot / int(unsafe.Sizeof(zero))
	size, rank := s.Size(), s.Rank()
	total := 0
	for _, b := range bufs {
		total += len(b)
	}
	for off := 0; off < total; off += piece {
		n := min(piece, total-off)
		h := s.half()
		mine := view[T](s, h, rank, n)
		lo, hi := share(n, size, rank)
		// The others need only their shares of this rank's values.
		for q := range size {
			if qlo, qhi := share(n, size, q); q != rank && qlo < qhi {
				spans(bufs, off+qlo, qhi-qlo, func(b []T, at int) { copy(mine[qlo+at:], b) })
			}
		}
		if err := s.barrier(ctx); err != nil {
			return err
		}
		// Reduce this rank's share in its own buffers (its values, then the
		// others' in rank order), and leave the result in its slot.
		if lo < hi {
			spans(bufs, off+lo, hi-lo, func(dst []T, at int) {
				for q := range size {
					if q == rank {
						continue
					}
					transport.Combine(dst, view[T](s, h, q, n)[lo+at:lo+at+len(dst)], op)
				}
				if op == dist.Average {
					transport.Divide(dst, size)
				}
				copy(mine[lo+at:], dst)
			})
		}
		if err := s.barrier(ctx); err != nil {
			return err
		}
		// The others' shares of the result, from their slots.
		for q := range size {
			if qlo, qhi := share(n, size, q); q != rank && qlo < qhi {
				res := view[T](s, h, q, n)
				spans(bufs, off+qlo, qhi-qlo, func(b []T, at int) { copy(b, res[qlo+at:]) })
			}
		}
	}
	return nil
}

// share returns the elements [lo, hi) of n that rank r reduces: about
// n/size, in whole cache lines.
func share(n, size, r int) (lo, hi int) {
	const align = 32
	blocks := (n + align - 1) / align
	return min(n, r*blocks/size*align), min(n, (r+1)*blocks/size*align)
}

// Allgather copies every rank's src through shared memory when it fits in
// a slot.
func (s *comm) Allgather(ctx context.Context, dst, src device.Buffer) error {
	if err := s.guard.Allgather(dst, src); err != nil {
		return err
	}
	cs, ok1 := src.(*cpu.Buffer)
	cd, ok2 := dst.(*cpu.Buffer)
	bytes := src.Len() * src.DType().Size()
	if !ok1 || !ok2 || bytes > s.slot {
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

// Barrier passes through shared memory.
func (s *comm) Barrier(ctx context.Context) error {
	if err := s.guard.Barrier(); err != nil {
		return err
	}
	return s.barrier(ctx)
}

// Unwrap returns the wrapped communicator.
func (s *comm) Unwrap() dist.Communicator { return s.Communicator }

// Values of a rank's gone word.
const (
	goneAborted = 1
	goneClosed  = 2
)

// Abort tells the other ranks, which may be waiting in shared memory, then
// aborts the wrapped communicator.
func (s *comm) Abort(err error) {
	if s.seg != nil {
		s.gone[s.Rank()].Store(goneAborted)
	}
	s.Communicator.Abort(err)
}

// Close unmaps the segment and closes the wrapped communicator.
func (s *comm) Close() error {
	if s.seg != nil {
		s.gone[s.Rank()].CompareAndSwap(0, goneClosed)
		munmap(s.seg)
		s.seg = nil
		s.slots = [2][]byte{}
		s.broken = dist.ErrClosed
	}
	return s.Communicator.Close()
}
