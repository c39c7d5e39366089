//go:build !windows

package fakenccl_test

import (
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/dist/nccl/internal/fakenccl"
)

// uniqueID is ncclUniqueId, passed by value.
type uniqueID struct{ Internal [128]byte }

// lib is the fake's functions, bound with purego.
type lib struct {
	getVersion    func(v *int32) int32
	getUniqueID   func(id *uniqueID) int32
	commInitRank  func(comm *uintptr, nranks int32, id uniqueID, rank int32) int32
	asyncError    func(comm uintptr, err *int32) int32
	allReduce     func(send, recv unsafe.Pointer, count uintptr, dt, op int32, comm, stream uintptr) int32
	broadcast     func(send, recv unsafe.Pointer, count uintptr, dt, root int32, comm, stream uintptr) int32
	allGather     func(send, recv unsafe.Pointer, count uintptr, dt int32, comm, stream uintptr) int32
	commDestroy   func(comm uintptr) int32
	commAbort     func(comm uintptr) int32
	errorString   func(r int32) string
	liveComms     func() int64
	commUserRank  func(comm uintptr, rank *int32) int32
	commCount     func(comm uintptr, n *int32) int32
	versionNumber int32
}

var (
	loadOnce sync.Once
	loaded   *lib
	loadErr  error
	buildDir string // removed by TestMain
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// load builds the fake into a temporary folder and binds it, once.
func load(t *testing.T) *lib {
	t.Helper()
	if err := fakenccl.Available(); err != nil {
		t.Skip(err)
	}
	loadOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hora-fakenccl-*")
		if err != nil {
			loadErr = err
			return
		}
		buildDir = dir
		if loadErr = fakenccl.Build(dir); loadErr != nil {
			return
		}
		h, err := purego.Dlopen(filepath.Join(dir, fakenccl.Library), purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			loadErr = err
			return
		}
		l := &lib{}
		for name, fn := range map[string]any{
			"ncclGetVersion": &l.getVersion, "ncclGetUniqueId": &l.getUniqueID,
			"ncclCommInitRank": &l.commInitRank, "ncclCommGetAsyncError": &l.asyncError,
			"ncclAllReduce": &l.allReduce, "ncclBroadcast": &l.broadcast, "ncclAllGather": &l.allGather,
			"ncclCommDestroy": &l.commDestroy, "ncclCommAbort": &l.commAbort,
			"ncclGetErrorString": &l.errorString, "horaFakeNcclLiveComms": &l.liveComms,
			"ncclCommUserRank": &l.commUserRank, "ncclCommCount": &l.commCount,
		} {
			purego.RegisterLibFunc(fn, h, name)
		}
		loaded = l
	})
	require.NoError(t, loadErr)
	return loaded
}

// group creates a communicator of n ranks and waits until it is ready.
func group(t *testing.T, l *lib, n int) []uintptr {
	t.Helper()
	var id uniqueID
	require.Equal(t, int32(0), l.getUniqueID(&id))
	comms := make([]uintptr, n)
	for r := range n {
		require.Equal(t, int32(0), l.commInitRank(&comms[r], int32(n), id, int32(r)))
		if r < n-1 {
			var e int32
			require.Equal(t, int32(0), l.asyncError(comms[r], &e))
			assert.Equal(t, int32(7), e, "rank %d before every rank joined", r)
		}
	}
	for r, c := range comms {
		var rank, count int32
		require.Equal(t, int32(0), l.commUserRank(c, &rank))
		require.Equal(t, int32(0), l.commCount(c, &count))
		assert.Equal(t, int32(r), rank)
		assert.Equal(t, int32(n), count)
		assert.Equal(t, int32(0), wait(l, c))
	}
	return comms
}

// wait polls the communicator's asynchronous error until its work is done.
func wait(l *lib, c uintptr) int32 {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var e int32
		if r := l.asyncError(c, &e); r != 0 {
			return r
		}
		if e != 7 || time.Now().After(deadline) {
			return e
		}
		time.Sleep(time.Millisecond)
	}
}

func destroy(t *testing.T, l *lib, comms []uintptr) {
	for _, c := range comms {
		assert.Equal(t, int32(0), l.commDestroy(c))
	}
}

const (
	ncclInt64   = 4
	ncclFloat16 = 6
	ncclFloat32 = 7
	ncclFloat64 = 8
	ncclSum     = 0
	ncclMax     = 2
	ncclMin     = 3
	ncclAvg     = 4
)

