package data

import (
	"fmt"
	"image"
	"image/color"
	"math"
	"math/rand/v2"

	"golang.org/x/image/draw"
)

// Default RandomResizedCrop ranges, torchvision's.
var (
	// DefaultCropScale is the default ImageTransform.Scale: the crop
	// covers 8% to 100% of the image's area.
	DefaultCropScale = [2]float64{0.08, 1}
	// DefaultCropRatio is the default ImageTransform.Ratio: the crop's
	// width / height lies between 3/4 and 4/3.
	DefaultCropRatio = [2]float64{3.0 / 4, 4.0 / 3}
)

// ImageTransform turns a decoded image into a sample: a float32 C×H×W
// array (planar: channel after channel, rows top to bottom), like
// torchvision's transforms ending in ToTensor and Normalize.
//
// Evaluation (Eval) resizes the image so that it just covers H×W, keeping
// its aspect ratio (the shorter side, relative to H×W, becomes H or W), then
// crops the middle H×W: torchvision's Resize(size) + CenterCrop(size) for a
// square output. An image of exactly H×W pixels is copied as it is, without
// resampling. Training (Train) applies, with RandomResizedCrop, torchvision's
// RandomResizedCrop(size, Scale, Ratio) instead, then with Flip a horizontal
// flip with probability 1/2. Resampling uses the bilinear (tent) filter of
// golang.org/x/image/draw (draw.BiLinear), which widens its support when
// shrinking, so it anti-aliases as torchvision's antialias=True does.
//
// Pixel values p (0..255) become (float32(p)/255 - Mean[c]) * (1/Std[c]), in
// float32 with exactly these operations, as InMemory.Normalize computes them;
// without Mean and Std, float32(p)/255.
//
// The zero values of Scale and Ratio stand for DefaultCropScale and
// DefaultCropRatio. Validate reports an unusable transform.
type ImageTransform struct {
	// Height and Width are the size of the output, in pixels.
	Height, Width int
	// Channels is 1 (grey) or 3 (RGB). Colour images are converted to grey
	// with the luma of PIL's convert("L"), (19595R + 38470G + 7471B +
	// 2¹⁵) >> 16, i.e. 0.299R + 0.587G + 0.114B rounded; grey images are
	// replicated to 3 channels. Alpha is dropped (the stored colour is kept,
	// not composed over a background).
	Channels int
	// Mean and Std are the per-channel normalization (each of length
	// Channels), or both nil for none.
	Mean, Std []float32
	// RandomResizedCrop makes Train crop a random part of the image, of
	// area Scale times the image's and aspect ratio (width/height) in Ratio
	// (drawn log-uniformly), resized to Height×Width.
	RandomResizedCrop bool
	// Scale is the range of the crop's area relative to the image's; zero
	// means DefaultCropScale.
	Scale [2]float64
	// Ratio is the range of the crop's aspect ratio; zero means
	// DefaultCropRatio.
	Ratio [2]float64
	// Flip makes Train mirror the image left to right with probability 1/2.
	Flip bool
}

// Validate returns an error describing the first field of t that is not
// usable.
func (t ImageTransform) Validate() error {
	if t.Height <= 0 || t.Width <= 0 {
		return fmt.Errorf("data: ImageTransform: size %d×%d (Height×Width), expected both > 0", t.Height, t.Width)
	}
	if int64(t.Height)*int64(t.Width) > MaxImagePixels {
		return fmt.Errorf("data: ImageTransform: size %d×%d (Height×Width) is more than the limit of %d pixels (MaxImagePixels)", t.Height, t.Width, MaxImagePixels)
	}
	if t.Channels != 1 && t.Channels != 3 {
		return fmt.Errorf("data: ImageTransform: Channels = %d, expected 1 (grey) or 3 (RGB)", t.Channels)
	}
	if (t.Mean == nil) != (t.Std == nil) {
		return fmt.Errorf("data: ImageTransform: Mean has %d values and Std %d, expected both nil or both of %d values", len(t.Mean), len(t.Std), t.Channels)
	}
	if t.Mean != nil && (len(t.Mean) != t.Channels || len(t.Std) != t.Channels) {
		return fmt.Errorf("data: ImageTransform: Mean has %d values and Std %d, expected %d each (one per channel)", len(t.Mean), len(t.Std), t.Channels)
	}
	for c, s := range t.Std {
		if s == 0 || math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
			return fmt.Errorf("data: ImageTransform: Std[%d] = %v, expected a finite nonzero value", c, s)
		}
	}
	scale, ratio := t.scale(), t.ratio()
	if !(scale[0] > 0 && scale[0] <= scale[1]) {
		return fmt.Errorf("data: ImageTransform: Scale = %v, expected 0 < Scale[0] <= Scale[1]", scale)
	}
	if !(ratio[0] > 0 && ratio[0] <= ratio[1]) || math.IsInf(ratio[1], 0) {
		return fmt.Errorf("data: ImageTransform: Ratio = %v, expected 0 < Ratio[0] <= Ratio[1] < ∞", ratio)
	}
	return nil
}

