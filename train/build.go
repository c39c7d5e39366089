package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/optim"
	"github.com/hora-dl/hora/tensor"
)

// languageModel is what a character-level language model's run knows
// about its text.
type languageModel struct {
	vocab   *data.CharVocab
	unigram float64 // entropy of the training characters, nats
	context int
}

// split turns a batch of windows of T+1 ids into the model's input ids
// (the first T of each) and the targets (the last T).
func (l *languageModel) split(b data.Batch) (xs []float32, ys []int64, shape []int) {
	n, w := b.Len(), b.Shape[1]
	t := w - 1
	xs = make([]float32, 0, n*t)
	ys = make([]int64, 0, n*t)
	for i := range n {
		row := b.X[i*w : (i+1)*w]
		xs = append(xs, row[:t]...)
		for _, id := range row[1:] {
			ys = append(ys, int64(id))
		}
	}
	return xs, ys, []int{n, t}
}

// vocabJSON is the content of vocab.json: the characters in id order.
func (l *languageModel) vocabJSON() []byte {
	js, _ := json.Marshal(map[string]any{"chars": string(l.vocab.Runes()), "size": l.vocab.Size()})
	return append(js, '\n')
}

// loadRegistered loads a data set registered with RegisterDataset.
func loadRegistered(cfg *Config, reg registered[func(any, *Config) (*Data, error)]) (*Data, error) {
	args, err := reg.decode(cfg)
	if err != nil {
		return nil, err
	}
	d, err := reg.build(args, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: data set %q: %w", cfg.File(), cfg.Data.Name, err)
	}
	if err := checkGivenData(d); err != nil {
		return nil, fmt.Errorf("%s: data set %q: %w", cfg.File(), cfg.Data.Name, err)
	}
	return d, nil
}

// checkGivenData checks the data a program gives (a registered data set,
// Fit's argument) before anything uses it.
func checkGivenData(d *Data) error {
	switch {
	case d == nil || d.Train == nil || d.Test == nil:
		return errors.New("expected a training and a test set, found none")
	case d.Train.Len() == 0:
		return errors.New("the training set is empty")
	case d.Test.Len() == 0:
		return errors.New("the test set is empty: evaluation needs samples (an empty one would report a loss and an accuracy of 0)")
	case d.Classes < 1:
		return fmt.Errorf("expected Classes >= 1, found %d", d.Classes)
	case !slices.Equal(d.Train.SampleShape(), d.Test.SampleShape()):
		return fmt.Errorf("the training samples are %v and the test samples %v: expected one shape", d.Train.SampleShape(), d.Test.SampleShape())
	}
	return nil
}

