package vec

import "math"

// Pure-Go implementations: the "go" kernel, used on every architecture
// without assembly (or with the noasm build tag), and as the reference the
// assembly kernels are tested against. They have the same contracts as the
// exported functions, with the lengths already checked and non-zero.

func addGo(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

func addReLUGo(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		v := a[i] + b[i]
		if v < 0 { // NaN stays NaN
			v = 0
		}
		dst[i] = v
	}
}

func subGo(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] - b[i]
	}
}

func mulGo(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * b[i]
	}
}

func divGo(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] / b[i]
	}
}

func addScalarGo(dst, a []float32, s float32) {
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + s
	}
}

func mulScalarGo(dst, a []float32, s float32) {
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * s
	}
}

func addScalarReLUGo(dst, a []float32, s float32) {
	a = a[:len(dst)]
	for i := range dst {
		v := a[i] + s
		if v < 0 {
			v = 0
		}
		dst[i] = v
	}
}

func axpyGo(dst []float32, alpha float32, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += alpha * x[i]
	}
}

func addRowsGo(dst, a, row []float32) {
	n := len(row)
	for len(dst) >= n && len(a) >= n {
		d, s := dst[:n], a[:n]
		for j, r := range row {
			d[j] = s[j] + r
		}
		dst, a = dst[n:], a[n:]
	}
}

func addRowsReLUGo(dst, a, row []float32) {
	n := len(row)
	for len(dst) >= n && len(a) >= n {
		d, s := dst[:n], a[:n]
		for j, r := range row {
			v := s[j] + r
			if v < 0 {
				v = 0
			}
			d[j] = v
		}
		dst, a = dst[n:], a[n:]
	}
}

func reluGo(dst, a []float32) {
	a = a[:len(dst)]
	for i := range dst {
		v := a[i]
		if v < 0 {
			v = 0
		}
		dst[i] = v
	}
}

func reluGradGo(dst, g, y []float32) {
	g, y = g[:len(dst)], y[:len(dst)]
	for i := range dst {
		if y[i] > 0 {
			dst[i] = g[i]
		} else {
			dst[i] = 0
		}
	}
}

// sumGo accumulates in float64 (four partial sums).
func sumGo(a []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i])
		s1 += float64(a[i+1])
		s2 += float64(a[i+2])
		s3 += float64(a[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// dotGo accumulates in float32 (four partial sums) combined in float64.
func dotGo(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (float64(s0) + float64(s1)) + (float64(s2) + float64(s3))
}

// maxGo returns the largest element, or NaN if there is one.
func maxGo(a []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range a {
		if v > m {
			m = v
		} else if v != v {
			return v
		}
	}
	return m
}

func argMaxGo(a []float32) int {
	best, m := 0, a[0]
	if m != m {
		return 0
	}
	for i, v := range a {
		if v > m {
			best, m = i, v
		} else if v != v {
			return i
		}
	}
	return best
}

// indexGo returns the first i with a[i] == v (nan == 0) or a[i] NaN, or -1.
func indexGo(a []float32, v float32, nan int) int {
	for i, x := range a {
		if x == v || (nan != 0 && x != x) {
			return i
		}
	}
	return -1
}

func sumRowsGo(dst, a []float32) {
	n := len(dst)
	for len(a) >= n {
		for j, v := range a[:n] {
			dst[j] += v
		}
		a = a[n:]
	}
}

// exp32 is exp for float32 computed in float64: range reduction x = k·ln2 + r,
// |r| <= ln2/2, a degree-8 Taylor polynomial (truncation error < 3e-10
// relative) and the scaling by 2^k in float64, so the only significant error
// is the final rounding to float32 (correctly rounded except within ~1e-9 of a
// rounding boundary; subnormal results are rounded once).
func exp32(x float32) float32 {
	switch {
	case x != x:
		return x
	case x > 88.8:
		return float32(math.Inf(1))
	case x < -104:
		return 0
	}
	xd := float64(x)
	k := math.Floor(xd*math.Log2E + 0.5)
	r := xd - k*math.Ln2
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040+r*(1.0/40320))))))))
	return float32(p * math.Float64frombits(uint64(int64(k)+1023)<<52))
}

