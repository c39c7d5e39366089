package train

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"io"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/checkpoint"
	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/tensor"
)

// session is a trained model loaded from a run directory, for eval,
// predict and export.
type session struct {
	cfg *Config
	// ds holds the run's data sets, when the command needs them (eval, a
	// language model, a run older than data.json); nil otherwise.
	ds *datasets
	// info is what the run knows about its data (data.json).
	info  *runData
	model layers.Layer
	dev   device.Device
	ckpt  savedCheckpoint
}

// runFlags are the flags eval, predict and export share.
type runFlags struct {
	run, which string
	sets       setFlags
}

func (r *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.run, "run", "", "the run `dir` (the output.dir of a training run; required)")
	fs.StringVar(&r.which, "checkpoint", "best", "which checkpoint: last, best, step-N or a checkpoint folder")
	fs.Var(&r.sets, "set", "override a value of the run's config, e.g. -set data.dir=DIR (repeatable)")
}

// openSession loads the run's config, what it knows about its data
// (data.json), its model and checkpoint, and its data sets when needData
// (or when the run needs them to build its model: a language model, a
// run older than data.json). The weights are the checkpoint's averaged
// ones when it has them (train.ema). "best" falls back to "last" when no
// evaluation chose one.
func openSession(r runFlags, needData bool) (*session, error) {
	if r.run == "" {
		return nil, inputError{errors.New("-run DIR is required (the output.dir of a training run)")}
	}
	cfg, err := LoadConfig(filepath.Join(r.run, configFile), r.sets)
	if err != nil {
		return nil, inputError{err}
	}
	cfg.Output.Dir = r.run
	info, err := readRunData(r.run)
	if err != nil {
		return nil, inputError{err}
	}
	which := r.which
	if which == "best" {
		if b, err := readBest(r.run); err == nil && b.Checkpoint == "" {
			which = "last"
		}
	}
	c, err := findCheckpoint(r.run, which)
	if err != nil {
		return nil, inputError{err}
	}
	s := &session{cfg: cfg, info: info, ckpt: c}
	rng := rand.New(rand.NewPCG(cfg.Seed, 1))
	var in ModelInput
	var lm *languageModel
	if needData || info == nil || cfg.Data.Name == "text" {
		if s.ds, err = loadDatasets(cfg, c.Manifest.Vocab, info, nil); err != nil {
			return nil, inputError{err}
		}
		in, lm = s.ds.modelInput(cfg, rng), s.ds.lm
		if s.info == nil {
			s.info = s.ds.info
		}
	} else {
		in = ModelInput{SampleShape: slices.Clone(info.SampleShape), Classes: max(len(info.Classes), 1), Rand: rng, Config: cfg}
	}
	if s.dev, err = device.Open(cfg.Device); err != nil {
		return nil, inputError{fmt.Errorf("device: %w", err)}
	}
	if s.model, err = buildModel(cfg, in, lm); err != nil {
		return nil, inputError{err}
	}
	layers.To(s.model, s.dev)
	// The files are read once, checked against the manifest's digests,
	// and decoded from those bytes: a file swapped after the check is
	// never used.
	if err := c.readFiles(); err != nil {
		return nil, inputError{err}
	}
	if _, err := checkpoint.DecodeInto(filepath.Join(c.Dir, modelFile), c.Files[modelFile], layers.StateDict(s.model)); err != nil {
		return nil, inputError{err}
	}
	if _, ok := c.Manifest.Files[emaFile]; ok {
		avg := map[string]*tensor.Tensor{}
		for _, p := range s.model.Parameters() {
			avg[p.Name] = p.Value
		}
		if _, err := checkpoint.DecodeInto(filepath.Join(c.Dir, emaFile), c.Files[emaFile], avg); err != nil {
			return nil, inputError{err}
		}
	}
	if err := checkFinite(c.Dir, layers.StateDict(s.model)); err != nil {
		return nil, inputError{err}
	}
	layers.Eval(s.model)
	return s, nil
}

// checkFinite reports the first tensor of state (a checkpoint's, in dir)
// that holds NaN or an infinity: a model whose training diverged before
// the checkpoint was written, whose outputs would be NaN.
func checkFinite(dir string, state map[string]*tensor.Tensor) error {
	names := slices.Sorted(maps.Keys(state))
	for _, name := range names {
		t := state[name]
		if t.DType() != device.Float32 {
			continue
		}
		for i, v := range t.Float32s() {
			if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
				return fmt.Errorf("checkpoint %s: tensor %q holds %v at index %d: the weights are not finite (the run diverged before this checkpoint); use an earlier checkpoint (-checkpoint step-N)", dir, name, v, i)
			}
		}
	}
	return nil
}

