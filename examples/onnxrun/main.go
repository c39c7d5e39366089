// Command onnxrun loads an ONNX model, runs it on a random batch and, with
// -finetune N, trains it for N steps of SGD on random labels: the
// walkthrough of the README's "Load a PyTorch model" section.
//
//	go run ./examples/onnxrun -model resnet18.onnx -batch 2 -finetune 3
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

func main() {
	path := flag.String("model", "", "ONNX model `file` (required)")
	batch := flag.Int("batch", 1, "size of the dynamic batch dimension")
	steps := flag.Int("finetune", 0, "SGD steps on random labels after inference")
	flag.Parse()
	if *path == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*path, *batch, *steps); err != nil {
		fmt.Fprintln(os.Stderr, "onnxrun:", err)
		os.Exit(1)
	}
}

func run(path string, batch, steps int) error {
	m, err := onnx.Load(path)
	if err != nil {
		return err
	}
	fmt.Print(m.Summary())
	if len(m.Inputs) != 1 {
		return fmt.Errorf("this example feeds models of one input; %s has %d", path, len(m.Inputs))
	}

	// A random batch of the declared shape, dynamic dimensions set to batch.
	in := m.Inputs[0]
	shape := make([]int, len(in.Shape))
	for i, d := range in.Shape {
		shape[i] = d
		if d < 0 {
			shape[i] = batch
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x := tensor.RandNormal(rng, 0, 1, shape...)

	// Inference: NoGrad records no tape.
	layers.Eval(m)
	start := time.Now()
	outs, err := m.Run(autograd.NoGrad(autograd.Constant(x)))
	if err != nil {
		return err
	}
	fmt.Printf("%s %v -> %s %v in %v\n", in.Name, shape, m.Outputs[0].Name, outs[0].Shape(), time.Since(start).Round(time.Millisecond))
	if steps == 0 {
		return nil
	}

	// Fine-tuning: the initializers are the parameters.
	logits := outs[0].Value
	if logits.Rank() != 2 {
		return fmt.Errorf("fine-tuning needs [batch, classes] logits; the output is %v", logits.Shape())
	}
	labels := make([]int64, logits.Dim(0))
	for i := range labels {
		labels[i] = rng.Int64N(int64(logits.Dim(1)))
	}
	y := tensor.FromInt64(labels, len(labels))
	opt, err := optim.NewSGD(m.Parameters(), optim.SGDConfig{LR: 0.01, Momentum: 0.9})
	if err != nil {
		return err
	}
	layers.Train(m)
	for step := 1; step <= steps; step++ {
		outs, err := m.Run(autograd.Constant(x))
		if err != nil {
			return err
		}
		loss := layers.CrossEntropy(outs[0], y, layers.CrossEntropyOptions{})
		opt.ZeroGrad()
		if err := autograd.Backward(loss); err != nil {
			return err
		}
		opt.Step()
		fmt.Printf("step %d: loss %.4f\n", step, loss.Value.Cast(device.Float64).Item())
	}
	return nil
}
