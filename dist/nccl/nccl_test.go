//go:build !windows

package nccl

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/device/cuda"
	"github.com/hora-dl/hora/device/cuda/cudaemu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/disttest"
	"github.com/hora-dl/hora/dist/local"
	"github.com/hora-dl/hora/dist/nccl/internal/fakenccl"
)

// skipReason says why the tests that need devices cannot run, when they
// cannot.
var skipReason string

// onGPU is set when the tests run against a real GPU and NCCL
// (HORA_CUDA_TEST=gpu) rather than the emulator and the fake NCCL.
var onGPU = os.Getenv("HORA_CUDA_TEST") == "gpu"

// TestMain points HORA_CUDA_LIBS at the CUDA emulator (device/cuda/cudaemu,
// built once per machine into its cache) and at a fake NCCL built into a
// temporary folder, before anything loads a library, unless
// HORA_CUDA_TEST=gpu asks for the real ones.
func TestMain(m *testing.M) {
	var dir string
	if !onGPU {
		var err error
		var emuDir string
		dir, err = os.MkdirTemp("", "hora-nccl-test-*")
		switch {
		case err != nil:
			skipReason = err.Error()
		case cudaemu.Available() != nil:
			skipReason = fmt.Sprintf("the CUDA emulator cannot be built: %v (HORA_CUDA_TEST=gpu runs on a real GPU)", cudaemu.Available())
		case fakenccl.Available() != nil:
			skipReason = fmt.Sprintf("the fake NCCL cannot be built: %v (HORA_CUDA_TEST=gpu runs on a real GPU)", fakenccl.Available())
		default:
			if emuDir, err = cudaemu.BuildCached(); err != nil {
				skipReason = fmt.Sprintf("building the CUDA emulator: %v", err)
			} else if err := fakenccl.Build(dir); err != nil {
				skipReason = fmt.Sprintf("building the fake NCCL: %v", err)
			} else {
				os.Setenv("HORA_CUDA_LIBS", emuDir+string(os.PathListSeparator)+dir)
				os.Setenv("HORA_CACHE_DIR", dir)
			}
		}
	}
	code := m.Run()
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// devices returns the GPU of each of size NCCL ranks: cuda:(rank%2) on
// the emulator (which has two, so that ranks share one), and a GPU each on
// a real machine (NCCL refuses two ranks on one GPU). It skips the test
// when there are no devices, too few, or no NCCL.
func devices(t *testing.T, size int) []*cuda.Device {
	t.Helper()
	devs, n := sharedDevices(t, size)
	if onGPU && n < size {
		t.Skipf("%d NCCL ranks need %d GPUs; this machine has %d", size, size, n)
	}
	if _, err := library(); err != nil {
		if onGPU { // HORA_CUDA_TEST=gpu: a missing NCCL is a failure
			t.Fatalf("HORA_CUDA_TEST=gpu, but no NCCL: %v", err)
		}
		t.Skipf("no NCCL: %v", err)
	}
	return devs
}

// sharedDevices returns cuda:(rank%n) for each of size ranks, where n is
// the number of devices (for host staging, where ranks may share a GPU),
// and n. It skips the test when there are no devices.
func sharedDevices(t *testing.T, size int) ([]*cuda.Device, int) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	n, err := cuda.Available()
	if errors.Is(err, device.ErrUnavailable) {
		if onGPU {
			t.Fatalf("HORA_CUDA_TEST=gpu, but no GPU: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	require.NoError(t, err)
	devs := make([]*cuda.Device, size)
	for r := range devs {
		devs[r], err = cuda.Open(r % n)
		require.NoError(t, err)
	}
	return devs, n
}

// onRanks runs fn on every rank of a new dist/local group of size ranks,
// each with an NCCL communicator on its device of devs, and returns each
// rank's error.
func onRanks(size int, devs []*cuda.Device, fn func(c dist.Communicator, dev *cuda.Device) error) []error {
	return local.Run(size, func(base dist.Communicator) error {
		dev := devs[base.Rank()]
		c, err := New(context.Background(), base, dev)
		if err != nil {
			return err
		}
		defer c.Close()
		if !UsesNCCL(c) {
			return fmt.Errorf("rank %d does not use NCCL: %s", base.Rank(), Reason(c))
		}
		return fn(c, dev)
	})
}

// noErrors fails the test for each rank's error.
func noErrors(t *testing.T, errs []error) {
	t.Helper()
	assert.NotEmpty(t, errs)
	for r, err := range errs {
		assert.NoError(t, err, "rank %d", r)
	}
}

// TestConformance runs the dist conformance suite on 2 and 3 ranks with
// buffers on cuda:0 and each rank's communicator on its own device: rank 0
// (and 2) reduce the buffers where they are; rank 1, whose communicator is
// on cuda:1 in the emulator, copies them to its GPU and back.
func TestConformance(t *testing.T) {
	for _, size := range []int{2, 3} {
		t.Run(fmt.Sprintf("ranks=%d", size), func(t *testing.T) {
			devs := devices(t, size)
			disttest.RunAllOn(t, devs[0], size, func(cs disttest.Case) []error {
				return onRanks(size, devs, func(c dist.Communicator, _ *cuda.Device) error {
					return cs.Run(context.Background(), c)
				})
			})
		})
	}
}

// TestConformanceStaged runs the suite through host staging, the path
// without NCCL.
func TestConformanceStaged(t *testing.T) {
	for _, size := range []int{2, 3} {
		t.Run(fmt.Sprintf("ranks=%d", size), func(t *testing.T) {
			devs, _ := sharedDevices(t, size)
			disttest.RunAllOn(t, devs[len(devs)-1], size, func(cs disttest.Case) []error {
				return local.Run(size, func(base dist.Communicator) error {
					c := Staged(base, devs[base.Rank()])
					defer c.Close()
					return cs.Run(context.Background(), c)
				})
			})
		})
	}
}

// lengths are the buffer lengths of TestCollectives.
var lengths = []int{0, 1, 7, 1009, 65537}

// units is rank r's value at index i: an integer in [-11, 11], in quarters
// for the float types.
func units(r, i int) int64 { return int64((i*7+r*13+5)%23) - 11 }

// int64Value is rank r's Int64 value at index i: units and a large part,
// so that a trip through float64 would show.
func int64Value(r, i int) int64 { return units(r, i) + int64(r+1)<<50*int64(i%3-1) }

// TestCollectives checks every collective on buffers of each rank's own
// device, for every type, op and root, against values computed here.
func TestCollectives(t *testing.T) {
	for _, size := range []int{2, 3} {
		t.Run(fmt.Sprintf("ranks=%d", size), func(t *testing.T) {
			devs := devices(t, size)
			noErrors(t, onRanks(size, devs, func(c dist.Communicator, dev *cuda.Device) error {
				ctx := context.Background()
				var errs []error
				for _, dt := range []device.DType{device.Float32, device.Float64, device.Int64, device.Float16} {
					for _, n := range lengths {
						for _, op := range []dist.ReduceOp{dist.Sum, dist.Average, dist.Min, dist.Max} {
							errs = append(errs, checkAllreduce(ctx, c, dev, dt, op, n))
						}
						for root := range size {
							errs = append(errs, checkBroadcast(ctx, c, dev, dt, root, n))
						}
						errs = append(errs, checkAllgather(ctx, c, dev, dt, n))
					}
				}
				return errors.Join(errs...)
			}))
		})
	}
}

// values returns the host data of n elements of dt, element i holding
// f(i) (units: quarters for the float types).
func values(dt device.DType, n int, f func(i int) float64) any {
	switch dt {
	case device.Float32:
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(f(i))
		}
		return v
	case device.Float64:
		v := make([]float64, n)
		for i := range v {
			v[i] = f(i)
		}
		return v
	case device.Int64:
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(f(i))
		}
		return v
	}
	v := make([]uint16, n)
	for i := range v {
		v[i] = toHalf(f(i))
	}
	return v
}

// rankValue is rank r's value at i, as f64 (exact for every type but
// Int64's large values, which int64Value gives).
func rankValue(dt device.DType, r, i int) float64 {
	if dt == device.Int64 {
		return float64(units(r, i))
	}
	return float64(units(r, i)) / 4
}

// upload writes host into a new buffer of dev.
func upload(dev *cuda.Device, dt device.DType, host any) (device.Buffer, error) {
	b, err := dev.Alloc(dt, lenOf(host))
	if err != nil {
		return nil, err
	}
	if err := dev.Write(b, host); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}

func lenOf(host any) int {
	switch v := host.(type) {
	case []float32:
		return len(v)
	case []float64:
		return len(v)
	case []int64:
		return len(v)
	case []uint16:
		return len(v)
	}
	panic("lenOf")
}

// compare reads b and compares it with want (host data of b's type).
func compare(dev *cuda.Device, what string, b device.Buffer, want any) error {
	hb, err := cpu.Default().Alloc(b.DType(), b.Len())
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	got := hostData(hb.(*cpu.Buffer))
	if err := dev.Read(got, b); err != nil {
		return fmt.Errorf("%s: read: %w", what, err)
	}
	if !assert.ObjectsAreEqual(want, got) {
		g, w := fmt.Sprint(got), fmt.Sprint(want)
		return fmt.Errorf("%s: got %.300s, want %.300s", what, g, w)
	}
	return nil
}

func checkAllreduce(ctx context.Context, c dist.Communicator, dev *cuda.Device, dt device.DType, op dist.ReduceOp, n int) error {
	r, size := c.Rank(), c.Size()
	what := fmt.Sprintf("rank %d: allreduce %v %v of %d", r, dt, op, n)
	var host, want any
	if dt == device.Int64 {
		h, w := make([]int64, n), make([]int64, n)
		for i := range n {
			h[i] = int64Value(r, i)
			acc := int64Value(0, i)
			for q := 1; q < size; q++ {
				v := int64Value(q, i)
				switch op {
				case dist.Sum, dist.Average:
					acc += v
				case dist.Min:
					acc = min(acc, v)
				case dist.Max:
					acc = max(acc, v)
				}
			}
			if op == dist.Average {
				acc /= int64(size) // truncated toward zero
			}
			w[i] = acc
		}
		host, want = h, w
	} else {
		host = values(dt, n, func(i int) float64 { return rankValue(dt, r, i) })
		want = values(dt, n, func(i int) float64 {
			acc := rankValue(dt, 0, i)
			for q := 1; q < size; q++ {
				v := rankValue(dt, q, i)
				switch op {
				case dist.Sum, dist.Average:
					acc += v
				case dist.Min:
					acc = min(acc, v)
				case dist.Max:
					acc = max(acc, v)
				}
			}
			if op == dist.Average {
				acc /= float64(size) // rounded once more by values, to the type
			}
			return acc
		})
	}
	b, err := upload(dev, dt, host)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer b.Free()
	if err := c.Allreduce(ctx, b, op); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return compare(dev, what, b, want)
}

func checkBroadcast(ctx context.Context, c dist.Communicator, dev *cuda.Device, dt device.DType, root, n int) error {
	r := c.Rank()
	what := fmt.Sprintf("rank %d: broadcast %v of %d from %d", r, dt, n, root)
	host := values(dt, n, func(i int) float64 { return rankValue(dt, r, i) })
	want := values(dt, n, func(i int) float64 { return rankValue(dt, root, i) })
	b, err := upload(dev, dt, host)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer b.Free()
	if err := c.Broadcast(ctx, b, root); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return compare(dev, what, b, want)
}

func checkAllgather(ctx context.Context, c dist.Communicator, dev *cuda.Device, dt device.DType, n int) error {
	r, size := c.Rank(), c.Size()
	what := fmt.Sprintf("rank %d: allgather %v of %d", r, dt, n)
	src, err := upload(dev, dt, values(dt, n, func(i int) float64 { return rankValue(dt, r, i) }))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer src.Free()
	dst, err := upload(dev, dt, values(dt, size*n, func(int) float64 { return 1000 }))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer dst.Free()
	if err := c.Allgather(ctx, dst, src); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return compare(dev, what, dst, values(dt, size*n, func(i int) float64 { return rankValue(dt, i/max(n, 1), i%max(n, 1)) }))
}

// toHalf rounds v to the nearest IEEE binary16 (ties to even) and returns
// its bits.
func toHalf(v float64) uint16 {
	var sign uint16
	if math.Signbit(v) {
		sign, v = 0x8000, -v
	}
	switch {
	case math.IsNaN(v):
		return 0x7e00
	case v == 0:
		return sign
	}
	_, e := math.Frexp(v) // v = f·2^e, f in [0.5, 1)
	k := max(e-11, -24)   // the weight of the last significand bit
	r := math.Ldexp(math.RoundToEven(math.Ldexp(v, -k)), k)
	if r > 65504 {
		return sign | 0x7c00
	}
	if r < 1.0/(1<<14) {
		return sign | uint16(math.Ldexp(r, 24)) // subnormal
	}
	f, e := math.Frexp(r)
	return sign | uint16(e-1+15)<<10 | uint16(math.Ldexp(f, 11)-1024)
}

func TestToHalf(t *testing.T) {
	for v, want := range map[float64]uint16{
		1: 0x3c00, -2: 0xc000, 65504: 0x7bff, 65520: 0x7c00, 2049: 0x6800, 2051: 0x6802,
		1.0 / (1 << 24): 0x0001, 0.1: 0x2e66, 1.0 / 3: 0x3555,
	} {
		assert.Equal(t, want, toHalf(v), "%v", v)
	}
}

// TestCPUBuffersGoToBase reduces CPU buffers through an NCCL communicator.
func TestCPUBuffersGoToBase(t *testing.T) {
	devs := devices(t, 2)
	noErrors(t, onRanks(2, devs, func(c dist.Communicator, _ *cuda.Device) error {
		b, err := cpu.Default().Alloc(device.Float64, 3)
		if err != nil {
			return err
		}
		copy(b.(*cpu.Buffer).Float64s(), []float64{1, 2, float64(c.Rank())})
		if err := c.Allreduce(context.Background(), b, dist.Sum); err != nil {
			return err
		}
		if got := b.(*cpu.Buffer).Float64s(); !assert.ObjectsAreEqual([]float64{2, 4, 1}, got) {
			return fmt.Errorf("rank %d: got %v", c.Rank(), got)
		}
		return c.Barrier(context.Background())
	}))
}

// TestFallback checks that the ranks agree on host staging when NCCL is
// missing on one of them, and that HORA_NCCL=0 turns NCCL off.
func TestFallback(t *testing.T) {
	devs, _ := sharedDevices(t, 2)
	missing := errors.New("cuda: NCCL (libnccl.so.2) not found")
	for _, tc := range []struct {
		name    string
		env     string
		lib     func(rank int) func() (*api, error)
		reasons [2]string
	}{
		{"missing everywhere", "", func(int) func() (*api, error) {
			return func() (*api, error) { return nil, missing }
		}, [2]string{"NCCL not used (" + missing.Error() + ")", "NCCL not used (" + missing.Error() + ")"}},
		{"missing on rank 1", "", func(r int) func() (*api, error) {
			if r == 1 {
				return func() (*api, error) { return nil, missing }
			}
			return library
		}, [2]string{"NCCL not found on another rank", "NCCL not used"}},
		{"HORA_NCCL=0", "0", func(int) func() (*api, error) { return library }, [2]string{"HORA_NCCL=0", "HORA_NCCL=0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := library(); err != nil && tc.name != "missing everywhere" {
				t.Skipf("no NCCL: %v", err)
			}
			t.Setenv("HORA_NCCL", tc.env)
			noErrors(t, local.Run(2, func(base dist.Communicator) error {
				r := base.Rank()
				c, err := newComm(context.Background(), base, devs[r], tc.lib(r))
				if err != nil {
					return err
				}
				defer c.Close()
				reason := Reason(c)
				if UsesNCCL(c) || !strings.Contains(reason, tc.reasons[r]) || !strings.Contains(reason, "host staging") {
					return fmt.Errorf("rank %d: reason %q, want host staging and %q", r, reason, tc.reasons[r])
				}
				return checkAllreduce(context.Background(), c, devs[r], device.Float32, dist.Average, 1009)
			}))
		})
	}
}

