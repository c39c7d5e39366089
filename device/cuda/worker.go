package cuda

import (
	"runtime"
	"sync"
)

// worker is the one goroutine, locked to its OS thread, that makes every
// call into a CUDA context: the driver keeps the current context per
// thread, so all of a Device's calls run here, in the order they were
// queued. Kernel launches are queued without waiting (post); calls whose
// results the caller needs wait (do).
type worker struct {
	jobs chan func()
	done chan struct{}
	once sync.Once
}

// newWorker starts the goroutine and runs setup on it (making the context
// current); it returns setup's error, after which the worker has stopped.
func newWorker(setup func() error) (*worker, error) {
	w := &worker{jobs: make(chan func(), 1024), done: make(chan struct{})}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(w.done)
		if err := setup(); err != nil {
			errc <- err
			return
		}
		errc <- nil
		for f := range w.jobs {
			f()
		}
	}()
	if err := <-errc; err != nil {
		return nil, err
	}
	return w, nil
}

// post queues f and returns at once.
func (w *worker) post(f func()) { w.jobs <- f }

// do runs f on the worker after everything queued before it, and returns
// its error.
func (w *worker) do(f func() error) error {
	errc := make(chan error, 1)
	w.jobs <- func() { errc <- f() }
	return <-errc
}

// stop runs the queued jobs, then ends the goroutine. Calls after stop panic.
func (w *worker) stop() {
	w.once.Do(func() {
		close(w.jobs)
		<-w.done
	})
}
