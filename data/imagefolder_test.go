package data

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/image/bmp"
)

// greyImage returns a w×h grey image whose pixel (x, y) is f(x, y).
func greyImage(w, h int, f func(x, y int) uint8) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetGray(x, y, color.Gray{Y: f(x, y)})
		}
	}
	return img
}

// writePNG writes img as a PNG file at path, creating its folder.
func writePNG(t testing.TB, path string, img image.Image) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// touchPNG writes a small grey PNG at dir/rel.
func touchPNG(t testing.TB, dir, rel string) string {
	path := filepath.Join(dir, filepath.FromSlash(rel))
	writePNG(t, path, greyImage(4, 4, func(x, y int) uint8 { return uint8(x + 4*y) }))
	return path
}

func TestScanImageFolder(t *testing.T) {
	dir := t.TempDir()
	want := []string{
		touchPNG(t, dir, "cat/1.png"),
		touchPNG(t, dir, "cat/2.PNG"),
		touchPNG(t, dir, "cat/sub/3.png"),
		touchPNG(t, dir, "ant/a.png"),
	}
	touchPNG(t, dir, "cat/.hidden.png")
	touchPNG(t, dir, ".git/x.png")
	touchPNG(t, dir, "cat/.cache/y.png")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cat", "notes.txt"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("x"), 0o644))
	// A link to a file inside the folder is followed.
	require.NoError(t, os.Symlink(want[3], filepath.Join(dir, "cat", "4.png")))

	l, err := ScanImageFolder(dir, nil)
	require.NoError(t, err)
	assert.Equal(t, dir, l.Root)
	assert.Equal(t, []string{"ant", "cat"}, l.Classes)
	assert.Equal(t, []string{want[3], want[0], want[1], filepath.Join(dir, "cat", "4.png"), want[2]}, l.Files)
	assert.Equal(t, []int64{0, 1, 1, 1, 1}, l.Labels)
	assert.Equal(t, 5, l.Len())

	// With the classes given, labels follow their order.
	l, err = ScanImageFolder(dir, []string{"cat", "ant"})
	require.NoError(t, err)
	assert.Equal(t, []int64{0, 0, 0, 0, 1}, l.Labels) // cat first
}

