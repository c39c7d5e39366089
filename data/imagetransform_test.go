package data

import (
	"fmt"
	"image"
	"image/color"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestImageTransformValidate(t *testing.T) {
	ok := ImageTransform{Height: 2, Width: 3, Channels: 3}
	require.NoError(t, ok.Validate())
	for _, tc := range []struct {
		mod  func(*ImageTransform)
		want string
	}{
		{func(t *ImageTransform) { t.Height = 0 }, "size 0×3 (Height×Width), expected both > 0"},
		{func(t *ImageTransform) { t.Channels = 4 }, "Channels = 4, expected 1 (grey) or 3 (RGB)"},
		{func(t *ImageTransform) { t.Mean = []float32{0, 0, 0} }, "Mean has 3 values and Std 0, expected both nil or both of 3 values"},
		{func(t *ImageTransform) { t.Mean, t.Std = []float32{0}, []float32{1} }, "expected 3 each (one per channel)"},
		{func(t *ImageTransform) { t.Mean, t.Std = []float32{0, 0, 0}, []float32{1, 0, 1} }, "Std[1] = 0, expected a finite nonzero value"},
		{func(t *ImageTransform) { t.Scale = [2]float64{0.5, 0.1} }, "Scale = [0.5 0.1], expected 0 < Scale[0] <= Scale[1]"},
		{func(t *ImageTransform) { t.Ratio = [2]float64{-1, 1} }, "Ratio = [-1 1]"},
	} {
		tr := ok
		tc.mod(&tr)
		assert.ErrorContains(t, tr.Validate(), tc.want)
	}
}

// rgbImage returns a w×h NRGBA image whose pixel (x, y) is f(x, y).
func rgbImage(w, h int, f func(x, y int) color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, f(x, y))
		}
	}
	return img
}

func TestImageTransformConstantStaysConstant(t *testing.T) {
	for _, size := range [][2]int{{7, 5}, {28, 28}, {100, 37}, {3, 90}, {64, 64}} {
		grey := greyImage(size[0], size[1], func(x, y int) uint8 { return 173 })
		rgb := rgbImage(size[0], size[1], func(x, y int) color.NRGBA { return color.NRGBA{10, 200, 255, 255} })
		for _, tc := range []struct {
			img  image.Image
			c    int
			want []float32
		}{
			{grey, 1, []float32{173.0 / 255}},
			{grey, 3, []float32{173.0 / 255, 173.0 / 255, 173.0 / 255}},
			{rgb, 3, []float32{10.0 / 255, 200.0 / 255, 1}},
		} {
			tr := ImageTransform{Height: 16, Width: 24, Channels: tc.c, RandomResizedCrop: true, Flip: true}
			dst := make([]float32, tc.c*16*24)
			check := func(what string) {
				for k, v := range dst {
					require.Equal(t, tc.want[k/(16*24)], v, "%s of a constant %v image, value %d", what, size, k)
				}
			}
			tr.Eval(tc.img, dst)
			check("Eval")
			for seed := range uint64(5) {
				tr.Train(tc.img, dst, rand.New(rand.NewPCG(seed, 0)))
				check("Train")
			}
		}
	}
}

func TestImageTransformCenterCrop(t *testing.T) {
	// 40×28 to 28×28: no resize is needed (the height already fits), the
	// crop takes columns 6..33.
	src := greyImage(40, 28, func(x, y int) uint8 { return uint8(x + 40*y) })
	tr := ImageTransform{Height: 28, Width: 28, Channels: 1}
	dst := make([]float32, 28*28)
	tr.Eval(src, dst)
	for y := range 28 {
		for x := range 28 {
			require.Equal(t, float32(uint8(x+6+40*y))/255, dst[y*28+x], "(%d, %d)", x, y)
		}
	}
	// Odd margin: 5 columns to drop, round(2.5) = 2 on the left (torchvision).
	src = greyImage(9, 4, func(x, y int) uint8 { return uint8(10*x + y) })
	tr = ImageTransform{Height: 4, Width: 4, Channels: 1}
	dst = make([]float32, 16)
	tr.Eval(src, dst)
	assert.Equal(t, float32(20)/255, dst[0])
	assert.Equal(t, float32(53)/255, dst[15])
	// An image of the output size is copied exactly, as are sub-images.
	sub := src.SubImage(image.Rect(3, 0, 7, 4))
	tr.Eval(sub, dst)
	for k := range 16 {
		assert.Equal(t, float32(10*(3+k%4)+k/4)/255, dst[k])
	}
}

