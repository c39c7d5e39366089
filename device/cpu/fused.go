package cpu

import (
	"math"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/norm"
	"github.com/hora-dl/hora/device/cpu/internal/vec"
)

// The CPU's kernels implement the optional fused kernel sets.
var (
	_ device.FusedKernels     = kernels{}
	_ device.BatchNormKernels = kernels{}
	_ device.OptimizerKernels = kernels{}
)

// BiasAct computes y = act(x + bias) per channel.
func (k kernels) BiasAct(act device.Activation, y, x, bias device.Buffer, outer, channels, inner int) {
	noHalf("BiasAct", y, x, bias)
	var bf32 []float32
	var bf64 []float64
	if bias != nil {
		bf32, bf64 = buf(bias).f32, buf(bias).f64
	}
	switch buf(y).dt {
	case device.Float32:
		biasAct(k.d, act, buf(y).f32, buf(x).f32, bf32, outer, channels, inner)
	case device.Float64:
		biasAct(k.d, act, buf(y).f64, buf(x).f64, bf64, outer, channels, inner)
	default:
		panic(dtypeMsg("BiasAct", buf(y).dt))
	}
}

func biasAct[T float](dev *Device, act device.Activation, y, x, bias []T, outer, channels, inner int) {
	if y32, ok := any(y).([]float32); ok && inner == 1 && bias != nil {
		// A Linear layer's output: whole rows at a time.
		x32, b32 := any(x).([]float32), any(bias).([]float32)
		launch(dev, outer, channels, biasActMatrixArgs{biasActArgs[float32]{act: act, y: y32, x: x32, bias: b32}})
		return
	}
	launch(dev, outer*channels, inner, biasActArgs[T]{act: act, y: y, x: x, bias: bias, channels: channels, inner: inner})
}

// biasActArgs are the arguments of one BiasAct call.
type biasActArgs[T float] struct {
	act             device.Activation
	y, x, bias      []T
	channels, inner int
}

// biasActMatrixArgs is BiasAct on the rows of a matrix (inner 1).
type biasActMatrixArgs struct{ biasActArgs[float32] }

func (a *biasActMatrixArgs) run(lo, hi int) {
	biasActMatrix(a.act, a.y, a.x, a.bias, lo, hi)
}

func (a *biasActArgs[T]) run(lo, hi int) {
	biasActRows(a.act, a.y, a.x, a.bias, a.channels, a.inner, lo, hi)
}

// biasActMatrix is biasAct for rows [lo, hi) of a matrix with one bias
// per column.
func biasActMatrix(act device.Activation, y, x, bias []float32, lo, hi int) {
	n := len(bias)
	switch act {
	case device.ActReLU:
		vec.AddRowsReLU(y[lo*n:hi*n], x[lo*n:hi*n], bias)
	case device.ActReLU6:
		vec.AddRows(y[lo*n:hi*n], x[lo*n:hi*n], bias)
		vec.Clamp(y[lo*n:hi*n], y[lo*n:hi*n], 0, 6)
	default:
		vec.AddRows(y[lo*n:hi*n], x[lo*n:hi*n], bias)
	}
}

// biasActSlice sets dst = act(src + b).
func biasActSlice[T float](act device.Activation, dst, src []T, b T) {
	if d32, ok := any(dst).([]float32); ok {
		s32 := any(src).([]float32)
		switch act {
		case device.ActReLU:
			vec.AddScalarReLU(d32, s32, float32(b))
		case device.ActReLU6:
			vec.AddScalarClamp(d32, s32, float32(b), 0, 6)
		default:
			vec.AddScalar(d32, s32, float32(b))
		}
		return
	}
	switch act {
	case device.ActReLU:
		for i, v := range src {
			v += b
			if v < 0 { // NaN stays NaN, as in PyTorch
				v = 0
			}
			dst[i] = v
		}
	case device.ActReLU6:
		for i, v := range src {
			v += b
			if v < 0 { // NaN stays NaN, as in PyTorch
				v = 0
			}
			if v > 6 {
				v = 6
			}
			dst[i] = v
		}
	default:
		for i, v := range src {
			dst[i] = v + b
		}
	}
}

// biasActRows is biasAct for rows (n, c) in [lo, hi) of the N*C rows.
func biasActRows[T float](act device.Activation, y, x, bias []T, channels, inner, lo, hi int) {
	for r := lo; r < hi; r++ {
		var b T
		if bias != nil {
			b = bias[r%channels]
		}
		biasActSlice(act, y[r*inner:(r+1)*inner], x[r*inner:(r+1)*inner], b)
	}
}

