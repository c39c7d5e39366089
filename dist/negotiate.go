package dist

import (
	"context"
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
)

// Negotiation: in each round every rank's engine tells all the others, with
// one or two Allgathers of int64 words, which tensors it has submitted and
// is waiting on; every rank then computes the same answer from the same
// data: the names every rank has submitted (ready), in one agreed order.
//
// Names seen before get a number (an id, the same on all ranks, since it is
// assigned from agreed data), and a round sends them as one bit each. New
// names travel in full, with their signature, in a second Allgather that
// only runs when some rank has a new name.
//
// The first Allgather carries, per rank, the header words below followed
// by the bit vector of ids.
const (
	hdrFlags    = iota // flagClosing | flagShutdown
	hdrPayload         // words of new names this rank sends in the second Allgather
	hdrCacheLen        // ids known to this rank: all ranks must agree
	hdrWords
)

const (
	flagClosing  = 1 // this rank's engine wants to stop
	flagShutdown = 2 // rank 0 decided a stall has lasted too long
)

// maxNameLen bounds a tensor name, in bytes.
const maxNameLen = 1024

// maxCached bounds the number of names given an id; later new names are
// always negotiated in full.
const maxCached = 1 << 16

type cacheEntry struct {
	name string
	sig  signature
}

// negotiator is the engine's negotiation state; only the engine's
// goroutine uses it.
type negotiator struct {
	comm       Communicator
	cfg        EngineConfig
	rank, size int
	pending    []*request // submitted here, not yet ready, in submission order
	cache      []cacheEntry
	ids        map[string]int

	hdr, hdrAll *cpu.Buffer

	stallSince map[string]time.Time // when a name was first seen on some ranks only
	lastWarn   time.Time
	shutdown   bool // rank 0: ask the others to stop in the next round
}

func newNegotiator(c Communicator, cfg EngineConfig) *negotiator {
	return &negotiator{comm: c, cfg: cfg, rank: c.Rank(), size: c.Size(),
		ids: map[string]int{}, stallSince: map[string]time.Time{}}
}

func (n *negotiator) add(rs []*request) { n.pending = append(n.pending, rs...) }

func (n *negotiator) waiting() bool { return len(n.pending) > 0 }

func (n *negotiator) drain() []*request {
	rs := n.pending
	n.pending = nil
	return rs
}

// failure is a request that fails on every rank that submitted it.
type failure struct {
	r   *request
	err error
}

// roundResult is what a round decided, identically on every rank.
type roundResult struct {
	ready      []*request // this rank's requests to run now, in the agreed order
	failed     []failure  // this rank's requests that cannot run (mismatch)
	allClosing bool       // every rank wants to stop
	shutdown   error      // a *StallError when rank 0 gave up
}

// entry is what the ranks said about one name in a round.
type entry struct {
	name  string
	sigs  []signature // per rank
	has   []bool      // per rank: submitted
	id    int         // cache id, or -1
	order int         // first appearance: rank 0's entries first
	nHas  int         // ranks that submitted it
	local *request    // this rank's request, if any
}

// int64Buffer returns b when it has n elements, else a new CPU buffer.
func int64Buffer(b *cpu.Buffer, n int) *cpu.Buffer {
	if b != nil && b.Len() == n {
		return b
	}
	nb, err := cpu.Default().Alloc(device.Int64, n)
	if err != nil {
		panic(err) // n ≥ 0 always
	}
	return nb.(*cpu.Buffer)
}

// round runs one negotiation round. Every rank announces what it has
// pending in a header (writeHeader), and the ranks gather all headers;
// each rank reads them (readHeaders, readIDs) and, when some rank has new
// names, gathers those (gatherNew). From this data, the same on every
// rank, each rank decides what runs and in which order (classify,
// sortReady), gives new names ids (learn), drops what was decided from
// its pending list (dropDecided) and watches for stalls (checkStall).
func (n *negotiator) round(ctx context.Context, closing bool) (roundResult, error) {
	payload := n.writeHeader(closing)
	if err := n.comm.Allgather(ctx, n.hdrAll, n.hdr); err != nil {
		return roundResult{}, fmt.Errorf("dist: negotiation: %w", err)
	}
	hs, err := n.readHeaders()
	if err != nil {
		return roundResult{}, err
	}
	m := newMentions(n.size)
	if err := n.readIDs(m, hs.per); err != nil {
		return roundResult{}, err
	}
	if hs.maxPayload > 0 {
		if err := n.gatherNew(ctx, m, payload, hs.maxPayload); err != nil {
			return roundResult{}, err
		}
	}
	m.markLocal(n.pending)

	now := time.Now()
	ready, failed, partial := n.classify(m)
	res := roundResult{failed: failed, allClosing: hs.allClosing}
	sortReady(ready)
	n.learn(ready)
	for _, e := range ready {
		if e.local != nil {
			res.ready = append(res.ready, e.local)
		}
	}
	n.dropDecided(res)
	n.checkStall(partial, now)
	if hs.shutdown {
		res.shutdown = n.stallError(partial, now)
	}
	return res, nil
}

