package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/tensor"
)

// ResNetConfig describes a residual network (He et al., 2015) in
// torchvision's layout: a stem, stages of residual blocks, global average
// pooling and a Linear classifier.
type ResNetConfig struct {
	// Block is the residual block: "basic" (two 3×3 convolutions,
	// ResNet-18/34 and the CIFAR family) or "bottleneck" (1×1, 3×3, 1×1
	// with 4× wider output, ResNet-50 and deeper) ["basic"].
	Block string
	// Layers holds the number of blocks of each stage, e.g. [2 2 2 2] for
	// ResNet-18 or [3 3 3] for ResNet-20.
	Layers []int
	// Widths holds the channels of each stage (before the bottleneck's
	// expansion by 4), one per entry of Layers, e.g. [64 128 256 512] or
	// [16 32 64]. The stem outputs Widths[0] channels.
	Widths []int
	// InChannels is the number of input channels: 1 for grey images, 3 for
	// colour.
	InChannels int
	// Classes is the number of outputs of the final Linear layer.
	Classes int
	// Stem is the first block: "imagenet" (7×7 stride-2 convolution and a
	// 3×3 stride-2 max-pool, for large inputs) or "cifar" (3×3 stride-1
	// convolution and no pooling, for 28×28 or 32×32 inputs) ["imagenet"].
	Stem string
	// ZeroInitResidual sets the weight (γ) of the last BatchNorm of each
	// block to 0, so that every block starts as the identity (Goyal et
	// al., 2017; torchvision's zero_init_residual).
	ZeroInitResidual bool
}

// ResNet18Config returns ResNet-18: basic blocks [2 2 2 2], widths
// [64 128 256 512], ImageNet stem. With 3 input channels and 1000 classes
// its state dict is torchvision.models.resnet18's (11,689,512 parameters).
func ResNet18Config(inChannels, classes int) ResNetConfig {
	return ResNetConfig{Block: "basic", Layers: []int{2, 2, 2, 2}, Widths: []int{64, 128, 256, 512},
		InChannels: inChannels, Classes: classes, Stem: "imagenet"}
}

// ResNet34Config returns ResNet-34: basic blocks [3 4 6 3], widths
// [64 128 256 512], ImageNet stem (torchvision.models.resnet34, 21,797,672
// parameters for 3 channels and 1000 classes).
func ResNet34Config(inChannels, classes int) ResNetConfig {
	return ResNetConfig{Block: "basic", Layers: []int{3, 4, 6, 3}, Widths: []int{64, 128, 256, 512},
		InChannels: inChannels, Classes: classes, Stem: "imagenet"}
}

// ResNet50Config returns ResNet-50: bottleneck blocks [3 4 6 3], widths
// [64 128 256 512] (outputs 256 … 2048), ImageNet stem
// (torchvision.models.resnet50, 25,557,032 parameters for 3 channels and
// 1000 classes).
func ResNet50Config(inChannels, classes int) ResNetConfig {
	return ResNetConfig{Block: "bottleneck", Layers: []int{3, 4, 6, 3}, Widths: []int{64, 128, 256, 512},
		InChannels: inChannels, Classes: classes, Stem: "imagenet"}
}

// ResNet20Config returns the CIFAR ResNet-20 of He et al.: a 3×3 stem and
// three stages of 3 basic blocks with 16, 32 and 64 channels. Its
// shortcuts are 1×1 convolutions where the shape changes (option B), so it
// has 272,474 parameters for 3 channels and 10 classes (the paper's
// option A, zero-padded identity shortcuts, has 0.27M).
func ResNet20Config(inChannels, classes int) ResNetConfig {
	return cifarResNet(3, inChannels, classes)
}

// ResNet56Config returns the CIFAR ResNet-56: as ResNet20Config with 9
// blocks per stage (855,770 parameters for 3 channels and 10 classes).
func ResNet56Config(inChannels, classes int) ResNetConfig {
	return cifarResNet(9, inChannels, classes)
}

func cifarResNet(n, inChannels, classes int) ResNetConfig {
	return ResNetConfig{Block: "basic", Layers: []int{n, n, n}, Widths: []int{16, 32, 64},
		InChannels: inChannels, Classes: classes, Stem: "cifar"}
}