// ActGrad computes dx = dy * act'(y).
// AddAct implements device.AddActKernels.
func (k kernels) AddAct(act device.Activation, y, a, b device.Buffer, n int) {
	noHalf("AddAct", y, a, b)
	switch buf(y).dt {
	case device.Float32:
		launch(k.d, n, 1, addActArgs[float32]{act, buf(y).f32[:n], buf(a).f32[:n], buf(b).f32[:n]})
	case device.Float64:
		launch(k.d, n, 1, addActArgs[float64]{act, buf(y).f64[:n], buf(a).f64[:n], buf(b).f64[:n]})
	default:
		panic(dtypeMsg("AddAct", buf(y).dt))
	}
}

// addActArgs are the arguments of one AddAct call.
type addActArgs[T float] struct {
	act     device.Activation
	y, a, b []T
}

func (args *addActArgs[T]) run(lo, hi int) {
	addActSlice(args.act, args.y[lo:hi], args.a[lo:hi], args.b[lo:hi])
}

// addActSlice sets y[i] = act(a[i] + b[i]); y may be a or b.
func addActSlice[T float](act device.Activation, y, a, b []T) {
	if y32, ok := any(y).([]float32); ok {
		a32, b32 := any(a).([]float32), any(b).([]float32)
		switch act {
		case device.ActReLU:
			vec.AddReLU(y32, a32, b32)
		case device.ActReLU6:
			vec.Add(y32, a32, b32)
			vec.Clamp(y32, y32, 0, 6)
		default:
			vec.Add(y32, a32, b32)
		}
		return
	}
	for i := range y {
		y[i] = a[i] + b[i]
	}
	if act != device.ActNone {
		biasActSlice(act, y, y, 0)
	}
}

func (k kernels) ActGrad(act device.Activation, dx, dy, y device.Buffer, n int) {
	noHalf("ActGrad", dx, dy, y)
	switch buf(dx).dt {
	case device.Float32:
		actGrad(k.d, act, buf(dx).f32[:n], buf(dy).f32[:n], buf(y).f32[:n])
	case device.Float64:
		actGrad(k.d, act, buf(dx).f64[:n], buf(dy).f64[:n], buf(y).f64[:n])
	default:
		panic(dtypeMsg("ActGrad", buf(dx).dt))
	}
}

func actGrad[T float](dev *Device, act device.Activation, dx, dy, y []T) {
	launch(dev, len(dx), 1, actGradArgs[T]{act, dx, dy, y})
}

type actGradArgs[T float] struct {
	act       device.Activation
	dx, dy, y []T
}

func (a *actGradArgs[T]) run(lo, hi int) {
	actGradRange(a.act, a.dx, a.dy, a.y, lo, hi)
}

func actGradRange[T float](act device.Activation, dx, dy, y []T, lo, hi int) {
	if act == device.ActReLU6 {
		// PyTorch's hardtanh backward: no gradient at or beyond the bounds
		// (a NaN output passes its gradient).
		if dx32, ok := any(dx).([]float32); ok {
			vec.ReLU6Grad(dx32[lo:hi], any(dy).([]float32)[lo:hi], any(y).([]float32)[lo:hi])
			return
		}
		dx, dy, y := dx[lo:hi], dy[lo:hi], y[lo:hi]
		dy, y = dy[:len(dx)], y[:len(dx)]
		for i := range dx {
			g := dy[i]
			if v := y[i]; v <= 0 || v >= 6 {
				g = 0
			}
			dx[i] = g
		}
		return
	}
	if act != device.ActReLU {
		copy(dx[lo:hi], dy[lo:hi])
		return
	}
	if dx32, ok := any(dx).([]float32); ok {
		vec.ReLUGrad(dx32[lo:hi], any(dy).([]float32)[lo:hi], any(y).([]float32)[lo:hi])
		return
	}
	for i := lo; i < hi; i++ {
		if y[i] > 0 {
			dx[i] = dy[i]
		} else {
			dx[i] = 0
		}
	}
}

// BiasGrad sums dy over everything but the channel axis.
func (k kernels) BiasGrad(db, dy device.Buffer, outer, channels, inner int) {
	noHalf("BiasGrad", db, dy)
	switch buf(db).dt {
	case device.Float32:
		biasGrad(k.d, buf(db).f32[:channels], buf(dy).f32, outer, channels, inner)
	case device.Float64:
		biasGrad(k.d, buf(db).f64[:channels], buf(dy).f64, outer, channels, inner)
	default:
		panic(dtypeMsg("BiasGrad", buf(db).dt))
	}
}

func biasGrad[T float](dev *Device, db, dy []T, outer, channels, inner int) {
	if _, ok := any(db).([]float32); ok && inner == 1 {
		// A Linear layer's rows: one vector pass over all of them
		// (vec.SumRows) outruns two workers each summing half of every
		// row element by element (a Transformer's 64-wide rows: 4.5% of
		// its step).
		biasGradChannels(db, dy, outer, channels, inner, 0, channels)
		return
	}
	launch(dev, channels, outer*inner, biasGradArgs[T]{db, dy, outer, channels, inner})
}

