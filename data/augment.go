package data

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
)

// Augment describes the random transformations applied to one image
// sample: a random crop of the image padded by Pad pixels on each side
// (torchvision's RandomCrop(size, padding=Pad, fill=Fill), the output
// keeping the input's size) and, with FlipHorizontal, a horizontal flip
// with probability 1/2 (RandomHorizontalFlip), in that order.
//
// The zero value changes nothing.
type Augment struct {
	// Pad is the number of pixels added on each side before cropping
	// back to the original size: the image moves by up to Pad pixels in
	// each direction. 0 disables the crop.
	Pad int
	// Fill is the value of the pixels brought in by the padding: 0 for
	// raw images, the normalised value of black ((0-mean)/std) for
	// normalised ones.
	Fill float32
	// FlipHorizontal mirrors the image left to right with probability 1/2.
	FlipHorizontal bool
}

// MaxAugmentPad returns the largest Augment.Pad for samples of shape
// (…×H×W): the smaller side, min(H, W). A larger pad shifts most crops
// entirely off the image, so that the model trains on blank samples; it
// returns 0 for a shape of fewer than two axes.
func MaxAugmentPad(shape []int) int {
	if len(shape) < 2 {
		return 0
	}
	return min(shape[len(shape)-2], shape[len(shape)-1])
}

// validate returns an error when a is not usable on samples of shape
// (at least two axes).
func (a Augment) validate(shape []int) error {
	if a.Pad < 0 {
		return fmt.Errorf("data: Augment.Pad = %d, expected >= 0", a.Pad)
	}
	if most := MaxAugmentPad(shape); a.Pad > most {
		h, w := shape[len(shape)-2], shape[len(shape)-1]
		return fmt.Errorf("data: Augment.Pad = %d is larger than the images (%d×%d), expected at most %d (MaxAugmentPad)", a.Pad, h, w, most)
	}
	return nil
}

// Apply transforms one sample img of shape shape (C×H×W, or any shape
// whose last two axes are H and W; the transformation is the same for
// every channel) in place, drawing from rng only: with Pad > 0 first the
// row offset, then the column offset of the crop, each rng.IntN(2·Pad+1);
// then, with FlipHorizontal, rng.IntN(2) == 1 to flip. The same rng state
// therefore gives the same result. Apply allocates nothing and keeps no
// state, so one Augment may be used by many goroutines at once (each with
// its own rng).
//
// Apply panics when shape has fewer than two axes, len(img) is not the
// product of shape, a.Pad is negative or more than MaxAugmentPad(shape),
// or rng is nil while a draws. NewAugmented checks a and the shape and
// returns an error instead.
func (a Augment) Apply(img []float32, shape []int, rng *rand.Rand) {
	if len(shape) < 2 || len(img) != product(shape) {
		panic(fmt.Sprintf("data: Augment.Apply: image of %d values with shape %v, expected a shape …×H×W whose product is the length", len(img), shape))
	}
	if err := a.validate(shape); err != nil {
		panic(err.Error())
	}
	if rng == nil && (a.Pad > 0 || a.FlipHorizontal) {
		panic("data: Augment.Apply: nil *rand.Rand")
	}
	h, w := shape[len(shape)-2], shape[len(shape)-1]
	if a.Pad > 0 {
		// Output pixel (y, x) is input pixel (y+sy, x+sx) of the padded
		// image's crop at (dy, dx) = (sy+Pad, sx+Pad).
		sy := rng.IntN(2*a.Pad+1) - a.Pad
		sx := rng.IntN(2*a.Pad+1) - a.Pad
		if sy != 0 || sx != 0 {
			for p := 0; p < len(img); p += h * w {
				shift(img[p:p+h*w], h, w, sy, sx, a.Fill)
			}
		}
	}
	if a.FlipHorizontal && rng.IntN(2) == 1 {
		for r := 0; r < len(img); r += w {
			slices.Reverse(img[r : r+w])
		}
	}
}

