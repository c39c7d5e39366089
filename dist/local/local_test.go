package local_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/disttest"
	"github.com/hora-dl/hora/dist/local"
)

// quick is how long a failure test may take: failures must be reported
// at once, never after a timeout.
const quick = 5 * time.Second

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			t.Parallel()
			disttest.RunAll(t, size, func(c disttest.Case) []error {
				return local.Run(size, func(comm dist.Communicator) error {
					return c.Run(context.Background(), comm)
				})
			})
		})
	}
}

// TestOneGroup runs the whole suite on a single group, as a transport with
// one group per job does: no case may leave the group out of step.
func TestOneGroup(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the suite runs once per case in TestConformance")
	}
	const size = 3
	cases := disttest.Cases(size)
	errs := local.Run(size, func(c dist.Communicator) error {
		var errs []error
		for _, cs := range cases {
			if bigName(cs.Name) {
				continue // checked in TestConformance; keep this test quick
			}
			if err := cs.Run(context.Background(), c); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", cs.Name, err))
			}
		}
		return errors.Join(errs...)
	})
	for r, err := range errs {
		assert.NoError(t, err, "rank %d", r)
	}
}

// bigName reports whether a case's name ends in a length over a million.
func bigName(name string) bool {
	i := strings.LastIndex(name, "n=")
	return i >= 0 && len(name)-i-2 > 6
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, -1} {
		_, err := local.New(n)
		assert.Error(t, err, "New(%d)", n)
		errs := local.Run(n, func(dist.Communicator) error { return nil })
		require.Len(t, errs, 1, "Run(%d)", n)
		assert.Error(t, errs[0], "Run(%d)", n)
	}
	comms, err := local.New(3)
	require.NoError(t, err)
	require.Len(t, comms, 3)
	for r, c := range comms {
		assert.Equal(t, []int{r, 3, r, 3}, []int{c.Rank(), c.Size(), c.LocalRank(), c.LocalSize()})
		assert.NoError(t, c.Close())
	}
}

// alloc returns a CPU buffer holding vals converted to dt. It panics on
// error (it runs on the ranks' goroutines, where local.Run turns a panic
// into the rank's error).
func alloc(dt device.DType, vals ...float64) device.Buffer {
	dev := cpu.Default()
	b, err := dev.Alloc(dt, len(vals))
	if err != nil {
		panic(err)
	}
	src, err := dev.Alloc(device.Float64, len(vals))
	if err != nil {
		panic(err)
	}
	if err := dev.Write(src, vals); err != nil {
		panic(err)
	}
	l := device.Contiguous([]int{len(vals)})
	dev.Kernels().Copy(b, l, src, l)
	return b
}

// values reads b as float64 (it panics on error, like alloc).
func values(b device.Buffer) []float64 {
	dev := cpu.Default()
	dst, err := dev.Alloc(device.Float64, b.Len())
	if err != nil {
		panic(err)
	}
	l := device.Contiguous([]int{b.Len()})
	dev.Kernels().Copy(dst, l, b, l)
	out := make([]float64, b.Len())
	if err := dev.Read(out, dst); err != nil {
		panic(err)
	}
	return out
}

// runQuick runs fn on n ranks and fails the test if that takes longer
// than quick.
func runQuick(t *testing.T, n int, fn func(c dist.Communicator) error) []error {
	t.Helper()
	done := make(chan []error, 1)
	go func() { done <- local.Run(n, fn) }()
	select {
	case errs := <-done:
		return errs
	case <-time.After(quick):
		t.Fatalf("the group did not finish within %v", quick)
		return nil
	}
}