type biasGradArgs[T float] struct {
	db, dy                 []T
	outer, channels, inner int
}

func (a *biasGradArgs[T]) run(lo, hi int) {
	biasGradChannels(a.db, a.dy, a.outer, a.channels, a.inner, lo, hi)
}

// biasGradChannels is biasGrad for channels [lo, hi).
func biasGradChannels[T float](db, dy []T, outer, channels, inner, lo, hi int) {
	if db32, ok := any(db).([]float32); ok {
		dy32 := any(dy).([]float32)
		if inner == 1 {
			// Columns [lo, hi) of the rows: sum whole rows when they are ours.
			if lo == 0 && hi == channels {
				clear(db32)
				vec.SumRows(db32, dy32[:outer*channels])
				return
			}
		} else {
			for c := lo; c < hi; c++ {
				var s float64
				for o := 0; o < outer; o++ {
					s += float64(vec.Sum(dy32[(o*channels+c)*inner : (o*channels+c+1)*inner]))
				}
				db32[c] = float32(s)
			}
			return
		}
	}
	if inner == 1 {
		// A Linear layer's rows: sum columns in row order.
		sum := db[lo:hi]
		clear(sum)
		for o := 0; o < outer; o++ {
			row := dy[o*channels+lo : o*channels+hi]
			for c, v := range row {
				sum[c] += v
			}
		}
		return
	}
	for c := lo; c < hi; c++ {
		var s float64
		for o := 0; o < outer; o++ {
			var p T
			for _, v := range dy[(o*channels+c)*inner : (o*channels+c+1)*inner] {
				p += v
			}
			s += float64(p)
		}
		db[c] = T(s)
	}
}

// SoftmaxCrossEntropy computes the mean smoothed cross-entropy of the rows
// of logits and its gradient.
func (k kernels) SoftmaxCrossEntropy(loss, grad, logits, labels device.Buffer, rows, classes int, smoothing float64) error {
	noHalf("SoftmaxCrossEntropy", loss, grad, logits, labels)
	lab := buf(labels).i64[:rows]
	for r, l := range lab {
		if l < 0 || l >= int64(classes) {
			return &device.IndexError{Pos: r, Value: l, N: classes}
		}
	}
	switch buf(grad).dt {
	case device.Float32:
		buf(loss).f32[0] = float32(softmaxXent(k.d, buf(grad).f32, buf(logits).f32, lab, rows, classes, smoothing))
	case device.Float64:
		buf(loss).f64[0] = softmaxXent(k.d, buf(grad).f64, buf(logits).f64, lab, rows, classes, smoothing)
	default:
		panic(dtypeMsg("SoftmaxCrossEntropy", buf(grad).dt))
	}
	return nil
}

// softmaxXentParts bounds the partial loss sums, fixing the summation order
// whatever the number of workers.
const softmaxXentParts = 16

func softmaxXent[T float](dev *Device, grad, logits []T, labels []int64, rows, classes int, smoothing float64) float64 {
	chunk := (rows + softmaxXentParts - 1) / softmaxXentParts
	a := launch(dev, softmaxXentParts, chunk*classes*8, softmaxXentArgs[T]{
		grad: grad, logits: logits, labels: labels, rows: rows, classes: classes, chunk: chunk,
		scale: 1 / float64(rows),
		off:   smoothing / float64(classes),               // smoothed target of every class
		on:    1 - smoothing + smoothing/float64(classes), // and of the label
	})
	var total float64
	for _, s := range a.parts {
		total += s
	}
	return total * a.scale
}

type softmaxXentArgs[T float] struct {
	grad, logits         []T
	labels               []int64
	rows, classes, chunk int
	scale, off, on       float64
	parts                [softmaxXentParts]float64 // per chunk of rows: the summed losses
}

func (a *softmaxXentArgs[T]) run(lo, hi int) {
	classes := a.classes
	for p := lo; p < hi; p++ {
		var sum float64
		for r := p * a.chunk; r < min((p+1)*a.chunk, a.rows); r++ {
			x := a.logits[r*classes : (r+1)*classes]
			g := a.grad[r*classes : (r+1)*classes]
			m := x[0]
			for _, v := range x {
				if v > m || v != v {
					m = v
				}
			}
			var z float64
			for i, v := range x {
				e := math.Exp(float64(v - m))
				g[i] = T(e)
				z += e
			}
			logZ := math.Log(z) + float64(m)
			label := int(a.labels[r])
			// loss = -Σ_i target_i · log p_i, log p_i = x_i - logZ
			var l float64
			for i, v := range x {
				t := a.off
				if i == label {
					t = a.on
				}
				if t != 0 {
					l -= t * (float64(v) - logZ)
				}
				gi := float64(g[i])/z - t
				g[i] = T(gi * a.scale)
			}
			sum += l
		}
		a.parts[p] = sum
	}
}

