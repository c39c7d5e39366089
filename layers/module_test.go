package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// tinyNet is a model written the way users write one: fields named with
// Named, Parameters and Children listed by hand.
type tinyNet struct {
	features   *Sequential
	classifier *Linear
}

func newTinyNet(rng *rand.Rand) *tinyNet {
	return &tinyNet{
		features: Named("features", NewSequential(
			NewConv2d(1, 2, 3, 3, Conv2dConfig{PadH: 1, PadW: 1}, rng),
			NewBatchNorm2d(2, BatchNormConfig{}),
			ReLU{},
			NewDropout(0.5, rng),
			NewGlobalAvgPool(),
			NewFlatten(),
		)),
		classifier: Named("classifier", NewLinear(2, 3, true, rng)),
	}
}

func (n *tinyNet) Parameters() []*autograd.Param {
	return append(n.features.Parameters(), n.classifier.Parameters()...)
}

func (n *tinyNet) Children() []Module { return []Module{n.features, n.classifier} }

func (n *tinyNet) Forward(x *autograd.Var) *autograd.Var {
	return n.classifier.Forward(n.features.Forward(x))
}

func paramNames(m Module) []string {
	var out []string
	for _, p := range m.Parameters() {
		out = append(out, fmt.Sprintf("%s%v", p.Name, p.Shape()))
	}
	return out
}

func bufferNames(m Module) []string {
	var out []string
	for _, b := range BuffersOf(m) {
		out = append(out, fmt.Sprintf("%s%v", b.Name, b.Value.Shape()))
	}
	return out
}

func TestNaming(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 1))
	tests := []struct {
		name    string
		m       Module
		params  []string
		buffers []string
	}{
		{"Linear", NewLinear(3, 2, true, rng), []string{"weight[2 3]", "bias[2]"}, nil},
		{"Linear without bias", NewLinear(3, 2, false, rng), []string{"weight[2 3]"}, nil},
		{"Conv2d", NewConv2d(4, 2, 3, 1, Conv2dConfig{Groups: 2}, rng), []string{"weight[2 2 3 1]", "bias[2]"}, nil},
		{"BatchNorm1d", NewBatchNorm1d(3, BatchNormConfig{}), []string{"weight[3]", "bias[3]"},
			[]string{"running_mean[3]", "running_var[3]", "num_batches_tracked[]"}},
		{"BatchNorm2d without affine or stats", NewBatchNorm2d(3, BatchNormConfig{NoAffine: true, NoRunningStats: true}), nil, nil},
		{"LayerNorm", NewLayerNorm([]int{2, 3}, LayerNormConfig{}), []string{"weight[2 3]", "bias[2 3]"}, nil},
		{"Embedding", NewEmbedding(5, 2, rng), []string{"weight[5 2]"}, nil},
		{"Sequential", NewSequential(NewLinear(3, 4, true, rng), ReLU{}, NewBatchNorm1d(4, BatchNormConfig{})),
			[]string{"0.weight[4 3]", "0.bias[4]", "2.weight[4]", "2.bias[4]"},
			[]string{"2.running_mean[4]", "2.running_var[4]", "2.num_batches_tracked[]"}},
		{"nested Sequential", Named("encoder", NewSequential(NewSequential(NewLinear(2, 2, false, rng)), NewLinear(2, 1, false, rng))),
			[]string{"encoder.0.0.weight[2 2]", "encoder.1.weight[1 2]"}, nil},
		{"Residual adds no prefix", NewSequential(Tanh{}, NewResidual(NewLinear(2, 2, true, rng))),
			[]string{"1.weight[2 2]", "1.bias[2]"}, nil},
		{"model struct", newTinyNet(rng),
			[]string{"features.0.weight[2 1 3 3]", "features.0.bias[2]", "features.1.weight[2]", "features.1.bias[2]", "classifier.weight[3 2]", "classifier.bias[3]"},
			[]string{"features.1.running_mean[2]", "features.1.running_var[2]", "features.1.num_batches_tracked[]"}},
		{"Named with empty prefix", Named("", NewLinear(1, 1, false, rng)), []string{"weight[1 1]"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.params, paramNames(tt.m))
			assert.Equal(t, tt.buffers, bufferNames(tt.m))
			assert.Len(t, StateDict(tt.m), len(tt.params)+len(tt.buffers))
		})
	}
}

