package onnx

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// Tests of ops_rnn.go: RNN, GRU and LSTM against a plain-loop reference
// (both the all-steps and the step-by-step input projection), gradients in
// float64, layout 1, sequence_lens, activations and errors.

// rnnCase is one recurrent node with its inputs (float64, layout 0).
type rnnCase struct {
	kind        string // RNN, GRU, LSTM
	T, B, I, H  int
	dir         string
	acts        []string // nil: defaults
	alpha, beta []float32
	clip        float64
	lbr         bool // GRU linear_before_reset
	coupled     bool // LSTM input_forget
	lens        []int64
	noBias      bool
	withState   bool
	withP       bool
}

func (rc rnnCase) gates() int {
	return map[string]int{"RNN": 1, "GRU": 3, "LSTM": 4}[rc.kind]
}

func (rc rnnCase) dirs() int {
	if rc.dir == "bidirectional" {
		return 2
	}
	return 1
}

// inputs draws X, W, R, B, initial_h, initial_c, P (nil where absent).
func (rc rnnCase) inputs(rng *rand.Rand) []*tensor.Tensor {
	D, G := rc.dirs(), rc.gates()*rc.H
	r := func(shape ...int) *tensor.Tensor { return rzRand(rng, shape...) }
	in := make([]*tensor.Tensor, 7)
	in[0] = r(rc.T, rc.B, rc.I)
	in[1] = r(D, G, rc.I)
	in[2] = r(D, G, rc.H)
	if !rc.noBias {
		in[3] = r(D, 2*G)
	}
	if rc.withState {
		in[4] = r(D, rc.B, rc.H)
		if rc.kind == "LSTM" {
			in[5] = r(D, rc.B, rc.H)
		}
	}
	if rc.withP {
		in[6] = r(D, 3*rc.H)
	}
	return in
}

func (rc rnnCase) attrs() []*onnxpb.AttributeProto {
	a := []*onnxpb.AttributeProto{attrInt("hidden_size", int64(rc.H))}
	if rc.dir != "" {
		a = append(a, attrString("direction", rc.dir))
	}
	if rc.acts != nil {
		a = append(a, attrStrings("activations", rc.acts...))
	}
	if rc.alpha != nil {
		a = append(a, attrFloats("activation_alpha", rc.alpha...))
	}
	if rc.beta != nil {
		a = append(a, attrFloats("activation_beta", rc.beta...))
	}
	if rc.clip > 0 {
		a = append(a, attrFloat("clip", float32(rc.clip)))
	}
	if rc.lbr {
		a = append(a, attrInt("linear_before_reset", 1))
	}
	if rc.coupled {
		a = append(a, attrInt("input_forget", 1))
	}
	return a
}

// run calls the operator on the inputs (vars made by wrap) and returns
// Y, Y_h and, for LSTM, Y_c.
func (rc rnnCase) run(t *testing.T, in []*autograd.Var) []*autograd.Var {
	args := []*autograd.Var{in[0], in[1], in[2], in[3], nil, in[4]}
	if rc.lens != nil {
		args[4] = autograd.Constant(tensor.FromInt64(rc.lens, len(rc.lens)))
	}
	nOut := 2
	if rc.kind == "LSTM" {
		args = append(args, in[5], in[6])
		nOut = 3
	}
	for len(args) > 0 && args[len(args)-1] == nil {
		args = args[:len(args)-1]
	}
	out, err := callOp(rc.kind, 14, nOut, rc.attrs(), args...)
	require.NoError(t, err)
	require.Len(t, out, nOut)
	return out
}

