package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/internal/fuzzbound"
)

// encodeIDX returns an IDX file: magic, dims as big-endian uint32, then data.
func encodeIDX(magic uint32, dims []int, data []byte) []byte {
	d32 := make([]uint32, len(dims))
	for i, d := range dims {
		d32[i] = uint32(d)
	}
	return encodeIDX32(magic, d32, data)
}

// encodeIDX32 is encodeIDX for dimensions that may not fit an int.
func encodeIDX32(magic uint32, dims []uint32, data []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, magic)
	_ = binary.Write(&b, binary.BigEndian, dims)
	b.Write(data)
	return b.Bytes()
}

// gz returns b gzipped.
func gz(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	_, _ = w.Write(b)
	_ = w.Close()
	return out.Bytes()
}

// writeFile writes content to dir/name and returns the path.
func writeFile(t testing.TB, dir, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, content, 0o644))
	return p
}

// seq returns n bytes 0, 1, 2, ... (mod 256).
func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func TestReadIDX(t *testing.T) {
	t.Parallel()
	images := encodeIDX(MagicImages, []int{2, 3, 4}, seq(24))
	labels := encodeIDX(MagicLabels, []int{5}, []byte{3, 1, 4, 1, 5})
	matrix := encodeIDX(0x00000802, []int{2, 3}, seq(6))
	tests := []struct {
		name    string
		file    string
		content []byte
		read    func(string) (*IDX, error)
		want    *IDX
	}{
		{"raw images", "train-images-idx3-ubyte", images, ReadIDXImages, &IDX{MagicImages, []int{2, 3, 4}, seq(24)}},
		{"gzipped images", "train-images-idx3-ubyte.gz", gz(images), ReadIDXImages, &IDX{MagicImages, []int{2, 3, 4}, seq(24)}},
		{"raw labels", "labels", labels, ReadIDXLabels, &IDX{MagicLabels, []int{5}, []byte{3, 1, 4, 1, 5}}},
		{"gzipped labels", "labels.gz", gz(labels), ReadIDXLabels, &IDX{MagicLabels, []int{5}, []byte{3, 1, 4, 1, 5}}},
		{"gzip without .gz name", "images", gz(images), ReadIDXImages, &IDX{MagicImages, []int{2, 3, 4}, seq(24)}},
		{"raw with .gz name", "images.gz", images, ReadIDXImages, &IDX{MagicImages, []int{2, 3, 4}, seq(24)}},
		{"generic reads images", "any", images, ReadIDX, &IDX{MagicImages, []int{2, 3, 4}, seq(24)}},
		{"generic reads 2 dims", "matrix.gz", gz(matrix), ReadIDX, &IDX{0x802, []int{2, 3}, seq(6)}},
		{"no images", "empty-images", encodeIDX(MagicImages, []int{0, 28, 28}, nil), ReadIDXImages, &IDX{MagicImages, []int{0, 28, 28}, []byte{}}},
		{"no labels gzipped", "empty-labels.gz", gz(encodeIDX(MagicLabels, []int{0}, nil)), ReadIDXLabels, &IDX{MagicLabels, []int{0}, []byte{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := writeFile(t, t.TempDir(), tt.file, tt.content)
			got, err := tt.read(p)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestReadIDXErrors(t *testing.T) {
	t.Parallel()
	images := encodeIDX(MagicImages, []int{2, 3, 4}, seq(24))
	gzImages := gz(images)
	badCRC := bytes.Clone(gzImages)
	badCRC[len(badCRC)-8] ^= 0xff // first byte of the CRC-32 trailer
	tests := []struct {
		name    string
		content []byte // nil: the file does not exist
		read    func(string) (*IDX, error)
		want    []string // substrings of the error, besides the path
	}{
		{"missing file", nil, ReadIDXImages, []string{"no such file"}},
		{"empty file", []byte{}, ReadIDXImages, []string{"truncated header", "expected 4 bytes (magic number), found 0"}},
		{"short magic", []byte{0, 0, 8}, ReadIDXLabels, []string{"truncated header", "expected 4 bytes (magic number), found 3"}},
		{"short dims", images[:9], ReadIDXImages, []string{"truncated header: expected 16 bytes (magic number and 3 dimensions), found 9"}},
		{"short dims gzipped", gz(images[:9]), ReadIDXImages, []string{"truncated header (gzip stream ends early): expected 16 bytes (magic number and 3 dimensions), found 9"}},
		{"truncated data", images[:26], ReadIDXImages, []string{"truncated: header declares 2×3×4 = 24 bytes of data, the file holds 10"}},
		{"truncated data gzipped", gz(images[:26]), ReadIDXImages, []string{"truncated: header declares 2×3×4 = 24 bytes of data, the data ends after 10"}},
		{"truncated gzip stream", gz(encodeIDX(MagicImages, []int{100, 28, 28}, seq(78400)))[:300], ReadIDXImages, []string{"truncated (gzip stream ends early): header declares 100×28×28 = 78400 bytes of data, the data ends after"}},
		{"trailing data", append(bytes.Clone(images), 1, 2, 3), ReadIDXImages, []string{"trailing data: header declares 2×3×4 = 24 bytes of data, the file holds 27"}},
		{"trailing data gzipped", gz(append(bytes.Clone(images), 1, 2, 3)), ReadIDXImages, []string{"trailing data: header declares 2×3×4 = 24 bytes of data, found more"}},
		{"labels read as images", encodeIDX(MagicLabels, []int{2}, []byte{1, 2}), ReadIDXImages, []string{"bad magic 0x00000801, expected 0x00000803 (images): this is a labels file"}},
		{"images read as labels", images, ReadIDXLabels, []string{"bad magic 0x00000803, expected 0x00000801 (labels): this is an images file"}},
		{"two dims read as images", encodeIDX(0x802, []int{2, 3}, seq(6)), ReadIDXImages, []string{"bad magic 0x00000802, expected 0x00000803 (images)"}},
		{"not idx", []byte("hello, world, this is text"), ReadIDX, []string{"bad magic 0x68656C6C", "not an IDX file"}},
		{"float32 idx", encodeIDX(0x0D01, []int{1}, []byte{0, 0, 0, 0}), ReadIDX, []string{"data type 0x0D (float32) is not supported, expected 0x08 (unsigned byte)"}},
		{"zero dims", encodeIDX(0x0800, nil, nil), ReadIDX, []string{"0 dimensions, expected at least 1"}},
		{"zero-size images", encodeIDX(MagicImages, []int{5, 0, 28}, nil), ReadIDXImages, []string{"images of 0×28 pixels, expected at least 1×1"}},
		{"absurd dims", encodeIDX32(MagicImages, []uint32{0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, nil), ReadIDXImages, []string{"bad dimensions: dimension 0 is 4294967295, more than the limit of 2147483647"}},
		{"over the limit", encodeIDX32(MagicImages, []uint32{2000, 1000, 1000}, nil), ReadIDXImages, []string{"bad dimensions: header declares 2000×1000×1000 bytes of data, more than the limit of 1073741824 bytes (MaxIDXBytes)"}},
		{"images over the pixel limit", encodeIDX32(MagicImages, []uint32{0, 10000, 10000}, nil), ReadIDXImages, []string{"bad dimensions 0×10000×10000: images of 10000×10000 pixels, more than the limit of 67108864 pixels (MaxImagePixels)"}},
		{"header larger than raw file", encodeIDX(MagicImages, []int{60000, 28, 28}, seq(1234)), ReadIDXImages, []string{"truncated: header declares 60000×28×28 = 47040000 bytes of data, the file holds 1234"}},
		{"header larger than gzipped file", gz(encodeIDX(MagicImages, []int{60000, 28, 28}, seq(1234))), ReadIDXImages, []string{"truncated: header declares 60000×28×28 = 47040000 bytes of data, the data ends after 1234"}},
		{"bad gzip header", []byte{0x1f, 0x8b, 0, 0, 0, 0}, ReadIDXImages, []string{"bad gzip header"}},
		{"gzip trailer cut", gzImages[:len(gzImages)-3], ReadIDXImages, []string{"bad gzip stream after 24 bytes of data: truncated"}},
		{"gzip garbage", append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}, bytes.Repeat([]byte{0xff}, 40)...), ReadIDXImages, []string{"bad gzip stream"}},
		{"gzip checksum", badCRC, ReadIDXImages, []string{"bad gzip stream after 24 bytes of data", "checksum"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "train-images-idx3-ubyte.gz")
			if tt.content != nil {
				writeFile(t, filepath.Dir(p), filepath.Base(p), tt.content)
			}
			got, err := tt.read(p)
			require.Error(t, err)
			assert.Nil(t, got)
			if tt.content != nil {
				assert.Contains(t, err.Error(), "read "+p+": ")
			} else {
				assert.Contains(t, err.Error(), "open "+p+": ") // the open a missing file stands for
			}
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestReadIDXNoHugeAllocation checks that a gzipped file whose header claims
// a gigabyte of data is rejected without allocating anything like it.
func TestReadIDXNoHugeAllocation(t *testing.T) {
	p := writeFile(t, t.TempDir(), "huge.gz", gz(encodeIDX(MagicImages, []int{1000, 1000, 1000}, seq(100))))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadIDXImages(p)
	runtime.ReadMemStats(&after)
	require.ErrorContains(t, err, "truncated: header declares 1000×1000×1000 = 1000000000 bytes of data, the data ends after 100")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20), "bytes allocated")
}

func FuzzReadIDX(f *testing.F) {
	images := encodeIDX(MagicImages, []int{2, 3, 4}, seq(24))
	labels := encodeIDX(MagicLabels, []int{3}, []byte{1, 2, 3})
	for _, seed := range [][]byte{
		images, gz(images), labels, gz(labels),
		images[:10], gz(images)[:20], append(bytes.Clone(images), 7),
		encodeIDX32(MagicImages, []uint32{0xFFFFFFFF, 0xFFFFFFFF, 2}, nil),
		gz(encodeIDX(MagicImages, []int{60000, 28, 28}, seq(50))),
		encodeIDX(0x08FF, make([]int, 255), nil),
		{}, {0x1f}, {0x1f, 0x8b}, {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255, 1, 2, 3},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzbound.Run(t, fuzzbound.PerInput, func() {
			for _, want := range []uint32{0, MagicImages, MagicLabels} {
				for _, size := range []int64{int64(len(b)), -1} {
					idx, err := decodeIDX(bytes.NewReader(b), size, want)
					if err != nil {
						continue
					}
					if want != 0 && idx.Magic != want {
						t.Fatalf("magic 0x%08X, want 0x%08X", idx.Magic, want)
					}
					if len(idx.Data) != product(idx.Dims) {
						t.Fatalf("len(Data) = %d, want product of %v", len(idx.Data), idx.Dims)
					}
				}
			}
		})
	})
}
