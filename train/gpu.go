package train

import (
	"errors"
	"fmt"
	"io"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cuda"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/tensor"
)

// openDevice opens the configured device for this rank. "cuda" means the
// GPU of the rank's local rank (one rank per GPU, as Horovod pins them);
// a GPU gets the configured precision and TF32 setting, and its kernels
// are loaded (compiled, the first time, saying so on out).
func openDevice(cfg *Config, comm dist.Communicator, out io.Writer) (device.Device, error) {
	spec := cfg.Device
	if spec == "cuda" {
		n, err := cuda.Available()
		if err != nil {
			return nil, err
		}
		if comm.LocalSize() > n {
			return nil, fmt.Errorf("%d ranks on this host but %d GPU(s): start one rank per GPU", comm.LocalSize(), n)
		}
		spec = fmt.Sprintf("cuda:%d", comm.LocalRank())
	}
	dev, err := device.Open(spec)
	if err != nil {
		return nil, err
	}
	if g, ok := dev.(*cuda.Device); ok {
		g.SetTF32(cfg.TF32 && !cfg.Deterministic)
		ac := device.DType(0)
		switch cfg.Precision {
		case "bf16":
			ac = cuda.BFloat16
		case "fp16":
			ac = device.Float16
		}
		if err := g.SetAutocast(ac); err != nil {
			return nil, err
		}
		if !g.KernelsCached() {
			fmt.Fprintf(out, "%s (%s): compiling the CUDA kernels for sm_%d, once (cached in %s)\n",
				g.Name(), g.GPU(), g.ComputeCapability(), cuda.CacheDir())
		}
		if err := g.LoadKernels(); err != nil {
			return nil, err
		}
	}
	return dev, nil
}

// deviceFailure is the error of a run whose device failed, with advice
// when the GPU ran out of memory.
func deviceFailure(de *tensor.DeviceError) error {
	if errors.Is(de, cuda.ErrOutOfMemory) {
		return fmt.Errorf("%w; lower train.batch_size or train.eval_batch_size, or use precision bf16", de)
	}
	return de
}