// limit returns the first n samples of ds (all of them when n is 0).
func limit(ds data.Dataset, n int) data.Dataset {
	if n <= 0 || n >= ds.Len() {
		return ds
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return data.Subset(ds, idx)
}

// loadText reads the text of a language model, builds its vocabulary
// (or takes vocab) and cuts it into windows of model.context characters.
func loadText(cfg *Config, vocab string) (*datasets, error) {
	text, err := data.LoadText(cfg.Data.Files)
	if err != nil {
		return nil, fmt.Errorf("%s: data.files: %w", cfg.File(), err)
	}
	v := data.NewCharVocab(text)
	if vocab != "" {
		v = data.NewCharVocab(vocab)
	}
	ids, err := v.Encode(text)
	if err != nil {
		return nil, fmt.Errorf("%s: data.files: the text has a character the checkpoint's vocabulary lacks: %w", cfg.File(), err)
	}
	trainIDs, valIDs, err := data.SplitTokens(ids, cfg.Data.ValFraction)
	if err != nil {
		return nil, fmt.Errorf("%s: data.val_fraction: %w", cfg.File(), err)
	}
	t := cfg.Model.Context
	tr, err := data.NewTokenWindows(trainIDs, t)
	if err != nil {
		return nil, fmt.Errorf("%s: data.files: the training text (%d characters) is too short for model.context %d: %w", cfg.File(), len(trainIDs), t, err)
	}
	te, err := data.NewTokenWindows(valIDs, t)
	if err != nil {
		return nil, fmt.Errorf("%s: data.val_fraction: the validation text (%d characters) is too short for model.context %d: %w", cfg.File(), len(valIDs), t, err)
	}
	ds := &datasets{train: tr, test: te,
		lm:   &languageModel{vocab: v, unigram: data.UnigramEntropy(trainIDs, v.Size()), context: t},
		info: &runData{Name: cfg.Data.Name, Task: cfg.Task, SampleShape: []int{t}}}
	ds.train = limit(tr, cfg.Train.Limit)
	return ds, nil
}

// buildModel returns the model the config names, for the data sets ds,
// initialised from rng. A language model's vocabulary is lm's, or without
// lm (NewModel) in.Classes characters.
func buildModel(cfg *Config, in ModelInput, lm *languageModel) (layers.Layer, error) {
	if reg, ok := modelRegistry.lookup(cfg.Model.Name); ok {
		return buildRegistered(cfg, reg, in)
	}
	m := cfg.Model
	classes, rng := in.Classes, in.Rand
	inCh := 1
	if lm == nil {
		inCh = in.SampleShape[0]
	}
	wrap := func(l layers.Layer, err error) (layers.Layer, error) {
		if err != nil {
			return nil, fmt.Errorf("%s: model: %w", cfg.File(), err)
		}
		return l, nil
	}
	resnet := func(rc models.ResNetConfig) (layers.Layer, error) {
		rc.Stem = m.Stem
		return wrap(models.NewResNet(rc, rng))
	}
	switch m.Name {
	case "mlp":
		features := 1
		for _, d := range in.SampleShape {
			features *= d
		}
		return wrap(models.NewMLP(models.MLPConfig{
			In: features, Hidden: m.Hidden, Classes: classes,
			Activation: m.Activation, Dropout: m.Dropout,
		}, rng))
	case "cnn", "lenet5":
		shape, err := imageShape(cfg, in.SampleShape)
		if err != nil {
			return nil, err
		}
		if m.Name == "cnn" {
			return wrap(models.NewCNNFor(shape, classes, rng))
		}
		return wrap(models.NewLeNet5For(shape, classes, rng))
	case "resnet18":
		return resnet(models.ResNet18Config(inCh, classes))
	case "resnet34":
		return resnet(models.ResNet34Config(inCh, classes))
	case "resnet20":
		return resnet(models.ResNet20Config(inCh, classes))
	case "resnet56":
		return resnet(models.ResNet56Config(inCh, classes))
	case "resnet":
		return resnet(models.ResNetConfig{Block: "basic", Layers: m.Blocks, Widths: m.Widths,
			InChannels: inCh, Classes: classes})
	case "mobilenet":
		return wrap(models.NewMobileNet(models.MobileNetSmallConfig(inCh, classes), rng))
	case "transformer":
		shape := in.SampleShape
		if len(shape) != 3 {
			return nil, fmt.Errorf("%s: model transformer: expected images [channels, height, width], found samples %v", cfg.File(), shape)
		}
		c, h, w := shape[0], shape[1], shape[2]
		if p := m.PatchSize; p > 0 && (h%p != 0 || w%p != 0) {
			where, _ := cfg.origins.Where(cfg.File(), "model.patch_size")
			return nil, fmt.Errorf("%s: model.patch_size: expected a divisor of both sides of the %d×%d images, found %d", where, h, w, p)
		}
		tc := models.TransformerClassifierConfig{Dim: m.Dim, Heads: m.Heads, Layers: m.Layers, FF: m.FF,
			Classes: classes, Dropout: m.Dropout, PatchSize: m.PatchSize, InFeatures: c * w, SeqLen: h}
		if p := m.PatchSize; p > 0 {
			tc.InFeatures, tc.SeqLen = c*p*p, (h/p)*(w/p)
		}
		return wrap(models.NewTransformerClassifier(tc, rng))
	case "charlm":
		vocab := classes // NewModel's: the vocabulary's size
		if lm != nil {
			vocab = lm.vocab.Size()
		}
		return wrap(models.NewCharLM(models.CharLMConfig{Vocab: vocab, Context: m.Context,
			Dim: m.Dim, Heads: m.Heads, Layers: m.Layers, FF: m.FF, Dropout: m.Dropout}, rng))
	case "onnx":
		return importModel(cfg, in)
	}
	return nil, fmt.Errorf("%s: model.name: unknown model %q (known: %v)", cfg.File(), m.Name, modelRegistry.names())
}

// modelInput is what a model builder knows about the data sets ds.
func (ds *datasets) modelInput(cfg *Config, rng *rand.Rand) ModelInput {
	return ModelInput{SampleShape: slices.Clone(ds.train.SampleShape()), Classes: ds.classes, Rand: rng, Config: cfg}
}

// NewModel builds the model the config names (built in, registered with
// RegisterModel, or imported from model.file) for samples of sampleShape
// and classes classes, initialised as a training run initialises it (from
// the config's seed). For a character-level language model (model
// charlm), sampleShape is the window of token ids, [T] with 1 ≤ T ≤
// model.context, and classes is the size of the vocabulary: the model a
// run builds for a text of that many distinct characters.
func NewModel(cfg *Config, sampleShape []int, classes int) (layers.Layer, error) {
	if cfg.Model.Name == "charlm" && (len(sampleShape) != 1 || sampleShape[0] < 1 || sampleShape[0] > cfg.Model.Context) {
		return nil, fmt.Errorf("%s: model charlm: expected samples of [T] token ids with 1 ≤ T ≤ model.context (%d), found %v", cfg.File(), cfg.Model.Context, sampleShape)
	}
	in := ModelInput{SampleShape: slices.Clone(sampleShape), Classes: classes, Rand: rand.New(rand.NewPCG(cfg.Seed, 1)), Config: cfg}
	return buildModel(cfg, in, nil)
}

// buildRegistered builds a model registered with RegisterModel.
func buildRegistered(cfg *Config, reg registered[func(any, ModelInput) (layers.Layer, error)], in ModelInput) (layers.Layer, error) {
	args, err := reg.decode(cfg)
	if err != nil {
		return nil, err
	}
	model, err := reg.build(args, in)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: model %q: %w", cfg.File(), cfg.Model.Name, err)
	case model == nil:
		return nil, fmt.Errorf("%s: model %q: the builder returned no model and no error", cfg.File(), cfg.Model.Name)
	}
	return model, nil
}

