package models_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/internal/golden"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/tensor"
)

func tinyClassifierConfig() models.TransformerClassifierConfig {
	return models.TransformerClassifierConfig{InFeatures: 16, SeqLen: 4, Dim: 8, Heads: 2, Layers: 2, FF: 16, Classes: 3, PatchSize: 4}
}

func tinyCharLMConfig() models.CharLMConfig {
	return models.CharLMConfig{Vocab: 7, Context: 6, Dim: 8, Heads: 2, Layers: 2, FF: 16}
}

func TestTransformerClassifierShapes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		cfg   models.TransformerClassifierConfig
		input []int
	}{
		{"7×7 patches", models.TransformerClassifierSmallConfig(10), []int{3, 1, 28, 28}},
		{"4×4 patches of 3 channels", models.TransformerClassifierConfig{InFeatures: 48, SeqLen: 4, Dim: 8, Heads: 2, Layers: 1, FF: 8, Classes: 5, PatchSize: 4}, []int{2, 3, 8, 8}},
		{"rows", models.TransformerClassifierConfig{InFeatures: 28, SeqLen: 28, Dim: 8, Heads: 2, Layers: 1, FF: 8, Classes: 10}, []int{2, 1, 28, 28}},
		{"rows of 2 channels", models.TransformerClassifierConfig{InFeatures: 10, SeqLen: 4, Dim: 8, Heads: 1, Layers: 1, FF: 8, Classes: 2}, []int{2, 2, 4, 5}},
		{"tokens", models.TransformerClassifierConfig{InFeatures: 3, SeqLen: 5, Dim: 8, Heads: 4, Layers: 1, FF: 8, Classes: 2, PatchSize: 7}, []int{4, 5, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(1, 1))
			m, err := models.NewTransformerClassifier(c.cfg, rng)
			require.NoError(t, err)
			x := autograd.Constant(tensor.RandNormal(rng, 0, 1, c.input...))
			y := m.Forward(x)
			assert.Equal(t, []int{c.input[0], c.cfg.Classes}, y.Shape())
			loss := layers.CrossEntropy(y, tensor.FromInt64(make([]int64, c.input[0]), c.input[0]), layers.CrossEntropyOptions{})
			require.NoError(t, autograd.Backward(loss))
			for _, p := range m.Parameters() {
				require.NotNil(t, p.Grad, "%s has no gradient", p.Name)
			}
		})
	}
}

// TestTransformerClassifierPatches checks the order of the patch
// features: with PatchSize 2 on a 1×2×4 image holding 0…7, the two tokens
// are [0 1 4 5] and [2 3 6 7].
func TestTransformerClassifierPatches(t *testing.T) {
	t.Parallel()
	cfg := models.TransformerClassifierConfig{InFeatures: 4, SeqLen: 2, Dim: 4, Heads: 1, Layers: 1, FF: 4, Classes: 2, PatchSize: 2}
	m, err := models.NewTransformerClassifier(cfg, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	img := tensor.FromFloat32([]float32{0, 1, 2, 3, 4, 5, 6, 7}, 1, 1, 2, 4)
	tokens := tensor.FromFloat32([]float32{0, 1, 4, 5, 2, 3, 6, 7}, 1, 2, 4)
	a := m.Forward(autograd.Constant(img)).Value
	b := m.Forward(autograd.Constant(tokens)).Value
	assert.Equal(t, b.Values(), a.Values())
}

func TestTransformerClassifierNames(t *testing.T) {
	t.Parallel()
	m, err := models.NewTransformerClassifier(tinyClassifierConfig(), rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	var names []string
	for _, p := range m.Parameters() {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"embed.weight", "embed.bias", "pos_emb"}, names[:3])
	assert.Contains(t, names, "layers.1.self_attn.in_proj_weight")
	assert.Equal(t, []string{"norm.weight", "norm.bias", "head.weight", "head.bias"}, names[len(names)-4:])
}

func TestNewTransformerClassifierErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(*models.TransformerClassifierConfig)
		msg  string
	}{
		{"dim", func(c *models.TransformerClassifierConfig) { c.Dim = 0 }, "models: TransformerClassifierConfig.Dim = 0, expected > 0"},
		{"classes", func(c *models.TransformerClassifierConfig) { c.Classes = -1 }, "models: TransformerClassifierConfig.Classes = -1, expected > 0"},
		{"heads", func(c *models.TransformerClassifierConfig) { c.Heads = 3 }, "models: TransformerClassifierConfig.Dim = 8 is not a multiple of Heads = 3"},
		{"dropout", func(c *models.TransformerClassifierConfig) { c.Dropout = 1 }, "models: TransformerClassifierConfig.Dropout = 1, expected a probability in [0, 1)"},
		{"patch", func(c *models.TransformerClassifierConfig) { c.PatchSize = -2 }, "models: TransformerClassifierConfig.PatchSize = -2, expected ≥ 0 (0: one token per image row)"},
	}
	for _, c := range cases {
		cfg := tinyClassifierConfig()
		c.edit(&cfg)
		_, err := models.NewTransformerClassifier(cfg, rand.New(rand.NewPCG(1, 1)))
		assert.EqualError(t, err, c.msg, c.name)
	}
}

