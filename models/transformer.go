package models

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/tensor"
)

// TransformerClassifierConfig describes a TransformerClassifier.
type TransformerClassifierConfig struct {
	InFeatures int     // features per token: C·PatchSize² for images cut into patches, C·W for rows
	SeqLen     int     // tokens per sample: (H/PatchSize)·(W/PatchSize), or H for rows
	Dim        int     // width of the tokens inside the encoder
	Heads      int     // attention heads; must divide Dim
	Layers     int     // encoder blocks
	FF         int     // width of the blocks' feed-forward hidden layer
	Classes    int     // outputs
	Dropout    float64 // dropout probability in [0, 1) after the embedding and inside the blocks
	PatchSize  int     // side of the square image patches; 0 makes each image row a token
}

// TransformerClassifierSmallConfig returns the preset for 1×28×28 images
// (Fashion-MNIST): 7×7 patches (16 tokens of 49 features), width 64, 4
// heads, 2 blocks, feed-forward 128, no dropout: about 72 thousand
// parameters. A forward and backward pass at batch 128 takes about 75 ms
// on 2 cores, so an epoch of 60,000 images takes under a minute.
func TransformerClassifierSmallConfig(classes int) TransformerClassifierConfig {
	return TransformerClassifierConfig{
		InFeatures: 49, SeqLen: 16, Dim: 64, Heads: 4, Layers: 2, FF: 128, Classes: classes, PatchSize: 7,
	}
}

// TransformerClassifier is a Vision-Transformer-style classifier: a
// linear embedding of the tokens, a learned positional embedding, pre-norm
// encoder blocks (GELU feed-forward), a final LayerNorm, the mean of the
// tokens (mean pooling rather than a CLS token: it needs no batch-sized
// Expand, so the model exports to ONNX with a dynamic batch) and a linear
// head.
//
// Forward takes images N×C×H×W, cut into PatchSize×PatchSize patches
// flattened in C, row, column order (or into rows of C·W values when
// PatchSize is 0), or token sequences N×SeqLen×InFeatures directly. It
// returns N×Classes logits.
//
// Parameters: "embed.weight", "embed.bias" (Dim×InFeatures, Dim),
// "pos_emb" (1×SeqLen×Dim), "layers.<i>.…" (layers.TransformerEncoderLayer
// names), "norm.weight", "norm.bias", "head.weight", "head.bias".
type TransformerClassifier struct {
	cfg    TransformerClassifierConfig
	embed  *layers.Linear
	posEmb *autograd.Param
	drop   *layers.Dropout
	blocks []*layers.TransformerEncoderLayer
	norm   *layers.LayerNorm
	head   *layers.Linear
}

// NewTransformerClassifier returns a classifier with weights drawn from
// rng: Linear and encoder layers as in PyTorch, the positional embedding
// from N(0, 0.02²). A size that is not positive, Heads not dividing Dim,
// a negative PatchSize or a dropout outside [0, 1) is an error naming the
// field.
func NewTransformerClassifier(cfg TransformerClassifierConfig, rng *rand.Rand) (*TransformerClassifier, error) {
	if err := checkPositive("TransformerClassifierConfig", []namedInt{
		{"InFeatures", cfg.InFeatures}, {"SeqLen", cfg.SeqLen}, {"Dim", cfg.Dim}, {"Heads", cfg.Heads},
		{"Layers", cfg.Layers}, {"FF", cfg.FF}, {"Classes", cfg.Classes},
	}); err != nil {
		return nil, err
	}
	if err := checkAttention("TransformerClassifierConfig", cfg.Dim, cfg.Heads, cfg.Dropout); err != nil {
		return nil, err
	}
	if cfg.PatchSize < 0 {
		return nil, fmt.Errorf("models: TransformerClassifierConfig.PatchSize = %d, expected ≥ 0 (0: one token per image row)", cfg.PatchSize)
	}
	m := &TransformerClassifier{
		cfg:    cfg,
		embed:  layers.Named("embed", layers.NewLinear(cfg.InFeatures, cfg.Dim, true, rng)),
		posEmb: autograd.NewParam("pos_emb", tensor.RandNormal(rng, 0, 0.02, 1, cfg.SeqLen, cfg.Dim)),
		drop:   layers.NewDropout(cfg.Dropout, rng),
	}
	block := layers.EncoderLayerConfig{FF: cfg.FF, Dropout: cfg.Dropout, Activation: "gelu", NormFirst: true}
	for i := range cfg.Layers {
		m.blocks = append(m.blocks, layers.Named(fmt.Sprintf("layers.%d", i), layers.NewTransformerEncoderLayer(cfg.Dim, cfg.Heads, block, rng)))
	}
	m.norm = layers.Named("norm", layers.NewLayerNorm([]int{cfg.Dim}, layers.LayerNormConfig{}))
	m.head = layers.Named("head", layers.NewLinear(cfg.Dim, cfg.Classes, true, rng))
	return m, nil
}