// rnnRefAct is the scalar form of an activation with its parameters.
func rnnRefAct(name string, alphas, betas *[]float64) func(float64) float64 {
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
		return func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	case "tanh":
		return math.Tanh
	case "relu":
		return func(x float64) float64 { return math.Max(x, 0) }
	case "leakyrelu":
		a := take(alphas, 0.01)
		return func(x float64) float64 {
			if x >= 0 {
				return x
			}
			return a * x
		}
	case "affine":
		a, b := take(alphas, 1), take(betas, 0)
		return func(x float64) float64 { return a*x + b }
	case "scaledtanh":
		a, b := take(alphas, 1), take(betas, 1)
		return func(x float64) float64 { return a * math.Tanh(b*x) }
	case "hardsigmoid":
		a, b := take(alphas, 0.2), take(betas, 0.5)
		return func(x float64) float64 { return math.Min(math.Max(a*x+b, 0), 1) }
	case "softsign":
		return func(x float64) float64 { return x / (1 + math.Abs(x)) }
	case "softplus":
		return func(x float64) float64 { return math.Log1p(math.Exp(x)) }
	case "elu":
		a := take(alphas, 1)
		return func(x float64) float64 {
			if x >= 0 {
				return x
			}
			return a * (math.Exp(x) - 1)
		}
	case "thresholdedrelu":
		a := take(alphas, 1)
		return func(x float64) float64 {
			if x > a {
				return x
			}
			return 0
		}
	}
	panic("unknown activation " + name)
}

// reference computes Y [T, D, B, H], Y_h and Y_c [D, B, H] with plain
// loops, straight from the ONNX equations.
func (rc rnnCase) reference(in []*tensor.Tensor) (y, yh, yc []float64) {
	T, B, I, H, D, G := rc.T, rc.B, rc.I, rc.H, rc.dirs(), rc.gates()*rc.H
	get := func(t *tensor.Tensor) []float64 {
		if t == nil {
			return nil
		}
		return t.Float64s()
	}
	x, w, r, bb, h0, c0, p := get(in[0]), get(in[1]), get(in[2]), get(in[3]), get(in[4]), get(in[5]), get(in[6])
	y = make([]float64, T*D*B*H)
	yh = make([]float64, D*B*H)
	yc = make([]float64, D*B*H)
	names := rc.acts
	if names == nil {
		def := map[string][]string{"RNN": {"Tanh"}, "GRU": {"Sigmoid", "Tanh"}, "LSTM": {"Sigmoid", "Tanh", "Tanh"}}[rc.kind]
		for range D {
			names = append(names, def...)
		}
	}
	var alphas, betas []float64
	for _, a := range rc.alpha {
		alphas = append(alphas, float64(a))
	}
	for _, b := range rc.beta {
		betas = append(betas, float64(b))
	}
	acts := make([]func(float64) float64, len(names))
	for i, n := range names {
		acts[i] = rnnRefAct(n, &alphas, &betas)
	}
	na := len(names) / D
	clip := func(v float64) float64 {
		if rc.clip > 0 {
			cl := float64(float32(rc.clip)) // the attribute is a float32
			return math.Max(-cl, math.Min(cl, v))
		}
		return v
	}
	for d := range D {
		f := acts[d*na]
		for b := range B {
			n := T
			if rc.lens != nil {
				n = int(rc.lens[b])
			}
			h := make([]float64, H)
			c := make([]float64, H)
			if h0 != nil {
				copy(h, h0[(d*B+b)*H:])
			}
			if c0 != nil {
				copy(c, c0[(d*B+b)*H:])
			}
			for s := range n {
				t := s
				if rc.dir == "reverse" || (rc.dir == "bidirectional" && d == 1) {
					t = n - 1 - s
				}
				// xw[g] = X_t·W[g]ᵀ + Wb[g]; hr[g] = H·R[g]ᵀ + Rb[g]
				xw := make([]float64, G)
				hr := make([]float64, G)
				for g := range G {
					for i := range I {
						xw[g] += x[(t*B+b)*I+i] * w[(d*G+g)*I+i]
					}
					for j := range H {
						hr[g] += h[j] * r[(d*G+g)*H+j]
					}
					if bb != nil {
						xw[g] += bb[d*2*G+g]
						hr[g] += bb[d*2*G+G+g]
					}
				}
				hNew := make([]float64, H)
				switch rc.kind {
				case "RNN":
					for j := range H {
						hNew[j] = f(clip(xw[j] + hr[j]))
					}
				case "GRU":
					g := acts[d*na+1]
					z := make([]float64, H)
					rr := make([]float64, H)
					for j := range H {
						z[j] = f(clip(xw[j] + hr[j]))
						rr[j] = f(clip(xw[H+j] + hr[H+j]))
					}
					for j := range H {
						var cand float64
						if rc.lbr {
							cand = xw[2*H+j] + rr[j]*hr[2*H+j]
						} else {
							// (r ⊙ H)·Rhᵀ + Rbh
							v := 0.0
							for k := range H {
								v += rr[k] * h[k] * r[(d*G+2*H+j)*H+k]
							}
							if bb != nil {
								v += bb[d*2*G+G+2*H+j]
							}
							cand = xw[2*H+j] + v
						}
						hh := g(clip(cand))
						hNew[j] = (1-z[j])*hh + z[j]*h[j]
					}
				case "LSTM":
					g, hf := acts[d*na+1], acts[d*na+2]
					cNew := make([]float64, H)
					for j := range H {
						pi, po, pf := 0.0, 0.0, 0.0
						if p != nil {
							pi, po, pf = p[d*3*H+j], p[d*3*H+H+j], p[d*3*H+2*H+j]
						}
						ig := f(clip(xw[j] + hr[j] + pi*c[j]))
						fg := f(clip(xw[2*H+j] + hr[2*H+j] + pf*c[j]))
						if rc.coupled {
							fg = 1 - ig
						}
						cc := g(clip(xw[3*H+j] + hr[3*H+j]))
						cNew[j] = fg*c[j] + ig*cc
						og := f(clip(xw[H+j] + hr[H+j] + po*cNew[j]))
						hNew[j] = og * hf(cNew[j])
					}
					c = cNew
				}
				h = hNew
				copy(y[((t*D+d)*B+b)*H:], h)
			}
			copy(yh[(d*B+b)*H:], h)
			copy(yc[(d*B+b)*H:], c)
		}
	}
	return y, yh, yc
}