func TestMismatch(t *testing.T) {
	t.Parallel()
	// Each case makes one good Allreduce (#1), then a mismatched call (#2)
	// on rank `odd` only, then a good Allreduce again (#3), which must work.
	cases := []struct {
		name string
		odd  int
		call func(ctx context.Context, c dist.Communicator, b device.Buffer) error
		want string
	}{
		{"length", 2, func(ctx context.Context, c dist.Communicator, _ device.Buffer) error {
			n := 1000
			if c.Rank() == 2 {
				n = 999
			}
			return c.Allreduce(ctx, alloc(device.Float32, make([]float64, n)...), dist.Sum)
		}, "dist: allreduce #2: rank 0 has 1000 float32, rank 2 has 999 float32"},
		{"dtype", 1, func(ctx context.Context, c dist.Communicator, _ device.Buffer) error {
			dt := device.Float32
			if c.Rank() == 1 {
				dt = device.Float16
			}
			return c.Allreduce(ctx, alloc(dt, 1, 2), dist.Sum)
		}, "dist: allreduce #2: rank 0 has 2 float32, rank 1 has 2 float16"},
		{"op", 1, func(ctx context.Context, c dist.Communicator, b device.Buffer) error {
			op := dist.Sum
			if c.Rank() == 1 {
				op = dist.Max
			}
			return c.Allreduce(ctx, b, op)
		}, "dist: allreduce #2: rank 0 has op sum, rank 1 has op max"},
		{"root", 2, func(ctx context.Context, c dist.Communicator, b device.Buffer) error {
			return c.Broadcast(ctx, b, c.Rank()/2)
		}, "dist: broadcast #2: rank 0 has root 0, rank 2 has root 1"},
		{"collective", 1, func(ctx context.Context, c dist.Communicator, b device.Buffer) error {
			if c.Rank() == 1 {
				return c.Barrier(ctx)
			}
			return c.Allreduce(ctx, b, dist.Sum)
		}, "dist: collective #2: rank 0 called allreduce, rank 1 called barrier"},
		{"allgather", 1, func(ctx context.Context, c dist.Communicator, _ device.Buffer) error {
			n := 2
			if c.Rank() == 1 {
				n = 3
			}
			return c.Allgather(ctx, alloc(device.Int64, make([]float64, 3*n)...), alloc(device.Int64, make([]float64, n)...))
		}, "dist: allgather #2: rank 0 has 2 int64, rank 1 has 3 int64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bufs := make([]device.Buffer, 3)
			errs := runQuick(t, 3, func(c dist.Communicator) error {
				ctx := context.Background()
				r := c.Rank()
				bufs[r] = alloc(device.Float64, float64(r), float64(10*r))
				if err := c.Allreduce(ctx, bufs[r], dist.Sum); err != nil {
					return fmt.Errorf("first allreduce: %w", err)
				}
				if err := tc.call(ctx, c, bufs[r]); err == nil {
					return errors.New("mismatched call succeeded")
				} else if err.Error() != tc.want {
					return fmt.Errorf("mismatched call: %w", err)
				}
				return c.Allreduce(ctx, bufs[r], dist.Sum)
			})
			for r, err := range errs {
				assert.NoError(t, err, "rank %d", r)
				// 0+1+2 = 3 and 0+10+20 = 30 after #1, times 3 after #3:
				// the mismatched call did not touch the data.
				assert.Equal(t, []float64{9, 90}, values(bufs[r]), "rank %d", r)
			}
		})
	}
}

// errAt returns an error describing what rank r's error should have been.
func checkRankError(t *testing.T, err error, rank int, cause error, msg ...any) {
	t.Helper()
	var re *dist.RankError
	if assert.ErrorAs(t, err, &re, msg...) {
		assert.Equal(t, rank, re.Rank, msg...)
		if cause != nil {
			assert.ErrorIs(t, re, cause, msg...)
		}
	}
}

func TestContextCanceled(t *testing.T) {
	t.Parallel()
	// Ranks 0 and 1 wait in an Allreduce that rank 2 joins only after rank
	// 1's context has ended and rank 1 has left.
	cases := []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		wantErr error
	}{
		{"canceled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}, context.DeadlineExceeded},
		{"already done", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var later [3]error
			left := make(chan struct{}) // rank 1 has given up
			errs := runQuick(t, 3, func(c dist.Communicator) error {
				b := alloc(device.Float32, 1, 2, 3)
				ctx := context.Background()
				switch c.Rank() {
				case 1:
					var cancel context.CancelFunc
					ctx, cancel = tc.ctx()
					defer cancel()
				case 2:
					<-left
				}
				err := c.Allreduce(ctx, b, dist.Sum)
				if c.Rank() == 1 {
					close(left)
				}
				later[c.Rank()] = c.Barrier(context.Background())
				return err
			})
			require.Len(t, errs, 3)
			assert.ErrorIs(t, errs[1], tc.wantErr)
			assert.ErrorContains(t, errs[1], "dist: allreduce #1: ")
			assert.ErrorIs(t, later[1], dist.ErrBroken)
			for _, r := range []int{0, 2} {
				checkRankError(t, errs[r], 1, dist.ErrBroken, "rank %d", r)
				checkRankError(t, later[r], 1, dist.ErrBroken, "rank %d later", r)
			}
		})
	}
}

func TestAbort(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	var later [3]error
	errs := runQuick(t, 3, func(c dist.Communicator) error {
		ctx := context.Background()
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 2 {
			time.Sleep(20 * time.Millisecond) // let the others wait
			c.Abort(boom)
			later[2] = c.Barrier(ctx)
			return nil
		}
		err := c.Allreduce(ctx, alloc(device.Int64, 1, 2), dist.Max)
		later[c.Rank()] = c.Barrier(ctx)
		return err
	})
	require.Len(t, errs, 3)
	for _, r := range []int{0, 1} {
		checkRankError(t, errs[r], 2, boom, "rank %d", r)
		checkRankError(t, later[r], 2, boom, "rank %d later", r)
	}
	assert.NoError(t, errs[2])
	assert.ErrorIs(t, later[2], dist.ErrBroken)
}

