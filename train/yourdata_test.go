package train

import (
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/tensor"
)

// writeImage writes img as a PNG, or a JPEG when path ends in .jpg.
func writeImage(t *testing.T, path string, img image.Image) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	f, err := os.Create(path)
	require.NoError(t, err)
	if strings.HasSuffix(path, ".jpg") {
		require.NoError(t, jpeg.Encode(f, img, &jpeg.Options{Quality: 95}))
	} else {
		require.NoError(t, png.Encode(f, img))
	}
	require.NoError(t, f.Close())
}

// stripes draws a 12×12 grey image of class "horizontal" or "vertical":
// bright stripes along rows or columns, at a random phase.
func stripes(class string, rng *rand.Rand) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, 12, 12))
	phase := rng.IntN(3)
	for y := range 12 {
		for x := range 12 {
			k := y
			if class == "vertical" {
				k = x
			}
			v := uint8(20 + rng.IntN(30))
			if (k+phase)%3 == 0 {
				v = uint8(200 + rng.IntN(50))
			}
			img.SetGray(x, y, color.Gray{Y: v})
		}
	}
	return img
}

// imageFolder writes DIR/train/<class>/ and, when val > 0, DIR/val/<class>/
// with n and val striped images per class (PNG, a JPEG now and then).
func imageFolder(t *testing.T, n, val int) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, class := range []string{"horizontal", "vertical"} {
		for i := range n + val {
			split := "train"
			if i >= n {
				split = "val"
			}
			ext := ".png"
			if i%5 == 4 {
				ext = ".jpg"
			}
			writeImage(t, filepath.Join(dir, split, class, fmt.Sprintf("%03d%s", i, ext)), stripes(class, rng))
		}
	}
	return dir
}

// imagesConfig is a small config training an MLP on an image folder.
func imagesConfig(t *testing.T, dir string, extra ...string) []string {
	out := t.TempDir()
	return append([]string{"-config", mlpConfig, "-set", "data.name=images", "-set", "data.dir=" + dir,
		"-set", "data.stats=fashion-mnist", "-set", "model.hidden=[32]", "-set", "train.epochs=3",
		"-set", "train.batch_size=8", "-set", "optimizer.lr=0.01", "-set", "output.plot=false", "-out", out}, extra...)
}

// TestTrainImageFolder trains on a folder of class sub-folders, then uses
// the run as a user would: the classes are the folder names (data.json),
// eval repeats the last evaluation, predict takes an RGB image of another
// size with -top-k, and export writes an ONNX file that gives the same
// probabilities as predict.
func TestTrainImageFolder(t *testing.T) {
	dir := imageFolder(t, 24, 8)
	args := imagesConfig(t, dir)
	run := args[len(args)-1]
	code, stdout, stderr := runTrain(t, args...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "48 training and 16 test samples")
	metrics := readMetrics(t, filepath.Join(run, "metrics.jsonl"))
	require.Len(t, metrics, 3)
	assert.GreaterOrEqual(t, metrics[2]["test_accuracy"], 0.9, "stripes are easy")

	info, err := readRunData(run)
	require.NoError(t, err)
	assert.Equal(t, []string{"horizontal", "vertical"}, info.Classes)
	assert.Equal(t, []int{1, 12, 12}, info.SampleShape)

	code, stdout, stderr = runTrain(t, "eval", "-run", run, "-checkpoint", "last")
	require.Equal(t, exitOK, code, stderr)
	var ev map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &ev))
	assert.InDelta(t, metrics[2]["test_accuracy"], ev["test_accuracy"], 1e-12)

	// An RGB image three times the size, vertical stripes in red.
	rgb := image.NewRGBA(image.Rect(0, 0, 36, 36))
	for y := range 36 {
		for x := range 36 {
			c := color.RGBA{30, 30, 30, 255}
			if (x/3)%3 == 0 {
				c = color.RGBA{255, 200, 200, 255}
			}
			rgb.Set(x, y, c)
		}
	}
	big := filepath.Join(t.TempDir(), "big.png")
	writeImage(t, big, rgb)
	code, stdout, stderr = runTrain(t, "predict", "-run", run, "-checkpoint", "last", "-top-k", "2", big)
	require.Equal(t, exitOK, code, stderr)
	var p prediction
	require.NoError(t, json.Unmarshal([]byte(stdout), &p))
	assert.Equal(t, "vertical", p.Label)
	require.Len(t, p.Top, 2)
	assert.Equal(t, "vertical", p.Top[0].Label)
	assert.Equal(t, "horizontal", p.Top[1].Label)

	// A folder: every image in it and below, in sorted order.
	code, stdout, stderr = runTrain(t, "predict", "-run", run, "-checkpoint", "last", filepath.Join(dir, "val"))
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 16)
	right := 0
	for _, line := range lines {
		var q prediction
		require.NoError(t, json.Unmarshal([]byte(line), &q))
		if strings.Contains(q.File, string(filepath.Separator)+q.Label+string(filepath.Separator)) {
			right++
		}
	}
	assert.GreaterOrEqual(t, right, 14, "the folders' images are mostly classified right")

	file := filepath.Join(t.TempDir(), "stripes.onnx")
	code, _, stderr = runTrain(t, "export", "-run", run, "-checkpoint", "last", "-o", file)
	require.Equal(t, exitOK, code, stderr)
	m, err := onnx.Load(file)
	require.NoError(t, err)
	assert.Contains(t, m.Doc, `"classes":["horizontal","vertical"]`, "the file says which class is which")
	x := make([]float32, 144)
	info.Image.transform().Eval(rgb, x)
	outs, err := m.Run(autograd.Constant(tensor.FromFloat32(x, 1, 1, 12, 12)))
	require.NoError(t, err)
	probs := autograd.Softmax(outs[0], 1).Value.Float32s()
	assert.InDelta(t, p.Probabilities[1], float64(probs[1]), 1e-5)
}

