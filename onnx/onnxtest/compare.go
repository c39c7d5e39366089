package onnxtest

import (
	"fmt"
	"math"

	"github.com/hora-dl/hora/tensor"
)

// Tolerance bounds the difference between a result and its reference: an
// element is close when |got - want| <= ATol + RTol·|want|.
type Tolerance struct {
	RTol, ATol float64
}

// Diff is the comparison of a result with its reference.
type Diff struct {
	// OK tells whether the shapes match and every element is close.
	OK bool
	// Problem describes a shape mismatch ("" when the shapes match).
	Problem string
	// MaxAbs and MaxRel are the largest absolute and relative
	// differences; Index, Got and Want locate the element farthest out of
	// tolerance (or the largest difference when all are close).
	MaxAbs, MaxRel float64
	Index          int
	Got, Want      float64
}

// Compare compares got with want element by element. NaN matches NaN and
// an infinity matches the same infinity.
func Compare(got, want *tensor.Tensor, tol Tolerance) Diff {
	if !got.HasShape(want.Shape()) {
		return Diff{Problem: fmt.Sprintf("shape %v, want %v", got.Shape(), want.Shape())}
	}
	g, w := got.Values(), want.Values()
	d := Diff{OK: true, Index: -1}
	worst := -1.0
	for i := range w {
		a, b := g[i], w[i]
		if math.IsNaN(a) && math.IsNaN(b) || a == b {
			continue
		}
		abs := math.Abs(a - b)
		rel := abs / math.Max(math.Abs(b), 1e-30)
		if math.IsNaN(abs) {
			abs, rel = math.Inf(1), math.Inf(1)
		}
		d.MaxAbs = math.Max(d.MaxAbs, abs)
		d.MaxRel = math.Max(d.MaxRel, rel)
		excess := abs - (tol.ATol + tol.RTol*math.Abs(b))
		if excess > 0 {
			d.OK = false
		}
		if excess > worst || d.Index < 0 {
			worst, d.Index, d.Got, d.Want = excess, i, a, b
		}
	}
	return d
}
