// Command fitmpi runs train.Fit under mpirun for the tests: a small model
// on data made in Go, with a step callback that asks to stop on the last
// rank only, at step 3. Every rank must stop at that step and exit 0; the
// program prints each rank's last step and epoch count.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/train"
)

func main() {
	rank, _ := strconv.Atoi(os.Getenv("OMPI_COMM_WORLD_RANK"))
	size, _ := strconv.Atoi(os.Getenv("OMPI_COMM_WORLD_SIZE"))
	rng := rand.New(rand.NewPCG(1, 2)) // the same data and model on every rank
	set := func(n int) *data.InMemory {
		x, y := make([]float32, n*4), make([]int64, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range y {
			if x[i*4] > 0 {
				y[i] = 1
			}
		}
		s, err := data.NewInMemory(x, y, []int{4}, 2)
		if err != nil {
			panic(err)
		}
		return s
	}
	d := &train.Data{Train: set(512), Test: set(128), Classes: 2}
	model := layers.NewSequential(layers.NewLinear(4, 8, true, rng), layers.ReLU{}, layers.NewLinear(8, 2, true, rng))
	cfg := train.DefaultConfig()
	cfg.Optimizer.Name, cfg.Optimizer.LR = "sgd", 0.1
	cfg.Train.Epochs, cfg.Train.BatchSize = 3, 32
	cfg.Output.Dir, cfg.Output.Progress, cfg.Output.Plot, cfg.Output.Quiet = os.Args[1], false, false, true
	last := 0
	stopOnLastRank := train.Callback{Step: func(m train.StepMetrics) error {
		last = m.Step
		if rank == size-1 && m.Step == 3 {
			return train.ErrStop
		}
		return nil
	}}
	history, err := train.Fit(context.Background(), model, d, cfg, stopOnLastRank)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("rank %d: last step %d, %d epochs\n", rank, last, len(history))
}
