package cpu

import (
	"sync/atomic"
	"time"
)

// Whether the device's threads share a cache, measured: a cache line's
// round trip between two of the pool's threads, as they run kernels. On
// a VM the host may run the vCPUs on cores that share a last-level cache
// for a while (a round trip of 55–90 ns on this project's Zen 4 and Zen 5
// vCPUs) and on cores that share none for the next while (330–420 ns),
// switching every few seconds to minutes; what pays differs between the
// two (see onnx's arenas), and the cache sizes the CPU reports do not
// tell them apart.

// SharedCacheRoundTrip is the cache line's round trip between two threads
// under which they share a cache: 55–90 ns on this project's Zen 4 and
// Zen 5 vCPUs while they did, 330–420 ns while they did not. SharesCache
// and the benchmarks' reading of the host's state both use it.
const SharedCacheRoundTrip = 200 * time.Nanosecond

// cacheProbeEvery is the least time between two measurements: the state
// lasts seconds at least, and a measurement holds both threads for 10–50
// µs.
const cacheProbeEvery = 250 * time.Millisecond

// probeTrips is the number of round trips of one measurement, taken
// twice: the faster of the two is kept (a thread the OS sets aside for a
// moment only makes a measurement slower).
const probeTrips = 32

// probeWait is how long a side of the measurement waits for the other
// before it gives up (the other worker busy or asleep, or both chunks on
// one thread).
const probeWait = 500 * time.Microsecond

// cacheState is what the device last measured.
type cacheState struct {
	measured atomic.Int64 // when, in nanoseconds since pollEpoch; 0: never
	apart    atomic.Bool  // the round trip was SharedCacheRoundTrip or more
}

// SharesCache reports whether the device's worker threads share a cache:
// always with one worker, otherwise as a cache line's round trip between
// two of them measured at most every cacheProbeEvery (a measurement that
// could not pair two threads keeps the previous answer, at first true). It
// implements device.CacheSharer. It must not be called from inside a
// kernel's task.
func (d *Device) SharesCache() bool {
	now := int64(time.Since(pollEpoch)) | 1 // never 0
	if last := d.cache.measured.Load(); last != 0 && now-last < int64(cacheProbeEvery) {
		return !d.cache.apart.Load()
	} else if !d.cache.measured.CompareAndSwap(last, now) {
		return !d.cache.apart.Load() // another goroutine measures
	}
	if d.numWorkers() < 2 {
		d.cache.apart.Store(false)
	} else if rt, ok := d.roundTrip(); ok {
		d.cache.apart.Store(rt >= SharedCacheRoundTrip)
	}
	return !d.cache.apart.Load()
}

// roundTrip measures a cache line's round trip between the thread that
// runs chunk 0 of a parallel call and the one that runs chunk 1, the
// faster of two measurements; ok is false when the two did not run at
// once (and then a measurement cost the caller up to probeWait).
func (d *Device) roundTrip() (rt time.Duration, ok bool) {
	rt = time.Hour
	for range 2 {
		t := &roundTripTask{trips: probeTrips}
		d.parallel(d.numWorkers(), serialWork, t)
		if t.gaveUp.Load() || t.elapsed <= 0 {
			return 0, false
		}
		rt = min(rt, t.elapsed/probeTrips)
	}
	return rt, true
}

// roundTripTask bumps a counter in turn between chunks 0 (even values)
// and 1 (odd values); chunk 0 times the trips. Other chunks do nothing.
type roundTripTask struct {
	turn    atomic.Int64
	gaveUp  atomic.Bool
	trips   int
	elapsed time.Duration // written by chunk 0
}

func (t *roundTripTask) run(lo, hi int) {
	for c := lo; c < hi; c++ {
		if c < 2 {
			t.side(int64(c))
		}
	}
}

// side plays chunk c's turns; either side gives up after probeWait
// without the other's, and then both stop.
func (t *roundTripTask) side(c int64) {
	deadline := time.Now().Add(probeWait)
	var start time.Time
	for i := c; i < 2*int64(t.trips); i += 2 {
		if !t.await(i, deadline) {
			return
		}
		if i == 0 {
			start = time.Now()
		}
		t.turn.Store(i + 1)
	}
	if c == 0 && t.await(2*int64(t.trips), deadline) { // the last trip back
		t.elapsed = time.Since(start)
	}
}

// await spins until the counter is want and reports true, or reports
// false once the other side gave up or, having given up itself, after
// deadline.
func (t *roundTripTask) await(want int64, deadline time.Time) bool {
	for spins := 0; t.turn.Load() != want; spins++ {
		if t.gaveUp.Load() {
			return false
		}
		if spins%256 == 255 && time.Now().After(deadline) {
			t.gaveUp.Store(true)
			return false
		}
	}
	return true
}
