package data

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadIDX(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pixels := []byte{0, 255, 51, 102, 255, 0, 0, 0, 153, 204, 255, 51}
	images := writeFile(t, dir, "images.gz", gz(encodeIDX(MagicImages, []int{3, 2, 2}, pixels)))
	labels := writeFile(t, dir, "labels", encodeIDX(MagicLabels, []int{3}, []byte{9, 0, 4}))

	ds, err := LoadIDX(images, labels)
	require.NoError(t, err)
	require.NoError(t, ds.Validate())
	assert.Equal(t, 3, ds.Len())
	assert.Equal(t, []int{1, 2, 2}, ds.SampleShape())
	assert.Equal(t, DefaultClasses, ds.Classes)
	assert.Equal(t, []int64{9, 0, 4}, ds.Y)
	want := []float32{0, 1, 0.2, 0.4, 1, 0, 0, 0, 0.6, 0.8, 1, 0.2}
	assert.InDeltaSlice(t, want, ds.X, 1e-7)

	ds, err = LoadIDXClasses(images, labels, 12)
	require.NoError(t, err)
	assert.Equal(t, 12, ds.Classes)
}

func TestLoadIDXErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	images := writeFile(t, dir, "images", encodeIDX(MagicImages, []int{3, 2, 2}, seq(12)))
	labels3 := writeFile(t, dir, "labels3.gz", gz(encodeIDX(MagicLabels, []int{3}, []byte{1, 2, 3})))
	labels4 := writeFile(t, dir, "labels4", encodeIDX(MagicLabels, []int{4}, []byte{1, 2, 3, 4}))
	badLabel := writeFile(t, dir, "badlabel", encodeIDX(MagicLabels, []int{3}, []byte{1, 10, 3}))
	tests := []struct {
		name           string
		images, labels string
		classes        int
		want           []string
	}{
		{"count mismatch", images, labels4, 10, []string{images, "has 3 images", labels4, "has 4 labels"}},
		{"label out of range", images, badLabel, 10, []string{"read " + badLabel, "label 10 at index 1 is out of range, expected 0..9"}},
		{"label out of range for 3 classes", images, labels3, 3, []string{"read " + labels3, "label 3 at index 2 is out of range, expected 0..2 (3 classes)"}},
		{"swapped files", labels3, images, 10, []string{"read " + labels3, "bad magic 0x00000801, expected 0x00000803 (images)"}},
		{"missing images", filepath.Join(dir, "nope"), labels3, 10, []string{filepath.Join(dir, "nope"), "no such file"}},
		{"missing labels", images, filepath.Join(dir, "nope"), 10, []string{filepath.Join(dir, "nope"), "no such file"}},
		{"zero classes", images, labels3, 0, []string{labels3, "classes = 0, expected 1..256"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ds, err := LoadIDXClasses(tt.images, tt.labels, tt.classes)
			require.Error(t, err)
			assert.Nil(t, ds)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// writeFashion writes Fashion-MNIST-like files of n and m images of
// rows×cols pixels into dir, the training files gzipped, the test files not.
func writeFashion(t *testing.T, dir string, n, m, rows, cols int) {
	t.Helper()
	writeFile(t, dir, "train-images-idx3-ubyte.gz", gz(encodeIDX(MagicImages, []int{n, rows, cols}, seq(n*rows*cols))))
	writeFile(t, dir, "train-labels-idx1-ubyte.gz", gz(encodeIDX(MagicLabels, []int{n}, make([]byte, n))))
	writeFile(t, dir, "t10k-images-idx3-ubyte", encodeIDX(MagicImages, []int{m, rows, cols}, seq(m*rows*cols)))
	writeFile(t, dir, "t10k-labels-idx1-ubyte", encodeIDX(MagicLabels, []int{m}, make([]byte, m)))
}

func TestLoadFashionMNIST(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFashion(t, dir, 4, 3, 28, 28)
	train, test, err := LoadFashionMNIST(dir)
	require.NoError(t, err)
	assert.Equal(t, 4, train.Len())
	assert.Equal(t, 3, test.Len())
	assert.Equal(t, []int{1, 28, 28}, train.Shape)
	assert.Equal(t, []int{1, 28, 28}, test.Shape)
	assert.InDelta(t, 5.0/255, test.X[5], 1e-7)
}

func TestLoadFashionMNISTErrors(t *testing.T) {
	t.Parallel()
	t.Run("missing files", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeFile(t, dir, "train-images-idx3-ubyte.gz", gz(encodeIDX(MagicImages, []int{1, 28, 28}, seq(784))))
		_, _, err := LoadFashionMNIST(dir)
		require.Error(t, err)
		for _, w := range []string{dir, "missing train-labels-idx1-ubyte[.gz], t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]",
			"train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte",
			"apt-get install dataset-fashion-mnist", DefaultFashionMNISTDir} {
			assert.Contains(t, err.Error(), w)
		}
	})
	t.Run("wrong image size", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeFashion(t, dir, 2, 2, 2, 3)
		_, _, err := LoadFashionMNIST(dir)
		require.Error(t, err)
		assert.Contains(t, err.Error(), filepath.Join(dir, "train-images-idx3-ubyte.gz"))
		assert.Contains(t, err.Error(), "images are 2×3, expected 28×28")
	})
	t.Run("corrupt test labels", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeFashion(t, dir, 2, 2, 28, 28)
		p := writeFile(t, dir, "t10k-labels-idx1-ubyte", encodeIDX(MagicLabels, []int{2}, []byte{1}))
		_, _, err := LoadFashionMNIST(dir)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "read "+p+": truncated")
	})
}

// TestLoadFashionMNISTInstalled loads the real data set when Debian's
// dataset-fashion-mnist package is installed.
func TestLoadFashionMNISTInstalled(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: loading 70000 images takes about a second")
	}
	if raceEnabled {
		t.Skip("the race detector makes loading 70000 images take most of a minute; the loader's concurrency is race-tested on small data")
	}
	if _, err := os.Stat(DefaultFashionMNISTDir); err != nil {
		t.Skipf("Fashion-MNIST not installed (%v); `apt-get install dataset-fashion-mnist` puts it in %s", err, DefaultFashionMNISTDir)
	}
	train, test, err := LoadFashionMNIST(DefaultFashionMNISTDir)
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		ds   *InMemory
		n    int
	}{{"train", train, 60000}, {"test", test, 10000}} {
		assert.Equal(t, c.n, c.ds.Len(), c.name)
		assert.Equal(t, []int{1, 28, 28}, c.ds.SampleShape(), c.name)
		assert.NoError(t, c.ds.Validate(), c.name)
		counts := make([]int, 10)
		for _, y := range c.ds.Y {
			counts[y]++
		}
		for k, n := range counts {
			assert.Equal(t, c.n/10, n, "%s: samples of class %d", c.name, k) // both sets are balanced
		}
	}
	mean, std := train.MeanStd()
	assert.InDelta(t, FashionMNISTMean, mean, 5e-4)
	assert.InDelta(t, FashionMNISTStd, std, 5e-4)
}

func TestFashionMNISTClassNames(t *testing.T) {
	t.Parallel()
	names := FashionMNISTClassNames()
	require.Len(t, names, DefaultClasses)
	assert.Equal(t, "T-shirt/top", names[0])
	assert.Equal(t, "Ankle boot", names[9])
	names[0] = "changed"
	assert.Equal(t, "T-shirt/top", FashionMNISTClassNames()[0])
}