// resolved returns cfg with its defaults filled in, or an error naming the
// first invalid field.
func (cfg ResNetConfig) resolved() (ResNetConfig, error) {
	if cfg.Block == "" {
		cfg.Block = "basic"
	}
	if cfg.Stem == "" {
		cfg.Stem = "imagenet"
	}
	switch {
	case cfg.Block != "basic" && cfg.Block != "bottleneck":
		return cfg, fmt.Errorf("models: ResNetConfig.Block = %q, expected \"basic\" or \"bottleneck\"", cfg.Block)
	case cfg.Stem != "imagenet" && cfg.Stem != "cifar":
		return cfg, fmt.Errorf("models: ResNetConfig.Stem = %q, expected \"imagenet\" or \"cifar\"", cfg.Stem)
	case len(cfg.Layers) == 0:
		return cfg, fmt.Errorf("models: ResNetConfig.Layers is empty, expected at least one stage")
	case len(cfg.Widths) != len(cfg.Layers):
		return cfg, fmt.Errorf("models: ResNetConfig.Widths has %d entries, expected one per stage of Layers (%d)", len(cfg.Widths), len(cfg.Layers))
	case cfg.InChannels <= 0:
		return cfg, fmt.Errorf("models: ResNetConfig.InChannels = %d, expected > 0", cfg.InChannels)
	case cfg.Classes <= 0:
		return cfg, fmt.Errorf("models: ResNetConfig.Classes = %d, expected > 0", cfg.Classes)
	}
	for i := range cfg.Layers {
		if cfg.Layers[i] <= 0 {
			return cfg, fmt.Errorf("models: ResNetConfig.Layers[%d] = %d, expected > 0 blocks", i, cfg.Layers[i])
		}
		if cfg.Widths[i] <= 0 {
			return cfg, fmt.Errorf("models: ResNetConfig.Widths[%d] = %d, expected > 0 channels", i, cfg.Widths[i])
		}
	}
	cfg.Layers, cfg.Widths = slices.Clone(cfg.Layers), slices.Clone(cfg.Widths)
	return cfg, nil
}

// ResNet is a residual network built by NewResNet. It is a layers.Layer
// mapping N×InChannels×H×W images to N×Classes logits, for any H×W that
// survives the strides (the stem and each later stage halve the size; the
// ImageNet stem divides it by 4), and a layers.Container, so Train, Eval,
// To and StateDict reach its BatchNorm buffers.
//
// Parameters and buffers are named as in torchvision's resnet state
// dicts: "conv1.weight", "bn1.weight", "bn1.running_mean",
// "layer1.0.conv1.weight", "layer2.0.downsample.0.weight" (the shortcut's
// 1×1 convolution), "layer2.0.downsample.1.weight" (its BatchNorm),
// "fc.weight", "fc.bias", so torchvision weights load with
// layers.LoadStateDict.
type ResNet struct {
	cfg     ResNetConfig
	conv1   *layers.Conv2d
	bn1     *layers.BatchNorm
	maxpool *layers.MaxPool2d // nil for the CIFAR stem
	stages  []*layers.Sequential
	pool    *layers.AdaptiveAvgPool2d
	flatten *layers.Flatten
	fc      *layers.Linear
}

// NewResNet builds the network described by cfg, initialised as
// torchvision does: convolutions from N(0, 2/fan_out) (Kaiming normal,
// fan-out mode, ReLU gain), BatchNorm weights 1 and biases 0 (the last of
// each block 0 with cfg.ZeroInitResidual), and the Linear layer with
// PyTorch's default. Every draw comes from rng. It returns an error
// naming the field when cfg is invalid.
func NewResNet(cfg ResNetConfig, rng *rand.Rand) (*ResNet, error) {
	cfg, err := cfg.resolved()
	if err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("models: NewResNet: nil *rand.Rand, expected a seeded generator")
	}
	r := &ResNet{cfg: cfg}
	w0 := cfg.Widths[0]
	if cfg.Stem == "imagenet" {
		r.conv1 = newConv(cfg.InChannels, w0, 7, 2, 3, 1, rng)
		r.maxpool = layers.NewMaxPool2d(3, 3, layers.Pool2dConfig{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1})
	} else {
		r.conv1 = newConv(cfg.InChannels, w0, 3, 1, 1, 1, rng)
	}
	r.conv1 = layers.Named("conv1", r.conv1)
	r.bn1 = layers.Named("bn1", newBN(w0))
	in := w0
	for i, n := range cfg.Layers {
		stage := layers.NewSequential()
		for j := range n {
			stride := 1
			if i > 0 && j == 0 {
				stride = 2
			}
			var b layers.Layer
			if cfg.Block == "basic" {
				b = newBasicBlock(in, cfg.Widths[i], stride, cfg.ZeroInitResidual, rng)
				in = cfg.Widths[i]
			} else {
				b = newBottleneck(in, cfg.Widths[i], stride, cfg.ZeroInitResidual, rng)
				in = bottleneckExpansion * cfg.Widths[i]
			}
			stage.Append(b)
		}
		r.stages = append(r.stages, layers.Named("layer"+strconv.Itoa(i+1), stage))
	}
	r.pool = layers.NewGlobalAvgPool()
	r.flatten = layers.NewFlatten()
	r.fc = layers.Named("fc", layers.NewLinear(in, cfg.Classes, true, rng))
	return r, nil
}