func rnnCases() map[string]rnnCase {
	return map[string]rnnCase{
		"rnn forward":               {kind: "RNN", T: 4, B: 2, I: 3, H: 3},
		"rnn reverse relu state":    {kind: "RNN", T: 3, B: 2, I: 2, H: 3, dir: "reverse", acts: []string{"Relu"}, withState: true},
		"rnn bidirectional lens":    {kind: "RNN", T: 4, B: 3, I: 2, H: 2, dir: "bidirectional", lens: []int64{4, 2, 1}, withState: true},
		"rnn leakyrelu affine":      {kind: "RNN", T: 3, B: 1, I: 2, H: 2, dir: "bidirectional", acts: []string{"LeakyRelu", "Affine"}, alpha: []float32{0.2, 0.5}, beta: []float32{0.1}},
		"rnn no bias clip":          {kind: "RNN", T: 3, B: 2, I: 2, H: 2, noBias: true, clip: 0.5},
		"gru forward":               {kind: "GRU", T: 4, B: 2, I: 3, H: 3},
		"gru lbr bidirectional":     {kind: "GRU", T: 3, B: 2, I: 2, H: 3, dir: "bidirectional", lbr: true, withState: true},
		"gru lbr no state":          {kind: "GRU", T: 3, B: 2, I: 2, H: 2, lbr: true},
		"gru lbr no bias":           {kind: "GRU", T: 3, B: 2, I: 2, H: 2, lbr: true, noBias: true, withState: true},
		"gru reverse lens clip":     {kind: "GRU", T: 4, B: 3, I: 2, H: 2, dir: "reverse", lens: []int64{3, 4, 1}, clip: 0.7, withState: true},
		"gru activations":           {kind: "GRU", T: 3, B: 2, I: 2, H: 2, acts: []string{"HardSigmoid", "Softsign"}, alpha: []float32{0.3}, beta: []float32{0.4}},
		"lstm forward":              {kind: "LSTM", T: 4, B: 2, I: 3, H: 3},
		"lstm bidirectional state":  {kind: "LSTM", T: 3, B: 2, I: 2, H: 3, dir: "bidirectional", withState: true, withP: true},
		"lstm peepholes no state":   {kind: "LSTM", T: 3, B: 2, I: 2, H: 2, withP: true},
		"lstm lens bidirectional":   {kind: "LSTM", T: 4, B: 3, I: 2, H: 2, dir: "bidirectional", lens: []int64{2, 4, 3}, withState: true, withP: true},
		"lstm coupled clip":         {kind: "LSTM", T: 3, B: 2, I: 2, H: 2, coupled: true, clip: 0.8, withState: true},
		"lstm activations":          {kind: "LSTM", T: 3, B: 1, I: 2, H: 2, acts: []string{"Sigmoid", "ScaledTanh", "Elu"}, alpha: []float32{0.9, 1.5}, beta: []float32{0.7}},
		"lstm softplus thresholded": {kind: "LSTM", T: 2, B: 2, I: 2, H: 2, acts: []string{"HardSigmoid", "Softplus", "ThresholdedRelu"}, alpha: []float32{0.25, 0.1}},
	}
}

