package cpu

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestPacerEnds checks that a polling loop paced by pacer ends once
// spinTime has passed, and not much later, crowded or not.
func TestPacerEnds(t *testing.T) {
	for _, crowded := range []bool{false, true} {
		var p workerPool
		p.crowded.Store(crowded)
		start := time.Now()
		pace := p.newPacer()
		polls := 0
		for pace.goOn(polls) {
			polls++
		}
		took := time.Since(start)
		if took < spinTime || took > time.Second {
			t.Errorf("crowded=%v: the loop ended after %v (%d polls), want about %v", crowded, took, polls, spinTime)
		}
	}
}

// TestPacerSeesSharedCPU checks when polling threads yield their CPU: not
// on a pool that has not seen a poller off its CPU, from a gap of more
// than offCPUGap between a loop's clock readings (a poller the OS set
// aside) until contendedFor after it.
func TestPacerSeesSharedCPU(t *testing.T) {
	var p workerPool
	now := time.Now()
	if p.sharedCPU(now) {
		t.Fatal("a new pool counts as sharing its CPUs")
	}
	pace := p.newPacer()
	for i := range 64 {
		pace.goOn(i) // the first reading
	}
	pace.last = pace.last.Add(-2 * offCPUGap) // as if the thread had been off its CPU
	for i := 64; i < 128; i++ {
		pace.goOn(i)
	}
	now = time.Now()
	if !p.sharedCPU(now) {
		t.Fatalf("a gap of %v between readings was not taken for a shared CPU", 2*offCPUGap)
	}
	if p.sharedCPU(now.Add(contendedFor + time.Millisecond)) {
		t.Fatalf("the pool still yields %v after the gap", contendedFor+time.Millisecond)
	}
}

// TestAwaitRunsQueuedChunks checks that a caller waiting for its call runs
// the chunks still queued (here: all of them, no worker takes any) and
// returns once the last one has run, with the call's done token taken.
func TestAwaitRunsQueuedChunks(t *testing.T) {
	p := workerPool{jobs: make(chan job, 8)}
	c := calls.Get().(*call)
	ran := 0
	f := funcTask(func(lo, hi int) { ran += hi - lo })
	c.state.Store(3)
	for i := range 3 {
		p.jobs <- job{t: f, lo: i, hi: i + 1, c: c}
	}
	p.await(c)
	if ran != 3 {
		t.Fatalf("ran %d chunks, want 3", ran)
	}
	select {
	case <-c.done:
		t.Fatal("await left the call's done token behind")
	default:
	}
}

// TestAwaitSleepsUntilLastChunk checks the caller that stops polling: a
// chunk running elsewhere ends after spinTime, and await returns once it
// has, woken by the chunk's send on done, which it takes; a call whose
// chunks end while the caller still polls leaves no token either.
func TestAwaitSleepsUntilLastChunk(t *testing.T) {
	p := workerPool{jobs: make(chan job, 8)}
	for _, delay := range []time.Duration{0, 3 * spinTime} {
		c := calls.Get().(*call)
		var ran atomic.Bool
		f := funcTask(func(lo, hi int) { ran.Store(true) })
		c.state.Store(1)
		go func() {
			time.Sleep(delay)
			job{t: f, lo: 0, hi: 1, c: c}.run()
		}()
		p.await(c)
		if !ran.Load() {
			t.Fatalf("delay %v: await returned before the chunk ran", delay)
		}
		if n := c.state.Load(); n != 0 && n != asleep {
			t.Fatalf("delay %v: state %#x after await", delay, n)
		}
		select {
		case <-c.done:
			t.Fatalf("delay %v: await left the call's done token behind", delay)
		default:
		}
	}
}

// spinTask busies its goroutine for per of work per index.
type spinTask struct{ per time.Duration }

func (s *spinTask) run(lo, hi int) {
	end := time.Now().Add(time.Duration(hi-lo) * s.per)
	for time.Now().Before(end) {
	}
}

// BenchmarkHandoff times parallel calls split in two: of no work (the
// hand-off alone) and of 20 µs (10 µs per goroutine at best).
func BenchmarkHandoff(b *testing.B) {
	d := New()
	d.SetThreads(2)
	for _, per := range []time.Duration{0, time.Microsecond} {
		b.Run(per.String(), func(b *testing.B) {
			t := &spinTask{per}
			for b.Loop() {
				d.parallel(20, 1<<20, t)
			}
		})
	}
}