func TestSharedParameterListedOnce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	l := NewLinear(2, 2, true, rng)
	s := Named("m", NewSequential(l, Tanh{}))
	s.layers = append(s.layers, l) // the same layer used twice, named once
	assert.Equal(t, []string{"m.0.weight[2 2]", "m.0.bias[2]"}, paramNames(s))
	assert.Equal(t, 6, NumParams(s))
	assert.Len(t, StateDict(s), 2)
}

func TestSequentialAccessors(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	s := NewSequential(NewLinear(2, 3, true, rng))
	s.Append(ReLU{})
	s.Append(NewLinear(3, 1, true, rng))
	assert.Equal(t, 3, s.Len())
	assert.Len(t, s.Layers(), 3)
	assert.Len(t, s.Children(), 3)
	assert.Equal(t, "2.weight", s.Parameters()[2].Name)
	x := autograd.Constant(tensor.RandNormal(rng, 0, 1, 4, 2))
	assert.Equal(t, []int{4, 1}, s.Forward(x).Shape())
	assert.Equal(t, 0, NewSequential().Len())
	assert.Same(t, x, NewSequential().Forward(x))
}

func TestNumParams(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	assert.Equal(t, 15, NumParams(NewLinear(4, 3, true, rng)))
	assert.Equal(t, 2*9+2+2+2+6+3, NumParams(newTinyNet(rng)))
	assert.Equal(t, 0, NumParams(ReLU{}))
}

func TestStateDictRoundTrip(t *testing.T) {
	t.Parallel()
	a := newTinyNet(rand.New(rand.NewPCG(1, 1)))
	b := newTinyNet(rand.New(rand.NewPCG(2, 2)))
	x := autograd.Constant(tensor.RandNormal(rand.New(rand.NewPCG(3, 3)), 0, 1, 4, 1, 5, 5))
	a.Forward(x) // train mode: changes a's running statistics
	assert.Equal(t, 1.0, StateDict(a)["features.1.num_batches_tracked"].Item())

	sd := StateDict(a)
	require.NoError(t, LoadStateDict(b, sd))
	sdb := StateDict(b)
	require.Len(t, sdb, len(sd))
	for k, v := range sd {
		assert.Equal(t, v.Values(), sdb[k].Values(), k)
		assert.NotSame(t, v, sdb[k], "%s is copied, not shared", k)
	}
	Eval(a)
	Eval(b)
	assert.Equal(t, a.Forward(x).Value.Float32s(), b.Forward(x).Value.Float32s())

	// LoadStateDict copies: changing the source later leaves b alone.
	sd["classifier.bias"].Fill(42)
	assert.NotEqual(t, 42.0, StateDict(b)["classifier.bias"].Values()[0])
}

func TestLoadStateDictErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(sd map[string]*tensor.Tensor)
		target error
		want   []string
	}{
		{"missing key", func(sd map[string]*tensor.Tensor) { delete(sd, "classifier.bias") }, ErrMissingKey,
			[]string{`layers: LoadStateDict: missing key "classifier.bias" (expected float32 [3])`}},
		{"missing buffer", func(sd map[string]*tensor.Tensor) { delete(sd, "features.1.running_var") }, ErrMissingKey,
			[]string{`missing key "features.1.running_var"`}},
		{"unexpected key", func(sd map[string]*tensor.Tensor) { sd["classifier.scale"] = tensor.Zeros(3) }, ErrUnexpectedKey,
			[]string{`layers: LoadStateDict: unexpected key "classifier.scale" (the module has no parameter or buffer of that name)`}},
		{"shape mismatch", func(sd map[string]*tensor.Tensor) { sd["classifier.weight"] = tensor.Zeros(2, 3) }, ErrMismatch,
			[]string{`layers: LoadStateDict: "classifier.weight": shape mismatch: expected [3 2], found [2 3]`}},
		{"dtype mismatch", func(sd map[string]*tensor.Tensor) {
			sd["features.0.bias"] = sd["features.0.bias"].Cast(device.Float64)
		}, ErrMismatch, []string{`layers: LoadStateDict: "features.0.bias": dtype mismatch: expected float32, found float64`}},
		{"integer buffer as float", func(sd map[string]*tensor.Tensor) {
			sd["features.1.num_batches_tracked"] = tensor.Zeros()
		}, ErrMismatch, []string{`"features.1.num_batches_tracked": dtype mismatch: expected int64, found float32`}},
		{"nil tensor", func(sd map[string]*tensor.Tensor) { sd["classifier.bias"] = nil }, ErrMismatch,
			[]string{`"classifier.bias": mismatch: expected float32 [3], found a nil tensor`}},
		{"several problems at once", func(sd map[string]*tensor.Tensor) {
			delete(sd, "classifier.bias")
			delete(sd, "features.0.weight")
			sd["head.weight"] = tensor.Zeros(1)
			sd["features.1.weight"] = tensor.Zeros(5)
		}, ErrUnexpectedKey, []string{
			`missing key "classifier.bias"`, `missing key "features.0.weight"`,
			`unexpected key "head.weight"`, `"features.1.weight": shape mismatch: expected [2], found [5]`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newTinyNet(rand.New(rand.NewPCG(1, 1)))
			before := map[string][]float64{}
			sd := map[string]*tensor.Tensor{}
			for k, v := range StateDict(m) {
				before[k] = v.Values()
				if v.DType().IsFloat() {
					sd[k] = v.AddScalar(1) // different values, same shape and type
				} else {
					sd[k] = v.Clone()
				}
			}
			tt.edit(sd)
			err := LoadStateDict(m, sd)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.target)
			for _, w := range tt.want {
				assert.ErrorContains(t, err, w)
			}
			for k, v := range StateDict(m) {
				assert.Equal(t, before[k], v.Values(), "%s changed although loading failed", k)
			}
		})
	}
}

func TestStateDictDuplicateNamePanics(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	dup := &tinyNet{features: NewSequential(NewLinear(1, 1, true, rng)), classifier: Named("0", NewLinear(1, 1, true, rng))}
	assert.PanicsWithValue(t, `layers: StateDict: two parameters or buffers are named "0.weight" (name each child once with Named)`, func() {
		StateDict(dup)
	})
}

func TestCastAndTo(t *testing.T) {
	t.Parallel()
	m := newTinyNet(rand.New(rand.NewPCG(1, 1)))
	x := autograd.Constant(tensor.RandNormal(rand.New(rand.NewPCG(3, 3)), 0, 1, 2, 1, 4, 4))
	Eval(m)
	want := m.Forward(x).Value.Values()
	require.NoError(t, autograd.Backward(autograd.SumAll(m.Forward(x))))

	Cast(m, device.Float64)
	for k, v := range StateDict(m) {
		if k == "features.1.num_batches_tracked" {
			assert.Equal(t, device.Int64, v.DType(), k)
		} else {
			assert.Equal(t, device.Float64, v.DType(), k)
		}
	}
	for _, p := range m.Parameters() {
		assert.Equal(t, device.Float64, p.Grad.DType(), "grad of %s", p.Name)
	}
	got := m.Forward(autograd.Constant(x.Value.Cast(device.Float64))).Value.Values()
	assert.InDeltaSlice(t, want, got, 1e-5)

	Cast(m, device.Float32)
	To(m, tensor.CPU())
	for k, v := range StateDict(m) {
		assert.Equal(t, "cpu", v.Device().Name(), k)
	}
	assert.Equal(t, want, m.Forward(x).Value.Values())
	assert.PanicsWithValue(t, "layers: Cast to int64: parameters must be floating-point", func() { Cast(m, device.Int64) })
}

