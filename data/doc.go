// Package data provides datasets and the loader that cuts them into batches
// for training: IDX files (the MNIST and Fashion-MNIST format), folders of
// image files, in-memory datasets, subsets, augmentation, shuffling,
// batching and prefetching.
//
// # Overview
//
// A Dataset is a finite, indexable collection of labelled samples of one
// shape. InMemory is the Dataset held in memory; LoadIDX and LoadFashionMNIST
// fill one from IDX files, gzipped or not. A Loader turns a Dataset into
// batches, one epoch per range loop over Loader.Batches. Batches are plain Go
// slices (a Batch owns its X, Shape, Y and Indices); turning them into tensors
// on a device is the trainer's job, so this package imports no other package
// of Hora.
//
// The smallest use:
//
//	train, test, err := data.LoadFashionMNIST(data.DefaultFashionMNISTDir)
//	if err != nil {
//		return err
//	}
//	train.Normalize(data.FashionMNISTMean, data.FashionMNISTStd)
//	loader, err := data.NewLoader(train, data.LoaderConfig{BatchSize: 128, Shuffle: true, Prefetch: 2})
//	if err != nil {
//		return err
//	}
//	rng := rand.New(rand.NewPCG(seed, 0))
//	for epoch := range epochs {
//		for b := range loader.Batches(ctx, rng) {
//			// b.X has shape b.Shape = [n 1 28 28]; b.Y holds the n labels.
//		}
//		if err := ctx.Err(); err != nil {
//			return err
//		}
//	}
//
// # Image folders
//
// ScanImageFolder lists a folder laid out as torchvision's ImageFolder
// expects (one sub-folder of images per class) into an ImageList, which
// ImageList.Split can divide into stratified training and validation lists.
// NewImageFolder turns an ImageList into a Dataset: DecodeImage reads PNG,
// JPEG, GIF, BMP and WebP files, and an ImageTransform makes each image a
// Channels×Height×Width sample (resize and center crop for evaluation;
// RandomResizedCrop and flip for training, seeded by (seed, epoch, index) as
// Augmented is). The images are decoded once up front, in parallel, so bad
// files are found before training, and cached in memory when they fit.
//
//	list, err := data.ScanImageFolder("images/train", nil)
//	…
//	ds, err := data.NewImageFolder(list, data.ImageFolderConfig{
//		Transform: data.ImageTransform{Height: 224, Width: 224, Channels: 3,
//			Mean: []float32{0.485, 0.456, 0.406}, Std: []float32{0.229, 0.224, 0.225},
//			RandomResizedCrop: true, Flip: true},
//		Train: true, Seed: seed,
//	})
//
// # Tables
//
// ReadTable reads a CSV file as a Table: numeric feature columns (chosen
// by name or index, or every numeric column) and a label that is a class
// (strings or numbers, mapped to sorted class indices) or, for a
// regression, a real number. Table.Split holds back a stratified
// validation part, FitStandardizer and Standardizer.Apply rescale the
// features with the training rows' statistics, Table.Dataset makes a
// Table an InMemory dataset, and Table.Row reads one record at
// prediction time.
//
// # Randomness
//
// Nothing in this package keeps random state: shuffling draws from the
// *rand.Rand (math/rand/v2) passed to Batches, so the same seed gives the
// same order of samples in every run. The splits (ImageList.Split,
// Table.Split) and the augmentations take a seed and are deterministic.
//
// # Errors
//
// Errors from reading files name the file and say what was wrong with
// expected and found values, for example
//
//	read /d/train-images-idx3-ubyte.gz: truncated (gzip stream ends early): header declares 60000×28×28 = 47040000 bytes of data, the data ends after 1234
//	iris.csv:17:3 (column "petal_length"): expected a number, found "abc"
//
// Malformed input never makes the readers panic, and a header cannot make
// them allocate more than the file can hold. Every reader of a data file
// refuses one that is not a regular file (a directory, a named pipe, a
// device) before opening it, and bounds what a file can make it allocate:
// MaxIDXBytes, MaxImagePixels, MaxTableLineBytes and MaxTableColumns,
// MaxTextBytes. Misuse by the calling code (an
// index out of range, a destination slice of the wrong length, shuffling
// without a *rand.Rand) panics with a message saying what was expected.
//
// # Concurrency
//
// With LoaderConfig.Prefetch > 0 a background goroutine calls the dataset's
// Sample method while the consumer works on earlier batches; with
// LoaderConfig.Workers > 1 several goroutines call it at once for the
// samples of one batch, which needs a dataset whose Sample is safe for
// concurrent use (InMemory, Subset and Augmented of such datasets, and
// ImageFolder are). The prefetch goroutine
// stops when the range loop ends, by a break or by the cancellation of its
// context, and has exited by the time the loop statement returns.
package data
