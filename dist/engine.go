package dist

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Defaults of EngineConfig, Horovod's.
const (
	// DefaultFusionThreshold is the largest fusion buffer, in bytes.
	DefaultFusionThreshold = 64 << 20
	// DefaultCycleTime is the shortest time between two negotiation rounds
	// while tensors are waiting.
	DefaultCycleTime = time.Millisecond
	// DefaultStallWarning is how long a tensor submitted by some ranks may
	// wait for the others before the engine reports it.
	DefaultStallWarning = 60 * time.Second
	// DefaultStallShutdown is how long it may wait before the engine
	// gives up on every rank.
	DefaultStallShutdown = 5 * DefaultStallWarning
)

// EngineConfig configures an Engine. The zero value means the defaults.
type EngineConfig struct {
	// FusionThreshold is the size in bytes of the largest fusion buffer:
	// tensors ready in the same round, of the same type and reduction, are
	// copied into one buffer and reduced with one collective while they fit.
	// 0 means DefaultFusionThreshold; a negative value turns fusion off.
	FusionThreshold int64
	// CycleTime is the shortest time between negotiation rounds while
	// tensors wait (0: DefaultCycleTime). Tensors submitted within one
	// cycle are fused together. Flush starts a round at once.
	CycleTime time.Duration
	// StallWarning: when a tensor has been submitted by some ranks but not
	// by all for this long, rank 0 prints the tensors and the missing
	// ranks to Log, and again every StallWarning while the stall lasts.
	// A rank that stops answering (stopped, or its host unreachable)
	// blocks the others in a collective instead: when the engine has
	// waited this long in one collective (a negotiation round, an
	// allreduce, a broadcast), rank 0 prints how long and, when Peers
	// knows, which ranks are silent (if rank 0 is silent itself, the
	// lowest rank that is not prints), again every StallWarning. The
	// engines' first round, which waits for every rank to start its
	// engine, is not watched.
	// 0 means DefaultStallWarning; negative turns stall checking off.
	StallWarning time.Duration
	// StallShutdown: after a stall this long, every rank's engine stops
	// and fails its pending and later operations with a *StallError. An
	// engine that has waited this long in one collective stops on its
	// own, at once, without waiting for the collective (which may never
	// return). 0 means DefaultStallShutdown; negative never shuts down.
	StallShutdown time.Duration
	// Peers, when set, tells which ranks have stopped answering, so that
	// the reports of a blocked collective name them (dist/liveness's
	// Monitor is one). Its ranks must be those of the communicator.
	Peers PeerWatcher
	// Timeline, when set, receives the spans of every tensor's operation
	// (set it on rank 0 only, as Horovod does).
	Timeline *Timeline
	// Log receives stall reports (nil: os.Stderr).
	Log io.Writer
}

func (c EngineConfig) withDefaults() EngineConfig {
	if c.FusionThreshold == 0 {
		c.FusionThreshold = DefaultFusionThreshold
	}
	if c.CycleTime <= 0 {
		c.CycleTime = DefaultCycleTime
	}
	if c.StallWarning == 0 {
		c.StallWarning = DefaultStallWarning
	}
	if c.StallShutdown == 0 {
		c.StallShutdown = DefaultStallShutdown
	}
	if c.Log == nil {
		c.Log = os.Stderr
	}
	return c
}

// StallError is the error of the operations an engine failed because some
// ranks never submitted a tensor the others were waiting on, or because
// the engine waited too long in a collective that some rank did not join.
type StallError struct {
	// Waited is how long the oldest stalled tensor waited, or how long
	// the engine waited in the blocked collective.
	Waited time.Duration
	// Report names the tensors and the ranks that did not submit them,
	// or the blocked collective and the ranks that stopped answering.
	Report string
}

// Error returns the report.
func (e *StallError) Error() string {
	return fmt.Sprintf("dist: stall shutdown after %v: %s", approx(e.Waited), e.Report)
}

// opKind is the collective a request asks for.
type opKind uint8

const (
	kindAllreduce opKind = iota + 1
	kindBroadcast
)

func (k opKind) String() string {
	if k == kindBroadcast {
		return "broadcast"
	}
	return "allreduce"
}

// Handle is an operation submitted to an Engine.
type Handle struct {
	done chan struct{}
	once sync.Once // the first finish wins
	err  error
}