func expGo(dst, a []float32) {
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = exp32(a[i])
	}
}

// expShiftSumGo sets dst[i] = exp(a[i]+shift) and returns their sum.
func expShiftSumGo(dst, a []float32, shift float32) float32 {
	a = a[:len(dst)]
	var s float32
	for i := range dst {
		e := exp32(a[i] + shift)
		dst[i] = e
		s += e
	}
	return s
}

func tanhGo(dst, a []float32) {
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = float32(math.Tanh(float64(a[i])))
	}
}

// sgdConsts are SGDMomentum's per-call scalars, as PyTorch rounds them to
// float32 (see SGDMomentum).
type sgdConsts struct {
	wd    float32 // weight decay
	mom   float32 // momentum
	omd   float32 // 1 - dampening
	negLR float32 // -lr
}

// SGD variants (bits of the variant argument).
const (
	sgdWD       = 1 << iota // weight decay != 0
	sgdMomentum             // momentum != 0
	sgdFirst                // first step: buf = g
	sgdNesterov             // g += momentum*buf instead of g = buf
)

// fma32 is x*y + z with one rounding (to float64, then to float32, which
// differs from a float32 FMA only in rare double-rounding cases): the Go
// kernels use it where PyTorch's vectorised kernels (and the assembly ones)
// use a fused multiply-add, so that they agree closely even under
// cancellation.
func fma32(x, y, z float32) float32 { return float32(float64(x)*float64(y) + float64(z)) }

func sgdGo(param, grad, buf []float32, c *sgdConsts, variant int) {
	grad = grad[:len(param)]
	wd, mom, omd, negLR := c.wd, c.mom, c.omd, c.negLR
	if variant&sgdWD == 0 {
		wd = 0 // fma32(p, 0, g) = g for finite p; the loop below skips it
	}
	if variant&sgdMomentum == 0 {
		for i, p := range param {
			g := grad[i]
			if wd != 0 {
				g = fma32(p, wd, g)
			}
			param[i] = fma32(g, negLR, p)
		}
		return
	}
	buf = buf[:len(param)]
	first, nesterov := variant&sgdFirst != 0, variant&sgdNesterov != 0
	for i, p := range param {
		g := grad[i]
		if wd != 0 {
			g = fma32(p, wd, g)
		}
		b := g
		if !first {
			b = fma32(g, omd, buf[i]*mom)
		}
		buf[i] = b
		if nesterov {
			g = fma32(b, mom, g)
		} else {
			g = b
		}
		param[i] = fma32(g, negLR, p)
	}
}

// adamConsts are Adam's per-call scalars, as PyTorch rounds them to float32
// (see Adam). The layout is read by the assembly kernels.
type adamConsts struct {
	b1      float32 // beta1
	omb1    float32 // 1 - beta1
	b2      float32 // beta2
	omb2    float32 // 1 - beta2
	bc2sqrt float32 // sqrt(1 - beta2^step)
	eps     float32
	negStep float32 // -lr / (1 - beta1^step)
	wd      float32 // decoupled: 1 - lr*weightDecay; otherwise weightDecay
}

// Adam variants.
const (
	adamDecay = 0 // param *= c.wd first (AdamW, or Adam without weight decay with c.wd = 1)
	adamL2    = 1 // g += c.wd*param (Adam with weight decay)
)

func adamGo(param, grad, m, v []float32, c *adamConsts, variant int) {
	grad, m, v = grad[:len(param)], m[:len(param)], v[:len(param)]
	for i := range param {
		p, g := param[i], grad[i]
		if variant == adamL2 {
			g = fma32(p, c.wd, g)
		} else {
			p *= c.wd
		}
		mi := fma32(g, c.omb1, m[i]*c.b1)
		m[i] = mi
		// The conversions round each product, preventing FMA fusion (as
		// PyTorch's addcmul and addcdiv kernels, which do not fuse).
		vi := float32(v[i]*c.b2) + float32(float32(c.omb2*g)*g)
		v[i] = vi
		d := float32(math.Sqrt(float64(vi)))/c.bc2sqrt + c.eps
		param[i] = p + float32(c.negStep*mi)/d
	}
}