// SGDStep is torch.optim.SGD's update for one parameter.
func (k kernels) SGDStep(h device.SGDHyper, param, grad, mbuf device.Buffer, n int) {
	noHalf("SGDStep", param, grad, mbuf)
	switch buf(param).dt {
	case device.Float32:
		var b []float32
		if mbuf != nil {
			b = buf(mbuf).f32
		}
		sgdStep(k.d, h, buf(param).f32[:n], buf(grad).f32[:n], b)
	case device.Float64:
		var b []float64
		if mbuf != nil {
			b = buf(mbuf).f64
		}
		sgdStep(k.d, h, buf(param).f64[:n], buf(grad).f64[:n], b)
	default:
		panic(dtypeMsg("SGDStep", buf(param).dt))
	}
}

func sgdStep[T float](dev *Device, h device.SGDHyper, p, g, b []T) {
	launch(dev, len(p), 4, sgdArgs[T]{h, p, g, b})
}

type sgdArgs[T float] struct {
	h       device.SGDHyper
	p, g, b []T
}

func (a *sgdArgs[T]) run(lo, hi int) { sgdRange(a.h, a.p, a.g, a.b, lo, hi) }

func sgdRange[T float](h device.SGDHyper, p, g, b []T, lo, hi int) {
	if p32, ok := any(p).([]float32); ok {
		var b32 []float32
		if b != nil {
			b32 = any(b).([]float32)[lo:hi]
		}
		vec.SGDMomentum(p32[lo:hi], any(g).([]float32)[lo:hi], b32, float32(h.LR), float32(h.Momentum),
			float32(h.Dampening), float32(h.WeightDecay), h.Nesterov, h.First)
		return
	}
	lr, mom, damp, wd := T(h.LR), T(h.Momentum), T(1-h.Dampening), T(h.WeightDecay)
	for i := lo; i < hi; i++ {
		d := g[i]
		if wd != 0 {
			d += wd * p[i]
		}
		if mom != 0 {
			if h.First {
				b[i] = d
			} else {
				b[i] = mom*b[i] + damp*d
			}
			if h.Nesterov {
				d += mom * b[i]
			} else {
				d = b[i]
			}
		}
		p[i] -= lr * d
	}
}

// AdamStep is torch.optim.Adam's (or AdamW's) update for one parameter.
func (k kernels) AdamStep(h device.AdamHyper, param, grad, m, v, maxV device.Buffer, n int) {
	noHalf("AdamStep", param, grad, m, v, maxV)
	switch buf(param).dt {
	case device.Float32:
		var mv []float32
		if maxV != nil {
			mv = buf(maxV).f32
		}
		adamStep(k.d, h, buf(param).f32[:n], buf(grad).f32[:n], buf(m).f32, buf(v).f32, mv)
	case device.Float64:
		var mv []float64
		if maxV != nil {
			mv = buf(maxV).f64
		}
		adamStep(k.d, h, buf(param).f64[:n], buf(grad).f64[:n], buf(m).f64, buf(v).f64, mv)
	default:
		panic(dtypeMsg("AdamStep", buf(param).dt))
	}
}

func adamStep[T float](dev *Device, h device.AdamHyper, p, g, m, v, maxV []T) {
	launch(dev, len(p), 8, adamArgs[T]{h, p, g, m, v, maxV})
}

type adamArgs[T float] struct {
	h                device.AdamHyper
	p, g, m, v, maxV []T
}

func (a *adamArgs[T]) run(lo, hi int) {
	adamRange(a.h, a.p, a.g, a.m, a.v, a.maxV, lo, hi)
}

func adamRange[T float](h device.AdamHyper, p, g, m, v, maxV []T, lo, hi int) {
	if p32, ok := any(p).([]float32); ok && maxV == nil {
		vec.Adam(p32[lo:hi], any(g).([]float32)[lo:hi], any(m).([]float32)[lo:hi], any(v).([]float32)[lo:hi],
			float32(h.LR), float32(h.Beta1), float32(h.Beta2), float32(h.Eps), float32(h.WeightDecay), h.Step, h.Decoupled)
		return
	}
	t := float64(h.Step)
	bc1 := 1 - math.Pow(h.Beta1, t)
	bc2 := 1 - math.Pow(h.Beta2, t)
	stepSize := T(h.LR / bc1)
	sqrtBC2 := T(math.Sqrt(bc2))
	b1, b2, eps := T(h.Beta1), T(h.Beta2), T(h.Eps)
	c1, c2 := T(1-h.Beta1), T(1-h.Beta2) // rounded once, as PyTorch's alpha/value arguments
	decay := T(1 - h.LR*h.WeightDecay)   // AdamW
	wd := T(h.WeightDecay)               // Adam's L2 term
	for i := lo; i < hi; i++ {
		gi, pi := g[i], p[i]
		if h.WeightDecay != 0 {
			if h.Decoupled {
				pi *= decay
			} else {
				gi += wd * pi
			}
		}
		mi := b1*m[i] + c1*gi
		vi := b2*v[i] + c2*gi*gi
		m[i], v[i] = mi, vi
		if maxV != nil {
			vi = max(maxV[i], vi)
			maxV[i] = vi
		}
		denom := T(math.Sqrt(float64(vi)))/sqrtBC2 + eps
		p[i] = pi - stepSize*mi/denom
	}
}