// lm returns the language model of the run (nil for other models).
func (s *session) lm() *languageModel {
	if s.ds == nil {
		return nil
	}
	return s.ds.lm
}

// parseRunFlags parses the flags of eval, predict or export.
func parseRunFlags(fs *flag.FlagSet, args []string, stderr io.Writer, usageLine string) error {
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: "+usageLine)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return inputError{err}
	}
	return nil
}

// evalCommand evaluates a checkpoint on the test set and prints the
// result as JSON.
func evalCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	var r runFlags
	r.register(fs)
	if err := parseRunFlags(fs, args, stderr, "train eval -run DIR [-checkpoint last|best|step-N] [-set key=value ...]"); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return inputError{fmt.Errorf("eval: unexpected argument %q", fs.Arg(0))}
	}
	s, err := openSession(r, true)
	if err != nil {
		return err
	}
	engine, err := dist.NewEngine(dist.Single(), dist.EngineConfig{})
	if err != nil {
		return err
	}
	defer engine.Close()
	test, err := data.NewLoader(s.ds.test, data.LoaderConfig{BatchSize: s.cfg.Train.EvalBatchSize, Prefetch: 1, ReuseMemory: true})
	if err != nil {
		return err
	}
	t := &trainer{cfg: s.cfg, dev: s.dev, model: s.model, lm: s.ds.lm, test: test, testLen: s.ds.test.Len(),
		targets: s.ds.targets, engine: engine, arena: tensor.NewArena()}
	metrics, err := t.evaluate(ctx)
	if err != nil {
		return err
	}
	out := map[string]any{"checkpoint": s.ckpt.Dir, "step": s.ckpt.Manifest.Step, "test_samples": s.ds.test.Len()}
	for _, k := range slices.Sorted(maps.Keys(metrics)) {
		v := metrics[k]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			// JSON has no NaN: say what happened instead of failing to
			// encode it.
			return fmt.Errorf("eval: checkpoint %s: %s is %v on the test set: the model's outputs overflow", s.ckpt.Dir, k, v)
		}
		out[k] = v
	}
	if s.ds.lm != nil {
		out["unigram_entropy"] = s.ds.lm.unigram
	}
	return json.NewEncoder(stdout).Encode(out)
}

// exportCommand writes a checkpoint's model as ONNX.
func exportCommand(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	var r runFlags
	r.register(fs)
	out := fs.String("o", "", "the ONNX `file` to write (required)")
	if err := parseRunFlags(fs, args, stderr, "train export -run DIR [-checkpoint last|best|step-N] -o FILE.onnx"); err != nil {
		return err
	}
	if *out == "" {
		return inputError{errors.New("export: -o FILE is required")}
	}
	if err := checkExportTarget(*out); err != nil {
		return inputError{fmt.Errorf("export: %w", err)}
	}
	s, err := openSession(r, false)
	if err != nil {
		return err
	}
	sample := s.info.SampleShape
	if err := exportONNX(*out, s.model, s.lm(), s.dev, sample, s.info); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(stdout, "exported %s (step %d) to %s (ONNX opset 17%s)\n", s.ckpt.Dir, s.ckpt.Manifest.Step, *out, exportShape(s.lm(), sample))
	return nil
}

// prediction is one line of predict's output: an image's, or a table
// row's, class (or a regression's value).
type prediction struct {
	File          string       `json:"file"`
	Index         *int         `json:"index,omitempty"` // the image's index in an IDX file
	Line          int          `json:"line,omitempty"`  // the row's line in a CSV file
	Value         *float64     `json:"value,omitempty"` // a regression's prediction
	Class         *int         `json:"class,omitempty"`
	Label         string       `json:"label,omitempty"`
	Probability   float64      `json:"probability,omitempty"`
	Probabilities []float64    `json:"probabilities,omitempty"`
	Top           []classScore `json:"top,omitempty"` // the -top-k most likely classes
}

// classScore is a class and its probability.
type classScore struct {
	Class       int     `json:"class"`
	Label       string  `json:"label,omitempty"`
	Probability float64 `json:"probability"`
}