func TestScanImageFolderErrors(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		_, err := ScanImageFolder(filepath.Join(t.TempDir(), "nope"), nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "nope")
		assert.Contains(t, err.Error(), "no such file")
	})
	t.Run("file", func(t *testing.T) {
		path := touchPNG(t, t.TempDir(), "x.png")
		_, err := ScanImageFolder(path, nil)
		assert.ErrorContains(t, err, path+" is not a folder, expected a folder of class sub-folders")
	})
	t.Run("no class folders", func(t *testing.T) {
		dir := t.TempDir()
		touchPNG(t, dir, "x.png")
		_, err := ScanImageFolder(dir, nil)
		assert.ErrorContains(t, err, "image folder "+dir+" has no class sub-folders")
	})
	t.Run("no images", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "a"), 0o755))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "b"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "x.txt"), nil, 0o644))
		_, err := ScanImageFolder(dir, nil)
		assert.ErrorContains(t, err, "image folder "+dir+" has no images in its 2 class folders (expected .png, .jpg, .jpeg, .gif, .bmp, .webp files)")
	})
	t.Run("empty class", func(t *testing.T) {
		dir := t.TempDir()
		touchPNG(t, dir, "a/1.png")
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "b", "sub"), 0o755))
		_, err := ScanImageFolder(dir, nil)
		assert.ErrorContains(t, err, "class folder "+filepath.Join(dir, "b")+" has no images (expected .png")
	})
	t.Run("classes differ", func(t *testing.T) {
		dir := t.TempDir()
		touchPNG(t, dir, "a/1.png")
		touchPNG(t, dir, "c/1.png")
		_, err := ScanImageFolder(dir, []string{"a", "b"})
		assert.ErrorContains(t, err, "image folder "+dir+`: class sub-folders differ from the 2 expected classes: missing ["b"]; extra ["c"]`)
		_, err = ScanImageFolder(dir, []string{"a"})
		assert.ErrorContains(t, err, `differ from the 1 expected classes: extra ["c"]`)
		assert.NotContains(t, err.Error(), "missing")
	})
	t.Run("link outside", func(t *testing.T) {
		outside := t.TempDir()
		secret := touchPNG(t, outside, "secret.png")
		dir := t.TempDir()
		touchPNG(t, dir, "a/1.png")
		link := filepath.Join(dir, "a", "2.png")
		require.NoError(t, os.Symlink(secret, link))
		_, err := ScanImageFolder(dir, nil)
		assert.ErrorContains(t, err, link+" is a symbolic link to "+secret+", outside the folder")

		require.NoError(t, os.Remove(link))
		link = filepath.Join(dir, "a", "more")
		require.NoError(t, os.Symlink(outside, link)) // a folder
		_, err = ScanImageFolder(dir, nil)
		assert.ErrorContains(t, err, link+" is a symbolic link to "+outside+", outside the folder")

		require.NoError(t, os.Remove(link))
		link = filepath.Join(dir, "b")
		require.NoError(t, os.Symlink(outside, link)) // a class folder
		_, err = ScanImageFolder(dir, nil)
		assert.ErrorContains(t, err, link+" is a symbolic link to "+outside+", outside the folder")
	})
	t.Run("link loop", func(t *testing.T) {
		dir := t.TempDir()
		touchPNG(t, dir, "a/1.png")
		require.NoError(t, os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "a", "loop")))
		l, err := ScanImageFolder(dir, nil)
		require.NoError(t, err)
		assert.Equal(t, []string{filepath.Join(dir, "a", "1.png"), filepath.Join(dir, "a", "loop", "1.png")}, l.Files)
	})
}

func TestImageListSplit(t *testing.T) {
	l := &ImageList{Root: "r", Classes: []string{"a", "b", "c"}}
	counts := []int{10, 3, 1}
	for c, n := range counts {
		for k := range n {
			l.Files = append(l.Files, fmt.Sprintf("%d-%d", c, k))
			l.Labels = append(l.Labels, int64(c))
		}
	}
	train, val := l.Split(0.2, 7)
	// round(0.2×10) = 2; round(0.6) = 1; a class of one image stays in train.
	perClass := func(l *ImageList) []int {
		n := make([]int, 3)
		for _, y := range l.Labels {
			n[y]++
		}
		return n
	}
	assert.Equal(t, []int{2, 1, 0}, perClass(val))
	assert.Equal(t, []int{8, 2, 1}, perClass(train))
	all := append(slices.Clone(train.Files), val.Files...)
	slices.Sort(all)
	want := slices.Clone(l.Files)
	slices.Sort(want)
	assert.Equal(t, want, all, "the split is a partition")
	assert.True(t, slices.IsSortedFunc(val.Files, func(a, b string) int { return slices.Index(l.Files, a) - slices.Index(l.Files, b) }), "val keeps the order")
	assert.Equal(t, l.Classes, val.Classes)
	for i, f := range val.Files {
		assert.Equal(t, int64(f[0]-'0'), val.Labels[i])
	}

	train2, val2 := l.Split(0.2, 7)
	assert.Equal(t, train, train2)
	assert.Equal(t, val, val2)
	differs := false
	for seed := uint64(8); seed < 20 && !differs; seed++ {
		_, v := l.Split(0.2, seed)
		differs = !slices.Equal(v.Files, val.Files)
	}
	assert.True(t, differs, "other seeds give other splits")

	_, val = l.Split(0.01, 1)
	assert.Equal(t, []int{1, 1, 0}, perClass(val), "at least one per class of 2 or more")
	train, _ = l.Split(0.95, 1)
	assert.Equal(t, []int{1, 1, 0}, perClass(train), "at most n-1 per class of 2 or more when fraction < 1")
	train, val = l.Split(1, 1)
	assert.Equal(t, []int{0, 0, 0}, perClass(train))
	assert.Equal(t, counts, perClass(val))
	assert.Panics(t, func() { l.Split(1.5, 1) })
}

