package train

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/checkpoint"
	"github.com/hora-dl/hora/onnx"
)

const mlpConfig = "../configs/fashion-mnist-mlp.yaml"

// TestTrainDivergesWithAMessage: a learning rate far too high makes the
// loss infinite; the run stops with exit status 3 naming the step, and
// the last checkpoint it wrote stays complete.
func TestTrainDivergesWithAMessage(t *testing.T) {
	dataDir := syntheticFashion(t, 320, 64)
	out := t.TempDir()
	code, _, stderr := runTrain(t, "-config", mlpConfig, "-set", "data.dir="+dataDir, "-set", "optimizer.lr=1e8",
		"-set", "model.hidden=[16]", "-set", "train.batch_size=32", "-set", "checkpoint.every_steps=1", "-out", out)
	require.Equal(t, exitDiverged, code, stderr)
	assert.Regexp(t, `step \d+ \(epoch 1\): the loss is (NaN|\+Inf|-Inf)`, stderr)
	assert.Contains(t, stderr, "optimizer.lr")
	assert.NotContains(t, stderr, "panic")
	last, err := findCheckpoint(out, "last")
	require.NoError(t, err, "the last good checkpoint is intact")
	assert.Contains(t, stderr, last.Dir)
}

// TestTrainRunDirProblemsBeforeTraining: a run folder that cannot be
// created, or whose disk is too full for the checkpoints, is reported
// before any training.
func TestTrainRunDirProblemsBeforeTraining(t *testing.T) {
	dataDir := syntheticFashion(t, 64, 32)
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	code, stdout, stderr := runTrain(t, "-config", mlpConfig, "-set", "data.dir="+dataDir, "-out", filepath.Join(file, "run"))
	assert.Equal(t, exitInput, code)
	assert.Contains(t, stderr, "output.dir: cannot create "+filepath.Join(file, "run"))
	assert.NotContains(t, stdout, "epoch")

	saved := freeSpace
	defer func() { freeSpace = saved }()
	freeSpace = func(string) (uint64, error) { return 10 << 10, nil }
	out := t.TempDir()
	code, stdout, stderr = runTrain(t, "-config", mlpConfig, "-set", "data.dir="+dataDir, "-out", out)
	assert.Equal(t, exitInput, code)
	assert.Contains(t, stderr, "10.0 KiB free")
	assert.Contains(t, stderr, "checkpoint.keep")
	assert.NotContains(t, stdout, "epoch")
}

// writeIDXSet writes a train/t10k IDX data set of n images of h×w with
// labels i mod classes.
func writeIDXSet(t *testing.T, n, h, w, classes int) string {
	t.Helper()
	dir := t.TempDir()
	for _, split := range []string{"train", "t10k"} {
		images := make([]byte, n*h*w)
		labels := make([]byte, n)
		for i := range labels {
			labels[i] = byte(i % classes)
			images[i*h*w+i%(h*w)] = 255
		}
		writeIDX(t, filepath.Join(dir, split+"-images-idx3-ubyte.gz"), 0x803, []int{n, h, w}, images)
		writeIDX(t, filepath.Join(dir, split+"-labels-idx1-ubyte.gz"), 0x801, []int{n}, labels)
	}
	return dir
}

// TestTrainDataMismatch: data that does not fit the model is an error
// naming the sample.
func TestTrainDataMismatch(t *testing.T) {
	big := writeIDXSet(t, 40, 32, 32, 10)
	small := writeIDXSet(t, 40, 8, 8, 10)
	code, _, stderr := runTrain(t, "-config", mlpConfig, "-set", "data.name=idx", "-set", "data.dir="+small,
		"-set", "model.name=lenet5", "-out", t.TempDir())
	assert.Equal(t, exitInput, code, stderr)
	assert.Contains(t, stderr, "lenet5: expected images of at least 12×12 pixels, found 1×8×8")
	code, _, stderr = runTrain(t, "-config", mlpConfig, "-set", "data.name=idx", "-set", "data.dir="+big,
		"-set", "model.name=transformer", "-set", "model.patch_size=5", "-out", t.TempDir())
	assert.Equal(t, exitInput, code, stderr)
	assert.Contains(t, stderr, "model.patch_size: expected a divisor of both sides of the 32×32 images, found 5")

	// The CNN takes the data's size: 32×32 images train.
	code, stdout, stderr := runTrain(t, "-config", mlpConfig, "-set", "data.name=idx", "-set", "data.dir="+big,
		"-set", "model.name=cnn", "-set", "train.epochs=1", "-out", t.TempDir())
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "epoch 1/1")

	code, _, stderr = runTrain(t, "-config", mlpConfig, "-set", "data.name=idx", "-set", "data.dir="+big,
		"-set", "model.classes=5", "-out", t.TempDir())
	assert.Equal(t, exitInput, code, stderr)
	assert.Contains(t, stderr, "label 5 at index 5 is out of range, expected 0..4")

	// An MLP takes any size: 32×32 images of 10 classes train.
	code, stdout, stderr = runTrain(t, "-config", mlpConfig, "-set", "data.name=idx", "-set", "data.dir="+big,
		"-set", "model.hidden=[8]", "-out", t.TempDir())
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "epoch 10/10")
}