// TestRNNReference compares every case with the plain-loop reference,
// once with constant inputs (the input projection of all steps at once)
// and once with inputs that require gradients (step by step).
func TestRNNReference(t *testing.T) {
	t.Parallel()
	for name, rc := range rnnCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(7, uint64(len(name))))
			in := rc.inputs(rng)
			wantY, wantH, wantC := rc.reference(in)
			for _, wrap := range []func(*tensor.Tensor) *autograd.Var{autograd.Constant, autograd.Leaf} {
				vars := make([]*autograd.Var, len(in))
				for i, v := range in {
					if v != nil {
						vars[i] = wrap(v)
					}
				}
				out := rc.run(t, vars)
				assert.Equal(t, []int{rc.T, rc.dirs(), rc.B, rc.H}, out[0].Shape())
				assert.InDeltaSlice(t, wantY, out[0].Value.Float64s(), 1e-12, "Y")
				assert.Equal(t, []int{rc.dirs(), rc.B, rc.H}, out[1].Shape())
				assert.InDeltaSlice(t, wantH, out[1].Value.Float64s(), 1e-12, "Y_h")
				if rc.kind == "LSTM" {
					assert.InDeltaSlice(t, wantC, out[2].Value.Float64s(), 1e-12, "Y_c")
				}
			}
		})
	}
}

// TestRNNGrad checks the gradients of Y, Y_h and Y_c with respect to every
// float input.
func TestRNNGrad(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"rnn bidirectional lens", "rnn no bias clip", "gru lbr bidirectional", "gru reverse lens clip",
		"gru forward", "lstm bidirectional state", "lstm lens bidirectional", "lstm coupled clip", "lstm activations"} {
		rc := rnnCases()[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(3, uint64(len(name))))
			all := rc.inputs(rng)
			var ts []*tensor.Tensor
			var at []int
			for i, v := range all {
				if v != nil {
					ts = append(ts, v)
					at = append(at, i)
				}
			}
			err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
				vars := make([]*autograd.Var, len(all))
				for k, i := range at {
					vars[i] = xs[k]
				}
				out := rc.run(t, vars)
				// One output combining all of them, so each is checked.
				sum := autograd.SumAll(autograd.Mul(out[0], out[0]))
				for _, o := range out[1:] {
					sum = autograd.Add(sum, autograd.SumAll(autograd.MulScalar(o, 0.7)))
				}
				return sum
			}, ts, autograd.GradCheckOptions{})
			assert.NoError(t, err)
		})
	}
}