func TestDecodeImageFormats(t *testing.T) {
	dir := t.TempDir()
	src := image.NewNRGBA(image.Rect(0, 0, 8, 6))
	for y := range 6 {
		for x := range 8 {
			src.SetNRGBA(x, y, color.NRGBA{uint8(30 * x), uint8(40 * y), uint8(100 + x*y), 255})
		}
	}
	encode := map[string]func(*bytes.Buffer) error{
		"png": func(b *bytes.Buffer) error { return png.Encode(b, src) },
		"bmp": func(b *bytes.Buffer) error { return bmp.Encode(b, src) },
		"gif": func(b *bytes.Buffer) error { // a palette holding every colour: lossless
			pal := color.Palette{}
			for y := range 6 {
				for x := range 8 {
					pal = append(pal, src.At(x, y))
				}
			}
			return gif.Encode(b, src, &gif.Options{NumColors: 256, Quantizer: fixedQuantizer(pal)})
		},
		"jpg": func(b *bytes.Buffer) error { return jpeg.Encode(b, src, &jpeg.Options{Quality: 100}) },
	}
	for ext, enc := range encode {
		var buf bytes.Buffer
		require.NoError(t, enc(&buf))
		path := filepath.Join(dir, "x."+ext)
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
		img, err := DecodeImage(path)
		require.NoError(t, err, ext)
		require.Equal(t, src.Bounds(), img.Bounds(), ext)
		tol := 0
		if ext == "jpg" {
			tol = 40 // lossy, chroma subsampled
		}
		for y := range 6 {
			for x := range 8 {
				want := src.NRGBAAt(x, y)
				got := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
				for c, w := range []uint8{want.R, want.G, want.B} {
					g := []uint8{got.R, got.G, got.B}[c]
					if d := int(g) - int(w); d < -tol || d > tol {
						t.Fatalf("%s pixel (%d, %d) channel %d = %d, want %d ± %d", ext, x, y, c, g, w, tol)
					}
				}
			}
		}
	}

	// WebP: the decoded lossless WebP equals its PNG twin.
	webpBytes, err := base64.StdEncoding.DecodeString(gopherWebP)
	require.NoError(t, err)
	pngBytes, err := base64.StdEncoding.DecodeString(gopherPNG)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "g.webp"), webpBytes, 0o644))
	got, err := DecodeImage(filepath.Join(dir, "g.webp"))
	require.NoError(t, err)
	want, err := png.Decode(bytes.NewReader(pngBytes))
	require.NoError(t, err)
	require.Equal(t, want.Bounds(), got.Bounds())
	for y := want.Bounds().Min.Y; y < want.Bounds().Max.Y; y++ {
		for x := want.Bounds().Min.X; x < want.Bounds().Max.X; x++ {
			w := color.NRGBAModel.Convert(want.At(x, y))
			g := color.NRGBAModel.Convert(got.At(x, y))
			require.Equal(t, w, g, "pixel (%d, %d)", x, y)
		}
	}
}

// fixedQuantizer puts a fixed palette in a GIF.
type fixedQuantizer color.Palette

func (q fixedQuantizer) Quantize(p color.Palette, m image.Image) color.Palette {
	return append(p[:0], q...)
}