// TestTrainKeepsEarlierRuns: a second run into the folder of a finished
// one does not overwrite it.
func TestTrainKeepsEarlierRuns(t *testing.T) {
	dataDir := syntheticFashion(t, 64, 32)
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"-config", mlpConfig, "-set", "data.dir=" + dataDir, "-set", "train.epochs=1", "-set", "model.hidden=[8]"}
	code, _, stderr := runTrain(t, append(args, "-set", "output.dir="+dir)...)
	require.Equal(t, exitOK, code, stderr)
	code, _, stderr = runTrain(t, append(args, "-set", "output.dir="+dir)...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, dir+" holds an earlier run")
	assert.DirExists(t, filepath.Join(dir+"-2", checkpointsDir))

	code, _, stderr = runTrain(t, append(args, "-out", dir)...)
	assert.Equal(t, exitInput, code)
	assert.Contains(t, stderr, "train resume -run "+dir)
	code, _, stderr = runTrain(t, append(args, "-out", dir, "-overwrite")...)
	assert.Equal(t, exitOK, code, stderr)
}

// TestTrainJSONOutput: -json prints one JSON object per line.
func TestTrainJSONOutput(t *testing.T) {
	dataDir := syntheticFashion(t, 64, 32)
	code, stdout, stderr := runTrain(t, "-config", mlpConfig, "-set", "data.dir="+dataDir, "-set", "train.epochs=2",
		"-set", "model.hidden=[8]", "-json", "-out", t.TempDir())
	require.Equal(t, exitOK, code, stderr)
	events := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		events[ev["event"].(string)]++
	}
	// "info": which IDX files were read.
	assert.Equal(t, map[string]int{"start": 1, "info": 1, "epoch": 2, "end": 1}, events)
}

// TestEvalPredictExport: the commands that use a finished run.
func TestEvalPredictExport(t *testing.T) {
	dataDir := syntheticFashion(t, 320, 100)
	run := t.TempDir()
	code, _, stderr := runTrain(t, "-config", mlpConfig, "-set", "data.dir="+dataDir, "-set", "train.epochs=2",
		"-set", "model.hidden=[32]", "-set", "train.batch_size=32", "-out", run)
	require.Equal(t, exitOK, code, stderr)
	final := readMetrics(t, filepath.Join(run, "metrics.jsonl"))[1]

	code, stdout, stderr := runTrain(t, "eval", "-run", run, "-checkpoint", "last")
	require.Equal(t, exitOK, code, stderr)
	var ev map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &ev))
	assert.InDelta(t, final["test_accuracy"], ev["test_accuracy"], 1e-9, "eval repeats the last evaluation")
	assert.InDelta(t, 20.0, ev["step"], 0)

	// A PNG of class 3 (rows 6-8 lit, as syntheticFashion draws it).
	img := image.NewGray(image.Rect(0, 0, 28, 28))
	for r := 6; r < 9; r++ {
		for c := 4; c < 24; c++ {
			img.SetGray(c, r, color.Gray{Y: 230})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	pngPath := filepath.Join(t.TempDir(), "three.png")
	require.NoError(t, os.WriteFile(pngPath, buf.Bytes(), 0o644))
	code, stdout, stderr = runTrain(t, "predict", "-run", run, pngPath, filepath.Join(dataDir, "t10k-images-idx3-ubyte.gz"))
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 101)
	var p prediction
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &p))
	require.NotNil(t, p.Class)
	assert.Equal(t, 3, *p.Class)
	assert.Equal(t, "Dress", p.Label)
	assert.Len(t, p.Probabilities, 10)

	code, _, stderr = runTrain(t, "predict", "-run", run, filepath.Join(run, "config.yaml"))
	assert.Equal(t, exitInput, code)
	assert.Contains(t, stderr, "config.yaml: not a valid PNG, JPEG, GIF, BMP or WebP image")

	file := filepath.Join(t.TempDir(), "m.onnx")
	code, stdout, stderr = runTrain(t, "export", "-run", run, "-o", file)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "input [batch, 1, 28, 28]")
	_, err := onnx.Load(file)
	require.NoError(t, err)

	code, _, stderr = runTrain(t, "eval", "-run", t.TempDir())
	assert.Equal(t, exitInput, code)
	assert.Contains(t, stderr, "config.yaml")
}