// TestRNNLayout checks that layout 1 is layout 0 with batch and sequence
// (and directions) swapped.
func TestRNNLayout(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"RNN", "GRU", "LSTM"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			rc := rnnCase{kind: kind, T: 3, B: 2, I: 2, H: 3, dir: "bidirectional", withState: true}
			in := rc.inputs(rand.New(rand.NewPCG(5, 6)))
			vars := make([]*autograd.Var, len(in))
			swapped := make([]*autograd.Var, len(in))
			for i, v := range in {
				if v == nil {
					continue
				}
				vars[i] = autograd.Constant(v)
				swapped[i] = vars[i]
				if i == 0 || i == 4 || i == 5 {
					swapped[i] = autograd.Constant(v.Transpose(0, 1).Contiguous())
				}
			}
			want := rc.run(t, vars)
			args := []*autograd.Var{swapped[0], swapped[1], swapped[2], swapped[3], nil, swapped[4]}
			nOut := 2
			if kind == "LSTM" {
				args = append(args, swapped[5])
				nOut = 3
			}
			got, err := callOp(kind, 14, nOut, append(rc.attrs(), attrInt("layout", 1)), args...)
			require.NoError(t, err)
			assert.Equal(t, want[0].Value.Permute(2, 0, 1, 3).Contiguous().Float64s(), got[0].Value.Contiguous().Float64s())
			for k := 1; k < nOut; k++ {
				assert.Equal(t, want[k].Value.Transpose(0, 1).Contiguous().Float64s(), got[k].Value.Contiguous().Float64s())
			}
		})
	}
}

// TestRNNOptionalOutputs runs nodes that declare only some outputs.
func TestRNNOptionalOutputs(t *testing.T) {
	t.Parallel()
	rc := rnnCase{kind: "LSTM", T: 2, B: 1, I: 2, H: 2, noBias: true}
	in := rc.inputs(rand.New(rand.NewPCG(1, 1)))
	op := "LSTM"
	n := &onnxpb.NodeProto{OpType: &op, Input: []string{"x", "w", "r"}, Output: []string{"", "yh"}}
	c := newNodeCtx(n, 0, 14, tensor.CPU(), false)
	v, ok := lookup("LSTM", 14)
	require.True(t, ok)
	out, err := v.run(c.withInputs(autograd.Constant(in[0]), autograd.Constant(in[1]), autograd.Constant(in[2])))
	require.NoError(t, err)
	require.Len(t, out, 2)
	assert.Nil(t, out[0])
	_, wantH, _ := rc.reference(in)
	assert.InDeltaSlice(t, wantH, out[1].Value.Float64s(), 1e-12)
}

