package onnx

import (
	"math"
	"slices"
	"strings"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Resize (opsets 10, 11, 13) and Upsample (opsets 7, 9).
//
// Every supported mode is separable: along each axis that changes, an
// output element is a weighted sum of at most four input elements of that
// axis (one for nearest, two for linear, four for cubic). The weights and
// indices depend only on the shapes and attributes, so they are computed on
// the host, and each axis is resized with one IndexSelect per tap, scaled
// by a constant weight tensor broadcast along the other axes. Axes are
// processed from the last to the first, as ONNX's reference does, so
// tf_crop_and_resize's extrapolated values mix exactly as there. Gradients
// flow to the data input.

func init() {
	register("Upsample", 7, true, opUpsample7)
	register("Upsample", 9, true, opUpsample9)
	register("Resize", 10, true, opResize10)
	register("Resize", 11, true, opResize11)
	register("Resize", 13, true, opResize11)
}

// resizeSpec is what a Resize or Upsample node asks for, once its inputs
// and attributes have been read.
type resizeSpec struct {
	mode    string  // "nearest", "linear" or "cubic"
	coord   string  // coordinate_transformation_mode
	nearest string  // nearest_mode, or "simple" (opsets before 11)
	cubicA  float64 // cubic_coeff_a
	exclude bool    // exclude_outside
	extrap  float64 // extrapolation_value (tf_crop_and_resize)
	roi     []float64
	// out is the output shape; scales the scale factor of each axis;
	// resized the "length_resized" of each axis in the coordinate
	// formulas: input length × scale when scales are given (it need not
	// be an integer, as in ONNX's reference), the output length when
	// sizes are.
	out     []int
	scales  []float64
	resized []float64
}

// resizeTap is one term of the separable interpolation along an axis:
// output position o takes weight[o] × input[index[o]].
type resizeTap struct {
	index  []int64
	weight []float64
}

// opUpsample7 is Upsample with the scales attribute.
func opUpsample7(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("X")
	if err != nil {
		return nil, err
	}
	if !c.HasAttr("scales") {
		return nil, c.Errorf("attribute scales is required")
	}
	return upsample(c, x, c.AttrFloats("scales", nil))
}

// opUpsample9 is Upsample with the scales input.
func opUpsample9(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("X", "scales")
	if err != nil {
		return nil, err
	}
	scales, err := resizeFloats(c, in[1], "scales")
	if err != nil {
		return nil, err
	}
	return upsample(c, in[0], scales)
}

func upsample(c *nodeCtx, x *autograd.Var, scales []float64) ([]*autograd.Var, error) {
	mode := strings.ToLower(c.AttrString("mode", "nearest"))
	if mode == "bilinear" {
		mode = "linear"
	}
	if mode != "nearest" && mode != "linear" {
		return nil, c.Errorf("attribute mode must be nearest or linear, found %q", mode)
	}
	for i, s := range scales {
		if s < 1 {
			return nil, c.Errorf("scales[%d] = %g: Upsample scales must be at least 1", i, s)
		}
	}
	s := resizeSpec{mode: mode, coord: "asymmetric", nearest: "simple"}
	if err := s.fromScales(c, x.Shape(), scales); err != nil {
		return nil, err
	}
	y, err := resize(c, x, &s)
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{y}, nil
}

// opResize10 is Resize with inputs X and scales, asymmetric coordinates.
func opResize10(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("X", "scales")
	if err != nil {
		return nil, err
	}
	mode := c.AttrString("mode", "nearest")
	if mode != "nearest" && mode != "linear" {
		return nil, c.Errorf("attribute mode must be nearest or linear, found %q", mode)
	}
	scales, err := resizeFloats(c, in[1], "scales")
	if err != nil {
		return nil, err
	}
	s := resizeSpec{mode: mode, coord: "asymmetric", nearest: "simple"}
	if err := s.fromScales(c, in[0].Shape(), scales); err != nil {
		return nil, err
	}
	y, err := resize(c, in[0], &s)
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{y}, nil
}

// opResize11 is Resize from opset 11 on: inputs X, roi, scales, sizes
// (roi and scales optional from opset 13). An empty tensor counts as an
// absent input.
func opResize11(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("X", "roi?", "scales?", "sizes?")
	if err != nil {
		return nil, err
	}
	x := in[0]
	get := func(i int) *autograd.Var {
		if in[i] != nil && in[i].Value.Len() > 0 {
			return in[i]
		}
		return nil
	}
	s := resizeSpec{
		mode:    c.AttrString("mode", "nearest"),
		coord:   c.AttrString("coordinate_transformation_mode", "half_pixel"),
		nearest: c.AttrString("nearest_mode", "round_prefer_floor"),
		cubicA:  c.AttrFloat("cubic_coeff_a", -0.75),
		exclude: c.AttrInt("exclude_outside", 0) != 0,
		extrap:  c.AttrFloat("extrapolation_value", 0),
	}
	switch s.mode {
	case "nearest", "linear", "cubic":
	default:
		return nil, c.Errorf("attribute mode must be nearest, linear or cubic, found %q", s.mode)
	}
	switch s.coord {
	case "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize":
	default:
		return nil, c.Errorf("attribute coordinate_transformation_mode %q is not one of half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize", s.coord)
	}
	switch s.nearest {
	case "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
	default:
		return nil, c.Errorf("attribute nearest_mode must be round_prefer_floor, round_prefer_ceil, floor or ceil, found %q", s.nearest)
	}
	rank := x.Value.Rank()
	if s.coord == "tf_crop_and_resize" {
		roi := get(1)
		if roi == nil {
			return nil, c.Errorf("input 1 (roi) is required by coordinate_transformation_mode tf_crop_and_resize")
		}
		r, err := resizeFloats(c, roi, "roi")
		if err != nil {
			return nil, err
		}
		if len(r) != 2*rank {
			return nil, c.Errorf("input roi has %d values, expected 2 × rank %d = %d", len(r), rank, 2*rank)
		}
		s.roi = r
	}
	scalesV, sizesV := get(2), get(3)
	switch {
	case scalesV != nil && sizesV != nil:
		return nil, c.Errorf("inputs scales and sizes are both given; exactly one must be non-empty")
	case scalesV != nil:
		scales, err := resizeFloats(c, scalesV, "scales")
		if err != nil {
			return nil, err
		}
		if err := s.fromScales(c, x.Shape(), scales); err != nil {
			return nil, err
		}
	case sizesV != nil:
		if sizesV.Value.DType() != device.Int64 {
			return nil, c.Errorf("input sizes must be an integer tensor, found %v", sizesV.Value.DType())
		}
		if sizesV.Value.Rank() != 1 {
			return nil, c.Errorf("input sizes must be 1-D, found shape %v", sizesV.Shape())
		}
		if err := s.fromSizes(c, x.Shape(), c.Ints(sizesV)); err != nil {
			return nil, err
		}
	default:
		return nil, c.Errorf("one of the inputs scales and sizes must be given (non-empty)")
	}
	y, err := resize(c, x, &s)
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{y}, nil
}

// resizeFloats reads a small 1-D float input (scales, roi) to the host.
func resizeFloats(c *nodeCtx, v *autograd.Var, name string) ([]float64, error) {
	if dt := v.Value.DType(); dt != device.Float32 && dt != device.Float64 {
		return nil, c.Errorf("input %s must be a float tensor, found %v", name, dt)
	}
	if v.Value.Rank() != 1 {
		return nil, c.Errorf("input %s must be 1-D, found shape %v", name, v.Shape())
	}
	return c.Floats(v), nil
}

// fromScales sets the output shape from per-axis scale factors:
// floor(in × scale), or floor(in × (roi_end - roi_start) × scale) for
// tf_crop_and_resize.
func (s *resizeSpec) fromScales(c *nodeCtx, in []int, scales []float64) error {
	if len(scales) != len(in) {
		return c.Errorf("scales has %d values, expected one per axis of X (rank %d)", len(scales), len(in))
	}
	s.out = make([]int, len(in))
	s.scales = scales
	s.resized = make([]float64, len(in))
	for i, sc := range scales {
		if !(sc > 0) || math.IsInf(sc, 0) {
			return c.Errorf("scales[%d] = %g must be positive and finite", i, sc)
		}
		// Scales arrive as float32: multiply in float32 as other runtimes
		// do, so 0.6 × 5 gives 3 and not 3.0000001.
		s.resized[i] = float64(float32(in[i]) * float32(sc))
		n := s.resized[i]
		if s.roi != nil {
			n = float64(float32(in[i]) * float32(s.roi[i+len(in)]-s.roi[i]) * float32(sc))
		}
		s.out[i] = int(math.Floor(n))
		if s.out[i] < 1 && in[i] > 0 {
			return c.Errorf("scales[%d] = %g makes axis %d of X (length %d) empty", i, sc, i, in[i])
		}
		if s.out[i] > 1<<30 {
			return c.Errorf("scales[%d] = %g makes axis %d of X (length %d) too long", i, sc, i, in[i])
		}
	}
	return nil
}

// fromSizes sets the output shape from sizes; the scales are out/in.
func (s *resizeSpec) fromSizes(c *nodeCtx, in []int, sizes []int64) error {
	if len(sizes) != len(in) {
		return c.Errorf("sizes has %d values, expected one per axis of X (rank %d)", len(sizes), len(in))
	}
	s.out = make([]int, len(in))
	s.scales = make([]float64, len(in))
	s.resized = make([]float64, len(in))
	for i, n := range sizes {
		if n < 1 || n > 1<<30 {
			return c.Errorf("sizes[%d] = %d must be between 1 and 2^30", i, n)
		}
		if in[i] == 0 {
			return c.Errorf("axis %d of X is empty and cannot be resized to %d", i, n)
		}
		s.out[i] = int(n)
		s.scales[i] = float64(n) / float64(in[i])
		s.resized[i] = float64(n)
	}
	return nil
}

// resize resizes x to s.out axis by axis, from the last axis to the first.
func resize(c *nodeCtx, x *autograd.Var, s *resizeSpec) (*autograd.Var, error) {
	dt := x.Value.DType()
	if s.mode != "nearest" && dt != device.Float32 && dt != device.Float64 {
		return nil, c.Unsupported("Resize mode %s on %v data (only float; nearest takes any type)", s.mode, dt)
	}
	if err := c.checkElements(s.out); err != nil {
		return nil, err
	}
	in := x.Shape()
	y := x
	for a := len(in) - 1; a >= 0; a-- {
		taps, outside := s.taps(a, in[a])
		if resizeIdentity(taps, outside, in[a], s.out[a]) {
			continue
		}
		y = resizeAxis(c, y, a, taps, outside, s.extrap)
	}
	return y, nil
}

// taps computes, for axis a of input length n, the interpolation terms of
// every output position, and the positions that lie outside the input
// (tf_crop_and_resize: they take the extrapolation value).
func (s *resizeSpec) taps(a, n int) ([]resizeTap, []bool) {
	out := s.out[a]
	k := 1
	switch s.mode {
	case "linear":
		k = 2
	case "cubic":
		k = 4
	}
	taps := make([]resizeTap, k)
	for i := range taps {
		taps[i] = resizeTap{index: make([]int64, out), weight: make([]float64, out)}
	}
	var outside []bool
	coeffs := make([]float64, k)
	for o := range out {
		xo, ok := s.origin(a, o, n)
		if !ok {
			if outside == nil {
				outside = make([]bool, out)
			}
			outside[o] = true
			continue // weights stay 0
		}
		// i0 is the largest integer below xo, r in (0, 1]: the reference
		// prefers the neighbours on the left, so an integral xo takes
		// r = 1 with i0 = xo - 1.
		i0 := math.Ceil(xo) - 1
		r := xo - i0
		var first float64
		switch s.mode {
		case "nearest":
			first = i0 + 1
			if r < 1 && s.nearestLeft(r, a) {
				first = i0
			}
			coeffs[0] = 1
		case "linear":
			first = i0
			coeffs[0], coeffs[1] = 1-r, r
		case "cubic":
			first = i0 - 1
			cubicCoeffs(coeffs, r, s.cubicA)
		}
		if s.exclude {
			excludeOutside(coeffs, int(first), n)
		}
		for j := range k {
			p := int64(clampIndex(int64(first)+int64(j), 0, int64(n-1)))
			taps[j].index[o] = p
			taps[j].weight[o] = coeffs[j]
		}
	}
	return taps, outside
}

// excludeOutside zeroes the weights of the neighbours first, first+1, ...
// that lie outside [0, n) and renormalises the others to sum 1 (when all
// lie outside, the weights stay as they are: the border is repeated).
func excludeOutside(coeffs []float64, first, n int) {
	sum := 0.0
	for j, w := range coeffs {
		if p := first + j; p >= 0 && p < n {
			sum += w
		}
	}
	if sum == 0 {
		return
	}
	for j := range coeffs {
		if p := first + j; p < 0 || p >= n {
			coeffs[j] = 0
		} else {
			coeffs[j] /= sum
		}
	}
}

// nearestLeft reports whether nearest mode picks the left neighbour for a
// fraction r in (0, 1).
func (s *resizeSpec) nearestLeft(r float64, a int) bool {
	switch s.nearest {
	case "round_prefer_ceil":
		return r < 0.5
	case "floor":
		return true
	case "ceil":
		return false
	case "simple":
		// Opsets before 11 (onnxruntime's rule): floor when
		// upsampling, ceil when downsampling.
		return s.scales[a] >= 1
	}
	return r <= 0.5 // round_prefer_floor
}

// origin maps output position o of axis a (input length n) to its
// coordinate in the input; ok is false when tf_crop_and_resize puts it
// outside the input.
func (s *resizeSpec) origin(a, o, n int) (x float64, ok bool) {
	fo, fn := float64(o), float64(n)
	scale, resized := s.scales[a], s.resized[a]
	switch s.coord {
	case "half_pixel":
		return (fo+0.5)/scale - 0.5, true
	case "pytorch_half_pixel":
		if resized > 1 {
			return (fo+0.5)/scale - 0.5, true
		}
		return 0, true
	case "align_corners":
		if resized == 1 {
			return 0, true
		}
		return fo * (fn - 1) / (resized - 1), true
	case "tf_half_pixel_for_nn":
		return (fo + 0.5) / scale, true
	case "tf_crop_and_resize":
		start, end := s.roi[a], s.roi[a+len(s.scales)]
		resized = float64(s.out[a])
		if resized > 1 {
			x = start*(fn-1) + fo*(end-start)*(fn-1)/(resized-1)
		} else {
			x = 0.5 * (start + end) * (fn - 1)
		}
		return x, x >= 0 && x <= fn-1
	}
	return fo / scale, true // asymmetric
}

// cubicCoeffs sets c (4 values) to the cubic convolution weights of the
// neighbours i0-1, i0, i0+1, i0+2 for a fraction r in (0, 1] and
// coefficient a (Keys' kernel).
func cubicCoeffs(c []float64, r, a float64) {
	r1 := r + 1
	c[0] = ((a*r1-5*a)*r1+8*a)*r1 - 4*a
	c[1] = ((a+2)*r-(a+3))*r*r + 1
	q := 1 - r
	c[2] = ((a+2)*q-(a+3))*q*q + 1
	q1 := q + 1
	c[3] = ((a*q1-5*a)*q1+8*a)*q1 - 4*a
}

// resizeIdentity reports whether the taps of an axis reproduce it
// unchanged, so it can be skipped.
func resizeIdentity(taps []resizeTap, outside []bool, in, out int) bool {
	if in != out || outside != nil {
		return false
	}
	for o := range out {
		for _, t := range taps {
			w := t.weight[o]
			switch {
			case w == 0:
			case w == 1 && t.index[o] == int64(o):
			default:
				return false
			}
		}
	}
	return true
}

// resizeAxis computes y[..., o, ...] = Σ_tap weight[o] · x[..., index[o],
// ...] along axis a, plus extrap at the outside positions.
func resizeAxis(c *nodeCtx, x *autograd.Var, a int, taps []resizeTap, outside []bool, extrap float64) *autograd.Var {
	dt := x.Value.DType()
	rank := x.Value.Rank()
	out := len(taps[0].index)
	wshape := make([]int, rank)
	for i := range wshape {
		wshape[i] = 1
	}
	wshape[a] = out
	var y *autograd.Var
	// Taps with the same index vector merge (a nearest tap, or linear
	// taps that coincide at the borders).
	type merged struct {
		index  []int64
		weight []float64
	}
	var ms []merged
next:
	for _, t := range taps {
		allZero := true
		for _, w := range t.weight {
			if w != 0 {
				allZero = false
				break
			}
		}
		if allZero {
			continue
		}
		for i := range ms {
			if slices.Equal(ms[i].index, t.index) {
				for o, w := range t.weight {
					ms[i].weight[o] += w
				}
				continue next
			}
		}
		ms = append(ms, merged{index: t.index, weight: append([]float64(nil), t.weight...)})
	}
	for _, m := range ms {
		part := autograd.IndexSelect(x, a, c.ConstInts(m.index).Value)
		ones := true
		for _, w := range m.weight {
			if w != 1 {
				ones = false
				break
			}
		}
		if !ones {
			part = autograd.Mul(part, c.Const(resizeWeights(dt, m.weight, wshape)))
		}
		if y == nil {
			y = part
		} else {
			y = autograd.Add(y, part)
		}
	}
	if outside != nil && extrap != 0 {
		fill := make([]float64, out)
		for o, b := range outside {
			if b {
				fill[o] = extrap
			}
		}
		e := c.Const(resizeWeights(dt, fill, wshape))
		if y == nil {
			shape := x.Shape()
			shape[a] = out
			y = autograd.Expand(e, shape...)
		} else {
			y = autograd.Add(y, e)
		}
	}
	if y == nil { // every position outside, extrapolation value 0
		y = autograd.Mul(autograd.IndexSelect(x, a, c.ConstInts(make([]int64, out)).Value),
			c.Const(tensor.Full(tensor.CPU(), dt, 0, wshape...)))
	}
	return y
}

// resizeWeights makes a host tensor of type dt holding w with shape.
func resizeWeights(dt device.DType, w []float64, shape []int) *tensor.Tensor {
	if dt == device.Float32 {
		f := make([]float32, len(w))
		for i, v := range w {
			f[i] = float32(v)
		}
		return tensor.FromFloat32(f, shape...)
	}
	return tensor.FromFloat64(append([]float64(nil), w...), shape...)
}
