package layers

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Conv2dConfig holds the options of a 2-D convolution. The zero value is
// PyTorch's default: stride 1, no padding, dilation 1, one group, a bias.
type Conv2dConfig struct {
	StrideH, StrideW int  // step between windows [1]
	PadH, PadW       int  // zeros added on each side [0]
	DilH, DilW       int  // spacing between kernel taps [1]
	Groups           int  // channel groups; in and out must divide by it [1]
	NoBias           bool // leave out the bias
}

// Conv2d is a 2-D convolution (cross-correlation) over inputs of shape
// N×In×H×W (torch.nn.Conv2d). Its parameters are "weight"
// (Out×In/Groups×KH×KW) and, unless Conv2dConfig.NoBias, "bias" (Out).
type Conv2d struct {
	in, out int
	opts    tensor.ConvOptions
	weight  *autograd.Param
	bias    *autograd.Param
}

// NewConv2d returns a convolution from in to out channels with a kh×kw
// kernel, initialised as PyTorch does: the weight by KaimingUniform with
// a = √5, the bias from U(-1/√fan_in, 1/√fan_in) with fan_in =
// in/groups·kh·kw, both drawn from rng. Invalid sizes panic.
func NewConv2d(in, out, kh, kw int, cfg Conv2dConfig, rng *rand.Rand) *Conv2d {
	o := tensor.ConvOptions{
		StrideH: orOne(cfg.StrideH), StrideW: orOne(cfg.StrideW),
		PadH: cfg.PadH, PadW: cfg.PadW,
		DilH: orOne(cfg.DilH), DilW: orOne(cfg.DilW),
		Groups: orOne(cfg.Groups),
	}
	if in <= 0 || out <= 0 || kh <= 0 || kw <= 0 || o.StrideH < 0 || o.StrideW < 0 ||
		o.PadH < 0 || o.PadW < 0 || o.DilH < 0 || o.DilW < 0 || o.Groups < 0 ||
		in%o.Groups != 0 || out%o.Groups != 0 {
		panic(fmt.Sprintf("layers: NewConv2d(in %d, out %d, kernel %d×%d, %+v): invalid configuration (sizes must be positive, channels divisible by groups)", in, out, kh, kw, cfg))
	}
	c := &Conv2d{in: in, out: out, opts: o}
	c.weight = autograd.NewParam("weight", tensor.KaimingUniform(rng, math.Sqrt(5), out, in/o.Groups, kh, kw))
	if !cfg.NoBias {
		fanIn, _ := tensor.Fans(c.weight.Shape())
		bound := 1 / math.Sqrt(float64(fanIn))
		c.bias = autograd.NewParam("bias", tensor.RandUniform(rng, -bound, bound, out))
	}
	return c
}

func orOne(v int) int {
	if v == 0 {
		return 1
	}
	return v
}

// Weight returns the Out×In/Groups×KH×KW kernel.
func (c *Conv2d) Weight() *autograd.Param { return c.weight }

// Bias returns the bias, or nil when the layer has none.
func (c *Conv2d) Bias() *autograd.Param { return c.bias }

// Options returns the stride, padding, dilation and groups, resolved.
func (c *Conv2d) Options() tensor.ConvOptions { return c.opts }

// Parameters returns the weight and, if present, the bias.
func (c *Conv2d) Parameters() []*autograd.Param {
	if c.bias == nil {
		return []*autograd.Param{c.weight}
	}
	return []*autograd.Param{c.weight, c.bias}
}

// Forward convolves x (N×In×H×W) and returns N×Out×OH×OW.
func (c *Conv2d) Forward(x *autograd.Var) *autograd.Var { return c.forwardAct(x, device.ActNone) }

func (c *Conv2d) forwardAct(x *autograd.Var, act device.Activation) *autograd.Var {
	if x.Value.Rank() != 4 || x.Value.Dim(1) != c.in {
		s := x.Shape()
		panic(fmt.Sprintf("layers: Conv2d(%d→%d): input shape %v, expected N×%d×H×W (weight %v)", c.in, c.out, s, c.in, c.weight.Shape()))
	}
	var b *autograd.Var
	if c.bias != nil {
		b = c.bias.Var
	}
	return autograd.Conv2DAct(x, c.weight.Var, b, c.opts, act)
}

// forwardActPool is Forward, act and pool's Forward as one operation.
func (c *Conv2d) forwardActPool(x *autograd.Var, act device.Activation, pool *MaxPool2d) *autograd.Var {
	if x.Value.Rank() != 4 || x.Value.Dim(1) != c.in {
		return pool.Forward(autograd.Relu(c.Forward(x))) // Forward panics with the message
	}
	var b *autograd.Var
	if c.bias != nil {
		b = c.bias.Var
	}
	return autograd.Conv2DActMaxPool(x, c.weight.Var, b, c.opts, act, pool.opts)
}

// Pool2dConfig holds the options of 2-D pooling besides the kernel size.
// The zero value is PyTorch's default: stride = kernel size, no padding,
// and (average pooling) padding counted in the divisor.
type Pool2dConfig struct {
	StrideH, StrideW int // step between windows [kernel size]
	PadH, PadW       int // implicit padding on each side, at most half the kernel [0]
	// ExcludePad makes AvgPool2d divide by the number of input elements in
	// each window rather than by KH·KW (count_include_pad=False).
	ExcludePad bool
}

