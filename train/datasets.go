package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/internal/filekind"
)

// datasets are the training and test sets of a run and what the model
// needs to know about them.
type datasets struct {
	train, test data.Dataset
	// classes is the number of outputs of the model: the classes of a
	// classifier, 1 for a regression.
	classes int
	// lm describes the text of a language model (nil for images).
	lm *languageModel
	// augment wraps the training set when data.augment_pad or
	// data.augment_flip is on.
	augment *data.Augmented
	// images is the training set of data set "images", whose random
	// crops change with the epoch.
	images *data.ImageFolder
	// targets holds the numbers a regression learns (nil for a
	// classifier).
	targets *regressionTargets
	// info is what eval, predict and export need to know about the data
	// (saved as data.json in the run folder).
	info *runData
	// notes are what the run should say about its data (columns left
	// out, images skipped).
	notes []string
}

// regressionTargets are the numbers a regression learns, by sample
// index, standardized with the training targets' mean and standard
// deviation (the model learns (y - mean) / std, so that its outputs are of
// order 1 whatever the column's units; tableInfo keeps the two).
type regressionTargets struct {
	train, test []float32
	// std is the training targets' standard deviation.
	std float64
	// testVar is the population variance of the test targets in their
	// own units: R² is 1 - MSE/testVar.
	testVar float64
}

// lossScale is what a loss on standardized targets is multiplied by to be
// a mean squared error in the targets' units.
func (r *regressionTargets) lossScale() float64 { return r.std * r.std }

// runData is what a run knows about its data beyond the samples: the
// class names, the transform of images and the columns and
// standardization of a table. The trainer writes it to the run folder as
// data.json; eval, predict and export read it there, so that they
// transform their inputs as training did.
type runData struct {
	// Name is data.name.
	Name string `json:"data"`
	// Task is "classification" or "regression".
	Task string `json:"task"`
	// SampleShape is the shape of one sample the model takes.
	SampleShape []int `json:"sample_shape"`
	// Classes names the classes in label order (empty for a regression
	// and a language model).
	Classes []string `json:"classes,omitempty"`
	// Image is the transform of image data sets.
	Image *imageInfo `json:"image,omitempty"`
	// Table describes the columns of a "csv" table.
	Table *tableInfo `json:"table,omitempty"`
}

// imageInfo is how images become samples: converted to Channels,
// resized and center-cropped to Height×Width, normalized per channel.
type imageInfo struct {
	Channels int       `json:"channels"`
	Height   int       `json:"height"`
	Width    int       `json:"width"`
	Mean     []float32 `json:"mean,omitempty"`
	Std      []float32 `json:"std,omitempty"`
}

// transform returns the evaluation transform of the images.
func (i *imageInfo) transform() data.ImageTransform {
	return data.ImageTransform{Height: i.Height, Width: i.Width, Channels: i.Channels, Mean: i.Mean, Std: i.Std}
}

// tableInfo is how the rows of a table become samples: the columns of
// the training file, the label column's name, the features read and their
// standardization (fitted on the training rows), and a regression's
// target standardization.
type tableInfo struct {
	Columns  []string  `json:"columns"`
	Label    string    `json:"label"`
	Features []string  `json:"features"`
	Mean     []float64 `json:"mean"`
	Std      []float64 `json:"std"`
	// TargetMean and TargetStd standardize a regression's targets: the
	// model's output y' means y = y'·TargetStd + TargetMean.
	TargetMean float64 `json:"target_mean,omitempty"`
	TargetStd  float64 `json:"target_std,omitempty"`
}

// standardizer returns the standardization of the features.
func (t *tableInfo) standardizer() data.Standardizer {
	return data.Standardizer{Mean: t.Mean, Std: t.Std}
}

// targetStandardizer returns the standardization of a regression's
// targets.
func (t *tableInfo) targetStandardizer() data.Standardizer {
	return data.Standardizer{Mean: []float64{t.TargetMean}, Std: []float64{t.TargetStd}}
}

// dataFile is the name of runData's file in the run folder.
const dataFile = "data.json"

// writeRunData writes info to the run folder dir.
func writeRunData(dir string, info *runData) error {
	js, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, dataFile), append(js, '\n')); err != nil {
		return fmt.Errorf("%s: %w", dataFile, err)
	}
	return nil
}

