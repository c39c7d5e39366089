package cpu

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRoundTripTaskGivesUpAlone checks that a measurement whose two sides
// run on one thread (the other worker busy) ends after probeWait instead
// of waiting for ever, and reports that it gave up.
func TestRoundTripTaskGivesUpAlone(t *testing.T) {
	task := &roundTripTask{trips: probeTrips}
	start := time.Now()
	task.run(0, 2)
	assert.True(t, task.gaveUp.Load())
	assert.Less(t, time.Since(start), probeWait+time.Second)
}

// TestRoundTripPairsTwoWorkers checks that two workers measure a round
// trip between them, positive and bounded. A
// machine busy with other processes may keep the second worker off its
// CPU: it tries for about two seconds, then skips.
func TestRoundTripPairsTwoWorkers(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one CPU")
	}
	dev := New()
	dev.SetThreads(2)
	for range 200 {
		if rt, ok := dev.roundTrip(); ok {
			assert.Greater(t, rt, time.Duration(0))
			assert.Less(t, rt, 10*time.Millisecond) // probeWait bounds it, but for a preempted thread
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Skip("the two workers never ran at once in 200 tries (a busy machine)")
}

// TestSharesCacheMeasuresRarely checks that one worker shares its cache
// with itself, and that with two the device measures once per
// cacheProbeEvery, not at every call.
func TestSharesCacheMeasuresRarely(t *testing.T) {
	dev := New()
	dev.SetThreads(1)
	require.True(t, dev.SharesCache())
	if runtime.GOMAXPROCS(0) < 2 {
		return
	}
	dev = New()
	dev.SetThreads(2)
	dev.SharesCache()
	first := dev.cache.measured.Load()
	require.NotZero(t, first)
	for range 100 {
		dev.SharesCache()
	}
	if time.Since(pollEpoch)-time.Duration(first) < cacheProbeEvery {
		assert.Equal(t, first, dev.cache.measured.Load(), "measured again within cacheProbeEvery")
	}
}
