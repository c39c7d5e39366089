package data

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Magic numbers of the IDX files this package reads.
const (
	// MagicLabels is the IDX magic number of a file of uint8 labels (one dimension).
	MagicLabels uint32 = 0x00000801
	// MagicImages is the IDX magic number of a file of uint8 images (three dimensions: count, rows, columns).
	MagicImages uint32 = 0x00000803
)

// MaxIDXBytes is the largest data section, in bytes, that the IDX readers
// accept: 1 GiB. That holds 1.3 million 28×28 images (EMNIST, the largest
// IDX data set in common use, has 0.8 million) and is already 4 GiB of
// float32 pixels in an InMemory data set. A header that declares more is
// refused before anything is allocated or decompressed, so that a small
// gzipped file (a "gzip bomb") cannot make the reader exhaust memory.
const MaxIDXBytes = 1 << 30

// idxTypeUint8 is the IDX type code of unsigned bytes, the only one supported.
const idxTypeUint8 = 0x08

// maxDeflateRatio bounds how much a deflate stream can expand (about 1032:1);
// it caps the buffer preallocated for a gzipped file from its compressed size.
const maxDeflateRatio = 1032

// IDX is the content of an IDX file of unsigned bytes: its magic number, its
// dimensions, and its data in row-major order (len(Data) is the product of Dims).
type IDX struct {
	Magic uint32
	Dims  []int
	Data  []byte
}

// ReadIDX reads an IDX file of unsigned bytes with any number of dimensions.
// The file may be gzipped or not: gzip is recognised by its magic bytes
// (0x1f 0x8b), not by the file name. It must be a regular file: a
// directory, a named pipe or a device is refused before it is opened.
//
// The header is read and checked first: the data it declares must be at
// most MaxIDXBytes (and an images file's images at most MaxImagePixels
// each), and an uncompressed file must hold exactly that many bytes after
// the header. Then exactly the declared bytes are read, and a stream that
// holds fewer or more is an error, found without decompressing the rest:
//
//	read /d/x.gz: trailing data: header declares 2×3×4 = 24 bytes of data, found more
//
// Errors name the file and say what was wrong, with expected and found
// values.
func ReadIDX(path string) (*IDX, error) {
	return readIDXFile(path, 0)
}

// ReadIDXImages reads an IDX file of uint8 images (magic 0x00000803, dimensions
// count × rows × columns), gzipped or not, as ReadIDX does.
func ReadIDXImages(path string) (*IDX, error) {
	return readIDXFile(path, MagicImages)
}

// ReadIDXLabels reads an IDX file of uint8 labels (magic 0x00000801, one
// dimension), gzipped or not, as ReadIDX does.
func ReadIDXLabels(path string) (*IDX, error) {
	return readIDXFile(path, MagicLabels)
}

// SniffIDX reports whether the file at path is an IDX file, by its content
// rather than its name: its first four bytes (after gunzipping, for a
// gzipped file) are an IDX magic number — two zero bytes, a known type
// code (0x08 unsigned byte, 0x09 signed byte, 0x0B int16, 0x0C int32,
// 0x0D float32, 0x0E float64) and a dimension count of at least 1. Image
// formats (PNG, JPEG, GIF, BMP, WebP) never start so. A file too short or
// otherwise unlike an IDX file gives false and no error; the error is for
// a file that cannot be read: missing, or not a regular file (a directory,
// a named pipe, a device), as in
//
//	/d/x is a directory, expected an IDX or image file
func SniffIDX(path string) (bool, error) {
	f, _, err := openRegular(path, "an IDX or image file")
	if err != nil {
		return false, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return false, nil // not a valid gzip stream, so not a gzipped IDX file
		}
		r = zr
	}
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return false, nil // too short, or a corrupt gzip stream
	}
	return magic[0] == 0 && magic[1] == 0 && idxTypeName(magic[2]) != "" && magic[3] > 0, nil
}

// readIDXFile reads the IDX file at path; want is the required magic
// number, or 0 for any IDX file of unsigned bytes.
func readIDXFile(path string, want uint32) (*IDX, error) {
	s, f, err := openIDX(path, want)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	idx, err := s.read()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return idx, nil
}

// openIDX opens the IDX file at path (a regular file) and reads and checks
// its header; want is as for readIDXFile. The caller reads the data with
// the stream's read method and closes the file. Errors name the file.
func openIDX(path string, want uint32) (*idxStream, *os.File, error) {
	f, size, err := openRegular(path, "an IDX file")
	if err != nil {
		return nil, nil, err
	}
	s, err := readIDXHeader(f, size, want)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return s, f, nil
}