// Bounds on a run's data.json: its size, and the values of one sample
// (four channels of the largest image the data package decodes).
const (
	maxRunDataBytes = 64 << 20
	maxSampleValues = 4 * data.MaxImagePixels
)

// readRunData reads the data.json of the run folder dir; it returns nil
// and no error for a run written before data.json existed.
func readRunData(dir string) (*runData, error) {
	path := filepath.Join(dir, dataFile)
	f, st, err := filekind.OpenRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > maxRunDataBytes {
		return nil, fmt.Errorf("%s: expected a JSON file of at most %d bytes, found %d bytes", path, maxRunDataBytes, st.Size())
	}
	js, err := io.ReadAll(io.LimitReader(f, maxRunDataBytes))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var info runData
	if err := json.Unmarshal(js, &info); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(info.SampleShape) == 0 {
		return nil, fmt.Errorf("%s: expected a sample_shape, found none", path)
	}
	// The model is built for this shape before any weight is read: a
	// forged one must not make it allocate without bound.
	n := 1
	for _, d := range info.SampleShape {
		if d < 1 || d > maxSampleValues/n {
			return nil, fmt.Errorf("%s: sample_shape %v: expected positive sizes of at most %d values in all", path, info.SampleShape, maxSampleValues)
		}
		n *= d
	}
	return &info, nil
}

// progressFunc reports the progress of long work: done of total items
// of what ("decoding training images").
type progressFunc func(what string, done, total int)

// loadDatasets reads the training and test sets named by the config. A
// language model resuming from a checkpoint keeps the checkpoint's
// vocabulary (vocab), so that its ids mean the same characters; saved,
// when not nil, is the data.json of the run (eval), whose classes and
// standardization are kept. progress (may be nil) hears of the decoding
// of images.
func loadDatasets(cfg *Config, vocab string, saved *runData, progress progressFunc) (*datasets, error) {
	switch cfg.Data.Name {
	case "text":
		return loadText(cfg, vocab)
	case "images":
		return loadImageFolder(cfg, saved, progress)
	case "csv":
		return loadTable(cfg, saved)
	}
	if reg, ok := datasetRegistry.lookup(cfg.Data.Name); ok {
		d, err := loadRegistered(cfg, reg)
		if err != nil {
			return nil, err
		}
		return prepareData(cfg, d, 0)
	}
	d, fill, files, err := loadImageFiles(cfg)
	if err != nil {
		return nil, err
	}
	ds, err := prepareData(cfg, d, fill)
	if err != nil {
		return nil, err
	}
	ds.notes = append(ds.notes, "read the IDX files "+strings.Join(files, ", "))
	shape := d.Train.SampleShape()
	info := &imageInfo{Channels: shape[0], Height: shape[1], Width: shape[2]}
	if cfg.Data.Normalize {
		info.Mean, info.Std = []float32{data.FashionMNISTMean}, []float32{data.FashionMNISTStd}
	}
	ds.info.Image = info
	if cfg.Data.Name == "fashion-mnist" {
		ds.info.Classes = data.FashionMNISTClassNames()
	}
	return ds, nil
}

// loadImageFiles reads the built-in IDX data sets (Fashion-MNIST, an IDX
// folder) and normalizes them; fill is the value of a black pixel after
// normalization, for the padding of augmentation, and files are the
// paths of the files read (data.LoadIDXDir chooses between a file and its
// .gz), for the run to say.
func loadImageFiles(cfg *Config) (d *Data, fill float32, files []string, err error) {
	var tr, te *data.InMemory
	classes := 10
	switch cfg.Data.Name {
	case "fashion-mnist":
		tr, te, err = data.LoadFashionMNIST(cfg.Data.Dir)
	case "idx":
		classes = cfg.Model.Classes
		if classes == 0 { // the largest label decides
			if tr, te, err = data.LoadIDXDir(cfg.Data.Dir, 256); err == nil {
				classes = int(slices.Max(slices.Concat(tr.Y, te.Y, []int64{0}))) + 1 // an empty set is checkData's to report
				tr.Classes, te.Classes = classes, classes
			}
		} else {
			tr, te, err = data.LoadIDXDir(cfg.Data.Dir, classes)
		}
	default:
		err = fmt.Errorf("%s: data.name: unknown data set %q (known: %v)", cfg.File(), cfg.Data.Name, datasetRegistry.names())
	}
	if err != nil {
		return nil, 0, nil, err
	}
	if cfg.Data.Normalize {
		tr.Normalize(data.FashionMNISTMean, data.FashionMNISTStd)
		te.Normalize(data.FashionMNISTMean, data.FashionMNISTStd)
		fill = -data.FashionMNISTMean / data.FashionMNISTStd // black, normalized
	}
	return &Data{Train: tr, Test: te, Classes: classes}, fill, slices.Concat(tr.Files, te.Files), nil
}

