package onnx

import (
	"strings"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// The recurrent operators RNN, GRU and LSTM (opsets 7 and 14; 14 adds the
// layout attribute).
//
// The time loop is unrolled into autograd operations, so gradients flow to
// X, W, R, B, initial_h, initial_c and P. The input projection X·Wᵀ + b of
// all time steps is one matrix product, cut into steps by autograd.Split
// (whose backward costs O(log T) full-size gradients). sequence_lens shorter than the sequence are handled with
// masks: a batch entry past its length keeps its state and outputs zeros,
// which is also right for the reverse direction (it starts at the entry's
// last valid step).

func init() {
	for _, v := range []int{7, 14} {
		register("RNN", v, true, opRNN)
		register("GRU", v, true, opGRU)
		register("LSTM", v, true, opLSTM)
	}
}

// rnnKind tells the cell: its number of gates, activations and outputs.
type rnnKind struct {
	name   string
	gates  int      // gate blocks in W and R
	acts   []string // default activations of one direction
	states int      // 1 (H) or 2 (H and C)
}

var (
	rnnPlain = rnnKind{"RNN", 1, []string{"tanh"}, 1}
	rnnGRU   = rnnKind{"GRU", 3, []string{"sigmoid", "tanh"}, 1}
	rnnLSTM  = rnnKind{"LSTM", 4, []string{"sigmoid", "tanh", "tanh"}, 2}
)

func opRNN(c *nodeCtx) ([]*autograd.Var, error) {
	return runRecurrent(c, rnnPlain)
}

func opGRU(c *nodeCtx) ([]*autograd.Var, error) {
	return runRecurrent(c, rnnGRU)
}

func opLSTM(c *nodeCtx) ([]*autograd.Var, error) {
	return runRecurrent(c, rnnLSTM)
}

// rnnAct is an activation function of a recurrent cell.
type rnnAct func(x *autograd.Var) *autograd.Var

// rnnSetup is a recurrent node with its inputs checked: X in [T, B, I]
// layout, the per-direction weights and what the step function needs.
type rnnSetup struct {
	kind    rnnKind
	c       *nodeCtx
	dt      device.DType
	T, B, I int
	H       int
	dirs    int
	reverse []bool // per direction
	x       *autograd.Var
	w, r, b *autograd.Var // b may be nil
	p       *autograd.Var // LSTM peepholes, may be nil
	h0, c0  *autograd.Var // [dirs, B, H], may be nil
	acts    [][]rnnAct    // per direction
	clip    float64       // 0: none
	lbr     bool          // GRU linear_before_reset
	coupled bool          // LSTM input_forget
	lens    []int64       // nil when every sequence has length T
	layout  int
}

func runRecurrent(c *nodeCtx, k rnnKind) ([]*autograd.Var, error) {
	s, err := newRNNSetup(c, k)
	if err != nil {
		return nil, err
	}
	ys := make([][]*autograd.Var, s.dirs)
	hs := make([]*autograd.Var, s.dirs)
	cs := make([]*autograd.Var, s.dirs)
	for d := range s.dirs {
		ys[d], hs[d], cs[d] = s.direction(d)
	}
	outs := make([]*autograd.Var, c.NumOutputs())
	if c.OutputUsed(0) {
		// One join of the T·dirs steps, [B, H] each, in (t, d) order.
		steps := make([]*autograd.Var, 0, s.T*s.dirs)
		for t := range s.T {
			for d := range s.dirs {
				steps = append(steps, ys[d][t])
			}
		}
		y := autograd.Reshape(autograd.Stack(0, steps...), s.T, s.dirs, s.B, s.H)
		if s.layout == 1 {
			y = autograd.Permute(y, 2, 0, 1, 3)
		}
		outs[0] = y
	}
	last := func(vs []*autograd.Var) *autograd.Var {
		v := autograd.Stack(0, vs...) // [dirs, B, H]
		if s.layout == 1 {
			v = autograd.Transpose(v, 0, 1)
		}
		return v
	}
	if c.OutputUsed(1) {
		outs[1] = last(hs)
	}
	if c.OutputUsed(2) {
		if k.states < 2 {
			return nil, c.Errorf("%s has 2 outputs (Y, Y_h), the node declares %d", k.name, c.NumOutputs())
		}
		outs[2] = last(cs)
	}
	if c.NumOutputs() > k.states+1 {
		return nil, c.Errorf("%s has at most %d outputs, the node declares %d", k.name, k.states+1, c.NumOutputs())
	}
	return outs, nil
}

// newRNNSetup reads a recurrent node of kind k: its inputs and their
// element types, then its attributes, the inputs' shapes, sequence_lens
// and the activations.
func newRNNSetup(c *nodeCtx, k rnnKind) (*rnnSetup, error) {
	names := []string{"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"}
	decl := []string{"X", "W", "R", "B?", "sequence_lens?", "initial_h?", "initial_c?", "P?"}
	if k.states == 1 {
		decl = decl[:6] // no cell state, no peepholes
	}
	in, err := c.inputs(decl...)
	if err != nil {
		return nil, err
	}
	s := &rnnSetup{kind: k, c: c, x: in[0], w: in[1], r: in[2], b: in[3], h0: in[5]}
	if k.states == 2 {
		s.c0, s.p = in[6], in[7]
	}
	s.dt = s.x.Value.DType()
	if s.dt != device.Float32 && s.dt != device.Float64 {
		return nil, c.Errorf("input X must be float, found %v", s.dt)
	}
	for i, v := range []*autograd.Var{s.x, s.w, s.r, s.b, nil, s.h0, s.c0, s.p} {
		if v != nil && v.Value.DType() != s.dt {
			return nil, c.Errorf("input %s has type %v, X has %v", names[i], v.Value.DType(), s.dt)
		}
	}
	if err := s.attributes(); err != nil {
		return nil, err
	}
	if err := s.shapes(); err != nil {
		return nil, err
	}
	if err := s.sequenceLens(in[4]); err != nil {
		return nil, err
	}
	if err := s.activations(); err != nil {
		return nil, err
	}
	return s, nil
}

// attributes reads the attributes common to RNN, GRU and LSTM (layout,
// direction, clip) and the cell's own (linear_before_reset, input_forget).
func (s *rnnSetup) attributes() error {
	c, k := s.c, s.kind
	if c.Opset() >= 14 {
		s.layout = int(c.AttrInt("layout", 0))
	}
	if s.layout != 0 && s.layout != 1 {
		return c.Errorf("attribute layout must be 0 or 1, found %d", s.layout)
	}
	dir := c.AttrString("direction", "forward")
	switch dir {
	case "forward":
		s.reverse = []bool{false}
	case "reverse":
		s.reverse = []bool{true}
	case "bidirectional":
		s.reverse = []bool{false, true}
	default:
		return c.Errorf("attribute direction must be forward, reverse or bidirectional, found %q", dir)
	}
	s.dirs = len(s.reverse)
	if c.HasAttr("clip") {
		s.clip = c.AttrFloat("clip", 0)
		if !(s.clip > 0) {
			return c.Errorf("attribute clip must be positive, found %g", s.clip)
		}
	}
	if k.name == "GRU" {
		s.lbr = c.AttrInt("linear_before_reset", 0) != 0
	}
	if k.name == "LSTM" {
		s.coupled = c.AttrInt("input_forget", 0) != 0
	}
	if c.HasAttr("output_sequence") && c.AttrInt("output_sequence", 0) != 0 {
		return c.Unsupported("attribute output_sequence (opset 1)")
	}
	return nil
}

// shapes checks the shapes of the inputs against X's and R's and brings
// the tensors of layout 1 ([batch, seq, …]) to layout 0 ([seq, batch, …]).
func (s *rnnSetup) shapes() error {
	c, k := s.c, s.kind
	xs := s.x.Shape()
	if len(xs) != 3 {
		return c.Errorf("input X must be 3-D, found shape %v", xs)
	}
	s.T, s.B, s.I = xs[0], xs[1], xs[2]
	if s.layout == 1 {
		s.T, s.B = xs[1], xs[0]
	}
	rs := s.r.Shape()
	if len(rs) != 3 {
		return c.Errorf("input R must be 3-D [num_directions, %d*hidden_size, hidden_size], found shape %v", k.gates, rs)
	}
	s.H = rs[2]
	if c.HasAttr("hidden_size") {
		if hs := c.AttrInt("hidden_size", 0); hs != int64(s.H) {
			return c.Errorf("attribute hidden_size is %d, input R has shape %v (hidden size %d)", hs, rs, s.H)
		}
	}
	if s.T == 0 || s.B == 0 || s.H == 0 {
		return c.Unsupported("empty sequence, batch or hidden size (X %v, R %v)", xs, rs)
	}
	G := k.gates * s.H
	check := func(v *autograd.Var, name string, want ...int) error {
		if v != nil && !v.Value.HasShape(want) {
			return c.Errorf("input %s must have shape %v, found %v", name, want, v.Shape())
		}
		return nil
	}
	stateShape := []int{s.dirs, s.B, s.H}
	if s.layout == 1 {
		stateShape = []int{s.B, s.dirs, s.H}
	}
	for _, e := range []error{
		check(s.w, "W", s.dirs, G, s.I),
		check(s.r, "R", s.dirs, G, s.H),
		check(s.b, "B", s.dirs, 2*G),
		check(s.h0, "initial_h", stateShape...),
		check(s.c0, "initial_c", stateShape...),
		check(s.p, "P", s.dirs, 3*s.H),
	} {
		if e != nil {
			return e
		}
	}
	if s.layout == 1 {
		s.x = autograd.Transpose(s.x, 0, 1)
		if s.h0 != nil {
			s.h0 = autograd.Transpose(s.h0, 0, 1)
		}
		if s.c0 != nil {
			s.c0 = autograd.Transpose(s.c0, 0, 1)
		}
	}
	return nil
}

// sequenceLens reads the optional sequence_lens input sl: one length per
// batch entry, at most the sequence length.
func (s *rnnSetup) sequenceLens(sl *autograd.Var) error {
	c := s.c
	if sl == nil {
		return nil
	}
	if sl.Value.DType() != device.Int64 || !sl.Value.HasShape([]int{s.B}) {
		return c.Errorf("input sequence_lens must be an integer tensor of shape [%d], found %v %v", s.B, sl.Value.DType(), sl.Shape())
	}
	lens := c.Ints(sl)
	for i, n := range lens {
		if n < 0 || n > int64(s.T) {
			return c.Errorf("sequence_lens[%d] = %d is outside [0, %d] (the sequence length)", i, n, s.T)
		}
		if n != int64(s.T) {
			s.lens = lens
		}
	}
	return nil
}

// activations reads the activation functions: one list for each
// direction, alpha and beta consumed in order by the functions that take
// them.
func (s *rnnSetup) activations() error {
	c, k := s.c, s.kind
	names := c.AttrStrings("activations")
	if names == nil {
		for range s.dirs {
			names = append(names, k.acts...)
		}
	}
	if len(names) != len(k.acts)*s.dirs {
		return c.Errorf("attribute activations has %d entries, expected %d (%d per direction)", len(names), len(k.acts)*s.dirs, len(k.acts))
	}
	alphas, betas := c.AttrFloats("activation_alpha", nil), c.AttrFloats("activation_beta", nil)
	s.acts = make([][]rnnAct, s.dirs)
	for i, name := range names {
		f, err := rnnActivation(c, name, &alphas, &betas)
		if err != nil {
			return err
		}
		s.acts[i/len(k.acts)] = append(s.acts[i/len(k.acts)], f)
	}
	return nil
}

// rnnActivation returns the named activation, taking its alpha and beta
// from the front of the lists when it has such parameters.
func rnnActivation(c *nodeCtx, name string, alphas, betas *[]float64) (rnnAct, error) {
	take := func(l *[]float64, def float64) float64 {
		if len(*l) == 0 {
			return def
		}
		v := (*l)[0]
		*l = (*l)[1:]
		return v
	}
	switch strings.ToLower(name) {
	case "sigmoid":
		return autograd.Sigmoid, nil
	case "tanh":
		return autograd.Tanh, nil
	case "relu":
		return autograd.Relu, nil
	case "leakyrelu":
		a := take(alphas, 0.01)
		return func(x *autograd.Var) *autograd.Var { return autograd.LeakyRelu(x, a) }, nil
	case "affine":
		a, b := take(alphas, 1), take(betas, 0)
		return func(x *autograd.Var) *autograd.Var { return autograd.AddScalar(autograd.MulScalar(x, a), b) }, nil
	case "scaledtanh":
		a, b := take(alphas, 1), take(betas, 1)
		return func(x *autograd.Var) *autograd.Var {
			return autograd.MulScalar(autograd.Tanh(autograd.MulScalar(x, b)), a)
		}, nil
	case "hardsigmoid":
		a, b := take(alphas, 0.2), take(betas, 0.5)
		return func(x *autograd.Var) *autograd.Var {
			y := autograd.AddScalar(autograd.MulScalar(x, a), b)
			return rnnClamp(y, 0, 1)
		}, nil
	case "softsign":
		return func(x *autograd.Var) *autograd.Var {
			return autograd.Div(x, autograd.AddScalar(autograd.Abs(x), 1))
		}, nil
	case "softplus":
		return func(x *autograd.Var) *autograd.Var {
			// log(1+eˣ) = max(x, 0) + log(1 + e^-|x|), stable for large |x|.
			return autograd.Add(autograd.Relu(x), autograd.Log(autograd.AddScalar(autograd.Exp(autograd.Neg(autograd.Abs(x))), 1)))
		}, nil
	case "elu":
		a := take(alphas, 1)
		return func(x *autograd.Var) *autograd.Var {
			neg := autograd.MulScalar(autograd.AddScalar(autograd.Exp(autograd.Neg(autograd.Relu(autograd.Neg(x)))), -1), a)
			return autograd.Add(autograd.Relu(x), neg)
		}, nil
	case "thresholdedrelu":
		a := take(alphas, 1)
		return func(x *autograd.Var) *autograd.Var {
			keep := x.Value.GtScalar(a).Cast(x.Value.DType())
			return autograd.Mul(x, autograd.Constant(keep))
		}, nil
	}
	return nil, c.Unsupported("activation %q (supported: Sigmoid, Tanh, Relu, LeakyRelu, Affine, ScaledTanh, HardSigmoid, Softsign, Softplus, Elu, ThresholdedRelu)", name)
}

// rnnClamp limits x to [lo, hi] (gradient 1 inside, 0 outside).
func rnnClamp(x *autograd.Var, lo, hi float64) *autograd.Var {
	dt, dev := x.Value.DType(), x.Value.Device()
	y := autograd.Minimum(x, autograd.Constant(tensor.Full(dev, dt, hi)))
	return autograd.Maximum(y, autograd.Constant(tensor.Full(dev, dt, lo)))
}

// rnnPick returns the slice of a per-direction input (leading axis dirs) for
// direction d, without that axis.
func rnnPick(v *autograd.Var, d int) *autograd.Var {
	if v == nil {
		return nil
	}
	if v.Value.Dim(0) == 1 {
		return autograd.Squeeze(v, 0)
	}
	return autograd.Squeeze(autograd.Slice(v, 0, d, d+1), 0)
}

// direction runs direction d over the sequence and returns the outputs
// of the T steps ([B, H] each, in time order), the last H and (LSTM) the
// last C.
func (s *rnnSetup) direction(d int) (y []*autograd.Var, hLast, cLast *autograd.Var) {
	c, k, H := s.c, s.kind, s.H
	G := k.gates * H
	w, r := rnnPick(s.w, d), rnnPick(s.r, d)
	var bias, rbH *autograd.Var // bias of the input projection; GRU's Rbh with linear_before_reset
	if b := rnnPick(s.b, d); b != nil {
		wb, rb := autograd.Slice(b, 0, 0, G), autograd.Slice(b, 0, G, 2*G)
		if k.name == "GRU" && s.lbr {
			// Rbh stays inside r ⊙ (H·Rhᵀ + Rbh).
			rbH = autograd.Slice(rb, 0, 2*H, 3*H)
			bias = autograd.Add(wb, autograd.Concat(0, autograd.Slice(rb, 0, 0, 2*H),
				c.Const(tensor.Full(tensor.CPU(), s.dt, 0, H))))
		} else {
			bias = autograd.Add(wb, rb)
		}
	}
	var rZR, rH *autograd.Var // GRU: recurrence weights of z, r and of h
	if k.name == "GRU" {
		rZR, rH = autograd.Slice(r, 0, 0, 2*H), autograd.Slice(r, 0, 2*H, 3*H)
	}
	var pI, pO, pF *autograd.Var
	if p := rnnPick(s.p, d); p != nil {
		pI, pO, pF = autograd.Slice(p, 0, 0, H), autograd.Slice(p, 0, H, 2*H), autograd.Slice(p, 0, 2*H, 3*H)
	}
	acts := s.acts[d]

	// The input projection of all steps in one product, cut into steps:
	// proj[t] is step t's [B, G].
	var proj []*autograd.Var
	if s.T > 0 {
		all := autograd.Linear(autograd.Reshape(s.x, s.T*s.B, s.I), w, bias) // [T·B, G]
		sizes := make([]int, s.T)
		for t := range sizes {
			sizes[t] = s.B
		}
		proj = autograd.Split(all, 0, sizes...)
	}

	h, cell := rnnPick(s.h0, d), rnnPick(s.c0, d) // nil: zeros
	zeros := func() *autograd.Var { return c.Const(tensor.Full(tensor.CPU(), s.dt, 0, s.B, H)) }
	if s.lens != nil {
		// Masks need explicit states.
		if h == nil {
			h = zeros()
		}
		if cell == nil && k.states == 2 {
			cell = zeros()
		}
	}
	clip := func(v *autograd.Var) *autograd.Var {
		if s.clip > 0 {
			return rnnClamp(v, -s.clip, s.clip)
		}
		return v
	}
	// addRec returns a + v·rᵀ (+ b), skipping the product when v is zero.
	addRec := func(a, v, r, b *autograd.Var) *autograd.Var {
		if v == nil {
			if b == nil {
				return a
			}
			return autograd.Add(a, b)
		}
		return autograd.Add(a, autograd.Linear(v, r, b))
	}

	ys := make([]*autograd.Var, s.T)
	for n := range s.T {
		t := n
		if s.reverse[d] {
			t = s.T - 1 - n
		}
		xw := proj[t]
		var hNew, cNew *autograd.Var
		switch k.name {
		case "RNN":
			hNew = acts[0](clip(addRec(xw, h, r, nil)))
		case "GRU":
			f, g := acts[0], acts[1]
			parts := autograd.Split(xw, 1, 2*H, H)
			zr := autograd.Split(clip(addRec(parts[0], h, rZR, nil)), 1, H, H)
			z, rg := f(zr[0]), f(zr[1])
			var cand *autograd.Var
			switch {
			case h == nil && s.lbr:
				cand = parts[1]
				if rbH != nil {
					cand = autograd.Add(cand, autograd.Mul(rg, rbH))
				}
			case h == nil:
				cand = parts[1]
			case s.lbr:
				cand = autograd.Add(parts[1], autograd.Mul(rg, autograd.Linear(h, rH, rbH)))
			default:
				cand = autograd.Add(parts[1], autograd.Linear(autograd.Mul(rg, h), rH, nil))
			}
			hh := g(clip(cand))
			// H = (1 - z) ⊙ hh + z ⊙ H = hh + z ⊙ (H - hh)
			if h == nil {
				hNew = autograd.Sub(hh, autograd.Mul(z, hh))
			} else {
				hNew = autograd.Add(hh, autograd.Mul(z, autograd.Sub(h, hh)))
			}
		case "LSTM":
			f, g, hf := acts[0], acts[1], acts[2]
			gates := autograd.Split(addRec(xw, h, r, nil), 1, H, H, H, H) // i o f c
			gi, gf := gates[0], gates[2]
			if cell != nil && pI != nil {
				gi = autograd.Add(gi, autograd.Mul(pI, cell))
				gf = autograd.Add(gf, autograd.Mul(pF, cell))
			}
			i := f(clip(gi))
			var fg *autograd.Var
			if s.coupled {
				fg = autograd.AddScalar(autograd.Neg(i), 1)
			} else {
				fg = f(clip(gf))
			}
			cNew = autograd.Mul(i, g(clip(gates[3])))
			if cell != nil {
				cNew = autograd.Add(autograd.Mul(fg, cell), cNew)
			}
			gO := gates[1]
			if pO != nil {
				gO = autograd.Add(gO, autograd.Mul(pO, cNew))
			}
			hNew = autograd.Mul(f(clip(gO)), hf(cNew))
		}
		if s.lens != nil {
			m := s.mask(t)
			ys[t] = autograd.Mul(hNew, m)
			// state = old + m ⊙ (new - old)
			h = autograd.Add(h, autograd.Mul(m, autograd.Sub(hNew, h)))
			if cNew != nil {
				cell = autograd.Add(cell, autograd.Mul(m, autograd.Sub(cNew, cell)))
			}
		} else {
			ys[t] = hNew
			h, cell = hNew, cNew
		}
	}
	if k.states == 2 && cell == nil {
		cell = zeros()
	}
	return ys, h, cell
}

// mask returns the [B, 1] tensor that is 1 for the batch entries whose
// sequence includes step t and 0 for the others.
func (s *rnnSetup) mask(t int) *autograd.Var {
	m := make([]float64, s.B)
	for b, n := range s.lens {
		if int64(t) < n {
			m[b] = 1
		}
	}
	return s.c.Const(resizeWeights(s.dt, m, []int{s.B, 1}))
}
