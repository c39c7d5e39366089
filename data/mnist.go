package data

import (
	"errors"
	"fmt"
	"io/fs"
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

// maxIDXMemory is the most memory, in bytes, that the data set LoadIDXClasses
// makes may take: 4 bytes a pixel (float32) and 8 a label (int64). It is
// 5 × MaxIDXBytes: room for MaxIDXBytes of pixels with the labels of any
// images of 8 pixels or more, while a header of a billion 1×1 images is
// refused.
const maxIDXMemory = 5 * MaxIDXBytes

// LoadIDX reads an IDX images file and an IDX labels file (each gzipped or
// not) into an InMemory dataset of DefaultClasses classes. Pixels are scaled
// from 0..255 to [0, 1]; the sample shape is [1, rows, cols]. The data set's
// Files are the two paths.
func LoadIDX(imagesPath, labelsPath string) (*InMemory, error) {
	return LoadIDXClasses(imagesPath, labelsPath, DefaultClasses)
}

// LoadIDXClasses is LoadIDX for datasets of a given number of classes: every
// label must be below classes.
//
// Both headers are read before any data: the image count must equal the
// label count (an error names both files and both counts), the data set
// must fit in 5 × MaxIDXBytes of memory (float32 pixels, int64 labels),
// and each file is read as ReadIDX does, so that neither can make it
// allocate more than MaxIDXBytes of data or read past what its header
// declares.
func LoadIDXClasses(imagesPath, labelsPath string, classes int) (*InMemory, error) {
	if classes <= 0 || classes > 256 {
		return nil, fmt.Errorf("load %s: classes = %d, expected 1..256 for uint8 labels", labelsPath, classes)
	}
	images, imagesFile, err := openIDX(imagesPath, MagicImages)
	if err != nil {
		return nil, err
	}
	defer imagesFile.Close()
	labels, labelsFile, err := openIDX(labelsPath, MagicLabels)
	if err != nil {
		return nil, err
	}
	defer labelsFile.Close()
	n, rows, cols := images.dims[0], images.dims[1], images.dims[2]
	if n != labels.dims[0] {
		return nil, fmt.Errorf("load idx: %s has %d images but %s has %d labels, expected the same count",
			imagesPath, n, labelsPath, labels.dims[0])
	}
	if mem := int64(n) * (4*int64(rows)*int64(cols) + 8); mem > maxIDXMemory {
		return nil, fmt.Errorf("load idx: %s: %d images of %d×%d pixels take %d bytes in memory (float32 pixels, int64 labels), more than the limit of %d bytes",
			imagesPath, n, rows, cols, mem, int64(maxIDXMemory))
	}
	// The file's bytes and their float32 copy live at once while loading.
	if need := int64(n) * (5*int64(rows)*int64(cols) + 9); need > 1<<28 {
		if left, ok := memoryLeft(); ok && need > left {
			return nil, fmt.Errorf("load idx: %s: %d images of %d×%d pixels need about %d MiB of memory to load, but this process can allocate about %d MiB more (available memory, ulimit -v)",
				imagesPath, n, rows, cols, need>>20, max(left, 0)>>20)
		}
	}

	lab, err := labels.read()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", labelsPath, err)
	}
	y := make([]int64, n)
	for i, v := range lab.Data {
		if int(v) >= classes {
			return nil, fmt.Errorf("read %s: label %d at index %d is out of range, expected 0..%d (%d classes)",
				labelsPath, v, i, classes-1, classes)
		}
		y[i] = int64(v)
	}
	img, err := images.read()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", imagesPath, err)
	}
	var scale [256]float32
	for i := range scale {
		scale[i] = float32(i) / 255
	}
	x := make([]float32, len(img.Data))
	for i, v := range img.Data {
		x[i] = scale[v]
	}
	return &InMemory{X: x, Y: y, Shape: []int{1, rows, cols}, Classes: classes,
		Files: []string{imagesPath, labelsPath}}, nil
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
// suffix (DefaultFashionMNISTDir after `apt-get install dataset-fashion-mnist`),
// chosen as LoadIDXDir does. Pixels are scaled to [0, 1] and not
// normalized; see (*InMemory).Normalize.
func LoadFashionMNIST(dir string) (train, test *InMemory, err error) {
	if train, test, err = LoadIDXDir(dir, 10); err != nil {
		return nil, nil, err
	}
	for _, ds := range []*InMemory{train, test} {
		if ds.Shape[1] != 28 || ds.Shape[2] != 28 {
			return nil, nil, fmt.Errorf("load fashion-mnist: %s: images are %d×%d, expected 28×28",
				ds.Files[0], ds.Shape[1], ds.Shape[2])
		}
	}
	return train, test, nil
}

// LoadIDXDir loads a training and a test set stored as Fashion-MNIST is
// (MNIST, KMNIST and others are too): dir holds
// {train,t10k}-{images-idx3,labels-idx1}-ubyte, each with or without a .gz
// suffix. When both NAME and NAME.gz exist, NAME is read: the uncompressed
// file is the one a user has unpacked or edited, and NAME.gz is ignored.
// The Files of each data set say which files were read. Each file must be
// a regular file: a directory (or a named pipe, a device) in its place is
// an error saying so, not a missing file. Images may have any size; every
// label must lie in [0, classes) (an error names the file and the sample
// index otherwise). Pixels are scaled to [0, 1].
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

// findIDX returns the path of base in dir if it exists, else of base.gz if
// that exists, else "". A name that exists but is not a regular file (a
// directory, say) is an error naming it.
func findIDX(dir, base string) (string, error) {
	for _, name := range []string{base, base + ".gz"} {
		p := filepath.Join(dir, name)
		_, err := statRegular(p, "an IDX file")
		switch {
		case err == nil:
			return p, nil
		case errors.Is(err, fs.ErrNotExist):
			continue
		default:
			return "", fmt.Errorf("load fashion-mnist: %w", err)
		}
	}
	return "", nil
}
