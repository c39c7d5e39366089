package data

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingDataset counts calls of Sample and panics at index panicAt (if >= 0).
type countingDataset struct {
	Dataset
	calls   atomic.Int64
	panicAt int
}

func (d *countingDataset) Sample(i int, dst []float32) int64 {
	d.calls.Add(1)
	if i == d.panicAt {
		panic(fmt.Sprintf("sample %d is broken", i))
	}
	return d.Dataset.Sample(i, dst)
}

// emptyShape is a dataset with an invalid sample shape.
type emptyShape struct{ Dataset }

func (emptyShape) SampleShape() []int { return nil }

// collect runs one epoch and returns its batches.
func collect(ctx context.Context, l *Loader, rng *rand.Rand) []Batch {
	var out []Batch
	for b := range l.Batches(ctx, rng) {
		out = append(out, b)
	}
	return out
}

// checkBatch checks that b holds the samples of makeDataset(…, shape, classes) at b.Indices.
func checkBatch(t *testing.T, b Batch, shape []int, classes int) {
	t.Helper()
	size := product(shape)
	n := len(b.Indices)
	require.Equal(t, append([]int{n}, shape...), b.Shape)
	require.Len(t, b.X, n*size)
	require.Len(t, b.Y, n)
	assert.Equal(t, n, b.Len())
	for j, idx := range b.Indices {
		assert.Equal(t, int64(idx%classes), b.Y[j], "label of sample %d", idx)
		for k := range size {
			if b.X[j*size+k] != float32(idx*1000+k) {
				t.Fatalf("batch sample %d (index %d) value %d = %v, want %v", j, idx, k, b.X[j*size+k], idx*1000+k)
			}
		}
	}
}

// waitGoroutines waits until the number of goroutines is back to at most n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	// Poll on this goroutine: assert.Eventually would add goroutines of its own.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), n, "goroutines still running")
}

