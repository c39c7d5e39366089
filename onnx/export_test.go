package onnx_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
	"github.com/hora-dl/hora/internal/interop"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// exportCase is a model to export and the shape of its example input
// (batch first); int inputs hold indices below intMax.
type exportCase struct {
	name   string
	model  func(rng *rand.Rand) layers.Layer
	shape  []int
	intMax int // > 0: an Int64 input of indices in [0, intMax)
	// train runs a few training-mode passes first (BatchNorm running
	// statistics away from their initial values).
	train bool
	// ulps allows Hora's interpreter to differ from the layer by rounding:
	// its BatchNormalization folds the statistics into one scale and
	// shift, its ReduceMean and GlobalAveragePool divide by the count
	// where autograd.MeanAxes multiplies by its inverse, and GELU and
	// LayerNorm run one fused kernel on the CPU (GELU's float32 erf is an
	// approximation within a few ulp) where the interpreter composes Erf
	// or LayerNormalization's steps. Elsewhere the
	// re-imported model must give identical outputs.
	ulps bool
}

func exportMust[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func exportSeq(ls ...layers.Layer) func(*rand.Rand) layers.Layer {
	return func(*rand.Rand) layers.Layer { return layers.NewSequential(ls...) }
}

func exportCases() []exportCase {
	pool := layers.Pool2dConfig{}
	return []exportCase{
		{name: "MLP", shape: []int{2, 1, 28, 28}, model: func(rng *rand.Rand) layers.Layer {
			return exportMust(models.NewMLP(models.MLPConfig{In: 784, Hidden: []int{64, 32}, Classes: 10, Dropout: 0.2}, rng))
		}},
		{name: "MLP-gelu", ulps: true, shape: []int{3, 20}, model: func(rng *rand.Rand) layers.Layer {
			return exportMust(models.NewMLP(models.MLPConfig{In: 20, Hidden: []int{16}, Classes: 4, Activation: "gelu"}, rng))
		}},
		{name: "MLP-tanh", shape: []int{3, 20}, model: func(rng *rand.Rand) layers.Layer {
			return exportMust(models.NewMLP(models.MLPConfig{In: 20, Hidden: []int{16}, Classes: 4, Activation: "tanh"}, rng))
		}},
		{name: "MLP-sigmoid", shape: []int{3, 20}, model: func(rng *rand.Rand) layers.Layer {
			return exportMust(models.NewMLP(models.MLPConfig{In: 20, Hidden: []int{16}, Classes: 4, Activation: "sigmoid"}, rng))
		}},
		{name: "MLP-silu", shape: []int{3, 20}, model: func(rng *rand.Rand) layers.Layer {
			return exportMust(models.NewMLP(models.MLPConfig{In: 20, Hidden: []int{16}, Classes: 4, Activation: "silu"}, rng))
		}},
		{name: "CNN", shape: []int{2, 1, 28, 28}, model: func(rng *rand.Rand) layers.Layer { return models.NewCNN(10, rng) }},
		{name: "LeNet5", shape: []int{2, 1, 28, 28}, model: func(rng *rand.Rand) layers.Layer { return models.NewLeNet5(10, rng) }},
		{name: "Linear", shape: []int{4, 6}, model: func(rng *rand.Rand) layers.Layer { return layers.NewLinear(6, 3, true, rng) }},
		{name: "Linear-nobias", shape: []int{4, 6}, model: func(rng *rand.Rand) layers.Layer { return layers.NewLinear(6, 3, false, rng) }},
		{name: "Linear-3d", shape: []int{2, 5, 6}, model: func(rng *rand.Rand) layers.Layer { return layers.NewLinear(6, 3, true, rng) }},
		{name: "Linear-3d-nobias-relu", shape: []int{2, 5, 6}, model: func(rng *rand.Rand) layers.Layer {
			return layers.NewSequential(layers.NewLinear(6, 3, false, rng), layers.ReLU{})
		}},
		{name: "Conv2d", shape: []int{2, 4, 9, 8}, model: func(rng *rand.Rand) layers.Layer {
			return layers.NewConv2d(4, 6, 3, 2, layers.Conv2dConfig{StrideH: 2, PadW: 1, DilH: 2, Groups: 2}, rng)
		}},
		{name: "Conv2d-nobias-relu", shape: []int{2, 3, 7, 7}, model: func(rng *rand.Rand) layers.Layer {
			return layers.NewSequential(layers.NewConv2d(3, 5, 3, 3, layers.Conv2dConfig{NoBias: true, PadH: 1, PadW: 1}, rng), layers.ReLU{})
		}},
		{name: "Conv2d-relu-maxpool", shape: []int{2, 3, 8, 8}, model: func(rng *rand.Rand) layers.Layer {
			return layers.NewSequential(layers.NewConv2d(3, 4, 3, 3, layers.Conv2dConfig{PadH: 1, PadW: 1}, rng), layers.ReLU{},
				layers.NewMaxPool2d(3, 3, layers.Pool2dConfig{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}))
		}},
		{name: "MaxPool2d", shape: []int{2, 3, 7, 6}, model: exportSeq(layers.NewMaxPool2d(2, 3, pool))},
		{name: "AvgPool2d", shape: []int{2, 3, 7, 6}, model: exportSeq(layers.NewAvgPool2d(3, 3, layers.Pool2dConfig{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}))},
		{name: "AvgPool2d-excludepad", shape: []int{2, 3, 7, 6}, model: exportSeq(layers.NewAvgPool2d(3, 3, layers.Pool2dConfig{StrideH: 2, StrideW: 1, PadH: 1, PadW: 1, ExcludePad: true}))},
		{name: "GlobalAvgPool", ulps: true, shape: []int{2, 3, 5, 4}, model: exportSeq(layers.NewGlobalAvgPool(), layers.NewFlatten())},
		{name: "AdaptiveAvgPool2d", shape: []int{2, 3, 6, 4}, model: exportSeq(layers.NewAdaptiveAvgPool2d(3, 2))},
		{name: "AdaptiveAvgPool2d-uneven", ulps: true, shape: []int{2, 3, 7, 5}, model: exportSeq(layers.NewAdaptiveAvgPool2d(3, 2))},
		{name: "BatchNorm2d", ulps: true, shape: []int{4, 3, 5, 5}, train: true, model: func(rng *rand.Rand) layers.Layer {
			return layers.NewSequential(layers.NewConv2d(3, 4, 3, 3, layers.Conv2dConfig{}, rng), layers.NewBatchNorm2d(4, layers.BatchNormConfig{}), layers.ReLU{})
		}},
		{name: "BatchNorm2d-noaffine", ulps: true, shape: []int{4, 3, 5, 5}, train: true, model: exportSeq(layers.NewBatchNorm2d(3, layers.BatchNormConfig{NoAffine: true, Eps: 1e-3}))},
		{name: "BatchNorm2d-batchstats", ulps: true, shape: []int{4, 3, 5, 5}, model: exportSeq(layers.NewBatchNorm2d(3, layers.BatchNormConfig{NoRunningStats: true}))},
		// BatchNorm with batch statistics then ReLU6: one fused operation
		// (autograd.BatchNormAct), exported as its nodes and a Clip.
		{name: "BatchNorm2d-batchstats-relu6", ulps: true, shape: []int{4, 3, 5, 5}, model: exportSeq(layers.NewBatchNorm2d(3, layers.BatchNormConfig{NoRunningStats: true}), layers.ReLU6{})},
		{name: "BatchNorm1d", ulps: true, shape: []int{4, 6}, train: true, model: exportSeq(layers.NewBatchNorm1d(6, layers.BatchNormConfig{}))},
		{name: "BatchNorm1d-3d", ulps: true, shape: []int{4, 6, 5}, train: true, model: exportSeq(layers.NewBatchNorm1d(6, layers.BatchNormConfig{}))},
		{name: "LayerNorm", ulps: true, shape: []int{2, 3, 8}, model: exportSeq(layers.NewLayerNorm([]int{8}, layers.LayerNormConfig{}))},
		{name: "LayerNorm-2axes", ulps: true, shape: []int{2, 3, 8}, model: exportSeq(layers.NewLayerNorm([]int{3, 8}, layers.LayerNormConfig{NoAffine: true}))},
		{name: "Embedding", shape: []int{2, 5}, intMax: 7, model: func(rng *rand.Rand) layers.Layer {
			return layers.NewSequential(layers.NewEmbedding(7, 4, rng), layers.NewFlatten(), layers.NewLinear(20, 3, true, rng))
		}},
		{name: "activations", ulps: true, shape: []int{2, 3, 4}, model: exportSeq(layers.LeakyReLU{Slope: 0.1}, layers.GELU{}, layers.SiLU{}, layers.Tanh{}, layers.Sigmoid{}, layers.ReLU{})},
		{name: "Softmax", shape: []int{2, 3, 4}, model: exportSeq(layers.Softmax{Axis: 1})},
		{name: "LogSoftmax", shape: []int{2, 3, 4}, model: exportSeq(layers.LogSoftmax{Axis: -1})},
		{name: "Flatten-from2", shape: []int{2, 3, 4, 5}, model: exportSeq(layers.NewFlattenFrom(2))},
		{name: "Flatten-from0", shape: []int{2, 3, 4}, model: exportSeq(layers.NewFlattenFrom(0), layers.ReLU{})},
		{name: "Dropout", shape: []int{2, 3}, model: func(rng *rand.Rand) layers.Layer { return layers.NewDropout(0.5, rng) }},
		{name: "batch-mean", ulps: true, shape: []int{4, 3}, model: func(*rand.Rand) layers.Layer { return exportBatchMeanModel{} }},
		{name: "Residual", shape: []int{2, 6}, model: func(rng *rand.Rand) layers.Layer {
			return layers.NewSequential(layers.NewResidual(layers.NewSequential(layers.NewLinear(6, 6, true, rng), layers.ReLU{}, layers.NewLinear(6, 6, true, rng))), layers.Tanh{})
		}},
	}
}

// exportEmbedReshaped reshapes its indices before looking them up: the
// indices the lookup sees are not the model's input, which Export cannot
// follow.
type exportEmbedReshaped struct{ e *layers.Embedding }

func (m exportEmbedReshaped) Parameters() []*autograd.Param { return m.e.Parameters() }
func (m exportEmbedReshaped) Forward(x *autograd.Var) *autograd.Var {
	return m.e.Forward(autograd.Reshape(x, -1, 3))
}

// exportInput returns a random example input of the case at batch n.
func (c exportCase) input(rng *rand.Rand, n int) *tensor.Tensor {
	shape := slices.Clone(c.shape)
	shape[0] = n
	if c.intMax > 0 {
		size := 1
		for _, d := range shape {
			size *= d
		}
		idx := make([]int64, size)
		for i := range idx {
			idx[i] = rng.Int64N(int64(c.intMax))
		}
		return tensor.FromInt64(idx, shape...)
	}
	return tensor.RandNormal(rng, 0, 1, shape...)
}

// build returns the case's model, trained a little when asked, and an
// example input.
func (c exportCase) build(t *testing.T) (layers.Layer, *rand.Rand) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := c.model(rng)
	if c.train {
		for range 3 {
			m.Forward(autograd.NoGrad(autograd.Constant(c.input(rng, c.shape[0]).MulScalar(2).AddScalar(0.5))))
		}
	}
	return m, rng
}

