package onnx

import (
	"fmt"
	"slices"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// The control-flow operators run their graph attributes with
// nodeCtx.RunGraph. Loop and Scan unroll their iterations onto the
// autograd tape, so gradients flow through every iteration.

func init() {
	for _, v := range []int{1, 11, 13, 16} {
		register("If", v, true, opIf)
	}
	for _, v := range []int{1, 11, 13, 16} {
		register("Loop", v, true, opLoop)
	}
	register("Scan", 8, true, opScan8)
	for _, v := range []int{9, 11, 16} {
		register("Scan", v, true, opScan)
	}
}

// scalarTrue reads a one-element condition.
func scalarTrue(c *nodeCtx, v *autograd.Var, what string) (bool, error) {
	if v.Value.Len() != 1 {
		return false, c.Errorf("input %s must hold one value, found shape %v", what, v.Shape())
	}
	return c.Floats(v)[0] != 0, nil
}

// opIf runs then_branch or else_branch, as cond says.
func opIf(c *nodeCtx) ([]*autograd.Var, error) {
	condIn, err := c.input("cond")
	if err != nil {
		return nil, err
	}
	cond, err := scalarTrue(c, condIn, "cond")
	if err != nil {
		return nil, err
	}
	branch := "else_branch"
	if cond {
		branch = "then_branch"
	}
	outs, err := c.RunGraph(branch, nil)
	if err != nil {
		return nil, err
	}
	if len(outs) != c.NumOutputs() {
		return nil, c.Errorf("%s returns %d values, the node declares %d outputs", branch, len(outs), c.NumOutputs())
	}
	return outs, nil
}

// opLoop runs body while the trip count M and the condition allow. The
// body takes (iteration, condition, carried values...) and returns
// (condition, carried values..., scan values...); the node returns the
// final carried values, then each scan value stacked over the iterations.
// A loop that only M can end (the body returns its condition unchanged)
// is refused up front when M iterations would pass maxUnrolledNodes; any
// other loop stops with an error when it passes it.
func opLoop(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("M?", "cond?", "v_initial?...")
	if err != nil {
		return nil, err
	}
	m, condIn, carried := in[0], in[1], in[2:]
	trips := int64(-1) // no limit but maxUnrolledNodes
	if m != nil {
		if m.Value.Len() != 1 {
			return nil, c.Errorf("input M must hold one value, found shape %v", m.Shape())
		}
		trips = c.Ints(m)[0]
	}
	cond := true
	if condIn != nil {
		if cond, err = scalarTrue(c, condIn, "cond"); err != nil {
			return nil, err
		}
	}
	nScan := c.NumOutputs() - len(carried)
	if nScan < 0 {
		return nil, c.Errorf("the node declares %d outputs, fewer than its %d loop-carried values", c.NumOutputs(), len(carried))
	}
	if body := c.graphs["body"]; body != nil && cond && keepsCondition(body) && trips > int64(maxUnrolledNodes/body.cost()) {
		return nil, c.Errorf("trip count M = %d with %d nodes in the body, which keeps the condition true, unrolls more than the limit of %d nodes",
			trips, body.cost(), maxUnrolledNodes)
	}
	scans := make([][]*autograd.Var, nScan)
	var i int64
	for ; (trips < 0 || i < trips) && cond; i++ {
		args := append([]*autograd.Var{
			c.ConstScalar(device.Int64, float64(i)),
			c.ConstScalar(device.Int64, 1),
		}, carried...)
		outs, err := c.RunGraph("body", args)
		if err != nil {
			return nil, fmt.Errorf("iteration %d: %w", i, err)
		}
		if len(outs) != 1+len(carried)+nScan {
			return nil, c.Errorf("body returns %d values, want 1 + %d carried + %d scanned", len(outs), len(carried), nScan)
		}
		if cond, err = scalarTrue(c, outs[0], "cond (from body)"); err != nil {
			return nil, err
		}
		copy(carried, outs[1:1+len(carried)])
		for j, v := range outs[1+len(carried):] {
			scans[j] = append(scans[j], autograd.Unsqueeze(v, 0))
			if err := c.checkSize(fmt.Sprintf("scan output %d", j), append([]int{len(scans[j])}, v.Shape()...)); err != nil {
				return nil, err
			}
		}
	}
	results := carried
	for j, parts := range scans {
		if len(parts) == 0 {
			results = append(results, autograd.Constant(tensor.New(c.Device(), device.Float32, 0)))
			continue
		}
		if err := sameShapes(c, parts, fmt.Sprintf("scan output %d", j)); err != nil {
			return nil, err
		}
		results = append(results, autograd.Concat(0, parts...))
	}
	return results, nil
}

// keepsCondition reports whether the Loop body sg returns its condition
// input unchanged, directly or through Identity nodes: then only the trip
// count M ends the loop.
func keepsCondition(sg *subgraph) bool {
	if len(sg.inputs) < 2 || len(sg.outputs) < 1 {
		return false
	}
	name := sg.outputs[0]
	for i := len(sg.nodes) - 1; i >= 0; i-- {
		n := sg.nodes[i]
		if !slices.Contains(n.outputs, name) {
			continue
		}
		if n.proto.GetOpType() != "Identity" || len(n.inputs) != 1 {
			return false
		}
		name = n.inputs[0]
	}
	return name == sg.inputs[1]
}

// sameShapes checks that the per-iteration values of a scan output agree.
func sameShapes(c *nodeCtx, parts []*autograd.Var, what string) error {
	for i, p := range parts[1:] {
		if !p.Value.SameShape(parts[0].Value) {
			return c.Errorf("%s has shape %v in iteration %d and %v in iteration 0", what, p.Shape(), i+1, parts[0].Shape())
		}
	}
	return nil
}

// opScan8 is Scan of opset 8, with its batch axis and sequence_lens.
func opScan8(c *nodeCtx) ([]*autograd.Var, error) {
	return nil, c.Unsupported("Scan before opset 9 (batched, with sequence_lens)")
}

// opScan runs body once per slice of the scan inputs along their scan
// axes. The body takes (states..., slices...) and returns (states...,
// scan values...); the node returns the final states and the scan values
// stacked along their output axes, in the directions the attributes give.
func opScan(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("initial_state_and_scan_inputs...")
	if err != nil {
		return nil, err
	}
	m := int(c.AttrInt("num_scan_inputs", -1))
	if m < 1 || m > len(in) {
		return nil, c.Errorf("attribute num_scan_inputs %d is not in [1, %d] (the number of inputs)", m, len(in))
	}
	n := len(in) - m
	inAxes := c.AttrInts("scan_input_axes", make([]int64, m))
	inDirs := c.AttrInts("scan_input_directions", make([]int64, m))
	if len(inAxes) != m || len(inDirs) != m {
		return nil, c.Errorf("scan_input_axes %v and scan_input_directions %v must have %d entries", inAxes, inDirs, m)
	}
	k := c.NumOutputs() - n
	if k < 0 {
		return nil, c.Errorf("the node declares %d outputs, fewer than its %d states", c.NumOutputs(), n)
	}
	outAxes := c.AttrInts("scan_output_axes", make([]int64, k))
	outDirs := c.AttrInts("scan_output_directions", make([]int64, k))
	if len(outAxes) != k || len(outDirs) != k {
		return nil, c.Errorf("scan_output_axes %v and scan_output_directions %v must have %d entries", outAxes, outDirs, k)
	}
	axes := make([]int, m)
	steps := -1
	for j := range m {
		x := in[n+j]
		a, err := c.normAxis("scan_input_axes entry", inAxes[j], x.Value.Rank())
		if err != nil {
			return nil, err
		}
		axes[j] = a
		if steps < 0 {
			steps = x.Value.Dim(a)
		} else if x.Value.Dim(a) != steps {
			return nil, c.Errorf("scan input %d has %d steps along axis %d, scan input 0 has %d", j, x.Value.Dim(a), a, steps)
		}
	}
	if body := c.graphs["body"]; body != nil && steps > maxUnrolledNodes/body.cost() {
		return nil, c.Errorf("%d steps with %d nodes in the body unroll more than the limit of %d nodes", steps, body.cost(), maxUnrolledNodes)
	}
	states := slices.Clone(in[:n])
	scans := make([][]*autograd.Var, k)
	for t := range steps {
		args := slices.Clone(states)
		for j := range m {
			x, i := in[n+j], t
			if inDirs[j] == 1 {
				i = steps - 1 - t
			}
			args = append(args, autograd.Squeeze(autograd.Slice(x, axes[j], i, i+1), axes[j]))
		}
		outs, err := c.RunGraph("body", args)
		if err != nil {
			return nil, fmt.Errorf("iteration %d: %w", t, err)
		}
		if len(outs) != n+k {
			return nil, c.Errorf("body returns %d values, want %d states + %d scanned", len(outs), n, k)
		}
		copy(states, outs[:n])
		for j, v := range outs[n:] {
			scans[j] = append(scans[j], v)
			if err := c.checkSize(fmt.Sprintf("scan output %d", j), append([]int{steps}, v.Shape()...)); err != nil {
				return nil, err
			}
		}
	}
	results := states
	for j, parts := range scans {
		if len(parts) == 0 {
			return nil, c.Unsupported("Scan over zero steps (the scan outputs' shapes are unknown)")
		}
		if err := sameShapes(c, parts, fmt.Sprintf("scan output %d", j)); err != nil {
			return nil, err
		}
		if outDirs[j] == 1 {
			slices.Reverse(parts)
		}
		a, err := c.normAxis("scan_output_axes entry", outAxes[j], parts[0].Value.Rank()+1)
		if err != nil {
			return nil, err
		}
		results = append(results, autograd.Stack(a, parts...))
	}
	return results, nil
}