// Config returns the configuration the network was built from, defaults
// filled in.
func (r *ResNet) Config() ResNetConfig {
	cfg := r.cfg
	cfg.Layers, cfg.Widths = slices.Clone(cfg.Layers), slices.Clone(cfg.Widths)
	return cfg
}

// Forward maps x (N×InChannels×H×W) to N×Classes logits. An input of
// another rank or channel count, or one too small for the strides, is a
// programming error and panics naming the shapes.
func (r *ResNet) Forward(x *autograd.Var) *autograd.Var {
	x = r.bn1.ForwardAct(r.conv1.Forward(x), device.ActReLU)
	if r.maxpool != nil {
		x = r.maxpool.Forward(x)
	}
	for _, s := range r.stages {
		x = s.Forward(x)
	}
	return r.fc.Forward(r.flatten.Forward(r.pool.Forward(x)))
}

// Parameters returns every parameter in torchvision's order: the stem,
// the stages, then fc.
func (r *ResNet) Parameters() []*autograd.Param {
	var ps []*autograd.Param
	for _, m := range r.Children() {
		ps = append(ps, m.Parameters()...)
	}
	return ps
}

// Children returns conv1, bn1, the stages (layer1, layer2, …) and fc.
func (r *ResNet) Children() []layers.Module {
	ms := []layers.Module{r.conv1, r.bn1}
	for _, s := range r.stages {
		ms = append(ms, s)
	}
	return append(ms, r.fc)
}

// basicBlock is torchvision's BasicBlock: relu(bn2(conv2(relu(bn1(conv1
// (x))))) + shortcut(x)), the shortcut being the identity or, when the
// stride or the width changes, downsample: a strided 1×1 convolution and
// a BatchNorm.
type basicBlock struct {
	conv1, conv2 *layers.Conv2d
	bn1, bn2     *layers.BatchNorm
	downsample   *layers.Sequential // nil for the identity
}

func newBasicBlock(in, width, stride int, zeroInit bool, rng *rand.Rand) *basicBlock {
	b := &basicBlock{
		conv1: layers.Named("conv1", newConv(in, width, 3, stride, 1, 1, rng)),
		bn1:   layers.Named("bn1", newBN(width)),
		conv2: layers.Named("conv2", newConv(width, width, 3, 1, 1, 1, rng)),
		bn2:   layers.Named("bn2", newBN(width)),
	}
	if zeroInit {
		zeroGamma(b.bn2)
	}
	b.downsample = newDownsample(in, width, stride, rng)
	return b
}

func (b *basicBlock) Forward(x *autograd.Var) *autograd.Var {
	y := b.bn1.ForwardAct(b.conv1.Forward(x), device.ActReLU)
	y = b.bn2.Forward(b.conv2.Forward(y))
	return autograd.AddAct(y, shortcut(b.downsample, x), device.ActReLU)
}

func (b *basicBlock) Parameters() []*autograd.Param { return paramsOf(b.Children()) }

func (b *basicBlock) Children() []layers.Module {
	ms := []layers.Module{b.conv1, b.bn1, b.conv2, b.bn2}
	if b.downsample != nil {
		ms = append(ms, b.downsample)
	}
	return ms
}