// writeHeader sizes the round's header buffers and fills this rank's
// header: its flags, the number of ids it knows, and one bit per pending
// name that has an id (with the same signature). It returns the other
// pending names, encoded for gatherNew.
func (n *negotiator) writeHeader(closing bool) (payload []int64) {
	per := hdrWords + (len(n.cache)+63)/64
	n.hdr = int64Buffer(n.hdr, per)
	n.hdrAll = int64Buffer(n.hdrAll, per*n.size)
	h := n.hdr.Int64s()
	clear(h)
	if closing {
		h[hdrFlags] |= flagClosing
	}
	if n.shutdown {
		h[hdrFlags] |= flagShutdown
	}
	h[hdrCacheLen] = int64(len(n.cache))
	for _, r := range n.pending {
		if id, ok := n.ids[r.name]; ok && n.cache[id].sig == r.sig {
			h[hdrWords+id/64] |= 1 << (id % 64)
			continue
		}
		payload = appendEntry(payload, r.name, r.sig)
	}
	h[hdrPayload] = int64(len(payload))
	return payload
}

// headers is what the gathered headers say about the round as a whole.
type headers struct {
	per        int  // words per rank
	maxPayload int  // the most words of new names a rank sends
	allClosing bool // every rank wants to stop
	shutdown   bool // rank 0 asks every rank to stop
}

// readHeaders checks that every rank knows as many ids as this one (the
// engines are in step) and sums up the gathered headers.
func (n *negotiator) readHeaders() (headers, error) {
	hs := headers{per: n.hdr.Len(), allClosing: true}
	all := n.hdrAll.Int64s()
	for r := range n.size {
		h := all[r*hs.per : (r+1)*hs.per]
		if h[hdrCacheLen] != int64(len(n.cache)) {
			return hs, fmt.Errorf("dist: negotiation: rank %d knows %d tensor names, rank %d knows %d: the engines are out of step",
				r, h[hdrCacheLen], n.rank, len(n.cache))
		}
		hs.allClosing = hs.allClosing && h[hdrFlags]&flagClosing != 0
		hs.maxPayload = max(hs.maxPayload, int(h[hdrPayload]))
	}
	hs.shutdown = all[hdrFlags]&flagShutdown != 0 // rank 0's word
	return hs, nil
}

// mentions is every name mentioned in a round, by id or in full, with
// what each rank said about it.
type mentions struct {
	size   int
	byName map[string]*entry
	list   []*entry // in order of first appearance
}

func newMentions(size int) *mentions {
	return &mentions{size: size, byName: map[string]*entry{}}
}

// get returns the entry of name, adding it if it is new.
func (m *mentions) get(name string) *entry {
	e := m.byName[name]
	if e == nil {
		e = &entry{name: name, sigs: make([]signature, m.size), has: make([]bool, m.size), id: -1, order: len(m.list)}
		m.byName[name] = e
		m.list = append(m.list, e)
	}
	return e
}

// markLocal links each entry to this rank's request for its name.
func (m *mentions) markLocal(pending []*request) {
	for _, r := range pending {
		if e := m.byName[r.name]; e != nil {
			e.local = r
		}
	}
}

// readIDs records the names each rank sent by id, from the bit vectors
// of the gathered headers (per words each).
func (n *negotiator) readIDs(m *mentions, per int) error {
	all := n.hdrAll.Int64s()
	for r := range n.size {
		vec := all[r*per+hdrWords : (r+1)*per]
		for w, word := range vec {
			for word != 0 {
				b := bits.TrailingZeros64(uint64(word))
				word &^= 1 << b
				id := w*64 + b
				if id >= len(n.cache) {
					return fmt.Errorf("dist: negotiation: rank %d sent unknown tensor id %d", r, id)
				}
				c := n.cache[id]
				e := m.get(c.name)
				e.id = id
				e.sigs[r], e.has[r] = c.sig, true
			}
		}
	}
	return nil
}

