//go:build mpi && cgo

package mpi

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/disttest"
	"github.com/hora-dl/hora/dist/shm"
)

// testComm is this process's communicator when the test binary runs
// under a launcher (opened by TestMain), nil otherwise.
var testComm *Comm

// TestMain opens MPI when the tests run under mpirun, and makes every rank
// exit with a failure when any rank failed.
func TestMain(m *testing.M) {
	if n, _ := dist.LauncherSize(); n > 0 {
		c, err := Open()
		if err != nil {
			fmt.Fprintln(os.Stderr, "dist/mpi: open:", err)
			os.Exit(2)
		}
		testComm = c
	}
	// Ranks other than 0 keep their test output to themselves unless they
	// fail (or HORA_MPI_TEST_OUTPUT=all).
	var quiet *os.File
	if testComm != nil && testComm.Rank() != 0 && os.Getenv("HORA_MPI_TEST_OUTPUT") != "all" {
		if f, err := os.CreateTemp("", "hora-mpi-test-*.out"); err == nil {
			os.Remove(f.Name())
			quiet, os.Stdout = f, f
		}
	}
	code := m.Run()
	if c := testComm; c != nil {
		// A failing rank shows its output before the ranks agree on the
		// exit status: once rank 0 has exited with a failure, mpirun ends
		// the job, and output written after that is lost.
		if quiet != nil && code != 0 {
			showOutput(c.Rank(), quiet)
		}
		own := code
		code = agreeExit(c, code)
		if own == 0 && code != 0 {
			// Give mpirun a moment to forward the failing rank's output
			// before this rank's failure makes it end the job.
			time.Sleep(300 * time.Millisecond)
		}
		if err := c.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "dist/mpi: rank %d: %v\n", c.Rank(), err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// showOutput copies the test output a quiet rank kept in f to stderr.
func showOutput(rank int, f *os.File) {
	fmt.Fprintf(os.Stderr, "--- output of rank %d ---\n", rank)
	f.Seek(0, io.SeekStart)
	io.Copy(os.Stderr, f)
	os.Stderr.Sync()
}

// agreeExit returns the largest exit code of all the ranks, so that a
// test failing on one rank fails the job whichever rank's output is read.
func agreeExit(c *Comm, code int) int {
	b, _ := cpu.Default().Alloc(device.Int64, 1)
	b.(*cpu.Buffer).Int64s()[0] = int64(code)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Allreduce(ctx, b, dist.Max); err != nil {
		fmt.Fprintf(os.Stderr, "dist/mpi: rank %d: agreeing on the exit status: %v\n", c.Rank(), err)
		return max(code, 1)
	}
	all := int(b.(*cpu.Buffer).Int64s()[0])
	if all != 0 && code == 0 && c.Rank() == 0 {
		fmt.Fprintln(os.Stderr, "dist/mpi: another rank failed (see its \"--- output of rank\" section)")
	}
	return all
}

// needComm skips a test that needs the ranks of an mpirun job.
func needComm(t *testing.T) *Comm {
	t.Helper()
	if testComm == nil {
		t.Skip("needs MPI ranks: run under mpirun (make test does: mpirun --allow-run-as-root -np 2 bin/mpi.test)")
	}
	return testComm
}

func TestConformance(t *testing.T) {
	c := needComm(t)
	disttest.RunAll(t, c.Size(), func(cs disttest.Case) []error {
		return []error{cs.Run(context.Background(), c)}
	})
}

func TestInitUnderLauncher(t *testing.T) {
	c := needComm(t)
	got := arranged(t)
	if c.Size() == 1 {
		assert.Equal(t, 1, got.Size(), "a launcher with one rank gives dist.Single")
		return
	}
	// Init wraps the MPI communicator as the layout asks: shared memory on
	// one host, the hierarchical allreduce on several hosts of which one
	// holds several ranks, MPI alone otherwise (or with HORA_SHM=0). The
	// result must pass the conformance suite across processes too.
	l := jobLayout(t, c)
	want := "MPI"
	switch {
	case os.Getenv("HORA_SHM") == "0":
	case l.Hosts == 1:
		want = "shared memory + MPI"
	case l.Most > 1 && os.Getenv(HierarchicalEnv) != "off":
		per := fmt.Sprint(l.Most)
		if l.Fewest != l.Most {
			per = fmt.Sprintf("%d–%d", l.Fewest, l.Most)
		}
		want = fmt.Sprintf("hierarchical: shared memory on %d hosts × %s ranks + MPI between hosts", l.Hosts, per)
	}
	t.Logf("rank %d: %s", c.Rank(), Describe(got))
	assert.Equal(t, want, Describe(got))
	assert.Equal(t, c.Rank(), got.Rank())
	assert.Equal(t, c.Size(), got.Size())
	assert.Equal(t, c.LocalRank(), got.LocalRank())
	assert.Equal(t, c.LocalSize(), got.LocalSize())
	if want != "MPI" {
		assert.Equal(t, l, got.(interface{ Layout() shm.Layout }).Layout())
	}
	disttest.RunAll(t, got.Size(), func(cs disttest.Case) []error {
		return []error{cs.Run(context.Background(), got)}
	})
	again, err := Open()
	require.NoError(t, err)
	assert.Same(t, c, again, "a second Open returns the same communicator")
	assert.True(t, Built())
}

func TestRanks(t *testing.T) {
	c := needComm(t)
	n, _ := dist.LauncherSize()
	assert.Equal(t, n, c.Size())
	assert.GreaterOrEqual(t, c.Rank(), 0)
	assert.Less(t, c.Rank(), c.Size())
	assert.Less(t, c.LocalRank(), c.LocalSize())
	assert.LessOrEqual(t, c.LocalSize(), c.Size())
	if s := os.Getenv("OMPI_COMM_WORLD_LOCAL_RANK"); s != "" {
		assert.Equal(t, s, fmt.Sprint(c.LocalRank()))
	}
	if s := os.Getenv("OMPI_COMM_WORLD_LOCAL_SIZE"); s != "" {
		assert.Equal(t, s, fmt.Sprint(c.LocalSize()))
	}
}

// TestPieces reduces and broadcasts buffers of several MaxPieceBytes
// pieces and a partial one, and checks every element.
func TestPieces(t *testing.T) {
	c := needComm(t)
	ctx := context.Background()
	r, size := c.Rank(), c.Size()
	n := 2*MaxPieceBytes/8 + 12345 // float64: 2 full pieces and a part
	b := alloc(t, device.Float64, n).(*cpu.Buffer)
	x := b.Float64s()
	for i := range x {
		x[i] = float64(i%1000 + r)
	}
	require.NoError(t, c.Allreduce(ctx, b, dist.Sum))
	bad := 0
	for i, v := range x {
		if want := float64(size*(i%1000) + size*(size-1)/2); v != want {
			bad++
			if bad == 1 {
				t.Errorf("sum: element %d (piece %d) = %v, want %v", i, i*8/MaxPieceBytes, v, want)
			}
		}
	}
	assert.Zero(t, bad, "elements wrong")

	i64 := alloc(t, device.Int64, 3*MaxPieceBytes/8+1).(*cpu.Buffer)
	y := i64.Int64s()
	for i := range y {
		y[i] = int64(i) * int64(r+1)
	}
	require.NoError(t, c.Allreduce(ctx, i64, dist.Average))
	for i, v := range y {
		if want := int64(i) * int64(size*(size+1)/2) / int64(size); v != want {
			t.Fatalf("int64 average: element %d = %d, want %d", i, v, want)
		}
	}

	f32 := alloc(t, device.Float32, 2*MaxPieceBytes/4+3).(*cpu.Buffer)
	z := f32.Float32s()
	for i := range z {
		z[i] = float32(i%4096 - r)
	}
	root := size - 1
	if r != root {
		for i := range z {
			z[i] = -1
		}
	}
	require.NoError(t, c.Broadcast(ctx, f32, root))
	for i, v := range z {
		if want := float32(i%4096 - root); v != want {
			t.Fatalf("broadcast: element %d = %v, want %v", i, v, want)
		}
	}
}

// TestHalfOps checks the float16 MPI ops: sums round once per pair to
// nearest even, min and max keep NaNs, averages round after the division.
func TestHalfOps(t *testing.T) {
	c := needComm(t)
	ctx := context.Background()
	r, size := c.Rank(), c.Size()
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	// Per element: rank 0's value, the others' value.
	vals := [][2]float32{{1, 2}, {-3, 5}, {nan, 1}, {1, nan}, {inf, -inf}, {0.1, 0.2}, {65504, -65504}, {-0.0, 0.0}, {3, 3}}
	// Elements whose rounded sum over three or more ranks depends on the order.
	orderMatters := map[int]bool{5: true, 6: true}
	in := make([]float32, len(vals))
	for i, v := range vals {
		in[i] = v[min(r, 1)]
	}
	run := func(op dist.ReduceOp) []float32 {
		b := alloc(t, device.Float16, len(in)).(*cpu.Buffer)
		cpu.Float32ToFloat16(b.Float16s(), in)
		require.NoError(t, c.Allreduce(ctx, b, op))
		out := make([]float32, len(in))
		cpu.Float16ToFloat32(out, b.Float16s())
		return out
	}
	round := func(f float32) float32 {
		h := []uint16{0}
		cpu.Float32ToFloat16(h, []float32{f})
		o := []float32{0}
		cpu.Float16ToFloat32(o, h)
		return o[0]
	}
	// The expected value: combine rank 0's with each other rank's in turn,
	// rounding to half after each step (with two ranks, the only order).
	expect := func(i int, op dist.ReduceOp) float32 {
		a, b := round(vals[i][0]), round(vals[i][1])
		acc := a
		for k := 1; k < size; k++ {
			switch op {
			case dist.Sum, dist.Average:
				acc = round(acc + b)
			case dist.Min:
				if isNaN(acc) || isNaN(b) {
					acc = nan
				} else {
					acc = min(acc, b)
				}
			case dist.Max:
				if isNaN(acc) || isNaN(b) {
					acc = nan
				} else {
					acc = max(acc, b)
				}
			}
		}
		if op == dist.Average {
			acc = round(acc / float32(size))
		}
		return acc
	}
	for _, op := range []dist.ReduceOp{dist.Sum, dist.Min, dist.Max, dist.Average} {
		got := run(op)
		for i := range vals {
			want := expect(i, op)
			if (op == dist.Sum || op == dist.Average) && size > 2 && orderMatters[i] {
				continue // with more ranks MPI picks the order of the roundings
			}
			if isNaN(want) {
				assert.True(t, isNaN(got[i]), "%v element %d (%v): got %v, want NaN", op, i, vals[i], got[i])
				continue
			}
			assert.Equal(t, want, got[i], "%v element %d (%v)", op, i, vals[i])
		}
	}
}

func isNaN(f float32) bool { return f != f }

// TestCanceledBeforeStart checks that a collective whose context is
// already done returns its error and leaves the communicator usable.
func TestCanceledBeforeStart(t *testing.T) {
	c := needComm(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := alloc(t, device.Float32, 4)
	assert.ErrorIs(t, c.Allreduce(ctx, b, dist.Sum), context.Canceled)
	assert.ErrorIs(t, c.Barrier(ctx), context.Canceled)
	assert.ErrorIs(t, c.RawAllreduce(ctx, []float32{1}), context.Canceled)
	require.NoError(t, c.Barrier(context.Background()), "the communicator still works")
}

// TestForeignBuffer checks the error for a buffer of another device.
func TestForeignBuffer(t *testing.T) {
	c := needComm(t)
	err := c.Allreduce(context.Background(), fakeBuffer{}, dist.Sum)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fake:0")
	assert.Contains(t, err.Error(), "CPU buffers only")
}

// fakeBuffer is a buffer of a device that is not the CPU.
type fakeBuffer struct{}

func (fakeBuffer) Device() device.Device { return fakeDevice{} }
func (fakeBuffer) DType() device.DType   { return device.Float32 }
func (fakeBuffer) Len() int              { return 4 }
func (fakeBuffer) Free()                 {}

type fakeDevice struct{ device.Device }

func (fakeDevice) Name() string { return "fake:0" }

func TestRawAllreduce(t *testing.T) {
	c := needComm(t)
	r, size := c.Rank(), c.Size()
	buf := make([]float32, MaxPieceBytes/4+7)
	for i := range buf {
		buf[i] = float32(i%100 + r)
	}
	require.NoError(t, c.RawAllreduce(context.Background(), buf))
	for i, v := range buf {
		if want := float32(size*(i%100) + size*(size-1)/2); v != want {
			t.Fatalf("element %d = %v, want %v", i, v, want)
		}
	}
}

// TestWaitingRankSleeps checks that a rank waiting for a late peer does
// not keep a core busy: rank 0 enters a Barrier late, and the others'
// CPU time while they wait must stay well under the time they wait.
func TestWaitingRankSleeps(t *testing.T) {
	c := needComm(t)
	ctx := context.Background()
	require.NoError(t, c.Barrier(ctx))
	const late = 500 * time.Millisecond
	if c.Rank() == 0 {
		time.Sleep(late)
		require.NoError(t, c.Barrier(ctx))
		return
	}
	cpu0 := cpuTime(t)
	start := time.Now()
	require.NoError(t, c.Barrier(ctx))
	wall, used := time.Since(start), cpuTime(t)-cpu0
	t.Logf("rank %d waited %v, using %v of CPU", c.Rank(), wall, used)
	assert.Less(t, used, wall/4, "a waiting rank should sleep between polls")
}

// cpuTime returns the process's user and system CPU time.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func alloc(t testing.TB, dt device.DType, n int) device.Buffer {
	t.Helper()
	b, err := cpu.Default().Alloc(dt, n)
	require.NoError(t, err)
	return b
}

// TestInitWithoutLauncher checks that Init outside a launcher returns a
// group of one without opening MPI.
func TestInitWithoutLauncher(t *testing.T) {
	if n, v := dist.LauncherSize(); n > 0 {
		t.Skipf("started by a launcher (%s=%d)", v, n)
	}
	c, err := Init()
	require.NoError(t, err)
	assert.Equal(t, 1, c.Size())
	assert.NoError(t, c.Close())
}

// TestGoSignalsKept checks that MPI_Init left Go's signal handlers in
// place (OpenMPI installs its own only where none is): a nil dereference
// is still a recoverable panic.
func TestGoSignalsKept(t *testing.T) {
	needComm(t)
	assert.Panics(t, func() {
		var p *int
		*p = 1
	})
}

// TestTrainingEquivalence: N ranks over MPI (and over the communicator
// Init gives: shared memory on one host, hierarchical on several) with
// batch B each train the same parameters as one process with batch N·B,
// for SGD with momentum and Adam, fused (through AllreduceMany) or not.
func TestTrainingEquivalence(t *testing.T) {
	c := needComm(t)
	if c.Size() == 1 {
		t.Skip("needs several ranks")
	}
	wrapped := arranged(t)
	for _, tc := range []struct {
		name     string
		comm     dist.Communicator
		opt      string
		compress bool
		fusion   int64
		tol      float64
	}{
		{"mpi/sgd", c, "sgd", false, 0, 1e-5},
		{"mpi/adam", c, "adam", false, 0, 1e-5},
		{"mpi/sgd/unfused", c, "sgd", false, -1, 1e-5},
		{"arranged/sgd", wrapped, "sgd", false, 0, 1e-5},
		{"arranged/adam", wrapped, "adam", false, 0, 1e-5},
		{"mpi/adam/fp16", c, "adam", true, 0, 5e-2},
		{"arranged/adam/fp16", wrapped, "adam", true, 0, 5e-2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := disttest.Equivalence(context.Background(), tc.comm, disttest.EquivalenceConfig{
				Optimizer: tc.opt, Steps: 20, Batch: 8, Compress: tc.compress,
				Engine: dist.EngineConfig{FusionThreshold: tc.fusion}})
			require.NoError(t, err)
			assert.LessOrEqual(t, d, tc.tol, "rank %d: max relative parameter difference", c.Rank())
		})
	}
}
