package data_test

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"slices"

	"github.com/hora-dl/hora/data"
)

// Example builds a tiny in-memory dataset of five samples of shape [2] and
// iterates over one epoch of batches of two.
func Example() {
	x := []float32{0, 0.1, 1, 1.1, 2, 2.1, 3, 3.1, 4, 4.1}
	y := []int64{0, 1, 0, 1, 0}
	ds, err := data.NewInMemory(x, y, []int{2}, 2)
	if err != nil {
		log.Fatal(err)
	}
	loader, err := data.NewLoader(ds, data.LoaderConfig{BatchSize: 2, Prefetch: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("batches:", loader.NumBatches())
	for b := range loader.Batches(context.Background(), nil) {
		fmt.Println(b.Shape, b.X, b.Y, b.Indices)
	}
	// Output:
	// batches: 3
	// [2 2] [0 0.1 1 1.1] [0 1] [0 1]
	// [2 2] [2 2.1 3 3.1] [0 1] [2 3]
	// [1 2] [4 4.1] [0] [4]
}

// ExampleLoader_Batches shuffles: each epoch visits every sample once, in an
// order drawn from the seeded generator, and DropLast drops the short batch.
func ExampleLoader_Batches() {
	ds, err := data.NewInMemory(make([]float32, 10), make([]int64, 10), []int{1}, 1)
	if err != nil {
		log.Fatal(err)
	}
	loader, err := data.NewLoader(ds, data.LoaderConfig{BatchSize: 4, Shuffle: true, DropLast: true})
	if err != nil {
		log.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(42, 0))
	ctx := context.Background()
	for epoch := range 2 {
		var seen []int
		for b := range loader.Batches(ctx, rng) {
			seen = append(seen, b.Indices...)
		}
		slices.Sort(seen)
		fmt.Println("epoch", epoch, "saw", len(seen), "distinct samples:", len(slices.Compact(seen)) == len(seen))
	}
	// Output:
	// epoch 0 saw 8 distinct samples: true
	// epoch 1 saw 8 distinct samples: true
}

// ExampleSubset splits a dataset into a training and a validation part.
func ExampleSubset() {
	ds, err := data.NewInMemory(make([]float32, 10), make([]int64, 10), []int{1}, 1)
	if err != nil {
		log.Fatal(err)
	}
	perm := rand.New(rand.NewPCG(1, 0)).Perm(ds.Len())
	train, val := data.Subset(ds, perm[:8]), data.Subset(ds, perm[8:])
	fmt.Println(train.Len(), val.Len())
	// Output: 8 2
}

// ExampleLoadFashionMNIST loads Fashion-MNIST as installed by
// `apt-get install dataset-fashion-mnist` and normalizes it.
func ExampleLoadFashionMNIST() {
	train, test, err := data.LoadFashionMNIST(data.DefaultFashionMNISTDir)
	if err != nil {
		log.Fatal(err)
	}
	train.Normalize(data.FashionMNISTMean, data.FashionMNISTStd)
	test.Normalize(data.FashionMNISTMean, data.FashionMNISTStd)
	fmt.Println(train.Len(), test.Len(), train.SampleShape())
}
