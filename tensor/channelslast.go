package tensor

import (
	"fmt"

	"github.com/hora-dl/hora/device"
)

// IsChannelsLast reports whether t, N×C×H×W, is stored in channels-last
// order: a dense N×H×W×C array of its own buffer (strides H·W·C, 1, W·C
// and C), PyTorch's channels_last memory format. ToChannelsLast and the
// convolutions asked for it (ConvOptions.ChannelsLast) return such
// tensors; every operation reads them, the convolutions of a device with
// channels-last kernels as they lie. A tensor with one channel or a 1×1
// plane is channels-last and contiguous at once.
func (t *Tensor) IsChannelsLast() bool {
	if len(t.shape) != 4 || t.offset != 0 || t.Len() != t.buf.Len() {
		return false
	}
	c, h, w := t.shape[1], t.shape[2], t.shape[3]
	want := [4]int{h * w * c, 1, w * c, c}
	for i, s := range want {
		if t.shape[i] != 1 && t.strides[i] != s {
			return false
		}
	}
	return true
}

// ToChannelsLast returns t (N×C×H×W) stored in channels-last order (see
// IsChannelsLast): t itself when it is, else a copy. It panics unless t
// is 4-D.
func (t *Tensor) ToChannelsLast() *Tensor {
	if len(t.shape) != 4 {
		panic(fmt.Sprintf("tensor: ToChannelsLast of shape %v: need N×C×H×W", t.shape))
	}
	if t.IsChannelsLast() {
		return t
	}
	return t.Permute(0, 2, 3, 1).Contiguous().Permute(0, 3, 1, 2)
}

// GlobalAvgPoolChannelsLast returns the mean of x (N×C×H×W, stored in
// channels-last order and not also contiguous: IsChannelsLast) over its
// positions, N×C×1×1, averaging the rows of channels as they lie through
// the device's device.ChannelsLastPoolKernels; nil when x is not in that
// order or the device has no such kernel. Without a gradient: it serves
// inference, where channels-last order is asked for.
func GlobalAvgPoolChannelsLast(x *Tensor) *Tensor {
	pk, ok := x.kernels().(device.ChannelsLastPoolKernels)
	if !ok || !x.channelsLastOnly() || !x.DType().IsFloat() {
		return nil
	}
	n, c, h, w := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	y := newOut(false, x.DType(), []int{n, c, 1, 1}, x)
	pk.GlobalAvgPoolChannelsLast(y.buf, x.buf, n, h*w, c)
	return y
}

// channelsLastOnly reports whether t is in channels-last order and not
// also contiguous (what the N×C×H×W kernels could read as it lies).
func (t *Tensor) channelsLastOnly() bool { return t.IsChannelsLast() && !t.IsContiguous() }

// convChannelsLast computes act(conv(x, w) + bias + res) (bias and res may
// be nil) through the device's device.ChannelsLastConvKernels when x is
// in channels-last order or o asks for an output in that order, and the
// device has a kernel for the convolution p with x as it lies: the
// output in channels-last order when o asks for it and the kernel writes
// it, else N×OutC×OH×OW. It returns nil otherwise.
func convChannelsLast(x, w, bias, res *Tensor, p device.ConvParams, o ConvOptions, act device.Activation) *Tensor {
	inCL := x.channelsLastOnly()
	if !inCL && !o.ChannelsLast {
		return nil
	}
	ck, ok := x.kernels().(device.ChannelsLastConvKernels)
	if !ok || !w.IsContiguous() || w.DType() != x.DType() || w.Device() != x.Device() ||
		(bias != nil && (!bias.IsContiguous() || bias.DType() != x.DType() || bias.Device() != x.Device())) ||
		(res != nil && (res.DType() != x.DType() || res.Device() != x.Device())) {
		return nil
	}
	outCL := o.ChannelsLast
	if !ck.ChannelsLastConv(p, w.buf, inCL, outCL) {
		if !inCL || !outCL || !ck.ChannelsLastConv(p, w.buf, true, false) {
			return nil
		}
		outCL = false
	}
	shape := []int{p.N, p.OutC, p.OutH(), p.OutW()}
	if outCL {
		shape = []int{p.N, p.OutH(), p.OutW(), p.OutC}
		if res != nil {
			res = res.ToChannelsLast()
		}
	} else if res != nil {
		res = res.Contiguous()
	}
	y := newOut(false, x.DType(), shape, x, w)
	if p.N > 0 {
		ck.Conv2DChannelsLast(p, inCL, outCL, act, y.buf, x.buf, w.buf, optBuf(bias), optBuf(res))
	}
	if outCL {
		y = y.Permute(0, 3, 1, 2)
	}
	return y
}
