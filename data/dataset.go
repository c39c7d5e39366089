package data

import (
	"fmt"
	"math"
	"slices"
)

// Dataset is a finite, indexable collection of labelled samples of one shape.
//
// Implementations must allow Sample to be called from a goroutine other than
// the one that created the dataset (the Loader's prefetch goroutine), though
// never from two goroutines at once by one Loader.
type Dataset interface {
	// Len returns the number of samples.
	Len() int
	// SampleShape returns the shape of one sample, e.g. [1 28 28]. The caller
	// must not modify the returned slice.
	SampleShape() []int
	// Sample copies sample i into dst and returns its label. It panics if i
	// is out of range [0, Len()) or len(dst) is not the product of SampleShape.
	Sample(i int, dst []float32) (label int64)
}

// InMemory is a dataset held in memory: N samples of shape Shape stored one
// after another in X, and their labels in Y.
//
// Its invariants, checked by NewInMemory and Validate, are
// len(X) == len(Y) × product(Shape) and 0 <= Y[i] < Classes.
type InMemory struct {
	// X holds the samples, flattened: sample i is X[i*size : (i+1)*size],
	// where size is the product of Shape.
	X []float32
	// Y holds the labels, one per sample.
	Y []int64
	// Shape is the shape of one sample, e.g. [1 28 28] for a grey image.
	Shape []int
	// Classes is the number of classes; labels lie in [0, Classes).
	Classes int
	// Files are the paths of the files the samples were read from (for
	// LoadIDX, the images file then the labels file), so that a program
	// can say which files it used; nil for data made in memory.
	Files []string
}

// NewInMemory returns an InMemory dataset over x and y (not copied) after
// checking its invariants.
func NewInMemory(x []float32, y []int64, shape []int, classes int) (*InMemory, error) {
	ds := &InMemory{X: x, Y: y, Shape: slices.Clone(shape), Classes: classes}
	if err := ds.Validate(); err != nil {
		return nil, err
	}
	return ds, nil
}

// Validate checks the invariants of ds and returns an error describing the
// first one that does not hold.
func (ds *InMemory) Validate() error {
	if len(ds.Shape) == 0 {
		return fmt.Errorf("data: InMemory: empty sample shape, expected at least one dimension")
	}
	size := 1
	for i, d := range ds.Shape {
		if d <= 0 {
			return fmt.Errorf("data: InMemory: sample shape %v has dimension %d = %d, expected > 0", ds.Shape, i, d)
		}
		if size > math.MaxInt/d {
			return fmt.Errorf("data: InMemory: sample shape %v is too large", ds.Shape)
		}
		size *= d
	}
	if len(ds.X) != len(ds.Y)*size {
		return fmt.Errorf("data: InMemory: len(X) = %d, expected %d (%d labels × %d values per sample of shape %v)",
			len(ds.X), len(ds.Y)*size, len(ds.Y), size, ds.Shape)
	}
	if ds.Classes <= 0 {
		return fmt.Errorf("data: InMemory: Classes = %d, expected > 0", ds.Classes)
	}
	for i, y := range ds.Y {
		if y < 0 || y >= int64(ds.Classes) {
			return fmt.Errorf("data: InMemory: label %d at index %d is out of range, expected 0..%d", y, i, ds.Classes-1)
		}
	}
	return nil
}

// Len returns the number of samples, len(ds.Y).
func (ds *InMemory) Len() int { return len(ds.Y) }

// SampleShape returns ds.Shape.
func (ds *InMemory) SampleShape() []int { return ds.Shape }

// Sample copies sample i into dst and returns its label. It panics if i is
// out of range or len(dst) is not the product of ds.Shape.
func (ds *InMemory) Sample(i int, dst []float32) int64 {
	size := len(dst)
	if i < 0 || i >= len(ds.Y) {
		panic(fmt.Sprintf("data: InMemory.Sample: index %d out of range [0, %d)", i, len(ds.Y)))
	}
	if size != product(ds.Shape) {
		panic(fmt.Sprintf("data: InMemory.Sample: len(dst) = %d, expected %d for sample shape %v", size, product(ds.Shape), ds.Shape))
	}
	copy(dst, ds.X[i*size:(i+1)*size])
	return ds.Y[i]
}

// Normalize replaces every value x in ds.X by (x-mean)/std, e.g. with
// FashionMNISTMean and FashionMNISTStd. It panics if std is zero.
func (ds *InMemory) Normalize(mean, std float32) {
	if std == 0 {
		panic("data: InMemory.Normalize: std is 0, expected a nonzero standard deviation")
	}
	inv := 1 / std
	for i, x := range ds.X {
		ds.X[i] = (x - mean) * inv
	}
}

// MeanStd returns the mean and the (population) standard deviation of all
// values in ds.X, computed in float64; both are 0 for an empty dataset.
func (ds *InMemory) MeanStd() (mean, std float64) {
	if len(ds.X) == 0 {
		return 0, 0
	}
	var sum float64
	for _, x := range ds.X {
		sum += float64(x)
	}
	mean = sum / float64(len(ds.X))
	var ss float64
	for _, x := range ds.X {
		d := float64(x) - mean
		ss += d * d
	}
	return mean, math.Sqrt(ss / float64(len(ds.X)))
}

// Subset returns the dataset of the samples of ds at indices, in that order:
// its sample i is sample indices[i] of ds. Indices may repeat. The indices are
// copied. Subset panics if an index is out of range [0, ds.Len()).
func Subset(ds Dataset, indices []int) Dataset {
	n := ds.Len()
	for i, j := range indices {
		if j < 0 || j >= n {
			panic(fmt.Sprintf("data: Subset: indices[%d] = %d out of range [0, %d)", i, j, n))
		}
	}
	return &subset{ds: ds, indices: slices.Clone(indices)}
}

// subset is the Dataset returned by Subset.
type subset struct {
	ds      Dataset
	indices []int
}

func (s *subset) Len() int           { return len(s.indices) }
func (s *subset) SampleShape() []int { return s.ds.SampleShape() }
func (s *subset) Sample(i int, dst []float32) int64 {
	if i < 0 || i >= len(s.indices) {
		panic(fmt.Sprintf("data: Subset.Sample: index %d out of range [0, %d)", i, len(s.indices)))
	}
	return s.ds.Sample(s.indices[i], dst)
}

// product returns the product of shape (1 for an empty shape).
func product(shape []int) int {
	p := 1
	for _, d := range shape {
		p *= d
	}
	return p
}