func TestDecodeImageErrors(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, greyImage(16, 16, func(x, y int) uint8 { return uint8(x * y) })))
	full := buf.Bytes()
	for _, tc := range []struct {
		name    string
		content []byte
		want    string
	}{
		{"trunc.png", full[:len(full)-20], ": not a valid PNG, JPEG, GIF, BMP or WebP image: unexpected EOF"},
		{"header.png", full[:20], ": not a valid PNG, JPEG, GIF, BMP or WebP image: unexpected EOF"},
		{"text.jpg", []byte("hello, world"), ": not a valid PNG, JPEG, GIF, BMP or WebP image: unknown file signature (the first bytes match none of these formats)"},
		{"empty.png", nil, ": not a valid PNG, JPEG, GIF, BMP or WebP image: unknown file signature (the first bytes match none of these formats)"},
		{"huge.png", hugePNGHeader(100000, 100000), ": png image of 100000×100000 pixels, more than the limit of 67108864 pixels (MaxImagePixels, 8192×8192)"},
	} {
		path := filepath.Join(dir, tc.name)
		require.NoError(t, os.WriteFile(path, tc.content, 0o644))
		_, err := DecodeImage(path)
		assert.EqualError(t, err, path+tc.want, tc.name)
	}
	_, err := DecodeImage(filepath.Join(dir, "missing.png"))
	assert.ErrorContains(t, err, "missing.png: no such file")
}

// hugePNGHeader returns the start of a PNG whose header claims w×h grey
// pixels.
func hugePNGHeader(w, h int) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		panic(err)
	}
	b := buf.Bytes()[:33] // signature and IHDR chunk
	b = slices.Clone(b)
	b[16], b[17], b[18], b[19] = byte(w>>24), byte(w>>16), byte(w>>8), byte(w)
	b[20], b[21], b[22], b[23] = byte(h>>24), byte(h>>16), byte(h>>8), byte(h)
	// Fix the chunk's CRC over type and data.
	crc := crc32.ChecksumIEEE(b[12:29])
	b[29], b[30], b[31], b[32] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	return b
}

// fashionTree writes n random 28×28 grey images as PNGs in dir/<label>/,
// returning their pixels and labels in the order ScanImageFolder lists them.
func fashionTree(t testing.TB, dir string, n int) (pix []byte, labels []int64) {
	rng := rand.New(rand.NewPCG(1, 2))
	type item struct {
		path string
		pix  []byte
		y    int64
	}
	var items []item
	for i := range n {
		y := int64(i % 3)
		p := make([]byte, 28*28)
		for k := range p {
			p[k] = uint8(rng.IntN(256))
		}
		path := filepath.Join(dir, fmt.Sprintf("c%d", y), fmt.Sprintf("%05d.png", i))
		writePNG(t, path, &image.Gray{Pix: p, Stride: 28, Rect: image.Rect(0, 0, 28, 28)})
		items = append(items, item{path, p, y})
	}
	slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.path, b.path) })
	for _, it := range items {
		pix = append(pix, it.pix...)
		labels = append(labels, it.y)
	}
	return pix, labels
}

var fashionTransform = ImageTransform{Height: 28, Width: 28, Channels: 1,
	Mean: []float32{FashionMNISTMean}, Std: []float32{FashionMNISTStd}}

func TestImageFolderMatchesInMemory(t *testing.T) {
	dir := t.TempDir()
	pix, labels := fashionTree(t, dir, 30)
	// The IDX path: bytes / 255, then Normalize.
	x := make([]float32, len(pix))
	for i, v := range pix {
		x[i] = float32(v) / 255
	}
	ref, err := NewInMemory(x, labels, []int{1, 28, 28}, 3)
	require.NoError(t, err)
	ref.Normalize(FashionMNISTMean, FashionMNISTStd)

	list, err := ScanImageFolder(dir, nil)
	require.NoError(t, err)
	for _, cache := range []string{CacheMemory, CacheNone} {
		var progress []int
		f, err := NewImageFolder(list, ImageFolderConfig{Transform: fashionTransform, Cache: cache, Workers: 3,
			Progress: func(done, total int) {
				assert.Equal(t, 30, total)
				progress = append(progress, done)
			}})
		require.NoError(t, err)
		assert.Equal(t, cache == CacheMemory, f.Cached())
		assert.Len(t, progress, 30)
		assert.True(t, slices.IsSorted(progress) && progress[29] == 30, "progress %v", progress)
		assert.Equal(t, []int{1, 28, 28}, f.SampleShape())
		assert.Equal(t, []string{"c0", "c1", "c2"}, f.Classes())
		require.Equal(t, ref.Len(), f.Len())
		got := make([]float32, 784)
		want := make([]float32, 784)
		for i := range f.Len() {
			assert.Equal(t, ref.Sample(i, want), f.Sample(i, got))
			require.Equal(t, want, got, "sample %d, cache %s: bit-identical to the IDX path", i, cache)
		}
	}
}

