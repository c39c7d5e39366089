// Command hora-gpu-bench measures Hora on a CUDA GPU and prints one JSON
// object per line, the same lines bench/gpu/torch_gpu_bench.py prints for
// PyTorch on the same workloads, under the same names:
//
//	{"framework":"hora","workload":"sgemm 8192 tf32","unit":"TFLOP/s","value":612.3}
//
// Usage:
//
//	hora-gpu-bench [-device cuda:0] [-min-time 2s] [-onnx resnet18.onnx] [-small] [GROUP ...]
//
// The groups are gemm, mlp, cnn and resnet18; none named runs gemm, mlp
// and cnn, and resnet18 too when -onnx is given.
//
//   - gemm: 8192×8192·8192×8192 float32 products with TensorFloat-32 off
//     ("fp32") and on ("tf32"), and with the inputs rounded to bfloat16 by
//     autocast (float32 tensors in and out, float32 accumulation). PyTorch
//     has no such product; its bf16 rows (bf16 tensors in and out, and
//     torch.autocast) name this workload as their "hora_workload".
//   - mlp, cnn: one training step of the MLP 784-512-256-10 (SGD, momentum
//     0.9, lr 0.05) and of models.NewCNN (Adam, lr 1e-3) on a fixed random
//     Fashion-MNIST-shaped batch of 128 and of 1024, taken as the trainer
//     takes it (see benchjob.Job.Step): the batch is uploaded from host memory
//     every step ("host data"), and again with the batch already on the
//     device ("data on GPU").
//   - resnet18: the same step for the ResNet-18 that
//     `torch_gpu_bench.py --write-onnx FILE` exports (3×64×64 inputs, 10
//     classes; SGD, momentum 0.9, lr 0.01), imported with onnx.Load and
//     trained in training mode (batch statistics), at batch 128.
//
// bench/gpu/run.sh runs this program and the PyTorch script in turns and
// prints the table with the issue's targets (gpu_table.py); `make
// bench-gpu` builds the program for it.
//
// Training steps use float32 with TensorFloat-32 products (-tf32=false for
// strict float32); the workload names say which. -small shrinks every
// size (GEMM 64, batch 4, ResNet batch 2) for a smoke test, such as on
// the CUDA emulator; -device cpu runs the float32 workloads on the CPU.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hora-dl/hora/bench/internal/benchjob"
	"github.com/hora-dl/hora/device"
	_ "github.com/hora-dl/hora/device/cpu" // registers "cpu"
	"github.com/hora-dl/hora/device/cuda"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/tensor"
	"github.com/hora-dl/hora/train"
)

// groups lists the workload groups in the order they run.
var groups = []string{"gemm", "mlp", "cnn", "resnet18"}

// row is one measurement, one line of output.
type row struct {
	Framework string  `json:"framework"`
	Workload  string  `json:"workload"`
	Unit      string  `json:"unit"`
	Value     float64 `json:"value"`
}

// info is a fact about the run (the GPU, the versions), one line of output.
type info struct {
	Framework string `json:"framework"`
	Info      string `json:"info"`
	Value     string `json:"value"`
}

// sizes are the sizes of the workloads.
type sizes struct {
	gemm        int   // N of the square products
	batches     []int // batches of the MLP and CNN steps
	resnetBatch int   // batch of the ResNet-18 step
	warmUp      int   // untimed calls before a measurement
}

var (
	// fullSizes are the sizes of the targets.
	fullSizes = sizes{gemm: 8192, batches: []int{128, 1024}, resnetBatch: 128, warmUp: 3}
	// smallSizes make a smoke test that the CUDA emulator runs in seconds.
	smallSizes = sizes{gemm: 64, batches: []int{4}, resnetBatch: 2, warmUp: 1}
)