// BatchNorm normalises x per channel with its batch statistics.
func (k kernels) BatchNorm(y, mean, variance, x, weight, bias device.Buffer, outer, channels, inner int, eps float64) {
	k.BatchNormAct(device.ActNone, y, mean, variance, x, weight, bias, outer, channels, inner, eps)
}

// The CPU device applies BatchNorm's activation in the same passes.
var _ device.BatchNormActKernels = kernels{}

// BatchNormAct implements device.BatchNormActKernels: each channel's
// activation is applied right after its normalisation, while the values
// are in cache.
func (k kernels) BatchNormAct(act device.Activation, y, mean, variance, x, weight, bias device.Buffer, outer, channels, inner int, eps float64) {
	noHalf("BatchNorm", y, mean, variance, x, weight, bias)
	switch buf(y).dt {
	case device.Float32:
		launch(k.d, channels, outer*inner*4, batchNormArgs[float32]{y: buf(y).f32, x: buf(x).f32,
			mean: buf(mean).f32, variance: buf(variance).f32, weight: f32s(weight), bias: f32s(bias),
			outer: outer, channels: channels, inner: inner, eps: eps, act: act})
	case device.Float64:
		launch(k.d, channels, outer*inner*4, batchNormArgs[float64]{y: buf(y).f64, x: buf(x).f64,
			mean: buf(mean).f64, variance: buf(variance).f64, weight: f64s(weight), bias: f64s(bias),
			outer: outer, channels: channels, inner: inner, eps: eps, act: act})
	default:
		panic(dtypeMsg("BatchNorm", buf(y).dt))
	}
}

// BatchNormGrad computes the gradients of BatchNorm.
func (k kernels) BatchNormGrad(dx, dweight, dbias, dy, x, mean, variance, weight device.Buffer, outer, channels, inner int, eps float64) {
	k.BatchNormActGrad(device.ActNone, dx, dweight, dbias, dy, nil, x, mean, variance, weight, outer, channels, inner, eps)
}

// BatchNormActGrad implements device.BatchNormActKernels. The float32
// kernels of package norm take the activation's gradient as they read the
// output gradient; elsewhere it is first written to dx, which the
// normalisation's gradient then reads (it reads each element of its dy
// before writing that element of dx).
func (k kernels) BatchNormActGrad(act device.Activation, dx, dweight, dbias, dy, y, x, mean, variance, weight device.Buffer, outer, channels, inner int, eps float64) {
	noHalf("BatchNormGrad", dx, dweight, dbias, dy, y, x, mean, variance, weight)
	switch buf(dy).dt {
	case device.Float32:
		batchNormActGrad(k.d, batchNormGradArgs[float32]{batchNormArgs[float32]{y: buf(dy).f32, x: buf(x).f32,
			mean: buf(mean).f32, variance: buf(variance).f32, weight: f32s(weight),
			outer: outer, channels: channels, inner: inner, eps: eps, act: act}, buf(dx).f32, f32s(dweight), f32s(dbias), f32s(y)})
	case device.Float64:
		batchNormActGrad(k.d, batchNormGradArgs[float64]{batchNormArgs[float64]{y: buf(dy).f64, x: buf(x).f64,
			mean: buf(mean).f64, variance: buf(variance).f64, weight: f64s(weight),
			outer: outer, channels: channels, inner: inner, eps: eps, act: act}, buf(dx).f64, f64s(dweight), f64s(dbias), f64s(y)})
	default:
		panic(dtypeMsg("BatchNormGrad", buf(dy).dt))
	}
}

// batchNormActGrad runs BatchNormActGrad's arguments a: the strided
// float32 path takes the activation's gradient itself; the others get it
// written into dx first, and read their dy from there.
func batchNormActGrad[T float](d *Device, a batchNormGradArgs[T]) {
	if a.act != device.ActNone && !a.stridedFloat32() {
		n := a.outer * a.channels * a.inner
		actGrad(d, a.act, a.dx[:n], a.y[:n], a.out[:n])
		a.y, a.act = a.dx, device.ActNone
	}
	launch(d, a.channels, a.outer*a.inner*6, a)
}