// shift sets plane[y][x] = plane[y+sy][x+sx] where that pixel exists and
// fill elsewhere, in place. Rows are visited in the order that reads
// every source row before it is overwritten (copy handles the overlap
// within a row).
func shift(plane []float32, h, w, sy, sx int, fill float32) {
	x0, x1 := max(0, -sx), min(w, w-sx) // destination columns with a source
	row := func(y int) {
		dst := plane[y*w : (y+1)*w]
		ys := y + sy
		if ys < 0 || ys >= h || x0 >= x1 {
			for x := range dst {
				dst[x] = fill
			}
			return
		}
		copy(dst[x0:x1], plane[ys*w+x0+sx:ys*w+x1+sx])
		for x := 0; x < x0; x++ {
			dst[x] = fill
		}
		for x := x1; x < w; x++ {
			dst[x] = fill
		}
	}
	if sy >= 0 {
		for y := 0; y < h; y++ {
			row(y)
		}
	} else {
		for y := h - 1; y >= 0; y-- {
			row(y)
		}
	}
}

// Augmented is a Dataset that applies an Augment to the samples of another
// dataset. The randomness of sample i in epoch e is a pure function of
// (seed, e, i): Sample seeds a fresh rand.PCG with (seed, e<<32 | i) for
// each call. Augmentation is therefore
//
//   - reproducible under resume: a run restarted at epoch e (SetEpoch(e))
//     sees exactly the images of the uninterrupted run;
//   - independent of the order in which samples are read (shuffling,
//     prefetching) and of the number of ranks reading them, as long as i
//     is the index in the full dataset: wrap the full dataset, then shard
//     it (Subset, a distributed sampler), not the other way round;
//   - safe for concurrent use: Sample may be called from many goroutines
//     at once when the wrapped dataset's Sample may.
//
// Indices are assumed below 2³².
type Augmented struct {
	ds    Dataset
	aug   Augment
	seed  uint64
	shape []int
	epoch atomic.Int64
}

// NewAugmented returns ds with aug applied to every sample, its random
// choices derived from seed, in epoch 0. It returns an error when ds's
// samples are not images (fewer than two axes) or aug is invalid for them:
// a negative Pad, or one more than MaxAugmentPad of the sample shape.
func NewAugmented(ds Dataset, aug Augment, seed uint64) (*Augmented, error) {
	if ds == nil {
		return nil, fmt.Errorf("data: NewAugmented: nil dataset")
	}
	shape := ds.SampleShape()
	if len(shape) < 2 {
		return nil, fmt.Errorf("data: NewAugmented: sample shape %v, expected an image (…×H×W, at least 2 axes)", shape)
	}
	if err := aug.validate(shape); err != nil {
		return nil, err
	}
	return &Augmented{ds: ds, aug: aug, seed: seed, shape: slices.Clone(shape)}, nil
}

// SetEpoch selects the epoch whose random choices Sample makes; call it
// before each epoch (between epochs: a Sample running during SetEpoch
// may use either epoch). A negative epoch panics.
func (a *Augmented) SetEpoch(epoch int) {
	if epoch < 0 {
		panic(fmt.Sprintf("data: Augmented.SetEpoch(%d): the epoch must be >= 0", epoch))
	}
	a.epoch.Store(int64(epoch))
}

// Epoch returns the epoch set by SetEpoch (0 at first).
func (a *Augmented) Epoch() int { return int(a.epoch.Load()) }

// Augment returns the transformations applied.
func (a *Augmented) Augment() Augment { return a.aug }

// Len returns the wrapped dataset's length.
func (a *Augmented) Len() int { return a.ds.Len() }

// SampleShape returns the wrapped dataset's sample shape.
func (a *Augmented) SampleShape() []int { return a.shape }

// Sample copies sample i of the wrapped dataset into dst, transforms it
// with the random choices of (seed, epoch, i) and returns its label. It
// panics as the wrapped dataset's Sample does.
func (a *Augmented) Sample(i int, dst []float32) int64 {
	label := a.ds.Sample(i, dst)
	rng := rand.New(rand.NewPCG(a.seed, uint64(a.epoch.Load())<<32|uint64(uint32(i))))
	a.aug.Apply(dst, a.shape, rng)
	return label
}
