package dist_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/local"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// Two ranks (goroutines here; processes under mpirun with dist/mpi) train
// a linear model on their own halves of the data. Rank 1 starts from other
// weights, but the DistributedOptimizer broadcasts rank 0's, and the
// averaged gradients keep the two identical.
func ExampleDistributedOptimizer() {
	xs := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	ys := []int64{0, 1, 0, 1, 0, 1, 0, 1}
	weights := make([][]float32, 2)
	errs := local.Run(2, func(c dist.Communicator) error {
		model := layers.NewLinear(1, 2, true, rand.New(rand.NewPCG(uint64(c.Rank()), 1)))
		sgd, err := optim.NewSGD(model.Parameters(), optim.SGDConfig{LR: 0.1})
		if err != nil {
			return err
		}
		engine, err := dist.NewEngine(c, dist.EngineConfig{})
		if err != nil {
			return err
		}
		defer engine.Close()
		opt, err := dist.NewDistributedOptimizer(context.Background(), sgd, engine, dist.OptimizerConfig{})
		if err != nil {
			return err
		}
		sampler, err := dist.NewDistributedSampler(len(xs), c.Rank(), c.Size(), dist.SamplerConfig{})
		if err != nil {
			return err
		}
		idx := sampler.Indices(0) // rank 0: 0, 2, 4, 6; rank 1: 1, 3, 5, 7
		x, y := make([]float32, len(idx)), make([]int64, len(idx))
		for i, k := range idx {
			x[i], y[i] = xs[k], ys[k]
		}
		for range 3 {
			logits := model.Forward(autograd.Constant(tensor.FromFloat32(x, len(x), 1)))
			loss := layers.CrossEntropy(logits, tensor.FromInt64(y, len(y)), layers.CrossEntropyOptions{})
			if err := autograd.Backward(loss); err != nil {
				return err
			}
			if err := opt.Step(); err != nil {
				return err
			}
			opt.ZeroGrad()
		}
		weights[c.Rank()] = model.Parameters()[0].Value.Float32s()
		return nil
	})
	fmt.Println(errs[0], errs[1])
	fmt.Println("same weights on both ranks:", fmt.Sprint(weights[0]) == fmt.Sprint(weights[1]))
	// Output:
	// <nil> <nil>
	// same weights on both ranks: true
}
