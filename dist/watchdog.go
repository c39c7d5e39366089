package dist

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Blocked collectives: the stall check of negotiate.go runs when a round
// completes, so it cannot see a rank that stopped answering (SIGSTOP, a
// host whose link went down): the others then wait in a collective that
// never returns. The engine's watchdog goroutine watches how long the
// engine's goroutine has been in its current collective, warns after
// StallWarning and, after StallShutdown, fails every operation with a
// *StallError without waiting for the collective.

// SilentPeer is another rank that this rank has not heard from for a
// while.
type SilentPeer struct {
	Rank   int           // the peer's rank
	Host   string        // its host name
	Silent time.Duration // how long since it was last heard from
}

// PeerWatcher knows which ranks have stopped answering (dist/liveness's
// Monitor is one); EngineConfig.Peers takes one so that the reports of
// a blocked collective name them.
type PeerWatcher interface {
	// Silent returns, in rank order, the other ranks not heard from for
	// at least d. It must be safe to call from any goroutine.
	Silent(d time.Duration) []SilentPeer
}

// negotiationRound is the op of blockWatch.enter for a negotiation round.
const negotiationRound = "negotiation"

// blockWatch records which collective the engine's goroutine is in, and
// since when, for the watchdog.
type blockWatch struct {
	mu    sync.Mutex
	armed bool      // a round has completed: every rank's engine runs
	op    string    // negotiationRound, "allreduce" or "broadcast"
	name  string    // the first tensor of the collective
	more  int       // the other tensors fused with it
	since time.Time // when the collective started; zero outside one
}

// enter records that the engine's goroutine starts a collective. Before
// the first round has completed it records nothing: that round waits for
// every rank to start its engine, which may take long (a rank still
// loading its data), and dist/liveness watches the ranks meanwhile.
func (b *blockWatch) enter(op, name string, more int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.armed {
		b.op, b.name, b.more, b.since = op, name, more, time.Now()
	}
}

// leave records that the collective has returned.
func (b *blockWatch) leave() {
	b.mu.Lock()
	b.since = time.Time{}
	b.mu.Unlock()
}

// arm starts the watch: the ranks have met.
func (b *blockWatch) arm() {
	b.mu.Lock()
	b.armed = true
	b.mu.Unlock()
}

// current describes the collective the engine's goroutine is in and
// returns when it started, or a zero time when it is in none.
func (b *blockWatch) current() (what string, since time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.since.IsZero():
		return "", b.since
	case b.op == negotiationRound:
		return "a negotiation round", b.since
	case b.more > 0:
		return fmt.Sprintf("the %s of %s and %d more tensors", b.op, b.name, b.more), b.since
	}
	return fmt.Sprintf("the %s of %s", b.op, b.name), b.since
}

// watchPeriod is the time between two looks of the watchdog: a tenth of
// the shortest limit, between 10ms and one second.
func (c EngineConfig) watchPeriod() time.Duration {
	d := c.StallWarning
	if c.StallShutdown > 0 {
		d = min(d, c.StallShutdown)
	}
	return min(max(d/10, 10*time.Millisecond), time.Second)
}

// watch is the engine's watchdog goroutine: it warns when the engine's
// goroutine has waited StallWarning in one collective, and gives up on
// the engine after StallShutdown. It ends with the engine.
func (e *Engine) watch() {
	tick := time.NewTicker(e.cfg.watchPeriod())
	defer tick.Stop()
	var warnedFor, lastWarn time.Time // the collective last warned about, and when
	for {
		var now time.Time
		select {
		case <-e.stopped:
			return
		case now = <-tick.C:
		}
		what, since := e.blocked.current()
		if since.IsZero() {
			continue
		}
		waited := now.Sub(since)
		warn := waited >= e.cfg.StallWarning && (since != warnedFor || now.Sub(lastWarn) >= e.cfg.StallWarning)
		shutdown := e.cfg.StallShutdown > 0 && waited >= e.cfg.StallShutdown
		if !warn && !shutdown {
			continue
		}
		var silent []SilentPeer
		if e.cfg.Peers != nil {
			// A stopped peer has been silent about as long as the wait;
			// the others answer every heartbeat interval.
			silent = e.cfg.Peers.Silent(waited / 2)
		}
		report := blockedReport(e.Rank(), what, waited, silent, e.cfg.Peers != nil)
		if warn && e.reports(silent) {
			warnedFor, lastWarn = since, now
			fmt.Fprintf(e.cfg.Log, "dist: stall: %s\n", report)
			if e.cfg.StallShutdown > 0 {
				fmt.Fprintf(e.cfg.Log, "dist: the job stops if the wait lasts %v\n", e.cfg.StallShutdown)
			}
		}
		if shutdown {
			e.abandon(&StallError{Waited: waited, Report: report})
			return
		}
	}
}

// reports says whether this rank prints the warnings about a blocked
// collective: rank 0, or the lowest rank that is not silent.
func (e *Engine) reports(silent []SilentPeer) bool {
	below := 0
	for _, p := range silent {
		if p.Rank < e.Rank() {
			below++
		}
	}
	return below == e.Rank()
}

// blockedReport says how long this rank has waited in which collective,
// and who has not answered: the silent peers, when a PeerWatcher
// (watched) knows them.
func blockedReport(rank int, what string, waited time.Duration, silent []SilentPeer, watched bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rank %d has waited %v for the other ranks in %s; ", rank, approx(waited), what)
	switch {
	case len(silent) > 0:
		b.WriteString("not answering: ")
		for i, p := range silent {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "rank %d on host %s (silent for %v)", p.Rank, p.Host, approx(p.Silent))
		}
	case watched:
		b.WriteString("every rank still sends heartbeats, but some rank has not joined it (its engine is blocked, or the collective is slow)")
	default:
		b.WriteString("some rank has not joined it (stopped, or its host unreachable)")
	}
	return b.String()
}

// approx rounds a duration for a report: to the millisecond below one
// second, to the tenth of a second above.
func approx(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// abandon stops the engine while its goroutine is blocked in a
// collective: the pending and later operations fail with err at once.
// The goroutine leaves the collective when Close cancels it, if the
// transport can.
func (e *Engine) abandon(err error) {
	e.mu.Lock()
	if e.err != nil { // stopped meanwhile
		e.mu.Unlock()
		return
	}
	e.err = err
	pending := make([]*request, 0, len(e.names))
	for _, r := range e.names {
		pending = append(pending, r)
	}
	clear(e.names)
	e.mu.Unlock()
	close(e.abandoned)
	for _, r := range pending {
		r.h.finish(err)
	}
}

// lockedWriter serializes the writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
