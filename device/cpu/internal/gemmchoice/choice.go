package gemmchoice

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Class is a class of float32 matrix products by shape: the unit of the
// measured choice.
type Class int

const (
	// Small products have m·n·k at most 128³: the MLP's 10-wide layer,
	// LeNet's layers, one image's late convolutions at batch 1.
	Small Class = iota
	// Transposed products are larger than Small and read A transposed
	// (stored k×m): a convolution's input gradient through im2col (the
	// filters transposed times the output gradient), a Linear layer's
	// weight gradient.
	Transposed
	// Narrow products are larger than Small, not Transposed, read B
	// transposed (stored n×k) and have at most 64 columns: a convolution's weight gradient
	// through im2col (n: its output channels, k: the positions of a few
	// images), a narrow Linear layer's forward product.
	Narrow
	// Skinny products are larger than Small, neither Transposed nor
	// Narrow, with m, n or k at most 64: a 7×7 convolution output (n = 49), a first
	// convolution (k = 27).
	Skinny
	// Large products are all the others.
	Large
	// NumClasses is the number of classes.
	NumClasses
)

// smallVolume and skinnyDim are the class boundaries.
const (
	smallVolume = 128 * 128 * 128
	skinnyDim   = 64
)

var classNames = [NumClasses]string{"small", "transposed", "narrow", "skinny", "large"}

// String returns "small", "transposed", "narrow", "skinny" or "large".
func (c Class) String() string {
	if c < 0 || c >= NumClasses {
		return fmt.Sprintf("Class(%d)", int(c))
	}
	return classNames[c]
}

// ClassOf returns the class of the product of an m×k matrix op(A) by a
// k×n matrix op(B), transA and transB telling whether op(A) is A
// transposed and op(B) B transposed.
func ClassOf(transA, transB bool, m, n, k int) Class {
	if float64(m)*float64(n)*float64(k) <= smallVolume {
		return Small
	}
	if transA {
		return Transposed
	}
	if transB && n <= skinnyDim {
		return Narrow
	}
	if min(m, n, k) <= skinnyDim {
		return Skinny
	}
	return Large
}

// Impl is a float32 GEMM implementation, single-threaded: C = op(A)·op(B)
// for row-major m×k op(A), k×n op(B) and m×n C, C not read (alpha 1,
// beta 0).
type Impl func(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int)

// Result is the measurement of one class: the speed of Hora's kernel and
// of the BLAS library in GFLOP/s, each from its fastest call on every
// probe product of the class, and which one runs the class.
type Result struct {
	Own     float64 `json:"own_gflops"`
	BLAS    float64 `json:"blas_gflops"`
	UseBLAS bool    `json:"use_blas"`
}

// Choice is the measured choice for every class.
type Choice struct {
	Classes [NumClasses]Result `json:"classes"`
	// Mismatch, when not empty, says how the library's products differed
	// from Hora's: the library is then used for no class.
	Mismatch string `json:"mismatch,omitempty"`
}

// UseBLAS reports whether the product of an m×k matrix op(A) by a k×n
// matrix op(B) goes to the BLAS library (transA, transB: op(A) is A
// transposed, op(B) B transposed).
func (c *Choice) UseBLAS(transA, transB bool, m, n, k int) bool {
	return c.Classes[ClassOf(transA, transB, m, n, k)].UseBLAS
}

// AllBLAS reports whether every class goes to the library; NoBLAS whether
// none does.
func (c *Choice) AllBLAS() bool { return c.count() == int(NumClasses) }

// NoBLAS reports whether no class goes to the library.
func (c *Choice) NoBLAS() bool { return c.count() == 0 }

func (c *Choice) count() int {
	n := 0
	for _, r := range c.Classes {
		if r.UseBLAS {
			n++
		}
	}
	return n
}

