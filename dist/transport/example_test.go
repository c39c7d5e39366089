package transport_test

import (
	"fmt"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/transport"
)

// A transport's communicator keeps a Guard and calls it first in every
// collective; here the guard of a group of one whose state is a flag.
func ExampleGuard() {
	closed := false
	g := transport.Guard{
		Comm: dist.Single(),
		State: func(string) error {
			if closed {
				return dist.ErrClosed
			}
			return nil
		},
	}
	b, _ := cpu.Default().Alloc(device.Float32, 4)
	fmt.Println(g.Allreduce(b, dist.Sum))
	fmt.Println(g.Allreduce(b, 0))
	fmt.Println(g.Broadcast(b, 1))
	fmt.Println(g.Allgather(b, b))
	closed = true
	fmt.Println(g.Allreduce(b, 0))
	// Output:
	// <nil>
	// dist: allreduce: invalid reduce op 0
	// dist: broadcast: root 1 out of range [0, 1)
	// <nil>
	// dist: communicator closed
}

// Combine and Divide average three ranks' values in host memory, the way
// the transports reduce a chunk: the first rank's values, combined with
// each other rank's in rank order, then divided by the number of ranks.
func ExampleCombine() {
	ranks := [][]float64{{1, 2, 3}, {4, 5, 6}, {7, 8, 12}}
	acc := append([]float64(nil), ranks[0]...)
	for _, x := range ranks[1:] {
		transport.Combine(acc, x, dist.Average)
	}
	transport.Divide(acc, len(ranks))
	fmt.Println(acc)
	// Output: [4 5 7]
}