// Shape returns the shape of the output, [Channels, Height, Width].
func (t ImageTransform) Shape() []int { return []int{t.Channels, t.Height, t.Width} }

// Deterministic reports whether training gives the same pixels every time
// but for the flip, i.e. RandomResizedCrop is off.
func (t ImageTransform) Deterministic() bool { return !t.RandomResizedCrop }

// scale returns t.Scale or its default.
func (t ImageTransform) scale() [2]float64 {
	if t.Scale == [2]float64{} {
		return DefaultCropScale
	}
	return t.Scale
}

// ratio returns t.Ratio or its default.
func (t ImageTransform) ratio() [2]float64 {
	if t.Ratio == [2]float64{} {
		return DefaultCropRatio
	}
	return t.Ratio
}

// Eval writes the evaluation transform of img into dst (resize, center crop,
// channel conversion, normalization; no randomness). It panics if t is not
// valid or len(dst) is not Channels×Height×Width.
func (t ImageTransform) Eval(img image.Image, dst []float32) {
	t.check(dst, "Eval")
	src := convertImage(img, t.Channels)
	pix := t.evalPixels(src, nil)
	lut := t.lut()
	lut.apply(pix, dst, t.Width, false)
}

// Train writes the training transform of img into dst, drawing from rng
// only: with RandomResizedCrop, the crop as torchvision draws it (up to 10
// tries of rng.Float64 for the area, rng.Float64 for the log aspect ratio,
// then rng.IntN for the top and the left edge; a center crop if no try
// fits), then with Flip rng.IntN(2) == 1 to flip. Without RandomResizedCrop
// the image is cropped as by Eval. It panics as Eval does, and if rng is nil
// while t draws.
func (t ImageTransform) Train(img image.Image, dst []float32, rng *rand.Rand) {
	t.check(dst, "Train")
	if rng == nil && (t.RandomResizedCrop || t.Flip) {
		panic("data: ImageTransform.Train: nil *rand.Rand")
	}
	src := convertImage(img, t.Channels)
	var pix []uint8
	if t.RandomResizedCrop {
		pix = t.cropPixels(src, t.randomCrop(src.Bounds().Dx(), src.Bounds().Dy(), rng), nil)
	} else {
		pix = t.evalPixels(src, nil)
	}
	flip := t.Flip && rng.IntN(2) == 1
	lut := t.lut()
	lut.apply(pix, dst, t.Width, flip)
}

// check panics if t is invalid or dst has the wrong length.
func (t ImageTransform) check(dst []float32, method string) {
	if err := t.Validate(); err != nil {
		panic(err.Error())
	}
	if len(dst) != t.Channels*t.Height*t.Width {
		panic(fmt.Sprintf("data: ImageTransform.%s: len(dst) = %d, expected %d for shape %v", method, len(dst), t.Channels*t.Height*t.Width, t.Shape()))
	}
}