// prepareData makes the run's data sets from the data d (any data set but
// a language model's text): the first train.limit training samples,
// augmented as data.augment_* says (padding with fill).
func prepareData(cfg *Config, d *Data, fill float32) (*datasets, error) {
	if m := cfg.Model.Classes; m > 0 && m != d.Classes && cfg.Task != "regression" {
		where, _ := cfg.origins.Where(cfg.File(), "model.classes")
		return nil, fmt.Errorf("%s: model.classes: expected 0 (the data's class count) or %d, found %d", where, d.Classes, m)
	}
	ds := &datasets{train: limit(d.Train, cfg.Train.Limit), test: d.Test, classes: d.Classes,
		info: &runData{Name: cfg.Data.Name, Task: cfg.Task, SampleShape: slices.Clone(d.Train.SampleShape())}}
	for c := range d.Classes {
		ds.info.Classes = append(ds.info.Classes, strconv.Itoa(c))
	}
	if a := cfg.Data; a.AugmentPad > 0 || a.AugmentFlip {
		if shape := d.Train.SampleShape(); len(shape) >= 2 && a.AugmentPad > data.MaxAugmentPad(shape) {
			where, suffix := cfg.origins.Where(cfg.File(), "data.augment_pad")
			return nil, inputError{fmt.Errorf("%s: data.augment_pad: %d is larger than the images (%d×%d); at most %d%s",
				where, a.AugmentPad, shape[len(shape)-2], shape[len(shape)-1], data.MaxAugmentPad(shape), suffix)}
		}
		aug := data.Augment{Pad: a.AugmentPad, Fill: fill, FlipHorizontal: a.AugmentFlip}
		var err error
		if ds.augment, err = data.NewAugmented(ds.train, aug, cfg.Seed); err != nil {
			return nil, fmt.Errorf("%s: data: %w", cfg.File(), err)
		}
		ds.train = ds.augment
	}
	return ds, nil
}

// imagenetMean and imagenetStd are the statistics of data.stats
// "imagenet" (torchvision's).
var (
	imagenetMean = []float64{0.485, 0.456, 0.406}
	imagenetStd  = []float64{0.229, 0.224, 0.225}
)