func TestBatchNormTrainEval(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(4, 4))
	bn := NewBatchNorm2d(2, BatchNormConfig{})
	m := NewSequential(bn)
	x := tensor.RandNormal(rng, 3, 2, 4, 2, 3, 3) // mean 3, std 2
	xv := x.Values()

	// Training: batch statistics; output mean 0, biased variance 1.
	y := m.Forward(autograd.Constant(x)).Value
	mean := y.MeanAxes([]int{0, 2, 3}, false).Values()
	vr := y.VarAxes([]int{0, 2, 3}, false, false).Values()
	assert.InDeltaSlice(t, []float64{0, 0}, mean, 1e-5)
	assert.InDeltaSlice(t, []float64{1, 1}, vr, 1e-3)
	bm := x.MeanAxes([]int{0, 2, 3}, false).Values()
	bv := x.VarAxes([]int{0, 2, 3}, true, false).Values() // unbiased for the running update
	sd := StateDict(m)
	assert.InDeltaSlice(t, []float64{0.1 * bm[0], 0.1 * bm[1]}, sd["0.running_mean"].Values(), 1e-6)
	assert.InDeltaSlice(t, []float64{0.9 + 0.1*bv[0], 0.9 + 0.1*bv[1]}, sd["0.running_var"].Values(), 1e-5)
	assert.Equal(t, 1.0, sd["0.num_batches_tracked"].Item())

	// Evaluation: running statistics, nothing updated.
	Eval(m)
	assert.False(t, bn.Training())
	rm, rv := sd["0.running_mean"].Values(), sd["0.running_var"].Values()
	y = m.Forward(autograd.Constant(x)).Value
	yv := y.Values()
	for i := range yv {
		c := (i / 9) % 2
		assert.InDelta(t, (xv[i]-rm[c])/math.Sqrt(rv[c]+1e-5), yv[i], 1e-5)
	}
	assert.Equal(t, rm, StateDict(m)["0.running_mean"].Values())
	assert.Equal(t, 1.0, StateDict(m)["0.num_batches_tracked"].Item())

	// Back to training; no-grad inputs still update the statistics.
	Train(m)
	assert.True(t, bn.Training())
	out := m.Forward(autograd.NoGrad(autograd.Constant(x)))
	assert.False(t, out.RequiresGrad())
	assert.Equal(t, 2.0, StateDict(m)["0.num_batches_tracked"].Item())
	assert.InDelta(t, 0.19*bm[0], StateDict(m)["0.running_mean"].Values()[0], 1e-6)
}

func TestBatchNormNoRunningStats(t *testing.T) {
	t.Parallel()
	bn := NewBatchNorm1d(2, BatchNormConfig{NoRunningStats: true})
	x := autograd.Constant(tensor.FromFloat32([]float32{1, 10, 3, 20}, 2, 2))
	Eval(bn) // still batch statistics
	assert.InDeltaSlice(t, []float64{-1, -1, 1, 1}, bn.Forward(x).Value.Values(), 1e-4)
	assert.Empty(t, bn.Buffers())
}