func TestTransformerClassifierBadInput(t *testing.T) {
	t.Parallel()
	m, err := models.NewTransformerClassifier(tinyClassifierConfig(), rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	assert.PanicsWithValue(t,
		"models: TransformerClassifier: input shape [2 1 8 12], expected images N×C×H×W with H and W multiples of 4, (H/4)·(W/4) = 4 and C·16 = 16",
		func() { m.Forward(autograd.Constant(tensor.Zeros(2, 1, 8, 12))) })
	assert.PanicsWithValue(t, "models: TransformerClassifier: input shape [2 16], expected tokens N×4×16",
		func() { m.Forward(autograd.Constant(tensor.Zeros(2, 16))) })
}

// charLMFixture is the CharLM case of scripts/golden/attention_gen.py.
type charLMFixture struct {
	Config  map[string]int            `json:"config"`
	Params  map[string]*golden.Tensor `json:"params"`
	Input   *golden.Tensor            `json:"input"`
	Targets *golden.Tensor            `json:"targets"`
	Output  *golden.Tensor            `json:"output"`
	Loss    float64                   `json:"loss"`
}

func TestCharLMGolden(t *testing.T) {
	t.Parallel()
	var f charLMFixture
	golden.Read(t, filepath.Join("..", "layers", "testdata", "golden", "attention", "charlm.json"), &f)
	c := f.Config
	m, err := models.NewCharLM(models.CharLMConfig{Vocab: c["vocab"], Context: c["context"], Dim: c["dim"], Heads: c["heads"], Layers: c["layers"], FF: c["ff"]},
		rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	sd := map[string]*tensor.Tensor{}
	for name, p := range f.Params {
		sd[name] = p.MustTensor(t)
	}
	require.NoError(t, layers.LoadStateDict(m, sd), "the state dict of the PyTorch module must load unchanged")
	layers.Eval(m)
	logits := m.Forward(autograd.NoGrad(autograd.Constant(f.Input.MustTensor(t))))
	golden.AssertClose(t, f.Output, logits.Value, 1e-4, 1e-5, "logits")
	loss := m.Loss(logits, f.Targets.MustTensor(t))
	assert.InDelta(t, f.Loss, loss.Value.Item(), 1e-5*f.Loss)
	// Float ids, as data.TokenWindows batches hold them, give the same.
	floatLogits := m.Forward(autograd.NoGrad(autograd.Constant(f.Input.MustTensor(t).Cast(device.Float32))))
	assert.Equal(t, logits.Value.Values(), floatLogits.Value.Values())
	assert.Equal(t, loss.Value.Item(), m.Loss(logits, f.Targets.MustTensor(t).Cast(device.Float32)).Value.Item())
}

func TestCharLMCausal(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(2, 2))
	m, err := models.NewCharLM(tinyCharLMConfig(), rng)
	require.NoError(t, err)
	ids := []int64{1, 5, 2, 6, 0, 3}
	logits := func(ids []int64) *tensor.Tensor {
		return m.Forward(autograd.NoGrad(autograd.Constant(tensor.FromInt64(ids, 1, len(ids))))).Value
	}
	base := logits(ids)
	assert.Equal(t, []int{1, 6, 7}, base.Shape())
	for at := 1; at < len(ids); at++ {
		changed := slices.Clone(ids)
		changed[at] = (changed[at] + 1) % 7
		out := logits(changed)
		require.True(t, tensor.AllClose(base.Slice(1, 0, at), out.Slice(1, 0, at), 0, 0), "token %d changed earlier logits", at)
		assert.False(t, tensor.AllClose(base.Slice(1, at, at+1), out.Slice(1, at, at+1), 1e-6, 1e-6), "token %d did not change its own logits", at)
	}
}

func TestCharLMTrainStep(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	cfg := tinyCharLMConfig()
	cfg.Dropout = 0.1
	m, err := models.NewCharLM(cfg, rng)
	require.NoError(t, err)
	batch := tensor.FromFloat32([]float32{1, 2, 3, 4, 5, 6, 0, 6, 5, 4, 3, 2, 1, 0}, 2, 7)
	x, y := models.SplitWindows(batch)
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 6, 5, 4, 3, 2, 1}, x.Int64s())
	assert.Equal(t, []int64{2, 3, 4, 5, 6, 0, 5, 4, 3, 2, 1, 0}, y.Int64s())
	loss := m.Loss(m.Forward(autograd.Constant(x)), y)
	assert.InDelta(t, math.Log(7), loss.Value.Item(), 0.5, "an untrained model is near uniform")
	require.NoError(t, autograd.Backward(loss))
	for _, p := range m.Parameters() {
		require.NotNil(t, p.Grad, "%s has no gradient", p.Name)
	}
}

func TestNewCharLMErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		edit func(*models.CharLMConfig)
		msg  string
	}{
		{func(c *models.CharLMConfig) { c.Vocab = 0 }, "models: CharLMConfig.Vocab = 0, expected > 0"},
		{func(c *models.CharLMConfig) { c.Context = -3 }, "models: CharLMConfig.Context = -3, expected > 0"},
		{func(c *models.CharLMConfig) { c.Heads = 3 }, "models: CharLMConfig.Dim = 8 is not a multiple of Heads = 3"},
		{func(c *models.CharLMConfig) { c.Dropout = -0.1 }, "models: CharLMConfig.Dropout = -0.1, expected a probability in [0, 1)"},
	}
	for _, c := range cases {
		cfg := tinyCharLMConfig()
		c.edit(&cfg)
		_, err := models.NewCharLM(cfg, rand.New(rand.NewPCG(1, 1)))
		assert.EqualError(t, err, c.msg)
	}
	m, err := models.NewCharLM(tinyCharLMConfig(), rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	assert.PanicsWithValue(t, "models: CharLM: input shape [1 7], expected N×T token ids with 1 ≤ T ≤ 6 (the context)",
		func() { m.Forward(autograd.Constant(tensor.FromInt64(make([]int64, 7), 1, 7))) })
}

// lastLogits returns the model's logits for the token after ctx (cropped
// to the context).
func lastLogits(m *models.CharLM, ctx []int) []float64 {
	ctx = ctx[max(0, len(ctx)-m.Config().Context):]
	ids := make([]int64, len(ctx))
	for i, id := range ctx {
		ids[i] = int64(id)
	}
	out := m.Forward(autograd.NoGrad(autograd.Constant(tensor.FromInt64(ids, 1, len(ids))))).Value
	return out.Slice(1, len(ids)-1, len(ids)).Reshape(-1).Values()
}