// randomCrop returns the crop of torchvision's
// RandomResizedCrop.get_params for an image of w×h pixels.
func (t ImageTransform) randomCrop(w, h int, rng *rand.Rand) image.Rectangle {
	scale, ratio := t.scale(), t.ratio()
	area := float64(w * h)
	logLo, logHi := math.Log(ratio[0]), math.Log(ratio[1])
	for range 10 {
		target := area * (scale[0] + (scale[1]-scale[0])*rng.Float64())
		aspect := math.Exp(logLo + (logHi-logLo)*rng.Float64())
		cw := int(math.RoundToEven(math.Sqrt(target * aspect))) // Python's round
		ch := int(math.RoundToEven(math.Sqrt(target / aspect)))
		if 0 < cw && cw <= w && 0 < ch && ch <= h {
			top := rng.IntN(h - ch + 1)
			left := rng.IntN(w - cw + 1)
			return image.Rect(left, top, left+cw, top+ch)
		}
	}
	// Fallback: a center crop of the whole image, clamped to Ratio.
	cw, ch := w, h
	inRatio := float64(w) / float64(h)
	if inRatio < ratio[0] {
		ch = int(math.RoundToEven(float64(cw) / ratio[0]))
	} else if inRatio > ratio[1] {
		cw = int(math.RoundToEven(float64(ch) * ratio[1]))
	}
	top, left := (h-ch)/2, (w-cw)/2
	return image.Rect(left, top, left+cw, top+ch)
}

// evalPixels returns the Eval crop of src (a convertImage result) as
// planar uint8 pixels, in buf when it is large enough.
func (t ImageTransform) evalPixels(src image.Image, buf []uint8) []uint8 {
	b := src.Bounds()
	sw, sh := b.Dx(), b.Dy()
	if sw == t.Width && sh == t.Height {
		return planar(src, b, t.Channels, buf)
	}
	// The smallest size of src's aspect ratio that covers Width×Height,
	// the longer side truncated as torchvision's Resize does.
	nw, nh := t.Width, t.Height
	if t.Height*sw >= t.Width*sh {
		nw = sw * t.Height / sh
	} else {
		nh = sh * t.Width / sw
	}
	resized := image.Image(src)
	if nw != sw || nh != sh {
		resized = scaleRGBA(src, b, nw, nh)
	}
	// torchvision's CenterCrop: offsets int(round(d / 2)).
	top := int(math.RoundToEven(float64(nh-t.Height) / 2))
	left := int(math.RoundToEven(float64(nw-t.Width) / 2))
	r := image.Rect(left, top, left+t.Width, top+t.Height).Add(resized.Bounds().Min)
	return planar(resized, r, t.Channels, buf)
}

// cropPixels returns the part r of src resized to Width×Height as planar
// uint8 pixels, in buf when it is large enough; a part of that size is
// copied without resampling.
func (t ImageTransform) cropPixels(src image.Image, r image.Rectangle, buf []uint8) []uint8 {
	r = r.Add(src.Bounds().Min)
	if r.Dx() == t.Width && r.Dy() == t.Height {
		return planar(src, r, t.Channels, buf)
	}
	dst := scaleRGBA(src, r, t.Width, t.Height)
	return planar(dst, dst.Bounds(), t.Channels, buf)
}

// scaleRGBA resamples the part r of src to a new w×h image with the
// bilinear filter.
func scaleRGBA(src image.Image, r image.Rectangle, w, h int) *image.RGBA {
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.BiLinear.Scale(dst, dst.Bounds(), src, r, draw.Src, nil)
	return dst
}

// planar copies the part r of img, an *image.Gray or an opaque
// *image.RGBA, into c planes of uint8 pixels (for c = 1 an RGBA image gives
// its red channel, equal to the others for a grey image). It uses buf when
// it is large enough.
func planar(img image.Image, r image.Rectangle, c int, buf []uint8) []uint8 {
	w, h := r.Dx(), r.Dy()
	n := c * w * h
	if cap(buf) < n {
		buf = make([]uint8, n)
	}
	buf = buf[:n]
	switch m := img.(type) {
	case *image.Gray:
		for y := range h {
			copy(buf[y*w:(y+1)*w], m.Pix[m.PixOffset(r.Min.X, r.Min.Y+y):])
		}
	case *image.RGBA:
		for y := range h {
			row := m.Pix[m.PixOffset(r.Min.X, r.Min.Y+y):]
			for ch := range c {
				out := buf[ch*w*h+y*w : ch*w*h+(y+1)*w]
				for x := range out {
					out[x] = row[4*x+ch]
				}
			}
		}
	default:
		panic(fmt.Sprintf("data: planar: image type %T, expected *image.Gray or *image.RGBA", img))
	}
	return buf
}