// Config returns the configuration the model was built with.
func (m *TransformerClassifier) Config() TransformerClassifierConfig { return m.cfg }

// Parameters returns the embedding's, the positional embedding, the
// blocks', the final norm's and the head's parameters.
func (m *TransformerClassifier) Parameters() []*autograd.Param {
	ps := append(m.embed.Parameters(), m.posEmb)
	for _, b := range m.blocks {
		ps = append(ps, b.Parameters()...)
	}
	return append(append(ps, m.norm.Parameters()...), m.head.Parameters()...)
}

// Children returns the sub-layers.
func (m *TransformerClassifier) Children() []layers.Module {
	ch := []layers.Module{m.embed, m.drop}
	for _, b := range m.blocks {
		ch = append(ch, b)
	}
	return append(ch, m.norm, m.head)
}

// Forward returns the N×Classes logits for x: images N×C×H×W or tokens
// N×SeqLen×InFeatures. An input whose tokens do not have the configured
// count and size panics with both shapes.
func (m *TransformerClassifier) Forward(x *autograd.Var) *autograd.Var {
	h := m.embed.Forward(m.tokens(x))
	h = m.drop.Forward(autograd.Add(h, m.posEmb.Var))
	for _, b := range m.blocks {
		h = b.Forward(h)
	}
	return m.head.Forward(autograd.Mean(m.norm.Forward(h), 1, false))
}

// tokens turns x into N×SeqLen×InFeatures.
func (m *TransformerClassifier) tokens(x *autograd.Var) *autograd.Var {
	s := x.Shape()
	c := m.cfg
	want := fmt.Sprintf("tokens N×%d×%d", c.SeqLen, c.InFeatures)
	switch len(s) {
	case 3:
		if s[1] == c.SeqLen && s[2] == c.InFeatures {
			return x
		}
	case 4:
		n, ch, ht, wd := s[0], s[1], s[2], s[3]
		if p := c.PatchSize; p > 0 {
			want = fmt.Sprintf("images N×C×H×W with H and W multiples of %d, (H/%d)·(W/%d) = %d and C·%d = %d", p, p, p, c.SeqLen, p*p, c.InFeatures)
			if ht%p == 0 && wd%p == 0 && (ht/p)*(wd/p) == c.SeqLen && ch*p*p == c.InFeatures {
				x = autograd.Reshape(x, n, ch, ht/p, p, wd/p, p)
				x = autograd.Permute(x, 0, 2, 4, 1, 3, 5) // N × rows × columns × C × P × P
				return autograd.Reshape(x, n, c.SeqLen, c.InFeatures)
			}
		} else {
			want = fmt.Sprintf("images N×C×%d×W with C·W = %d", c.SeqLen, c.InFeatures)
			if ht == c.SeqLen && ch*wd == c.InFeatures {
				return autograd.Reshape(autograd.Permute(x, 0, 2, 1, 3), n, ht, ch*wd) // N × rows × (C·W)
			}
		}
	}
	panic(fmt.Sprintf("models: TransformerClassifier: input shape %v, expected %s", s, want))
}

