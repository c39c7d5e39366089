package onnx_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// An imported model is a layers.Module: its initializers are named,
// trainable parameters, so it fine-tunes with any optimizer (and with
// dist.DistributedOptimizer across ranks). Here an MLP exported by Hora
// stands in for a file from PyTorch (onnx.Load reads a file).
func Example_fineTune() {
	rng := rand.New(rand.NewPCG(1, 2))
	net, _ := models.NewMLP(models.MLPConfig{In: 4, Hidden: []int{8}, Classes: 3, Activation: "relu"}, rng)
	var file bytes.Buffer
	if err := onnx.Export(net, []*tensor.Tensor{tensor.Zeros(1, 4)}, &file, onnx.ExportOptions{}); err != nil {
		fmt.Println(err)
		return
	}

	m, err := onnx.Import(&file)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range m.Parameters() {
		fmt.Println(p.Name, p.Value.Shape())
	}

	opt, _ := optim.NewSGD(m.Parameters(), optim.SGDConfig{LR: 0.1})
	x := tensor.RandNormal(rng, 0, 1, 16, 4)
	labels := tensor.FromInt64([]int64{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0}, 16)
	layers.Train(m)
	var first, last float64
	for step := 0; step < 20; step++ {
		outs, err := m.Run(autograd.Constant(x))
		if err != nil {
			fmt.Println(err)
			return
		}
		loss, _ := autograd.SoftmaxCrossEntropy(outs[0], labels, 0)
		opt.ZeroGrad()
		if err := autograd.Backward(loss); err != nil {
			fmt.Println(err)
			return
		}
		opt.Step()
		if step == 0 {
			first = loss.Value.Item()
		}
		last = loss.Value.Item()
	}
	fmt.Println("loss went down:", last < first)
	// Output:
	// 1.weight [8 4]
	// 1.bias [8]
	// 3.weight [3 8]
	// 3.bias [3]
	// loss went down: true
}
