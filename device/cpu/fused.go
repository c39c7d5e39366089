package cpu

import (
	"fmt"
	"math"

	"github.com/hora-dl/hora/device"
)

// The CPU device implements the optional fused kernels.
var _ device.FusedKernels = kernels{}

// BiasAct computes y = act(x + bias) per channel.
func (k kernels) BiasAct(act device.Activation, y, x, bias device.Buffer, outer, channels, inner int) {
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
	}
}

func biasAct[T float](dev *Device, act device.Activation, y, x, bias []T, outer, channels, inner int) {
	if dev.serial(outer*channels, inner) {
		biasActRows(act, y, x, bias, channels, inner, 0, outer*channels)
		return
	}
	dev.parallelFor(outer*channels, inner, func(lo, hi int) { biasActRows(act, y, x, bias, channels, inner, lo, hi) })
}

// biasActRows is biasAct for rows (n, c) in [lo, hi) of the N*C rows.
func biasActRows[T float](act device.Activation, y, x, bias []T, channels, inner, lo, hi int) {
	for r := lo; r < hi; r++ {
		var b T
		if bias != nil {
			b = bias[r%channels]
		}
		src, dst := x[r*inner:(r+1)*inner], y[r*inner:(r+1)*inner]
		if act == device.ActReLU {
			for i, v := range src {
				v += b
				if v < 0 { // NaN stays NaN, as in PyTorch
					v = 0
				}
				dst[i] = v
			}
			continue
		}
		for i, v := range src {
			dst[i] = v + b
		}
	}
}

// ActGrad computes dx = dy * act'(y).
func (k kernels) ActGrad(act device.Activation, dx, dy, y device.Buffer, n int) {
	switch buf(dx).dt {
	case device.Float32:
		actGrad(k.d, act, buf(dx).f32[:n], buf(dy).f32[:n], buf(y).f32[:n])
	case device.Float64:
		actGrad(k.d, act, buf(dx).f64[:n], buf(dy).f64[:n], buf(y).f64[:n])
	}
}

func actGrad[T float](dev *Device, act device.Activation, dx, dy, y []T) {
	if dev.serial(len(dx), 1) {
		actGradRange(act, dx, dy, y, 0, len(dx))
		return
	}
	dev.parallelFor(len(dx), 1, func(lo, hi int) { actGradRange(act, dx, dy, y, lo, hi) })
}

func actGradRange[T float](act device.Activation, dx, dy, y []T, lo, hi int) {
	if act != device.ActReLU {
		copy(dx[lo:hi], dy[lo:hi])
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
	switch buf(db).dt {
	case device.Float32:
		biasGrad(k.d, buf(db).f32[:channels], buf(dy).f32, outer, channels, inner)
	case device.Float64:
		biasGrad(k.d, buf(db).f64[:channels], buf(dy).f64, outer, channels, inner)
	}
}

func biasGrad[T float](dev *Device, db, dy []T, outer, channels, inner int) {
	if dev.serial(channels, outer*inner) {
		biasGradChannels(db, dy, outer, channels, inner, 0, channels)
		return
	}
	dev.parallelFor(channels, outer*inner, func(lo, hi int) { biasGradChannels(db, dy, outer, channels, inner, lo, hi) })
}

// biasGradChannels is biasGrad for channels [lo, hi).
func biasGradChannels[T float](db, dy []T, outer, channels, inner, lo, hi int) {
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
func (k kernels) SoftmaxCrossEntropy(loss, grad, logits, labels device.Buffer, rows, classes int, smoothing float64) {
	lab := buf(labels).i64[:rows]
	for r, l := range lab {
		if l < 0 || l >= int64(classes) {
			panic(fmt.Sprintf("cpu: cross-entropy: label %d of row %d is outside [0, %d)", l, r, classes))
		}
	}
	switch buf(grad).dt {
	case device.Float32:
		buf(loss).f32[0] = float32(softmaxXent(k.d, buf(grad).f32, buf(logits).f32, lab, rows, classes, smoothing))
	case device.Float64:
		buf(loss).f64[0] = softmaxXent(k.d, buf(grad).f64, buf(logits).f64, lab, rows, classes, smoothing)
	}
}

// softmaxXentParts bounds the partial loss sums, fixing the summation order
// whatever the number of workers.
const softmaxXentParts = 16

func softmaxXent[T float](dev *Device, grad, logits []T, labels []int64, rows, classes int, smoothing float64) float64 {
	var parts [softmaxXentParts]float64
	chunk := (rows + softmaxXentParts - 1) / softmaxXentParts
	scale := 1 / float64(rows)
	off := smoothing / float64(classes) // smoothed target of every class
	on := 1 - smoothing + off           // and of the label
	dev.parallelFor(softmaxXentParts, chunk*classes*8, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			var sum float64
			for r := p * chunk; r < min((p+1)*chunk, rows); r++ {
				x := logits[r*classes : (r+1)*classes]
				g := grad[r*classes : (r+1)*classes]
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
				label := int(labels[r])
				// loss = -Σ_i target_i · log p_i, log p_i = x_i - logZ
				var l float64
				for i, v := range x {
					t := off
					if i == label {
						t = on
					}
					if t != 0 {
						l -= t * (float64(v) - logZ)
					}
					gi := float64(g[i])/z - t
					g[i] = T(gi * scale)
				}
				sum += l
			}
			parts[p] = sum
		}
	})
	var total float64
	for _, s := range parts {
		total += s
	}
	return total * scale
}

// SGDStep is torch.optim.SGD's update for one parameter.
func (k kernels) SGDStep(h device.SGDHyper, param, grad, mbuf device.Buffer, n int) {
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
	}
}

func sgdStep[T float](dev *Device, h device.SGDHyper, p, g, b []T) {
	if dev.serial(len(p), 4) {
		sgdRange(h, p, g, b, 0, len(p))
		return
	}
	dev.parallelFor(len(p), 4, func(lo, hi int) { sgdRange(h, p, g, b, lo, hi) })
}

func sgdRange[T float](h device.SGDHyper, p, g, b []T, lo, hi int) {
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
	}
}

func adamStep[T float](dev *Device, h device.AdamHyper, p, g, m, v, maxV []T) {
	if dev.serial(len(p), 8) {
		adamRange(h, p, g, m, v, maxV, 0, len(p))
		return
	}
	dev.parallelFor(len(p), 8, func(lo, hi int) { adamRange(h, p, g, m, v, maxV, lo, hi) })
}

func adamRange[T float](h device.AdamHyper, p, g, m, v, maxV []T, lo, hi int) {
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