// TestTrainCharLM trains the character-level language model on a small
// text: its validation loss ends below the unigram entropy, it writes
// sample text, and predict continues a prompt.
func TestTrainCharLM(t *testing.T) {
	text := strings.Repeat("the cat sat on the mat. a dog ran in the fog. ", 120)
	file := filepath.Join(t.TempDir(), "corpus.txt")
	require.NoError(t, os.WriteFile(file, []byte(text), 0o644))
	run := t.TempDir()
	code, stdout, stderr := runTrain(t, "-config", "../configs/fortunes-charlm.yaml", "-set", "data.files=["+file+"]",
		"-set", "model.dim=32", "-set", "model.layers=1", "-set", "model.heads=2", "-set", "model.ff=64",
		"-set", "model.context=16", "-set", "train.epochs=3", "-set", "train.batch_size=16",
		"-set", "sample.length=20", "-set", "sample.prompt=the ", "-out", run)
	require.Equal(t, exitOK, code, "%s\n%s", stdout, stderr)
	assert.Contains(t, stdout, "unigram entropy")
	m := readMetrics(t, filepath.Join(run, "metrics.jsonl"))
	require.Len(t, m, 3)
	var unigram float64
	for _, line := range strings.Split(stdout, "\n") {
		if strings.Contains(line, "unigram entropy") {
			f := strings.Fields(line[strings.Index(line, "text ")+5:])
			require.NotEmpty(t, f)
			require.NoError(t, json.Unmarshal([]byte(f[0]), &unigram))
		}
	}
	require.Greater(t, unigram, 2.0)
	assert.Less(t, m[2]["test_loss"], unigram/2, "well under the unigram entropy")

	code, stdout, stderr = runTrain(t, "predict", "-run", run, "-prompt", "the c", "-length", "12", "-temperature", "0")
	require.Equal(t, exitOK, code, stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	assert.Len(t, []rune(got["text"].(string)), 12)

	code, _, stderr = runTrain(t, "predict", "-run", run, "-prompt", "Zebra")
	assert.Equal(t, exitInput, code)
	assert.Contains(t, stderr, `rune 'Z'`)

	file2 := filepath.Join(t.TempDir(), "lm.onnx")
	code, stdout, stderr = runTrain(t, "export", "-run", run, "-o", file2)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "character ids")
}

// TestTrainEarlyStoppingAndEMA: with patience 2 and a minimum
// improvement no evaluation can reach, training stops after the third
// evaluation (steps 4, 8 and the end of the first epoch, 10); with train.ema the final weights are the average, which the
// checkpoint keeps beside the raw weights.
func TestTrainEarlyStoppingAndEMA(t *testing.T) {
	dataDir := syntheticFashion(t, 320, 64)
	out := t.TempDir()
	code, stdout, stderr := runTrain(t, "-config", mlpConfig, "-set", "data.dir="+dataDir, "-set", "model.hidden=[16]",
		"-set", "train.batch_size=32", "-set", "train.epochs=10", "-set", "train.eval_every_steps=4",
		"-set", "train.patience=2", "-set", "train.min_delta=1", "-set", "train.ema=0.9", "-out", out)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "early stopping at step 10")
	assert.NotContains(t, stdout, "epoch 2/10")
	evals := readRecords(t, filepath.Join(out, "metrics.jsonl"), "eval")
	assert.Len(t, evals, 3)

	last, err := findCheckpoint(out, "last")
	require.NoError(t, err)
	assert.Equal(t, 10, last.Manifest.Step)
	raw, _, err := checkpoint.Load(filepath.Join(last.Dir, modelFile))
	require.NoError(t, err)
	avg, _, err := checkpoint.Load(filepath.Join(last.Dir, emaFile))
	require.NoError(t, err)
	final, _, err := checkpoint.Load(filepath.Join(out, modelFile))
	require.NoError(t, err)
	for name, w := range avg {
		assert.Equal(t, w.Float32s(), final[name].Float32s(), "the final weights are the average: %s", name)
		assert.NotEqual(t, w.Float32s(), raw[name].Float32s(), "the average differs from the weights: %s", name)
	}
}