func TestImageFolderBadImages(t *testing.T) {
	dir := t.TempDir()
	touchPNG(t, dir, "a/1.png")
	touchPNG(t, dir, "a/2.png")
	touchPNG(t, dir, "b/1.png")
	bad := filepath.Join(dir, "a", "bad.png")
	require.NoError(t, os.WriteFile(bad, []byte("\x89PNG\r\n\x1a\n"), 0o644))
	list, err := ScanImageFolder(dir, nil)
	require.NoError(t, err)
	tr := ImageTransform{Height: 4, Width: 4, Channels: 1}

	_, err = NewImageFolder(list, ImageFolderConfig{Transform: tr})
	assert.ErrorContains(t, err, bad+": not a valid PNG, JPEG, GIF, BMP or WebP image: unexpected EOF")
	var bie *BadImageError
	assert.ErrorAs(t, err, &bie)

	for _, cache := range []string{CacheMemory, CacheNone} {
		f, err := NewImageFolder(list, ImageFolderConfig{Transform: tr, SkipBad: true, Cache: cache})
		require.NoError(t, err)
		assert.Equal(t, []string{filepath.Join(dir, "a", "1.png"), filepath.Join(dir, "a", "2.png"), filepath.Join(dir, "b", "1.png")}, f.Files())
		assert.Equal(t, []int64{0, 0, 1}, f.Labels())
		assert.Equal(t, []string{bad + ": not a valid PNG, JPEG, GIF, BMP or WebP image: unexpected EOF"}, f.Skipped())
		dst := make([]float32, 16)
		assert.Equal(t, int64(1), f.Sample(2, dst))
		assert.Equal(t, float32(15)/255, dst[15])
	}

	// A file that turns bad after the initial pass makes an uncached Sample panic.
	f, err := NewImageFolder(list, ImageFolderConfig{Transform: tr, SkipBad: true, Cache: CacheNone})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(f.Files()[0], []byte("junk"), 0o644))
	assert.PanicsWithValue(t, "data: ImageFolder.Sample(0): "+f.Files()[0]+": not a valid PNG, JPEG, GIF, BMP or WebP image: unknown file signature (the first bytes match none of these formats) (the file decoded when the data set was made)",
		func() { f.Sample(0, make([]float32, 16)) })

	// All bad.
	allBad := &ImageList{Root: dir, Classes: []string{"a"}, Files: []string{bad, bad}, Labels: []int64{0, 0}}
	_, err = NewImageFolder(allBad, ImageFolderConfig{Transform: tr, SkipBad: true})
	assert.ErrorContains(t, err, "none of the 2 images of "+dir+" decodes; the first: "+bad)
}