// CharLMConfig describes a CharLM.
type CharLMConfig struct {
	Vocab   int     // tokens in the vocabulary
	Context int     // the longest sequence, the size of the positional embedding
	Dim     int     // width of the token vectors
	Heads   int     // attention heads; must divide Dim
	Layers  int     // Transformer blocks
	FF      int     // width of the blocks' feed-forward hidden layer
	Dropout float64 // dropout probability in [0, 1) after the embedding and inside the blocks
}

// CharLMSmallConfig returns a small character-level language model:
// context 128, width 128, 4 heads, 4 blocks, feed-forward 512, dropout
// 0.1 (about 0.8 million parameters plus the embeddings and head).
func CharLMSmallConfig(vocab int) CharLMConfig {
	return CharLMConfig{Vocab: vocab, Context: 128, Dim: 128, Heads: 4, Layers: 4, FF: 512, Dropout: 0.1}
}

// CharLM is a decoder-only (GPT-style) character Transformer: a token
// embedding plus a learned positional embedding, pre-norm causal blocks
// (layers.TransformerEncoderLayer with Causal and NormFirst, GELU), a final
// LayerNorm and a linear head to Vocab logits. Position t of the output
// depends only on tokens 0…t.
//
// Parameters: "tok_emb.weight" (Vocab×Dim), "pos_emb.weight"
// (Context×Dim), "blocks.<i>.…" (layers.TransformerEncoderLayer names),
// "ln_f.weight", "ln_f.bias", "head.weight", "head.bias": a PyTorch module
// with these fields (nn.Embedding, nn.ModuleList of
// nn.TransformerEncoderLayer(batch_first=True, norm_first=True,
// activation="gelu") called with a causal float mask, nn.LayerNorm,
// nn.Linear) has the same state dict.
type CharLM struct {
	cfg    CharLMConfig
	tokEmb *layers.Embedding
	posEmb *layers.Embedding
	drop   *layers.Dropout
	blocks []*layers.TransformerEncoderLayer
	lnF    *layers.LayerNorm
	head   *layers.Linear
}

// NewCharLM returns a CharLM with weights drawn from rng: both embeddings
// from N(0, 0.02²) (as GPT-2; PyTorch's nn.Embedding default of N(0, 1)
// trains worse under pre-norm blocks), Linear and encoder layers as in
// PyTorch. A size that is not positive, Heads not dividing Dim or a
// dropout outside [0, 1) is an error naming the field.
func NewCharLM(cfg CharLMConfig, rng *rand.Rand) (*CharLM, error) {
	if err := checkPositive("CharLMConfig", []namedInt{
		{"Vocab", cfg.Vocab}, {"Context", cfg.Context}, {"Dim", cfg.Dim}, {"Heads", cfg.Heads},
		{"Layers", cfg.Layers}, {"FF", cfg.FF},
	}); err != nil {
		return nil, err
	}
	if err := checkAttention("CharLMConfig", cfg.Dim, cfg.Heads, cfg.Dropout); err != nil {
		return nil, err
	}
	m := &CharLM{
		cfg:    cfg,
		tokEmb: layers.Named("tok_emb", layers.NewEmbedding(cfg.Vocab, cfg.Dim, rng)),
		posEmb: layers.Named("pos_emb", layers.NewEmbedding(cfg.Context, cfg.Dim, rng)),
		drop:   layers.NewDropout(cfg.Dropout, rng),
	}
	m.tokEmb.Weight().Value = tensor.RandNormal(rng, 0, 0.02, cfg.Vocab, cfg.Dim)
	m.posEmb.Weight().Value = tensor.RandNormal(rng, 0, 0.02, cfg.Context, cfg.Dim)
	block := layers.EncoderLayerConfig{FF: cfg.FF, Dropout: cfg.Dropout, Activation: "gelu", NormFirst: true, Causal: true}
	for i := range cfg.Layers {
		m.blocks = append(m.blocks, layers.Named(fmt.Sprintf("blocks.%d", i), layers.NewTransformerEncoderLayer(cfg.Dim, cfg.Heads, block, rng)))
	}
	m.lnF = layers.Named("ln_f", layers.NewLayerNorm([]int{cfg.Dim}, layers.LayerNormConfig{}))
	m.head = layers.Named("head", layers.NewLinear(cfg.Dim, cfg.Vocab, true, rng))
	return m, nil
}

