package cuda

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeMemory is device memory that counts calls and can run out.
type fakeMemory struct {
	next   uintptr
	live   map[uintptr]int
	limit  int // bytes; 0: unlimited
	used   int
	allocs int
}

func newFakeMemory(limit int) *fakeMemory {
	return &fakeMemory{next: 1 << 20, live: map[uintptr]int{}, limit: limit}
}

func (m *fakeMemory) memAlloc(n int) (uintptr, error) {
	if m.limit > 0 && m.used+n > m.limit {
		return 0, &Error{Func: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY"}
	}
	p := m.next
	m.next += uintptr(n)
	m.live[p] = n
	m.used += n
	m.allocs++
	return p, nil
}

func (m *fakeMemory) memFree(p uintptr) error {
	n, ok := m.live[p]
	if !ok {
		return fmt.Errorf("free of unknown pointer %#x", p)
	}
	delete(m.live, p)
	m.used -= n
	return nil
}

func TestSizeClass(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{1, 512}, {512, 512}, {513, 576}, {1000, 1024}, {1025, 1152},
		{4096, 4096}, {4097, 4608}, {1 << 20, 1 << 20}, {(1 << 20) + 1, (1 << 20) + (1 << 17)},
	} {
		assert.Equal(t, tc.want, sizeClass(tc.n), "sizeClass(%d)", tc.n)
	}
	for n := 1; n < 1<<22; n = n*3/2 + 1 {
		c := sizeClass(n)
		assert.GreaterOrEqual(t, c, n)
		if n > 512 {
			assert.LessOrEqual(t, float64(c), float64(n)*1.125, "at most 12.5%% waste for %d", n)
		}
	}
}

func TestAllocatorReusesFreedBlocks(t *testing.T) {
	m := newFakeMemory(0)
	a := newAllocator(m)
	// A training step's pattern, repeated: after the first, no new memory.
	sizes := []int{4096, 100, 1 << 20, 4096, 3000, 77777}
	for step := 0; step < 5; step++ {
		var ps []uintptr
		var cs []int
		for _, n := range sizes {
			p, c, err := a.alloc(n)
			require.NoError(t, err)
			ps, cs = append(ps, p), append(cs, c)
		}
		for i := range ps {
			a.release(ps[i], cs[i])
		}
		if step == 0 {
			assert.Equal(t, len(sizes), m.allocs)
		}
	}
	assert.Equal(t, len(sizes), m.allocs, "steady state calls cuMemAlloc no more")
	s := a.Stats()
	assert.Zero(t, s.InUse)
	assert.Equal(t, int64(len(sizes)), s.Mallocs)
	assert.Positive(t, s.Cached)
	require.NoError(t, a.empty())
	assert.Empty(t, m.live, "empty frees every cached block")
	assert.Zero(t, a.Stats().Cached)
}

func TestAllocatorEmptiesCacheWhenOutOfMemory(t *testing.T) {
	m := newFakeMemory(3 << 20)
	a := newAllocator(m)
	p, c, err := a.alloc(2 << 20)
	require.NoError(t, err)
	a.release(p, c)              // 2 MiB cached
	_, _, err = a.alloc(3 << 19) // 1.5 MiB fits beside the cached block
	require.NoError(t, err)
	// 1.25 MiB does not fit unless the cached 2 MiB is given back.
	_, _, err = a.alloc(5 << 18)
	require.NoError(t, err, "the cache is emptied and the allocation retried")
	assert.Zero(t, a.Stats().Cached)
	_, _, err = a.alloc(4 << 20)
	require.ErrorIs(t, err, ErrOutOfMemory)
	assert.Contains(t, err.Error(), "CUDA_ERROR_OUT_OF_MEMORY")
}

func TestErrorNamesTheCallAndResult(t *testing.T) {
	a := &driverAPI{}
	err := a.check("cuMemAlloc_v2", 2)
	require.Error(t, err)
	assert.Equal(t, "cuda: cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2)", err.Error())
	assert.ErrorIs(t, err, ErrOutOfMemory)
	assert.Contains(t, a.check("cuLaunchKernel", 12345).Error(), "CUDA_ERROR_12345")
	assert.NoError(t, a.check("cuInit", 0))
	assert.Contains(t, (&nvrtcAPI{}).check("nvrtcCompileProgram", 6).Error(), "NVRTC_ERROR_COMPILATION")
	assert.Contains(t, (&cublasAPI{}).check("cublasSgemmStridedBatched", 7).Error(), "CUBLAS_STATUS_INVALID_VALUE")
}

func TestWorkerRunsJobsInOrderOnOneThread(t *testing.T) {
	w, err := newWorker(func() error { return nil })
	require.NoError(t, err)
	var got []int
	for i := 0; i < 100; i++ {
		w.post(func() { got = append(got, i) })
	}
	require.NoError(t, w.do(func() error { return nil }))
	for i := range got {
		require.Equal(t, i, got[i])
	}
	assert.Len(t, got, 100)
	assert.EqualError(t, w.do(func() error { return fmt.Errorf("boom") }), "boom")
	w.stop()
	w.stop() // idempotent

	_, err = newWorker(func() error { return fmt.Errorf("no context") })
	assert.EqualError(t, err, "no context")
}

func TestPackArgs(t *testing.T) {
	type pair struct {
		A int32
		B float64
	}
	p, err := packArgs(nil, []any{int32(-1), int64(1) << 40, float32(1.5), 2.5, uint32(7), nil, pair{3, 4}})
	require.NoError(t, err)
	require.Len(t, p.offs, 7)
	for _, o := range p.offs {
		assert.Zero(t, o%8, "each argument starts 8-byte aligned")
	}
	ptrs := p.pointers()
	assert.Equal(t, int32(-1), *(*int32)(ptrs[0]))
	assert.Equal(t, int64(1)<<40, *(*int64)(ptrs[1]))
	assert.Equal(t, float32(1.5), *(*float32)(ptrs[2]))
	assert.Equal(t, 2.5, *(*float64)(ptrs[3]))
	assert.Equal(t, uint32(7), *(*uint32)(ptrs[4]))
	assert.Equal(t, uint64(0), *(*uint64)(ptrs[5]))
	assert.Equal(t, pair{3, 4}, *(*pair)(ptrs[6]))
	_, err = packArgs(nil, []any{3})
	assert.ErrorContains(t, err, "pass int32 or int64")
	_, err = packArgs(nil, []any{"x"})
	assert.ErrorContains(t, err, "unsupported type string")
}

func TestAllocatorCachedNeverCallsTheDriver(t *testing.T) {
	m := newFakeMemory(0)
	a := newAllocator(m)
	_, _, ok := a.cached(1000)
	assert.False(t, ok, "nothing cached yet")
	p, c, err := a.alloc(1000)
	require.NoError(t, err)
	a.release(p, c)
	q, c2, ok := a.cached(1000)
	assert.True(t, ok)
	assert.Equal(t, p, q)
	assert.Equal(t, c, c2)
	assert.Equal(t, 1, m.allocs)
	assert.Equal(t, int64(c), a.Stats().InUse)
}
