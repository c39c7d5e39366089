package layers_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/tensor"
)

// A two-layer perceptron: one forward pass, a loss and its gradients.
func Example() {
	rng := rand.New(rand.NewPCG(1, 2))
	mlp := layers.NewSequential(
		layers.NewLinear(4, 8, true, rng),
		layers.ReLU{},
		layers.NewLinear(8, 3, true, rng),
	)
	x := autograd.Constant(tensor.RandNormal(rng, 0, 1, 5, 4)) // a batch of 5 samples
	labels := tensor.FromInt64([]int64{0, 2, 1, 1, 0}, 5)

	logits := mlp.Forward(x)
	loss := layers.CrossEntropy(logits, labels, layers.CrossEntropyOptions{})
	if err := autograd.Backward(loss); err != nil {
		panic(err)
	}

	fmt.Println("logits:", logits.Shape(), "loss:", loss.Shape())
	for _, p := range mlp.Parameters() {
		fmt.Println(p.Name, p.Shape(), "grad", p.Grad.Shape())
	}
	fmt.Println("parameters:", layers.NumParams(mlp))
	// Output:
	// logits: [5 3] loss: []
	// 0.weight [8 4] grad [8 4]
	// 0.bias [8] grad [8]
	// 2.weight [3 8] grad [3 8]
	// 2.bias [3] grad [3]
	// parameters: 67
}

// Named prefixes the parameter names of a sub-model, as a model struct's
// field names do in PyTorch.
func ExampleNamed() {
	rng := rand.New(rand.NewPCG(1, 2))
	features := layers.Named("features", layers.NewSequential(
		layers.NewConv2d(1, 4, 3, 3, layers.Conv2dConfig{PadH: 1, PadW: 1}, rng),
		layers.NewBatchNorm2d(4, layers.BatchNormConfig{}),
		layers.ReLU{},
	))
	sd := layers.StateDict(features)
	for _, name := range []string{"features.0.weight", "features.0.bias", "features.1.weight", "features.1.running_var", "features.1.num_batches_tracked"} {
		fmt.Println(name, sd[name].Shape())
	}
	fmt.Println(len(sd), "entries")
	// Output:
	// features.0.weight [4 1 3 3]
	// features.0.bias [4]
	// features.1.weight [4]
	// features.1.running_var [4]
	// features.1.num_batches_tracked []
	// 7 entries
}

// Eval switches BatchNorm to its running statistics and turns Dropout off.
func ExampleEval() {
	rng := rand.New(rand.NewPCG(3, 4))
	model := layers.NewSequential(layers.NewLinear(2, 2, true, rng), layers.NewDropout(0.5, rng))
	x := autograd.Constant(tensor.FromFloat32([]float32{1, 2}, 1, 2))
	layers.Eval(model)
	a := model.Forward(x).Value.Float32s()
	b := model.Forward(x).Value.Float32s()
	fmt.Println("deterministic in eval:", a[0] == b[0] && a[1] == b[1])
	// Output:
	// deterministic in eval: true
}

// CrossEntropy with label smoothing on per-pixel class scores.
func ExampleCrossEntropy() {
	logits := autograd.Leaf(tensor.Zeros(1, 4, 2, 2)) // N×C×H×W, uniform scores
	target := tensor.FromInt64([]int64{0, 1, 2, 3}, 1, 2, 2)
	loss := layers.CrossEntropy(logits, target, layers.CrossEntropyOptions{LabelSmoothing: 0.1})
	fmt.Printf("%.4f (log 4 = 1.3863)\n", loss.Value.Item())
	// Output:
	// 1.3863 (log 4 = 1.3863)
}