func poolOptions(name string, kh, kw int, cfg Pool2dConfig) tensor.PoolOptions {
	if kh <= 0 || kw <= 0 || cfg.StrideH < 0 || cfg.StrideW < 0 || cfg.PadH < 0 || cfg.PadW < 0 ||
		2*cfg.PadH > kh || 2*cfg.PadW > kw {
		panic(fmt.Sprintf("layers: %s(kernel %d×%d, %+v): invalid configuration (padding must be at most half the kernel)", name, kh, kw, cfg))
	}
	o := tensor.PoolOptions{KH: kh, KW: kw, StrideH: cfg.StrideH, StrideW: cfg.StrideW, PadH: cfg.PadH, PadW: cfg.PadW, CountPad: !cfg.ExcludePad}
	if o.StrideH == 0 {
		o.StrideH = kh
	}
	if o.StrideW == 0 {
		o.StrideW = kw
	}
	return o
}

func check4D(name string, x *autograd.Var) {
	if x.Value.Rank() != 4 {
		panic(fmt.Sprintf("layers: %s: input shape %v, expected N×C×H×W", name, x.Shape()))
	}
}

// MaxPool2d takes the maximum of each kh×kw window of N×C×H×W inputs
// (torch.nn.MaxPool2d). It has no parameters.
type MaxPool2d struct{ opts tensor.PoolOptions }

// NewMaxPool2d returns max pooling with a kh×kw window.
func NewMaxPool2d(kh, kw int, cfg Pool2dConfig) *MaxPool2d {
	return &MaxPool2d{opts: poolOptions("NewMaxPool2d", kh, kw, cfg)}
}

// Parameters returns nil.
func (*MaxPool2d) Parameters() []*autograd.Param { return nil }

// Forward pools x (N×C×H×W).
func (p *MaxPool2d) Forward(x *autograd.Var) *autograd.Var {
	check4D("MaxPool2d", x)
	return autograd.MaxPool2D(x, p.opts)
}

// AvgPool2d averages each kh×kw window of N×C×H×W inputs
// (torch.nn.AvgPool2d). It has no parameters.
type AvgPool2d struct{ opts tensor.PoolOptions }

// NewAvgPool2d returns average pooling with a kh×kw window.
func NewAvgPool2d(kh, kw int, cfg Pool2dConfig) *AvgPool2d {
	return &AvgPool2d{opts: poolOptions("NewAvgPool2d", kh, kw, cfg)}
}

// Parameters returns nil.
func (*AvgPool2d) Parameters() []*autograd.Param { return nil }

// Forward pools x (N×C×H×W).
func (p *AvgPool2d) Forward(x *autograd.Var) *autograd.Var {
	check4D("AvgPool2d", x)
	return autograd.AvgPool2D(x, p.opts)
}

// AdaptiveAvgPool2d averages N×C×H×W inputs down to N×C×OutH×OutW
// whatever H and W are (torch.nn.AdaptiveAvgPool2d). Output cell (i, j)
// averages rows ⌊i·H/OutH⌋ … ⌈(i+1)·H/OutH⌉-1 and the matching columns, so
// windows may overlap when H or W is not a multiple of the output size.
type AdaptiveAvgPool2d struct{ outH, outW int }

// NewAdaptiveAvgPool2d returns adaptive average pooling to outH×outW.
func NewAdaptiveAvgPool2d(outH, outW int) *AdaptiveAvgPool2d {
	if outH <= 0 || outW <= 0 {
		panic(fmt.Sprintf("layers: NewAdaptiveAvgPool2d(%d, %d): sizes must be positive", outH, outW))
	}
	return &AdaptiveAvgPool2d{outH: outH, outW: outW}
}

// NewGlobalAvgPool returns adaptive average pooling to 1×1: the mean of
// each channel plane.
func NewGlobalAvgPool() *AdaptiveAvgPool2d { return NewAdaptiveAvgPool2d(1, 1) }

// Parameters returns nil.
func (*AdaptiveAvgPool2d) Parameters() []*autograd.Param { return nil }

// Forward pools x (N×C×H×W) to N×C×OutH×OutW. It panics when H or W is
// smaller than the output size.
func (p *AdaptiveAvgPool2d) Forward(x *autograd.Var) *autograd.Var {
	check4D("AdaptiveAvgPool2d", x)
	s := x.Shape()
	h, w := s[2], s[3]
	if h < p.outH || w < p.outW {
		panic(fmt.Sprintf("layers: AdaptiveAvgPool2d(%d, %d): input shape %v is smaller than the output", p.outH, p.outW, s))
	}
	if p.outH == 1 && p.outW == 1 {
		return autograd.MeanAxes(x, []int{2, 3}, true)
	}
	if h%p.outH == 0 && w%p.outW == 0 {
		return autograd.AvgPool2D(x, tensor.PoolOptions{KH: h / p.outH, KW: w / p.outW, StrideH: h / p.outH, StrideW: w / p.outW})
	}
	rows := make([]*autograd.Var, p.outH)
	for i := range rows {
		h0, h1 := i*h/p.outH, ((i+1)*h+p.outH-1)/p.outH
		xr := autograd.Slice(x, 2, h0, h1)
		cells := make([]*autograd.Var, p.outW)
		for j := range cells {
			w0, w1 := j*w/p.outW, ((j+1)*w+p.outW-1)/p.outW
			cells[j] = autograd.MeanAxes(autograd.Slice(xr, 3, w0, w1), []int{2, 3}, true)
		}
		rows[i] = autograd.Concat(3, cells...)
	}
	return autograd.Concat(2, rows...)
}