// checkData checks, before training, that the data sets fit the model:
// the images have the size the model takes, and (for an image
// classifier) one sample through the model gives one logit per class.
// Errors name the data set and the sample index.
func checkData(cfg *Config, ds *datasets, model layers.Layer) error {
	switch {
	case ds.train.Len() == 0:
		return fmt.Errorf("%s: data: the training set (%s) has no samples", cfg.File(), dataSource(cfg))
	case ds.test.Len() == 0:
		// Evaluating nothing would report a loss and an accuracy of 0,
		// and the best checkpoint would be chosen on them.
		return fmt.Errorf("%s: data: the test set (%s) has no samples: evaluation needs some (for data sets idx and fashion-mnist, the t10k files; for images, val/ or data.val_fraction; for csv, data.val_file or data.val_fraction)", cfg.File(), dataSource(cfg))
	case ds.lm != nil:
		return nil
	}
	shape := append([]int{1}, ds.train.SampleShape()...)
	n := 1
	for _, d := range shape {
		n *= d
	}
	sample := make([]float32, n)
	label := ds.train.Sample(0, sample)
	layers.Eval(model)
	out, err := forwardOnce(model, tensor.FromFloat32(sample, shape...))
	layers.Train(model)
	if err != nil {
		return fmt.Errorf("%s: data: training sample 0 (%v) does not fit model %s: %w", cfg.File(), ds.train.SampleShape(), cfg.Model.Name, err)
	}
	if s := out.Shape(); len(s) != 2 || s[1] != ds.classes {
		what := "one logit per class"
		if ds.targets != nil {
			what = "one number per sample for a regression"
		}
		return fmt.Errorf("%s: data: model %s gives %v for training sample 0, expected [1 %d] (%s)", cfg.File(), cfg.Model.Name, s, ds.classes, what)
	}
	if label < 0 || label >= int64(ds.classes) {
		return fmt.Errorf("%s: data: training sample 0 has label %d, expected 0..%d", cfg.File(), label, ds.classes-1)
	}
	return nil
}

