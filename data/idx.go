package data

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
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

// MaxIDXBytes is the largest data section, in bytes, that ReadIDX accepts.
// A header that claims more is rejected before anything is allocated.
const MaxIDXBytes = 4 << 30

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
// (0x1f 0x8b), not by the file name. Errors name the file and say what was
// wrong, with expected and found values.
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

// readIDXFile opens path and decodes it; want is the required magic number,
// or 0 for any IDX file of unsigned bytes.
func readIDXFile(path string, want uint32) (*IDX, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *fs.PathError: "open PATH: no such file or directory"
	}
	defer f.Close()
	size := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	idx, err := decodeIDX(f, size, want)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return idx, nil
}

// decodeIDX decodes an IDX stream of size bytes (-1 if unknown), gzipped or
// not. Errors do not name the source: the caller adds it.
func decodeIDX(r io.Reader, size int64, want uint32) (*IDX, error) {
	br := bufio.NewReader(r)
	var src io.Reader = br
	gzipped := false
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("bad gzip header: %w", gzipErr(err))
		}
		defer zr.Close()
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
		return nil, fmt.Errorf("bad magic 0x%08X: data type 0x%02X (%s) is not supported, expected 0x%02X (unsigned byte)", m, magic[2], idxTypeName(magic[2]), idxTypeUint8)
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
	zero := false
	for i := range dims {
		b := raw[4*i:]
		v := uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
		if v > math.MaxInt { // only on 32-bit platforms
			return nil, fmt.Errorf("bad dimensions: dimension %d is %d, more than this platform can hold", i, v)
		}
		dims[i] = int(v)
		zero = zero || v == 0
	}
	if m == MagicImages && (dims[1] == 0 || dims[2] == 0) {
		return nil, fmt.Errorf("bad dimensions %s: images of %d×%d pixels, expected at least 1×1", dimsString(dims), dims[1], dims[2])
	}

	// Size of the data section, checked against the cap before allocating.
	total := uint64(1)
	if zero {
		total = 0
	} else {
		for _, v := range dims {
			if total > MaxIDXBytes/uint64(v) {
				return nil, fmt.Errorf("bad dimensions: header says %s, more than the limit of %d bytes of data", dimsString(dims), uint64(MaxIDXBytes))
			}
			total *= uint64(v)
		}
	}
	if total > math.MaxInt {
		return nil, fmt.Errorf("bad dimensions: header says %s = %d bytes of data, more than this platform can hold", dimsString(dims), total)
	}
	want64 := int64(total)
	headerLen := int64(4 + 4*ndims)
	if !gzipped && size >= 0 && size-headerLen != want64 {
		return nil, fmt.Errorf("%s: header says %s = %d bytes of data, found %d", sizeProblem(size-headerLen, want64), dimsString(dims), want64, size-headerLen)
	}

	// Preallocate no more than the input can possibly hold; grow as data arrives.
	hint := want64
	switch {
	case size < 0:
		hint = min(hint, 1<<20)
	case gzipped:
		hint = min(hint, size*maxDeflateRatio)
	}
	data, err := readData(d.r, want64, hint)
	found := int64(len(data))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) && found < want64 {
			return nil, fmt.Errorf("truncated%s: header says %s = %d bytes of data, found %d", d.gzipNote(), dimsString(dims), want64, found)
		}
		if gzipped {
			return nil, fmt.Errorf("bad gzip stream after %d bytes of data: %w", found, gzipErr(err))
		}
		return nil, err
	}
	if found < want64 {
		return nil, fmt.Errorf("truncated: header says %s = %d bytes of data, found %d", dimsString(dims), want64, found)
	}
	// The stream must end here. For gzip, reading to the end also checks the
	// CRC-32 and length in the trailer.
	var one [1]byte
	n, err := io.ReadFull(d.r, one[:])
	if n == 1 {
		// Count the rest without keeping it, so the message says how much there is.
		rest, err := io.Copy(io.Discard, d.r)
		if err != nil && gzipped {
			return nil, fmt.Errorf("bad gzip stream after %d bytes of data: %w", found+1+rest, gzipErr(err))
		}
		return nil, fmt.Errorf("trailing data: header says %s = %d bytes of data, found %d", dimsString(dims), want64, found+1+rest)
	}
	if err != io.EOF {
		if gzipped {
			return nil, fmt.Errorf("bad gzip stream after %d bytes of data: %w", found, gzipErr(err))
		}
		return nil, err
	}
	return &IDX{Magic: m, Dims: dims, Data: data}, nil
}

// readData reads up to want bytes from r into a buffer that starts with
// capacity hint and grows by doubling, so that memory follows the data that
// actually arrives rather than what a header claims. A short stream is not
// an error: the caller compares the length with want.
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
	return "unknown type"
}