func TestDropout(t *testing.T) {
	t.Parallel()
	const n, p = 10000, 0.3
	x := tensor.RandUniform(rand.New(rand.NewPCG(9, 9)), 1, 2, 100, n/100)
	xv := x.Float32s()
	run := func(seed uint64) (*autograd.Var, []float32) {
		in := autograd.Leaf(x)
		y := NewDropout(p, rand.New(rand.NewPCG(seed, 0))).Forward(in)
		require.NoError(t, autograd.Backward(autograd.SumAll(y)))
		return in, y.Value.Float32s()
	}
	in, a := run(1)
	_, b := run(1)
	_, c := run(2)
	assert.Equal(t, a, b, "same seed, same mask")
	assert.NotEqual(t, a, c, "different seeds, different masks")

	scale := float32(1 / (1 - p))
	dropped := 0
	g := in.Grad.Float32s()
	for i, v := range a {
		if v == 0 {
			dropped++
			assert.Zero(t, g[i])
			continue
		}
		require.Equal(t, xv[i]*scale, v, "kept elements are scaled by 1/(1-p)")
		require.Equal(t, scale, g[i])
	}
	assert.InDelta(t, p, float64(dropped)/n, 0.015, "fraction dropped")

	d := NewDropout(p, rand.New(rand.NewPCG(1, 0)))
	xs := autograd.Constant(x)
	Eval(d)
	assert.False(t, d.Training())
	assert.Same(t, xs, d.Forward(xs), "identity in evaluation")
	Train(d)
	assert.True(t, d.Training())
	assert.NotEqual(t, xv, d.Forward(xs).Value.Float32s())

	assert.Same(t, xs, NewDropout(0, nil).Forward(xs), "p = 0 is the identity")
	for _, v := range NewDropout(1, rand.New(rand.NewPCG(1, 0))).Forward(xs).Value.Values() {
		require.Zero(t, v, "p = 1 drops everything")
	}
	f64 := NewDropout(0.5, rand.New(rand.NewPCG(1, 0))).Forward(autograd.Constant(x.Cast(device.Float64)))
	assert.Equal(t, device.Float64, f64.Value.DType())
}

func TestInitialisation(t *testing.T) {
	t.Parallel()
	same := func(a, b Module) bool {
		pa, pb := a.Parameters(), b.Parameters()
		for i := range pa {
			if !tensor.AllClose(pa[i].Value, pb[i].Value, 0, 0) {
				return false
			}
		}
		return true
	}
	assert.True(t, same(NewLinear(5, 4, true, rand.New(rand.NewPCG(7, 7))), NewLinear(5, 4, true, rand.New(rand.NewPCG(7, 7)))))
	assert.False(t, same(NewLinear(5, 4, true, rand.New(rand.NewPCG(7, 7))), NewLinear(5, 4, true, rand.New(rand.NewPCG(8, 8)))))

	rng := rand.New(rand.NewPCG(1, 3))
	tests := []struct {
		name  string
		p     []*autograd.Param
		bound float64 // 1/√fan_in for both weight and bias
	}{
		{"Linear", NewLinear(64, 50, true, rng).Parameters(), 1 / math.Sqrt(64)},
		{"Conv2d", NewConv2d(8, 40, 3, 2, Conv2dConfig{}, rng).Parameters(), 1 / math.Sqrt(8*3*2)},
		{"Conv2d groups", NewConv2d(8, 40, 3, 3, Conv2dConfig{Groups: 4}, rng).Parameters(), 1 / math.Sqrt(2*3*3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range tt.p {
				v := p.Value.Values()
				lo, hi, sq := math.Inf(1), math.Inf(-1), 0.0
				for _, x := range v {
					lo, hi, sq = min(lo, x), max(hi, x), sq+x*x
				}
				assert.GreaterOrEqual(t, lo, -tt.bound, p.Name)
				assert.Less(t, hi, tt.bound, p.Name)
				if len(v) > 1000 { // U(-b, b) has standard deviation b/√3
					assert.InDelta(t, tt.bound/math.Sqrt(3), math.Sqrt(sq/float64(len(v))), 0.05*tt.bound, p.Name)
				}
			}
		})
	}
	e := NewEmbedding(100, 50, rng).Weight().Value
	assert.InDelta(t, 0, e.MeanAll().Item(), 0.05)
	assert.InDelta(t, 1, math.Sqrt(e.VarAxes(nil, false, false).Item()), 0.05)
	ln := NewLayerNorm([]int{3}, LayerNormConfig{})
	assert.Equal(t, []float64{1, 1, 1}, ln.Parameters()[0].Value.Values())
	assert.Equal(t, []float64{0, 0, 0}, ln.Parameters()[1].Value.Values())
}

