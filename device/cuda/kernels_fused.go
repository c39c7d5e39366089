package cuda

import (
	"math"
	"strconv"

	"github.com/hora-dl/hora/device"
)

// BiasAct computes y[o,c,i] = act(x[o,c,i] + bias[c]) (bias_act_<type> of
// kernels/fused.cu); bias may be nil and y may be x.
func (k *kernels) BiasAct(act device.Activation, y, x, bias device.Buffer, outer, channels, inner int) {
	sfx := floatSuffix("BiasAct", y)
	noHalf("BiasAct", x, bias)
	k.launch1D("bias_act_"+sfx, outer*channels*inner, y, x, bias, int64(outer), int64(channels), int64(inner), int32(act))
}

// Conv2DBiasActMaxPool computes y = maxpool(act(conv(x, w) + bias)): the
// convolution's output goes to a scratch buffer, then MaxPool2D.
func (k *kernels) Conv2DBiasActMaxPool(p device.ConvParams, q device.PoolParams, act device.Activation, y, argmax, x, w, bias device.Buffer) {
	floatSuffix("Conv2DBiasActMaxPool", y)
	noHalf("Conv2DBiasActMaxPool", argmax, x, w, bias)
	tmp := k.scratch(y.DType(), p.N*p.OutC*p.OutH()*p.OutW())
	if tmp == nil {
		return
	}
	defer tmp.Free()
	k.Conv2DBiasAct(p, act, tmp, x, w, bias)
	k.MaxPool2D(q, y, argmax, tmp)
}

// BatchNorm normalises x per channel with the batch's statistics
// (batch_norm_<type>, a block per channel).
func (k *kernels) BatchNorm(y, mean, variance, x, weight, bias device.Buffer, outer, channels, inner int, eps float64) {
	sfx := floatSuffix("BatchNorm", y)
	noHalf("BatchNorm", mean, variance, x, weight, bias)
	if channels == 0 {
		return
	}
	k.launch("batch_norm_"+sfx, rowGrid(channels), rowBlock, 0, y, mean, variance, x, weight, bias,
		int64(outer), int64(channels), int64(inner), eps)
}

// BatchNormGrad computes the gradients of BatchNorm (batch_norm_grad_<type>,
// a block per channel).
func (k *kernels) BatchNormGrad(dx, dweight, dbias, dy, x, mean, variance, weight device.Buffer, outer, channels, inner int, eps float64) {
	sfx := floatSuffix("BatchNormGrad", dy)
	noHalf("BatchNormGrad", dx, dweight, dbias, x, mean, variance, weight)
	if channels == 0 {
		return
	}
	k.launch("batch_norm_grad_"+sfx, rowGrid(channels), rowBlock, 0, dx, dweight, dbias, dy, x, mean, variance, weight,
		int64(outer), int64(channels), int64(inner), eps)
}

// ActGrad computes dx = dy·act'(y) (act_grad_<type>); dx may be dy.
func (k *kernels) ActGrad(act device.Activation, dx, dy, y device.Buffer, n int) {
	sfx := floatSuffix("ActGrad", dx)
	noHalf("ActGrad", dy, y)
	k.launch1D("act_grad_"+sfx, n, dx, dy, y, int64(n), int32(act))
}

// BiasGrad computes db[c] = Σ_{o,i} dy[o,c,i]: for inner = 1 (a Linear
// layer) the column sums of the outer×channels matrix (reduce_cols_sum),
// else a block per channel (bias_grad_<type>).
func (k *kernels) BiasGrad(db, dy device.Buffer, outer, channels, inner int) {
	sfx := floatSuffix("BiasGrad", db)
	noHalf("BiasGrad", dy)
	if channels == 0 {
		return
	}
	if inner == 1 {
		k.reduceSum(sfx, db, dy, 1, outer, channels)
		return
	}
	k.launchSliced("bias_grad_"+sfx, sfx, db, channels, outer*inner, dy, int64(outer), int64(channels), int64(inner))
}

// SoftmaxCrossEntropy computes the mean smoothed cross-entropy of the
// rows of logits and its gradient. The labels are checked first on the
// device (xent_check_labels), and the result read back, so a bad label
// returns a *device.IndexError before anything is computed; then a block
// per row (softmax_xent_<type>) writes the gradient and each row's loss,
// which sum_parts_<type> averages into loss.
func (k *kernels) SoftmaxCrossEntropy(loss, grad, logits, labels device.Buffer, rows, classes int, smoothing float64) error {
	sfx := floatSuffix("SoftmaxCrossEntropy", grad)
	noHalf("SoftmaxCrossEntropy", loss, logits, labels)
	if rows > 0 {
		check := k.scratch(device.Int64, 2)
		if check == nil {
			return k.d.Sync()
		}
		k.launch("xent_check_labels", [3]int{1, 1, 1}, rowBlock, 0, check, labels, int64(rows), int64(classes))
		bad := make([]int64, 2)
		err := k.d.Read(bad, check)
		check.Free()
		if err != nil {
			return err
		}
		if bad[0] >= 0 {
			return &device.IndexError{Pos: int(bad[0]), Value: bad[1], N: classes}
		}
	}
	scale := 1 / float64(rows)
	off := smoothing / float64(classes)
	on := 1 - smoothing + smoothing/float64(classes)
	var parts *Buffer
	if rows > 0 {
		if parts = k.scratch(device.Float64, rows); parts == nil {
			return nil
		}
		defer parts.Free()
		k.launch("softmax_xent_"+sfx, rowGrid(rows), rowBlock, 0, grad, parts, logits, labels,
			int64(rows), int64(classes), scale, off, on)
	}
	k.launch("sum_parts_"+sfx, [3]int{1, 1, 1}, rowBlock, 0, loss, parts, int64(rows), scale)
	return nil
}