// TestReason checks what Reason says for NCCL and other communicators.
func TestReason(t *testing.T) {
	devs := devices(t, 1)
	c, err := New(context.Background(), dist.Single(), devs[0])
	require.NoError(t, err)
	defer c.Close()
	a, err := library()
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("NCCL %s (%s) on cuda:0", versionString(a.version), a.path), Reason(c))
	assert.Equal(t, "", Reason(dist.Single()))
	assert.False(t, UsesNCCL(dist.Single()))
	assert.Equal(t, "host staging through the base communicator (cuda:0)", Reason(Staged(dist.Single(), devs[0])))
}

// liveComms returns the fake NCCL's count of communicators not destroyed.
func liveComms(t *testing.T) int64 {
	t.Helper()
	if onGPU {
		t.Skip("counts the fake NCCL's communicators")
	}
	a, err := library()
	require.NoError(t, err)
	h, err := purego.Dlopen(a.path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	require.NoError(t, err)
	var f func() int64
	purego.RegisterLibFunc(&f, h, "horaFakeNcclLiveComms")
	return f()
}

// TestClose checks that Close destroys the NCCL communicator, is
// idempotent, and makes later collectives fail with dist.ErrClosed.
func TestClose(t *testing.T) {
	devs := devices(t, 2)
	before := liveComms(t)
	noErrors(t, local.Run(2, func(base dist.Communicator) error {
		dev := devs[base.Rank()]
		c, err := New(context.Background(), base, dev)
		if err != nil {
			return err
		}
		b, err := dev.Alloc(device.Float32, 4)
		if err != nil {
			return err
		}
		defer b.Free()
		if err := c.Close(); err != nil {
			return err
		}
		if err := c.Close(); err != nil {
			return fmt.Errorf("second close: %w", err)
		}
		if err := c.Allreduce(context.Background(), b, dist.Sum); !errors.Is(err, dist.ErrClosed) {
			return fmt.Errorf("allreduce after close: %v", err)
		}
		if err := c.Barrier(context.Background()); !errors.Is(err, dist.ErrClosed) {
			return fmt.Errorf("barrier after close: %v", err)
		}
		return nil
	}))
	assert.Equal(t, before, liveComms(t))
}

// TestMismatch makes the ranks call different collectives: NCCL (the fake)
// reports it on both, and the communicators are broken afterwards.
func TestMismatch(t *testing.T) {
	devs := devices(t, 2)
	if onGPU {
		t.Skip("NCCL on a GPU does not detect mismatched collectives (it hangs or reduces garbage)")
	}
	noErrors(t, onRanks(2, devs, func(c dist.Communicator, dev *cuda.Device) error {
		b, err := dev.Alloc(device.Float32, 4+c.Rank())
		if err != nil {
			return err
		}
		defer b.Free()
		err = c.Allreduce(context.Background(), b, dist.Sum)
		if err == nil || !strings.Contains(err.Error(), "ncclInvalidUsage") {
			return fmt.Errorf("rank %d: mismatched allreduce: %v", c.Rank(), err)
		}
		if err := c.Allreduce(context.Background(), b, dist.Sum); !errors.Is(err, dist.ErrBroken) {
			return fmt.Errorf("rank %d: allreduce after a failure: %v", c.Rank(), err)
		}
		return nil
	}))
}

// TestAbort aborts rank 0 while rank 1 waits in an Allreduce: rank 1's
// collective fails, and so do later ones on both ranks.
func TestAbort(t *testing.T) {
	devs := devices(t, 2)
	if onGPU {
		t.Skip("an aborted peer leaves NCCL waiting on a GPU")
	}
	cause := errors.New("out of patience")
	errs := onRanks(2, devs, func(c dist.Communicator, dev *cuda.Device) error {
		b, err := dev.Alloc(device.Float32, 4)
		if err != nil {
			return err
		}
		defer b.Free()
		if c.Rank() == 0 {
			time.Sleep(50 * time.Millisecond)
			c.Abort(cause)
			if err := c.Allreduce(context.Background(), b, dist.Sum); !errors.Is(err, dist.ErrBroken) {
				return fmt.Errorf("rank 0: allreduce after abort: %v", err)
			}
			return nil
		}
		err = c.Allreduce(context.Background(), b, dist.Sum)
		if err == nil || !strings.Contains(err.Error(), "ncclRemoteError") {
			return fmt.Errorf("rank 1: allreduce while rank 0 aborts: %v", err)
		}
		if err := c.Barrier(context.Background()); !errors.Is(err, dist.ErrBroken) {
			return fmt.Errorf("rank 1: barrier after the failure: %v", err)
		}
		return nil
	})
	noErrors(t, errs)
}

// TestContext checks a context that ended before a collective (nothing is
// queued; the communicator stays usable) and one that ends while a
// collective waits for a rank that does not come (the communicator
// breaks).
func TestContext(t *testing.T) {
	devs := devices(t, 2)
	noErrors(t, onRanks(2, devs, func(c dist.Communicator, dev *cuda.Device) error {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		b, err := dev.Alloc(device.Float32, 4)
		if err != nil {
			return err
		}
		defer b.Free()
		if err := c.Allreduce(ctx, b, dist.Sum); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("allreduce with a cancelled context: %v", err)
		}
		return checkAllreduce(context.Background(), c, dev, device.Float32, dist.Sum, 7)
	}))
	if onGPU {
		return
	}
	noErrors(t, onRanks(2, devs, func(c dist.Communicator, dev *cuda.Device) error {
		b, err := dev.Alloc(device.Float32, 4)
		if err != nil {
			return err
		}
		defer b.Free()
		if c.Rank() == 0 {
			return nil // never comes
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := c.Allreduce(ctx, b, dist.Sum); !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("allreduce without the other rank: %v", err)
		}
		if err := c.Allreduce(context.Background(), b, dist.Sum); !errors.Is(err, dist.ErrBroken) {
			return fmt.Errorf("allreduce after an abandoned one: %v", err)
		}
		return nil
	}))
}

func TestVersionString(t *testing.T) {
	assert.Equal(t, "2.21.5", versionString(22105))
	assert.Equal(t, "2.10.3", versionString(21003))
	assert.Equal(t, "2.8.4", versionString(2804))
}

func TestErrors(t *testing.T) {
	a := &api{}
	assert.NoError(t, a.check("ncclAllReduce", 0))
	err := a.check("ncclAllReduce", 5)
	var ce *cuda.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "ncclInvalidUsage", ce.Name)
	assert.Contains(t, err.Error(), "ncclAllReduce")
	a.ncclGetErrorString = func(int32) string { return "invalid usage (run with NCCL_DEBUG=WARN for details)" }
	assert.Contains(t, a.check("ncclAllReduce", 5).Error(), "invalid usage (run with NCCL_DEBUG=WARN")
	assert.Contains(t, a.check("ncclAllReduce", 42).Error(), "ncclResult_42")
}