func TestImageTransformResize(t *testing.T) {
	// 56×56 to 28×28: halving a horizontal ramp keeps it a ramp, each
	// output column near the mean of its two source columns.
	src := greyImage(56, 56, func(x, y int) uint8 { return uint8(4 * x) })
	tr := ImageTransform{Height: 28, Width: 28, Channels: 1}
	dst := make([]float32, 28*28)
	tr.Eval(src, dst)
	for y := range 28 {
		for x := range 28 {
			want := float64(4*(2*x)+4*(2*x+1)) / 2
			got := float64(dst[y*28+x]) * 255
			if x > 0 && x < 27 { // away from the edges
				assert.InDelta(t, want, got, 1.01, "(%d, %d)", x, y)
			}
			if x > 0 {
				assert.Greater(t, dst[y*28+x], dst[y*28+x-1])
			}
		}
	}
}

func TestImageTransformChannels(t *testing.T) {
	// Colour to grey: PIL's L = R×299/1000 + G×587/1000 + B×114/1000,
	// computed here in decimal and rounded.
	colours := []color.NRGBA{{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}, {10, 20, 30, 255}, {255, 255, 255, 255}, {200, 100, 50, 0}}
	want := []float32{76, 150, 29, 18, 255, 124} // 59.8+58.7+5.7 = 124.2
	img := rgbImage(len(colours), 1, func(x, y int) color.NRGBA { return colours[x] })
	tr := ImageTransform{Height: 1, Width: len(colours), Channels: 1}
	dst := make([]float32, len(colours))
	tr.Eval(img, dst)
	for k := range want {
		assert.Equal(t, want[k]/255, dst[k], "colour %v", colours[k])
	}
	// Alpha is dropped: the transparent pixel keeps its colour.
	tr.Channels = 3
	dst = make([]float32, 3*len(colours))
	tr.Eval(img, dst)
	n := len(colours)
	assert.Equal(t, []float32{200.0 / 255, 100.0 / 255, 50.0 / 255}, []float32{dst[n-1], dst[2*n-1], dst[3*n-1]})
	// Grey to RGB: three equal planes.
	grey := greyImage(3, 2, func(x, y int) uint8 { return uint8(50*x + 7*y) })
	tr = ImageTransform{Height: 2, Width: 3, Channels: 3}
	dst = make([]float32, 18)
	tr.Eval(grey, dst)
	for c := range 3 {
		for k := range 6 {
			assert.Equal(t, float32(50*(k%3)+7*(k/3))/255, dst[6*c+k])
		}
	}
	// A JPEG-like YCbCr image converts like color.YCbCrToRGB.
	ycc := image.NewYCbCr(image.Rect(0, 0, 1, 1), image.YCbCrSubsampleRatio444)
	ycc.Y[0], ycc.Cb[0], ycc.Cr[0] = 100, 90, 200
	r, g, b := color.YCbCrToRGB(100, 90, 200)
	tr = ImageTransform{Height: 1, Width: 1, Channels: 3}
	dst = make([]float32, 3)
	tr.Eval(ycc, dst)
	assert.Equal(t, []float32{float32(r) / 255, float32(g) / 255, float32(b) / 255}, dst)
}

