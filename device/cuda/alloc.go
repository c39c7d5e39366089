package cuda

import (
	"errors"
	"math/bits"
	"sync"
)

// memory is what the allocator asks of the driver: raw device memory.
// The Device's implementation calls cuMemAlloc_v2 / cuMemFree_v2; tests
// use a fake.
type memory interface {
	memAlloc(bytes int) (uintptr, error)
	memFree(p uintptr) error
}

// MemoryStats describes a Device's caching allocator.
type MemoryStats struct {
	InUse   int64 // bytes in live buffers (rounded up to their size class)
	Cached  int64 // bytes freed by Hora and kept for reuse
	Mallocs int64 // calls to cuMemAlloc so far
	Frees   int64 // calls to cuMemFree so far (when the cache was emptied)
}

// allocator is a caching allocator: freed blocks go to a free list per
// size class and are handed out again before new memory is asked of the
// driver, so training's steady state calls cuMemAlloc no more. Sizes are
// rounded up to a class (512 bytes at least, then eight classes per
// power of two, so at most 12.5% is wasted). All work on one stream, in
// order, so a block freed by a buffer can be reused by the next
// allocation at once: any kernel still reading it was queued before the
// kernel that will write it. When the driver is out of memory, the cache
// is released and the allocation tried again.
type allocator struct {
	mem   memory
	mu    sync.Mutex
	free  map[int][]uintptr // size class → cached blocks
	stats MemoryStats
}

func newAllocator(m memory) *allocator {
	return &allocator{mem: m, free: map[int][]uintptr{}}
}

// sizeClass returns the block size used for a request of n bytes.
func sizeClass(n int) int {
	if n <= 512 {
		return 512
	}
	k := bits.Len(uint(n - 1)) // 2^k >= n
	step := 1 << (k - 4)       // eight classes between 2^(k-1) and 2^k
	return (n + step - 1) / step * step
}

// cached returns a cached block of at least n bytes and its size class,
// or ok false when there is none. It asks nothing of the driver, so it may
// run on any goroutine.
func (a *allocator) cached(n int) (p uintptr, size int, ok bool) {
	size = sizeClass(n)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.takeLocked(size)
}

func (a *allocator) takeLocked(size int) (uintptr, int, bool) {
	l := a.free[size]
	if len(l) == 0 {
		return 0, 0, false
	}
	p := l[len(l)-1]
	a.free[size] = l[:len(l)-1]
	a.stats.Cached -= int64(size)
	a.stats.InUse += int64(size)
	return p, size, true
}

// alloc returns a block of at least n bytes and its size class, from the
// cache or else from the driver (so it runs on the context's goroutine).
func (a *allocator) alloc(n int) (uintptr, int, error) {
	size := sizeClass(n)
	a.mu.Lock()
	defer a.mu.Unlock()
	if p, size, ok := a.takeLocked(size); ok {
		return p, size, nil
	}
	p, err := a.mem.memAlloc(size)
	if errors.Is(err, ErrOutOfMemory) && a.stats.Cached > 0 {
		if ferr := a.emptyLocked(); ferr != nil {
			return 0, 0, ferr
		}
		p, err = a.mem.memAlloc(size)
	}
	if err != nil {
		return 0, 0, err
	}
	a.stats.Mallocs++
	a.stats.InUse += int64(size)
	return p, size, nil
}

// release puts the block p of the given size class back in the cache.
func (a *allocator) release(p uintptr, size int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.free[size] = append(a.free[size], p)
	a.stats.InUse -= int64(size)
	a.stats.Cached += int64(size)
}

// empty gives every cached block back to the driver.
func (a *allocator) empty() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.emptyLocked()
}

func (a *allocator) emptyLocked() error {
	var first error
	for size, l := range a.free {
		for _, p := range l {
			if err := a.mem.memFree(p); err != nil && first == nil {
				first = err
			}
			a.stats.Frees++
			a.stats.Cached -= int64(size)
		}
		delete(a.free, size)
	}
	return first
}

// Stats returns the allocator's counters.
func (a *allocator) Stats() MemoryStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}