// Config returns the configuration the model was built with.
func (m *CharLM) Config() CharLMConfig { return m.cfg }

// Parameters returns the embeddings', the blocks', the final norm's and
// the head's parameters.
func (m *CharLM) Parameters() []*autograd.Param {
	ps := append(m.tokEmb.Parameters(), m.posEmb.Parameters()...)
	for _, b := range m.blocks {
		ps = append(ps, b.Parameters()...)
	}
	return append(append(ps, m.lnF.Parameters()...), m.head.Parameters()...)
}

// Children returns the sub-layers.
func (m *CharLM) Children() []layers.Module {
	ch := []layers.Module{m.tokEmb, m.posEmb, m.drop}
	for _, b := range m.blocks {
		ch = append(ch, b)
	}
	return append(ch, m.lnF, m.head)
}

// Forward returns the N×T×Vocab logits for the token ids x (N×T, T ≤
// Context). The ids are Int64, as layers.Embedding takes them; float ids
// (batches of data.TokenWindows) are converted, but only a model called
// on Int64 ids exports to ONNX. An id outside [0, Vocab) or T > Context
// panics.
func (m *CharLM) Forward(x *autograd.Var) *autograd.Var {
	s := x.Shape()
	if len(s) != 2 || s[1] < 1 || s[1] > m.cfg.Context {
		panic(fmt.Sprintf("models: CharLM: input shape %v, expected N×T token ids with 1 ≤ T ≤ %d (the context)", s, m.cfg.Context))
	}
	if x.Value.DType().IsFloat() {
		ids := autograd.Constant(x.Value.Cast(device.Int64))
		if x.IsNoGrad() {
			ids = autograd.NoGrad(ids)
		}
		x = ids
	}
	t := s[1]
	pos := m.posEmb.Weight().Var
	if x.IsNoGrad() {
		pos = autograd.NoGrad(pos)
	}
	h := autograd.Add(m.tokEmb.Forward(x), autograd.Slice(pos, 0, 0, t))
	h = m.drop.Forward(h)
	for _, b := range m.blocks {
		h = b.Forward(h)
	}
	return m.head.Forward(m.lnF.Forward(h))
}

// Loss returns the mean cross-entropy of logits (N×T×Vocab, from Forward)
// against the next-token ids targets (N×T, Int64 or float ids), over all
// N·T positions.
func (m *CharLM) Loss(logits *autograd.Var, targets *tensor.Tensor) *autograd.Var {
	v := logits.Value.Dim(-1)
	if targets.DType().IsFloat() {
		targets = targets.Cast(device.Int64)
	}
	flat := autograd.Reshape(logits, -1, v)
	return layers.CrossEntropy(flat, targets.Reshape(-1), layers.CrossEntropyOptions{})
}

// SplitWindows splits a batch of token windows (N×(T+1) ids, a batch of
// data.TokenWindows) into the model's inputs, its first T ids, and the
// targets, its last T ids, both N×T Int64 on the batch's device.
func SplitWindows(batch *tensor.Tensor) (inputs, targets *tensor.Tensor) {
	if batch.Rank() != 2 || batch.Dim(1) < 2 {
		panic(fmt.Sprintf("models: SplitWindows: batch shape %v, expected N×(T+1) with T ≥ 1", batch.Shape()))
	}
	ids := batch.Cast(device.Int64)
	t := batch.Dim(1) - 1
	return ids.Slice(1, 0, t).Contiguous(), ids.Slice(1, 1, t+1).Contiguous()
}

// SampleOptions tune CharLM.Generate.
type SampleOptions struct {
	// Temperature divides the logits before the softmax; 0 picks the most
	// likely token (greedy decoding).
	Temperature float64
	// TopK restricts sampling to the K most likely tokens; 0 keeps all.
	TopK int
}