func TestCharLMGenerate(t *testing.T) {
	t.Parallel()
	m, err := models.NewCharLM(tinyCharLMConfig(), rand.New(rand.NewPCG(4, 4)))
	require.NoError(t, err)
	layers.Eval(m)
	prompt := []int{1, 2, 3}
	const n = 10 // longer than the context: cropping is exercised

	sampled := m.Generate(prompt, n, models.SampleOptions{Temperature: 1}, rand.New(rand.NewPCG(9, 9)))
	again := m.Generate(prompt, n, models.SampleOptions{Temperature: 1}, rand.New(rand.NewPCG(9, 9)))
	assert.Len(t, sampled, n)
	assert.Equal(t, sampled, again, "the same seed must give the same tokens")

	greedy := m.Generate(prompt, n, models.SampleOptions{}, nil)
	ctx := slices.Clone(prompt)
	for i, tok := range greedy {
		logits := lastLogits(m, ctx)
		want := 0
		for j, v := range logits {
			if v > logits[want] {
				want = j
			}
		}
		require.Equal(t, want, tok, "greedy token %d is not the argmax", i)
		ctx = append(ctx, tok)
	}
	top1 := m.Generate(prompt, n, models.SampleOptions{Temperature: 1.5, TopK: 1}, rand.New(rand.NewPCG(5, 5)))
	assert.Equal(t, greedy, top1, "top-1 sampling is greedy")

	const k = 3
	for seed := range uint64(5) {
		got := m.Generate(prompt, n, models.SampleOptions{Temperature: 2, TopK: k}, rand.New(rand.NewPCG(seed, 1)))
		ctx := slices.Clone(prompt)
		for i, tok := range got {
			logits := lastLogits(m, ctx)
			larger := 0
			for _, v := range logits {
				if v > logits[tok] {
					larger++
				}
			}
			require.Less(t, larger, k, "seed %d, token %d (%d) is outside the top %d of %v", seed, i, tok, k, logits)
			ctx = append(ctx, tok)
		}
	}
}

func TestSampleOptionsValidate(t *testing.T) {
	t.Parallel()
	assert.NoError(t, models.SampleOptions{Temperature: 0.8, TopK: 5}.Validate())
	assert.EqualError(t, models.SampleOptions{Temperature: -1}.Validate(),
		"models: SampleOptions.Temperature = -1, expected a finite value ≥ 0 (0: greedy)")
	assert.EqualError(t, models.SampleOptions{TopK: -2}.Validate(), "models: SampleOptions.TopK = -2, expected ≥ 0 (0: all tokens)")
	m, err := models.NewCharLM(tinyCharLMConfig(), rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	assert.PanicsWithValue(t, "models: CharLM.Generate: empty prompt, expected at least one token id",
		func() { m.Generate(nil, 1, models.SampleOptions{}, nil) })
}

// roundTrip exports m for example x, re-imports it and compares the
// outputs for x and for another batch size.
func roundTrip(t *testing.T, m layers.Layer, x, other *tensor.Tensor) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, onnx.Export(m, []*tensor.Tensor{x}, &buf, onnx.ExportOptions{}))
	im, err := onnx.Import(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	for _, in := range []*tensor.Tensor{x, other} {
		want := m.Forward(autograd.NoGrad(autograd.Constant(in))).Value
		outs, err := im.Run(autograd.Constant(in))
		require.NoError(t, err)
		require.Len(t, outs, 1)
		require.Equal(t, want.Shape(), outs[0].Value.Shape())
		assert.True(t, tensor.AllClose(want, outs[0].Value, 1e-5, 1e-6), "batch %d: re-imported model differs", in.Dim(0))
	}
}

func TestTransformerClassifierONNX(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(6, 6))
	m, err := models.NewTransformerClassifier(tinyClassifierConfig(), rng)
	require.NoError(t, err)
	layers.Eval(m)
	roundTrip(t, m, tensor.RandNormal(rng, 0, 1, 2, 1, 8, 8), tensor.RandNormal(rng, 0, 1, 5, 1, 8, 8))
}