// horaForward runs the model in evaluation mode without recording.
func horaForward(m layers.Layer, x *tensor.Tensor) *tensor.Tensor {
	layers.Eval(m)
	defer layers.Train(m)
	return m.Forward(autograd.NoGrad(autograd.Constant(x))).Value
}

func exportBytes(t *testing.T, m layers.Layer, x *tensor.Tensor) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, onnx.Export(m, []*tensor.Tensor{x}, &buf, onnx.ExportOptions{}))
	return buf.Bytes()
}

// TestExportReimport exports every layer and model and runs the file in
// Hora's own interpreter: the outputs must equal the layer's, at the
// example's batch size and at another one (within rounding where the two
// may multiply through different GEMM kernels: see horaGEMMOnly).
func TestExportReimport(t *testing.T) {
	sameKernels := horaGEMMOnly()
	for _, c := range append(exportCases(), attentionExportCases()...) {
		t.Run(c.name, func(t *testing.T) {
			m, rng := c.build(t)
			x := c.input(rng, c.shape[0])
			data := exportBytes(t, m, x)
			im, err := onnx.Import(bytes.NewReader(data))
			require.NoError(t, err)
			for _, n := range []int{c.shape[0], 5} {
				xn := c.input(rng, n)
				want := horaForward(m, xn)
				outs, err := im.Run(autograd.Constant(xn))
				require.NoError(t, err, "batch %d", n)
				require.Len(t, outs, 1)
				got := outs[0].Value
				require.Equal(t, want.Shape(), got.Shape(), "batch %d", n)
				tol := 0.0
				if c.ulps || !sameKernels {
					tol = 1e-6
				}
				exportClose(t, want, got, tol, tol, fmt.Sprintf("Hora interpreter, batch %d", n))
			}
		})
	}
}