// imageShape returns the images of samples of shape sample, for a model
// that takes images.
func imageShape(cfg *Config, sample []int) (models.ImageShape, error) {
	if len(sample) != 3 {
		return models.ImageShape{}, fmt.Errorf("%s: model %s: expected images [channels, height, width], found samples %v (use model mlp for tables)", cfg.File(), cfg.Model.Name, sample)
	}
	return models.ImageShape{Channels: sample[0], Height: sample[1], Width: sample[2]}, nil
}

// forwardOnce runs the model (in the mode it is in) on x without
// recording gradients, turning a shape panic into an error.
func forwardOnce(model layers.Layer, x *tensor.Tensor) (out *tensor.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(*tensor.DeviceError); ok {
				panic(r)
			}
			err = fmt.Errorf("%v", r)
		}
	}()
	return model.Forward(autograd.NoGrad(autograd.Constant(x))).Value, nil
}

// importModel loads the ONNX model of model.file and checks that it maps
// the data's samples to class logits. With model.head it cuts the
// model's own classifier and puts a new one, initialised from in.Rand, in
// its place (transferNet).
func importModel(cfg *Config, in ModelInput) (layers.Layer, error) {
	mc := cfg.Model
	var opts []onnx.Option
	if mc.Input != "" {
		opts = append(opts, onnx.Input(mc.Input))
	}
	if mc.Head.Classes > 0 {
		opts = append(opts, onnx.WithoutHead())
	}
	fail := func(key string, err error) (layers.Layer, error) {
		where, _ := cfg.origins.Where(cfg.File(), key)
		return nil, fmt.Errorf("%s: %s: %w", where, key, err)
	}
	m, err := onnx.Load(mc.File, opts...)
	if err != nil {
		key := "model.file"
		var he *onnx.HeadError
		var ie *onnx.InputError
		switch {
		case errors.As(err, &he):
			key = "model.head"
		case errors.As(err, &ie):
			key = "model.input"
		}
		return fail(key, err)
	}
	if len(m.Inputs) != 1 || len(m.Outputs) != 1 {
		var names []string
		for _, i := range m.Inputs {
			names = append(names, strconv.Quote(i.Name))
		}
		return fail("model.file", fmt.Errorf("%s: the model has %d inputs (%s) and %d outputs, expected 1 and 1 (model.input picks one input)",
			mc.File, len(m.Inputs), strings.Join(names, ", "), len(m.Outputs)))
	}
	input := m.Inputs[0]
	want := append([]int{-1}, in.SampleShape...)
	if input.Shape != nil {
		ok := len(input.Shape) == len(want)
		for d := 1; ok && d < len(want); d++ {
			ok = input.Shape[d] < 0 || input.Shape[d] == want[d]
		}
		if !ok {
			return fail("model.file", fmt.Errorf("%s: input %v, expected samples %v with a batch axis first (the data's; set data.image_size and data.channels to match)", mc.File, input, in.SampleShape))
		}
	}
	var model layers.Layer = m
	if mc.Head.Classes > 0 {
		head, _ := m.Head()
		model = newTransferNet(m, layers.NewLinear(head.InFeatures, mc.Head.Classes, true, in.Rand))
	}
	if len(model.Parameters()) == 0 {
		return fail("model.file", fmt.Errorf("%s: the model has no float initializers to train", mc.File))
	}
	// A batch of two samples through the model, so that a model that
	// does not compute [batch, classes] logits, or whose batch is fixed at
	// one, fails here, with its own error, not mid-epoch.
	const probe = 2
	out, err := forwardOnce(model, tensor.Zeros(append([]int{probe}, want[1:]...)...))
	if err != nil {
		return fail("model.file", fmt.Errorf("%s: a batch of %d samples %v: %w (the model must take any batch size: is its batch dimension fixed?)", mc.File, probe, want[1:], err))
	}
	if s := out.Shape(); len(s) != 2 || s[0] != probe || s[1] != in.Classes {
		hint := "set model.head.classes to replace its classifier"
		if mc.Head.Classes > 0 {
			hint = "model.head.classes must equal the data's class count"
		}
		if len(s) == 2 && s[0] != probe {
			hint = "its batch dimension must follow the input's"
		}
		return fail("model.file", fmt.Errorf("%s: output %q is %v for a batch of %d samples, expected [%d %d] (one logit per class of the data; %s)", mc.File, m.Outputs[0].Name, s, probe, probe, in.Classes, hint))
	}
	return model, nil
}