// predictCommand classifies images or table rows (or predicts a
// regression's numbers), or continues a text with a language model, and
// prints JSON.
func predictCommand(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	var r runFlags
	r.register(fs)
	prompt := fs.String("prompt", "", "language model: the text to continue (default sample.prompt)")
	length := fs.Int("length", -1, "language model: characters to generate (default sample.length)")
	temp := fs.Float64("temperature", -1, "language model: sampling temperature, 0 = most likely (default sample.temperature)")
	topK := fs.Int("top-k", -1, "classifier: list the `K` most likely classes; language model: sample among the k most likely characters, 0 = all (default sample.top_k)")
	seed := fs.Uint64("seed", 1, "language model: seed of the sampling")
	if err := parseRunFlags(fs, args, stderr, "train predict -run DIR [-checkpoint ...] [-top-k K] IMAGE_OR_CSV_FILE... | -prompt TEXT"); err != nil {
		return err
	}
	// The defaults (-1) mean "the run's sample settings"; a value given
	// must be one the settings accept.
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch t := *temp; {
	case given["length"] && *length < 0:
		return inputError{fmt.Errorf("predict: -length %d: expected 0 or more", *length)}
	case given["top-k"] && *topK < 0:
		return inputError{fmt.Errorf("predict: -top-k %d: expected 0 or more", *topK)}
	case *length > maxSampleLength:
		return inputError{fmt.Errorf("predict: -length %d is too large; at most %d (as sample.length)", *length, maxSampleLength)}
	case given["temperature"] && (t < 0 || math.IsNaN(t) || math.IsInf(t, 0)):
		return inputError{fmt.Errorf("predict: -temperature %v: expected a finite number, 0 or more (0 takes the most likely character)", t)}
	}
	s, err := openSession(r, false)
	if err != nil {
		return err
	}
	if lm := s.lm(); lm != nil {
		sc := s.cfg.Sample
		if *prompt != "" {
			sc.Prompt = *prompt
		}
		if *length >= 0 {
			sc.Length = *length
		}
		if *temp >= 0 {
			sc.Temperature = *temp
		}
		if *topK >= 0 {
			sc.TopK = *topK
		}
		net, ok := s.model.(*models.CharLM)
		if !ok {
			return fmt.Errorf("predict: model %s is not a language model", s.cfg.Model.Name)
		}
		text, err := generate(net, lm.vocab, sc, rand.New(rand.NewPCG(*seed, 0)))
		if err != nil {
			return inputError{fmt.Errorf("predict: %w", err)}
		}
		return json.NewEncoder(stdout).Encode(map[string]any{"prompt": sc.Prompt, "text": text,
			"temperature": sc.Temperature, "top_k": sc.TopK, "checkpoint": s.ckpt.Dir})
	}
	if fs.NArg() == 0 {
		if s.info.Table != nil {
			return inputError{errors.New("predict: name the CSV files whose rows to predict")}
		}
		return inputError{errors.New("predict: name the image files to classify (PNG, JPEG, GIF, BMP, WebP, or IDX image files)")}
	}
	paths, err := expandFolders(fs.Args())
	if err != nil {
		return inputError{fmt.Errorf("predict: %w", err)}
	}
	enc := json.NewEncoder(stdout)
	for _, path := range paths {
		var samples [][]float32
		var place func(i int, p *prediction)
		if s.info.Table != nil {
			rows, lines, err := readTableRows(path, s.cfg, s.info.Table)
			if err != nil {
				return inputError{fmt.Errorf("predict: %w", err)}
			}
			samples, place = rows, func(i int, p *prediction) { p.Line = lines[i] }
		} else {
			var idx bool
			if samples, idx, err = readImages(path, s.info); err != nil {
				return inputError{fmt.Errorf("predict: %w", err)}
			}
			place = func(i int, p *prediction) {
				if len(samples) > 1 || idx {
					p.Index = &i
				}
			}
		}
		for i, x := range samples {
			out, err := s.predict(x)
			if err != nil {
				return fmt.Errorf("predict: %s: %w", path, err)
			}
			p := s.describe(out, *topK)
			p.File = path
			place(i, &p)
			if err := enc.Encode(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// predict returns the model's outputs for one sample: class
// probabilities, or a regression's value.
func (s *session) predict(x []float32) ([]float64, error) {
	t := tensor.FromFloat32(x, append([]int{1}, s.info.SampleShape...)...).To(s.dev)
	out, err := forwardOnce(s.model, t) // openSession put the model in evaluation mode
	if err != nil {
		return nil, err
	}
	if s.info.Task == "regression" {
		v := out.Cast(device.Float64).Float64s()
		if t := s.info.Table; t != nil && t.TargetStd > 0 { // undo the targets' standardization
			for i := range v {
				v[i] = v[i]*t.TargetStd + t.TargetMean
			}
		}
		return v, nil
	}
	return autograd.Softmax(autograd.Constant(out), 1).Value.Cast(device.Float64).Float64s(), nil
}

// describe turns a sample's outputs into its prediction: the most likely
// class, its name and probability, and the topK most likely.
func (s *session) describe(out []float64, topK int) prediction {
	if s.info.Task == "regression" {
		return prediction{Value: &out[0]}
	}
	label := func(c int) string {
		if c < len(s.info.Classes) {
			return s.info.Classes[c]
		}
		return ""
	}
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(out[b], out[a]) })
	best := order[0]
	p := prediction{Class: &best, Label: label(best), Probability: out[best], Probabilities: out}
	for _, c := range order[:min(max(topK, 0), len(order))] {
		p.Top = append(p.Top, classScore{Class: c, Label: label(c), Probability: out[c]})
	}
	return p
}

// expandFolders replaces each folder among paths by the image files in
// it and its sub-folders, in sorted order (files are kept as they are).
func expandFolders(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() {
			out = append(out, p) // reading it will say what is wrong
			continue
		}
		n := len(out)
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && slices.Contains(data.ImageExtensions, strings.ToLower(filepath.Ext(path))) {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(out) == n {
			return nil, fmt.Errorf("%s: a folder with no image files (%s)", p, strings.Join(data.ImageExtensions, ", "))
		}
	}
	return out, nil
}

// readImages reads the images of a file as the run's samples: one image
// (PNG, JPEG, GIF, BMP or WebP, RGB or grey, of any size: converted,
// resized and center-cropped as evaluation does), or every image of an
// IDX file of the model's size (known by its content, whatever its
// name); idx says which.
func readImages(path string, info *runData) (samples [][]float32, idx bool, err error) {
	im := info.Image
	if im == nil {
		return nil, false, fmt.Errorf("%s: this run's model does not take images", path)
	}
	tr := im.transform()
	size := im.Channels * im.Height * im.Width
	if idx, err = data.SniffIDX(path); err != nil {
		return nil, false, err
	}
	if !idx {
		img, err := data.DecodeImage(path)
		if err != nil {
			return nil, false, err
		}
		x := make([]float32, size)
		tr.Eval(img, x)
		return [][]float32{x}, false, nil
	}
	file, err := data.ReadIDXImages(path)
	if err != nil {
		return nil, true, err
	}
	if len(file.Dims) != 3 || im.Channels != 1 || file.Dims[1] != im.Height || file.Dims[2] != im.Width {
		return nil, true, fmt.Errorf("%s: images are %v, the model takes %d×%d×%d", path, file.Dims[1:], im.Channels, im.Height, im.Width)
	}
	for i := range file.Dims[0] {
		img := image.NewGray(image.Rect(0, 0, im.Width, im.Height))
		copy(img.Pix, file.Data[i*size:(i+1)*size])
		x := make([]float32, size)
		tr.Eval(img, x)
		samples = append(samples, x)
	}
	return samples, true, nil
}

// sameColumns checks that a header row names the training table's
// columns, in its order, with or without the label column: rows are read
// by position.
func sameColumns(header []string, info *tableInfo) error {
	names := make([]string, len(header))
	for i, h := range header {
		names[i] = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
	}
	noLabel := slices.DeleteFunc(slices.Clone(info.Columns), func(c string) bool { return c == info.Label })
	if slices.Equal(names, info.Columns) || slices.Equal(names, noLabel) {
		return nil
	}
	return fmt.Errorf("the header names the columns %s; expected the training table's %s (the label %q may be left out), in that order",
		strings.Join(names, ", "), strings.Join(info.Columns, ", "), info.Label)
}

// readTableRows reads the rows of a CSV file laid out as the run's
// training table (the same data.skip_rows and data.header; the label
// column may be left out) and returns their features, standardized as in
// training, and the file line of each row.
func readTableRows(path string, cfg *Config, info *tableInfo) (rows [][]float32, lines []int, err error) {
	r, f, err := data.OpenCSV(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	table := &data.Table{Columns: info.Columns, Label: info.Label, LabelColumn: slices.Index(info.Columns, info.Label)}
	for _, name := range info.Features {
		c := slices.Index(info.Columns, name)
		if c < 0 || table.LabelColumn < 0 {
			return nil, nil, fmt.Errorf("%s: the run's feature %q or label %q is not one of its columns %v", dataFile, name, info.Label, info.Columns)
		}
		table.FeatureColumns = append(table.FeatureColumns, c)
	}
	std := info.standardizer()
	skip, header := cfg.Data.SkipRows, cfg.Data.Header
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		switch {
		case skip > 0:
			skip--
			continue
		case len(rec) == 1 && strings.TrimSpace(rec[0]) == "":
			continue
		case header:
			header = false
			if err := sameColumns(rec, info); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: %w", path, line, err)
			}
			continue
		}
		x, err := table.Row(rec)
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		std.Apply(x)
		rows, lines = append(rows, x), append(lines, line)
	}
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("%s: no rows to predict", path)
	}
	return rows, lines, nil
}