// actInPlace applies act to s as the separate activation would: vec.ReLU
// (as tensor Relu) for ReLU, BiasAct's loop for ReLU6.
func actInPlace[T float](act device.Activation, s []T) {
	switch act {
	case device.ActReLU:
		if s32, ok := any(s).([]float32); ok {
			vec.ReLU(s32, s32)
			return
		}
		for i, v := range s {
			if v < 0 { // NaN and -0 pass, as the Relu kernel's
				s[i] = 0
			}
		}
	case device.ActReLU6:
		biasActSlice(act, s, s, 0)
	}
}

// vecPlane is the smallest plane (the product of the sizes after the
// channel axis) that BatchNorm's float32 kernels process with the strided
// vector kernels of package norm; smaller planes (a BatchNorm1d's N×C
// input has planes of one element) take the element loops (and their
// rounding, which the CUDA device's kernels share).
const vecPlane = 16

// normAct is act as package norm names it (BatchNorm applies ReLU and
// ReLU6 only, see actInPlace).
func normAct(act device.Activation) norm.Act {
	switch act {
	case device.ActReLU:
		return norm.ReLU
	case device.ActReLU6:
		return norm.ReLU6
	}
	return norm.None
}

// planes returns the layout of one channel's planes for package norm.
func (a *batchNormArgs[T]) planes() norm.Planes {
	return norm.Planes{Rows: a.outer, Cols: a.inner, LD: a.channels * a.inner}
}

// batchNormStrided is batchNormArgs.run for float32 with planes of at
// least vecPlane values, each channel read where it lies (package norm):
// the mean, then the mean squared deviation from it (two passes, the sums
// in float64), then y = act((x-mean)·scale + bias). A channel of a batch
// is small enough (128 planes of 7×7: 25 KB) that the later passes find it
// in cache.
func batchNormStrided(a *batchNormArgs[float32], lo, hi int) {
	n := float64(a.outer * a.inner)
	p, act := a.planes(), normAct(a.act)
	for c := lo; c < hi; c++ {
		x := a.x[c*a.inner:]
		m := float32(norm.Sum(p, x) / n)
		variance := norm.SumSqDev(p, x, m) / n
		scale, b := a.scaleBias(c, variance)
		norm.ScaleShift(p, act, a.y[c*a.inner:], x, m, float32(scale), b)
		a.mean[c], a.variance[c] = m, float32(variance)
	}
}

// scaleBias returns channel c's scale 1/√(variance+ε)·weight and bias
// (weight 1 and bias 0 when there are none).
func (a *batchNormArgs[T]) scaleBias(c int, variance float64) (scale float64, bias T) {
	scale = 1 / math.Sqrt(variance+a.eps)
	if a.weight != nil {
		scale *= float64(a.weight[c])
	}
	if a.bias != nil {
		bias = a.bias[c]
	}
	return scale, bias
}

// stridedFloat32 reports whether a takes the float32 path of package norm
// (batchNormStrided, batchNormGradStrided), which applies the activation
// and its gradient itself.
func (a *batchNormArgs[T]) stridedFloat32() bool {
	_, ok := any(a).(*batchNormArgs[float32])
	return ok && a.inner >= vecPlane
}

// gradCoefficients stores channel c's weight and bias gradients (those
// asked for) and returns the coefficients of
// dx = k·dy + xs·(x-mean) + shift.
func (a *batchNormGradArgs[T]) gradCoefficients(c int, invstd, sumDy, sumDyXhat, n float64) (k, xs, shift float64) {
	if a.dbias != nil {
		a.dbias[c] = T(sumDy)
	}
	if a.dweight != nil {
		a.dweight[c] = T(sumDyXhat)
	}
	w := 1.0
	if a.weight != nil {
		w = float64(a.weight[c])
	}
	k = w * invstd
	return k, -k * invstd * sumDyXhat / n, -k * sumDy / n
}

// batchNormGradStrided is batchNormGradArgs.run for float32 with planes of
// at least vecPlane values, each channel read where it lies (package
// norm): Σg and Σg·(x-mean) of the gradient g after the activation's, then
// dx = k·g - k·invstd·(dweight/n)·(x-mean) - k·dbias/n, k = weight·invstd,
// which is the element loop's k·(dy - dbias/n - x̂·dweight/n) regrouped.
func batchNormGradStrided(a *batchNormGradArgs[float32], lo, hi int) {
	n := float64(a.outer * a.inner)
	p, act := a.planes(), normAct(a.act)
	for c := lo; c < hi; c++ {
		at := c * a.inner
		var out []float32
		if act != norm.None {
			out = a.out[at:]
		}
		m := a.mean[c]
		invstd := 1 / math.Sqrt(float64(a.variance[c])+a.eps)
		sumDy, sumDyXc := norm.GradSums(p, act, a.y[at:], out, a.x[at:], m)
		k, xs, shift := a.gradCoefficients(c, invstd, sumDy, sumDyXc*invstd, n)
		norm.GradApply(p, act, a.dx[at:], a.y[at:], out, a.x[at:], float32(k), m, float32(xs), float32(shift))
	}
}

