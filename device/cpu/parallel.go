package cpu

import (
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hora-dl/hora/device/cpu/internal/x86"
)

// task is a piece of parallel work over an index range. Hot kernels
// implement it on pooled structs so that starting them allocates nothing;
// other kernels pass a closure (funcTask).
type task interface{ run(lo, hi int) }

// funcTask adapts a closure to task.
type funcTask func(lo, hi int)

func (f funcTask) run(lo, hi int) { f(lo, hi) }

// call tracks the chunks of one parallel call that are still running:
// state holds their number, plus asleep once the caller has stopped
// polling for it to reach 0 and waits on done, which the last chunk then
// sends on (a caller still polling needs no send: it sees state reach 0).
type call struct {
	state atomic.Int64
	done  chan struct{}
}

// asleep is the bit of call.state that says the caller waits on done.
const asleep = 1 << 32

// calls recycles call states, so a parallel call allocates nothing.
var calls = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// job is one chunk of a task.
type job struct {
	t      task
	lo, hi int
	c      *call
}

func (j job) run() {
	j.t.run(j.lo, j.hi)
	if j.c.state.Add(-1) == asleep {
		j.c.done <- struct{}{}
	}
}

// workerPool is the device's one set of worker goroutines: GOMAXPROCS-1
// long-lived goroutines plus the calling goroutine. BLAS libraries are
// loaded single-threaded and called from these goroutines, so the machine
// never runs more busy threads than cores.
type workerPool struct {
	once sync.Once
	jobs chan job
	// crowded is set while the device splits work over more goroutines
	// than GOMAXPROCS: then a polling goroutine holds a P that a worker
	// with a chunk needs, and it yields after every few polls (pacer).
	crowded atomic.Bool
	// sharedUntil is when (since pollEpoch, in nanoseconds) polling
	// threads stop yielding their CPU to other threads (see pacer).
	sharedUntil atomic.Int64
}

func (p *workerPool) start(n int) {
	p.once.Do(func() {
		p.jobs = make(chan job, 4*(n+1))
		for range n {
			go p.work()
		}
	})
}

// spinTime is how long an idle worker keeps polling for the next job
// before it sleeps, and how long a caller polls for its call's last chunks
// before it sleeps. Training runs kernels back to back, a few tens of
// microseconds apart; a sleeping goroutine takes about as long to wake,
// so without spinning the calling goroutine would find the second half of
// a kernel still queued and run it itself. (OpenMP runtimes spin for the
// same reason.)
const spinTime = 200 * time.Microsecond

// work runs jobs until the process ends.
func (p *workerPool) work() {
	for {
		select {
		case j := <-p.jobs:
			j.run()
			continue
		default:
		}
		if j, ok := p.spin(); ok {
			j.run()
			continue
		}
		j := <-p.jobs
		j.run()
	}
}

// spin polls for a job for up to spinTime.
func (p *workerPool) spin() (job, bool) {
	pace := p.newPacer()
	for i := 0; ; i++ {
		select {
		case j := <-p.jobs:
			return j, true
		default:
		}
		if !pace.goOn(i) {
			return job{}, false
		}
	}
}

// yieldGap is how often a polling goroutine lets others run on its P
// (runtime.Gosched) while the pool is not crowded: often enough that a
// goroutine with other work (the data-parallel engine, the data loader)
// waits at most this long for a P, rare enough that the scheduler's lock
// stays free. Gosched puts the goroutine on the scheduler's global queue
// under that one lock: when every worker yielded after each 64 polls, 15
// workers spinning on 16 cores held it half of the machine's time (CPU
// profiles of the zoo's training steps on a 16-core Xeon: runtime.lock2
// 24–49%, the Transformer's step no faster than on 2 cores).
const yieldGap = 50 * time.Microsecond

// pacer paces a polling loop: it ends it after spinTime and yields the P
// every yieldGap, or after every 64 polls while the pool is crowded, and
// the OS thread every osYieldPolls while the pool's threads have lately
// been seen to share a CPU (see sharedCPU). The clock is read every 64
// polls only, the first time after 64: a loop that ends sooner (a call
// whose chunks are already done) never reads it.
type pacer struct {
	deadline, nextYield time.Time // zero until the first reading
	last                time.Time // the last reading
	crowded             bool
	pool                *workerPool
}