type bench struct {
	out      *json.Encoder
	dev      device.Device
	gpu      *cuda.Device // dev when it is a GPU, else nil
	minTime  time.Duration
	size     sizes
	tf32     bool   // TensorFloat-32 in the training steps
	onnx     string // the ResNet-18 file
	resident bool   // also measure the steps with the batch on the device
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hora-gpu-bench:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("hora-gpu-bench", flag.ContinueOnError)
	spec := fs.String("device", "cuda:0", "the device to measure (cuda:N, or cpu for the float32 workloads)")
	minTime := fs.Duration("min-time", 2*time.Second, "least time each measurement runs, after warm-up")
	onnxFile := fs.String("onnx", "", "the ResNet-18 ONNX `file` of torch_gpu_bench.py --write-onnx (group resnet18)")
	small := fs.Bool("small", false, "tiny sizes, for a smoke test (GEMM 64, batch 4, ResNet-18 batch 2)")
	tf32 := fs.Bool("tf32", true, "let the training steps' float32 products and convolutions use TensorFloat-32")
	resident := fs.Bool("resident", true, `also measure each training step with its batch already on the device ("data on GPU")`)
	batch := fs.Int("batch", 0, "measure the MLP and CNN steps at this batch only (0: 128 and 1024, or 4 with -small)")
	libs := fs.Bool("libs", false, "print the folders searched for the CUDA libraries and where each was found, then exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: hora-gpu-bench [flags] [GROUP ...]\ngroups: %s (default: gemm, mlp, cnn, and resnet18 with -onnx)\n",
			strings.Join(groups, ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *libs {
		return printLibraries(stdout)
	}
	todo := fs.Args()
	if len(todo) == 0 {
		todo = groups[:3]
		if *onnxFile != "" {
			todo = groups
		}
	}
	for _, g := range todo {
		if !slices.Contains(groups, g) {
			return fmt.Errorf("unknown group %q (known: %s)", g, strings.Join(groups, ", "))
		}
		if g == "resnet18" && *onnxFile == "" {
			return errors.New("group resnet18 needs -onnx FILE (write it with bench/gpu/torch_gpu_bench.py --write-onnx FILE)")
		}
	}
	if *batch < 0 {
		return fmt.Errorf("-batch %d: must be positive (or 0 for the default batches)", *batch)
	}
	if *minTime <= 0 {
		return fmt.Errorf("-min-time %v: must be positive", *minTime)
	}
	dev, err := device.Open(*spec)
	if err != nil {
		return fmt.Errorf("-device %s: %w", *spec, err)
	}
	b := &bench{out: json.NewEncoder(stdout), dev: dev, minTime: *minTime, size: fullSizes, tf32: *tf32, onnx: *onnxFile, resident: *resident}
	if *small {
		b.size = smallSizes
	}
	if *batch > 0 {
		b.size.batches = []int{*batch}
	}
	b.gpu, _ = dev.(*cuda.Device)
	if err := b.info("device", describe(dev)); err != nil {
		return err
	}
	if err := b.info("go", fmt.Sprintf("%s, GOMAXPROCS %d", runtime.Version(), runtime.GOMAXPROCS(0))); err != nil {
		return err
	}
	if err := b.info("training precision", b.precision()); err != nil {
		return err
	}
	for _, g := range todo {
		if err := b.group(g); err != nil {
			return fmt.Errorf("%s: %w", g, err)
		}
	}
	return nil
}

// printLibraries writes the folders that device/cuda searches, then one
// line per library: its name and the file found, or "not found".
func printLibraries(w io.Writer) error {
	for _, d := range cuda.LibraryDirs() {
		if _, err := fmt.Fprintln(w, "searched", d); err != nil {
			return err
		}
	}
	for _, l := range cuda.FindLibraries() {
		where := l.Path
		if where == "" {
			where = "not found in those folders (the dynamic loader may still find it)"
		}
		if _, err := fmt.Fprintf(w, "%s %s\n", l.Name, where); err != nil {
			return err
		}
	}
	return nil
}

// describe names the device: for a GPU, its name and compute capability.
func describe(dev device.Device) string {
	if g, ok := dev.(*cuda.Device); ok {
		cc := g.ComputeCapability()
		return fmt.Sprintf("%s: %s, sm_%d", g.Name(), g.GPU(), cc)
	}
	return dev.Name()
}

// precision describes the arithmetic of the training steps.
func (b *bench) precision() string {
	if b.gpu == nil {
		return "float32 (" + b.dev.Name() + ")"
	}
	if b.tf32 {
		return "float32 tensors, TF32 matrix products and convolutions"
	}
	return "float32, TF32 off"
}

// group runs one workload group, turning a panic of the layers below (a
// failed allocation, a kernel error) into an error.
func (b *bench) group(g string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	switch g {
	case "gemm":
		return b.gemm(b.size.gemm)
	case "mlp", "cnn":
		for _, n := range b.size.batches {
			if err := b.train(g, n); err != nil {
				return err
			}
		}
		return nil
	case "resnet18":
		return b.train(g, b.size.resnetBatch)
	}
	return fmt.Errorf("unknown group %q", g)
}

func (b *bench) emit(workload, unit string, value float64) error {
	return b.out.Encode(row{Framework: "hora", Workload: workload, Unit: unit, Value: value})
}

func (b *bench) info(name, value string) error {
	return b.out.Encode(info{Framework: "hora", Info: name, Value: value})
}

// measure calls f warmUp times, waits for the device, then calls f until
// minTime has passed and waits for the device again: it returns the calls
// per second of the timed part, the queued GPU work included.
func (b *bench) measure(warmUp int, f func() error) (float64, error) {
	for range warmUp {
		if err := f(); err != nil {
			return 0, err
		}
	}
	if err := b.dev.Sync(); err != nil {
		return 0, err
	}
	n := 0
	start := time.Now()
	for {
		if err := f(); err != nil {
			return 0, err
		}
		n++
		if time.Since(start) >= b.minTime {
			if err := b.dev.Sync(); err != nil {
				return 0, err
			}
			return float64(n) / time.Since(start).Seconds(), nil
		}
	}
}

// gemmVariant is one way of multiplying float32 matrices on the GPU.
type gemmVariant struct {
	name     string // the workload's name, with %d for N
	tf32     bool
	autocast device.DType // 0, or cuda.BFloat16
	gpuOnly  bool
}

// gemmVariants are the products of the gemm group. PyTorch's bf16 rows
// (bf16 tensors in and out) compare with the autocast one.
var gemmVariants = []gemmVariant{
	{name: "sgemm %d fp32"},
	{name: "sgemm %d tf32", tf32: true, gpuOnly: true},
	{name: "bf16 gemm %d (Hora: fp32 tensors, bf16 autocast, fp32 out)", autocast: cuda.BFloat16, gpuOnly: true},
}

// gemm measures the N×N·N×N products of gemmVariants in TFLOP/s. The
// output's memory is recycled by an arena, as in a training step.
func (b *bench) gemm(n int) error {
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	x := tensor.RandUniform(rng, -1, 1, n, n).To(b.dev)
	y := tensor.RandUniform(rng, -1, 1, n, n).To(b.dev)
	arena := tensor.NewArena()
	flops := 2 * float64(n) * float64(n) * float64(n)
	if b.gpu != nil {
		tf32, ac := b.gpu.TF32(), b.gpu.Autocast()
		defer func() {
			b.gpu.SetTF32(tf32)
			_ = b.gpu.SetAutocast(ac)
		}()
	}
	for _, v := range gemmVariants {
		if b.gpu == nil {
			if v.gpuOnly {
				continue
			}
		} else {
			b.gpu.SetTF32(v.tf32)
			if err := b.gpu.SetAutocast(v.autocast); err != nil {
				return err
			}
		}
		perSec, err := b.measure(b.size.warmUp, func() error {
			tensor.MatMul(x.WithArena(arena), y)
			arena.Reset()
			return nil
		})
		if err != nil {
			return err
		}
		if err := b.emit(fmt.Sprintf(v.name, n), "TFLOP/s", perSec*flops/1e12); err != nil {
			return err
		}
	}
	return nil
}

// train measures the training step of model (mlp, cnn or resnet18) at
// batch n, with the batch uploaded every step and, when b.resident, with
// the batch on the device.
func (b *bench) train(model string, n int) error {
	j, err := b.newTrainJob(model, n)
	if err != nil {
		return err
	}
	if b.gpu != nil {
		tf32 := b.gpu.TF32()
		defer b.gpu.SetTF32(tf32)
		b.gpu.SetTF32(b.tf32)
	}
	layers.Train(j.Model)
	prec := "fp32"
	if b.gpu != nil && b.tf32 {
		prec = "tf32"
	}
	name := fmt.Sprintf("%s train step batch %d %s", model, n, prec)
	if model == "resnet18" {
		name = fmt.Sprintf("resnet18 %s train step batch %d %s", sampleName(j), n, prec)
	}
	perSec, err := b.measure(b.size.warmUp, func() error {
		_, _, err := j.Step()
		return err
	})
	if err != nil {
		return err
	}
	if err := b.emit(name+" (host data)", "samples/s", perSec*float64(n)); err != nil {
		return err
	}
	if !b.resident {
		return nil
	}
	x, err := tensor.FromSlice(b.dev, j.Batch.X, j.Batch.Shape...)
	if err != nil {
		return err
	}
	y, err := tensor.FromSlice(b.dev, j.Batch.Y, len(j.Batch.Y))
	if err != nil {
		return err
	}
	perSec, err = b.measure(b.size.warmUp, func() error {
		_, _, err := j.StepOn(x, y)
		return err
	})
	if err != nil {
		return err
	}
	return b.emit(name+" (data on GPU)", "samples/s", perSec*float64(n))
}

// newTrainJob returns the training job of model at batch n on b.dev:
// "mlp" and "cnn" as configs/fashion-mnist-{mlp,cnn}.yaml (and
// bench/hora), "resnet18" the file b.onnx with SGD (lr 0.01, momentum 0.9).
func (b *bench) newTrainJob(model string, n int) (*benchjob.Job, error) {
	if model != "resnet18" {
		return benchjob.New(b.dev, model, n)
	}
	m, err := loadResNet(b.onnx)
	if err != nil {
		return nil, err
	}
	classes := 10
	if s := m.Outputs[0].Shape; len(s) == 2 && s[1] > 0 {
		classes = s[1]
	}
	cfg, err := train.ParseConfig("resnet18 (bench/gpu)", []byte(fmt.Sprintf(resnetConfig, b.onnx)), nil)
	if err != nil {
		return nil, err
	}
	return benchjob.FromConfig(b.dev, cfg, append([]int{n}, m.Inputs[0].Shape[1:]...), classes)
}

// resnetConfig is the training configuration of the imported ResNet-18
// (%s: its file), as PyTorch's side of the benchmark trains it.
const resnetConfig = `
model: {name: onnx, file: %q}
optimizer: {name: sgd, lr: 0.01, momentum: 0.9}
output: {dir: runs/bench-resnet18}
`

// loadResNet imports the ResNet-18 file: one input of shape
// [batch, C, H, W] with a dynamic batch, one output of [batch, classes].
func loadResNet(path string) (*onnx.Model, error) {
	m, err := onnx.Load(path)
	if err != nil {
		return nil, err
	}
	if len(m.Inputs) != 1 || len(m.Outputs) != 1 {
		return nil, fmt.Errorf("%s: expected one input and one output, found %d and %d", path, len(m.Inputs), len(m.Outputs))
	}
	s := m.Inputs[0].Shape
	if len(s) != 4 || slices.Min(s[1:]) <= 0 {
		return nil, fmt.Errorf("%s: input %v: expected [batch, C, H, W] with fixed C, H, W", path, m.Inputs[0])
	}
	if !slices.Contains(m.OpTypes(), "BatchNormalization") || len(m.Buffers()) == 0 {
		// An evaluation-mode export folds batch normalization into the
		// convolutions, or shares equal initializers between layers.
		return nil, fmt.Errorf("%s: no BatchNormalization with its own running statistics: export the model with torch_gpu_bench.py --write-onnx", path)
	}
	return m, nil
}

// sampleName formats the shape of one sample of j's batch: "3x64x64".
func sampleName(j *benchjob.Job) string {
	s := make([]string, len(j.Batch.Shape)-1)
	for i, d := range j.Batch.Shape[1:] {
		s[i] = fmt.Sprint(d)
	}
	return strings.Join(s, "x")
}