func TestCloseWhileWaiting(t *testing.T) {
	t.Parallel()
	var after error
	errs := runQuick(t, 3, func(c dist.Communicator) error {
		ctx := context.Background()
		if c.Rank() == 0 {
			time.Sleep(20 * time.Millisecond)
			if err := c.Close(); err != nil {
				return err
			}
			assert.NoError(t, c.Close(), "second Close")
			after = c.Allreduce(ctx, alloc(device.Float32, 1), dist.Sum)
			return nil
		}
		return c.Broadcast(ctx, alloc(device.Float64, 1, 2), 1)
	})
	require.Len(t, errs, 3)
	assert.NoError(t, errs[0])
	assert.ErrorIs(t, after, dist.ErrClosed)
	for _, r := range []int{1, 2} {
		checkRankError(t, errs[r], 0, dist.ErrClosed, "rank %d", r)
	}
}

func TestRunFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		fail  func()
		check func(t *testing.T, err error)
	}{
		{"error", nil, func(t *testing.T, err error) { assert.EqualError(t, err, "rank 1 failed") }},
		{"panic", func() { panic("rank 1 panics") }, func(t *testing.T, err error) {
			require.Error(t, err)
			assert.Contains(t, err.Error(), "dist/local: rank 1 panicked: rank 1 panics")
			assert.Contains(t, err.Error(), "goroutine", "the error carries the stack")
		}},
		{"nil pointer", func() {
			var b *cpu.Buffer
			_ = b.Len()
		}, func(t *testing.T, err error) {
			require.Error(t, err)
			assert.Contains(t, err.Error(), "nil pointer dereference")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs := runQuick(t, 4, func(c dist.Communicator) error {
				ctx := context.Background()
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				if c.Rank() == 1 {
					if tc.fail != nil {
						tc.fail()
					}
					return errors.New("rank 1 failed")
				}
				// The others wait for rank 1 in two collectives.
				if err := c.Allreduce(ctx, alloc(device.Float32, 1), dist.Sum); err != nil {
					return err
				}
				return c.Barrier(ctx)
			})
			require.Len(t, errs, 4)
			tc.check(t, errs[1])
			for _, r := range []int{0, 2, 3} {
				checkRankError(t, errs[r], 1, nil, "rank %d", r)
				var re *dist.RankError
				if errors.As(errs[r], &re) {
					assert.Same(t, errs[1], re.Err, "rank %d: the cause is rank 1's error", r)
				}
			}
		})
	}
}

// TestRunEarlyReturn checks that a rank that returns nil before the others
// are done does not leave them waiting.
func TestRunEarlyReturn(t *testing.T) {
	t.Parallel()
	errs := runQuick(t, 2, func(c dist.Communicator) error {
		if c.Rank() == 0 {
			return nil
		}
		return c.Barrier(context.Background())
	})
	require.Len(t, errs, 2)
	assert.NoError(t, errs[0])
	checkRankError(t, errs[1], 0, dist.ErrClosed)
}

// foreign is a buffer of another device.
type foreign struct{ device.Buffer }

func (foreign) Device() device.Device { return fakeDevice{} }

type fakeDevice struct{ device.Device }

func (fakeDevice) Name() string { return "fake:0" }

func TestForeignBuffer(t *testing.T) {
	t.Parallel()
	comms, err := local.New(2)
	require.NoError(t, err)
	b := foreign{alloc(device.Float32, 1, 2)}
	ctx := context.Background()
	for _, err := range []error{
		comms[0].Allreduce(ctx, b, dist.Sum),
		comms[0].Broadcast(ctx, b, 0),
		comms[0].Allgather(ctx, foreign{alloc(device.Float32, 1, 2, 3, 4)}, alloc(device.Float32, 1, 2)),
		comms[0].Allgather(ctx, alloc(device.Float32, 1, 2, 3, 4), b),
	} {
		require.Error(t, err)
		assert.Contains(t, err.Error(), "fake:0")
	}
}

