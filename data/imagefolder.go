package data

import (
	"fmt"
	"image"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Cache modes of ImageFolderConfig.Cache.
const (
	// CacheAuto keeps the decoded pixels in memory when they fit
	// ImageFolderConfig.CacheBudget, and decodes again otherwise.
	CacheAuto = "auto"
	// CacheMemory always keeps the decoded pixels in memory.
	CacheMemory = "memory"
	// CacheNone decodes the image file again in every Sample call.
	CacheNone = "none"
)

// DefaultImageCacheBudget is the default ImageFolderConfig.CacheBudget: 2 GiB.
const DefaultImageCacheBudget int64 = 2 << 30

// ImageFolderConfig configures NewImageFolder.
type ImageFolderConfig struct {
	// Transform turns each image into a sample; it must be valid.
	Transform ImageTransform
	// Train applies the training transform (ImageTransform.Train, with
	// its random crop and flip); otherwise the evaluation one (Eval).
	Train bool
	// Seed seeds the random choices of the training transform.
	Seed uint64
	// Cache is CacheAuto (the default when empty), CacheMemory or
	// CacheNone.
	Cache string
	// CacheBudget is the most bytes of pixels CacheAuto keeps in memory;
	// 0 means DefaultImageCacheBudget.
	CacheBudget int64
	// SkipBad drops the images that do not decode, listing them in
	// Skipped, instead of failing.
	SkipBad bool
	// Workers is the number of goroutines decoding images in
	// NewImageFolder; 0 means runtime.GOMAXPROCS(0).
	Workers int
	// Progress, if not nil, is called by NewImageFolder, on its own
	// goroutine, after each image of the initial pass, with the number of
	// images done and the total.
	Progress func(done, total int)
}

// ImageFolder is a Dataset of image files (torchvision's ImageFolder): the
// images of an ImageList, each decoded with DecodeImage and turned into a
// Channels×Height×Width sample by an ImageTransform, labelled by its class.
//
// NewImageFolder decodes every image once, in parallel, so that a bad image
// is found before training starts, and keeps the pixels in memory unless
// the cache is off: after the crop and the channel conversion (uint8,
// Channels×Height×Width) when the transform is deterministic (evaluation,
// or training without RandomResizedCrop: the flip comes after), the whole
// image otherwise (uint8 after channel conversion; 4 bytes a pixel for RGB).
//
// The training transform's randomness for sample i in epoch e is a pure
// function of (Seed, e, i), drawn from rand.NewPCG(Seed, e<<32 | i) as by
// Augmented, so a run resumed at epoch e (SetEpoch) sees the images of the
// uninterrupted run, whatever the order or the goroutine of the Sample
// calls: Sample(i) of epoch e equals Transform.Train on image i with
// rand.New(rand.NewPCG(Seed, uint64(e)<<32|uint64(i))). Indices are
// assumed below 2³².
//
// Sample is safe for concurrent use. Without the cache, Sample decodes the
// file again; if the file has become unreadable or corrupt since
// NewImageFolder read it, Sample panics with an error naming the file
// (the Loader raises the panic again in the goroutine ranging over its
// batches).
type ImageFolder struct {
	t       ImageTransform
	train   bool
	seed    uint64
	shape   []int
	size    int // values per sample
	classes []string
	files   []string
	labels  []int64
	skipped []string
	lut     pixelLUT
	crops   []uint8       // cached deterministic crops, size bytes each, or nil
	sources []image.Image // cached converted images (random crops), or nil
	scratch sync.Pool     // *[]uint8 buffers for the uncached paths
	epoch   atomic.Int64
}

// NewImageFolder decodes the images of list and returns them as a Dataset,
// in epoch 0. It returns an error when cfg is invalid or, unless
// cfg.SkipBad, when an image does not decode (naming it); with SkipBad the
// bad images are dropped (see Skipped), and it is an error only when all
// are bad.
func NewImageFolder(list *ImageList, cfg ImageFolderConfig) (*ImageFolder, error) {
	if list == nil || len(list.Files) == 0 {
		return nil, fmt.Errorf("data: NewImageFolder: no images, expected a non-empty ImageList (see ScanImageFolder)")
	}
	if len(list.Labels) != len(list.Files) {
		return nil, fmt.Errorf("data: NewImageFolder: %d files and %d labels, expected one label per file", len(list.Files), len(list.Labels))
	}
	for i, y := range list.Labels {
		if y < 0 || y >= int64(len(list.Classes)) {
			return nil, fmt.Errorf("data: NewImageFolder: label %d of %s out of range, expected 0..%d (%d classes)", y, list.Files[i], len(list.Classes)-1, len(list.Classes))
		}
	}
	t := cfg.Transform
	if err := t.Validate(); err != nil {
		return nil, err
	}
	mode := cfg.Cache
	if mode == "" {
		mode = CacheAuto
	}
	if mode != CacheAuto && mode != CacheMemory && mode != CacheNone {
		return nil, fmt.Errorf("data: NewImageFolder: Cache = %q, expected %q, %q or %q", cfg.Cache, CacheAuto, CacheMemory, CacheNone)
	}
	budget := cfg.CacheBudget
	if budget == 0 {
		budget = DefaultImageCacheBudget
	}
	if budget < 0 {
		return nil, fmt.Errorf("data: NewImageFolder: CacheBudget = %d, expected >= 0 (0 means %d)", budget, DefaultImageCacheBudget)
	}
	workers := cfg.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers < 0 {
		return nil, fmt.Errorf("data: NewImageFolder: Workers = %d, expected >= 0 (0 means GOMAXPROCS)", cfg.Workers)
	}

	f := &ImageFolder{
		t:       t,
		train:   cfg.Train,
		seed:    cfg.Seed,
		shape:   t.Shape(),
		size:    t.Channels * t.Height * t.Width,
		classes: slices.Clone(list.Classes),
		lut:     t.lut(),
	}
	n := len(list.Files)
	random := cfg.Train && t.RandomResizedCrop // the crop changes per sample
	cache := mode != CacheNone
	if !random && mode == CacheAuto {
		cache = int64(n)*int64(f.size) <= budget
	}
	var crops []uint8
	var sources []image.Image
	switch {
	case cache && !random:
		crops = make([]uint8, n*f.size)
	case cache:
		sources = make([]image.Image, n)
	}

	// The initial pass: workers take the images in index order.
	errs := make([]error, n)
	var next, cachedBytes atomic.Int64
	var failed, overBudget atomic.Bool
	done := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || failed.Load() {
					return
				}
				img, err := DecodeImage(list.Files[i]) // without the cache, decoding is the check
				switch {
				case err != nil:
					errs[i] = err
					if !cfg.SkipBad {
						failed.Store(true)
					}
				case crops != nil:
					t.evalPixels(convertImage(img, t.Channels), crops[i*f.size:(i+1)*f.size:(i+1)*f.size])
				case sources != nil && !overBudget.Load():
					src := convertImage(img, t.Channels)
					b := src.Bounds()
					bytes := int64(b.Dx()) * int64(b.Dy())
					if t.Channels == 3 {
						bytes *= 4
					}
					if mode == CacheAuto && cachedBytes.Add(bytes) > budget {
						overBudget.Store(true)
					} else {
						sources[i] = src
					}
				}
				done <- struct{}{}
			}
		})
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	count := 0
	for range done {
		count++
		if cfg.Progress != nil {
			cfg.Progress(count, n)
		}
	}

	if !cfg.SkipBad {
		for _, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("data: NewImageFolder: %w", err)
			}
		}
	}
	if overBudget.Load() {
		sources = nil
	}
	for i := range n {
		if errs[i] != nil {
			f.skipped = append(f.skipped, errs[i].Error())
			continue
		}
		k := len(f.files)
		f.files = append(f.files, list.Files[i])
		f.labels = append(f.labels, list.Labels[i])
		if crops != nil && k != i {
			copy(crops[k*f.size:(k+1)*f.size], crops[i*f.size:(i+1)*f.size])
		}
		if sources != nil {
			sources[k] = sources[i]
		}
	}
	if len(f.files) == 0 {
		return nil, fmt.Errorf("data: NewImageFolder: none of the %d images of %s decodes; the first: %s", n, list.Root, f.skipped[0])
	}
	if crops != nil {
		f.crops = slices.Clip(crops[:len(f.files)*f.size])
	}
	if sources != nil {
		clear(sources[len(f.files):])
		f.sources = slices.Clip(sources[:len(f.files)])
	}
	return f, nil
}

