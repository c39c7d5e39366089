// Command fmnist-png writes Fashion-MNIST as an image folder, the layout of
// torchvision's ImageFolder and of data.ScanImageFolder:
//
//	OUT/train/<class>/<index>.png   the 60000 training images
//	OUT/val/<class>/<index>.png     the 10000 test images
//
// Each image is a 28×28 8-bit grey PNG holding the exact bytes of the IDX
// file, so data.NewImageFolder with a 28×28 grey transform gives the same
// floats as data.LoadFashionMNIST. Class folders are named
// "<label>_<name>" ("0_t-shirt_top", "1_trouser", …, "9_ankle_boot") so
// that their sorted order is the label order. A finished folder holds the
// marker file OUT/.complete; a second run on it does nothing.
//
// Usage:
//
//	go run ./scripts/fmnist-png -src /usr/share/datasets/fashion-mnist -out DIR
package main

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/hora-dl/hora/data"
)

func main() {
	src := flag.String("src", data.DefaultFashionMNISTDir, "folder of the Fashion-MNIST IDX files (gzipped or not)")
	out := flag.String("out", "", "output folder (required)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: fmnist-png -src DIR -out DIR")
		os.Exit(2)
	}
	if err := run(*src, *out); err != nil {
		fmt.Fprintln(os.Stderr, "fmnist-png:", err)
		os.Exit(1)
	}
}

// classDirs returns the folder names of the ten classes, by label.
func classDirs() []string {
	names := data.FashionMNISTClassNames()
	for i, n := range names {
		n = strings.ToLower(n)
		n = strings.NewReplacer("/", "_", " ", "_").Replace(n)
		names[i] = fmt.Sprintf("%d_%s", i, n)
	}
	return names
}

func run(src, out string) error {
	marker := filepath.Join(out, ".complete")
	if _, err := os.Stat(marker); err == nil {
		fmt.Printf("%s is already complete (remove %s to write it again)\n", out, marker)
		return nil
	}
	for _, split := range []struct{ name, prefix string }{{"train", "train"}, {"val", "t10k"}} {
		images, err := readIDX(src, split.prefix+"-images-idx3-ubyte", data.ReadIDXImages)
		if err != nil {
			return err
		}
		labels, err := readIDX(src, split.prefix+"-labels-idx1-ubyte", data.ReadIDXLabels)
		if err != nil {
			return err
		}
		if err := write(filepath.Join(out, split.name), images, labels); err != nil {
			return err
		}
	}
	return os.WriteFile(marker, []byte("written by scripts/fmnist-png\n"), 0o644)
}

// readIDX reads dir/base.gz, or dir/base when that does not exist.
func readIDX(dir, base string, read func(string) (*data.IDX, error)) (*data.IDX, error) {
	path := filepath.Join(dir, base+".gz")
	if _, err := os.Stat(path); err != nil {
		path = filepath.Join(dir, base)
	}
	return read(path)
}

// write writes the images of one split under dir, printing progress.
func write(dir string, images, labels *data.IDX) error {
	n, rows, cols := images.Dims[0], images.Dims[1], images.Dims[2]
	if labels.Dims[0] != n {
		return fmt.Errorf("%d images and %d labels, expected as many", n, labels.Dims[0])
	}
	classes := classDirs()
	for _, c := range classes {
		if err := os.MkdirAll(filepath.Join(dir, c), 0o755); err != nil {
			return err
		}
	}
	for i, y := range labels.Data {
		if int(y) >= len(classes) {
			return fmt.Errorf("label %d of image %d, expected 0..%d", y, i, len(classes)-1)
		}
	}
	var (
		mu       sync.Mutex
		firstErr error
		done     int
		wg       sync.WaitGroup
	)
	jobs := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			var buf bytes.Buffer
			for i := range jobs {
				img := &image.Gray{Pix: images.Data[i*rows*cols : (i+1)*rows*cols], Stride: cols, Rect: image.Rect(0, 0, cols, rows)}
				buf.Reset()
				err := png.Encode(&buf, img)
				path := filepath.Join(dir, classes[labels.Data[i]], fmt.Sprintf("%05d.png", i))
				if err == nil {
					err = os.WriteFile(path, buf.Bytes(), 0o644)
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				done++
				if done%5000 == 0 || done == n {
					fmt.Printf("%s: %d/%d images\n", dir, done, n)
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return firstErr
}