// transferNet is an imported ONNX model whose classifier was cut off
// (model.head), followed by a new one: the network that transfer
// learning fine-tunes. The backbone keeps its initializers' names; the
// new classifier's parameters are "head.weight" and "head.bias".
type transferNet struct {
	backbone *onnx.Model
	head     *layers.Linear
}

func newTransferNet(backbone *onnx.Model, head *layers.Linear) *transferNet {
	return &transferNet{backbone: backbone, head: layers.Named("head", head)}
}

// Forward returns the new classifier's logits for the backbone's features.
func (n *transferNet) Forward(x *autograd.Var) *autograd.Var {
	return n.head.Forward(n.backbone.Forward(x))
}

// Parameters returns the backbone's parameters, then the head's.
func (n *transferNet) Parameters() []*autograd.Param {
	return append(n.backbone.Parameters(), n.head.Parameters()...)
}

// Children returns the backbone and the head.
func (n *transferNet) Children() []layers.Module { return []layers.Module{n.backbone, n.head} }

// freeze freezes the parameters whose names match a model.freeze glob; a
// glob that matches none is an error listing the names. The new
// classifier of model.head is always trained: "*" freezes the rest.
func freeze(cfg *Config, model layers.Layer) error {
	params := model.Parameters()
	if n, ok := model.(*transferNet); ok {
		params = n.backbone.Parameters()
	}
	for i, g := range cfg.Model.Freeze {
		n := 0
		for _, p := range params {
			if ok, _ := path.Match(g, p.Name); ok {
				p.Freeze()
				n++
			}
		}
		if n == 0 {
			key := fmt.Sprintf("model.freeze[%d]", i)
			where, _ := cfg.origins.Where(cfg.File(), key)
			var names []string
			for _, p := range params {
				names = append(names, p.Name)
			}
			if len(names) > 12 {
				names = append(names[:12], fmt.Sprintf("... (%d in all)", len(params)))
			}
			return fmt.Errorf("%s: %s: %q matches no parameter of model %s; the parameters are: %s", where, key, g, cfg.Model.Name, strings.Join(names, ", "))
		}
	}
	return nil
}

// trainable returns the parameters of model that are not frozen.
func trainable(model layers.Layer) []*autograd.Param {
	var ps []*autograd.Param
	for _, p := range model.Parameters() {
		if !p.Frozen() {
			ps = append(ps, p)
		}
	}
	return ps
}

