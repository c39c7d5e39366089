package local_test

import (
	"context"
	"fmt"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/local"
)

// Four ranks average their gradients: rank r contributes r+1 everywhere.
func ExampleRun() {
	dev := cpu.New()
	results := make([][]float32, 4)
	errs := local.Run(4, func(c dist.Communicator) error {
		b, err := dev.Alloc(device.Float32, 3)
		if err != nil {
			return err
		}
		v := float32(c.Rank() + 1)
		if err := dev.Write(b, []float32{v, 2 * v, 3 * v}); err != nil {
			return err
		}
		if err := c.Allreduce(context.Background(), b, dist.Average); err != nil {
			return err
		}
		results[c.Rank()] = make([]float32, 3)
		return dev.Read(results[c.Rank()], b)
	})
	for r, err := range errs {
		if err != nil {
			fmt.Println("rank", r, err)
		}
	}
	fmt.Println(results[0], results[3])
	// Output:
	// [2.5 5 7.5] [2.5 5 7.5]
}
