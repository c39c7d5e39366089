// Command shapes writes a small RGB image folder of five classes of
// coloured shapes (circle, cross, ring, square, triangle) on noisy
// backgrounds, drawn at random sizes, places and colours from a seed:
// OUT/train/<class>/<n>.png and OUT/val/<class>/<n>.jpg. Hora's tests and
// benchmarks fine-tune torchvision's networks on it (no real RGB data
// set can be downloaded here).
//
//	go run ./scripts/shapes -out build/data/shapes -train 60 -val 20 -size 64
package main

import (
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
)

var classes = []string{"circle", "cross", "ring", "square", "triangle"}

func main() {
	out := flag.String("out", "build/data/shapes", "the image `folder` to write")
	train := flag.Int("train", 60, "training images per class")
	val := flag.Int("val", 20, "validation images per class")
	size := flag.Int("size", 64, "the side of the images in pixels")
	seed := flag.Uint64("seed", 1, "the seed of the drawings")
	flag.Parse()
	if err := run(*out, *train, *val, *size, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "shapes:", err)
		os.Exit(1)
	}
}

func run(out string, train, val, size int, seed uint64) error {
	if train < 1 || val < 1 || size < 16 {
		return fmt.Errorf("expected -train >= 1, -val >= 1 and -size >= 16, found %d, %d, %d", train, val, size)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	for c, name := range classes {
		for i := range train + val {
			split, ext := "train", ".png"
			if i >= train {
				split, ext = "val", ".jpg"
			}
			dir := filepath.Join(out, split, name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if err := write(filepath.Join(dir, fmt.Sprintf("%04d%s", i, ext)), draw(c, size, rng)); err != nil {
				return err
			}
		}
	}
	fmt.Printf("wrote %d training and %d validation images of %d classes to %s\n", train*len(classes), val*len(classes), len(classes), out)
	return nil
}

// draw returns one image of class c.
func draw(c, size int, rng *rand.Rand) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	bg := randomColor(rng)
	fg := randomColor(rng)
	for distance(bg, fg) < 200 {
		fg = randomColor(rng)
	}
	s := float64(size)
	r := s * (0.18 + 0.17*rng.Float64()) // the shape's half-size
	cx := r + (s-2*r)*rng.Float64()
	cy := r + (s-2*r)*rng.Float64()
	for y := range size {
		for x := range size {
			px, py := float64(x)+0.5-cx, float64(y)+0.5-cy
			col := bg
			if inside(c, px/r, py/r) {
				col = fg
			}
			n := int(rng.NormFloat64() * 12)
			img.Set(x, y, color.RGBA{clamp(int(col.R) + n), clamp(int(col.G) + n), clamp(int(col.B) + n), 255})
		}
	}
	return img
}

// inside reports whether the point (x, y), in units of the half-size
// around the centre, is on a shape of class c.
func inside(c int, x, y float64) bool {
	d := math.Hypot(x, y)
	switch classes[c] {
	case "circle":
		return d <= 1
	case "cross":
		return (math.Abs(x) <= 0.3 && math.Abs(y) <= 1) || (math.Abs(y) <= 0.3 && math.Abs(x) <= 1)
	case "ring":
		return d <= 1 && d >= 0.6
	case "square":
		return math.Abs(x) <= 0.85 && math.Abs(y) <= 0.85
	default: // triangle, apex up
		return y <= 0.9 && y >= -1 && math.Abs(x) <= (y+1)/1.9
	}
}

func randomColor(rng *rand.Rand) color.RGBA {
	return color.RGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255}
}

func distance(a, b color.RGBA) float64 {
	dr, dg, db := float64(a.R)-float64(b.R), float64(a.G)-float64(b.G), float64(a.B)-float64(b.B)
	return math.Sqrt(dr*dr + dg*dg + db*db)
}

func clamp(v int) uint8 { return uint8(min(max(v, 0), 255)) }

func write(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if filepath.Ext(path) == ".jpg" {
		err = jpeg.Encode(f, img, &jpeg.Options{Quality: 90})
	} else {
		err = png.Encode(f, img)
	}
	if err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
