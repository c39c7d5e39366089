package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DefaultClasses is the number of classes LoadIDX assumes: 10, as in MNIST
// and Fashion-MNIST.
const DefaultClasses = 10

// DefaultFashionMNISTDir is where Debian's dataset-fashion-mnist package
// installs Fashion-MNIST.
const DefaultFashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// Per-pixel statistics of the Fashion-MNIST training images scaled to [0, 1],
// for (*InMemory).Normalize.
const (
	// FashionMNISTMean is the mean pixel value of the Fashion-MNIST training set.
	FashionMNISTMean = 0.2860
	// FashionMNISTStd is the standard deviation of the pixel values of the
	// Fashion-MNIST training set.
	FashionMNISTStd = 0.3530
)

// FashionMNISTClassNames returns the names of the ten Fashion-MNIST classes,
// indexed by label, in a new slice.
func FashionMNISTClassNames() []string {
	return []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
		"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}
}

// LoadIDX reads an IDX images file and an IDX labels file (each gzipped or
// not) into an InMemory dataset of DefaultClasses classes. Pixels are scaled
// from 0..255 to [0, 1]; the sample shape is [1, rows, cols].
func LoadIDX(imagesPath, labelsPath string) (*InMemory, error) {
	return LoadIDXClasses(imagesPath, labelsPath, DefaultClasses)
}

// LoadIDXClasses is LoadIDX for datasets of a given number of classes: every
// label must be below classes.
func LoadIDXClasses(imagesPath, labelsPath string, classes int) (*InMemory, error) {
	if classes <= 0 || classes > 256 {
		return nil, fmt.Errorf("load %s: classes = %d, expected 1..256 for uint8 labels", labelsPath, classes)
	}
	images, err := ReadIDXImages(imagesPath)
	if err != nil {
		return nil, err
	}
	labels, err := ReadIDXLabels(labelsPath)
	if err != nil {
		return nil, err
	}
	n := images.Dims[0]
	if n != labels.Dims[0] {
		return nil, fmt.Errorf("load idx: %s has %d images but %s has %d labels, expected the same count",
			imagesPath, n, labelsPath, labels.Dims[0])
	}
	y := make([]int64, n)
	for i, v := range labels.Data {
		if int(v) >= classes {
			return nil, fmt.Errorf("read %s: label %d at index %d is out of range, expected 0..%d (%d classes)",
				labelsPath, v, i, classes-1, classes)
		}
		y[i] = int64(v)
	}
	var scale [256]float32
	for i := range scale {
		scale[i] = float32(i) / 255
	}
	x := make([]float32, len(images.Data))
	for i, v := range images.Data {
		x[i] = scale[v]
	}
	return &InMemory{X: x, Y: y, Shape: []int{1, images.Dims[1], images.Dims[2]}, Classes: classes}, nil
}

// fashionFiles returns the base names of the Fashion-MNIST files, in the
// order train images, train labels, test images, test labels.
func fashionFiles() [4]string {
	return [4]string{
		"train-images-idx3-ubyte",
		"train-labels-idx1-ubyte",
		"t10k-images-idx3-ubyte",
		"t10k-labels-idx1-ubyte",
	}
}

// LoadFashionMNIST loads the Fashion-MNIST training set (60000 images) and
// test set (10000 images) from dir, which holds
// {train,t10k}-{images-idx3,labels-idx1}-ubyte, each with or without a .gz
// suffix (DefaultFashionMNISTDir after `apt-get install dataset-fashion-mnist`).
// Pixels are scaled to [0, 1] and not normalized; see (*InMemory).Normalize.
func LoadFashionMNIST(dir string) (train, test *InMemory, err error) {
	if train, test, err = LoadIDXDir(dir, 10); err != nil {
		return nil, nil, err
	}
	for i, ds := range []*InMemory{train, test} {
		if ds.Shape[1] != 28 || ds.Shape[2] != 28 {
			path, _ := findIDX(dir, fashionFiles()[2*i])
			return nil, nil, fmt.Errorf("load fashion-mnist: %s: images are %d×%d, expected 28×28",
				path, ds.Shape[1], ds.Shape[2])
		}
	}
	return train, test, nil
}

// LoadIDXDir loads a training and a test set stored as Fashion-MNIST is
// (MNIST, KMNIST and others are too): dir holds
// {train,t10k}-{images-idx3,labels-idx1}-ubyte, each with or without a .gz
// suffix. Images may have any size; every label must lie in [0, classes)
// (an error names the file and the sample index otherwise). Pixels are
// scaled to [0, 1].
func LoadIDXDir(dir string, classes int) (train, test *InMemory, err error) {
	var paths [4]string
	var missing []string
	files := fashionFiles()
	for i, base := range files {
		p, err := findIDX(dir, base)
		if err != nil {
			return nil, nil, err
		}
		if p == "" {
			missing = append(missing, base+"[.gz]")
		}
		paths[i] = p
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("load fashion-mnist: %s: missing %s (looked for %s, each with or without .gz); "+
			"install them with `apt-get install dataset-fashion-mnist` (into %s)",
			dir, strings.Join(missing, ", "), strings.Join(files[:], ", "), DefaultFashionMNISTDir)
	}
	if train, err = LoadIDXClasses(paths[0], paths[1], classes); err != nil {
		return nil, nil, err
	}
	if test, err = LoadIDXClasses(paths[2], paths[3], classes); err != nil {
		return nil, nil, err
	}
	if !slices.Equal(train.Shape, test.Shape) {
		return nil, nil, fmt.Errorf("load idx: %s: test images are %v, training images %v: expected the same size", paths[2], test.Shape, train.Shape)
	}
	return train, test, nil
}

// findIDX returns the path of base.gz or base in dir, whichever exists (in
// that order), or "" if neither does.
func findIDX(dir, base string) (string, error) {
	for _, name := range []string{base + ".gz", base} {
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		switch {
		case err == nil && !st.IsDir():
			return p, nil
		case err == nil, errors.Is(err, fs.ErrNotExist):
			continue
		default:
			return "", fmt.Errorf("load fashion-mnist: %w", err)
		}
	}
	return "", nil
}