// loadImageFolder reads data set "images": the class folders of
// data.dir/train and data.dir/val (or test, or a split of train), decoded
// once up front (every bad image is found before training starts) and
// kept in memory as data.cache says.
func loadImageFolder(cfg *Config, saved *runData, progress progressFunc) (*datasets, error) {
	d := cfg.Data
	fail := func(err error) (*datasets, error) {
		var bad *data.BadImageError
		if errors.As(err, &bad) {
			return nil, fmt.Errorf("%s: data.dir: %w (data.on_bad_image: skip trains without it)", cfg.File(), err)
		}
		return nil, fmt.Errorf("%s: data.dir: %w", cfg.File(), err)
	}
	var classes []string
	if saved != nil {
		classes = saved.Classes
	}
	if fi, err := os.Stat(filepath.Join(d.Dir, "train")); err != nil || !fi.IsDir() {
		return fail(fmt.Errorf("%s has no train/ folder: expected %s/train/<class>/<images> and %s/val/<class>/<images> (or test/)", d.Dir, d.Dir, d.Dir))
	}
	trainList, err := data.ScanImageFolder(filepath.Join(d.Dir, "train"), classes)
	if err != nil {
		return fail(err)
	}
	var valList *data.ImageList
	for _, name := range []string{"val", "test"} {
		dir := filepath.Join(d.Dir, name)
		if _, err := os.Stat(dir); err == nil {
			if valList, err = data.ScanImageFolder(dir, trainList.Classes); err != nil {
				return fail(err)
			}
			break
		}
	}
	if valList == nil {
		trainList, valList = trainList.Split(d.ValFraction, cfg.Seed)
	}
	info, err := imageTransform(cfg, trainList, saved)
	if err != nil {
		return fail(err)
	}
	tr := info.transform()
	tr.RandomResizedCrop, tr.Scale, tr.Ratio = d.AugmentCrop, d.AugmentScale, d.AugmentRatio
	folder := func(list *data.ImageList, t data.ImageTransform, train bool) (*data.ImageFolder, error) {
		what := "decoding the validation images of " + list.Root
		if train {
			what = "decoding the training images of " + list.Root
		}
		fc := data.ImageFolderConfig{Transform: t, Train: train, Seed: cfg.Seed,
			Cache: d.Cache, SkipBad: d.OnBadImage == "skip", Workers: d.Workers}
		if progress != nil {
			fc.Progress = func(done, total int) { progress(what, done, total) }
		}
		return data.NewImageFolder(list, fc)
	}
	trainSet, err := folder(trainList, tr, true)
	if err != nil {
		return fail(err)
	}
	valSet, err := folder(valList, info.transform(), false)
	if err != nil {
		return fail(err)
	}
	var fill float32 // black, normalized
	if len(info.Mean) > 0 {
		fill = -info.Mean[0] / info.Std[0]
	}
	ds, err := prepareData(cfg, &Data{Train: trainSet, Test: valSet, Classes: len(trainList.Classes)}, fill)
	if err != nil {
		return nil, err
	}
	ds.images, ds.info.Classes, ds.info.Image = trainSet, trainList.Classes, info
	for _, set := range []*data.ImageFolder{trainSet, valSet} {
		if bad := set.Skipped(); len(bad) > 0 {
			ds.notes = append(ds.notes, fmt.Sprintf("skipped %d bad images (data.on_bad_image: skip):\n  %s", len(bad), strings.Join(bad, "\n  ")))
		}
	}
	if !trainSet.Cached() {
		ds.notes = append(ds.notes, "the training images are decoded at every use (data.cache: "+d.Cache+")")
	}
	return ds, nil
}

// imageTransform decides the size, channels and normalization of the
// images: the config's, else the saved run's, else the first training
// image's.
func imageTransform(cfg *Config, list *data.ImageList, saved *runData) (*imageInfo, error) {
	d := cfg.Data
	info := &imageInfo{Channels: d.Channels}
	if len(d.ImageSize) == 2 {
		info.Height, info.Width = d.ImageSize[0], d.ImageSize[1]
	}
	if saved != nil && saved.Image != nil {
		if info.Channels == 0 {
			info.Channels = saved.Image.Channels
		}
		if info.Height == 0 {
			info.Height, info.Width = saved.Image.Height, saved.Image.Width
		}
	}
	if info.Channels == 0 || info.Height == 0 {
		img, err := data.DecodeImage(list.Files[0])
		if err != nil {
			return nil, err
		}
		if info.Channels == 0 {
			info.Channels = imageChannels(img)
		}
		if info.Height == 0 {
			b := img.Bounds()
			info.Height, info.Width = b.Dy(), b.Dx()
		}
	}
	mean, std := d.Mean, d.Std
	switch d.Stats {
	case "imagenet":
		mean, std = imagenetMean, imagenetStd
		if info.Channels == 1 { // the luma of ImageNet's statistics
			mean = []float64{0.299*mean[0] + 0.587*mean[1] + 0.114*mean[2]}
			std = []float64{0.299*std[0] + 0.587*std[1] + 0.114*std[2]}
		}
	case "fashion-mnist":
		mean, std = []float64{data.FashionMNISTMean}, []float64{data.FashionMNISTStd}
	}
	if len(mean) > 0 {
		if len(mean) != 1 && len(mean) != info.Channels {
			return nil, fmt.Errorf("data.mean has %d values for %d-channel images, expected 1 or %d", len(mean), info.Channels, info.Channels)
		}
		for c := range info.Channels {
			info.Mean = append(info.Mean, float32(mean[min(c, len(mean)-1)]))
			info.Std = append(info.Std, float32(std[min(c, len(std)-1)]))
		}
	}
	return info, nil
}

