package local_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/local"
)

// BenchmarkAllreduce measures an in-place Allreduce (Sum) of one buffer
// per rank. GB/s is the buffer's size over the time of one collective
// (the "algorithm bandwidth" of nccl-tests).
func BenchmarkAllreduce(b *testing.B) {
	for _, bc := range []struct {
		ranks int
		dt    device.DType
		bytes int
	}{
		{2, device.Float32, 64}, {2, device.Float32, 1 << 20}, {2, device.Float32, 64 << 20},
		{3, device.Float32, 64}, {3, device.Float32, 1 << 20}, {3, device.Float32, 64 << 20},
		{2, device.Float16, 64 << 20},
	} {
		name := fmt.Sprintf("%dB", bc.bytes)
		if bc.bytes >= 1<<20 {
			name = fmt.Sprintf("%dMB", bc.bytes>>20)
		}
		b.Run(fmt.Sprintf("ranks=%d/%v/%s", bc.ranks, bc.dt, name), func(b *testing.B) {
			n := bc.bytes / bc.dt.Size()
			comms, err := local.New(bc.ranks)
			if err != nil {
				b.Fatal(err)
			}
			bufs := make([]device.Buffer, bc.ranks)
			for r := range bufs {
				if bufs[r], err = cpu.Default().Alloc(bc.dt, n); err != nil {
					b.Fatal(err)
				}
			}
			ctx := context.Background()
			step := func(r int) {
				if err := comms[r].Allreduce(ctx, bufs[r], dist.Sum); err != nil {
					panic(err)
				}
			}
			var wg sync.WaitGroup
			for r := 1; r < bc.ranks; r++ {
				wg.Go(func() {
					for range b.N + 1 {
						step(r)
					}
				})
			}
			step(0) // a warm-up round with the others: every page touched
			b.SetBytes(int64(n * bc.dt.Size()))
			b.ResetTimer()
			for range b.N {
				step(0)
			}
			b.StopTimer()
			wg.Wait()
			b.ReportMetric(float64(n*bc.dt.Size())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			for _, c := range comms {
				c.Close()
			}
		})
	}
}
