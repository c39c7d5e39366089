package liveness

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hora-dl/hora/dist"
)

// Config says how a Monitor watches.
type Config struct {
	// Timeout is how long a peer may stay silent before it is lost.
	Timeout time.Duration
	// Interval is the time between heartbeats; 0 means Timeout/10,
	// at most one second.
	Interval time.Duration
	// OnLost is called once, from the monitor's goroutine, with a
	// *LostError when the first peer is lost; it typically aborts the job.
	OnLost func(err error)
}

// LostError reports a peer that stopped answering.
type LostError struct {
	Rank   int           // the lost rank
	Host   string        // its host name
	Addr   string        // the address its heartbeats came from
	Silent time.Duration // how long it had been silent
	Closed bool          // its connection closed: the process ended
	Cause  error         // the error of the connection, if any
}

// Error describes the loss, naming the rank and its host.
func (e *LostError) Error() string {
	if e.Closed {
		return fmt.Sprintf("dist: rank %d on host %s (%s) closed its connection: the process ended", e.Rank, e.Host, e.Addr)
	}
	return fmt.Sprintf("dist: rank %d on host %s (%s) has not answered for %v: its host is unreachable or the rank is stopped",
		e.Rank, e.Host, e.Addr, e.Silent.Round(time.Second))
}

// Unwrap returns the connection's error.
func (e *LostError) Unwrap() error { return e.Cause }

// Monitor watches a job's peers until Close. It is a dist.PeerWatcher:
// set it as the engine's EngineConfig.Peers, and the engine's reports of
// a blocked collective name the ranks that stopped answering.
type Monitor struct {
	cfg     Config
	rank    int
	peers   []peer         // by rank; this rank's entry is empty
	start   time.Time      // the clock of heard
	heard   []atomic.Int64 // by rank: when the peer was last heard from, in nanoseconds since start
	lost    sync.Once
	done    chan struct{}
	senders sync.WaitGroup // the send goroutines
	mute    atomic.Bool    // tests: stop sending heartbeats, as a stopped process would
	wg      sync.WaitGroup // the watch goroutines
}

// peer is one other rank: where it is and the connection to it.
type peer struct {
	card card
	conn net.Conn
}

// card is what a rank tells the others about itself.
type card struct {
	Host  string   `json:"host"`
	Addrs []string `json:"addrs"` // host:port, most preferred first
}

// helloBytes is the token and the dialer's rank, sent first.
const helloBytes = 16

// The bytes of the connection after the hello.
const (
	heartbeat = 1 // I am alive
	goodbye   = 0 // I am done: my connection closes next
)

// Start connects this rank to every other rank of comm and starts
// watching them. It is collective. A communicator of one rank needs no
// watching: Start returns a Monitor that does nothing.
func Start(ctx context.Context, comm dist.Communicator, cfg Config) (*Monitor, error) {
	if cfg.Timeout <= 0 {
		return nil, fmt.Errorf("dist/liveness: timeout %v, expected > 0", cfg.Timeout)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = min(cfg.Timeout/10, time.Second)
	}
	if cfg.OnLost == nil {
		cfg.OnLost = func(error) {}
	}
	m := &Monitor{cfg: cfg, rank: comm.Rank(), done: make(chan struct{}), start: time.Now()}
	if comm.Size() == 1 {
		return m, nil
	}
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		ln = nil // the others learn it from an empty card, and every rank fails alike
	}
	token := make([]byte, 8)
	rand.Read(token)
	if token, err = dist.BroadcastBytes(ctx, comm, token, 0); err != nil {
		closeListener(ln)
		return nil, err
	}
	mine, _ := json.Marshal(myCard(ln))
	all, err := dist.AllgatherBytes(ctx, comm, mine)
	if err != nil {
		closeListener(ln)
		return nil, err
	}
	m.peers = make([]peer, comm.Size())
	for r, b := range all {
		if err := json.Unmarshal(b, &m.peers[r].card); err != nil {
			closeListener(ln)
			return nil, fmt.Errorf("dist/liveness: the address of rank %d: %w", r, err)
		}
	}
	connErr := m.connect(ln, token)
	closeListener(ln)
	// Every rank must know whether every connection was made.
	status, err := dist.AllgatherBytes(ctx, comm, []byte(errText(connErr)))
	if err != nil {
		m.closeConns()
		return nil, err
	}
	var problems []string
	for r, s := range status {
		if len(s) > 0 {
			problems = append(problems, fmt.Sprintf("rank %d on host %s: %s", r, m.peers[r].card.Host, s))
		}
	}
	if len(problems) > 0 {
		m.closeConns()
		return nil, fmt.Errorf("dist/liveness: the ranks could not connect to each other (a firewall between the hosts?): %s", strings.Join(problems, "; "))
	}
	m.heard = make([]atomic.Int64, len(m.peers))
	for r := range m.peers {
		m.heard[r].Store(int64(time.Since(m.start))) // connected: heard from now
	}
	for r := range m.peers {
		if r != m.rank {
			m.senders.Add(1)
			m.wg.Add(1)
			go m.send(r)
			go m.watch(r)
		}
	}
	return m, nil
}