// f32s and f64s return an optional buffer's slice (nil for none).
func f32s(b device.Buffer) []float32 {
	if b == nil {
		return nil
	}
	return buf(b).f32
}

func f64s(b device.Buffer) []float64 {
	if b == nil {
		return nil
	}
	return buf(b).f64
}

// batchNormArgs are the arguments of BatchNorm; for BatchNormGrad, y is
// the output gradient.
type batchNormArgs[T float] struct {
	y, x, mean, variance, weight, bias []T
	outer, channels, inner             int
	eps                                float64
	act                                device.Activation // applied after the normalisation
}

// plane returns channel c's plane o of x and of y.
func (a *batchNormArgs[T]) plane(o, c int) (x, y []T) {
	at := (o*a.channels + c) * a.inner
	return a.x[at : at+a.inner], a.y[at : at+a.inner]
}

// run normalises channels [lo, hi): the mean first, then the variance as
// the mean of squared deviations (two passes, in float64, for accuracy).
func (a *batchNormArgs[T]) run(lo, hi int) {
	if a.stridedFloat32() {
		batchNormStrided(any(a).(*batchNormArgs[float32]), lo, hi)
		return
	}
	n := float64(a.outer * a.inner)
	for c := lo; c < hi; c++ {
		var sum float64
		for o := 0; o < a.outer; o++ {
			x, _ := a.plane(o, c)
			for _, v := range x {
				sum += float64(v)
			}
		}
		mean := sum / n
		var ss float64
		for o := 0; o < a.outer; o++ {
			x, _ := a.plane(o, c)
			for _, v := range x {
				d := float64(v) - mean
				ss += d * d
			}
		}
		variance := ss / n
		// y = (x - mean)·s + bias rather than x·s + (bias - mean·s):
		// the subtraction first is exact where x is near the mean, so that
		// no large x·s cancels a large shift (and a value equal to the mean
		// gives exactly bias, with or without a fused multiply-add).
		scale, b := a.scaleBias(c, variance)
		m, s := T(mean), T(scale)
		for o := 0; o < a.outer; o++ {
			x, y := a.plane(o, c)
			for i, v := range x {
				y[i] = (v-m)*s + b
			}
			actInPlace(a.act, y)
		}
		a.mean[c], a.variance[c] = T(mean), T(variance)
	}
}

// batchNormGradArgs are the arguments of BatchNormGrad; with an
// activation (act, kept only for the strided float32 path, see
// batchNormActGrad), y is the gradient of its output out.
type batchNormGradArgs[T float] struct {
	batchNormArgs[T]
	dx, dweight, dbias []T
	out                []T
}

// run computes, for channels [lo, hi), with x̂ = (x-mean)·invstd:
// dbias = Σ dy, dweight = Σ dy·x̂ and
// dx = weight·invstd·(dy - dbias/n - x̂·dweight/n).
func (a *batchNormGradArgs[T]) run(lo, hi int) {
	if a.stridedFloat32() {
		batchNormGradStrided(any(a).(*batchNormGradArgs[float32]), lo, hi)
		return
	}
	n := float64(a.outer * a.inner)
	for c := lo; c < hi; c++ {
		mean := float64(a.mean[c])
		invstd := 1 / math.Sqrt(float64(a.variance[c])+a.eps)
		var sumDy, sumDyXhat float64
		for o := 0; o < a.outer; o++ {
			x, dy := a.plane(o, c)
			for i, g := range dy {
				sumDy += float64(g)
				sumDyXhat += float64(g) * (float64(x[i]) - mean) * invstd
			}
		}
		k, _, _ := a.gradCoefficients(c, invstd, sumDy, sumDyXhat, n)
		for o := 0; o < a.outer; o++ {
			x, dy := a.plane(o, c)
			dx := a.dx[(o*a.channels+c)*a.inner:][:a.inner]
			for i, g := range dy {
				xhat := (float64(x[i]) - mean) * invstd
				dx[i] = T(k * (float64(g) - sumDy/n - xhat*sumDyXhat/n))
			}
		}
	}
}

// The CPU device implements the optional one-pass GELU.
var _ device.GELUKernels = kernels{}

