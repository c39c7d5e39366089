package onnx_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/tensor"
)

// Export traces a model on an example batch and writes an ONNX file whose
// batch size is dynamic; onnx.ExportFile does the same into a file,
// atomically. Here the file is read back with Import and run on a batch
// of another size.
func ExampleExport() {
	rng := rand.New(rand.NewPCG(1, 2))
	model := models.NewLeNet5(10, rng)
	example := tensor.RandNormal(rng, 0, 1, 1, 1, 28, 28) // N×C×H×W

	var buf bytes.Buffer
	if err := onnx.Export(model, []*tensor.Tensor{example}, &buf, onnx.ExportOptions{}); err != nil {
		fmt.Println(err)
		return
	}

	m, err := onnx.Import(&buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Inputs[0])
	fmt.Println(m.Outputs[0])
	outs, err := m.Run(autograd.Constant(tensor.RandNormal(rng, 0, 1, 4, 1, 28, 28)))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(outs[0].Shape())
	// Output:
	// input: float[batch,1,28,28]
	// output: float[batch,10]
	// [4 10]
}