// List names the classes that go to the library (blas true) or to
// Hora's kernel, as "small and skinny".
func (c *Choice) List(blas bool) string {
	var names []string
	for cl, r := range c.Classes {
		if r.UseBLAS == blas {
			names = append(names, Class(cl).String())
		}
	}
	switch len(names) {
	case 0:
		return "none"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// String gives the measurement, "GFLOP/s Hora/BLAS: small 150/60,
// transposed 120/110, narrow 100/80, skinny 140/120, large 190/170", with the mismatch if there was
// one.
func (c *Choice) String() string {
	var b strings.Builder
	b.WriteString("GFLOP/s Hora/BLAS:")
	for cl, r := range c.Classes {
		if cl > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s %.0f/%.0f", Class(cl), r.Own, r.BLAS)
	}
	if c.Mismatch != "" {
		b.WriteString("; BLAS not used: " + c.Mismatch)
	}
	return b.String()
}

// valid reports whether every speed is a positive finite number (a choice
// read from a file that is not is measured again).
func (c *Choice) valid() bool {
	for _, r := range c.Classes {
		for _, v := range []float64{r.Own, r.BLAS} {
			if !(v > 0) || math.IsInf(v, 0) {
				return false
			}
		}
	}
	return true
}

// probe is one product a class is measured on.
type probe struct {
	transA, transB bool
	m, n, k        int
}

// probes are the products each class is measured on: shapes the zoo and
// the ONNX models run, in the layouts the layers use (weight gradients
// transpose A, input gradients and Linear's forward B).
var probes = [NumClasses][]probe{
	Small: {
		{transB: true, m: 128, n: 10, k: 256}, // a 10-wide Linear, forward
		{m: 128, n: 256, k: 10},               // its input gradient
		{transA: true, m: 10, n: 256, k: 128}, // its weight gradient
		{m: 64, n: 64, k: 64},
	},
	Transposed: {
		{transA: true, m: 128, n: 784, k: 128}, // a 1×1 layer's input gradient, 128 channels on 28×28
		{transA: true, m: 32, n: 3136, k: 64},  // a narrower one on 56×56
		{transA: true, m: 784, n: 512, k: 128}, // an MLP's weight gradient
	},
	Narrow: {
		{transB: true, m: 144, n: 16, k: 1568}, // a 16-channel 3×3 layer's weight gradient, 2 images of 28×28
		{transB: true, m: 288, n: 32, k: 784},  // a 32-channel one, 4 images of 14×14
		{transB: true, m: 576, n: 64, k: 392},  // a 64-channel one, 8 images of 7×7
		{transB: true, m: 128, n: 32, k: 1024}, // a narrow layer at batch 128
	},
	Skinny: {
		{m: 512, n: 49, k: 2304}, // a 3×3 convolution on 7×7, batch 1
		{m: 64, n: 3136, k: 27},  // a first 3×3 convolution on 56×56
	},
	Large: {
		{m: 512, n: 512, k: 512},
		{m: 256, n: 784, k: 1152}, // a 3×3 convolution on 28×28
	},
}

// margin is how much faster the library must be to be chosen: Hora's
// kernel gives the same bits however the device splits a product, a
// library may not; and a near tie must not flip from one measurement to
// the next on a busy machine.
const margin = 1.10

// agreement is the largest difference, relative to the largest value of
// the product, accepted between the two implementations' results.
const agreement = 1e-3

// minCalls is the least number of timed calls of each implementation on
// each probe.
const minCalls = 3

// Measure times own and blas on each class's probe products, alternating
// calls for about 2×perProbe in all (at least minCalls each), and chooses
// per class by the fastest calls. When the two
// disagree on a product, the choice has Mismatch set and uses own for
// every class.
func Measure(own, blas Impl, perProbe time.Duration) Choice {
	var ch Choice
	rng := rand.New(rand.NewPCG(7, 11))
	for cl := range NumClasses {
		var flop, ownSec, blasSec float64
		for _, p := range probes[cl] {
			a := randomSlice(rng, p.m*p.k)
			b := randomSlice(rng, p.k*p.n)
			cOwn := make([]float32, p.m*p.n)
			cBLAS := make([]float32, p.m*p.n)
			lda, ldb := p.k, p.n
			if p.transA {
				lda = p.m
			}
			if p.transB {
				ldb = p.k
			}
			call := func(f Impl, c []float32) time.Duration {
				t0 := time.Now()
				f(p.transA, p.transB, p.m, p.n, p.k, a, lda, b, ldb, c, p.n)
				return time.Since(t0)
			}
			bestOwn, bestBLAS := call(own, cOwn), call(blas, cBLAS)
			if ch.Mismatch == "" {
				if msg := compare(cOwn, cBLAS); msg != "" {
					ch.Mismatch = fmt.Sprintf("%s %dx%dx%d: %s", Class(cl), p.m, p.k, p.n, msg)
				}
			}
			var spent time.Duration
			for calls := 0; calls < minCalls || spent < 2*perProbe; calls++ {
				d := call(own, cOwn)
				bestOwn = min(bestOwn, d)
				spent += d
				d = call(blas, cBLAS)
				bestBLAS = min(bestBLAS, d)
				spent += d
			}
			flop += 2 * float64(p.m) * float64(p.n) * float64(p.k)
			ownSec += max(bestOwn.Seconds(), 1e-9)
			blasSec += max(bestBLAS.Seconds(), 1e-9)
		}
		r := &ch.Classes[cl]
		r.Own, r.BLAS = flop/ownSec/1e9, flop/blasSec/1e9
		r.UseBLAS = r.BLAS > margin*r.Own
	}
	if ch.Mismatch != "" {
		for cl := range ch.Classes {
			ch.Classes[cl].UseBLAS = false
		}
	}
	return ch
}

// compare returns "" when got matches want within agreement, else the
// first element that does not.
func compare(want, got []float32) string {
	scale := 0.0
	for _, v := range want {
		scale = max(scale, math.Abs(float64(v)))
	}
	for i := range want {
		d := math.Abs(float64(want[i]) - float64(got[i]))
		if !(d <= agreement*(scale+1)) {
			return fmt.Sprintf("element %d is %g, Hora's kernel gives %g", i, got[i], want[i])
		}
	}
	return ""
}

func randomSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = rng.Float32()*2 - 1
	}
	return s
}