// TestTrainImageFolderWithoutVal: without val/ (nor test/), a seeded
// data.val_fraction of train/ is held out, class by class.
func TestTrainImageFolderWithoutVal(t *testing.T) {
	dir := imageFolder(t, 20, 0)
	code, stdout, stderr := runTrain(t, imagesConfig(t, dir, "-set", "data.val_fraction=0.25", "-set", "train.epochs=1")...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "30 training and 10 test samples")
}

// TestTrainImageFolderBadInput: each problem of an image folder stops the
// run before training with the path and what was expected; a corrupt
// image is skipped, and listed, with data.on_bad_image: skip.
func TestTrainImageFolderBadInput(t *testing.T) {
	t.Run("corrupt image", func(t *testing.T) {
		dir := imageFolder(t, 8, 4)
		bad := filepath.Join(dir, "train", "vertical", "000.png")
		raw, err := os.ReadFile(bad)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(bad, raw[:len(raw)/2], 0o644)) // truncated
		code, stdout, stderr := runTrain(t, imagesConfig(t, dir)...)
		assert.Equal(t, exitInput, code, stderr)
		assert.Contains(t, stderr, bad)
		assert.Contains(t, stderr, "not a valid PNG")
		assert.Contains(t, stderr, "data.on_bad_image: skip")
		assert.NotContains(t, stdout, "epoch")

		code, stdout, stderr = runTrain(t, imagesConfig(t, dir, "-set", "data.on_bad_image=skip", "-set", "train.epochs=1")...)
		require.Equal(t, exitOK, code, stderr)
		assert.Contains(t, stdout, "skipped 1 bad images")
		assert.Contains(t, stdout, bad)
		assert.Contains(t, stdout, "15 training and 8 test samples")
	})
	cases := []struct {
		name  string
		setup func(dir string)
		want  []string
	}{
		{"empty class folder", func(dir string) {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "train", "diagonal"), 0o755))
		}, []string{"diagonal", "no images"}},
		{"different classes in val", func(dir string) {
			require.NoError(t, os.Rename(filepath.Join(dir, "val", "vertical"), filepath.Join(dir, "val", "upright")))
		}, []string{"vertical", "upright"}},
		{"no images", func(dir string) {
			for _, split := range []string{"train", "val"} {
				require.NoError(t, os.RemoveAll(filepath.Join(dir, split)))
				require.NoError(t, os.MkdirAll(filepath.Join(dir, split, "a"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, split, "a", "notes.txt"), []byte("hi"), 0o644))
			}
		}, []string{"train", "has no images"}},
		{"no train folder", func(dir string) {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, "train")))
		}, []string{"data.dir", "train"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := imageFolder(t, 4, 2)
			c.setup(dir)
			code, stdout, stderr := runTrain(t, imagesConfig(t, dir)...)
			assert.Equal(t, exitInput, code, stderr)
			for _, w := range c.want {
				assert.Contains(t, stderr, w)
			}
			assert.NotContains(t, stderr, "panic")
			assert.NotContains(t, stdout, "epoch")
		})
	}
	t.Run("image too small for the model", func(t *testing.T) {
		dir := imageFolder(t, 4, 2)
		code, _, stderr := runTrain(t, imagesConfig(t, dir, "-set", "model.name=lenet5", "-set", "data.image_size=[8,8]")...)
		assert.Equal(t, exitInput, code, stderr)
		assert.Contains(t, stderr, "lenet5: expected images of at least 12×12 pixels, found 1×8×8")
	})
}