// GELU computes y = x·Φ(x), Φ(x) = (1 + erf(x/√2))/2: float64 elements
// one by one with math.Erf, float32 ones in blocks through package vec's
// loops (vec.Erf's approximation, a few ulp).
func (k kernels) GELU(y, x device.Buffer, n int) {
	noHalf("GELU", y, x)
	switch buf(y).dt {
	case device.Float32:
		launch(k.d, n, 8, geluArgs[float32]{y: buf(y).f32[:n], x: buf(x).f32[:n]})
	case device.Float64:
		launch(k.d, n, 8, geluArgs[float64]{y: buf(y).f64[:n], x: buf(x).f64[:n]})
	default:
		panic(dtypeMsg("GELU", buf(y).dt))
	}
}

// GELUGrad computes dx = dy·(Φ(x) + x·φ(x)), φ(x) = e^(-x²/2)/√(2π), as
// GELU does: float64 with package math, float32 through package vec.
func (k kernels) GELUGrad(dx, dy, x device.Buffer, n int) {
	noHalf("GELUGrad", dx, dy, x)
	switch buf(dx).dt {
	case device.Float32:
		launch(k.d, n, 16, geluArgs[float32]{y: buf(dx).f32[:n], x: buf(x).f32[:n], dy: buf(dy).f32[:n]})
	case device.Float64:
		launch(k.d, n, 16, geluArgs[float64]{y: buf(dx).f64[:n], x: buf(x).f64[:n], dy: buf(dy).f64[:n]})
	default:
		panic(dtypeMsg("GELUGrad", buf(dx).dt))
	}
}

// geluArgs are GELU's arguments (dy nil), or GELUGrad's (y is dx).
type geluArgs[T float] struct{ y, x, dy []T }

func (a *geluArgs[T]) run(lo, hi int) {
	const invSqrt2, invSqrt2Pi = 1 / math.Sqrt2, 0.3989422804014327 // 1/√(2π)
	x, y := a.x[lo:hi], a.y[lo:hi]
	if a.dy == nil {
		if x32, ok := any(x).([]float32); ok {
			gelu32(any(y).([]float32), x32)
			return
		}
		for i, v := range x {
			f := float64(v)
			y[i] = T(f * 0.5 * (1 + math.Erf(f*invSqrt2)))
		}
		return
	}
	dy := a.dy[lo:hi]
	if x32, ok := any(x).([]float32); ok {
		geluGrad32(any(y).([]float32), any(dy).([]float32), x32)
		return
	}
	for i, v := range x {
		f := float64(v)
		cdf := 0.5 * (1 + math.Erf(f*invSqrt2))
		pdf := math.Exp(-0.5*f*f) * invSqrt2Pi
		y[i] = T(float64(dy[i]) * (cdf + f*pdf))
	}
}

// geluBlock is the number of elements the float32 GELU loops take at a
// time through package vec's loops (two blocks of scratch stay in L1).
const geluBlock = 256

// gelu32 is GELU's float32 loop: y = x·(1 + erf(x/√2))/2 with vec.Erf (a
// few ulp of float32), in blocks of geluBlock elements.
func gelu32(y, x []float32) {
	var t [geluBlock]float32
	for lo := 0; lo < len(x); lo += geluBlock {
		xs := x[lo:min(lo+geluBlock, len(x))]
		ys, ts := y[lo:lo+len(xs)], t[:len(xs)]
		vec.MulScalar(ts, xs, 1/math.Sqrt2)
		vec.Erf(ts, ts)
		vec.AddScalar(ts, ts, 1)
		vec.Mul(ts, ts, xs)
		vec.MulScalar(ys, ts, 0.5)
	}
}

// geluGrad32 is GELUGrad's float32 loop:
// dx = dy·((1 + erf(x/√2))/2 + x·e^(-x²/2)/√(2π)) with vec.Erf and vec.Exp,
// in blocks of geluBlock elements.
func geluGrad32(dx, dy, x []float32) {
	const invSqrt2Pi = 0.3989422804014327 // 1/√(2π)
	var cdf, pdf [geluBlock]float32
	for lo := 0; lo < len(x); lo += geluBlock {
		xs := x[lo:min(lo+geluBlock, len(x))]
		c, p := cdf[:len(xs)], pdf[:len(xs)]
		vec.MulScalar(c, xs, 1/math.Sqrt2)
		vec.Erf(c, c)
		vec.AddScalar(c, c, 1)
		vec.MulScalar(c, c, 0.5)
		vec.Mul(p, xs, xs)
		vec.MulScalar(p, p, -0.5)
		vec.Exp(p, p)
		vec.Mul(p, p, xs)
		vec.MulScalar(p, p, invSqrt2Pi)
		vec.Add(c, c, p)
		vec.Mul(dx[lo:lo+len(xs)], dy[lo:lo+len(xs)], c)
	}
}
