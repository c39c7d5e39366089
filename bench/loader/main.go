// Command loader measures how fast Hora's image-folder loader delivers
// training batches: images decoded (or taken from the cache), augmented,
// normalized and batched per second, with nothing else running. make
// bench-data compares it with the training speed of the CNN on the same
// images, which the loader must not starve.
//
//	go run ./bench/loader -dir build/data/fashion-mnist-png -crop -flip -cache none
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/hora-dl/hora/data"
)

func main() {
	dir := flag.String("dir", "build/data/fashion-mnist-png", "the image `folder` (DIR/train/<class>/*)")
	crop := flag.Bool("crop", false, "RandomResizedCrop (data.augment_crop)")
	flip := flag.Bool("flip", false, "horizontal flips (data.augment_flip)")
	cache := flag.String("cache", "auto", "data.cache: auto, memory or none")
	workers := flag.Int("workers", 0, "loader workers (0: every core)")
	batch := flag.Int("batch", 128, "batch size")
	epochs := flag.Int("epochs", 1, "epochs to time")
	flag.Parse()
	if err := run(*dir, *crop, *flip, *cache, *workers, *batch, *epochs); err != nil {
		fmt.Fprintln(os.Stderr, "loader:", err)
		os.Exit(1)
	}
}

func run(dir string, crop, flip bool, cache string, workers, batch, epochs int) error {
	list, err := data.ScanImageFolder(filepath.Join(dir, "train"), nil)
	if err != nil {
		return err
	}
	first, err := data.DecodeImage(list.Files[0])
	if err != nil {
		return err
	}
	b := first.Bounds()
	tr := data.ImageTransform{Height: b.Dy(), Width: b.Dx(), Channels: 1,
		Mean: []float32{data.FashionMNISTMean}, Std: []float32{data.FashionMNISTStd},
		RandomResizedCrop: crop, Scale: data.DefaultCropScale, Ratio: data.DefaultCropRatio}
	workers = max(workers, 0)
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	start := time.Now()
	ds, err := data.NewImageFolder(list, data.ImageFolderConfig{Transform: tr, Train: true, Seed: 1, Cache: cache, Workers: workers})
	if err != nil {
		return err
	}
	scan := time.Since(start).Seconds()
	var set data.Dataset = ds
	if flip {
		if set, err = data.NewAugmented(ds, data.Augment{FlipHorizontal: true}, 1); err != nil {
			return err
		}
	}
	loader, err := data.NewLoader(set, data.LoaderConfig{BatchSize: batch, Shuffle: true, Prefetch: 2, ReuseMemory: true, Workers: workers})
	if err != nil {
		return err
	}
	n := 0
	start = time.Now()
	for e := range epochs {
		ds.SetEpoch(e)
		for b := range loader.Batches(context.Background(), rand.New(rand.NewPCG(1, uint64(e)))) {
			n += b.Len()
		}
	}
	sec := time.Since(start).Seconds()
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"images": n, "seconds": sec, "images_per_sec": float64(n) / sec,
		"first_pass_seconds": scan, "cached": ds.Cached(), "crop": crop, "flip": flip, "workers": workers})
}