// gatherNew runs the round's second Allgather, of every rank's payload
// (its new names in full) padded to maxPayload words, and records the
// names each rank sent.
func (n *negotiator) gatherNew(ctx context.Context, m *mentions, payload []int64, maxPayload int) error {
	pay := int64Buffer(nil, maxPayload)
	payAll := int64Buffer(nil, maxPayload*n.size)
	copy(pay.Int64s(), payload)
	if err := n.comm.Allgather(ctx, payAll, pay); err != nil {
		return fmt.Errorf("dist: negotiation: %w", err)
	}
	pa := payAll.Int64s()
	for r := range n.size {
		p := pa[r*maxPayload : (r+1)*maxPayload]
		for len(p) > 0 && p[0] != 0 {
			name, sig, rest, err := readEntry(p)
			if err != nil {
				return fmt.Errorf("dist: negotiation: from rank %d: %w", r, err)
			}
			p = rest
			e := m.get(name)
			if e.has[r] {
				return fmt.Errorf("dist: negotiation: rank %d sent %q twice", r, name)
			}
			e.sigs[r], e.has[r] = sig, true
		}
	}
	return nil
}

// classify sorts the round's names into those every rank submitted
// (ready, in order of appearance), those the ranks disagree on (failed:
// this rank's requests for them) and those some ranks have not submitted
// yet (partial).
func (n *negotiator) classify(m *mentions) (ready []*entry, failed []failure, partial map[string]*entry) {
	partial = map[string]*entry{}
	for _, e := range m.list {
		for r := range n.size {
			if e.has[r] {
				e.nHas++
			}
		}
		if msg := mismatch(e); msg != "" {
			if e.local != nil {
				failed = append(failed, failure{e.local, fmt.Errorf("dist: tensor %s: %s", e.name, msg)})
			}
			continue
		}
		if e.nHas == n.size {
			ready = append(ready, e)
			continue
		}
		partial[e.name] = e
	}
	return ready, failed, partial
}

// sortReady puts the ready names in the order every rank runs them:
// names known by id first, in id order (the order in which they were
// first negotiated); new names follow in order of appearance.
func sortReady(ready []*entry) {
	sort.SliceStable(ready, func(i, j int) bool {
		a, b := ready[i], ready[j]
		if (a.id >= 0) != (b.id >= 0) {
			return a.id >= 0
		}
		if a.id >= 0 {
			return a.id < b.id
		}
		return a.order < b.order
	})
}

// learn gives the ready names that came in full an id, while there is
// room in the cache, so that later rounds send them as one bit. A name
// that has an id already, with another signature, keeps its id and
// takes the new signature.
func (n *negotiator) learn(ready []*entry) {
	for _, e := range ready {
		if e.id >= 0 || len(n.cache) >= maxCached {
			continue
		}
		if id, known := n.ids[e.name]; known {
			n.cache[id].sig = e.sigs[0] // the newest signature wins the id
			continue
		}
		n.ids[e.name] = len(n.cache)
		n.cache = append(n.cache, cacheEntry{e.name, e.sigs[0]})
	}
}

// dropDecided removes the requests that res runs or fails from the
// pending list.
func (n *negotiator) dropDecided(res roundResult) {
	done := map[*request]bool{}
	for _, r := range res.ready {
		done[r] = true
	}
	for _, f := range res.failed {
		done[f.r] = true
	}
	n.pending = slices.DeleteFunc(n.pending, func(r *request) bool { return done[r] })
}

// stallError is the error of the round in which rank 0 gave up on the
// partial names: how long the oldest has waited, and who is missing what.
func (n *negotiator) stallError(partial map[string]*entry, now time.Time) *StallError {
	oldest := time.Duration(0)
	for name := range partial {
		oldest = max(oldest, now.Sub(n.stallSince[name]))
	}
	return &StallError{Waited: oldest, Report: stallReport(partial, n.size)}
}

