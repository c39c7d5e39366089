package train

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dataRelConfig writes a config file of data set "idx" reading dataDir,
// with data.augment_pad on line 3 (its value at column 16), and returns
// its path.
func dataRelConfig(t *testing.T, dataDir string, pad int) string {
	t.Helper()
	text := "data:\n" +
		"  name: idx\n" +
		"  augment_pad: " + strconv.Itoa(pad) + "\n" +
		"  dir: " + dataDir + "\n" +
		"model:\n  name: mlp\n  hidden: [8]\n" +
		"optimizer:\n  name: sgd\n  lr: 0.1\n" +
		"train:\n  epochs: 1\n  batch_size: 8\n  limit: 16\n" +
		"output:\n  plot: false\n  progress: false\n"
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// TestDataRelAugmentPadTooLarge checks that a pad larger than the images
// is a user error located at the key, not a run on blank images.
func TestDataRelAugmentPadTooLarge(t *testing.T) {
	dir := syntheticFashion(t, 16, 8)
	config := dataRelConfig(t, dir, 1000000)
	code, stdout, stderr := runTrain(t, "-config", config, "-out", t.TempDir())
	assert.Equal(t, exitInput, code, stderr)
	assert.Contains(t, stderr, config+":3:16: data.augment_pad: 1000000 is larger than the images (28×28); at most 28")
	assert.NotContains(t, stdout, "epoch")

	// The same error from loadDatasets is an inputError.
	cfg, err := LoadConfig(config, nil)
	require.NoError(t, err)
	_, err = loadDatasets(cfg, "", nil, nil)
	var ie inputError
	require.True(t, errors.As(err, &ie), "%v is an inputError", err)

	// From -set, the message says so.
	cfg, err = LoadConfig(dataRelConfig(t, dir, 4), []string{"data.augment_pad=29"})
	require.NoError(t, err)
	_, err = loadDatasets(cfg, "", nil, nil)
	assert.ErrorContains(t, err, "data.augment_pad: 29 is larger than the images (28×28); at most 28 (from -set data.augment_pad=29)")

	cfg, err = LoadConfig(dataRelConfig(t, dir, 28), nil)
	require.NoError(t, err)
	_, err = loadDatasets(cfg, "", nil, nil)
	assert.NoError(t, err, "a pad as large as the images is allowed")
}

// TestDataRelIDXFilesReported checks that the run says which IDX files it
// read, the uncompressed one when a file and its .gz are side by side.
func TestDataRelIDXFilesReported(t *testing.T) {
	dir := syntheticFashion(t, 16, 8) // every file gzipped
	gzipped := filepath.Join(dir, "train-images-idx3-ubyte.gz")
	raw := filepath.Join(dir, "train-images-idx3-ubyte")
	writeIDX(t, raw, 0x803, []int{16, 28, 28}, make([]byte, 16*28*28)) // gzipped, but named raw
	cfg, err := LoadConfig(dataRelConfig(t, dir, 0), nil)
	require.NoError(t, err)
	ds, err := loadDatasets(cfg, "", nil, nil)
	require.NoError(t, err)
	notes := strings.Join(ds.notes, "\n")
	assert.Contains(t, notes, "read the IDX files "+raw+", "+filepath.Join(dir, "train-labels-idx1-ubyte.gz")+", ")
	assert.NotContains(t, notes, gzipped)
}

// TestDataRelDirectoryInPlaceOfFile checks that a directory where an IDX
// file belongs is named as such, with exit status 2.
func TestDataRelDirectoryInPlaceOfFile(t *testing.T) {
	dir := syntheticFashion(t, 16, 8)
	require.NoError(t, os.Remove(filepath.Join(dir, "t10k-labels-idx1-ubyte.gz")))
	sub := filepath.Join(dir, "t10k-labels-idx1-ubyte")
	require.NoError(t, os.Mkdir(sub, 0o755))
	code, _, stderr := runTrain(t, "-config", dataRelConfig(t, dir, 0), "-out", t.TempDir())
	assert.Equal(t, exitInput, code, stderr)
	assert.Contains(t, stderr, sub+" is a directory, expected an IDX file")
	assert.NotContains(t, stderr, "missing")
}

// TestDataRelCountMismatch checks that images and labels files that
// disagree are named, with both counts, and exit status 2.
func TestDataRelCountMismatch(t *testing.T) {
	dir := syntheticFashion(t, 16, 8)
	labels := filepath.Join(dir, "train-labels-idx1-ubyte.gz")
	writeIDX(t, labels, 0x801, []int{15}, make([]byte, 15))
	code, _, stderr := runTrain(t, "-config", dataRelConfig(t, dir, 0), "-out", t.TempDir())
	assert.Equal(t, exitInput, code, stderr)
	assert.Contains(t, stderr, filepath.Join(dir, "train-images-idx3-ubyte.gz")+" has 16 images but "+labels+" has 15 labels, expected the same count")
}