// horaGEMMOnly reports whether every class of float32 product (small,
// transposed, narrow, skinny, large) runs on Hora's own kernel on this
// machine. Only then do a
// layer and its re-imported file, whose constant weights the interpreter
// multiplies through Hora's packed kernel, round alike: where a BLAS
// library was measured faster for a class (CPUs without AVX-512, mostly),
// the layer's products go to it.
func horaGEMMOnly() bool {
	for _, s := range []struct {
		transA, transB bool
		m, n, k        int
	}{{false, false, 8, 8, 8}, {true, false, 512, 512, 512}, {false, true, 512, 16, 512}, {false, false, 512, 16, 512}, {false, false, 512, 512, 512}} {
		if cpu.Default().Float32GEMM(s.transA, s.transB, s.m, s.n, s.k) != "hora" {
			return false
		}
	}
	return true
}

// exportClose checks |got - want| <= atol + rtol·|want| elementwise.
func exportClose(t *testing.T, want, got *tensor.Tensor, rtol, atol float64, what string) {
	t.Helper()
	w := want.Cast(device.Float64).Contiguous().Float64s()
	g := got.Cast(device.Float64).Contiguous().Float64s()
	require.Len(t, g, len(w), what)
	worst, at := 0.0, -1
	for i := range w {
		d := math.Abs(g[i] - w[i])
		if !(d <= atol+rtol*math.Abs(w[i])) && (at < 0 || d > worst) {
			worst, at = d, i
		}
	}
	if at >= 0 {
		t.Errorf("%s: element %d is %g, expected %g (difference %g; shape %v)", what, at, g[at], w[at], worst, want.Shape())
	}
}