func (p *workerPool) newPacer() pacer { return pacer{crowded: p.crowded.Load(), pool: p} }

// goOn is called after poll i and reports whether to poll again.
func (pc *pacer) goOn(i int) bool {
	if i%64 != 63 {
		return true
	}
	now := time.Now()
	if pc.deadline.IsZero() {
		pc.deadline, pc.nextYield = now.Add(spinTime), now.Add(yieldGap)
	} else if now.Sub(pc.last) > offCPUGap {
		pc.pool.sawSharedCPU(now)
	}
	pc.last = now
	if now.After(pc.deadline) {
		return false
	}
	if pc.crowded || now.After(pc.nextYield) {
		runtime.Gosched()
		pc.nextYield = now.Add(yieldGap)
		pc.last = time.Now() // other goroutines' time on the P is no sign
	}
	if i%osYieldPolls == osYieldPolls-1 && pc.pool.sharedCPU(now) {
		osYield()
	}
	return true
}

// osYieldPolls is how often (in polls, about 10 µs) a polling goroutine
// also yields its OS thread's CPU to other threads (osYield) while the
// pool's threads share CPUs. Gosched only lets other goroutines run on the
// P: when the OS runs two of the pool's threads on one CPU (another
// process busy on the second CPU of a shared machine), the poller
// otherwise takes half the CPU from the thread doing the work. resnet18
// at batch 1 with a busy loop at nice 5 pinned to the second CPU: 17.4–
// 17.9 ms without it, 14.0–14.2 with it (onnxruntime 12.3); on a quiet
// machine unchanged (every 64 polls: the same).
const osYieldPolls = 256

// offCPUGap is the time between two clock readings of a polling loop (64
// polls, a few microseconds apart) past which its thread has been off its
// CPU, and contendedFor how long the pool keeps yielding OS threads after
// that was last seen. On a CPU of its own a sched_yield costs a poller
// about 0.2 µs more before it sees a job: mobilenet_v2 at batch 1, 2 Zen 5
// vCPUs, a worker started its chunk 440–540 ns after the caller sent it
// with a yield every 256 polls, 260–350 ns without; with the busy loop
// above, resnet18 at batch 1 took 16.1–16.5 ms without yields against
// 12.8–13.4 with these.
const (
	offCPUGap    = 50 * time.Microsecond
	contendedFor = 50 * time.Millisecond
)

// pollEpoch is the origin of workerPool.sharedUntil.
var pollEpoch = time.Now()

// sawSharedCPU records that a polling thread was off its CPU at now.
func (p *workerPool) sawSharedCPU(now time.Time) {
	p.sharedUntil.Store(int64(now.Add(contendedFor).Sub(pollEpoch)))
}

// sharedCPU reports whether a polling thread was seen off its CPU less
// than contendedFor before now.
func (p *workerPool) sharedCPU(now time.Time) bool {
	return int64(now.Sub(pollEpoch)) < p.sharedUntil.Load()
}

// numWorkers is the number of chunks work is split into.
func (d *Device) numWorkers() int { return d.workersOf(runtime.GOMAXPROCS(0)) }

// workersOf is numWorkers for GOMAXPROCS procs (which a caller that needs
// it too reads once: it takes the scheduler's lock).
func (d *Device) workersOf(procs int) int {
	if d.lanes.Load() > 0 {
		return 1 // inside RunLanes: each lane is a core's
	}
	if w := d.workers.Load(); w > 0 {
		return int(w)
	}
	return procs
}

// parallelFor runs fn over [0, n) split into at most numWorkers contiguous
// chunks, in parallel when the estimated work n*cost is large enough to pay
// for the hand-off.
func (d *Device) parallelFor(n, cost int, fn func(lo, hi int)) {
	d.parallel(n, cost, funcTask(fn))
}

// serial reports whether parallelFor would run n*cost of work on the
// calling goroutine alone. Hot kernels test it first and call their loop
// directly, so that they do not even build the closure parallelFor needs
// (a heap allocation).
func (d *Device) serial(n, cost int) bool {
	return n*cost < serialWork || min(d.numWorkers(), n) <= 1
}

// serialWork is the estimated work (n·cost) below which a parallel call
// runs on the calling goroutine alone.
const serialWork = 1 << 15

