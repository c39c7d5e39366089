package main

import (
	"fmt"
	"time"

	"github.com/hora-dl/hora/bench/internal/benchjob"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
)

// zooConfigs are the configs of the zoo group, in the order it measures
// them; bench/zoo_twins.py lists the same (ZOO) and builds PyTorch's twin
// of each model.
var zooConfigs = []string{
	"fashion-mnist-lenet5.yaml",
	"fashion-mnist-resnet.yaml",
	"fashion-mnist-resnet20.yaml",
	"fashion-mnist-mobilenet.yaml",
	"fashion-mnist-transformer.yaml",
	"fortunes-charlm.yaml",
}

// zooMinTime is the default least time each zoo training step is
// measured (-zoo-time; bench/pytorch_bench.py's ZOO_TIME).
const zooMinTime = 3 * time.Second

// newZooJob returns the training job of one of zooConfigs on the CPU, at
// the config's batch size.
func newZooJob(file string) (*benchjob.Job, error) {
	dev, err := device.Open("cpu")
	if err != nil {
		return nil, err
	}
	return benchjob.New(dev, file, 0)
}

// zoo measures, for each zoo config, the trainer's steady-state training
// step (after warmUpSteps steps and measure's warm-up call) on a fixed
// random batch of the config's batch size, in samples/s (a language
// model's samples are its windows of model.context tokens), and reports
// the model's parameter count as "zoo <model> params".
func (b *bench) zoo() error {
	for _, file := range zooConfigs {
		if err := b.zooStep(file); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	return nil
}

func (b *bench) zooStep(file string) error {
	j, err := newZooJob(file)
	if err != nil {
		return err
	}
	defer j.Close()
	name := "zoo " + j.Config.Model.Name
	if err := b.emit(name+" params", "parameters", float64(layers.NumParams(j.Model))); err != nil {
		return err
	}
	layers.Train(j.Model)
	for range warmUpSteps {
		if _, _, err := j.Step(); err != nil {
			return err
		}
	}
	var stepErr error
	perSec := measure(b.zooTime, func() {
		if _, _, err := j.Step(); err != nil && stepErr == nil {
			stepErr = err
		}
	})
	if stepErr != nil {
		return stepErr
	}
	return b.emit(name+" train step", "samples/s", perSec*float64(j.Samples()))
}