// TestExportORT runs every exported layer and model in onnxruntime and
// compares with Hora, at the example's batch size and at another one.
func TestExportORT(t *testing.T) {
	script := interop.ORTScript(t)
	dir := t.TempDir()
	type check struct {
		name string
		n    int
		want *tensor.Tensor
	}
	var runs []interop.ORTRequest
	var checks []check
	for _, c := range append(exportCases(), attentionExportCases()...) {
		m, rng := c.build(t)
		path := filepath.Join(dir, c.name+".onnx")
		require.NoError(t, onnx.ExportFile(path, m, []*tensor.Tensor{c.input(rng, c.shape[0])}, onnx.ExportOptions{}), c.name)
		for _, n := range []int{c.shape[0], 3} {
			x := c.input(rng, n)
			runs = append(runs, interop.ORTRequest{Model: path, Inputs: map[string]interop.ORTTensor{"input": interop.ORTInput(x)}, Threads: 1})
			checks = append(checks, check{c.name, n, horaForward(m, x)})
		}
	}
	outs, errs := interop.RunORT(t, script, runs)
	for i, c := range checks {
		t.Run(fmt.Sprintf("%s/batch%d", c.name, c.n), func(t *testing.T) {
			require.Empty(t, errs[i], "onnxruntime")
			require.Contains(t, outs[i], "output")
			got := outs[i]["output"]
			require.Equal(t, c.want.Shape(), got.Shape())
			exportClose(t, c.want, got, 1e-5, 1e-6, "onnxruntime")
		})
	}
}