// optimizerConfig returns the optim package's config of the optimizer the
// section names (nil for an unknown name): the hyper-parameters are
// written, and validated, there.
func optimizerConfig(o OptimizerConfig) interface{ Validate() error } {
	switch o.Name {
	case "sgd":
		return optim.SGDConfig{LR: o.LR, Momentum: o.Momentum, Dampening: o.Dampening,
			Nesterov: o.Nesterov, WeightDecay: o.WeightDecay}
	case "adam":
		return optim.AdamConfig{LR: o.LR, Beta1: o.Betas[0], Beta2: o.Betas[1],
			Eps: o.Eps, WeightDecay: o.WeightDecay, AMSGrad: o.AMSGrad}
	case "adamw":
		return optim.AdamWConfig{LR: o.LR, Beta1: o.Betas[0], Beta2: o.Betas[1],
			Eps: o.Eps, WeightDecay: o.WeightDecay, AMSGrad: o.AMSGrad}
	case "rmsprop":
		return optim.RMSpropConfig{LR: o.LR, Alpha: o.Alpha, Eps: o.Eps,
			WeightDecay: o.WeightDecay, Momentum: o.Momentum, Centered: o.Centered}
	case "adagrad":
		return optim.AdagradConfig{LR: o.LR, Eps: o.Eps, WeightDecay: o.WeightDecay}
	}
	return nil
}

// buildOptimizer returns the optimizer the config names over params.
func buildOptimizer(cfg *Config, params []*autograd.Param) (optim.Optimizer, error) {
	var opt optim.Optimizer
	var err error
	switch c := optimizerConfig(cfg.Optimizer).(type) {
	case optim.SGDConfig:
		opt, err = optim.NewSGD(params, c)
	case optim.AdamConfig:
		opt, err = optim.NewAdam(params, c)
	case optim.AdamWConfig:
		opt, err = optim.NewAdamW(params, c)
	case optim.RMSpropConfig:
		opt, err = optim.NewRMSprop(params, c)
	case optim.AdagradConfig:
		opt, err = optim.NewAdagrad(params, c)
	default:
		return nil, fmt.Errorf("%s: optimizer.name: unknown optimizer %q (known: %v)", cfg.File(), cfg.Optimizer.Name, knownOptimizers)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: optimizer: %w", cfg.File(), err)
	}
	return opt, nil
}

// schedulePeriods is the number of periods (epochs, or optimizer steps
// with schedule.per "step") of the whole run, for trainSamples samples
// per rank.
func schedulePeriods(cfg *Config, trainSamples int) int {
	periods := cfg.Train.Epochs
	if cfg.Schedule.Per == "step" {
		perStep := cfg.Train.BatchSize * cfg.Dist.BackwardPassesPerStep
		periods *= (trainSamples + perStep - 1) / perStep
	}
	return periods
}

// buildSchedule returns the learning-rate schedule for opt, whose base
// rate it reads, counted in epochs or in optimizer steps (schedule.per),
// with optional linear warm-up. periods is schedulePeriods's count.
func buildSchedule(cfg *Config, opt optim.LRSource, periods int) (optim.Schedule, error) {
	s := cfg.Schedule
	var sched optim.Schedule
	var err error
	switch s.Name {
	case "none", "":
		sched, err = optim.Constant(opt)
	case "step":
		sched, err = optim.StepLR(opt, s.StepSize, s.Gamma)
	case "multistep":
		sched, err = optim.MultiStepLR(opt, s.Milestones, s.Gamma)
	case "cosine":
		sched, err = optim.CosineLR(opt, max(periods-s.WarmupEpochs, 1), s.MinLR)
	default:
		return nil, fmt.Errorf("%s: schedule.name: unknown schedule %q (known: %v)", cfg.File(), s.Name, knownSchedules)
	}
	if err == nil && s.WarmupEpochs > 0 {
		sched, err = optim.WarmupLR(s.WarmupStartFactor, s.WarmupEpochs, sched)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: schedule: %w", cfg.File(), err)
	}
	return sched, nil
}