// Done returns a channel closed when the operation is complete.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Wait waits for the operation and returns its error. If ctx ends first
// it returns ctx's error; the operation then still completes later and
// writes its tensor then. The same holds when the engine gives up on a
// blocked collective (StallShutdown): Wait returns the *StallError at
// once, and the collective may still write the tensor if it ever ends.
func (h *Handle) Wait(ctx context.Context) error {
	select {
	case <-h.done:
		return h.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// finish completes the operation with err, unless it is complete
// already.
func (h *Handle) finish(err error) {
	h.once.Do(func() {
		h.err = err
		close(h.done)
	})
}

// request is one submitted operation.
type request struct {
	name      string
	sig       signature
	t         *tensor.Tensor
	submitted time.Time
	h         *Handle
}

// signature is what every rank must agree on for a tensor name.
type signature struct {
	kind     opKind
	dtype    device.DType
	n        int
	op       ReduceOp
	root     int
	compress bool // float16 on the wire
}

func (s signature) String() string {
	w := ""
	if s.compress {
		w = " (float16 on the wire)"
	}
	if s.kind == kindBroadcast {
		return fmt.Sprintf("broadcast from rank %d of %d %v", s.root, s.n, s.dtype)
	}
	return fmt.Sprintf("allreduce (%v) of %d %v%s", s.op, s.n, s.dtype, w)
}

// Engine runs named collectives for one rank in a background goroutine,
// the way Horovod does. Operations are submitted with a name from any
// goroutine; in rounds, the engines of all ranks agree on which names
// every rank has submitted (negotiation), then reduce those, fusing
// small tensors into one buffer. Because the order in which a rank submits
// does not matter, gradients can be submitted as backward produces them,
// and communication overlaps the rest of backward.
//
// The engine owns its Communicator while it runs: do not call the
// communicator directly until Close has returned.
type Engine struct {
	comm   Communicator
	cfg    EngineConfig
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	incoming []*request
	names    map[string]*request // submitted by this rank, not yet complete
	flush    bool
	closing  bool
	err      error // why the engine stopped: the first error
	wake     chan struct{}
	stopped  chan struct{} // closed when run returns
	single   bool          // Size() == 1: operations complete at once

	blocked   blockWatch    // the collective run is in, for the watchdog
	abandoned chan struct{} // closed when the watchdog gave up on a blocked collective

	neg    *negotiator
	fusion map[fusionKey]device.Buffer
}

type fusionKey struct {
	dev device.Device
	dt  device.DType
}

// NewEngine starts an engine for this rank over c.
func NewEngine(c Communicator, cfg EngineConfig) (*Engine, error) {
	if c == nil {
		return nil, errors.New("dist: NewEngine: nil communicator")
	}
	cfg = cfg.withDefaults()
	cfg.Log = &lockedWriter{w: cfg.Log} // the engine's goroutine and its watchdog both report
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{
		comm: c, cfg: cfg, ctx: ctx, cancel: cancel,
		names:     map[string]*request{},
		wake:      make(chan struct{}, 1),
		stopped:   make(chan struct{}),
		abandoned: make(chan struct{}),
		single:    c.Size() == 1,
		fusion:    map[fusionKey]device.Buffer{},
	}
	if e.single {
		close(e.stopped)
		return e, nil
	}
	e.neg = newNegotiator(c, cfg)
	go e.run()
	if cfg.StallWarning > 0 {
		go e.watch()
	}
	return e, nil
}

// Comm returns the engine's communicator.
func (e *Engine) Comm() Communicator { return e.comm }

// Rank returns this rank's index.
func (e *Engine) Rank() int { return e.comm.Rank() }

// Size returns the number of ranks.
func (e *Engine) Size() int { return e.comm.Size() }

// Timeline returns the timeline the engine records into (nil when off).
func (e *Engine) Timeline() *Timeline { return e.cfg.Timeline }

// AllreduceAsync submits an in-place reduction of t across ranks under
// name, which every rank must submit with the same op, type and length.
// With compress, a float32 tensor travels (and is summed) as float16.
// t must not belong to an arena, and must not be used until the operation
// is complete.
func (e *Engine) AllreduceAsync(name string, t *tensor.Tensor, op ReduceOp, compress bool) *Handle {
	return e.submit(name, t, signature{kind: kindAllreduce, op: op, root: -1, compress: compress})
}

// BroadcastAsync submits an in-place copy of root's t into every rank's t.
func (e *Engine) BroadcastAsync(name string, t *tensor.Tensor, root int) *Handle {
	return e.submit(name, t, signature{kind: kindBroadcast, root: root})
}

// Allreduce is AllreduceAsync followed by Flush and Wait.
func (e *Engine) Allreduce(ctx context.Context, name string, t *tensor.Tensor, op ReduceOp) error {
	h := e.AllreduceAsync(name, t, op, false)
	e.Flush()
	return h.Wait(ctx)
}

// Broadcast is BroadcastAsync followed by Flush and Wait.
func (e *Engine) Broadcast(ctx context.Context, name string, t *tensor.Tensor, root int) error {
	h := e.BroadcastAsync(name, t, root)
	e.Flush()
	return h.Wait(ctx)
}

// AverageFloat64s replaces vals with their averages across ranks (metrics
// such as loss and accuracy), under name.
func (e *Engine) AverageFloat64s(ctx context.Context, name string, vals []float64) error {
	return e.AllreduceFloat64s(ctx, name, vals, Average)
}

// AllreduceFloat64s replaces vals with their reduction across ranks, under
// name (sums of per-rank counts, for example).
func (e *Engine) AllreduceFloat64s(ctx context.Context, name string, vals []float64, op ReduceOp) error {
	t := tensor.FromFloat64(append([]float64(nil), vals...), len(vals))
	if err := e.Allreduce(ctx, name, t, op); err != nil {
		return err
	}
	copy(vals, t.Float64s())
	return nil
}

// Flush asks for a negotiation round now rather than at the end of the
// cycle: the submitter knows no more tensors are coming soon.
func (e *Engine) Flush() {
	if e.single {
		return
	}
	e.mu.Lock()
	e.flush = true
	e.mu.Unlock()
	e.signal()
}

// Err returns why the engine stopped, or nil while it runs.
func (e *Engine) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Close stops the engine once every rank has called Close (the engines
// agree on it in a round, so none leaves the others waiting), after the
// operations submitted before are done. It returns the error that stopped
// the engine, if one did. After the engine gave up on a blocked
// collective (StallShutdown), Close returns at once: it cancels the
// collective, which the engine's goroutine leaves if the transport can.
func (e *Engine) Close() error {
	e.mu.Lock()
	e.closing = true
	e.mu.Unlock()
	e.signal()
	select {
	case <-e.stopped:
	case <-e.abandoned:
	}
	e.cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	if errors.Is(e.err, errEngineClosed) {
		return nil
	}
	return e.err
}

var errEngineClosed = errors.New("dist: engine closed")

func (e *Engine) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// completed is the handle of every successful operation of a one-rank
// engine; it is never modified.
var completed = func() *Handle {
	h := &Handle{done: make(chan struct{})}
	close(h.done)
	return h
}()

func (e *Engine) submit(name string, t *tensor.Tensor, sig signature) *Handle {
	if err := e.check(name, t, &sig); err != nil {
		h := &Handle{done: make(chan struct{})}
		h.finish(err)
		return h
	}
	if e.single {
		// One rank: the reduction and the broadcast leave t as it is.
		e.cfg.Timeline.Instant(name, sig.kind.String())
		return completed
	}
	h := &Handle{done: make(chan struct{})}
	r := &request{name: name, sig: sig, t: t, submitted: time.Now(), h: h}
	e.mu.Lock()
	switch {
	case e.err != nil:
		err := e.err
		e.mu.Unlock()
		h.finish(err)
		return h
	case e.closing:
		e.mu.Unlock()
		h.finish(fmt.Errorf("dist: %s: submitted after Close: %w", name, ErrClosed))
		return h
	case e.names[name] != nil:
		e.mu.Unlock()
		h.finish(fmt.Errorf("dist: %s: submitted again before the previous operation under this name completed", name))
		return h
	}
	e.names[name] = r
	e.incoming = append(e.incoming, r)
	e.mu.Unlock()
	e.signal()
	return h
}

// check validates a submission and completes its signature.
func (e *Engine) check(name string, t *tensor.Tensor, sig *signature) error {
	if name == "" {
		return errors.New("dist: empty tensor name")
	}
	if len(name) > maxNameLen {
		return fmt.Errorf("dist: tensor name %.40q... is longer than %d bytes", name, maxNameLen)
	}
	if t == nil {
		return fmt.Errorf("dist: %s: nil tensor", name)
	}
	if t.Arena() != nil {
		return fmt.Errorf("dist: %s: the tensor belongs to an arena; the engine uses it from its own goroutine, so pass a tensor without one", name)
	}
	sig.dtype, sig.n = t.DType(), t.Len()
	switch sig.dtype {
	case device.Float32, device.Float64, device.Int64, device.Float16:
	default:
		return fmt.Errorf("dist: %s: unsupported type %v", name, sig.dtype)
	}
	if sig.kind == kindAllreduce && !sig.op.Valid() {
		return fmt.Errorf("dist: %s: invalid reduce op %d", name, int(sig.op))
	}
	if sig.compress && sig.dtype != device.Float32 {
		sig.compress = false // only float32 is compressed; others travel as they are
	}
	if sig.kind == kindBroadcast && (sig.root < 0 || sig.root >= e.comm.Size()) {
		return fmt.Errorf("dist: %s: broadcast root %d out of range [0, %d)", name, sig.root, e.comm.Size())
	}
	return nil
}

// run is the engine's goroutine: it waits for work, then runs a round.
func (e *Engine) run() {
	defer close(e.stopped)
	heartbeat := time.Duration(-1)
	if e.cfg.StallWarning > 0 {
		// Idle ranks still take part in rounds now and then, so that the
		// ranks waiting on them learn which tensors they lack.
		heartbeat = min(e.cfg.StallWarning/4, time.Second)
	}
	var lastStart time.Time
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		e.mu.Lock()
		e.takeIncoming()
		flush, closing := e.flush, e.closing
		e.mu.Unlock()

		wait := heartbeat
		switch {
		case flush || closing:
			wait = 0
		case e.neg.waiting():
			wait = max(e.cfg.CycleTime-time.Since(lastStart), 0)
		}
		if wait != 0 {
			var tc <-chan time.Time // nil, waiting for a wake-up only, when wait < 0
			if wait > 0 {
				timer.Reset(wait) // Go 1.23 timers: no stale tick to drain
				tc = timer.C
			}
			select {
			case <-e.wake:
				timer.Stop()
				continue // look again: more work, a flush or Close
			case <-tc:
			}
		}
		e.mu.Lock()
		e.flush = false
		e.takeIncoming()
		closing = e.closing
		e.mu.Unlock()

		lastStart = time.Now()
		e.blocked.enter(negotiationRound, "", 0)
		res, err := e.neg.round(e.ctx, closing)
		e.blocked.leave()
		if err == nil {
			e.blocked.arm() // every rank's engine runs: watch the waits from now on
			err = e.execute(res)
		}
		if err == nil && res.shutdown != nil {
			err = res.shutdown
		}
		if err == nil && res.allClosing {
			err = errEngineClosed
		}
		if err == nil {
			err = e.Err() // the watchdog gave up while a collective was late
		}
		if err != nil {
			e.stop(err)
			return
		}
	}
}

// takeIncoming hands the submitted requests to the negotiator; e.mu is
// held.
func (e *Engine) takeIncoming() {
	e.neg.add(e.incoming)
	clear(e.incoming)
	e.incoming = e.incoming[:0]
}

// stop fails every pending and later operation with err, or with the
// error that stopped the engine before (the watchdog's).
func (e *Engine) stop(err error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	err = e.err
	e.takeIncoming()
	e.mu.Unlock()
	for _, r := range e.neg.drain() {
		e.complete(r, err)
	}
}

func (e *Engine) complete(r *request, err error) {
	e.mu.Lock()
	delete(e.names, r.name)
	e.mu.Unlock()
	r.h.finish(err)
}

// execute runs the operations every rank agreed on in this round, in the
// agreed order, fusing consecutive allreduces that can share a buffer.
func (e *Engine) execute(res roundResult) error {
	for _, f := range res.failed {
		e.complete(f.r, f.err)
	}
	ready := res.ready
	tl := e.cfg.Timeline
	now := time.Now()
	for _, r := range ready {
		tl.Span(r.name, "QUEUE", r.submitted, now)
	}
	for len(ready) > 0 {
		n := 1
		if ready[0].sig.kind == kindAllreduce {
			n = e.fusible(ready)
		}
		group := ready[:n]
		ready = ready[n:]
		var err error
		e.blocked.enter(group[0].sig.kind.String(), group[0].name, len(group)-1)
		if group[0].sig.kind == kindBroadcast {
			err = e.broadcast(group[0])
		} else {
			err = e.allreduce(group)
		}
		e.blocked.leave()
		if err != nil {
			// A failed collective leaves the ranks out of step: stop.
			for _, r := range group {
				e.complete(r, err)
			}
			for _, r := range ready {
				e.complete(r, err)
			}
			return err
		}
		for _, r := range group {
			e.complete(r, nil)
		}
	}
	return nil
}

// wireType is the type a request's data has in the collective.
func (s signature) wireType() device.DType {
	if s.compress {
		return device.Float16
	}
	return s.dtype
}

// fusible returns how many of the first requests can be reduced in one
// fusion buffer: same device, type, op and compression, within the
// threshold.
func (e *Engine) fusible(reqs []*request) int {
	if e.cfg.FusionThreshold < 0 {
		return 1
	}
	first := reqs[0]
	size := int64(first.sig.n * first.sig.wireType().Size())
	n := 1
	for _, r := range reqs[1:] {
		s := r.sig
		if s.kind != kindAllreduce || s.dtype != first.sig.dtype || s.op != first.sig.op ||
			s.compress != first.sig.compress || r.t.Device() != first.t.Device() {
			break
		}
		b := int64(s.n * s.wireType().Size())
		if size+b > e.cfg.FusionThreshold {
			break
		}
		size += b
		n++
	}
	return n
}

// ownsBuffer reports whether t is exactly its whole buffer (dense, from
// its start), which a collective can then use in place.
func ownsBuffer(t *tensor.Tensor) bool { return t.Len() > 0 && t.IsContiguous() }

// allOwnBuffers reports whether every request's tensor is its whole buffer.
func allOwnBuffers(group []*request) bool {
	for _, r := range group {
		if !ownsBuffer(r.t) {
			return false
		}
	}
	return true
}

// allreduce reduces a group of requests, through the fusion buffer unless
// it is one tensor that can be reduced in place.
func (e *Engine) allreduce(group []*request) error {
	tl := e.cfg.Timeline
	first := group[0]
	if len(group) == 1 && !first.sig.compress && ownsBuffer(first.t) {
		start := time.Now()
		err := e.comm.Allreduce(e.ctx, first.t.Buffer(), first.sig.op)
		tl.Span(first.name, "ALLREDUCE", start, time.Now())
		return err
	}
	if m, ok := e.comm.(MultiAllreducer); ok && !first.sig.compress && allOwnBuffers(group) {
		// The transport fuses them itself, copying straight from and into
		// the tensors.
		bufs := make([]device.Buffer, len(group))
		for i, r := range group {
			bufs[i] = r.t.Buffer()
		}
		start := time.Now()
		err := m.AllreduceMany(e.ctx, bufs, first.sig.op)
		end := time.Now()
		for _, r := range group {
			tl.Span(r.name, "ALLREDUCE", start, end)
		}
		return err
	}
	total := 0
	for _, r := range group {
		total += r.sig.n
	}
	fb, err := e.fusionBuffer(first.t.Device(), first.sig.wireType(), total)
	if err != nil {
		return err
	}
	views := make([]*tensor.Tensor, len(group))
	off := 0
	for i, r := range group {
		start := time.Now()
		part, err := device.SliceOf(fb, off, r.sig.n)
		if err != nil {
			return err
		}
		views[i] = tensor.FromBuffer(part, r.t.Shape()...)
		views[i].CopyFrom(r.t)
		off += r.sig.n
		tl.Span(r.name, "MEMCPY_IN_FUSION_BUFFER", start, time.Now())
	}
	buf := fb
	if total != buf.Len() {
		if buf, err = device.SliceOf(buf, 0, total); err != nil {
			return err
		}
	}
	start := time.Now()
	if total > 0 {
		err = e.comm.Allreduce(e.ctx, buf, first.sig.op)
	}
	end := time.Now()
	for _, r := range group {
		tl.Span(r.name, "ALLREDUCE", start, end)
	}
	if err != nil {
		return err
	}
	for i, r := range group {
		start := time.Now()
		r.t.CopyFrom(views[i])
		tl.Span(r.name, "MEMCPY_OUT_FUSION_BUFFER", start, time.Now())
	}
	return nil
}

// fusionBuffer returns a buffer of at least n elements for the device and
// type, growing the engine's buffer when needed.
func (e *Engine) fusionBuffer(dev device.Device, dt device.DType, n int) (device.Buffer, error) {
	k := fusionKey{dev, dt}
	if b := e.fusion[k]; b != nil && b.Len() >= n {
		return b, nil
	}
	b, err := dev.Alloc(dt, max(n, 1))
	if err != nil {
		return nil, fmt.Errorf("dist: fusion buffer of %d %v on %s: %w", n, dt, dev.Name(), err)
	}
	if old := e.fusion[k]; old != nil {
		old.Free()
	}
	e.fusion[k] = b
	return b, nil
}

// broadcast copies root's tensor into every rank's.
func (e *Engine) broadcast(r *request) error {
	start := time.Now()
	defer func() { e.cfg.Timeline.Span(r.name, "BROADCAST", start, time.Now()) }()
	if r.sig.n == 0 {
		return nil
	}
	if ownsBuffer(r.t) {
		return e.comm.Broadcast(e.ctx, r.t.Buffer(), r.sig.root)
	}
	c := r.t.Clone()
	if err := e.comm.Broadcast(e.ctx, c.Buffer(), r.sig.root); err != nil {
		return err
	}
	r.t.CopyFrom(c)
	return nil
}