// TestExportGraph checks the structure of an exported CNN: names,
// opset, dynamic batch, fused operations.
func TestExportGraph(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := models.NewCNN(10, rng)
	x := tensor.RandNormal(rng, 0, 1, 2, 1, 28, 28)
	var mp onnxpb.ModelProto
	require.NoError(t, proto.Unmarshal(exportBytes(t, m, x), &mp))
	assert.EqualValues(t, 8, mp.GetIrVersion())
	require.Len(t, mp.GetOpsetImport(), 1)
	assert.EqualValues(t, 17, mp.GetOpsetImport()[0].GetVersion())
	g := mp.GetGraph()
	var ops []string
	for _, n := range g.GetNode() {
		ops = append(ops, n.GetOpType())
	}
	assert.Equal(t, []string{"Conv", "Relu", "MaxPool", "Conv", "Relu", "MaxPool", "Flatten", "Gemm", "Relu", "Gemm"}, ops)
	var inits []string
	for _, in := range g.GetInitializer() {
		inits = append(inits, in.GetName())
	}
	var params []string
	for _, p := range m.Parameters() {
		params = append(params, p.Name)
	}
	assert.ElementsMatch(t, params, inits)
	require.Len(t, g.GetInput(), 1)
	in := g.GetInput()[0]
	assert.Equal(t, "input", in.GetName())
	dims := in.GetType().GetTensorType().GetShape().GetDim()
	require.Len(t, dims, 4)
	assert.Equal(t, "batch", dims[0].GetDimParam())
	assert.EqualValues(t, 28, dims[3].GetDimValue())
	out := g.GetOutput()[0]
	assert.Equal(t, "output", out.GetName())
	assert.Equal(t, "batch", out.GetType().GetTensorType().GetShape().GetDim()[0].GetDimParam())

	// BatchNorm's running statistics are initializers named as buffers.
	bn := layers.NewSequential(layers.NewBatchNorm2d(3, layers.BatchNormConfig{}))
	mp.Reset()
	require.NoError(t, proto.Unmarshal(exportBytes(t, bn, tensor.RandNormal(rng, 0, 1, 2, 3, 4, 4)), &mp))
	inits = inits[:0]
	for _, in := range mp.GetGraph().GetInitializer() {
		inits = append(inits, in.GetName())
	}
	assert.ElementsMatch(t, []string{"0.weight", "0.bias", "0.running_mean", "0.running_var"}, inits)
	assert.Equal(t, "BatchNormalization", mp.GetGraph().GetNode()[0].GetOpType())
}

// TestExportKeepsModes checks that Export restores the layers' modes.
func TestExportKeepsModes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	drop := layers.NewDropout(0.5, rng)
	bn := layers.NewBatchNorm1d(4, layers.BatchNormConfig{})
	m := layers.NewSequential(layers.NewLinear(3, 4, true, rng), bn, drop)
	drop.SetTraining(false)
	x := tensor.RandNormal(rng, 0, 1, 2, 3)
	exportBytes(t, m, x)
	assert.False(t, drop.Training())
	assert.True(t, bn.Training())
	// Running statistics are untouched by the trace.
	assert.Equal(t, []float32{0, 0, 0, 0}, layers.StateDict(m)["1.running_mean"].Float32s())
}

// exportStaticModel depends on the batch size in a way ONNX cannot
// express: it scales by the batch size.
type exportStaticModel struct{}

func (exportStaticModel) Parameters() []*autograd.Param { return nil }
func (exportStaticModel) Forward(x *autograd.Var) *autograd.Var {
	return autograd.MulScalar(x, float64(x.Value.Dim(0)))
}

// exportBatchMeanModel subtracts the mean over the batch (a ReduceMean
// that ONNX expresses for any batch size).
type exportBatchMeanModel struct{}

func (exportBatchMeanModel) Parameters() []*autograd.Param { return nil }
func (exportBatchMeanModel) Forward(x *autograd.Var) *autograd.Var {
	return autograd.Sub(x, autograd.Mean(x, 0, true))
}

// exportUnknownModel uses an operation the exporter cannot translate.
type exportUnknownModel struct{}

func (exportUnknownModel) Parameters() []*autograd.Param { return nil }
func (exportUnknownModel) Forward(x *autograd.Var) *autograd.Var {
	l, err := autograd.SoftmaxCrossEntropy(x, tensor.FromInt64(make([]int64, x.Value.Dim(0))), 0)
	if err != nil {
		panic(err)
	}
	return l
}

// exportPanicModel panics in Forward.
type exportPanicModel struct{}

func (exportPanicModel) Parameters() []*autograd.Param { return nil }
func (exportPanicModel) Forward(x *autograd.Var) *autograd.Var {
	panic("layer exploded")
}

// exportBatchConstModel adds a constant of the input's shape.
type exportBatchConstModel struct{}

func (exportBatchConstModel) Parameters() []*autograd.Param { return nil }
func (exportBatchConstModel) Forward(x *autograd.Var) *autograd.Var {
	return autograd.Add(x, autograd.Constant(tensor.FullLike(x.Value, 1)))
}

func TestExportErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	x := tensor.RandNormal(rng, 0, 1, 2, 3)
	lin := layers.NewLinear(3, 2, true, rng)
	cases := []struct {
		name  string
		model layers.Layer
		ex    []*tensor.Tensor
		opts  onnx.ExportOptions
		want  string
	}{
		{"nil model", nil, []*tensor.Tensor{x}, onnx.ExportOptions{}, "nil model"},
		{"no example", lin, nil, onnx.ExportOptions{}, "expected 1 example tensor, found 0"},
		{"two examples", lin, []*tensor.Tensor{x, x}, onnx.ExportOptions{}, "expected 1 example tensor, found 2"},
		{"nil example", lin, []*tensor.Tensor{nil}, onnx.ExportOptions{}, "example input 0 is nil"},
		{"scalar example", lin, []*tensor.Tensor{tensor.FromFloat32([]float32{1})}, onnx.ExportOptions{}, "no batch axis"},
		{"wrong shape", lin, []*tensor.Tensor{tensor.RandNormal(rng, 0, 1, 2, 5)}, onnx.ExportOptions{}, "forward pass on an input of shape [2 5]"},
		{"panic", exportPanicModel{}, []*tensor.Tensor{x}, onnx.ExportOptions{}, "layer exploded"},
		{"same names", lin, []*tensor.Tensor{x}, onnx.ExportOptions{InputNames: []string{"y"}, OutputName: "y"}, `both named "y"`},
		{"bad names", lin, []*tensor.Tensor{x}, onnx.ExportOptions{InputNames: []string{"a", "b"}}, "InputNames"},
		{"loss", exportUnknownModel{}, []*tensor.Tensor{x}, onnx.ExportOptions{}, "SoftmaxCrossEntropy is a loss"},
		{"batch scale", exportStaticModel{}, []*tensor.Tensor{x}, onnx.ExportOptions{}, "MulScalar"},
		{"batch constant", exportBatchConstModel{}, []*tensor.Tensor{x}, onnx.ExportOptions{}, "depends on the batch size"},
		{"reshaped indices", exportEmbedReshaped{layers.NewEmbedding(7, 4, rng)}, []*tensor.Tensor{tensor.FromInt64([]int64{1, 2, 3, 4, 5, 6}, 2, 3)}, onnx.ExportOptions{}, "constant indices has shape [2 3] at batch 2 and [4 3] at batch 4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := onnx.Export(c.model, c.ex, &buf, c.opts)
			require.Error(t, err)
			assert.ErrorIs(t, err, onnx.ErrExport)
			assert.Contains(t, err.Error(), c.want)
			assert.Zero(t, buf.Len(), "nothing is written on error")
		})
	}
	// The unsupported loss also wraps ErrUnsupported.
	err := onnx.Export(exportUnknownModel{}, []*tensor.Tensor{x}, &bytes.Buffer{}, onnx.ExportOptions{})
	assert.True(t, errors.Is(err, onnx.ErrUnsupported), "%v", err)
}

// TestExportStaticBatch exports a model that depends on the batch size
// with a fixed batch.
func TestExportStaticBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	x := tensor.RandNormal(rng, 0, 1, 4, 3)
	for _, m := range []layers.Layer{exportStaticModel{}, exportBatchConstModel{}} {
		var buf bytes.Buffer
		require.NoError(t, onnx.Export(m, []*tensor.Tensor{x}, &buf, onnx.ExportOptions{StaticBatch: true, InputNames: []string{"x"}, OutputName: "y"}))
		im, err := onnx.Import(&buf)
		require.NoError(t, err)
		assert.Equal(t, "x: float[4,3]", im.Inputs[0].String())
		assert.Equal(t, "y", im.Outputs[0].Name)
		outs, err := im.Run(autograd.Constant(x))
		require.NoError(t, err)
		exportClose(t, horaForward(m, x), outs[0].Value, 1e-6, 1e-6, "static batch")
	}
}

