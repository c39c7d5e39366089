package autograd

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// GradCheckOptions tune GradCheck. Zero values pick the defaults in
// brackets.
type GradCheckOptions struct {
	Eps  float64 // finite-difference step [1e-6]
	ATol float64 // absolute tolerance [1e-5]
	RTol float64 // relative tolerance [1e-4]
	Seed uint64  // seed of the random output projection [1]
}

// GradCheck compares the gradients Backward computes for f at inputs with
// central finite differences, in float64. f may return any shape; the
// check projects its output on a fixed random tensor r and differentiates
// Σ f(x)·r, which exercises the whole vector-Jacobian product. It returns
// an error naming the first input and element that disagree.
func GradCheck(f func(xs []*Var) *Var, inputs []*tensor.Tensor, o GradCheckOptions) error {
	if o.Eps == 0 {
		o.Eps = 1e-6
	}
	if o.ATol == 0 {
		o.ATol = 1e-5
	}
	if o.RTol == 0 {
		o.RTol = 1e-4
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	vals := make([][]float64, len(inputs))
	shapes := make([][]int, len(inputs))
	for i, in := range inputs {
		vals[i] = in.Values()
		shapes[i] = in.Shape()
	}
	build := func() []*Var {
		xs := make([]*Var, len(inputs))
		for i := range inputs {
			xs[i] = Leaf(tensor.FromFloat64(append([]float64(nil), vals[i]...), shapes[i]...))
		}
		return xs
	}

	xs := build()
	out := f(xs)
	if out.Value.DType() != device.Float64 {
		return fmt.Errorf("autograd: GradCheck: f returned %v; run it in float64", out.Value.DType())
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0))
	proj := tensor.RandNormal(rng, 0, 1, out.Value.Shape()...).Cast(device.Float64)
	projected := func(v *Var) float64 { return v.Value.Mul(proj).SumAll().Item() }
	if err := BackwardWith(out, proj); err != nil {
		return fmt.Errorf("autograd: GradCheck: %w", err)
	}

	for i := range inputs {
		var analytic []float64
		if xs[i].Grad != nil {
			analytic = xs[i].Grad.Values()
		} else {
			analytic = make([]float64, len(vals[i]))
		}
		for j := range vals[i] {
			orig := vals[i][j]
			vals[i][j] = orig + o.Eps
			plus := projected(f(build()))
			vals[i][j] = orig - o.Eps
			minus := projected(f(build()))
			vals[i][j] = orig
			numeric := (plus - minus) / (2 * o.Eps)
			if d := math.Abs(analytic[j] - numeric); d > o.ATol+o.RTol*math.Abs(numeric) || math.IsNaN(analytic[j]) {
				return fmt.Errorf("autograd: GradCheck: input %d %v element %d: analytic gradient %.8g, numeric %.8g (difference %.3g)",
					i, shapes[i], j, analytic[j], numeric, d)
			}
		}
	}
	return nil
}