// mismatch returns why the ranks' signatures for e disagree, or "".
func mismatch(e *entry) string {
	first := -1
	for r, ok := range e.has {
		if !ok {
			continue
		}
		if first < 0 {
			first = r
			continue
		}
		if e.sigs[r] != e.sigs[first] {
			return fmt.Sprintf("rank %d submitted %v, rank %d submitted %v", first, e.sigs[first], r, e.sigs[r])
		}
	}
	return ""
}

// checkStall tracks names submitted by some ranks only: rank 0 reports
// them after StallWarning and asks every rank to stop after StallShutdown.
func (n *negotiator) checkStall(partial map[string]*entry, now time.Time) {
	for name := range n.stallSince {
		if partial[name] == nil {
			delete(n.stallSince, name)
		}
	}
	if n.cfg.StallWarning <= 0 || len(partial) == 0 {
		return
	}
	oldest := time.Duration(0)
	for name := range partial {
		since, ok := n.stallSince[name]
		if !ok {
			n.stallSince[name] = now
			since = now
		}
		oldest = max(oldest, now.Sub(since))
	}
	if n.rank != 0 || oldest < n.cfg.StallWarning {
		return
	}
	if now.Sub(n.lastWarn) >= n.cfg.StallWarning {
		n.lastWarn = now
		fmt.Fprintf(n.cfg.Log, "dist: stall: tensors submitted by some ranks have waited up to %v for the others:\n%s",
			oldest.Round(time.Millisecond), stallReport(partial, n.size))
		if n.cfg.StallShutdown > 0 {
			fmt.Fprintf(n.cfg.Log, "dist: the job stops if the stall lasts %v\n", n.cfg.StallShutdown)
		}
	}
	if n.cfg.StallShutdown > 0 && oldest >= n.cfg.StallShutdown {
		n.shutdown = true
	}
}

// stallReport lists, for each rank that is missing tensors, their names
// and which ranks did submit them.
func stallReport(partial map[string]*entry, size int) string {
	missing := make([][]string, size)
	for name, e := range partial {
		for r, ok := range e.has {
			if !ok {
				missing[r] = append(missing[r], name)
			}
		}
	}
	var b strings.Builder
	for r, names := range missing {
		if len(names) == 0 {
			continue
		}
		sort.Strings(names)
		more := ""
		if len(names) > 8 {
			more = fmt.Sprintf(" and %d more", len(names)-8)
			names = names[:8]
		}
		var by []string
		for q, ok := range partial[names[0]].has {
			if ok {
				by = append(by, fmt.Sprint(q))
			}
		}
		fmt.Fprintf(&b, "  rank %d has not submitted %s%s (submitted by rank %s)\n",
			r, strings.Join(names, ", "), more, strings.Join(by, ", "))
	}
	return b.String()
}

// appendEntry encodes a new name and its signature as int64 words:
// [kind|dtype|op|compress|root, n, len(name), name bytes packed 8 a word].
func appendEntry(p []int64, name string, s signature) []int64 {
	c := int64(0)
	if s.compress {
		c = 1
	}
	head := int64(s.kind) | int64(s.dtype)<<8 | int64(s.op)<<16 | c<<24 | int64(s.root+1)<<32
	p = append(p, head, int64(s.n), int64(len(name)))
	for i := 0; i < len(name); i += 8 {
		var w int64
		for j := 0; j < 8 && i+j < len(name); j++ {
			w |= int64(name[i+j]) << (8 * j)
		}
		p = append(p, w)
	}
	return p
}

// readEntry decodes one entry written by appendEntry.
func readEntry(p []int64) (name string, s signature, rest []int64, err error) {
	if len(p) < 3 {
		return "", s, nil, fmt.Errorf("truncated entry")
	}
	head, n, l := p[0], p[1], p[2]
	if l <= 0 || l > maxNameLen || n < 0 {
		return "", s, nil, fmt.Errorf("bad entry (name length %d, %d elements)", l, n)
	}
	w := int((l + 7) / 8)
	if len(p) < 3+w {
		return "", s, nil, fmt.Errorf("truncated name")
	}
	b := make([]byte, l)
	for i := range b {
		b[i] = byte(p[3+i/8] >> (8 * (i % 8)))
	}
	s = signature{
		kind:     opKind(head & 0xff),
		dtype:    device.DType(head >> 8 & 0xff),
		op:       ReduceOp(head >> 16 & 0xff),
		compress: head>>24&1 == 1,
		root:     int(head>>32) - 1,
		n:        int(n),
	}
	return string(b), s, p[3+w:], nil
}