// TestExportFileAtomic checks that ExportFile leaves no file behind on
// error and replaces an existing file on success.
func TestExportFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.onnx")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	err := onnx.ExportFile(path, exportPanicModel{}, []*tensor.Tensor{tensor.Zeros(2, 3)}, onnx.ExportOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	data, _ := os.ReadFile(path)
	assert.Equal(t, "old", string(data), "a failed export leaves the old file")
	rng := rand.New(rand.NewPCG(11, 12))
	require.NoError(t, onnx.ExportFile(path, layers.NewLinear(3, 2, true, rng), []*tensor.Tensor{tensor.Zeros(2, 3)}, onnx.ExportOptions{}))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")
	m, err := onnx.Load(path)
	require.NoError(t, err)
	assert.Equal(t, "input: float[batch,3]", m.Inputs[0].String())
	assert.False(t, strings.HasPrefix(entries[0].Name(), "."))
}

// TestExportFloat64 exports a float64 model (DOUBLE tensors).
func TestExportFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	m := layers.NewSequential(layers.NewLinear(3, 4, true, rng), layers.GELU{}, layers.NewLayerNorm([]int{4}, layers.LayerNormConfig{}))
	layers.Cast(m, device.Float64)
	x := tensor.RandNormal(rng, 0, 1, 2, 3).Cast(device.Float64)
	im, err := onnx.Import(bytes.NewReader(exportBytes(t, m, x)))
	require.NoError(t, err)
	assert.Equal(t, "input: double[batch,3]", im.Inputs[0].String())
	outs, err := im.Run(autograd.Constant(x))
	require.NoError(t, err)
	// 1e-10, not 1e-12: LayerNormalization's epsilon is an ONNX float
	// attribute, float32 even in a float64 model (1e-5 is stored as
	// 1e-5 - 2.5e-13).
	exportClose(t, horaForward(m, x), outs[0].Value, 1e-10, 1e-10, "float64")
}

// exportReLU6Model is a depthwise convolution and a linear layer, each
// with a fused ReLU6 (as MobileNet uses).
type exportReLU6Model struct{ w, b, fw *autograd.Param }

func (m exportReLU6Model) Parameters() []*autograd.Param { return []*autograd.Param{m.w, m.b, m.fw} }
func (m exportReLU6Model) Forward(x *autograd.Var) *autograd.Var {
	y := autograd.Conv2DAct(x, m.w.Var, m.b.Var, tensor.ConvOptions{PadH: 1, PadW: 1, Groups: 3}, device.ActReLU6)
	return autograd.LinearAct(autograd.Flatten(y, 1), m.fw.Var, nil, device.ActReLU6)
}

func TestExportReLU6(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	m := exportReLU6Model{
		w:  autograd.NewParam("w", tensor.RandNormal(rng, 0, 2, 3, 1, 3, 3)),
		b:  autograd.NewParam("b", tensor.RandNormal(rng, 0, 1, 3)),
		fw: autograd.NewParam("fw", tensor.RandNormal(rng, 0, 1, 5, 3*4*4)),
	}
	x := tensor.RandNormal(rng, 0, 1, 2, 3, 4, 4)
	imported, err := onnx.Import(bytes.NewReader(exportBytes(t, m, x)))
	require.NoError(t, err)
	assert.Equal(t, []string{"Conv", "Clip", "Flatten", "Gemm"}, imported.OpTypes(), "ReLU6 is exported as Clip(0, 6)")
	assert.Contains(t, imported.Summary(), "Conv×1 Flatten×1 Gemm×1", "and fused back on import")
	x2 := tensor.RandNormal(rng, 0, 1, 3, 3, 4, 4)
	outs, err := imported.Run(autograd.Constant(x2))
	require.NoError(t, err)
	want := horaForward(m, x2)
	assert.Equal(t, want.Float32s(), outs[0].Value.Float32s())
	assert.Greater(t, want.MaxAll().Item(), 5.99, "the test reaches the upper bound")
}

func TestExportFileReplacesOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep"), 0o644))
	link := filepath.Join(dir, "link.onnx")
	require.NoError(t, os.Symlink(victim, link))
	net := layers.NewLinear(2, 1, true, rand.New(rand.NewPCG(1, 1)))
	for _, target := range []string{link, dir} {
		err := onnx.ExportFile(target, net, []*tensor.Tensor{tensor.Zeros(1, 2)}, onnx.ExportOptions{})
		require.Error(t, err, target)
		assert.Contains(t, err.Error(), "refusing to replace "+target)
	}
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(b))
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link is still a link")
}
