package shm_test

import (
	"context"
	"testing"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
)

// BenchmarkAllreduceMLPGradients reduces the gradients of the shipped MLP
// (784-512-256-10: 2.1 MB in 6 tensors) between 2 ranks, as the engine
// hands them over.
func BenchmarkAllreduceMLPGradients(b *testing.B) {
	comms := wrapped(b, 2, 0)
	sizes := []int{784 * 512, 512, 512 * 256, 256, 256 * 10, 10}
	bufs := make([][]device.Buffer, 2)
	total := 0
	for _, n := range sizes {
		total += n
		for r := range bufs {
			buf, _ := cpu.Default().Alloc(device.Float32, n)
			bufs[r] = append(bufs[r], buf)
		}
	}
	b.SetBytes(int64(total * 4))
	b.ResetTimer()
	for range b.N {
		onAll(comms, func(c dist.Communicator) error {
			return c.(dist.MultiAllreducer).AllreduceMany(context.Background(), bufs[c.Rank()], dist.Sum)
		})
	}
}
