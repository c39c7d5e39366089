package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/internal/golden"
	"github.com/hora-dl/hora/tensor"
)

// attentionFixture is one layer case of scripts/golden/attention_gen.py.
type attentionFixture struct {
	Case       string                    `json:"case"`
	Config     map[string]any            `json:"config"`
	Params     map[string]*golden.Tensor `json:"params"`
	Input      *golden.Tensor            `json:"input"`
	Output     *golden.Tensor            `json:"output"`
	GradOutput *golden.Tensor            `json:"grad_output"`
	GradInput  *golden.Tensor            `json:"grad_input"`
}

func TestAttentionGolden(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file  string
		build func(cfg map[string]any, rng *rand.Rand) Layer
	}{
		{"mha.json", buildMHA},
		{"mha_causal.json", buildMHA},
		{"mha_causal_nobias.json", buildMHA},
		{"encoder_post_relu.json", buildEncoderLayer},
		{"encoder_pre_gelu_causal.json", buildEncoderLayer},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			var f attentionFixture
			golden.Read(t, filepath.Join("testdata", "golden", "attention", c.file), &f)
			m := c.build(f.Config, rand.New(rand.NewPCG(1, 2)))
			sd := map[string]*tensor.Tensor{}
			for name, p := range f.Params {
				sd[name] = p.MustTensor(t)
			}
			require.NoError(t, LoadStateDict(m, sd))

			x := autograd.Leaf(f.Input.MustTensor(t))
			out := m.Forward(x)
			golden.AssertClose(t, f.Output, out.Value, 1e-4, 1e-5, "output")
			loss := autograd.SumAll(autograd.Mul(out, autograd.Constant(f.GradOutput.MustTensor(t))))
			require.NoError(t, autograd.Backward(loss))
			golden.AssertClose(t, f.GradInput, x.Grad, 1e-3, 1e-5, "input gradient")
		})
	}
}

func buildMHA(cfg map[string]any, rng *rand.Rand) Layer {
	return NewMultiHeadAttention(int(cfg["dim"].(float64)), int(cfg["heads"].(float64)),
		AttentionConfig{Causal: cfg["causal"].(bool), NoBias: !cfg["bias"].(bool)}, rng)
}

func buildEncoderLayer(cfg map[string]any, rng *rand.Rand) Layer {
	return NewTransformerEncoderLayer(int(cfg["dim"].(float64)), int(cfg["heads"].(float64)), EncoderLayerConfig{
		FF:         int(cfg["ff"].(float64)),
		Activation: cfg["activation"].(string),
		NormFirst:  cfg["norm_first"].(bool),
		Causal:     cfg["causal"].(bool),
	}, rng)
}

func TestAttentionParameterNames(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 1))
	names := func(m Module) []string {
		var out []string
		for _, p := range m.Parameters() {
			out = append(out, fmt.Sprintf("%s%v", p.Name, p.Shape()))
		}
		return out
	}
	assert.Equal(t, []string{"in_proj_weight[24 8]", "in_proj_bias[24]", "out_proj.weight[8 8]", "out_proj.bias[8]"},
		names(NewMultiHeadAttention(8, 2, AttentionConfig{}, rng)))
	assert.Equal(t, []string{"in_proj_weight[24 8]", "out_proj.weight[8 8]"},
		names(NewMultiHeadAttention(8, 2, AttentionConfig{NoBias: true}, rng)))
	assert.Equal(t, []string{
		"self_attn.in_proj_weight[24 8]", "self_attn.in_proj_bias[24]", "self_attn.out_proj.weight[8 8]", "self_attn.out_proj.bias[8]",
		"linear1.weight[32 8]", "linear1.bias[32]", "linear2.weight[8 32]", "linear2.bias[8]",
		"norm1.weight[8]", "norm1.bias[8]", "norm2.weight[8]", "norm2.bias[8]",
	}, names(NewTransformerEncoderLayer(8, 2, EncoderLayerConfig{}, rng)))
}

func TestAttentionInit(t *testing.T) {
	t.Parallel()
	a := NewMultiHeadAttention(64, 4, AttentionConfig{}, rand.New(rand.NewPCG(3, 3)))
	ps := a.Parameters()
	bound := math.Sqrt(6.0 / (64 + 192)) // xavier_uniform on 192×64
	inW := ps[0].Value.Values()
	lo, hi := inW[0], inW[0]
	for _, v := range inW {
		lo, hi = min(lo, v), max(hi, v)
	}
	assert.GreaterOrEqual(t, lo, -bound)
	assert.LessOrEqual(t, hi, bound)
	assert.Less(t, lo, -0.9*bound, "xavier range not used")
	for _, p := range []int{1, 3} {
		for _, v := range ps[p].Value.Values() {
			require.Zero(t, v, "%s must start at zero", ps[p].Name)
		}
	}
	outBound := 1 / math.Sqrt(64.0) // kaiming_uniform(a=√5) on 64 inputs
	for _, v := range ps[2].Value.Values() {
		require.LessOrEqual(t, math.Abs(v), outBound)
	}
}

