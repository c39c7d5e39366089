package data

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
)

// LoaderConfig configures a Loader.
type LoaderConfig struct {
	// BatchSize is the number of samples per batch; it must be > 0.
	BatchSize int
	// Shuffle makes each epoch visit the samples in a random order drawn
	// from the *rand.Rand passed to Batches.
	Shuffle bool
	// DropLast drops the last batch of an epoch when it has fewer than
	// BatchSize samples.
	DropLast bool
	// Prefetch is the number of batches a background goroutine prepares
	// ahead of the consumer; 0 builds each batch synchronously when asked.
	Prefetch int
	// ReuseMemory lets batches reuse the memory of the batches before
	// them: a batch is then valid only until the loop body that received
	// it returns (copy what must outlive it). It saves allocating, and the
	// operating system zeroing, the memory of every batch.
	ReuseMemory bool
	// Workers is the number of goroutines that call the dataset's Sample
	// for the samples of one batch in parallel; 0 or 1 calls it for one
	// sample after the other. The batches are the same whatever Workers
	// is. Workers > 1 needs a dataset whose Sample is safe for concurrent
	// use, as those of InMemory, Subset (of such a dataset), Augmented (of
	// such a dataset) and ImageFolder are.
	Workers int
}

// Batch is a batch of samples. Each batch owns its slices: batches never
// share memory with each other or with the dataset (except with
// LoaderConfig.ReuseMemory, where a batch's memory is handed to a later one
// once the consumer has moved on).
type Batch struct {
	// X holds the samples, flattened, in row-major order of Shape.
	X []float32
	// Shape is [n, sampleShape...], n being the number of samples.
	Shape []int
	// Y holds the n labels.
	Y []int64
	// Indices holds the n dataset indices the samples came from.
	Indices []int
}

// Len returns the number of samples in b.
func (b Batch) Len() int { return len(b.Y) }

// Loader cuts a Dataset into batches, one epoch per call of Batches,
// optionally shuffled and prefetched by a background goroutine.
//
// A Loader holds no per-epoch state; it may be reused for any number of
// epochs, but one Loader should not run two epochs at once unless its
// dataset's Sample is safe for concurrent use.
type Loader struct {
	ds    Dataset
	cfg   LoaderConfig
	shape []int // sample shape
	size  int   // values per sample
}

// NewLoader returns a Loader over ds. It returns an error if ds is nil, if
// cfg.BatchSize <= 0, cfg.Prefetch < 0 or cfg.Workers < 0, or if the sample shape of ds is
// empty or has a dimension <= 0.
func NewLoader(ds Dataset, cfg LoaderConfig) (*Loader, error) {
	if ds == nil {
		return nil, fmt.Errorf("data: NewLoader: nil dataset")
	}
	if cfg.BatchSize <= 0 {
		return nil, fmt.Errorf("data: NewLoader: BatchSize = %d, expected > 0", cfg.BatchSize)
	}
	if cfg.Prefetch < 0 {
		return nil, fmt.Errorf("data: NewLoader: Prefetch = %d, expected >= 0 (0 means no prefetching)", cfg.Prefetch)
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("data: NewLoader: Workers = %d, expected >= 0 (0 or 1 means no parallel Sample calls)", cfg.Workers)
	}
	shape := slices.Clone(ds.SampleShape())
	if len(shape) == 0 {
		return nil, fmt.Errorf("data: NewLoader: dataset has an empty sample shape, expected at least one dimension")
	}
	for i, d := range shape {
		if d <= 0 {
			return nil, fmt.Errorf("data: NewLoader: dataset sample shape %v has dimension %d = %d, expected > 0", shape, i, d)
		}
	}
	return &Loader{ds: ds, cfg: cfg, shape: shape, size: product(shape)}, nil
}

// Dataset returns the dataset l reads.
func (l *Loader) Dataset() Dataset { return l.ds }

// Config returns the configuration of l.
func (l *Loader) Config() LoaderConfig { return l.cfg }

// NumBatches returns the number of batches in one epoch.
func (l *Loader) NumBatches() int {
	return l.numBatches(l.ds.Len())
}

func (l *Loader) numBatches(n int) int {
	if l.cfg.DropLast {
		return n / l.cfg.BatchSize
	}
	return (n + l.cfg.BatchSize - 1) / l.cfg.BatchSize
}

// Batches returns one epoch of batches. Each range over the returned sequence
// is one epoch: with Shuffle set it draws a new permutation of the samples
// from rng when the range starts, so the same seed gives the same order;
// without Shuffle the samples come in index order and rng may be nil.
//
// Batches panics if cfg.Shuffle is set and rng is nil, or if ctx is nil.
//
// The epoch ends early when the loop breaks or ctx is cancelled; the caller
// can tell the two apart with ctx.Err(). With Prefetch > 0 a background
// goroutine builds the batches; it has exited, and no longer touches the
// dataset, by the time the range loop is over, however it ends. A panic in
// the dataset's Sample on that goroutine is raised again in the caller's.
func (l *Loader) Batches(ctx context.Context, rng *rand.Rand) iter.Seq[Batch] {
	if ctx == nil {
		panic("data: Loader.Batches: nil context; use context.Background()")
	}
	if l.cfg.Shuffle && rng == nil {
		panic("data: Loader.Batches: LoaderConfig.Shuffle is set but rng is nil; pass a seeded *rand.Rand, e.g. rand.New(rand.NewPCG(seed, 0))")
	}
	return func(yield func(Batch) bool) {
		var order []int
		if l.cfg.Shuffle {
			order = rng.Perm(l.ds.Len())
		} else {
			order = make([]int, l.ds.Len())
			for i := range order {
				order[i] = i
			}
		}
		l.epoch(ctx, order, yield)
	}
}