func TestVersionAndErrors(t *testing.T) {
	l := load(t)
	var v int32
	require.Equal(t, int32(0), l.getVersion(&v))
	assert.GreaterOrEqual(t, v, int32(21000))
	assert.Equal(t, "invalid argument (run with NCCL_DEBUG=WARN for details)", l.errorString(4))
	var c uintptr
	var bad uniqueID
	assert.Equal(t, int32(4), l.commInitRank(&c, 2, bad, 0), "an id that ncclGetUniqueId did not make")
}

// TestAllReduce reduces float32, float64, int64 and float16 data over
// three ranks, each op, with the ranks calling in reverse order (the last
// call does the work).
func TestAllReduce(t *testing.T) {
	l := load(t)
	const n, size = 5, 3
	comms := group(t, l, size)
	defer destroy(t, l, comms)

	run := func(dt, op int32, bufs []unsafe.Pointer) {
		t.Helper()
		for r := size - 1; r >= 0; r-- {
			require.Equal(t, int32(0), l.allReduce(bufs[r], bufs[r], n, dt, op, comms[r], 0))
			if r > 0 {
				var e int32
				l.asyncError(comms[r], &e)
				assert.Equal(t, int32(7), e, "rank %d before the others arrived", r)
			}
		}
		for _, c := range comms {
			require.Equal(t, int32(0), wait(l, c))
		}
	}

	// float32: ranks hold r+1, 2(r+1), ...
	f32 := func() ([][]float32, []unsafe.Pointer) {
		b := make([][]float32, size)
		p := make([]unsafe.Pointer, size)
		for r := range b {
			b[r] = make([]float32, n)
			for i := range b[r] {
				b[r][i] = float32((r + 1) * (i + 1))
			}
			p[r] = unsafe.Pointer(&b[r][0])
		}
		return b, p
	}
	b, p := f32()
	run(ncclFloat32, ncclSum, p)
	for r := range b {
		assert.Equal(t, []float32{6, 12, 18, 24, 30}, b[r])
	}
	b, p = f32()
	run(ncclFloat32, ncclMax, p)
	assert.Equal(t, []float32{3, 6, 9, 12, 15}, b[1])
	b, p = f32()
	run(ncclFloat32, ncclMin, p)
	assert.Equal(t, []float32{1, 2, 3, 4, 5}, b[2])
	// Average premultiplies by float32(1/3), as NCCL does.
	b, p = f32()
	run(ncclFloat32, ncclAvg, p)
	third := float32(1.0 / 3)
	for i := range n {
		want := float32(float32(i+1)*third) + float32(float32(2*(i+1))*third)
		want += float32(3*(i+1)) * third
		assert.Equal(t, want, b[0][i], "float32 average %d", i)
	}

	// int64 average truncates toward zero.
	i64 := [][]int64{{-7, 7, 1 << 60, 2, -2}, {0, 0, 1 << 60, 0, 0}, {0, 1, 1 << 60, 0, 0}}
	run(ncclInt64, ncclAvg, []unsafe.Pointer{unsafe.Pointer(&i64[0][0]), unsafe.Pointer(&i64[1][0]), unsafe.Pointer(&i64[2][0])})
	assert.Equal(t, []int64{-2, 2, 1 << 60, 0, 0}, i64[2])

	// float64 sum, in rank order: 1e308 + 1e308 overflows before -1e308 comes.
	f64 := [][]float64{{0.5, 1e308, -1, 0, 3}, {0.25, 1e308, 1, 0, 3}, {0.125, -1e308, 0, 0, 3}}
	run(ncclFloat64, ncclSum, []unsafe.Pointer{unsafe.Pointer(&f64[0][0]), unsafe.Pointer(&f64[1][0]), unsafe.Pointer(&f64[2][0])})
	assert.Equal(t, []float64{0.875, math.Inf(1), 0, 0, 9}, f64[1])

	// float16: 2048 + 1 rounds to 2048 (ties to even), 65504 + 16 to +Inf;
	// each step of the sum is rounded.
	h := func(v float32) uint16 { return f32ToHalf(v) }
	f16 := [][]uint16{
		{h(2048), h(65504), h(1), h(2048), h(0.5)},
		{h(1), h(16), h(2), h(1), h(0.25)},
		{h(0), h(0), h(4), h(1), h(0.25)},
	}
	run(ncclFloat16, ncclSum, []unsafe.Pointer{unsafe.Pointer(&f16[0][0]), unsafe.Pointer(&f16[1][0]), unsafe.Pointer(&f16[2][0])})
	assert.Equal(t, []uint16{h(2048), 0x7c00, h(7), h(2048), h(1)}, f16[0])
}