// imageChannels is 1 for a grey image, 3 for any other.
func imageChannels(img image.Image) int {
	switch img.ColorModel() {
	case color.GrayModel, color.Gray16Model:
		return 1
	}
	return 3
}

// loadTable reads data set "csv": data.file split into training and
// validation rows, or data.train_file and data.val_file. The features are
// standardized with the training rows' statistics (the saved run's, when
// saved is given).
func loadTable(cfg *Config, saved *runData) (*datasets, error) {
	d := cfg.Data
	regression := cfg.Task == "regression"
	tc := data.TableConfig{Label: d.Label, Features: d.Features, Header: d.Header, SkipRows: d.SkipRows, Regression: regression}
	if saved != nil && saved.Table != nil {
		tc.Features, tc.Classes = saved.Table.Features, saved.Classes
	}
	var trainT, valT *data.Table
	if d.File != "" {
		t, err := data.ReadTable(d.File, tc)
		if err != nil {
			return nil, fmt.Errorf("%s: data.file: %w", cfg.File(), err)
		}
		if trainT, valT, err = t.Split(d.ValFraction, cfg.Seed); err != nil {
			return nil, fmt.Errorf("%s: data.val_fraction: %s: %w", cfg.File(), d.File, err)
		}
	} else {
		var err error
		if trainT, err = data.ReadTable(d.TrainFile, tc); err != nil {
			return nil, fmt.Errorf("%s: data.train_file: %w", cfg.File(), err)
		}
		tc.Features, tc.Classes = trainT.Features, trainT.Classes
		if valT, err = data.ReadTable(d.ValFile, tc); err != nil {
			return nil, fmt.Errorf("%s: data.val_file: %w", cfg.File(), err)
		}
	}
	std := data.FitStandardizer(trainT)
	if saved != nil && saved.Table != nil {
		std = saved.Table.standardizer()
	}
	std.Apply(trainT.X)
	std.Apply(valT.X)
	trainSet, err := trainT.Dataset()
	if err != nil {
		return nil, fmt.Errorf("%s: data: %w", cfg.File(), err)
	}
	valSet, err := valT.Dataset()
	if err != nil {
		return nil, fmt.Errorf("%s: data: %w", cfg.File(), err)
	}
	classes := len(trainT.Classes)
	if regression {
		classes = 1
	}
	ds, err := prepareData(cfg, &Data{Train: trainSet, Test: valSet, Classes: classes}, 0)
	if err != nil {
		return nil, err
	}
	ds.info.Classes = trainT.Classes
	ds.info.Table = &tableInfo{Columns: trainT.Columns, Label: trainT.Label, Features: trainT.Features, Mean: std.Mean, Std: std.Std}
	if len(trainT.Ignored) > 0 {
		ds.notes = append(ds.notes, fmt.Sprintf("%s: left out the columns that are not numbers: %s (data.features lists the columns to read)",
			trainT.Path, strings.Join(trainT.Ignored, ", ")))
	}
	if regression {
		ds.info.Classes = nil
		ts := data.FitStandardizerOf(trainT.Targets, 1)
		if saved != nil && saved.Table != nil && saved.Table.TargetStd > 0 {
			ts = saved.Table.targetStandardizer()
		}
		testVar := variance(valT.Targets)
		ts.Apply(trainT.Targets)
		ts.Apply(valT.Targets)
		ds.info.Table.TargetMean, ds.info.Table.TargetStd = ts.Mean[0], ts.Std[0]
		ds.targets = &regressionTargets{train: trainT.Targets, test: valT.Targets, std: ts.Std[0], testVar: testVar}
	}
	return ds, nil
}

// variance returns the population variance of xs, in float64.
func variance(xs []float32) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += float64(x)
	}
	mean := sum / float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (float64(x) - mean) * (float64(x) - mean)
	}
	return ss / float64(len(xs))
}

// r2 returns the coefficient of determination of a mean squared error
// against targets of variance v: 1 - mse/v (NaN when v is 0).
func r2(mse, v float64) float64 {
	if v == 0 {
		return math.NaN()
	}
	return 1 - mse/v
}