// writeCSV writes rows (already joined by commas) under a header.
func writeCSV(t *testing.T, header string, rows []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "table.csv")
	require.NoError(t, os.WriteFile(path, []byte(header+"\n"+strings.Join(rows, "\n")+"\n"), 0o644))
	return path
}

// flowerRows returns n rows of two features and a string class: "small"
// flowers have short petals, "large" ones long, with some noise.
func flowerRows(n int) []string {
	rng := rand.New(rand.NewPCG(7, 8))
	var rows []string
	for i := range n {
		class, size := "small", 1.0
		if i%2 == 1 {
			class, size = "large", 3.0
		}
		rows = append(rows, fmt.Sprintf("%.3f,%.3f,%s", 10+size*5+rng.NormFloat64(), 100+rng.NormFloat64()*20, class))
	}
	return rows
}

// tableArgs trains an MLP on the CSV table file.
func tableArgs(t *testing.T, file string, extra ...string) []string {
	return append([]string{"-config", mlpConfig, "-set", "data.name=csv", "-set", "data.file=" + file,
		"-set", "data.label=species", "-set", "data.val_fraction=0.25", "-set", "model.hidden=[16]",
		"-set", "train.epochs=20", "-set", "train.batch_size=8", "-set", "optimizer.lr=0.01",
		"-set", "output.plot=false", "-set", "output.progress=false", "-out", t.TempDir()}, extra...)
}

// TestTrainCSVClassification trains on a CSV table with a header and
// string classes, then predicts rows with and without the label column:
// the features are standardized with the statistics saved in the run.
func TestTrainCSVClassification(t *testing.T) {
	file := writeCSV(t, "petal,height,species", flowerRows(80))
	args := tableArgs(t, file)
	run := args[len(args)-1]
	code, stdout, stderr := runTrain(t, args...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "60 training and 20 test samples")
	metrics := readMetrics(t, filepath.Join(run, "metrics.jsonl"))
	assert.GreaterOrEqual(t, metrics[len(metrics)-1]["test_accuracy"], 0.95)

	info, err := readRunData(run)
	require.NoError(t, err)
	assert.Equal(t, []string{"large", "small"}, info.Classes)
	require.NotNil(t, info.Table)
	assert.Equal(t, []string{"petal", "height"}, info.Table.Features)
	assert.InDelta(t, 20, info.Table.Mean[0], 1.5, "the training rows' mean petal")

	rows := writeCSV(t, "petal,height", []string{"15.2,90", "24.8,130"})
	code, stdout, stderr = runTrain(t, "predict", "-run", run, "-checkpoint", "last", rows)
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 2)
	var small, large prediction
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &small))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &large))
	assert.Equal(t, "small", small.Label)
	assert.Equal(t, "large", large.Label)
	assert.Equal(t, 2, small.Line)
	assert.Equal(t, 3, large.Line)

	// Rows are read by position: a header in another order is an error.
	swapped := writeCSV(t, "height,petal", []string{"90,15.2"})
	code, _, stderr = runTrain(t, "predict", "-run", run, swapped)
	assert.Equal(t, exitInput, code)
	assert.Contains(t, stderr, swapped+`:1: the header names the columns height, petal; expected the training table's petal, height, species`)

	// A row whose feature is not a number names the file, line and column.
	bad := writeCSV(t, "petal,height,species", []string{"15.2,90,small", "tall,130,large"})
	code, _, stderr = runTrain(t, "predict", "-run", run, bad)
	assert.Equal(t, exitInput, code)
	assert.Contains(t, stderr, bad+":3: field 1 (column \"petal\"): expected a number, found \"tall\"")
}

