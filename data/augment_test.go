package data

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ramp returns an image of the given shape whose value k is k+1 (no
// value equals a fill of 0 or -1).
func ramp(shape []int) []float32 {
	img := make([]float32, product(shape))
	for k := range img {
		img[k] = float32(k + 1)
	}
	return img
}

// shifted is the reference for the crop: out[c][y][x] = in[c][y+sy][x+sx]
// inside the image, fill outside, written as the direct loop.
func shifted(in []float32, c, h, w, sy, sx int, fill float32) []float32 {
	out := make([]float32, len(in))
	for ch := range c {
		for y := range h {
			for x := range w {
				v := fill
				if ys, xs := y+sy, x+sx; ys >= 0 && ys < h && xs >= 0 && xs < w {
					v = in[(ch*h+ys)*w+xs]
				}
				out[(ch*h+y)*w+x] = v
			}
		}
	}
	return out
}

func flipped(in []float32, w int) []float32 {
	out := slices.Clone(in)
	for r := 0; r < len(out); r += w {
		slices.Reverse(out[r : r+w])
	}
	return out
}

func TestAugmentIdentity(t *testing.T) {
	shape := []int{3, 5, 7}
	img := ramp(shape)
	Augment{Fill: -1}.Apply(img, shape, rand.New(rand.NewPCG(1, 2)))
	assert.Equal(t, ramp(shape), img, "Pad 0 and no flip change nothing")
	Augment{}.Apply(img, shape, nil) // draws nothing, needs no rng
	assert.Equal(t, ramp(shape), img)
}

func TestAugmentShiftMatchesDirectLoop(t *testing.T) {
	tests := []struct {
		name    string
		c, h, w int
		pad     int
	}{
		{"grey 28×28 pad 4", 1, 28, 28, 4},
		{"rgb 8×6 pad 2", 3, 8, 6, 2},
		{"pad as large as the image", 2, 3, 4, 3},
		{"one row", 1, 1, 9, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shape := []int{tt.c, tt.h, tt.w}
			seen := map[[2]int]bool{}
			for seed := range uint64(200) {
				rng := rand.New(rand.NewPCG(seed, 7))
				// The draws Apply documents, on a copy of the generator.
				ref := rand.New(rand.NewPCG(seed, 7))
				sy := ref.IntN(2*tt.pad+1) - tt.pad
				sx := ref.IntN(2*tt.pad+1) - tt.pad
				seen[[2]int{sy, sx}] = true

				img := ramp(shape)
				Augment{Pad: tt.pad, Fill: -1}.Apply(img, shape, rng)
				require.Equal(t, shifted(ramp(shape), tt.c, tt.h, tt.w, sy, sx, -1), img, "shift (%d, %d)", sy, sx)
			}
			// Offsets cover the whole range [-Pad, Pad] in both directions.
			assert.True(t, seen[[2]int{-tt.pad, -tt.pad}] || seen[[2]int{-tt.pad, tt.pad}] || seen[[2]int{tt.pad, -tt.pad}] || seen[[2]int{tt.pad, tt.pad}], "corners of the offset range: %v", seen)
		})
	}
}

// TestShiftAllOffsets checks the in-place shift for every offset against
// the direct loop, overlapping rows and columns in both directions.
func TestShiftAllOffsets(t *testing.T) {
	const c, h, w = 2, 5, 6
	for sy := -6; sy <= 6; sy++ {
		for sx := -7; sx <= 7; sx++ {
			img := ramp([]int{c, h, w})
			for p := 0; p < len(img); p += h * w {
				shift(img[p:p+h*w], h, w, sy, sx, 0.5)
			}
			require.Equal(t, shifted(ramp([]int{c, h, w}), c, h, w, sy, sx, 0.5), img, "shift (%d, %d)", sy, sx)
		}
	}
}

func TestAugmentFlip(t *testing.T) {
	shape := []int{2, 4, 5}
	var flips int
	for seed := range uint64(100) {
		img := ramp(shape)
		Augment{FlipHorizontal: true}.Apply(img, shape, rand.New(rand.NewPCG(seed, 0)))
		if slices.Equal(img, ramp(shape)) {
			continue
		}
		flips++
		require.Equal(t, flipped(ramp(shape), 5), img)
		require.Equal(t, ramp(shape), flipped(img, 5), "flipping twice is the identity")
	}
	assert.InDelta(t, 50, flips, 20, "flips in 100 draws with p = 1/2")
}

func TestAugmentDeterministic(t *testing.T) {
	shape := []int{1, 28, 28}
	aug := Augment{Pad: 4, Fill: -0.5, FlipHorizontal: true}
	a, b := ramp(shape), ramp(shape)
	aug.Apply(a, shape, rand.New(rand.NewPCG(3, 4)))
	aug.Apply(b, shape, rand.New(rand.NewPCG(3, 4)))
	assert.Equal(t, a, b)
	rng := rand.New(rand.NewPCG(3, 4))
	assert.Zero(t, testing.AllocsPerRun(20, func() { aug.Apply(a, shape, rng) }), "allocations per Apply")
}

func TestAugmentApplyPanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	assert.PanicsWithValue(t, "data: Augment.Apply: image of 5 values with shape [2 3], expected a shape …×H×W whose product is the length",
		func() { Augment{Pad: 1}.Apply(make([]float32, 5), []int{2, 3}, rng) })
	assert.Panics(t, func() { Augment{Pad: 1}.Apply(make([]float32, 3), []int{3}, rng) })
	assert.PanicsWithValue(t, "data: Augment.Pad = -1, expected >= 0", func() { Augment{Pad: -1}.Apply(make([]float32, 4), []int{2, 2}, rng) })
	assert.Panics(t, func() { Augment{FlipHorizontal: true}.Apply(make([]float32, 4), []int{2, 2}, nil) })
}

func TestNewAugmentedErrors(t *testing.T) {
	ds := makeDataset(t, 4, []int{1, 3, 3}, 2)
	_, err := NewAugmented(ds, Augment{Pad: -2}, 1)
	assert.EqualError(t, err, "data: Augment.Pad = -2, expected >= 0")
	_, err = NewAugmented(makeDataset(t, 4, []int{9}, 2), Augment{Pad: 1}, 1)
	assert.EqualError(t, err, "data: NewAugmented: sample shape [9], expected an image (…×H×W, at least 2 axes)")
	_, err = NewAugmented(nil, Augment{}, 1)
	assert.Error(t, err)
}

// samples returns every sample of ds.
func samples(ds Dataset) ([][]float32, []int64) {
	xs := make([][]float32, ds.Len())
	ys := make([]int64, ds.Len())
	for i := range xs {
		xs[i] = make([]float32, product(ds.SampleShape()))
		ys[i] = ds.Sample(i, xs[i])
	}
	return xs, ys
}

func TestAugmentedReproducible(t *testing.T) {
	base := makeDataset(t, 20, []int{2, 6, 6}, 3)
	aug := Augment{Pad: 2, Fill: -1, FlipHorizontal: true}
	a, err := NewAugmented(base, aug, 42)
	require.NoError(t, err)
	assert.Equal(t, 20, a.Len())
	assert.Equal(t, []int{2, 6, 6}, a.SampleShape())
	assert.Equal(t, aug, a.Augment())

	a.SetEpoch(3)
	assert.Equal(t, 3, a.Epoch())
	x3, y3 := samples(a)
	_, wantY := samples(base)
	assert.Equal(t, wantY, y3, "labels are unchanged")

	// A new wrapper with the same seed and epoch (a resumed run) gives the
	// same images, whatever the order of the reads.
	b, err := NewAugmented(base, aug, 42)
	require.NoError(t, err)
	b.SetEpoch(3)
	for _, i := range rand.New(rand.NewPCG(9, 9)).Perm(20) {
		dst := make([]float32, 72)
		b.Sample(i, dst)
		require.Equal(t, x3[i], dst, "sample %d read out of order", i)
	}
	// Each sample's transformation is the documented one.
	for i := range 20 {
		want := make([]float32, 72)
		base.Sample(i, want)
		aug.Apply(want, []int{2, 6, 6}, rand.New(rand.NewPCG(42, 3<<32|uint64(i))))
		require.Equal(t, want, x3[i], "sample %d", i)
	}

	// Other epochs and other seeds differ.
	a.SetEpoch(4)
	x4, _ := samples(a)
	c, err := NewAugmented(base, aug, 43)
	require.NoError(t, err)
	c.SetEpoch(3)
	x3c, _ := samples(c)
	var diffEpoch, diffSeed int
	for i := range x3 {
		if !slices.Equal(x3[i], x4[i]) {
			diffEpoch++
		}
		if !slices.Equal(x3[i], x3c[i]) {
			diffSeed++
		}
	}
	assert.Greater(t, diffEpoch, 15, "samples that differ between epochs 3 and 4")
	assert.Greater(t, diffSeed, 15, "samples that differ between seeds 42 and 43")

	assert.Panics(t, func() { a.SetEpoch(-1) })
}

// TestAugmentedConcurrent reads the samples from several goroutines at
// once (run with -race) and gets the sequential result.
func TestAugmentedConcurrent(t *testing.T) {
	base := makeDataset(t, 64, []int{1, 8, 8}, 4)
	a, err := NewAugmented(base, Augment{Pad: 3, FlipHorizontal: true}, 7)
	require.NoError(t, err)
	a.SetEpoch(1)
	want, _ := samples(a)
	got := make([][]float32, a.Len())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < a.Len(); i += 4 {
				dst := make([]float32, 64)
				a.Sample(i, dst)
				got[i] = dst
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, want, got)
}

// ExampleNewAugmented wraps a dataset of 4×4 images with random crops
// (padding 1) and flips; the transformation of a sample depends only on
// the seed, the epoch and its index.
func ExampleNewAugmented() {
	img := make([]float32, 16)
	for k := range img {
		img[k] = float32(k)
	}
	ds, err := NewInMemory(img, []int64{0}, []int{1, 4, 4}, 1)
	if err != nil {
		panic(err)
	}
	aug, err := NewAugmented(ds, Augment{Pad: 1, Fill: -1, FlipHorizontal: true}, 1)
	if err != nil {
		panic(err)
	}
	dst := make([]float32, 16)
	for epoch := range 2 {
		aug.SetEpoch(epoch)
		aug.Sample(0, dst)
		fmt.Println(dst)
	}
	// Output:
	// [-1 0 1 2 -1 4 5 6 -1 8 9 10 -1 12 13 14]
	// [-1 7 6 5 -1 11 10 9 -1 15 14 13 -1 -1 -1 -1]
}
