package disttest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
)

// Case is one conformance check. Run is called on every rank of the
// group, in the same order on all ranks; it makes the same collectives on
// every rank even when a check fails (it finishes all collectives, then
// returns the error), so a failure never hangs the group.
type Case struct {
	Name string
	Run  func(ctx context.Context, c dist.Communicator) error
}

// caseTimeout is how long RunAll lets a case run on a rank before its
// context ends, turning a hang into a failure.
const caseTimeout = 2 * time.Minute

// Cases returns the suite for a group of the given size, with buffers on
// the CPU device (some cases depend on size).
func Cases(size int) []Case { return CasesOn(cpu.Default(), size) }

// RunAll runs every case of Cases(size) as a subtest. run executes one
// case on every rank of the group under test and returns one error per
// rank it ran (a transport where this process is one rank returns a
// one-element slice). Each case's context ends after two minutes.
func RunAll(t *testing.T, size int, run func(c Case) []error) {
	RunAllOn(t, cpu.Default(), size, run)
}

// RunAllOn is RunAll with the buffers on dev (for transports that reduce
// device memory, such as NCCL).
func RunAllOn(t *testing.T, dev device.Device, size int, run func(c Case) []error) {
	t.Helper()
	for _, cs := range CasesOn(dev, size) {
		t.Run(cs.Name, func(t *testing.T) {
			timed := Case{Name: cs.Name, Run: func(ctx context.Context, c dist.Communicator) error {
				ctx, cancel := context.WithTimeout(ctx, caseTimeout)
				defer cancel()
				return cs.Run(ctx, c)
			}}
			errs := run(timed)
			assert.NotEmpty(t, errs, "run returned no errors slice: it ran no rank")
			for i, err := range errs {
				assert.NoError(t, err, "rank %d of the %d run", i, len(errs))
			}
		})
	}
}

// lengths are the buffer lengths every collective is checked at, besides
// one over 16 MiB (bigLen).
var lengths = []int{0, 1, 2, 7, 13, 1009, 65537}

// bigLen returns the length of the large case of dt: 15 elements more
// than 16 MiB, the size beyond which some transports split a collective.
func bigLen(dt device.DType) int { return 16<<20/dt.Size() + 15 }

var (
	dtypes = []device.DType{device.Float32, device.Float64, device.Int64, device.Float16}
	ops    = []dist.ReduceOp{dist.Sum, dist.Average, dist.Min, dist.Max}
)

// bigOps is the one op the large Allreduce of each DType is checked with.
var bigOps = map[device.DType]dist.ReduceOp{
	device.Float32: dist.Average,
	device.Float64: dist.Sum,
	device.Int64:   dist.Max,
	device.Float16: dist.Sum,
}

// CasesOn returns the suite for a group of the given size, with buffers on
// dev. dev must store Float16 (Alloc, Read, Write and same-type Copy).
func CasesOn(dev device.Device, size int) []Case {
	var cs []Case
	add := func(name string, fn func(e *env) error) {
		cs = append(cs, Case{Name: name, Run: func(ctx context.Context, c dist.Communicator) error {
			if c.Size() != size {
				return fmt.Errorf("disttest: suite for %d ranks run on a group of %d", size, c.Size())
			}
			return fn(&env{ctx: ctx, c: c, dev: dev})
		}})
	}
	for _, dt := range dtypes {
		for _, op := range ops {
			for _, n := range lengths {
				add(fmt.Sprintf("allreduce/%v/%v/n=%d", dt, op, n), func(e *env) error { return e.allreduce(dt, op, n) })
			}
		}
		n, op := bigLen(dt), bigOps[dt]
		add(fmt.Sprintf("allreduce/%v/%v/n=%d", dt, op, n), func(e *env) error { return e.allreduce(dt, op, n) })
	}
	if size >= 2 {
		add("allreduce/float16/rounding", func(e *env) error { return e.halfRounding() })
	}
	for _, dt := range dtypes {
		for root := range size {
			for _, n := range lengths {
				add(fmt.Sprintf("broadcast/%v/root=%d/n=%d", dt, root, n), func(e *env) error { return e.broadcast(dt, root, n) })
			}
		}
	}
	for _, dt := range []device.DType{device.Float32, device.Float16} {
		n := bigLen(dt)
		add(fmt.Sprintf("broadcast/%v/root=%d/n=%d", dt, size-1, n), func(e *env) error { return e.broadcast(dt, size-1, n) })
	}
	for _, dt := range dtypes {
		for _, n := range lengths {
			add(fmt.Sprintf("allgather/%v/n=%d", dt, n), func(e *env) error { return e.allgather(dt, n) })
		}
	}
	bigGather := bigLen(device.Float64)/size + 1
	add(fmt.Sprintf("allgather/float64/n=%d", bigGather), func(e *env) error { return e.allgather(device.Float64, bigGather) })
	add("barrier", func(e *env) error { return e.barriers() })
	add("barrier/allreduce", func(e *env) error { return e.barrierAllreduce() })
	add("errors/arguments", func(e *env) error { return e.argumentErrors() })
	add("sequence", func(e *env) error { return e.sequence() })
	return cs
}

// env is one rank's side of a running case.
type env struct {
	ctx  context.Context
	c    dist.Communicator
	dev  device.Device
	errs []error
	// failures beyond maxErrs, counted only
	dropped int

	// Host staging, reused by write and check.
	f32 []float32
	f64 []float64
	i64 []int64
	f16 []uint16
}

// maxErrs is the number of failures a case reports in full.
const maxErrs = 20

// failf records a failed check, prefixed with the rank.
func (e *env) failf(format string, args ...any) {
	if e.dropped++; len(e.errs) < maxErrs {
		e.dropped--
		e.errs = append(e.errs, fmt.Errorf("rank %d: "+format, append([]any{e.c.Rank()}, args...)...))
	}
}

// result returns the recorded failures, joined.
func (e *env) result() error {
	if e.dropped > 0 {
		return errors.Join(append(e.errs, fmt.Errorf("rank %d: and %d more failures", e.c.Rank(), e.dropped))...)
	}
	return errors.Join(e.errs...)
}

// setupFailed aborts the group after an error preparing a case (the other
// ranks may wait in a collective this rank will not make) and returns it.
func (e *env) setupFailed(err error) error {
	err = fmt.Errorf("rank %d: setup: %w", e.c.Rank(), err)
	e.c.Abort(err)
	return errors.Join(append(e.errs, err)...)
}