// SetEpoch selects the epoch whose random choices Sample makes; call it
// before each epoch (between epochs: a Sample running during SetEpoch may
// use either epoch). A negative epoch panics.
func (f *ImageFolder) SetEpoch(epoch int) {
	if epoch < 0 {
		panic(fmt.Sprintf("data: ImageFolder.SetEpoch(%d): the epoch must be >= 0", epoch))
	}
	f.epoch.Store(int64(epoch))
}

// Epoch returns the epoch set by SetEpoch (0 at first).
func (f *ImageFolder) Epoch() int { return int(f.epoch.Load()) }

// Len returns the number of images (those skipped as bad excluded).
func (f *ImageFolder) Len() int { return len(f.files) }

// SampleShape returns [Channels, Height, Width] of the transform.
func (f *ImageFolder) SampleShape() []int { return f.shape }

// Classes returns the class names; label k is class k. The caller must not
// modify the returned slice.
func (f *ImageFolder) Classes() []string { return f.classes }

// Files returns the paths of the images, sample i being Files()[i]. The
// caller must not modify the returned slice.
func (f *ImageFolder) Files() []string { return f.files }

// Labels returns the labels of the images, one per file. The caller must
// not modify the returned slice.
func (f *ImageFolder) Labels() []int64 { return f.labels }