// Validate returns an error naming the field when o has a negative (or
// non-finite) temperature or a negative TopK.
func (o SampleOptions) Validate() error {
	if !(o.Temperature >= 0) || math.IsInf(o.Temperature, 0) {
		return fmt.Errorf("models: SampleOptions.Temperature = %g, expected a finite value ≥ 0 (0: greedy)", o.Temperature)
	}
	if o.TopK < 0 {
		return fmt.Errorf("models: SampleOptions.TopK = %d, expected ≥ 0 (0: all tokens)", o.TopK)
	}
	return nil
}

// Generate continues prompt by n tokens and returns the n new ones. Each
// step runs the model in no-grad mode on the last Context tokens and
// picks the next token from softmax(logits/Temperature) restricted to the
// TopK most likely tokens, drawing from rng (greedy argmax when
// Temperature is 0, and rng is then not used). The model's training mode
// is left as it is: call layers.Eval first so that dropout is off.
//
// An empty prompt, an id outside [0, Vocab) or invalid options (see
// SampleOptions.Validate) panic: encode user text with the vocabulary and
// validate the options first.
func (m *CharLM) Generate(prompt []int, n int, opts SampleOptions, rng *rand.Rand) []int {
	if err := opts.Validate(); err != nil {
		panic(err.Error())
	}
	if len(prompt) == 0 {
		panic("models: CharLM.Generate: empty prompt, expected at least one token id")
	}
	ctx := slices.Clone(prompt)
	dev := m.tokEmb.Weight().Value.Device()
	out := make([]int, 0, n)
	for range n {
		window := ctx[max(0, len(ctx)-m.cfg.Context):]
		ids := make([]int64, len(window))
		for i, id := range window {
			ids[i] = int64(id)
		}
		x := tensor.FromInt64(ids, 1, len(ids)).To(dev)
		logits := m.Forward(autograd.NoGrad(autograd.Constant(x))).Value
		next := sampleToken(logits.Slice(1, len(ids)-1, len(ids)).Reshape(-1).Values(), opts, rng)
		ctx = append(ctx, next)
		out = append(out, next)
	}
	return out
}

// sampleToken picks a token from the logits as SampleOptions says.
func sampleToken(logits []float64, opts SampleOptions, rng *rand.Rand) int {
	order := make([]int, len(logits))
	for i := range order {
		order[i] = i
	}
	// Most likely first; ties keep the lower id first, so greedy is argmax.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(logits[b], logits[a]) })
	if opts.Temperature == 0 {
		return order[0]
	}
	if opts.TopK > 0 && opts.TopK < len(order) {
		order = order[:opts.TopK]
	}
	top := logits[order[0]]
	p := make([]float64, len(order))
	sum := 0.0
	for i, id := range order {
		p[i] = math.Exp((logits[id] - top) / opts.Temperature)
		sum += p[i]
	}
	u := rng.Float64() * sum
	for i, id := range order {
		u -= p[i]
		if u < 0 {
			return id
		}
	}
	return order[len(order)-1]
}

// namedInt is a configuration field and its value, for checkPositive.
type namedInt struct {
	name  string
	value int
}

// checkPositive returns an error naming the first field that is not
// positive.
func checkPositive(what string, fields []namedInt) error {
	for _, f := range fields {
		if f.value <= 0 {
			return fmt.Errorf("models: %s.%s = %d, expected > 0", what, f.name, f.value)
		}
	}
	return nil
}

// checkAttention checks that heads divides dim and the dropout
// probability is in [0, 1).
func checkAttention(what string, dim, heads int, dropout float64) error {
	if dim%heads != 0 {
		return fmt.Errorf("models: %s.Dim = %d is not a multiple of Heads = %d", what, dim, heads)
	}
	if !(dropout >= 0 && dropout < 1) {
		return fmt.Errorf("models: %s.Dropout = %g, expected a probability in [0, 1)", what, dropout)
	}
	return nil
}