func TestNewLoaderErrors(t *testing.T) {
	t.Parallel()
	ds := makeDataset(t, 3, []int{2}, 2)
	tests := []struct {
		name string
		ds   Dataset
		cfg  LoaderConfig
		want string
	}{
		{"nil dataset", nil, LoaderConfig{BatchSize: 1}, "nil dataset"},
		{"zero batch size", ds, LoaderConfig{}, "BatchSize = 0, expected > 0"},
		{"negative batch size", ds, LoaderConfig{BatchSize: -2}, "BatchSize = -2, expected > 0"},
		{"negative prefetch", ds, LoaderConfig{BatchSize: 1, Prefetch: -1}, "Prefetch = -1, expected >= 0"},
		{"empty sample shape", emptyShape{ds}, LoaderConfig{BatchSize: 1}, "empty sample shape"},
		{"bad sample shape", &InMemory{Shape: []int{3, -1}}, LoaderConfig{BatchSize: 1}, "sample shape [3 -1] has dimension 1 = -1, expected > 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, err := NewLoader(tt.ds, tt.cfg)
			assert.Nil(t, l)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestLoaderBatches(t *testing.T) {
	t.Parallel()
	shape := []int{1, 2, 3}
	tests := []struct {
		n, batch  int
		dropLast  bool
		wantSizes []int
	}{
		{10, 3, false, []int{3, 3, 3, 1}},
		{10, 3, true, []int{3, 3, 3}},
		{9, 3, false, []int{3, 3, 3}},
		{9, 3, true, []int{3, 3, 3}},
		{2, 5, false, []int{2}},
		{2, 5, true, nil},
		{0, 4, false, nil},
		{7, 1, true, []int{1, 1, 1, 1, 1, 1, 1}},
	}
	for _, tt := range tests {
		for _, shuffle := range []bool{false, true} {
			for _, prefetch := range []int{0, 1, 3} {
				name := fmt.Sprintf("n=%d/batch=%d/dropLast=%v/shuffle=%v/prefetch=%d", tt.n, tt.batch, tt.dropLast, shuffle, prefetch)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					ds := makeDataset(t, tt.n, shape, 4)
					l, err := NewLoader(ds, LoaderConfig{BatchSize: tt.batch, DropLast: tt.dropLast, Shuffle: shuffle, Prefetch: prefetch})
					require.NoError(t, err)
					assert.Equal(t, len(tt.wantSizes), l.NumBatches())
					batches := collect(context.Background(), l, rand.New(rand.NewPCG(1, 2)))
					var sizes, seen []int
					for _, b := range batches {
						checkBatch(t, b, shape, 4)
						sizes = append(sizes, b.Len())
						seen = append(seen, b.Indices...)
					}
					assert.Equal(t, tt.wantSizes, sizes)
					if !shuffle {
						for i, idx := range seen {
							assert.Equal(t, i, idx)
						}
					}
					// Every index at most once; exactly once unless DropLast dropped some.
					slices.Sort(seen)
					assert.Len(t, slices.Compact(slices.Clone(seen)), len(seen), "repeated index")
					if !tt.dropLast || tt.n%tt.batch == 0 {
						assert.Len(t, seen, tt.n)
					}
				})
			}
		}
	}
}

func TestLoaderShuffleDeterminism(t *testing.T) {
	t.Parallel()
	ds := makeDataset(t, 50, []int{3}, 10)
	order := func(seed uint64, prefetch, epochs int) [][]int {
		l, err := NewLoader(ds, LoaderConfig{BatchSize: 8, Shuffle: true, Prefetch: prefetch})
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(seed, 0))
		var out [][]int
		for range epochs {
			var epoch []int
			for b := range l.Batches(context.Background(), rng) {
				epoch = append(epoch, b.Indices...)
			}
			out = append(out, epoch)
		}
		return out
	}
	a := order(7, 0, 3)
	assert.Equal(t, a, order(7, 0, 3), "same seed, same order")
	assert.Equal(t, a, order(7, 2, 3), "prefetching does not change the order")
	assert.NotEqual(t, a, order(8, 0, 3), "another seed, another order")
	assert.NotEqual(t, a[0], a[1], "each epoch draws a new permutation")
	identity := make([]int, 50)
	for i := range identity {
		identity[i] = i
	}
	for _, epoch := range a {
		assert.NotEqual(t, identity, epoch, "shuffled")
		assert.ElementsMatch(t, identity, epoch, "every index exactly once")
	}
}

func TestLoaderPrefetchEqualsSync(t *testing.T) {
	t.Parallel()
	ds := makeDataset(t, 37, []int{2, 2}, 5)
	var want []Batch
	for _, prefetch := range []int{0, 1, 2, 7, 100} {
		l, err := NewLoader(ds, LoaderConfig{BatchSize: 4, Shuffle: true, Prefetch: prefetch})
		require.NoError(t, err)
		got := collect(context.Background(), l, rand.New(rand.NewPCG(3, 3)))
		if prefetch == 0 {
			want = got
			continue
		}
		assert.Equal(t, want, got, "prefetch %d", prefetch)
	}
}

// TestLoaderNoAliasing checks that each batch owns its memory: writing into
// one batch changes no other batch and not the dataset.
func TestLoaderNoAliasing(t *testing.T) {
	t.Parallel()
	shape := []int{3}
	ds := makeDataset(t, 20, shape, 3)
	for _, prefetch := range []int{0, 2} {
		l, err := NewLoader(ds, LoaderConfig{BatchSize: 3, Prefetch: prefetch})
		require.NoError(t, err)
		batches := collect(context.Background(), l, nil)
		for _, b := range batches {
			clear(b.X)
			clear(b.Y)
			b.Shape[0] = -1
		}
		for _, b := range collect(context.Background(), l, nil) {
			checkBatch(t, b, shape, 3)
		}
		batches = collect(context.Background(), l, nil)
		for i := 1; i < len(batches); i++ {
			clear(batches[i-1].X)
			clear(batches[i-1].Indices)
			checkBatch(t, batches[i], shape, 3)
		}
	}
}

