//go:build mpi && cgo

package mpi

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
)

// benchSizes are the buffer sizes of the benchmarks, in MiB.
var benchSizes = []int{1, 16, 64, 256}

// BenchmarkAllreduce compares Comm.Allreduce (float32 sum: nonblocking
// pieces, polled) with RawAllreduce (blocking MPI_Allreduce pieces) and
// reports the bus bandwidth, 2(n-1)/n · bytes / time, as busGB/s. Run it
// under mpirun with a fixed iteration count, so that every rank runs the
// same number of collectives:
//
//	mpirun --allow-run-as-root -np 2 bin/mpi.test -test.run='^$' -test.bench=. -test.benchtime=20x
func BenchmarkAllreduce(b *testing.B) {
	c := benchComm(b)
	for _, mb := range benchSizes {
		buf, err := cpu.Default().Alloc(device.Float32, mb<<20/4)
		if err != nil {
			b.Fatal(err)
		}
		f32 := buf.(*cpu.Buffer).Float32s()
		b.Run(fmt.Sprintf("hora/%dMB", mb), func(b *testing.B) {
			benchCollective(b, c, mb<<20, busFactor(c), func(ctx context.Context) error {
				return c.Allreduce(ctx, buf, dist.Sum)
			})
		})
		b.Run(fmt.Sprintf("raw/%dMB", mb), func(b *testing.B) {
			benchCollective(b, c, mb<<20, busFactor(c), func(ctx context.Context) error {
				return c.RawAllreduce(ctx, f32)
			})
		})
	}
}

// BenchmarkAllreduceUnderLoad is BenchmarkAllreduce with a busy compute
// goroutine (on its own OS thread) on every rank, as in training, where
// backward runs beside the reductions. Besides the bandwidth it reports
// the compute goroutine's rate in Mflop/s while the collectives run: what
// the polling (or spinning) MPI thread leaves to it.
func BenchmarkAllreduceUnderLoad(b *testing.B) {
	c := benchComm(b)
	var stop atomic.Bool
	var flops atomic.Int64
	done := make(chan float64)
	go func() {
		runtime.LockOSThread()
		x := 1.0
		for !stop.Load() {
			for range 1 << 14 {
				x = x*0.999999 + 1e-6
			}
			flops.Add(2 << 14)
		}
		done <- x
	}()
	defer func() {
		stop.Store(true)
		<-done
	}()
	for flops.Load() == 0 {
		time.Sleep(time.Millisecond) // until the load runs
	}
	for _, mb := range []int{16, 64} {
		buf, err := cpu.Default().Alloc(device.Float32, mb<<20/4)
		if err != nil {
			b.Fatal(err)
		}
		f32 := buf.(*cpu.Buffer).Float32s()
		for _, impl := range []string{"hora", "raw"} {
			b.Run(fmt.Sprintf("%s/%dMB", impl, mb), func(b *testing.B) {
				var f0 int64
				el := benchCollective(b, c, mb<<20, busFactor(c), func(ctx context.Context) error {
					if impl == "raw" {
						return c.RawAllreduce(ctx, f32)
					}
					return c.Allreduce(ctx, buf, dist.Sum)
				}, func() { f0 = flops.Load() })
				b.ReportMetric(float64(flops.Load()-f0)/el.Seconds()/1e6, "Mflop/s")
			})
		}
	}
}

// BenchmarkBroadcast reports the bandwidth of Comm.Broadcast from rank 0
// (bytes / time) as GB/s.
func BenchmarkBroadcast(b *testing.B) {
	c := benchComm(b)
	for _, mb := range benchSizes {
		buf, err := cpu.Default().Alloc(device.Float32, mb<<20/4)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("hora/%dMB", mb), func(b *testing.B) {
			benchCollective(b, c, mb<<20, 1, func(ctx context.Context) error {
				return c.Broadcast(ctx, buf, 0)
			})
		})
	}
}

// BenchmarkAllgather reports the bus bandwidth of Comm.Allgather,
// (n-1)/n · output bytes / time, where each rank contributes mb/n MiB.
func BenchmarkAllgather(b *testing.B) {
	c := benchComm(b)
	for _, mb := range benchSizes {
		out := mb << 20 / 4
		part := out / c.Size()
		src, err := cpu.Default().Alloc(device.Float32, part)
		if err != nil {
			b.Fatal(err)
		}
		dst, err := cpu.Default().Alloc(device.Float32, part*c.Size())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("hora/%dMB", mb), func(b *testing.B) {
			benchCollective(b, c, part*c.Size()*4, float64(c.Size()-1)/float64(c.Size()), func(ctx context.Context) error {
				return c.Allgather(ctx, dst, src)
			})
		})
	}
}

func benchComm(b *testing.B) *Comm {
	if testComm == nil {
		b.Skip("needs MPI ranks: run under mpirun")
	}
	return testComm
}

// busFactor is 2(n-1)/n, the share of the buffer each rank sends and
// receives in a bandwidth-optimal allreduce.
func busFactor(c *Comm) float64 { return 2 * float64(c.Size()-1) / float64(c.Size()) }

// benchCollective times b.N calls of call (after one warm-up call), with
// every rank running the same number (the largest b.N of the ranks), and
// reports factor · bytes / time as GB/s. It calls onStart just before the
// timed calls and returns their time.
func benchCollective(b *testing.B, c *Comm, bytes int, factor float64, call func(ctx context.Context) error, onStart ...func()) time.Duration {
	ctx := context.Background()
	n := agreeN(b, c, b.N)
	if err := call(ctx); err != nil {
		b.Fatal(err)
	}
	if err := c.Barrier(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for _, f := range onStart {
		f()
	}
	start := time.Now()
	for range n {
		if err := call(ctx); err != nil {
			b.Fatal(err)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(factor*float64(bytes)*float64(n)/el.Seconds()/1e9, "GB/s")
	b.ReportMetric(float64(el.Microseconds())/1e3/float64(n), "ms/call")
	return el
}

// agreeN returns the largest n of the ranks.
func agreeN(b *testing.B, c *Comm, n int) int {
	buf, _ := cpu.Default().Alloc(device.Int64, 1)
	buf.(*cpu.Buffer).Int64s()[0] = int64(n)
	if err := c.Allreduce(context.Background(), buf, dist.Max); err != nil {
		b.Fatal(err)
	}
	return int(buf.(*cpu.Buffer).Int64s()[0])
}
