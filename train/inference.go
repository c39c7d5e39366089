package train

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	_ "image/gif" // predict reads GIF images
	_ "image/jpeg"
	_ "image/png"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	cfg   *Config
	ds    *datasets
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

// openSession loads the run's config, data sets, model and checkpoint.
// The weights are the checkpoint's averaged ones when it has them
// (train.ema). "best" falls back to "last" when no evaluation chose one.
func openSession(r runFlags) (*session, error) {
	if r.run == "" {
		return nil, inputError{errors.New("-run DIR is required (the output.dir of a training run)")}
	}
	cfg, err := LoadConfig(filepath.Join(r.run, "config.yaml"), r.sets)
	if err != nil {
		return nil, inputError{err}
	}
	cfg.Output.Dir = r.run
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
	ds, err := loadDatasets(cfg, c.Manifest.Vocab)
	if err != nil {
		return nil, inputError{err}
	}
	dev, err := device.Open(cfg.Device)
	if err != nil {
		return nil, inputError{fmt.Errorf("device: %w", err)}
	}
	model, err := buildModel(cfg, ds.modelInput(cfg, rand.New(rand.NewPCG(cfg.Seed, 1))), ds.lm)
	if err != nil {
		return nil, inputError{err}
	}
	layers.To(model, dev)
	if _, err := checkpoint.LoadInto(filepath.Join(c.Dir, modelFile), layers.StateDict(model)); err != nil {
		return nil, inputError{err}
	}
	if _, ok := c.Manifest.Files[emaFile]; ok {
		avg := map[string]*tensor.Tensor{}
		for _, p := range model.Parameters() {
			avg[p.Name] = p.Value
		}
		if _, err := checkpoint.LoadInto(filepath.Join(c.Dir, emaFile), avg); err != nil {
			return nil, inputError{err}
		}
	}
	layers.Eval(model)
	return &session{cfg: cfg, ds: ds, model: model, dev: dev, ckpt: c}, nil
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
	s, err := openSession(r)
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
		engine: engine, arena: tensor.NewArena()}
	loss, acc, err := t.evaluate(ctx)
	if err != nil {
		return err
	}
	out := map[string]any{"checkpoint": s.ckpt.Dir, "step": s.ckpt.Manifest.Step, "test_loss": loss,
		"test_accuracy": acc, "test_samples": s.ds.test.Len()}
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
	if err := checkExportDir(*out); err != nil {
		return inputError{fmt.Errorf("export: %w", err)}
	}
	s, err := openSession(r)
	if err != nil {
		return err
	}
	sample := s.ds.test.SampleShape()
	if err := exportONNX(*out, s.model, s.ds.lm, s.dev, sample); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(stdout, "exported %s (step %d) to %s (ONNX opset 17%s)\n", s.ckpt.Dir, s.ckpt.Manifest.Step, *out, exportShape(s.ds.lm, sample))
	return nil
}

// prediction is one line of predict's output for an image.
type prediction struct {
	File          string    `json:"file"`
	Index         *int      `json:"index,omitempty"` // the image's index in an IDX file
	Class         int       `json:"class"`
	Label         string    `json:"label,omitempty"`
	Probability   float64   `json:"probability"`
	Probabilities []float64 `json:"probabilities"`
}

