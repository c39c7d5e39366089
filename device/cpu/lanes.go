package cpu

import (
	"sync"

	"github.com/hora-dl/hora/device"
)

var _ device.LaneRunner = (*Device)(nil)

// Lanes implements device.LaneRunner: the number of goroutines a kernel
// is split over now (Threads), 1 while a RunLanes call is in progress.
func (d *Device) Lanes() int { return d.numWorkers() }

// RunLanes implements device.LaneRunner: fn(0) runs on the calling
// goroutine, fn(1) to fn(n-1) on goroutines of their own. While any
// RunLanes call is in progress every kernel of d runs on its calling
// goroutine alone (Threads reports 1), so n lanes keep n cores busy with
// no hand-off between them; kernels called from elsewhere meanwhile run
// serially too, and give the same results.
func (d *Device) RunLanes(n int, fn func(lane int)) {
	d.lanes.Add(1)
	defer d.lanes.Add(-1)
	var wg sync.WaitGroup
	for lane := 1; lane < n; lane++ {
		wg.Go(func() { fn(lane) })
	}
	if n > 0 {
		fn(0)
	}
	wg.Wait()
}
