package cpu_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hora-dl/hora/device/cpu"
)

// TestRunLanes runs four lanes on a device of three threads: each lane
// runs once, on its own goroutine beside the others (all four are inside
// fn at once), the device's kernels run serially meanwhile (Threads and
// Lanes report 1), and its thread count comes back afterwards.
func TestRunLanes(t *testing.T) {
	d := cpu.New()
	d.SetThreads(3)
	assert.Equal(t, 3, d.Lanes())
	var ran [4]atomic.Int32
	var inside atomic.Int32
	all := make(chan struct{})
	d.RunLanes(4, func(lane int) {
		ran[lane].Add(1)
		if inside.Add(1) == 4 {
			close(all)
		}
		<-all // every lane waits for the others: they run side by side
		assert.Equal(t, 1, d.Threads(), "lane %d", lane)
		assert.Equal(t, 1, d.Lanes(), "lane %d", lane)
	})
	for lane := range ran {
		assert.Equal(t, int32(1), ran[lane].Load(), "lane %d", lane)
	}
	assert.Equal(t, 3, d.Threads(), "after RunLanes")
	d.RunLanes(0, func(int) { t.Error("no lane to run") })
}