func TestNewImageFolderErrors(t *testing.T) {
	dir := t.TempDir()
	touchPNG(t, dir, "a/1.png")
	list, err := ScanImageFolder(dir, nil)
	require.NoError(t, err)
	tr := ImageTransform{Height: 4, Width: 4, Channels: 1}
	for _, tc := range []struct {
		cfg  ImageFolderConfig
		want string
	}{
		{ImageFolderConfig{Transform: ImageTransform{Height: 4, Width: 4, Channels: 2}}, "Channels = 2, expected 1 (grey) or 3 (RGB)"},
		{ImageFolderConfig{Transform: tr, Cache: "disk"}, `Cache = "disk", expected "auto", "memory" or "none"`},
		{ImageFolderConfig{Transform: tr, CacheBudget: -1}, "CacheBudget = -1"},
		{ImageFolderConfig{Transform: tr, Workers: -1}, "Workers = -1"},
	} {
		_, err := NewImageFolder(list, tc.cfg)
		assert.ErrorContains(t, err, tc.want)
	}
	_, err = NewImageFolder(&ImageList{}, ImageFolderConfig{Transform: tr})
	assert.ErrorContains(t, err, "no images")
}

// colourTree writes n random RGB PNGs of varied sizes under dir.
func colourTree(t testing.TB, dir string, n int) *ImageList {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range n {
		w, h := 20+rng.IntN(30), 20+rng.IntN(30)
		img := image.NewNRGBA(image.Rect(0, 0, w, h))
		for k := range img.Pix {
			img.Pix[k] = uint8(rng.IntN(256))
		}
		writePNG(t, filepath.Join(dir, fmt.Sprintf("c%d", i%2), fmt.Sprintf("%d.png", i)), img)
	}
	list, err := ScanImageFolder(dir, nil)
	require.NoError(t, err)
	return list
}

// allSamples returns the samples of ds.
func allSamples(ds Dataset) [][]float32 {
	out := make([][]float32, ds.Len())
	for i := range out {
		out[i] = make([]float32, product(ds.SampleShape()))
		ds.Sample(i, out[i])
	}
	return out
}

func TestImageFolderCacheModesAgree(t *testing.T) {
	list := colourTree(t, t.TempDir(), 12)
	base := ImageTransform{Height: 16, Width: 12, Channels: 3,
		Mean: []float32{0.485, 0.456, 0.406}, Std: []float32{0.229, 0.224, 0.225}}
	rrc := base
	rrc.RandomResizedCrop, rrc.Flip = true, true
	flip := base
	flip.Flip = true
	for name, cfg := range map[string]ImageFolderConfig{
		"eval":      {Transform: base},
		"flip":      {Transform: flip, Train: true, Seed: 5},
		"rrc":       {Transform: rrc, Train: true, Seed: 5},
		"rrc eval":  {Transform: rrc}, // evaluation ignores the augmentation
		"grey crop": {Transform: ImageTransform{Height: 8, Width: 8, Channels: 1, RandomResizedCrop: true}, Train: true},
	} {
		var ref [][]float32
		for _, mode := range []struct {
			cache  string
			budget int64
			cached bool
		}{{CacheMemory, 0, true}, {CacheNone, 0, false}, {CacheAuto, 0, true}, {CacheAuto, 100, false}} {
			cfg.Cache, cfg.CacheBudget = mode.cache, mode.budget
			f, err := NewImageFolder(list, cfg)
			require.NoError(t, err)
			assert.Equal(t, mode.cached, f.Cached(), "%s %+v", name, mode)
			f.SetEpoch(3)
			got := allSamples(f)
			if ref == nil {
				ref = got
				continue
			}
			require.Equal(t, ref, got, "%s: cache %s budget %d", name, mode.cache, mode.budget)
		}
	}
}