func TestEmbedding(t *testing.T) {
	t.Parallel()
	e := NewEmbedding(4, 2, rand.New(rand.NewPCG(1, 1)))
	w := e.Weight().Value.Float32s()
	idx := tensor.FromInt64([]int64{3, 0, 3}, 3)
	y := e.Lookup(idx)
	assert.Equal(t, []int{3, 2}, y.Shape())
	assert.Equal(t, []float32{w[6], w[7], w[0], w[1], w[6], w[7]}, y.Value.Float32s())
	require.NoError(t, autograd.Backward(autograd.SumAll(y)))
	assert.Equal(t, []float32{1, 1, 0, 0, 0, 0, 2, 2}, e.Weight().Grad.Float32s(), "repeated rows accumulate")

	out := e.Forward(autograd.NoGrad(autograd.Constant(tensor.FromInt64([]int64{1}, 1, 1))))
	assert.False(t, out.RequiresGrad())
	assert.Equal(t, []int{1, 1, 2}, out.Shape())
	// A transposed (non-contiguous) index tensor.
	tr := tensor.FromInt64([]int64{0, 1, 2, 3, 0, 1}, 2, 3).T()
	assert.Equal(t, []int{3, 2, 2}, e.Lookup(tr).Shape())
	assert.Equal(t, w[2:4], e.Lookup(tr).Value.Float32s()[4:6]) // tr[1][0] = 1
}

func TestAdaptiveAvgPoolOverlapping(t *testing.T) {
	t.Parallel()
	const h, w, oh, ow = 5, 7, 3, 4
	x := tensor.RandNormal(rand.New(rand.NewPCG(2, 2)), 0, 1, 1, 1, h, w)
	xv := x.Values()
	got := NewAdaptiveAvgPool2d(oh, ow).Forward(autograd.Constant(x))
	require.Equal(t, []int{1, 1, oh, ow}, got.Shape())
	gv := got.Value.Values()
	for i := range oh {
		for j := range ow {
			h0, h1 := int(math.Floor(float64(i*h)/oh)), int(math.Ceil(float64((i+1)*h)/oh))
			w0, w1 := int(math.Floor(float64(j*w)/ow)), int(math.Ceil(float64((j+1)*w)/ow))
			s := 0.0
			for r := h0; r < h1; r++ {
				for c := w0; c < w1; c++ {
					s += xv[r*w+c]
				}
			}
			assert.InDelta(t, s/float64((h1-h0)*(w1-w0)), gv[i*ow+j], 1e-6, "cell %d,%d", i, j)
		}
	}
}