// TestLoaderEarlyBreak checks that breaking out of the loop stops the
// prefetch goroutine: it has exited and stopped touching the dataset when the
// loop is over. It does not run in parallel, to count goroutines.
func TestLoaderEarlyBreak(t *testing.T) {
	for _, prefetch := range []int{0, 1, 4} {
		t.Run(fmt.Sprintf("prefetch=%d", prefetch), func(t *testing.T) {
			before := runtime.NumGoroutine()
			ds := &countingDataset{Dataset: makeDataset(t, 100, []int{2}, 10), panicAt: -1}
			l, err := NewLoader(ds, LoaderConfig{BatchSize: 5, Shuffle: true, Prefetch: prefetch})
			require.NoError(t, err)
			var got int
			for b := range l.Batches(context.Background(), rand.New(rand.NewPCG(1, 1))) {
				got++
				assert.Equal(t, 5, b.Len())
				if got == 2 {
					break
				}
			}
			assert.Equal(t, 2, got)
			calls := ds.calls.Load()
			assert.LessOrEqual(t, calls, int64(5*(2+prefetch+1)), "samples read ahead")
			waitGoroutines(t, before)
			time.Sleep(5 * time.Millisecond)
			assert.Equal(t, calls, ds.calls.Load(), "dataset touched after the loop ended")
		})
	}
}

// TestLoaderCancel checks that cancelling the context ends the epoch and
// stops the prefetch goroutine.
func TestLoaderCancel(t *testing.T) {
	for _, prefetch := range []int{0, 1, 4} {
		t.Run(fmt.Sprintf("prefetch=%d", prefetch), func(t *testing.T) {
			before := runtime.NumGoroutine()
			ds := makeDataset(t, 100, []int{2}, 10)
			l, err := NewLoader(ds, LoaderConfig{BatchSize: 5, Prefetch: prefetch})
			require.NoError(t, err)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var got []int
			for b := range l.Batches(ctx, nil) {
				got = append(got, b.Indices[0])
				if len(got) == 3 {
					cancel()
				}
			}
			assert.Equal(t, []int{0, 5, 10}, got, "no batch after cancel")
			assert.ErrorIs(t, ctx.Err(), context.Canceled)
			waitGoroutines(t, before)

			// An already cancelled context yields nothing.
			assert.Empty(t, collect(ctx, l, nil))
			waitGoroutines(t, before)
		})
	}
}

func TestLoaderPanics(t *testing.T) {
	t.Parallel()
	ds := makeDataset(t, 10, []int{2}, 10)
	l, err := NewLoader(ds, LoaderConfig{BatchSize: 2, Shuffle: true})
	require.NoError(t, err)
	assert.PanicsWithValue(t,
		"data: Loader.Batches: LoaderConfig.Shuffle is set but rng is nil; pass a seeded *rand.Rand, e.g. rand.New(rand.NewPCG(seed, 0))",
		func() { l.Batches(context.Background(), nil) })
	var nilCtx context.Context
	assert.Panics(t, func() { l.Batches(nilCtx, rand.New(rand.NewPCG(1, 1))) })

	// A panic in Sample reaches the caller, with or without prefetching.
	for _, prefetch := range []int{0, 2} {
		bad := &countingDataset{Dataset: ds, panicAt: 5}
		l, err := NewLoader(bad, LoaderConfig{BatchSize: 2, Prefetch: prefetch})
		require.NoError(t, err)
		func() {
			defer func() {
				r := recover()
				require.NotNil(t, r, "prefetch %d: no panic", prefetch)
				assert.Contains(t, fmt.Sprint(r), "sample 5 is broken", "prefetch %d", prefetch)
			}()
			collect(context.Background(), l, nil)
		}()
	}
}