func TestImageFolderRandomness(t *testing.T) {
	list := colourTree(t, t.TempDir(), 6)
	tr := ImageTransform{Height: 10, Width: 10, Channels: 3, RandomResizedCrop: true, Flip: true}
	f, err := NewImageFolder(list, ImageFolderConfig{Transform: tr, Train: true, Seed: 9})
	require.NoError(t, err)
	epoch0 := allSamples(f)
	assert.Equal(t, epoch0, allSamples(f), "same epoch, same images")
	f.SetEpoch(1)
	assert.Equal(t, 1, f.Epoch())
	epoch1 := allSamples(f)
	for i := range epoch0 {
		assert.NotEqual(t, epoch0[i], epoch1[i], "sample %d changes between epochs", i)
	}
	// Sample i of epoch e is Train with the generator of (seed, e, i).
	for i, path := range f.Files() {
		img, err := DecodeImage(path)
		require.NoError(t, err)
		want := make([]float32, 300)
		tr.Train(img, want, rand.New(rand.NewPCG(9, 1<<32|uint64(i))))
		assert.Equal(t, want, epoch1[i], "sample %d", i)
	}
	// Another data set with the same seed, read in another order, agrees.
	g, err := NewImageFolder(list, ImageFolderConfig{Transform: tr, Train: true, Seed: 9, Cache: CacheNone})
	require.NoError(t, err)
	g.SetEpoch(1)
	dst := make([]float32, 300)
	for i := g.Len() - 1; i >= 0; i-- {
		g.Sample(i, dst)
		assert.Equal(t, epoch1[i], dst)
	}
	assert.Panics(t, func() { f.SetEpoch(-1) })
	assert.Panics(t, func() { f.Sample(6, dst) })
	assert.Panics(t, func() { f.Sample(0, dst[:10]) })
}

func TestImageFolderConcurrent(t *testing.T) {
	list := colourTree(t, t.TempDir(), 8)
	tr := ImageTransform{Height: 12, Width: 12, Channels: 3, RandomResizedCrop: true, Flip: true}
	for _, cache := range []string{CacheMemory, CacheNone} {
		f, err := NewImageFolder(list, ImageFolderConfig{Transform: tr, Train: true, Cache: cache, Workers: 4})
		require.NoError(t, err)
		want := allSamples(f)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				dst := make([]float32, 3*12*12)
				for k := range 3 * f.Len() {
					i := (k + g) % f.Len()
					f.Sample(i, dst)
					if !slices.Equal(want[i], dst) {
						t.Errorf("goroutine %d: sample %d differs", g, i)
						return
					}
				}
			})
		}
		wg.Wait()
	}
}

func BenchmarkImageFolderSample(b *testing.B) {
	dir := b.TempDir()
	fashionTree(b, dir, 64)
	list, err := ScanImageFolder(dir, nil)
	require.NoError(b, err)
	for _, cache := range []string{CacheMemory, CacheNone} {
		b.Run(cache, func(b *testing.B) {
			f, err := NewImageFolder(list, ImageFolderConfig{Transform: fashionTransform, Cache: cache})
			require.NoError(b, err)
			dst := make([]float32, 784)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				f.Sample(i%64, dst)
				i++
			}
		})
	}
	b.Run("memory-flip", func(b *testing.B) {
		tr := fashionTransform
		tr.Flip = true
		f, err := NewImageFolder(list, ImageFolderConfig{Transform: tr, Train: true})
		require.NoError(b, err)
		dst := make([]float32, 784)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			f.Sample(i%64, dst)
			i++
		}
	})
}

func ExampleNewImageFolder() {
	// A folder of two classes of 2×2 grey images.
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	for class, v := range map[string]uint8{"dark": 0, "light": 255} {
		os.MkdirAll(filepath.Join(dir, class), 0o755)
		f, _ := os.Create(filepath.Join(dir, class, "1.png"))
		png.Encode(f, greyImage(2, 2, func(x, y int) uint8 { return v }))
		f.Close()
	}

	list, err := ScanImageFolder(dir, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ds, err := NewImageFolder(list, ImageFolderConfig{
		Transform: ImageTransform{Height: 2, Width: 2, Channels: 1, Mean: []float32{0.5}, Std: []float32{0.5}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ds.Classes(), ds.SampleShape())
	x := make([]float32, 4)
	for i := range ds.Len() {
		y := ds.Sample(i, x)
		fmt.Println(y, x)
	}
	// Output:
	// [dark light] [1 2 2]
	// 0 [-1 -1 -1 -1]
	// 1 [1 1 1 1]
}