// luma is the grey level of an RGB colour, as PIL's convert("L") computes it.
func luma(r, g, b uint8) uint8 {
	return uint8((19595*uint32(r) + 38470*uint32(g) + 7471*uint32(b) + 0x8000) >> 16)
}

// convertImage returns img with c channels, with bounds starting at (0, 0):
// an *image.Gray for c = 1, an opaque *image.RGBA for c = 3. A grey image
// is returned as it is when its bounds start at (0, 0).
func convertImage(img image.Image, c int) image.Image {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	rect := image.Rect(0, 0, w, h)
	if c == 1 {
		if g, ok := img.(*image.Gray); ok && b.Min == (image.Point{}) {
			return g
		}
		out := image.NewGray(rect)
		switch m := img.(type) {
		case *image.Gray:
			for y := range h {
				copy(out.Pix[y*w:(y+1)*w], m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):])
			}
		default:
			for y := range h {
				for x := range w {
					r, g, bl := rgb8(img, b.Min.X+x, b.Min.Y+y)
					out.Pix[y*w+x] = luma(r, g, bl)
				}
			}
		}
		return out
	}
	out := image.NewRGBA(rect)
	for y := range h {
		row := out.Pix[y*out.Stride:]
		for x := range w {
			var r, g, bl uint8
			if m, ok := img.(*image.Gray); ok {
				r = m.Pix[m.PixOffset(b.Min.X+x, b.Min.Y+y)]
				g, bl = r, r
			} else {
				r, g, bl = rgb8(img, b.Min.X+x, b.Min.Y+y)
			}
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = r, g, bl, 255
		}
	}
	return out
}

// rgb8 returns the 8-bit red, green and blue of img's pixel (x, y), not
// premultiplied by alpha.
func rgb8(img image.Image, x, y int) (r, g, b uint8) {
	switch m := img.(type) {
	case *image.NRGBA:
		p := m.Pix[m.PixOffset(x, y):]
		return p[0], p[1], p[2]
	case *image.YCbCr:
		return color.YCbCrToRGB(m.Y[m.YOffset(x, y)], m.Cb[m.COffset(x, y)], m.Cr[m.COffset(x, y)])
	}
	c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
	return c.R, c.G, c.B
}

// pixelLUT maps each uint8 value of each channel to its float32 output.
type pixelLUT [][256]float32

// lut returns the value table of t: (float32(v)/255 - Mean[c]) * (1/Std[c]).
func (t ImageTransform) lut() pixelLUT {
	lut := make(pixelLUT, t.Channels)
	for c := range lut {
		for v := range 256 {
			x := float32(v) / 255
			if t.Mean != nil {
				inv := 1 / t.Std[c]
				x = (x - t.Mean[c]) * inv
			}
			lut[c][v] = x
		}
	}
	return lut
}

// apply writes the values of the planar pixels pix (len(lut) planes of
// rows of w pixels) into dst, mirroring each row when flip is set.
func (lut pixelLUT) apply(pix []uint8, dst []float32, w int, flip bool) {
	plane := len(pix) / len(lut)
	for c := range lut {
		tab := &lut[c]
		p, d := pix[c*plane:(c+1)*plane], dst[c*plane:(c+1)*plane]
		if !flip {
			for k, v := range p {
				d[k] = tab[v]
			}
			continue
		}
		for r := 0; r < plane; r += w {
			pr, dr := p[r:r+w], d[r:r+w]
			for x, v := range pr {
				dr[w-1-x] = tab[v]
			}
		}
	}
}