// The flags of the SGD kernels (kernels/fused.cu SGD_*).
const (
	sgdWD       = 1
	sgdMomentum = 2
	sgdFirst    = 4
	sgdNesterov = 8
)

// SGDStep updates param in place with torch.optim.SGD's rule, in the
// CPU device's order of operations (float32: its vectorised kernel's).
func (k *kernels) SGDStep(h device.SGDHyper, param, grad, buf device.Buffer, n int) {
	sfx := floatSuffix("SGDStep", param)
	noHalf("SGDStep", grad, buf)
	flags := sgdFlags(h, sfx == "f64")
	if flags&sgdMomentum == 0 {
		buf = nil
	}
	if sfx == "f32" {
		a := sgdArgs32(h, flags)
		k.launch1D("sgd_step_f32", n, param, grad, buf, int64(n), a.wd, a.mom, a.omd, a.neglr, a.flags)
		return
	}
	if h.WeightDecay != 0 {
		flags |= sgdWD
	}
	k.launch1D("sgd_step_f64", n, param, grad, buf, int64(n), h.LR, h.Momentum, 1-h.Dampening, h.WeightDecay, flags)
}

// sgdFlags returns the momentum flags of an SGD step: none when the
// momentum is 0 (in float32 when not wide).
func sgdFlags(h device.SGDHyper, wide bool) int32 {
	var flags int32
	if h.Momentum != 0 && (wide || float32(h.Momentum) != 0) {
		flags |= sgdMomentum
		if h.First {
			flags |= sgdFirst
		}
		if h.Nesterov {
			flags |= sgdNesterov
		}
	}
	return flags
}

// sgd32 holds the float32 arguments of sgd_step_f32 and sgd_multi_f32.
type sgd32 struct {
	wd, mom, omd, neglr float32
	flags               int32
}

// sgdArgs32 returns them for h, adding the weight-decay flag to flags.
func sgdArgs32(h device.SGDHyper, flags int32) sgd32 {
	a := sgd32{wd: float32(h.WeightDecay), mom: float32(h.Momentum), neglr: -float32(h.LR), flags: flags}
	if a.wd != 0 {
		a.flags |= sgdWD
	}
	a.omd = float32(1 - decimal(float32(h.Dampening)))
	return a
}

// The flags of adam_step_gen (kernels/fused.cu ADAM_*).
const (
	adamWD        = 1
	adamDecoupled = 2
)

// AdamStep updates param in place with torch.optim.Adam's (AdamW's) rule,
// in the CPU device's order of operations: float32 without AMSGrad as its
// vectorised kernel (adam_step_f32), the others as its generic loop
// (adam_step_gen_<type>).
func (k *kernels) AdamStep(h device.AdamHyper, param, grad, m, v, maxV device.Buffer, n int) {
	sfx := floatSuffix("AdamStep", param)
	noHalf("AdamStep", grad, m, v, maxV)
	if sfx == "f32" && maxV == nil {
		a := adamArgs32(h)
		k.launch1D("adam_step_f32", n, param, grad, m, v, int64(n), a.b1, a.omb1, a.b2, a.omb2, a.bc2sqrt, a.eps, a.negstep, a.wd, a.l2)
		return
	}
	t := float64(h.Step)
	bc1 := 1 - math.Pow(h.Beta1, t)
	bc2 := 1 - math.Pow(h.Beta2, t)
	var flags int32
	if h.WeightDecay != 0 {
		flags |= adamWD
		if h.Decoupled {
			flags |= adamDecoupled
		}
	}
	dt := param.DType()
	k.launch1D("adam_step_gen_"+sfx, n, param, grad, m, v, maxV, int64(n),
		scalar(dt, h.LR/bc1), scalar(dt, math.Sqrt(bc2)), scalar(dt, h.Beta1), scalar(dt, h.Beta2), scalar(dt, h.Eps),
		scalar(dt, 1-h.Beta1), scalar(dt, 1-h.Beta2), scalar(dt, 1-h.LR*h.WeightDecay), scalar(dt, h.WeightDecay), flags)
}

// adam32 holds the float32 arguments of adam_step_f32 and adam_multi_f32.
type adam32 struct {
	b1, omb1, b2, omb2, bc2sqrt, eps, negstep, wd float32
	l2                                            int32
}

// adamArgs32 returns them for h, computed as the CPU's vectorised Adam
// does (PyTorch's float64 scalar arithmetic).
func adamArgs32(h device.AdamHyper) adam32 {
	lr32, b1, b2 := float32(h.LR), float32(h.Beta1), float32(h.Beta2)
	b1d, b2d, lrd := decimal(b1), decimal(b2), decimal(lr32)
	bc1 := 1 - math.Pow(b1d, float64(h.Step))
	bc2 := 1 - math.Pow(b2d, float64(h.Step))
	a := adam32{b1: b1, omb1: float32(1 - b1d), b2: b2, omb2: float32(1 - b2d), bc2sqrt: float32(math.Sqrt(bc2)),
		eps: float32(h.Eps), negstep: float32(-(lrd / bc1)), wd: 1}
	switch wd32 := float32(h.WeightDecay); {
	case h.Decoupled:
		a.wd = float32(1 - lrd*decimal(wd32))
	case wd32 != 0:
		a.wd, a.l2 = wd32, 1
	}
	return a
}

// decimal widens a float32 hyperparameter to the float64 nearest its
// shortest decimal form (0.999 rather than float32(0.999)), as the CPU
// device's vectorised optimisers do to reproduce PyTorch's float64
// scalar arithmetic.
func decimal(x float32) float64 {
	d, err := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	if err != nil {
		return float64(x)
	}
	return d
}