// BatchesOf returns one epoch of batches of the samples at the given
// dataset indices, in that order (a sampler's shard, such as
// dist.DistributedSampler's); Shuffle is ignored. NumBatchesOf(len(order))
// tells how many batches it yields. It panics, like Batches, if ctx is
// nil, and if an index is outside the dataset.
func (l *Loader) BatchesOf(ctx context.Context, order []int) iter.Seq[Batch] {
	if ctx == nil {
		panic("data: Loader.BatchesOf: nil context; use context.Background()")
	}
	for i, k := range order {
		if k < 0 || k >= l.ds.Len() {
			panic(fmt.Sprintf("data: Loader.BatchesOf: order[%d] = %d, outside the dataset of %d samples", i, k, l.ds.Len()))
		}
	}
	order = slices.Clone(order)
	return func(yield func(Batch) bool) { l.epoch(ctx, order, yield) }
}

// NumBatchesOf returns the number of batches of an epoch of n samples.
func (l *Loader) NumBatchesOf(n int) int { return l.numBatches(n) }

// epoch yields the batches of the samples in order.
func (l *Loader) epoch(ctx context.Context, order []int, yield func(Batch) bool) {
	nb := l.numBatches(len(order))
	if l.cfg.Prefetch == 0 {
		var prev Batch
		for b := range nb {
			batch := l.batch(order, b, prev)
			if ctx.Err() != nil || !yield(batch) {
				return
			}
			if l.cfg.ReuseMemory {
				prev = batch
			}
		}
		return
	}
	l.prefetch(ctx, order, nb, yield)
}

// prefetch runs one epoch with a background goroutine that keeps up to
// cfg.Prefetch batches ready in a channel.
func (l *Loader) prefetch(ctx context.Context, order []int, nb int, yield func(Batch) bool) {
	ready := make(chan Batch, l.cfg.Prefetch)
	// With ReuseMemory, batches the consumer is done with come back here
	// (the consumer holds one, the channel Prefetch, the worker one).
	free := make(chan Batch, l.cfg.Prefetch+2)
	stop := make(chan struct{}) // closed by the consumer when it is done
	done := make(chan struct{}) // closed by the worker when it has exited
	var panicked error          // set by the worker before it closes done
	go func() {
		defer close(done)
		defer close(ready)
		defer func() {
			if r := recover(); r != nil {
				panicked = fmt.Errorf("data: Loader: panic while building a batch in the prefetch goroutine: %v\n\n%s", r, debug.Stack())
			}
		}()
		for b := range nb {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			var reuse Batch
			select {
			case reuse = <-free:
			default:
			}
			batch := l.batch(order, b, reuse)
			select {
			case ready <- batch:
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() {
		close(stop)
		<-done
	}()
	for {
		select {
		case batch, ok := <-ready:
			if !ok {
				<-done
				if panicked != nil {
					panic(panicked)
				}
				return
			}
			if ctx.Err() != nil || !yield(batch) {
				return
			}
			if l.cfg.ReuseMemory {
				select {
				case free <- batch:
				default:
				}
			}
		case <-ctx.Done():
			return
		}
	}
}

// batch builds batch b of the epoch visiting samples in order, in the
// memory of reuse when it is large enough (the zero Batch: new memory).
func (l *Loader) batch(order []int, b int, reuse Batch) Batch {
	lo := b * l.cfg.BatchSize
	hi := min(lo+l.cfg.BatchSize, len(order))
	n := hi - lo
	var out Batch
	if cap(reuse.X) >= n*l.size && cap(reuse.Y) >= n && cap(reuse.Indices) >= n && cap(reuse.Shape) >= 1+len(l.shape) {
		out = Batch{
			X:       reuse.X[:n*l.size],
			Shape:   append(append(reuse.Shape[:0], n), l.shape...),
			Y:       reuse.Y[:n],
			Indices: append(reuse.Indices[:0], order[lo:hi]...),
		}
	} else {
		out = Batch{
			X:       make([]float32, n*l.size),
			Shape:   append([]int{n}, l.shape...),
			Y:       make([]int64, n),
			Indices: slices.Clone(order[lo:hi]),
		}
	}
	if l.cfg.Workers <= 1 || n <= 1 {
		for j, idx := range out.Indices {
			out.Y[j] = l.ds.Sample(idx, out.X[j*l.size:(j+1)*l.size])
		}
		return out
	}
	l.parallelSamples(out)
	return out
}

// parallelSamples fills out.X and out.Y from the samples at out.Indices
// with cfg.Workers goroutines, each taking the next sample not yet taken.
// A panic in Sample is raised again in the calling goroutine once all
// the goroutines have stopped.
func (l *Loader) parallelSamples(out Batch) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var panicked any
	for range min(l.cfg.Workers, len(out.Indices)) {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { panicked = r })
					next.Store(int64(len(out.Indices))) // stop the others
				}
			}()
			for {
				j := int(next.Add(1) - 1)
				if j >= len(out.Indices) {
					return
				}
				out.Y[j] = l.ds.Sample(out.Indices[j], out.X[j*l.size:(j+1)*l.size])
			}
		})
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}