// bottleneckExpansion is the ratio of a bottleneck block's output
// channels to its width.
const bottleneckExpansion = 4

// bottleneck is torchvision's Bottleneck (ResNet v1.5, the stride on the
// 3×3 convolution): 1×1 in→width, 3×3 width→width, 1×1 width→4·width, each
// followed by BatchNorm, ReLU after the first two and after the addition
// of the shortcut.
type bottleneck struct {
	conv1, conv2, conv3 *layers.Conv2d
	bn1, bn2, bn3       *layers.BatchNorm
	downsample          *layers.Sequential
}

func newBottleneck(in, width, stride int, zeroInit bool, rng *rand.Rand) *bottleneck {
	out := bottleneckExpansion * width
	b := &bottleneck{
		conv1: layers.Named("conv1", newConv(in, width, 1, 1, 0, 1, rng)),
		bn1:   layers.Named("bn1", newBN(width)),
		conv2: layers.Named("conv2", newConv(width, width, 3, stride, 1, 1, rng)),
		bn2:   layers.Named("bn2", newBN(width)),
		conv3: layers.Named("conv3", newConv(width, out, 1, 1, 0, 1, rng)),
		bn3:   layers.Named("bn3", newBN(out)),
	}
	if zeroInit {
		zeroGamma(b.bn3)
	}
	b.downsample = newDownsample(in, out, stride, rng)
	return b
}

func (b *bottleneck) Forward(x *autograd.Var) *autograd.Var {
	y := b.bn1.ForwardAct(b.conv1.Forward(x), device.ActReLU)
	y = b.bn2.ForwardAct(b.conv2.Forward(y), device.ActReLU)
	y = b.bn3.Forward(b.conv3.Forward(y))
	return autograd.AddAct(y, shortcut(b.downsample, x), device.ActReLU)
}

func (b *bottleneck) Parameters() []*autograd.Param { return paramsOf(b.Children()) }

func (b *bottleneck) Children() []layers.Module {
	ms := []layers.Module{b.conv1, b.bn1, b.conv2, b.bn2, b.conv3, b.bn3}
	if b.downsample != nil {
		ms = append(ms, b.downsample)
	}
	return ms
}

// newDownsample returns the projection shortcut "downsample" (1×1
// convolution with the block's stride, then BatchNorm) when the shape
// changes, nil otherwise.
func newDownsample(in, out, stride int, rng *rand.Rand) *layers.Sequential {
	if stride == 1 && in == out {
		return nil
	}
	return layers.Named("downsample", layers.NewSequential(newConv(in, out, 1, stride, 0, 1, rng), newBN(out)))
}

func shortcut(downsample *layers.Sequential, x *autograd.Var) *autograd.Var {
	if downsample == nil {
		return x
	}
	return downsample.Forward(x)
}

// newConv returns a bias-free k×k convolution from in to out channels,
// its weight drawn from N(0, 2/fan_out), fan_out = out·k·k
// (torch.nn.init.kaiming_normal_(mode="fan_out", nonlinearity="relu"), as
// torchvision initialises ResNet and MobileNet).
func newConv(in, out, k, stride, pad, groups int, rng *rand.Rand) *layers.Conv2d {
	c := layers.NewConv2d(in, out, k, k, layers.Conv2dConfig{
		StrideH: stride, StrideW: stride, PadH: pad, PadW: pad, Groups: groups, NoBias: true}, rng)
	w := c.Weight()
	_, fanOut := tensor.Fans(w.Shape())
	w.Value.CopyFrom(tensor.RandNormal(rng, 0, math.Sqrt(2/float64(fanOut)), w.Shape()...).Cast(w.Value.DType()))
	return c
}

// newBN returns BatchNorm2d with PyTorch's defaults (weight 1, bias 0).
func newBN(c int) *layers.BatchNorm { return layers.NewBatchNorm2d(c, layers.BatchNormConfig{}) }

// zeroGamma sets a BatchNorm's weight to 0.
func zeroGamma(bn *layers.BatchNorm) { bn.Parameters()[0].Value.Fill(0) }

func paramsOf(ms []layers.Module) []*autograd.Param {
	var ps []*autograd.Param
	for _, m := range ms {
		ps = append(ps, m.Parameters()...)
	}
	return ps
}