func TestBroadcastAllGather(t *testing.T) {
	l := load(t)
	const size = 2
	comms := group(t, l, size)
	defer destroy(t, l, comms)
	bufs := [][]int64{{1, 2, 3}, {7, 8, 9}}
	for r := range size {
		require.Equal(t, int32(0), l.broadcast(unsafe.Pointer(&bufs[r][0]), unsafe.Pointer(&bufs[r][0]), 3, ncclInt64, 1, comms[r], 0))
	}
	for _, c := range comms {
		require.Equal(t, int32(0), wait(l, c))
	}
	assert.Equal(t, []int64{7, 8, 9}, bufs[0])

	src := [][]float32{{1, 2}, {3, 4}}
	dst := [][]float32{make([]float32, 4), make([]float32, 4)}
	for r := range size {
		require.Equal(t, int32(0), l.allGather(unsafe.Pointer(&src[r][0]), unsafe.Pointer(&dst[r][0]), 2, ncclFloat32, comms[r], 0))
	}
	for _, c := range comms {
		require.Equal(t, int32(0), wait(l, c))
	}
	assert.Equal(t, []float32{1, 2, 3, 4}, dst[0])
	assert.Equal(t, []float32{1, 2, 3, 4}, dst[1])

	// Zero elements: null pointers are fine.
	for r := range size {
		require.Equal(t, int32(0), l.allReduce(nil, nil, 0, ncclFloat32, ncclSum, comms[r], 0))
	}
	for _, c := range comms {
		require.Equal(t, int32(0), wait(l, c))
	}
	// Bad arguments fail at once.
	assert.Equal(t, int32(4), l.allReduce(nil, nil, 0, 42, ncclSum, comms[0], 0))
	assert.Equal(t, int32(4), l.allReduce(nil, nil, 0, ncclFloat32, 9, comms[0], 0))
	assert.Equal(t, int32(4), l.broadcast(nil, nil, 0, ncclFloat32, 2, comms[0], 0))
}

// TestMismatchAndAbort checks the asynchronous errors: collectives that
// differ fail on every rank; an aborted rank fails the others.
func TestMismatchAndAbort(t *testing.T) {
	l := load(t)
	before := l.liveComms()
	comms := group(t, l, 2)
	assert.Equal(t, before+2, l.liveComms())
	a, b := []float32{1, 2, 3}, []float32{1, 2, 3}
	require.Equal(t, int32(0), l.allReduce(unsafe.Pointer(&a[0]), unsafe.Pointer(&a[0]), 3, ncclFloat32, ncclSum, comms[0], 0))
	require.Equal(t, int32(0), l.allReduce(unsafe.Pointer(&b[0]), unsafe.Pointer(&b[0]), 2, ncclFloat32, ncclSum, comms[1], 0))
	assert.Equal(t, int32(5), wait(l, comms[0]))
	assert.Equal(t, int32(5), wait(l, comms[1]))
	assert.Equal(t, []float32{1, 2, 3}, a, "a mismatched collective leaves the data alone")
	destroy(t, l, comms)

	comms = group(t, l, 2)
	require.Equal(t, int32(0), l.allReduce(unsafe.Pointer(&a[0]), unsafe.Pointer(&a[0]), 3, ncclFloat32, ncclSum, comms[1], 0))
	require.Equal(t, int32(0), l.commAbort(comms[0]))
	assert.Equal(t, int32(6), wait(l, comms[1]), "pending on the other rank")
	require.Equal(t, int32(0), l.commDestroy(comms[1]))
	assert.Equal(t, before, l.liveComms())
}

// f32ToHalf converts v (exact in half) to its half bits.
func f32ToHalf(v float32) uint16 {
	if v == 0 {
		return 0
	}
	b := math.Float32bits(v)
	sign := uint16(b>>16) & 0x8000
	e := int(b>>23&0xff) - 127 + 15
	return sign | uint16(e)<<10 | uint16(b>>13&0x3ff)
}