func TestAttentionGradCheck(t *testing.T) {
	t.Parallel()
	for _, causal := range []bool{false, true} {
		t.Run(fmt.Sprintf("causal=%v", causal), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(5, 5))
			a := NewMultiHeadAttention(4, 2, AttentionConfig{Causal: causal}, rng)
			Cast(a, device.Float64)
			ps := a.Parameters()
			for _, p := range ps { // non-zero biases
				p.Value = tensor.RandNormal(rng, 0, 0.5, p.Shape()...).Cast(device.Float64)
			}
			inputs := []*tensor.Tensor{tensor.RandNormal(rng, 0, 1, 2, 3, 4).Cast(device.Float64)}
			for _, p := range ps {
				inputs = append(inputs, p.Value)
			}
			err := autograd.GradCheck(func(xs []*autograd.Var) *autograd.Var {
				for i, p := range ps {
					p.Var = xs[i+1]
				}
				return a.Forward(xs[0])
			}, inputs, autograd.GradCheckOptions{})
			assert.NoError(t, err)
		})
	}
}

func TestAttentionCausal(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	layers := map[string]Layer{
		"attention":     NewMultiHeadAttention(8, 2, AttentionConfig{Causal: true}, rng),
		"encoder layer": NewTransformerEncoderLayer(8, 2, EncoderLayerConfig{Causal: true, NormFirst: true, Activation: "gelu"}, rng),
	}
	for name, l := range layers {
		t.Run(name, func(t *testing.T) {
			const T = 6
			x := tensor.RandNormal(rng, 0, 1, 2, T, 8)
			base := l.Forward(autograd.NoGrad(autograd.Constant(x))).Value
			for at := 0; at < T-1; at++ {
				changed := x.Clone()
				changed.Slice(1, at+1, T).CopyFrom(tensor.RandNormal(rng, 0, 3, 2, T-at-1, 8))
				out := l.Forward(autograd.NoGrad(autograd.Constant(changed))).Value
				require.True(t, tensor.AllClose(base.Slice(1, 0, at+1), out.Slice(1, 0, at+1), 0, 0),
					"changing positions %d.. changed the output at positions ≤ %d", at+1, at)
				assert.False(t, tensor.AllClose(base.Slice(1, at+1, T), out.Slice(1, at+1, T), 1e-3, 1e-3),
					"the later positions did not change")
			}
		})
	}
}

func TestCausalMask(t *testing.T) {
	t.Parallel()
	inf := math.Inf(-1)
	assert.Equal(t, []float64{0, inf, inf, 0, 0, inf, 0, 0, 0}, CausalMask(3, device.Float32, tensor.CPU()).Values())
}

func TestAttentionDropout(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	a := NewMultiHeadAttention(8, 2, AttentionConfig{Dropout: 0.5}, rng)
	x := autograd.Constant(tensor.RandNormal(rng, 0, 1, 2, 5, 8))
	y1, y2 := a.Forward(x).Value, a.Forward(x).Value
	assert.False(t, tensor.AllClose(y1, y2, 1e-6, 1e-6), "training mode must drop attention weights")
	Eval(a)
	y1, y2 = a.Forward(x).Value, a.Forward(x).Value
	assert.True(t, tensor.AllClose(y1, y2, 0, 0), "evaluation mode must be deterministic")
}

func TestAttentionPanics(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 1))
	cases := []struct {
		name string
		f    func()
		msg  string
	}{
		{"heads do not divide dim", func() { NewMultiHeadAttention(10, 3, AttentionConfig{}, rng) },
			"layers: NewMultiHeadAttention(10, 3): dim must be a positive multiple of the positive number of heads"},
		{"wrong input width", func() {
			NewMultiHeadAttention(8, 2, AttentionConfig{}, rng).Forward(autograd.Constant(tensor.Zeros(2, 3, 4)))
		}, "layers: MultiHeadAttention(8, 2 heads): input shape [2 3 4], expected N×T×8"},
		{"unknown activation", func() { NewTransformerEncoderLayer(8, 2, EncoderLayerConfig{Activation: "tanh"}, rng) },
			`layers: NewTransformerEncoderLayer: activation "tanh", expected relu or gelu`},
	}
	for _, c := range cases {
		assert.PanicsWithValue(t, c.msg, c.f, c.name)
	}
}