func TestRNNErrors(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	c := func(shape ...int) *autograd.Var { return autograd.Constant(rzRand(rng, shape...)) }
	x, w, r := c(3, 2, 4), c(1, 12, 4), c(1, 12, 3) // GRU, H = 3
	hs := attrInt("hidden_size", 3)
	cases := []struct {
		name        string
		op          string
		attrs       []*onnxpb.AttributeProto
		in          []*autograd.Var
		unsupported bool
	}{
		{"missing R", "RNN", []*onnxpb.AttributeProto{hs}, []*autograd.Var{x, c(1, 3, 4)}, false},
		{"W shape", "GRU", []*onnxpb.AttributeProto{hs}, []*autograd.Var{x, c(1, 9, 4), r}, false},
		{"R not 3-D", "GRU", []*onnxpb.AttributeProto{hs}, []*autograd.Var{x, c(1, 9, 4), c(9, 3)}, false},
		{"X not 3-D", "GRU", []*onnxpb.AttributeProto{hs}, []*autograd.Var{c(3, 4), c(1, 9, 4), c(1, 9, 3)}, false},
		{"hidden_size mismatch", "GRU", []*onnxpb.AttributeProto{attrInt("hidden_size", 4)}, []*autograd.Var{x, c(1, 9, 4), c(1, 9, 3)}, false},
		{"B shape", "LSTM", []*onnxpb.AttributeProto{hs}, []*autograd.Var{x, w, r, c(1, 12)}, false},
		{"initial_h shape", "LSTM", []*onnxpb.AttributeProto{hs}, []*autograd.Var{x, w, r, nil, nil, c(1, 3, 3)}, false},
		{"P shape", "LSTM", []*onnxpb.AttributeProto{hs}, []*autograd.Var{x, w, r, nil, nil, nil, nil, c(1, 12)}, false},
		{"bidirectional needs 2 directions", "LSTM", []*onnxpb.AttributeProto{hs, attrString("direction", "bidirectional")}, []*autograd.Var{x, w, r}, false},
		{"bad direction", "LSTM", []*onnxpb.AttributeProto{hs, attrString("direction", "both")}, []*autograd.Var{x, w, r}, false},
		{"bad layout", "LSTM", []*onnxpb.AttributeProto{hs, attrInt("layout", 2)}, []*autograd.Var{x, w, r}, false},
		{"bad clip", "LSTM", []*onnxpb.AttributeProto{hs, attrFloat("clip", -1)}, []*autograd.Var{x, w, r}, false},
		{"activation count", "LSTM", []*onnxpb.AttributeProto{hs, attrStrings("activations", "Sigmoid", "Tanh")}, []*autograd.Var{x, w, r}, false},
		{"unknown activation", "RNN", []*onnxpb.AttributeProto{hs, attrStrings("activations", "Swish")}, []*autograd.Var{x, c(1, 3, 4), c(1, 3, 3)}, true},
		{"sequence_lens too long", "RNN", []*onnxpb.AttributeProto{hs}, []*autograd.Var{x, c(1, 3, 4), c(1, 3, 3), nil, rzI64(3, 4)}, false},
		{"sequence_lens shape", "RNN", []*onnxpb.AttributeProto{hs}, []*autograd.Var{x, c(1, 3, 4), c(1, 3, 3), nil, rzI64(3)}, false},
		{"sequence_lens float", "RNN", []*onnxpb.AttributeProto{hs}, []*autograd.Var{x, c(1, 3, 4), c(1, 3, 3), nil, rzF32([]float32{1, 2}, 2)}, false},
		{"integer X", "RNN", []*onnxpb.AttributeProto{hs}, []*autograd.Var{autograd.Constant(tensor.FromInt64(make([]int64, 24), 3, 2, 4)), c(1, 3, 4), c(1, 3, 3)}, false},
		{"mixed types", "RNN", []*onnxpb.AttributeProto{hs}, []*autograd.Var{x, rzF32(make([]float32, 12), 1, 3, 4), c(1, 3, 3)}, false},
		{"too many inputs", "RNN", []*onnxpb.AttributeProto{hs}, []*autograd.Var{x, c(1, 3, 4), c(1, 3, 3), nil, nil, nil, c(1, 2, 3)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := callOp(tc.op, 14, 2, tc.attrs, tc.in...)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "panic")
			assert.Equal(t, tc.unsupported, errors.Is(err, ErrUnsupported), "%v", err)
		})
	}
	t.Run("Y_c on GRU", func(t *testing.T) {
		t.Parallel()
		_, err := callOp("GRU", 14, 3, []*onnxpb.AttributeProto{hs}, x, c(1, 9, 4), c(1, 9, 3))
		require.Error(t, err)
		assert.NotContains(t, err.Error(), "panic")
	})
}

// TestRNNFloat32 runs an LSTM in float32 against the float64 reference.
func TestRNNFloat32(t *testing.T) {
	t.Parallel()
	rc := rnnCases()["lstm lens bidirectional"]
	in := rc.inputs(rand.New(rand.NewPCG(4, 4)))
	wantY, _, _ := rc.reference(in)
	vars := make([]*autograd.Var, len(in))
	for i, v := range in {
		if v != nil {
			vars[i] = autograd.Constant(v.Cast(device.Float32))
		}
	}
	out := rc.run(t, vars)
	assert.InDeltaSlice(t, wantY, out[0].Value.Values(), 1e-5)
}