func TestImageTransformNormalizeBitExact(t *testing.T) {
	img := greyImage(16, 16, func(x, y int) uint8 { return uint8(16*y + x) })
	for _, ms := range [][2]float32{{FashionMNISTMean, FashionMNISTStd}, {0.5, 0.5}, {0.485, 0.229}} {
		tr := ImageTransform{Height: 16, Width: 16, Channels: 1, Mean: []float32{ms[0]}, Std: []float32{ms[1]}}
		dst := make([]float32, 256)
		tr.Eval(img, dst)
		x := make([]float32, 256)
		for v := range x {
			x[v] = float32(v) / 255
		}
		ref, err := NewInMemory(x, []int64{0}, []int{1, 16, 16}, 1)
		require.NoError(t, err)
		ref.Normalize(ms[0], ms[1])
		require.Equal(t, ref.X, dst, "mean %v std %v", ms[0], ms[1])
		inv := 1 / ms[1]
		for v := range 256 {
			require.Equal(t, (float32(v)/255-ms[0])*inv, dst[v])
		}
	}
}

func TestImageTransformFlip(t *testing.T) {
	img := greyImage(5, 2, func(x, y int) uint8 { return uint8(10*y + x) })
	tr := ImageTransform{Height: 2, Width: 5, Channels: 1, Flip: true}
	flips := 0
	for seed := range uint64(40) {
		dst := make([]float32, 10)
		tr.Train(img, dst, rand.New(rand.NewPCG(seed, 1)))
		flip := rand.New(rand.NewPCG(seed, 1)).IntN(2) == 1
		for y := range 2 {
			for x := range 5 {
				sx := x
				if flip {
					sx = 4 - x
					flips++
				}
				require.Equal(t, float32(10*y+sx)/255, dst[5*y+x], "seed %d (%d, %d)", seed, x, y)
			}
		}
	}
	assert.Greater(t, flips, 0)
}

func TestRandomCrop(t *testing.T) {
	tr := ImageTransform{Height: 8, Width: 8, Channels: 1, RandomResizedCrop: true}
	rng := rand.New(rand.NewPCG(1, 1))
	distinct := map[image.Rectangle]bool{}
	for range 500 {
		r := tr.randomCrop(60, 40, rng)
		require.True(t, r.In(image.Rect(0, 0, 60, 40)), "%v inside the image", r)
		area := float64(r.Dx()*r.Dy()) / (60 * 40)
		ratio := float64(r.Dx()) / float64(r.Dy())
		// Rounding the sides to whole pixels moves area and ratio a little.
		if r != image.Rect(0, 0, 60, 40) && r.Dx() > 4 && r.Dy() > 4 {
			assert.True(t, area > 0.06 && area < 1.05, "area %v of %v", area, r)
			assert.True(t, ratio > 0.6 && ratio < 1.55, "ratio %v of %v", ratio, r)
		}
		distinct[r] = true
	}
	assert.Greater(t, len(distinct), 400)

	// No try fits a square of 90% of a 100×10 image: the fallback is the
	// centered crop of ratio 1, Ratio's bound: 10×10 at x = 45.
	tr.Scale, tr.Ratio = [2]float64{0.9, 1}, [2]float64{1, 1}
	assert.Equal(t, image.Rect(45, 0, 55, 10), tr.randomCrop(100, 10, rng))
	assert.Equal(t, image.Rect(0, 45, 10, 55), tr.randomCrop(10, 100, rng))
	// A ratio-1 crop of all of a square image is the image.
	tr.Scale = [2]float64{1, 1}
	assert.Equal(t, image.Rect(0, 0, 30, 30), tr.randomCrop(30, 30, rng))
}

func ExampleImageTransform_Eval() {
	// A 4×2 image, twice as wide as the 2×2 output: the center crop keeps
	// columns 1 and 2, without resampling.
	img := greyImage(4, 2, func(x, y int) uint8 { return uint8(51 * x) })
	tr := ImageTransform{Height: 2, Width: 2, Channels: 1}
	x := make([]float32, 4)
	tr.Eval(img, x)
	fmt.Println(x)
	// Output: [0.2 0.4 0.2 0.4]
}