func closeListener(ln net.Listener) {
	if ln != nil {
		ln.Close()
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// myCard lists the addresses at which ln can be reached.
func myCard(ln net.Listener) card {
	host, _ := os.Hostname()
	c := card{Host: host}
	if ln == nil {
		return c
	}
	port := ln.Addr().(*net.TCPAddr).Port
	addrs, _ := net.InterfaceAddrs()
	var loop []string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLinkLocalUnicast() || ipn.IP.IsMulticast() {
			continue
		}
		hp := net.JoinHostPort(ipn.IP.String(), fmt.Sprint(port))
		if ipn.IP.IsLoopback() {
			loop = append(loop, hp)
		} else {
			c.Addrs = append(c.Addrs, hp)
		}
	}
	c.Addrs = append(c.Addrs, loop...)
	return c
}

// connect dials the ranks above this one and accepts those below, within
// the timeout.
func (m *Monitor) connect(ln net.Listener, token []byte) error {
	if ln == nil {
		return errors.New("cannot listen on a TCP port")
	}
	deadline := time.Now().Add(m.cfg.Timeout)
	var errs []string
	for r := m.rank + 1; r < len(m.peers); r++ {
		conn, err := m.dial(r, token, deadline)
		if err != nil {
			errs = append(errs, fmt.Sprintf("cannot reach rank %d on host %s at %s: %v", r, m.peers[r].card.Host, strings.Join(m.peers[r].card.Addrs, ", "), err))
			continue
		}
		m.peers[r].conn = conn
	}
	ln.(*net.TCPListener).SetDeadline(deadline)
	for waiting := m.rank; waiting > 0; {
		conn, err := ln.Accept()
		if err != nil {
			var missing []string
			for r := range m.rank {
				if m.peers[r].conn == nil {
					missing = append(missing, fmt.Sprint(r))
				}
			}
			errs = append(errs, fmt.Sprintf("no connection from ranks %s within %v", strings.Join(missing, ", "), m.cfg.Timeout))
			break
		}
		r, ok := readHello(conn, token, deadline)
		if !ok || r < 0 || r >= m.rank || m.peers[r].conn != nil {
			conn.Close() // not one of ours
			continue
		}
		m.peers[r].conn = conn
		waiting--
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// dial connects to rank r at the first of its addresses that answers.
func (m *Monitor) dial(r int, token []byte, deadline time.Time) (net.Conn, error) {
	addrs := m.peers[r].card.Addrs
	if len(addrs) == 0 {
		return nil, errors.New("it has no address")
	}
	var last error
	for time.Now().Before(deadline) {
		for _, a := range addrs {
			conn, err := net.DialTimeout("tcp", a, min(time.Until(deadline), 2*time.Second))
			if err != nil {
				last = err
				continue
			}
			hello := make([]byte, helloBytes)
			copy(hello, token)
			binary.LittleEndian.PutUint64(hello[8:], uint64(m.rank))
			conn.SetWriteDeadline(deadline)
			if _, err := conn.Write(hello); err != nil {
				conn.Close()
				last = err
				continue
			}
			conn.SetWriteDeadline(time.Time{})
			return conn, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, last
}

// readHello reads a dialer's token and rank.
func readHello(conn net.Conn, token []byte, deadline time.Time) (int, bool) {
	conn.SetReadDeadline(deadline)
	hello := make([]byte, helloBytes)
	if _, err := io.ReadFull(conn, hello); err != nil || !slices.Equal(hello[:8], token) {
		return -1, false
	}
	conn.SetReadDeadline(time.Time{})
	return int(binary.LittleEndian.Uint64(hello[8:])), true
}

// send writes a heartbeat to rank r every Interval until Close.
func (m *Monitor) send(r int) {
	defer m.senders.Done()
	conn := m.peers[r].conn
	tick := time.NewTicker(m.cfg.Interval)
	defer tick.Stop()
	beat := []byte{heartbeat}
	for {
		select {
		case <-m.done:
			// Say goodbye, so that the peer does not take the closing
			// connection for a death.
			conn.SetWriteDeadline(time.Now().Add(time.Second))
			conn.Write([]byte{goodbye})
			return
		case <-tick.C:
		}
		if m.mute.Load() {
			continue
		}
		// A peer that stopped reading fills the socket's buffer; a
		// write that cannot finish within the timeout is dropped (the
		// watcher reports the silence).
		conn.SetWriteDeadline(time.Now().Add(m.cfg.Timeout))
		if _, err := conn.Write(beat); err != nil {
			return
		}
	}
}

// watch reads rank r's heartbeats and reports the loss when none comes
// within the timeout or the connection ends.
func (m *Monitor) watch(r int) {
	defer m.wg.Done()
	p := m.peers[r]
	buf := make([]byte, 64)
	last := time.Now()
	for {
		p.conn.SetReadDeadline(time.Now().Add(m.cfg.Timeout))
		n, err := p.conn.Read(buf)
		select {
		case <-m.done:
			return
		default:
		}
		if err == nil {
			if slices.Contains(buf[:n], goodbye) {
				return // the peer is done
			}
			last = time.Now()
			m.heard[r].Store(int64(last.Sub(m.start)))
			continue
		}
		lost := &LostError{Rank: r, Host: p.card.Host, Addr: p.conn.RemoteAddr().String(), Silent: time.Since(last), Cause: err}
		var ne net.Error
		lost.Closed = !(errors.As(err, &ne) && ne.Timeout())
		m.lost.Do(func() { m.cfg.OnLost(lost) })
		return
	}
}

var _ dist.PeerWatcher = (*Monitor)(nil)

// Silent returns, in rank order, the peers from which nothing has come
// for at least d and at least two heartbeat intervals (a peer whose
// heartbeats come on time is never silent), with their host and
// how long they have been silent. A peer that ended (said goodbye, or its
// connection closed) stays silent since its last heartbeat. It is safe
// for concurrent use, and returns nil on a one-rank job.
func (m *Monitor) Silent(d time.Duration) []dist.SilentPeer {
	d = max(d, 2*m.cfg.Interval)
	now := time.Since(m.start)
	var silent []dist.SilentPeer
	for r := range m.heard {
		if r == m.rank {
			continue
		}
		if s := now - time.Duration(m.heard[r].Load()); s >= d {
			silent = append(silent, dist.SilentPeer{Rank: r, Host: m.peers[r].card.Host, Silent: s})
		}
	}
	return silent
}

// Close stops watching and closes the connections. The peers see their
// connection to this rank close, so every rank should Close only when
// the job is done (or failing anyway).
func (m *Monitor) Close() error {
	select {
	case <-m.done:
		return nil
	default:
	}
	close(m.done)
	m.senders.Wait() // the goodbyes are sent
	m.closeConns()
	m.wg.Wait()
	return nil
}

func (m *Monitor) closeConns() {
	for _, p := range m.peers {
		if p.conn != nil {
			p.conn.Close()
		}
	}
}