// decodeIDX decodes an IDX stream of size bytes (-1 if unknown), gzipped or
// not. Errors do not name the source: the caller adds it.
func decodeIDX(r io.Reader, size int64, want uint32) (*IDX, error) {
	s, err := readIDXHeader(r, size, want)
	if err != nil {
		return nil, err
	}
	return s.read()
}

// idxStream is an IDX stream whose header has been read and checked; its
// reader is at the first byte of the data.
type idxStream struct {
	magic uint32
	dims  []int
	// n is the number of bytes of data the header declares.
	n int64
	// hint is the capacity to allocate for the data up front: n when the
	// file's size confirms it, less when the stream may end early.
	hint int64
	d    idxDecoder
}

// readIDXHeader reads the header of an IDX stream of size bytes (-1 if
// unknown), gzipped or not, and checks it: the magic number (want, or any
// IDX file of unsigned bytes when want is 0), the dimensions against
// MaxIDXBytes and MaxImagePixels, and the size of an uncompressed stream
// against the declared data. Errors do not name the source.
func readIDXHeader(r io.Reader, size int64, want uint32) (*idxStream, error) {
	br := bufio.NewReader(r)
	var src io.Reader = br
	gzipped := false
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("bad gzip header: %w", gzipErr(err))
		}
		src, gzipped = zr, true
	}
	d := idxDecoder{r: src, gzipped: gzipped}

	// Magic: two zero bytes, the type code, the number of dimensions.
	var magic [4]byte
	if n, err := d.readFull(magic[:]); err != nil {
		return nil, d.headerErr(err, n, 4, "magic number")
	}
	m := uint32(magic[0])<<24 | uint32(magic[1])<<16 | uint32(magic[2])<<8 | uint32(magic[3])
	if want != 0 && m != want {
		return nil, fmt.Errorf("bad magic 0x%08X, expected 0x%08X (%s)%s", m, want, magicName(want), magicHint(m))
	}
	if magic[0] != 0 || magic[1] != 0 {
		return nil, fmt.Errorf("bad magic 0x%08X, expected 0x000008NN (unsigned bytes, NN dimensions): first two bytes are not zero, not an IDX file", m)
	}
	if magic[2] != idxTypeUint8 {
		name := idxTypeName(magic[2])
		if name == "" {
			name = "unknown type"
		}
		return nil, fmt.Errorf("bad magic 0x%08X: data type 0x%02X (%s) is not supported, expected 0x%02X (unsigned byte)", m, magic[2], name, idxTypeUint8)
	}
	ndims := int(magic[3])
	if ndims == 0 {
		return nil, fmt.Errorf("bad magic 0x%08X: 0 dimensions, expected at least 1", m)
	}

	// Dimensions: big-endian uint32 each.
	raw := make([]byte, 4*ndims)
	if n, err := d.readFull(raw); err != nil {
		return nil, d.headerErr(err, 4+n, 4+4*ndims, fmt.Sprintf("magic number and %d dimensions", ndims))
	}
	dims := make([]int, ndims)
	for i := range dims {
		b := raw[4*i:]
		v := uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
		if v > math.MaxInt32 { // fits an int everywhere; far above MaxIDXBytes anyway
			return nil, fmt.Errorf("bad dimensions: dimension %d is %d, more than the limit of %d", i, v, math.MaxInt32)
		}
		dims[i] = int(v)
	}
	if m == MagicImages {
		if dims[1] == 0 || dims[2] == 0 {
			return nil, fmt.Errorf("bad dimensions %s: images of %d×%d pixels, expected at least 1×1", dimsString(dims), dims[1], dims[2])
		}
		if int64(dims[1])*int64(dims[2]) > MaxImagePixels {
			return nil, fmt.Errorf("bad dimensions %s: images of %d×%d pixels, more than the limit of %d pixels (MaxImagePixels)",
				dimsString(dims), dims[1], dims[2], MaxImagePixels)
		}
	}

	// Size of the data section, checked against the limit before anything
	// is allocated: each factor is below 2³¹, so a product at most
	// MaxIDXBytes times one cannot overflow.
	n := int64(0)
	if !slices.Contains(dims, 0) {
		n = 1
		for _, v := range dims {
			n *= int64(v)
			if n > MaxIDXBytes {
				return nil, fmt.Errorf("bad dimensions: header declares %s bytes of data, more than the limit of %d bytes (MaxIDXBytes)",
					dimsString(dims), MaxIDXBytes)
			}
		}
	}
	s := &idxStream{magic: m, dims: dims, n: n, hint: n, d: d}
	headerLen := int64(4 + 4*ndims)
	switch {
	case !gzipped && size >= 0 && size-headerLen != n:
		return nil, fmt.Errorf("%s: header declares %s = %d bytes of data, the file holds %d",
			sizeProblem(size-headerLen, n), dimsString(dims), n, size-headerLen)
	case size < 0:
		s.hint = min(n, 1<<20) // grow as the data arrives
	case gzipped:
		s.hint = min(n, size*maxDeflateRatio)
	}
	return s, nil
}

