package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hora-dl/hora/bench/internal/benchjob"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/internal/peakrss"
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

// zooNoModel is the -zoo-model value that measures the peak resident
// memory of the benchmark's process without a model (the runtime and the
// CPU device only), reported as "zoo no model peak memory".
const zooNoModel = "none"

// zooMinTime is the default least time each zoo training step is
// measured (-zoo-time; bench/pytorch_bench.py's ZOO_TIME).
const zooMinTime = 3 * time.Second

// childEnv is set in the environment of the processes the zoo group
// starts, so that a test binary started again runs hora-bench (TestMain).
const childEnv = "HORA_BENCH_CHILD"

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
// the model's parameter count as "zoo <model> params" and the peak
// resident memory of the process that ran it as "zoo <model> peak memory
// (train step)".
//
// Peak resident memory is the process's, so each model runs in a process
// of its own: this program started again with -zoo-model FILE (and
// -zoo-in-process), one process per config, after one with -zoo-model
// none for the memory of the process without a model. With
// -zoo-in-process the configs run in this process, one after the other.
func (b *bench) zoo() error {
	files := b.zooModels
	if len(files) == 0 {
		files = slices.Concat([]string{zooNoModel}, zooConfigs)
	}
	if b.zooInProcess {
		for _, file := range files {
			if err := b.zooStep(file); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
		}
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	for _, file := range files {
		if err := b.zooChild(exe, file); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	return nil
}

// zooChild measures one zoo config in a new process of exe and copies its
// measurements (not its info lines, which this process has printed) to
// b's output.
func (b *bench) zooChild(exe, file string) error {
	cmd := exec.Command(exe, "-zoo-time", b.zooTime.String(), "-zoo-in-process", "-zoo-model", file, "zoo")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(stdout)
	var copyErr error
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			copyErr = fmt.Errorf("%s: %w: %q", cmd, err, sc.Text())
			break
		}
		if _, ok := line["info"]; ok {
			continue
		}
		if _, err := b.stdout.Write(append(bytes.Clone(sc.Bytes()), '\n')); err != nil {
			copyErr = err
			break
		}
	}
	if copyErr == nil {
		copyErr = sc.Err()
	}
	if copyErr != nil {
		cmd.Process.Kill()
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	return copyErr
}

// zooModelsFlag parses -zoo-model: zoo configs by file or model name,
// comma separated, or none.
func zooModelsFlag(s string) ([]string, error) {
	var files []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == zooNoModel:
			files = append(files, name)
		case slices.Contains(zooConfigs, name):
			files = append(files, name)
		default:
			found := false
			for _, f := range zooConfigs {
				if cfg, err := benchjob.Config(f); err == nil && cfg.Model.Name == name {
					files, found = append(files, f), true
					break
				}
			}
			if !found {
				return nil, fmt.Errorf("-zoo-model %s: no zoo config %q (known: %s, their model names, or %s)", s, name, strings.Join(zooConfigs, ", "), zooNoModel)
			}
		}
	}
	return files, nil
}

func (b *bench) zooStep(file string) error {
	if file == zooNoModel {
		if _, err := device.Open("cpu"); err != nil {
			return err
		}
		return b.emit("zoo no model peak memory", "MiB", peakrss.MiB())
	}
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
	if err := b.emit(name+" train step", "samples/s", perSec*float64(j.Samples())); err != nil {
		return err
	}
	if err := b.emit(name+" peak memory (train step)", "MiB", peakrss.MiB()); err != nil {
		return err
	}
	// What the Go heap keeps between steps (parameters, gradients, the
	// optimizer's state, the arenas' and the device's pools), live after
	// a collection.
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return b.emit(name+" Go heap live between steps", "MiB", float64(ms.HeapAlloc)/(1<<20))
}