func maxScalarGo(dst, a []float32, s float32) {
	a = a[:len(dst)]
	for i := range dst {
		v := a[i]
		if !(v > s || v != v) {
			v = s
		}
		dst[i] = v
	}
}

func minScalarGo(dst, a []float32, s float32) {
	a = a[:len(dst)]
	for i := range dst {
		v := a[i]
		if !(v < s || v != v) {
			v = s
		}
		dst[i] = v
	}
}

func clampGo(dst, a []float32, lo, hi float32) {
	a = a[:len(dst)]
	for i := range dst {
		v := a[i]
		if v < lo {
			v = lo
		}
		if v > hi {
			v = hi
		}
		dst[i] = v
	}
}

func addScalarClampGo(dst, a []float32, s, lo, hi float32) {
	a = a[:len(dst)]
	for i := range dst {
		v := a[i] + s
		if v < lo {
			v = lo
		}
		if v > hi {
			v = hi
		}
		dst[i] = v
	}
}

func relu6GradGo(dst, g, y []float32) {
	g, y = g[:len(dst)], y[:len(dst)]
	for i := range dst {
		v := g[i]
		if y[i] <= 0 || y[i] >= 6 {
			v = 0
		}
		dst[i] = v
	}
}

// sumSqDevGo accumulates (a-m)² in four float32 partial sums, added in
// float64 at the end (as dotGo).
func sumSqDevGo(a []float32, m float32) float64 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		d0, d1, d2, d3 := a[i]-m, a[i+1]-m, a[i+2]-m, a[i+3]-m
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(a); i++ {
		d := a[i] - m
		s0 += d * d
	}
	return (float64(s0) + float64(s1)) + (float64(s2) + float64(s3))
}

// dotDevGo is dotGo of a-m and b.
func dotDevGo(a, b []float32, m float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += (a[i] - m) * b[i]
		s1 += (a[i+1] - m) * b[i+1]
		s2 += (a[i+2] - m) * b[i+2]
		s3 += (a[i+3] - m) * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += (a[i] - m) * b[i]
	}
	return (float64(s0) + float64(s1)) + (float64(s2) + float64(s3))
}

func scaleShiftGo(dst, a []float32, m, s, b float32) {
	a = a[:len(dst)]
	for i, v := range a {
		dst[i] = (v-m)*s + b
	}
}

func affineDevGo(dst, g, x []float32, gs, m, xs, c float32) {
	g, x = g[:len(dst)], x[:len(dst)]
	for i := range dst {
		dst[i] = gs*g[i] + xs*(x[i]-m) + c
	}
}

// erfGo is erfK's approximation in Go: x·P(x²)/Q(x²) for x clamped to
// [-4, 4] (the coefficients are asmgen.go's erfConsts).
func erfGo(dst, a []float32) {
	a = a[:len(dst)]
	for i, v := range a {
		x := v
		if x < -4 {
			x = -4
		}
		if x > 4 {
			x = 4
		}
		x2 := x * x
		p := x2*-2.72614225801306e-10 + 2.77068142495902e-08
		p = x2*p - 2.10102402082508e-06
		p = x2*p - 5.69250639462346e-05
		p = x2*p - 7.34990630326855e-04
		p = x2*p - 2.95459980854025e-03
		p = x2*p - 1.60960333262415e-02
		q := x2*-1.45660718464996e-05 - 2.13374055278905e-04
		q = x2*q - 1.68282697438203e-03
		q = x2*q - 7.37332916720468e-03
		q = x2*q - 1.42647390514189e-02
		dst[i] = x * p / q
	}
}