// parallel is parallelFor for a task. The calling goroutine runs the first
// chunk itself and, while it waits for the others, runs queued chunks (its
// own or other callers'), so nested or concurrent calls (ranks running as
// goroutines) cannot deadlock.
func (d *Device) parallel(n, cost int, t task) {
	// serial's rule, the cheap test first: GOMAXPROCS takes the
	// scheduler's lock, read only for work worth splitting, and once.
	if n*cost < serialWork {
		t.run(0, n)
		return
	}
	procs := runtime.GOMAXPROCS(0)
	w := min(d.workersOf(procs), n)
	if w <= 1 {
		t.run(0, n)
		return
	}
	d.pool.start(max(procs, w) - 1)
	if crowded := w > procs; d.pool.crowded.Load() != crowded {
		d.pool.crowded.Store(crowded) // spinners read it: no store when it stays
	}
	c := calls.Get().(*call)
	c.state.Store(int64(w))
	own := callerChunk(w)
	for i := range w {
		if i == own {
			continue
		}
		j := job{t: t, lo: n * i / w, hi: n * (i + 1) / w, c: c}
		select {
		case d.pool.jobs <- j:
		default: // queue full: run it here
			j.run()
		}
	}
	job{t: t, lo: n * own / w, hi: n * (own + 1) / w, c: c}.run()
	d.pool.await(c)
	calls.Put(c)
}

// callerChunk returns which of w chunks the calling goroutine runs: the
// one of the CPU it is on (its number modulo w), else the first. Kernels
// split their work the same way from call to call (the same images, rows
// or positions in chunk i), so that each CPU reads what it wrote in the
// call before from its own cache; but the Go scheduler moves goroutines
// between threads, and the caller and the worker swapped CPUs between
// calls about 40% of the time. The output of a layer written by one CPU
// and read by the other then crosses between their caches: a depthwise
// layer of mobilenet_v2 at batch 32 (14×14×384, 2 Zen 4 threads) after
// the 1×1 layer that feeds it took 0.93 ms against 0.49 alone, and 1.1 ms
// after a copy of its input by one thread. Choosing the chunk by CPU keeps
// it on the CPU that had it (with two workers, the other chunk goes to the
// other CPU's thread).
func callerChunk(w int) int {
	if cpu := x86.CPUNumber(); cpu > 0 {
		return cpu % w
	}
	return 0
}

// await returns when every chunk of c has run. It runs queued chunks (its
// own or other callers') meanwhile, polls for up to spinTime (the other
// workers' chunks usually end within microseconds of the caller's), then
// sleeps until the last chunk ends.
func (p *workerPool) await(c *call) {
	pace := p.newPacer()
	for i := 0; c.state.Load() != 0; i++ {
		select {
		case j := <-p.jobs:
			j.run()
			continue
		default:
		}
		if !pace.goOn(i) {
			break
		}
	}
	for {
		// Fall asleep unless the last chunk has ended meanwhile.
		n := c.state.Load()
		if n == 0 {
			return
		}
		if c.state.CompareAndSwap(n, n|asleep) {
			break
		}
	}
	for {
		select {
		case <-c.done: // sent by the last chunk, so the recycled call starts empty
			return
		case j := <-p.jobs:
			j.run()
		}
	}
}

// taskPools holds one *sync.Pool of *A per task argument type A.
var taskPools sync.Map

// launch runs a task, the arguments of a kernel whose run method (on *A)
// is its loop, over [0, n) like parallelFor, and returns the arguments as
// run left them (a loop may store results there). The task is copied into
// a recycled *A, so a kernel started this way allocates nothing in steady
// state (a closure handed to parallelFor costs an allocation per call).
func launch[A any, P interface {
	*A
	task
}](d *Device, n, cost int, args A) A {
	key := reflect.TypeFor[A]()
	p, ok := taskPools.Load(key)
	if !ok {
		p, _ = taskPools.LoadOrStore(key, &sync.Pool{New: func() any { return new(A) }})
	}
	pool := p.(*sync.Pool)
	t := pool.Get().(*A)
	*t = args
	d.parallel(n, cost, P(t))
	args = *t
	var zero A
	*t = zero // drop the slices
	pool.Put(t)
	return args
}