func TestLossValues(t *testing.T) {
	t.Parallel()
	logits := autograd.Constant(tensor.FromFloat64([]float64{2, 0, 0, 0, 3, 1}, 2, 3))
	target := tensor.FromInt64([]int64{0, 2}, 2)
	lse0, lse1 := math.Log(math.Exp(2)+2), math.Log(1+math.Exp(3)+math.Exp(1))
	l0, l1 := lse0-2, lse1-1
	assert.InDelta(t, (l0+l1)/2, CrossEntropy(logits, target, CrossEntropyOptions{}).Value.Item(), 1e-12)
	assert.InDelta(t, l0+l1, CrossEntropy(logits, target, CrossEntropyOptions{Reduction: ReduceSum}).Value.Item(), 1e-12)
	assert.InDeltaSlice(t, []float64{l0, l1}, CrossEntropy(logits, target, CrossEntropyOptions{Reduction: ReduceNone}).Value.Values(), 1e-12)
	// label smoothing: (1-e)·nll + (e/C)·Σ_c -logp[c]
	e := 0.3
	s0, s1 := 3*lse0-2, 3*lse1-4
	want := ((1-e)*l0 + e/3*s0 + (1-e)*l1 + e/3*s1) / 2
	assert.InDelta(t, want, CrossEntropy(logits, target, CrossEntropyOptions{LabelSmoothing: e}).Value.Item(), 1e-12)

	p := autograd.Constant(tensor.FromFloat64([]float64{1, 2, 3}, 3))
	q := autograd.Constant(tensor.FromFloat64([]float64{1, 0, 0}, 3))
	assert.InDelta(t, 13.0/3, MSE(p, q, ReduceMean).Value.Item(), 1e-12)
	assert.InDelta(t, 13.0, MSE(p, q, ReduceSum).Value.Item(), 1e-12)

	x := autograd.Leaf(tensor.FromFloat64([]float64{0, 100, -100, 1}, 4))
	tg := autograd.Constant(tensor.FromFloat64([]float64{1, 0, 0, 1}, 4))
	bce := BCEWithLogits(x, tg, ReduceNone)
	assert.InDeltaSlice(t, []float64{math.Log(2), 100, 0, math.Log1p(math.Exp(-1))}, bce.Value.Values(), 1e-12)
	require.NoError(t, autograd.Backward(autograd.SumAll(bce)))
	assert.InDeltaSlice(t, []float64{-0.5, 1, 0, 1/(1+math.Exp(-1)) - 1}, x.Grad.Values(), 1e-12)

	assert.Equal(t, "mean", ReduceMean.String())
	assert.Equal(t, "sum", ReduceSum.String())
	assert.Equal(t, "none", ReduceNone.String())
	assert.Equal(t, "Reduction(7)", Reduction(7).String())
}

