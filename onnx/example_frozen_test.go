package onnx_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/tensor"
)

// Frozen imports a model for inference only, as a serving program would:
// its weights become constants, each BatchNormalization in inference
// mode is folded into the Conv before it, and the ReLU that follows then
// runs inside that Conv. Here a ResNet exported by Hora (every
// convolution followed by a BatchNorm) runs with no parameters and no
// normalization left, on a batch whose memory an arena recycles.
func ExampleFrozen() {
	rng := rand.New(rand.NewPCG(1, 2))
	net, err := models.NewResNet(models.ResNetConfig{Layers: []int{1, 1}, Widths: []int{8, 16}, InChannels: 3, Classes: 5, Stem: "cifar"}, rng)
	if err != nil {
		fmt.Println(err)
		return
	}
	layers.Eval(net) // export the inference-mode BatchNorms
	var buf bytes.Buffer
	if err := onnx.Export(net, []*tensor.Tensor{tensor.RandNormal(rng, 0, 1, 1, 3, 16, 16)}, &buf, onnx.ExportOptions{}); err != nil {
		fmt.Println(err)
		return
	}

	m, err := onnx.Import(&buf, onnx.Frozen())
	if err != nil {
		fmt.Println(err)
		return
	}
	layers.Eval(m)
	fmt.Println("parameters:", len(m.Parameters()))

	arena := tensor.NewArena()
	x := tensor.RandNormal(rng, 0, 1, 2, 3, 16, 16)
	outs, err := m.Run(autograd.NoGrad(autograd.Constant(x.WithArena(arena))))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(outs[0].Shape())
	arena.Reset() // the outputs are invalid from here on
	// Output:
	// parameters: 0
	// [2 5]
}