// read reads the data section: exactly the declared bytes, through an
// io.LimitReader, into a buffer that grows as they arrive (from s.hint),
// then checks that the stream ends there. For gzip, reaching the end also
// checks the CRC-32 and length of the trailer. Errors do not name the
// source.
func (s *idxStream) read() (*IDX, error) {
	data, err := readData(io.LimitReader(s.d.r, s.n), s.n, s.hint)
	found := int64(len(data))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) && found < s.n {
			return nil, fmt.Errorf("truncated%s: header declares %s = %d bytes of data, the data ends after %d",
				s.d.gzipNote(), dimsString(s.dims), s.n, found)
		}
		if s.d.gzipped {
			return nil, fmt.Errorf("bad gzip stream after %d bytes of data: %w", found, gzipErr(err))
		}
		return nil, err
	}
	if found < s.n {
		return nil, fmt.Errorf("truncated: header declares %s = %d bytes of data, the data ends after %d", dimsString(s.dims), s.n, found)
	}
	// One byte more than declared is enough to fail: the rest, which a
	// gzip bomb makes huge, is never decompressed.
	var one [1]byte
	n, err := io.ReadFull(s.d.r, one[:])
	switch {
	case n == 1:
		return nil, fmt.Errorf("trailing data: header declares %s = %d bytes of data, found more", dimsString(s.dims), s.n)
	case err == io.EOF:
		return &IDX{Magic: s.magic, Dims: s.dims, Data: data}, nil
	case s.d.gzipped:
		return nil, fmt.Errorf("bad gzip stream after %d bytes of data: %w", found, gzipErr(err))
	}
	return nil, err
}

// readData reads r to its end, expecting want bytes at most, into a buffer
// that starts with capacity hint and grows by doubling, so that memory
// follows the data that actually arrives rather than what a header claims.
// A short stream is not an error: the caller compares the length with
// want.
func readData(r io.Reader, want, hint int64) ([]byte, error) {
	buf := make([]byte, 0, hint)
	for int64(len(buf)) < want {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(max(2*int64(cap(buf)), 64<<10), want))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// idxDecoder reads the header of an IDX stream and words its errors.
type idxDecoder struct {
	r       io.Reader
	gzipped bool
}

func (d *idxDecoder) readFull(p []byte) (int, error) {
	return io.ReadFull(d.r, p)
}

// headerErr words a failure to read header bytes [got, need).
func (d *idxDecoder) headerErr(err error, got, need int, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("truncated header%s: expected %d bytes (%s), found %d", d.gzipNote(), need, what, got)
	}
	if d.gzipped {
		return fmt.Errorf("bad gzip stream in the header: %w", gzipErr(err))
	}
	return err
}

func (d *idxDecoder) gzipNote() string {
	if d.gzipped {
		return " (gzip stream ends early)"
	}
	return ""
}

// gzipErr makes the terse errors of compress/gzip and compress/flate readable.
func gzipErr(err error) error {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("truncated: %w", err)
	case errors.Is(err, gzip.ErrChecksum):
		return fmt.Errorf("checksum mismatch, the file is corrupt: %w", err)
	}
	return err
}

func sizeProblem(found, want int64) string {
	if found < want {
		return "truncated"
	}
	return "trailing data"
}

// dimsString formats dimensions as "60000×28×28".
func dimsString(dims []int) string {
	s := make([]string, len(dims))
	for i, d := range dims {
		s[i] = strconv.Itoa(d)
	}
	return strings.Join(s, "×")
}

func magicName(m uint32) string {
	switch m {
	case MagicImages:
		return "images"
	case MagicLabels:
		return "labels"
	}
	return "IDX"
}

// magicHint explains a magic number that belongs to the other kind of file.
func magicHint(m uint32) string {
	switch m {
	case MagicImages:
		return ": this is an images file"
	case MagicLabels:
		return ": this is a labels file"
	}
	return ""
}

// idxTypeName names an IDX type code, or returns "" for an unknown one.
func idxTypeName(t byte) string {
	switch t {
	case 0x08:
		return "unsigned byte"
	case 0x09:
		return "signed byte"
	case 0x0B:
		return "int16"
	case 0x0C:
		return "int32"
	case 0x0D:
		return "float32"
	case 0x0E:
		return "float64"
	}
	return ""
}
