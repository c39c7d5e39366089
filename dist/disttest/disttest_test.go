package disttest_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/disttest"
	"github.com/hora-dl/hora/dist/transport"
)

// faulty is a group of one with a deliberate bug, to check that the
// suite notices it.
type faulty struct {
	dist.Communicator
	allreduce func(b device.Buffer, op dist.ReduceOp) error
	broadcast func(b device.Buffer, root int) error
	allgather func(dst, src device.Buffer) error
}

func (f faulty) Allreduce(ctx context.Context, b device.Buffer, op dist.ReduceOp) error {
	if f.allreduce != nil {
		return f.allreduce(b, op)
	}
	return f.Communicator.Allreduce(ctx, b, op)
}

func (f faulty) Broadcast(ctx context.Context, b device.Buffer, root int) error {
	if f.broadcast != nil {
		return f.broadcast(b, root)
	}
	return f.Communicator.Broadcast(ctx, b, root)
}

func (f faulty) Allgather(ctx context.Context, dst, src device.Buffer) error {
	if f.allgather != nil {
		return f.allgather(dst, src)
	}
	return f.Communicator.Allgather(ctx, dst, src)
}

// TestSuiteFindsBugs runs the size-1 suite on faulty communicators and
// checks which cases fail.
func TestSuiteFindsBugs(t *testing.T) {
	t.Parallel()
	// poke changes element i of a CPU buffer, if it has one.
	poke := func(b device.Buffer, i int) {
		if i < 0 || b.Len() <= i {
			return
		}
		switch cb := b.(*cpu.Buffer); cb.DType() {
		case device.Float32:
			cb.Float32s()[i]++
		case device.Float64:
			cb.Float64s()[i]++
		case device.Int64:
			cb.Int64s()[i]++
		case device.Float16:
			cb.Float16s()[i] ^= 0x0100
		}
	}
	cases := []struct {
		name     string
		comm     faulty
		fails    func(name string) bool // the cases that must fail
		mentions string
	}{
		{"allgather does nothing", faulty{allgather: func(dst, src device.Buffer) error {
			return transport.CheckAllgather(dist.Single(), dst, src)
		}},
			func(name string) bool {
				return strings.HasPrefix(name, "allgather/") && !strings.HasSuffix(name, "/n=0") || name == "sequence"
			}, "element 0 is"},
		{"allreduce accepts any op", faulty{allreduce: func(b device.Buffer, op dist.ReduceOp) error {
			if b == nil {
				return transport.CheckArgs(dist.Single(), "allreduce", b, dist.Sum, -1)
			}
			return nil
		}}, func(name string) bool { return name == "errors/arguments" }, "allreduce with op 0: no error"},
		{"allreduce corrupts element 65536", faulty{allreduce: func(b device.Buffer, op dist.ReduceOp) error {
			if err := dist.Single().Allreduce(context.Background(), b, op); err != nil {
				return err
			}
			poke(b, 65536)
			return nil
		}}, func(name string) bool {
			return strings.HasPrefix(name, "allreduce/") && longer(name, 65536)
		}, "element 65536 is"},
		{"broadcast corrupts the last element", faulty{broadcast: func(b device.Buffer, root int) error {
			if err := dist.Single().Broadcast(context.Background(), b, root); err != nil {
				return err
			}
			poke(b, b.Len()-1)
			return nil
		}}, func(name string) bool {
			return strings.HasPrefix(name, "broadcast/") && longer(name, 0) || name == "sequence"
		}, "1 of"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.comm.Communicator = dist.Single()
			for _, c := range disttest.Cases(1) {
				if longer(c.Name, 1<<20) {
					continue // the small cases are enough here, and quicker
				}
				err := c.Run(context.Background(), tc.comm)
				if tc.fails(c.Name) {
					if assert.Error(t, err, c.Name) {
						assert.Contains(t, err.Error(), tc.mentions, c.Name)
					}
				} else {
					assert.NoError(t, err, c.Name)
				}
			}
		})
	}
}

// longer reports whether a case's name ends in "n=N" with N > n.
func longer(name string, n int) bool {
	i := strings.LastIndex(name, "n=")
	if i < 0 {
		return false
	}
	v, err := strconv.Atoi(name[i+2:])
	return err == nil && v > n
}

// TestWrongSize checks that a case refuses a group of another size.
func TestWrongSize(t *testing.T) {
	t.Parallel()
	err := disttest.Cases(2)[0].Run(context.Background(), dist.Single())
	assert.ErrorContains(t, err, "suite for 2 ranks run on a group of 1")
}
