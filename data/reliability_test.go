package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gzipZeros returns a gzipped IDX file: the header of magic and dims, then
// zeros zero bytes, streamed through gzip so that neither the test nor the
// file holds them (a gzip bomb: a megabyte of zeros compresses to about a
// kilobyte).
func gzipZeros(t *testing.T, magic uint32, dims []int, zeros int64) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	require.NoError(t, err)
	_, err = w.Write(encodeIDX(magic, dims, nil))
	require.NoError(t, err)
	chunk := make([]byte, 1<<20)
	for zeros > 0 {
		n := min(zeros, int64(len(chunk)))
		_, err := w.Write(chunk[:n])
		require.NoError(t, err)
		zeros -= n
	}
	require.NoError(t, w.Close())
	return out.Bytes()
}

// allocated returns the bytes f allocates (the whole process's, so the
// test must not run in parallel with others).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestRelGzipBombCountMismatch checks that the images and labels counts
// are compared from the headers, before a gzipped images file is
// decompressed: a gzip bomb whose labels file disagrees costs nothing.
func TestRelGzipBombCountMismatch(t *testing.T) {
	dir := t.TempDir()
	const n = 40000 // 31 MB of pixels in a file of about 30 KB
	images := writeFile(t, dir, "images.gz", gzipZeros(t, MagicImages, []int{n, 28, 28}, n*28*28))
	labels := writeFile(t, dir, "labels", encodeIDX(MagicLabels, []int{10}, make([]byte, 10)))
	var err error
	bytes := allocated(func() { _, err = LoadIDX(images, labels) })
	require.EqualError(t, err, "load idx: "+images+" has 40000 images but "+labels+" has 10 labels, expected the same count")
	assert.Less(t, bytes, uint64(4<<20), "bytes allocated")
}

// TestRelIDXMemoryLimit checks that images and labels files that agree
// but would make a data set of more than 5 × MaxIDXBytes are refused from
// their headers.
func TestRelIDXMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	images := writeFile(t, dir, "images.gz", gz(encodeIDX(MagicImages, []int{1 << 30, 1, 1}, nil)))
	labels := writeFile(t, dir, "labels.gz", gz(encodeIDX(MagicLabels, []int{1 << 30}, nil)))
	_, err := LoadIDX(images, labels)
	assert.EqualError(t, err, "load idx: "+images+": 1073741824 images of 1×1 pixels take 12884901888 bytes in memory (float32 pixels, int64 labels), more than the limit of 5368709120 bytes")
}

// TestRelGzipBombTrailing checks that a gzipped file holding far more than
// its header declares fails at the first byte too many, without
// decompressing the rest.
func TestRelGzipBombTrailing(t *testing.T) {
	p := writeFile(t, t.TempDir(), "labels.gz", gzipZeros(t, MagicLabels, []int{24}, 24+16<<20))
	var err error
	bytes := allocated(func() { _, err = ReadIDXLabels(p) })
	require.EqualError(t, err, "read "+p+": trailing data: header declares 24 = 24 bytes of data, found more")
	assert.Less(t, bytes, uint64(4<<20), "bytes allocated")
}

// TestRelRawIDXOverLimit checks that an uncompressed file whose size
// matches a header over MaxIDXBytes is refused before it is read (the
// file is sparse: it takes no disk).
func TestRelRawIDXOverLimit(t *testing.T) {
	p := writeFile(t, t.TempDir(), "images", encodeIDX(MagicImages, []int{1200, 1000, 1000}, nil))
	require.NoError(t, os.Truncate(p, 16+1200*1000*1000))
	var err error
	bytes := allocated(func() { _, err = ReadIDXImages(p) })
	require.EqualError(t, err, "read "+p+": bad dimensions: header declares 1200×1000×1000 bytes of data, more than the limit of 1073741824 bytes (MaxIDXBytes)")
	assert.Less(t, bytes, uint64(1<<20), "bytes allocated")
}

// TestRelIDXDirPrefersRaw checks the rule for a file beside its .gz: the
// uncompressed one is read, and the data set says which files were.
func TestRelIDXDirPrefersRaw(t *testing.T) {
	dir := t.TempDir()
	writeFashion(t, dir, 4, 3, 2, 2) // train gzipped, test raw
	raw := writeFile(t, dir, "train-images-idx3-ubyte", encodeIDX(MagicImages, []int{4, 2, 2}, bytes.Repeat([]byte{255}, 16)))
	train, test, err := LoadIDXDir(dir, 10)
	require.NoError(t, err)
	assert.Equal(t, []string{raw, filepath.Join(dir, "train-labels-idx1-ubyte.gz")}, train.Files)
	assert.Equal(t, []string{filepath.Join(dir, "t10k-images-idx3-ubyte"), filepath.Join(dir, "t10k-labels-idx1-ubyte")}, test.Files)
	assert.Equal(t, float32(1), train.X[0], "the raw file's pixels, not the .gz's")
}

