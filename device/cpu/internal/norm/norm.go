package norm

import (
	"fmt"
	"math"
)

// Act is an activation applied after the normalisation, whose gradient
// GradSums and GradApply take.
type Act int

const (
	// None is no activation.
	None Act = iota
	// ReLU is max(v, 0); its gradient passes where the output is > 0 (not
	// where it is NaN).
	ReLU
	// ReLU6 is min(max(v, 0), 6); its gradient passes where the output is
	// neither ≤ 0 nor ≥ 6 (a NaN output passes it, as PyTorch's hardtanh).
	ReLU6
)

// bounds returns the clamp of a: lo, hi = ±Inf for None.
func (a Act) bounds() (lo, hi float32) {
	inf := float32(math.Inf(1))
	switch a {
	case ReLU:
		return 0, inf
	case ReLU6:
		return 0, 6
	}
	return -inf, inf
}

// Planes is the layout of one channel: Rows planes (one per image) of
// Cols values, LD values apart.
type Planes struct{ Rows, Cols, LD int }

// check panics unless every slice in s holds the planes p.
func (p Planes) check(op string, s ...[]float32) {
	if p.Rows < 1 || p.Cols < 1 || p.LD < p.Cols {
		panic(fmt.Sprintf("norm: %s of %d rows of %d values %d apart", op, p.Rows, p.Cols, p.LD))
	}
	need := (p.Rows-1)*p.LD + p.Cols
	for _, v := range s {
		if v != nil && len(v) < need {
			panic(fmt.Sprintf("norm: %s of %d rows of %d values %d apart: a slice of %d values, expected at least %d", op, p.Rows, p.Cols, p.LD, len(v), need))
		}
	}
}

// Sum returns Σx over the planes.
func Sum(p Planes, x []float32) float64 {
	p.check("Sum", x)
	if haveAsm {
		return sumAVX512(&x[0], p.LD, p.Rows, p.Cols)
	}
	if haveAVX2 {
		return sumAVX2(&x[0], p.LD, p.Rows, p.Cols)
	}
	var s float64
	for r := range p.Rows {
		for _, v := range x[r*p.LD:][:p.Cols] {
			s += float64(v)
		}
	}
	return s
}

// SumSqDev returns Σ(x-m)² over the planes.
func SumSqDev(p Planes, x []float32, m float32) float64 {
	p.check("SumSqDev", x)
	if haveAsm {
		return sumSqDevAVX512(&x[0], p.LD, p.Rows, p.Cols, m)
	}
	if haveAVX2 {
		return sumSqDevAVX2(&x[0], p.LD, p.Rows, p.Cols, m)
	}
	var s float64
	for r := range p.Rows {
		for _, v := range x[r*p.LD:][:p.Cols] {
			d := v - m
			s += float64(d * d)
		}
	}
	return s
}

// ScaleShift sets y = act((x-m)·s + b) over the planes, rounding after
// each operation (as vec.ScaleShift); y may be x. NaN stays NaN.
func ScaleShift(p Planes, act Act, y, x []float32, m, s, b float32) {
	p.check("ScaleShift", y, x)
	lo, hi := act.bounds()
	if haveAsm {
		scaleShiftAVX512(&y[0], &x[0], p.LD, p.Rows, p.Cols, m, s, b, lo, hi)
		return
	}
	if haveAVX2 {
		scaleShiftAVX2(&y[0], &x[0], p.LD, p.Rows, p.Cols, m, s, b, lo, hi)
		return
	}
	for r := range p.Rows {
		yr, xr := y[r*p.LD:][:p.Cols], x[r*p.LD:][:p.Cols]
		for i, v := range xr {
			v = float32((v-m)*s) + b // no fused multiply-add
			if v < lo {              // NaN stays NaN; -0 stays -0
				v = lo
			}
			if v > hi {
				v = hi
			}
			yr[i] = v
		}
	}
}

// passes reports whether act's gradient passes where its output is out.
func (a Act) passes(out float32) bool {
	switch a {
	case ReLU:
		return out > 0
	case ReLU6:
		return !(out <= 0) && !(out >= 6)
	}
	return true
}

// GradSums returns Σg and Σg·(x-m) over the planes, g being dy where act's
// gradient passes (out is act's output; nil for None) and 0 elsewhere.
func GradSums(p Planes, act Act, dy, out, x []float32, m float32) (sumG, sumGXc float64) {
	if act != None && out == nil {
		panic("norm: GradSums of an activation without its output")
	}
	p.check("GradSums", dy, out, x)
	if haveAsm {
		o, lo, hi := gradMask(act, dy, out)
		return gradSumsAVX512(&dy[0], o, &x[0], p.LD, p.Rows, p.Cols, int(act), m, lo, hi)
	}
	if haveAVX2 {
		o, lo, hi := gradMask(act, dy, out)
		return gradSumsAVX2(&dy[0], o, &x[0], p.LD, p.Rows, p.Cols, int(act), m, lo, hi)
	}
	for r := range p.Rows {
		at := r * p.LD
		for i, g := range dy[at : at+p.Cols] {
			if act != None && !act.passes(out[at+i]) {
				continue
			}
			sumG += float64(g)
			sumGXc += float64(g * (x[at+i] - m))
		}
	}
	return sumG, sumGXc
}

// GradApply sets dx = (k·g + xs·(x-m)) + shift over the planes, rounding
// after each operation (as vec.AffineDev), g being dy where act's gradient
// passes (out is act's output; nil for None) and 0 elsewhere. dx may be dy
// or x.
func GradApply(p Planes, act Act, dx, dy, out, x []float32, k, m, xs, shift float32) {
	if act != None && out == nil {
		panic("norm: GradApply of an activation without its output")
	}
	p.check("GradApply", dx, dy, out, x)
	if haveAsm {
		o, lo, hi := gradMask(act, dy, out)
		gradApplyAVX512(&dx[0], &dy[0], o, &x[0], p.LD, p.Rows, p.Cols, int(act), k, m, xs, shift, lo, hi)
		return
	}
	if haveAVX2 {
		o, lo, hi := gradMask(act, dy, out)
		gradApplyAVX2(&dx[0], &dy[0], o, &x[0], p.LD, p.Rows, p.Cols, int(act), k, m, xs, shift, lo, hi)
		return
	}
	for r := range p.Rows {
		at := r * p.LD
		for i := range p.Cols {
			g := dy[at+i]
			if act != None && !act.passes(out[at+i]) {
				g = 0
			}
			dx[at+i] = (float32(k*g) + float32(xs*(x[at+i]-m))) + shift // no fused multiply-add
		}
	}
}
