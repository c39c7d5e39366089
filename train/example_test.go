package train_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/train"
)

// ExampleConfigReference prints the start of the configuration reference
// (what `train help config` prints in full).
func ExampleConfigReference() {
	ref := train.ConfigReference()
	lines := strings.Split(ref, "\n")
	fmt.Println(lines[0])
	for _, line := range lines {
		if strings.HasPrefix(line, "| `optimizer.lr` |") {
			fmt.Println(line)
		}
	}
	// Output:
	// # Configuration reference
	// | `optimizer.lr` | number | required | LR is the (initial) learning rate. Required, > 0. |
}

// ExampleFit trains a small model, built in Go, on data made in Go: the
// same loop as the train command, with a callback that stops the run once
// the test accuracy is high enough.
func ExampleFit() {
	dir, err := os.MkdirTemp("", "fit-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	// Two classes: is the first of 4 features positive?
	rng := rand.New(rand.NewPCG(1, 2))
	makeSet := func(n int) *data.InMemory {
		x, y := make([]float32, n*4), make([]int64, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range y {
			if x[i*4] > 0 {
				y[i] = 1
			}
		}
		set, err := data.NewInMemory(x, y, []int{4}, 2)
		if err != nil {
			panic(err)
		}
		return set
	}
	d := &train.Data{Train: makeSet(512), Test: makeSet(256), Classes: 2}
	model := layers.NewSequential(
		layers.NewLinear(4, 16, true, rng), layers.ReLU{},
		layers.NewLinear(16, 2, true, rng),
	)

	cfg := train.DefaultConfig()
	cfg.Optimizer.Name, cfg.Optimizer.LR = "adam", 0.01
	cfg.Train.Epochs, cfg.Train.BatchSize = 20, 32
	cfg.Output.Dir, cfg.Output.Progress, cfg.Output.Plot = dir, false, false
	stopEarly := train.Callback{Epoch: func(m train.EpochMetrics) error {
		if m.TestAccuracy >= 0.95 {
			return train.ErrStop
		}
		return nil
	}}

	restore := silenceStdout() // Fit prints what the command prints
	history, err := train.Fit(context.Background(), model, d, cfg, stopEarly)
	restore()
	if err != nil {
		panic(err)
	}
	last := history[len(history)-1]
	fmt.Println("stopped before epoch 20:", len(history) < 20)
	fmt.Println("test accuracy >= 0.95:", last.TestAccuracy >= 0.95)
	// Output:
	// stopped before epoch 20: true
	// test accuracy >= 0.95: true
}

// silenceStdout sends os.Stdout to nowhere until the returned function
// runs.
func silenceStdout() (restore func()) {
	saved := os.Stdout
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		panic(err)
	}
	os.Stdout = null
	return func() {
		os.Stdout = saved
		null.Close()
	}
}