// TestTrainCSVRegression learns y = 3·a - 2·b + 5 (values near 150) from
// a table (task: regression) with plain SGD and momentum, which the
// standardized targets make stable: the loss is the mean squared error,
// the run reports RMSE and R², predict gives numbers in the column's
// units, and the exported ONNX file takes the raw features and gives
// those numbers (both standardizations are in the graph).
func TestTrainCSVRegression(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var rows []string
	for range 200 {
		a, b := rng.NormFloat64()*10+50, rng.NormFloat64()*3
		rows = append(rows, fmt.Sprintf("%.4f,%.4f,%.4f", a, b, 3*a-2*b+5+rng.NormFloat64()*0.5))
	}
	file := writeCSV(t, "a,b,y", rows)
	args := []string{"-config", mlpConfig, "-set", "task=regression", "-set", "data.name=csv", "-set", "data.file=" + file,
		"-set", "data.label=y", "-set", "model.hidden=[32]", "-set", "optimizer.lr=0.01", "-set", "train.epochs=60",
		"-set", "train.batch_size=16", "-set", "output.plot=false", "-set", "output.progress=false", "-out", t.TempDir()}
	run := args[len(args)-1]
	code, stdout, stderr := runTrain(t, args...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "test loss(MSE)")
	assert.Regexp(t, `rmse [0-9.]+ r2 0\.9`, stdout)
	metrics := readMetrics(t, filepath.Join(run, "metrics.jsonl"))
	last := metrics[len(metrics)-1]
	assert.Greater(t, last["test_r2"], 0.98)
	assert.InDelta(t, math.Sqrt(last["test_loss"]), last["test_rmse"], 1e-9)

	in := writeCSV(t, "a,b", []string{"50,0", "60,-3"})
	code, stdout, stderr = runTrain(t, "predict", "-run", run, "-checkpoint", "last", in)
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 2)
	var p prediction
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &p))
	require.NotNil(t, p.Value)
	assert.InDelta(t, 3*60+6+5, *p.Value, 4, "3·60 - 2·(-3) + 5")

	file = filepath.Join(t.TempDir(), "y.onnx")
	code, _, stderr = runTrain(t, "export", "-run", run, "-checkpoint", "last", "-o", file)
	require.Equal(t, exitOK, code, stderr)
	m, err := onnx.Load(file)
	require.NoError(t, err)
	outs, err := m.Run(autograd.Constant(tensor.FromFloat32([]float32{60, -3}, 1, 2)))
	require.NoError(t, err)
	assert.InDelta(t, *p.Value, float64(outs[0].Value.Float32s()[0]), 1e-4, "the file standardizes raw features as training did")
}

// TestTrainCSVBadInput: a ragged row, a non-numeric feature, a missing
// value or a missing label column stop the run with file:line(:column).
func TestTrainCSVBadInput(t *testing.T) {
	good := flowerRows(20)
	cases := []struct {
		name  string
		rows  []string
		extra []string
		want  string
	}{
		{"ragged row", append(append([]string{}, good[:5]...), "1.5,2.5"), nil, ":7: expected 3 fields, found 2"},
		{"non-numeric feature", append(append([]string{}, good[:5]...), "1.5,high,small"), nil, `:7:2 (column "height"): expected a number, found "high"`},
		{"missing value", append(append([]string{}, good[:5]...), "1.5,,small"), nil, `:7:2 (column "height"): missing value`},
		{"missing label column", good, []string{"-set", "data.label=kind"}, `label column "kind" not found`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := writeCSV(t, "petal,height,species", c.rows)
			code, stdout, stderr := runTrain(t, tableArgs(t, file, c.extra...)...)
			assert.Equal(t, exitInput, code, stderr)
			assert.Contains(t, stderr, file)
			assert.Contains(t, stderr, c.want)
			assert.NotContains(t, stderr, "panic")
			assert.NotContains(t, stdout, "epoch")
		})
	}
}

// TestResumeImageFolderIsBitIdentical: a run on an image folder with
// RandomResizedCrop and flips, killed before a step and resumed, ends
// with the weights of the uninterrupted run bit for bit: the random crops
// depend only on the seed, the epoch and the image.
func TestResumeImageFolderIsBitIdentical(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the process-killing resume test")
	}
	bin := trainBinary(t)
	dir := imageFolder(t, 24, 8)
	args := func(out string) []string {
		return []string{"-config", mlpConfig, "-set", "data.name=images", "-set", "data.dir=" + dir,
			"-set", "data.augment_crop=true", "-set", "data.augment_scale=[0.5,1]", "-set", "data.augment_flip=true",
			"-set", "data.cache=none", "-set", "model.hidden=[16]", "-set", "train.epochs=3", "-set", "train.batch_size=8",
			"-set", "checkpoint.every_steps=4", "-set", "train.threads=1", "-q", "-out", out}
	}
	ref := t.TempDir()
	out, err := command(bin, nil, args(ref)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	run := t.TempDir()
	_, err = command(bin, []string{"HORA_FAULT=crash-at-step:10"}, args(run)...).CombinedOutput()
	require.Error(t, err, "the run was killed at step 10")
	out, err = command(bin, nil, "resume", "-run", run, "-q").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "resuming from")
	assertSameFinalWeights(t, ref, run)
}