// TestLoaderReuseMemory checks that ReuseMemory gives the same batches,
// each valid while the loop body runs, in recycled memory.
func TestLoaderReuseMemory(t *testing.T) {
	t.Parallel()
	ds := makeDataset(t, 41, []int{2, 3}, 4)
	for _, prefetch := range []int{0, 1, 3} {
		plain, err := NewLoader(ds, LoaderConfig{BatchSize: 5, Shuffle: true, Prefetch: prefetch})
		require.NoError(t, err)
		want := collect(context.Background(), plain, rand.New(rand.NewPCG(8, 8)))

		l, err := NewLoader(ds, LoaderConfig{BatchSize: 5, Shuffle: true, Prefetch: prefetch, ReuseMemory: true})
		require.NoError(t, err)
		seen := map[*float32]bool{}
		i := 0
		for b := range l.Batches(context.Background(), rand.New(rand.NewPCG(8, 8))) {
			assert.Equal(t, want[i], b, "prefetch %d, batch %d", prefetch, i)
			seen[&b.X[0]] = true
			clear(b.X) // the consumer may scribble on it: the next batches are whole
			i++
		}
		assert.Equal(t, len(want), i)
		assert.LessOrEqual(t, len(seen), prefetch+3, "prefetch %d: batches live in a few recycled buffers", prefetch)
	}
}

// TestLoaderWorkers checks that parallel Sample calls give the batches of
// sequential ones, for an InMemory data set and an augmented ImageFolder,
// with and without prefetching, and that a panic in Sample reaches the caller.
func TestLoaderWorkers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fashionTree(t, dir, 23)
	list, err := ScanImageFolder(dir, nil)
	require.NoError(t, err)
	tr := ImageTransform{Height: 20, Width: 20, Channels: 1, RandomResizedCrop: true, Flip: true}
	images, err := NewImageFolder(list, ImageFolderConfig{Transform: tr, Train: true, Seed: 4})
	require.NoError(t, err)
	images.SetEpoch(2)
	for name, ds := range map[string]Dataset{"InMemory": makeDataset(t, 37, []int{2, 2}, 5), "ImageFolder": images} {
		var want []Batch
		for _, cfg := range []LoaderConfig{
			{Workers: 0}, {Workers: 1}, {Workers: 4}, {Workers: 4, Prefetch: 2}, {Workers: 3, ReuseMemory: true}, {Workers: 100},
		} {
			cfg.BatchSize, cfg.Shuffle = 5, true
			l, err := NewLoader(ds, cfg)
			require.NoError(t, err)
			var got []Batch
			for b := range l.Batches(context.Background(), rand.New(rand.NewPCG(3, 3))) {
				got = append(got, Batch{X: slices.Clone(b.X), Shape: slices.Clone(b.Shape), Y: slices.Clone(b.Y), Indices: slices.Clone(b.Indices)})
			}
			if want == nil {
				want = got
				continue
			}
			require.Equal(t, want, got, "%s %+v", name, cfg)
		}
	}

	_, err = NewLoader(makeDataset(t, 3, []int{1}, 1), LoaderConfig{BatchSize: 1, Workers: -1})
	assert.ErrorContains(t, err, "Workers = -1, expected >= 0")

	for _, prefetch := range []int{0, 2} {
		bad := &countingDataset{Dataset: makeDataset(t, 10, []int{2}, 10), panicAt: 5}
		l, err := NewLoader(bad, LoaderConfig{BatchSize: 4, Prefetch: prefetch, Workers: 3})
		require.NoError(t, err)
		func() {
			defer func() {
				r := recover()
				require.NotNil(t, r, "prefetch %d: no panic", prefetch)
				assert.Contains(t, fmt.Sprint(r), "sample 5 is broken", "prefetch %d", prefetch)
			}()
			collect(context.Background(), l, nil)
		}()
	}
}