// predictCommand classifies images, or continues a text with a language
// model, and prints JSON.
func predictCommand(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	var r runFlags
	r.register(fs)
	prompt := fs.String("prompt", "", "language model: the text to continue (default sample.prompt)")
	length := fs.Int("length", -1, "language model: characters to generate (default sample.length)")
	temp := fs.Float64("temperature", -1, "language model: sampling temperature, 0 = most likely (default sample.temperature)")
	topK := fs.Int("top-k", -1, "language model: sample among the k most likely characters, 0 = all (default sample.top_k)")
	seed := fs.Uint64("seed", 1, "language model: seed of the sampling")
	if err := parseRunFlags(fs, args, stderr, "train predict -run DIR [-checkpoint ...] FILE... | -prompt TEXT"); err != nil {
		return err
	}
	s, err := openSession(r)
	if err != nil {
		return err
	}
	if s.ds.lm != nil {
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
		lm, ok := s.model.(*models.CharLM)
		if !ok {
			return fmt.Errorf("predict: model %s is not a language model", s.cfg.Model.Name)
		}
		text, err := generate(lm, s.ds.lm.vocab, sc, rand.New(rand.NewPCG(*seed, 0)))
		if err != nil {
			return inputError{fmt.Errorf("predict: %w", err)}
		}
		return json.NewEncoder(stdout).Encode(map[string]any{"prompt": sc.Prompt, "text": text,
			"temperature": sc.Temperature, "top_k": sc.TopK, "checkpoint": s.ckpt.Dir})
	}
	if fs.NArg() == 0 {
		return inputError{errors.New("predict: name the image files to classify (PNG, JPEG, GIF, or IDX image files)")}
	}
	shape := s.ds.test.SampleShape() // C×H×W
	var names []string
	if s.cfg.Data.Name == "fashion-mnist" {
		names = data.FashionMNISTClassNames()
	}
	enc := json.NewEncoder(stdout)
	for _, path := range fs.Args() {
		images, err := readImages(path, shape, s.cfg.Data.Normalize)
		if err != nil {
			return inputError{fmt.Errorf("predict: %w", err)}
		}
		for i, img := range images {
			probs, err := classify(s, img, shape)
			if err != nil {
				return fmt.Errorf("predict: %s: %w", path, err)
			}
			p := prediction{File: path, Probabilities: probs}
			if len(images) > 1 || isIDX(path) {
				p.Index = &i
			}
			for c, q := range probs {
				if q > probs[p.Class] {
					p.Class = c
				}
			}
			p.Probability = probs[p.Class]
			if p.Class < len(names) {
				p.Label = names[p.Class]
			}
			if err := enc.Encode(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// classify returns the class probabilities of one image.
func classify(s *session, img []float32, shape []int) ([]float64, error) {
	x := tensor.FromFloat32(img, append([]int{1}, shape...)...).To(s.dev)
	out, err := forwardOnce(s.model, x) // openSession put the model in evaluation mode
	if err != nil {
		return nil, err
	}
	probs := autograd.Softmax(autograd.Constant(out), 1).Value.Cast(device.Float64).Float64s()
	return probs, nil
}

func isIDX(path string) bool {
	return strings.Contains(filepath.Base(path), "idx3")
}

// readImages reads the images of a file: one PNG, JPEG or GIF image
// (converted to grey and, if its size differs, scaled to the model's
// H×W), or every image of an IDX file of the model's size. Pixels are
// scaled to [0, 1] and normalized as in training.
func readImages(path string, shape []int, normalize bool) ([][]float32, error) {
	c, h, w := shape[0], shape[1], shape[2]
	var out [][]float32
	if isIDX(path) {
		idx, err := data.ReadIDXImages(path)
		if err != nil {
			return nil, err
		}
		if idx.Dims[1] != h || idx.Dims[2] != w {
			return nil, fmt.Errorf("%s: images are %d×%d, the model takes %d×%d", path, idx.Dims[1], idx.Dims[2], h, w)
		}
		for i := range idx.Dims[0] {
			img := make([]float32, h*w)
			for j, v := range idx.Data[i*h*w : (i+1)*h*w] {
				img[j] = float32(v) / 255
			}
			out = append(out, img)
		}
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		src, _, err := image.Decode(f)
		if err != nil {
			return nil, fmt.Errorf("%s: not a PNG, JPEG or GIF image: %w", path, err)
		}
		if c != 1 {
			return nil, fmt.Errorf("%s: the model takes %d-channel images; predict reads grey images only", path, c)
		}
		b := src.Bounds()
		img := make([]float32, h*w)
		for y := range h {
			for x := range w {
				// Nearest pixel of the source (an exact copy at the same size).
				sx := b.Min.X + x*b.Dx()/w
				sy := b.Min.Y + y*b.Dy()/h
				r, g, bl, _ := src.At(sx, sy).RGBA()
				img[y*w+x] = float32(0.299*float64(r)+0.587*float64(g)+0.114*float64(bl)) / 65535
			}
		}
		out = append(out, img)
	}
	if normalize {
		for _, img := range out {
			for i, v := range img {
				img[i] = (v - data.FashionMNISTMean) / data.FashionMNISTStd
			}
		}
	}
	return out, nil
}