func TestPanics(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 1))
	v := func(shape ...int) *autograd.Var { return autograd.Constant(tensor.Zeros(shape...)) }
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"Linear input", func() { NewLinear(4, 3, true, rng).Forward(v(2, 5)) },
			"layers: Linear(4→3): input shape [2 5] does not end in 4 (weight [3 4])"},
		{"Conv2d input", func() { NewConv2d(2, 3, 3, 3, Conv2dConfig{}, rng).Forward(v(1, 3, 5, 5)) },
			"layers: Conv2d(2→3): input shape [1 3 5 5], expected N×2×H×W (weight [3 2 3 3])"},
		{"Conv2d groups", func() { NewConv2d(3, 4, 3, 3, Conv2dConfig{Groups: 2}, rng) },
			"layers: NewConv2d(in 3, out 4, kernel 3×3, {StrideH:0 StrideW:0 PadH:0 PadW:0 DilH:0 DilW:0 Groups:2 NoBias:false}): invalid configuration (sizes must be positive, channels divisible by groups)"},
		{"pool padding", func() { NewMaxPool2d(2, 2, Pool2dConfig{PadH: 2}) },
			"layers: NewMaxPool2d(kernel 2×2, {StrideH:0 StrideW:0 PadH:2 PadW:0 ExcludePad:false}): invalid configuration (padding must be at most half the kernel)"},
		{"pool input", func() { NewAvgPool2d(2, 2, Pool2dConfig{}).Forward(v(3, 4)) },
			"layers: AvgPool2d: input shape [3 4], expected N×C×H×W"},
		{"adaptive pool too small", func() { NewAdaptiveAvgPool2d(3, 3).Forward(v(1, 1, 2, 5)) },
			"layers: AdaptiveAvgPool2d(3, 3): input shape [1 1 2 5] is smaller than the output"},
		{"BatchNorm2d channels", func() { NewBatchNorm2d(3, BatchNormConfig{}).Forward(v(2, 4, 2, 2)) },
			"layers: BatchNorm2d(3): input shape [2 4 2 2], expected N×3×H×W"},
		{"BatchNorm1d rank", func() { NewBatchNorm1d(3, BatchNormConfig{}).Forward(v(2, 3, 2, 2)) },
			"layers: BatchNorm1d(3): input shape [2 3 2 2], expected N×3 or N×3×L"},
		{"BatchNorm one value per channel", func() { NewBatchNorm1d(3, BatchNormConfig{}).Forward(v(1, 3)) },
			"layers: BatchNorm1d(3): input shape [1 3] has 1 value per channel; training needs more than 1"},
		{"LayerNorm input", func() { NewLayerNorm([]int{3, 4}, LayerNormConfig{}).Forward(v(2, 4, 3)) },
			"layers: LayerNorm([3 4]): input shape [2 4 3] does not end in [3 4]"},
		{"Residual shape", func() { NewResidual(NewLinear(3, 2, true, rng)).Forward(v(1, 3)) },
			"layers: Residual: inner layer maps shape [1 3] to [1 2]; they must be equal"},
		{"Embedding index", func() { NewEmbedding(10, 4, rng).Lookup(tensor.FromInt64([]int64{1, 12, 3}, 3)) },
			"layers: Embedding(10, 4): index 12 at position 1 of indices [3] is out of range [0, 10)"},
		{"Embedding float indices", func() { NewEmbedding(10, 4, rng).Forward(v(3)) },
			"layers: Embedding(10, 4): indices must be int64, found float32 [3]"},
		{"CrossEntropy target too large", func() {
			CrossEntropy(v(3, 5), tensor.FromInt64([]int64{0, 4, 5}, 3), CrossEntropyOptions{})
		}, "layers: CrossEntropy: target value 5 at index 2 is out of range: input [3 5] has C = 5 classes, expected 0 ≤ target < 5"},
		{"CrossEntropy negative target", func() {
			CrossEntropy(v(2, 2, 3), tensor.FromInt64([]int64{0, 1, -1, 0, 0, 0}, 2, 3), CrossEntropyOptions{})
		}, "layers: CrossEntropy: target value -1 at index 2 is out of range: input [2 2 3] has C = 2 classes, expected 0 ≤ target < 2"},
		{"NLL target shape", func() { NLL(v(3, 5), tensor.FromInt64([]int64{0, 1}, 2), ReduceMean) },
			"layers: NLL: target int64 [2] does not match input [3 5]: expected int64 [3]"},
		{"CrossEntropy float target", func() { CrossEntropy(v(3, 5), tensor.Zeros(3), CrossEntropyOptions{}) },
			"layers: CrossEntropy: target float32 [3] does not match input [3 5]: expected int64 [3]"},
		{"CrossEntropy rank", func() { CrossEntropy(v(5), tensor.FromInt64([]int64{1}), CrossEntropyOptions{}) },
			"layers: CrossEntropy: input shape [5], expected N×C or N×C×d1×…"},
		{"label smoothing", func() {
			CrossEntropy(v(1, 2), tensor.FromInt64([]int64{1}, 1), CrossEntropyOptions{LabelSmoothing: 1.5})
		}, "layers: CrossEntropy: label smoothing 1.5 outside [0, 1]"},
		{"unknown reduction", func() { MSE(v(2), v(2), Reduction(9)) }, "layers: MSE: unknown reduction Reduction(9)"},
		{"MSE shapes", func() { MSE(v(2, 3), v(3, 2), ReduceMean) },
			"layers: MSE: input shape [2 3] and target shape [3 2] differ"},
		{"BCEWithLogits shapes", func() { BCEWithLogits(v(4), v(1), ReduceMean) },
			"layers: BCEWithLogits: input shape [4] and target shape [1] differ"},
		{"Dropout p", func() { NewDropout(1.5, rng) }, "layers: NewDropout(1.5): p must be in [0, 1]"},
		{"Dropout rng", func() { NewDropout(0.5, nil) }, "layers: NewDropout: nil *rand.Rand"},
		{"Sequential nil", func() { NewSequential(nil) }, "layers: Sequential: layer 0 is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.PanicsWithValue(t, tt.want, tt.f)
		})
	}
}