// Skipped returns the images dropped with SkipBad, one message per image
// naming the file and saying why it does not decode.
func (f *ImageFolder) Skipped() []string { return slices.Clone(f.skipped) }

// Cached reports whether the pixels are held in memory (CacheMemory, or
// CacheAuto within its budget).
func (f *ImageFolder) Cached() bool { return f.crops != nil || f.sources != nil }

// Transform returns the transform applied to the images.
func (f *ImageFolder) Transform() ImageTransform { return f.t }

// Sample writes image i, transformed, into dst and returns its label. It
// panics if i is out of range, len(dst) is not the product of SampleShape,
// or (without the cache) the file no longer decodes.
func (f *ImageFolder) Sample(i int, dst []float32) int64 {
	if i < 0 || i >= len(f.files) {
		panic(fmt.Sprintf("data: ImageFolder.Sample: index %d out of range [0, %d)", i, len(f.files)))
	}
	if len(dst) != f.size {
		panic(fmt.Sprintf("data: ImageFolder.Sample: len(dst) = %d, expected %d for sample shape %v", len(dst), f.size, f.shape))
	}
	var rng *rand.Rand
	if f.train && (f.t.RandomResizedCrop || f.t.Flip) {
		rng = rand.New(rand.NewPCG(f.seed, uint64(f.epoch.Load())<<32|uint64(uint32(i))))
	}
	if f.crops != nil {
		flip := f.train && f.t.Flip && rng.IntN(2) == 1
		f.lut.apply(f.crops[i*f.size:(i+1)*f.size], dst, f.t.Width, flip)
		return f.labels[i]
	}
	var src image.Image
	if f.sources != nil {
		src = f.sources[i]
	} else {
		img, err := DecodeImage(f.files[i])
		if err != nil {
			panic(fmt.Sprintf("data: ImageFolder.Sample(%d): %v (the file decoded when the data set was made)", i, err))
		}
		src = convertImage(img, f.t.Channels)
	}
	bufp, _ := f.scratch.Get().(*[]uint8)
	if bufp == nil {
		bufp = new([]uint8)
	}
	var pix []uint8
	if f.train && f.t.RandomResizedCrop {
		b := src.Bounds()
		pix = f.t.cropPixels(src, f.t.randomCrop(b.Dx(), b.Dy(), rng), *bufp)
	} else {
		pix = f.t.evalPixels(src, *bufp)
	}
	flip := f.train && f.t.Flip && rng.IntN(2) == 1
	f.lut.apply(pix, dst, f.t.Width, flip)
	*bufp = pix
	f.scratch.Put(bufp)
	return f.labels[i]
}