func TestCharLMONNX(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	m, err := models.NewCharLM(tinyCharLMConfig(), rng)
	require.NoError(t, err)
	layers.Eval(m)
	ids := func(n int) *tensor.Tensor {
		v := make([]int64, n*5)
		for i := range v {
			v[i] = rng.Int64N(7)
		}
		return tensor.FromInt64(v, n, 5)
	}
	roundTrip(t, m, ids(2), ids(3))
}

// BenchmarkTransformerClassifierSmall times one training step's forward
// and backward pass of the small preset at batch 128 (Fashion-MNIST).
func BenchmarkTransformerClassifierSmall(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	m, err := models.NewTransformerClassifier(models.TransformerClassifierSmallConfig(10), rng)
	require.NoError(b, err)
	x := autograd.Constant(tensor.RandNormal(rng, 0, 1, 128, 1, 28, 28))
	y := tensor.FromInt64(make([]int64, 128), 128)
	b.ResetTimer()
	for range b.N {
		loss := layers.CrossEntropy(m.Forward(x), y, layers.CrossEntropyOptions{})
		if err := autograd.Backward(loss); err != nil {
			b.Fatal(err)
		}
		for _, p := range m.Parameters() {
			p.ZeroGrad()
		}
	}
	b.ReportMetric(float64(128*b.N)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkCharLMSmall times one training step's forward and backward
// pass of the small preset at batch 32 × 128 tokens, with the preset's
// dropout and without any.
func BenchmarkCharLMSmall(b *testing.B) {
	for _, dropout := range []float64{models.CharLMSmallConfig(1).Dropout, 0} {
		b.Run(fmt.Sprintf("dropout=%g", dropout), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			cfg := models.CharLMSmallConfig(96)
			cfg.Dropout = dropout
			m, err := models.NewCharLM(cfg, rng)
			require.NoError(b, err)
			ids := make([]float32, 32*129)
			for i := range ids {
				ids[i] = float32(rng.IntN(96))
			}
			x, y := models.SplitWindows(tensor.FromFloat32(ids, 32, 129))
			b.ResetTimer()
			for range b.N {
				loss := m.Loss(m.Forward(autograd.Constant(x)), y)
				if err := autograd.Backward(loss); err != nil {
					b.Fatal(err)
				}
				for _, p := range m.Parameters() {
					p.ZeroGrad()
				}
			}
			b.ReportMetric(float64(32*128*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// ExampleNewTransformerClassifier builds the small Vision-Transformer
// preset for Fashion-MNIST and classifies a batch of two images.
func ExampleNewTransformerClassifier() {
	cfg := models.TransformerClassifierSmallConfig(10)
	net, err := models.NewTransformerClassifier(cfg, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		panic(err)
	}
	images := tensor.Zeros(2, 1, 28, 28)
	logits := net.Forward(autograd.NoGrad(autograd.Constant(images)))
	fmt.Println(logits.Value.Shape(), cfg.SeqLen, "tokens of", cfg.InFeatures, "features")
	// Output: [2 10] 16 tokens of 49 features
}

// ExampleCharLM_Generate continues a prompt with an (untrained) character
// model: greedily, then by sampling from the 3 most likely characters.
func ExampleCharLM_Generate() {
	vocab := []rune("abc ")
	m, err := models.NewCharLM(models.CharLMConfig{Vocab: len(vocab), Context: 16, Dim: 16, Heads: 2, Layers: 1, FF: 32},
		rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		panic(err)
	}
	layers.Eval(m) // no dropout while generating
	greedy := m.Generate([]int{0, 1}, 8, models.SampleOptions{}, nil)
	sampled := m.Generate([]int{0, 1}, 8, models.SampleOptions{Temperature: 0.8, TopK: 3}, rand.New(rand.NewPCG(2, 2)))
	fmt.Println(len(greedy), len(sampled))
	for _, id := range sampled {
		if id < 0 || id >= len(vocab) {
			fmt.Println("bad id", id)
		}
	}
	// Output: 8 8
}