// TestRelIDXDirDirectory checks that a directory in place of a data file
// is named as such, not reported missing.
func TestRelIDXDirDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFashion(t, dir, 2, 2, 28, 28)
	require.NoError(t, os.Remove(filepath.Join(dir, "train-images-idx3-ubyte.gz")))
	sub := filepath.Join(dir, "train-images-idx3-ubyte")
	require.NoError(t, os.Mkdir(sub, 0o755))
	_, _, err := LoadFashionMNIST(dir)
	require.EqualError(t, err, "load fashion-mnist: "+sub+" is a directory, expected an IDX file")

	_, err = ReadIDX(sub)
	assert.EqualError(t, err, sub+" is a directory, expected an IDX file")
}

// TestRelSniffIDX checks that IDX files are recognised by their content.
func TestRelSniffIDX(t *testing.T) {
	dir := t.TempDir()
	images := encodeIDX(MagicImages, []int{1, 2, 2}, seq(4))
	for _, c := range []struct {
		name    string
		content []byte
		want    bool
	}{
		{"images", images, true},
		{"images.gz", gz(images), true},
		{"labels", encodeIDX(MagicLabels, []int{1}, []byte{3}), true},
		{"floats", encodeIDX(0x0D02, []int{1, 1}, make([]byte, 4)), true},
		{"x.png", hugePNGHeader(2, 2), false},
		{"text", []byte("hello"), false},
		{"short", []byte{0, 0}, false},
		{"no dims", []byte{0, 0, 8, 0}, false},
		{"bad type", []byte{0, 0, 0x42, 1}, false},
		{"bad.gz", []byte{0x1f, 0x8b, 1, 2, 3}, false},
	} {
		got, err := SniffIDX(writeFile(t, dir, c.name, c.content))
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
	_, err := SniffIDX(dir)
	assert.EqualError(t, err, dir+" is a directory, expected an IDX or image file")
	_, err = SniffIDX(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestRelHugeImages checks that images declaring more than MaxImagePixels
// are refused from their header, in every format, before decoding.
func TestRelHugeImages(t *testing.T) {
	dir := t.TempDir()
	// A GIF's logical screen size is bytes 6-9, little-endian.
	var g bytes.Buffer
	require.NoError(t, gif.Encode(&g, image.NewPaletted(image.Rect(0, 0, 1, 1), color.Palette{color.Black}), nil))
	gifBytes := g.Bytes()
	binary.LittleEndian.PutUint16(gifBytes[6:], 9000)
	binary.LittleEndian.PutUint16(gifBytes[8:], 9000)
	// A JPEG's size is in its SOF0 segment: FF C0, length, precision, height, width.
	var j bytes.Buffer
	require.NoError(t, jpeg.Encode(&j, image.NewGray(image.Rect(0, 0, 8, 8)), nil))
	jpegBytes := j.Bytes()
	sof := bytes.Index(jpegBytes, []byte{0xFF, 0xC0})
	require.Positive(t, sof)
	binary.BigEndian.PutUint16(jpegBytes[sof+5:], 9000)
	binary.BigEndian.PutUint16(jpegBytes[sof+7:], 9000)

	for _, c := range []struct {
		name    string
		content []byte
		want    string
	}{
		{"big.png", hugePNGHeader(9000, 9000), "png image of 9000×9000 pixels"},
		{"huge.png", hugePNGHeader(60000, 60000), "png image of 60000×60000 pixels"},
		{"big.gif", gifBytes, "gif image of 9000×9000 pixels"},
		{"big.jpg", jpegBytes, "jpeg image of 9000×9000 pixels"},
		{"frame.webp", webpHeader(1, 1, 16000, 16000), "webp image of 16000×16000 pixels"},
		{"canvas.webp", webpHeader(16000, 16000, 1, 1), "webp image of 16000×16000 pixels"},
	} {
		p := writeFile(t, dir, c.name, c.content)
		var err error
		bytes := allocated(func() { _, err = DecodeImage(p) })
		assert.EqualError(t, err, p+": "+c.want+", more than the limit of 67108864 pixels (MaxImagePixels, 8192×8192)", c.name)
		assert.Less(t, bytes, uint64(1<<20), "bytes allocated for %s", c.name)
	}
}

// webpHeader returns the start of a WebP file with a VP8X chunk declaring
// a canvas of cw×ch pixels and a VP8L frame declaring fw×fh pixels.
func webpHeader(cw, ch, fw, fh int) []byte {
	var chunks bytes.Buffer
	chunk := func(id string, data []byte) {
		chunks.WriteString(id)
		_ = binary.Write(&chunks, binary.LittleEndian, uint32(len(data)))
		chunks.Write(data)
	}
	vp8x := make([]byte, 10)
	vp8x[4], vp8x[5], vp8x[6] = byte(cw-1), byte((cw-1)>>8), byte((cw-1)>>16)
	vp8x[7], vp8x[8], vp8x[9] = byte(ch-1), byte((ch-1)>>8), byte((ch-1)>>16)
	chunk("VP8X", vp8x)
	vp8l := make([]byte, 8)
	vp8l[0] = 0x2f // signature, then 14 bits of width-1, 14 of height-1, alpha, version 0
	binary.LittleEndian.PutUint32(vp8l[1:], uint32(fw-1)|uint32(fh-1)<<14)
	chunk("VP8L", vp8l)
	var out bytes.Buffer
	out.WriteString("RIFF")
	_ = binary.Write(&out, binary.LittleEndian, uint32(4+chunks.Len()))
	out.WriteString("WEBP")
	out.Write(chunks.Bytes())
	return out.Bytes()
}

// TestRelAugmentPad checks that NewAugmented refuses a pad larger than the
// images with an error, and that Apply panics with a message saying so.
func TestRelAugmentPad(t *testing.T) {
	ds := makeDataset(t, 2, []int{1, 28, 20}, 2)
	assert.Equal(t, 20, MaxAugmentPad(ds.SampleShape()))
	_, err := NewAugmented(ds, Augment{Pad: 20}, 1)
	require.NoError(t, err)
	for _, pad := range []int{21, 1000000, math.MaxInt} {
		_, err := NewAugmented(ds, Augment{Pad: pad}, 1)
		assert.EqualError(t, err, fmt.Sprintf("data: Augment.Pad = %d is larger than the images (28×20), expected at most 20 (MaxAugmentPad)", pad))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	assert.PanicsWithValue(t, "data: Augment.Pad = 3 is larger than the images (2×2), expected at most 2 (MaxAugmentPad)",
		func() { Augment{Pad: 3}.Apply(make([]float32, 4), []int{2, 2}, rng) })
}

// TestRelTableLongLine checks that a line longer than MaxTableLineBytes is
// refused as it is read, naming its line.
func TestRelTableLongLine(t *testing.T) {
	long := "a,b\n1,2\n" + strings.Repeat("x", MaxTableLineBytes+1) + "\n"
	p := writeFile(t, t.TempDir(), "long.csv", []byte(long))
	_, err := ReadTable(p, TableConfig{Label: "a", Header: true})
	assert.EqualError(t, err, p+":3: line longer than 4194304 bytes (MaxTableLineBytes), expected shorter lines of comma-separated values")
}

// TestRelTableColumns checks that a row of more than MaxTableColumns
// fields is refused.
func TestRelTableColumns(t *testing.T) {
	header := strings.Repeat("c,", MaxTableColumns) + "c\n"
	p := writeFile(t, t.TempDir(), "wide.csv", []byte(header+"1,2\n"))
	_, err := ReadTable(p, TableConfig{Label: "0"})
	assert.EqualError(t, err, p+":1: 65537 fields, more than the limit of 65536 columns (MaxTableColumns)")
}

// TestRelTextOverLimit checks that text files of more than MaxTextBytes in
// all are refused before they are read (the file is sparse: it takes no
// disk).
func TestRelTextOverLimit(t *testing.T) {
	dir := t.TempDir()
	small := writeFile(t, dir, "a.txt", []byte("hello"))
	big := writeFile(t, dir, "b.txt", nil)
	require.NoError(t, os.Truncate(big, MaxTextBytes))
	var err error
	bytes := allocated(func() { _, err = LoadText([]string{small, big}) })
	assert.EqualError(t, err, fmt.Sprintf("data: LoadText: %s: the files hold %d bytes up to this one, more than the limit of 1073741824 bytes of text (MaxTextBytes)", big, MaxTextBytes+5))
	assert.Less(t, bytes, uint64(1<<20), "bytes allocated")
}

// TestRelImageTransformSize checks that a transform to more than
// MaxImagePixels is invalid: its samples could not be allocated.
func TestRelImageTransformSize(t *testing.T) {
	err := ImageTransform{Height: 100000, Width: 100000, Channels: 3}.Validate()
	assert.EqualError(t, err, "data: ImageTransform: size 100000×100000 (Height×Width) is more than the limit of 67108864 pixels (MaxImagePixels)")
}
