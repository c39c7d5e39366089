package local

import (
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/hora-dl/hora/dist"
)

// Run runs fn on every rank of a new group of n ranks, each in its own
// goroutine, and returns each rank's error, indexed by rank (nil for
// success). A rank whose fn returns an error or panics (the panic becomes
// an error with its stack) Aborts the group, so the other ranks' pending
// and later collectives fail with a *dist.RankError instead of waiting
// for it; each rank's communicator is closed when its fn returns. When
// n < 1 Run returns a single error.
func Run(n int, fn func(c dist.Communicator) error) []error {
	comms, err := New(n)
	if err != nil {
		return []error{err}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() { errs[r] = runRank(c, fn) })
	}
	wg.Wait()
	return errs
}

// runRank runs fn on one rank, turning a panic into an error, aborting
// the group on an error and closing the communicator at the end.
func runRank(c dist.Communicator, fn func(c dist.Communicator) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("dist/local: rank %d panicked: %v\n%s", c.Rank(), p, debug.Stack())
		}
		if err != nil {
			c.Abort(err)
		}
		c.Close()
	}()
	return fn(c)
}