func TestSpecialValues(t *testing.T) {
	t.Parallel()
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		name string
		dt   device.DType
		op   dist.ReduceOp
		in   [][]float64 // per rank
		want []float64
	}{
		{"max keeps NaN", device.Float32, dist.Max, [][]float64{{nan, 1, 2}, {1, nan, -inf}}, []float64{nan, nan, 2}},
		{"min keeps NaN", device.Float64, dist.Min, [][]float64{{nan, 1, inf}, {1, nan, -inf}}, []float64{nan, nan, -inf}},
		{"int64 average truncates", device.Int64, dist.Average, [][]float64{{-7, 7, -8, 1}, {0, 0, 1, 0}}, []float64{-3, 3, -3, 0}},
		{"float32 average", device.Float32, dist.Average, [][]float64{{1, 0.1}, {2, 0.2}}, []float64{1.5, float64((float32(0.1) + float32(0.2)) / 2)}},
		// float32 sums 1025 and 2050, both halves; adding in half
		// precision step by step would give 1024 (1024.5 rounds to even,
		// twice) and 2048 (2049 likewise).
		{"float16 sum rounds once", device.Float16, dist.Sum, [][]float64{{1024, 2048}, {0.5, 1}, {0.5, 1}}, []float64{1025, 2050}},
		{"float16 average", device.Float16, dist.Average, [][]float64{{1, 3, -5}, {2, 3, -6}, {3, 4, -6}}, []float64{2, 3.333984375, -5.66796875}},
		{"float16 max of infinities", device.Float16, dist.Max, [][]float64{{-inf, 65504}, {-inf, inf}}, []float64{-inf, inf}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := len(tc.in)
			out := make([][]float64, n)
			errs := runQuick(t, n, func(c dist.Communicator) error {
				b := alloc(tc.dt, tc.in[c.Rank()]...)
				err := c.Allreduce(context.Background(), b, tc.op)
				out[c.Rank()] = values(b)
				return err
			})
			for r := range n {
				require.NoError(t, errs[r])
				require.Len(t, out[r], len(tc.want))
				for i, w := range tc.want {
					if math.IsNaN(w) {
						assert.True(t, math.IsNaN(out[r][i]), "rank %d element %d is %v, want NaN", r, i, out[r][i])
					} else {
						assert.Equal(t, w, out[r][i], "rank %d element %d", r, i)
					}
				}
			}
		})
	}
}

func TestNoAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("timing-free but slow-ish")
	}
	const n = 1 << 12
	for _, dt := range []device.DType{device.Float32, device.Float16} {
		var allocs float64
		var mu sync.Mutex
		errs := local.Run(2, func(c dist.Communicator) error {
			ctx := context.Background()
			b, err := cpu.Default().Alloc(dt, n)
			if err != nil {
				return err
			}
			step := func() {
				if err := c.Allreduce(ctx, b, dist.Average); err != nil {
					panic(err)
				}
				if err := c.Broadcast(ctx, b, 1); err != nil {
					panic(err)
				}
				if err := c.Barrier(ctx); err != nil {
					panic(err)
				}
			}
			step() // warm up
			if c.Rank() == 0 {
				a := testing.AllocsPerRun(50, step)
				mu.Lock()
				allocs = a
				mu.Unlock()
			} else {
				for range 51 {
					step()
				}
			}
			return nil
		})
		for _, err := range errs {
			require.NoError(t, err)
		}
		assert.Zero(t, allocs, "%v: allocations per step", dt)
	}
}

func TestErrorMessages(t *testing.T) {
	t.Parallel()
	comms, err := local.New(2)
	require.NoError(t, err)
	err = comms[0].Broadcast(context.Background(), alloc(device.Float32, 1), 2)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "dist: broadcast:"), err.Error())
}

// TestSlices checks collectives on views made with device.SliceOf, as a
// fusion buffer's prefix, and an in-place Allgather (src is the rank's own
// part of dst).
func TestSlices(t *testing.T) {
	t.Parallel()
	got := make([][]float64, 3)
	errs := runQuick(t, 3, func(c dist.Communicator) error {
		ctx := context.Background()
		r := float64(c.Rank())
		whole := alloc(device.Float32, r, r+1, r+2, 100)
		part, err := device.SliceOf(whole, 1, 2)
		if err != nil {
			return err
		}
		if err := c.Allreduce(ctx, part, dist.Sum); err != nil {
			return err
		}
		dst := alloc(device.Float32, 0, 0, 0, 0, 0, 0)
		own, err := device.SliceOf(dst, 2*c.Rank(), 2)
		if err != nil {
			return err
		}
		l := device.Contiguous([]int{2})
		cpu.Default().Kernels().Copy(own, l, part, l)
		if err := c.Allgather(ctx, dst, own); err != nil {
			return err
		}
		got[c.Rank()] = append(values(whole), values(dst)...)
		return nil
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
		// 1+2+3 = 6 and 2+3+4 = 9 replace elements 1 and 2 only.
		assert.Equal(t, []float64{float64(r), 6, 9, 100, 6, 9, 6, 9, 6, 9}, got[r], "rank %d", r)
	}
}
