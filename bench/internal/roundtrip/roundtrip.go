package roundtrip

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/hora-dl/hora/device/cpu"
)

// Measure returns the mean time a cache line takes to go from one busy
// OS thread to another and back (a counter bumped in turn, trips times),
// or 0 when GOMAXPROCS leaves no second CPU to run on.
func Measure(trips int) time.Duration {
	if runtime.GOMAXPROCS(0) < 2 || trips < 1 {
		return 0
	}
	var turn atomic.Int64 // even: the caller's turn, odd: the other thread's
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := int64(1); i < 2*int64(trips); i += 2 {
			for turn.Load() != i {
			}
			turn.Store(i + 1)
		}
		close(done)
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	for i := int64(0); i < 2*int64(trips); i += 2 {
		for turn.Load() != i {
		}
		turn.Store(i + 1)
	}
	<-done
	return time.Since(start) / time.Duration(trips)
}

// State names the state a round trip d tells: "shared cache" (under
// cpu.SharedCacheRoundTrip), "no shared cache", or "one thread" (d is 0).
func State(d time.Duration) string {
	switch {
	case d <= 0:
		return "one thread"
	case d < cpu.SharedCacheRoundTrip:
		return "shared cache"
	}
	return "no shared cache"
}
