package checkpoint

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/internal/filekind"
	"github.com/hora-dl/hora/tensor"
)

// chunkBytes is the size of the scratch buffer used to convert tensor data
// to and from little-endian bytes (a multiple of every element size).
const chunkBytes = 1 << 16

// saveHooks lets tests inject failures into Save; the zero value is the
// real behavior.
type saveHooks struct {
	wrap   func(io.Writer) io.Writer           // wraps the temporary file's writer
	rename func(oldpath, newpath string) error // replaces os.Rename
}

// Save writes tensors and metadata to path as a safetensors file.
//
// Tensor names must be non-empty valid UTF-8 and must not be
// "__metadata__"; tensors may live on any device and may be non-contiguous
// views (their elements are written in row-major order); their dtype must
// be Float32, Float64 or Int64. metadata may be nil.
//
// The write is atomic: Save writes a temporary file in path's directory,
// syncs it, renames it over path and syncs the directory. On any error the
// temporary file is removed and an existing file at path is left as it was.
// A new file gets permissions 0644; a replaced file keeps its permissions.
// Save only replaces a regular file: when path is a symbolic link, a
// directory, a named pipe, a device or a socket, it refuses and changes
// nothing.
func Save(path string, tensors map[string]*tensor.Tensor, metadata map[string]string) error {
	return save(path, tensors, metadata, saveHooks{})
}

func save(path string, tensors map[string]*tensor.Tensor, metadata map[string]string, hooks saveHooks) (err error) {
	names := make([]string, 0, len(tensors))
	for name := range tensors {
		names = append(names, name)
	}
	sort.Strings(names)
	entries := make([]entry, len(names))
	var pos int64
	for i, name := range names {
		t := tensors[name]
		switch {
		case name == "":
			return fmt.Errorf("%s: tensor name must not be empty", path)
		case name == metadataKey:
			return fmt.Errorf("%s: tensor name %q is reserved for metadata", path, name)
		case !utf8.ValidString(name):
			return fmt.Errorf("%s: tensor name %q is not valid UTF-8", path, name)
		case t == nil:
			return fmt.Errorf("%s: tensor %q is nil", path, name)
		case dtypeName(t.DType()) == "":
			return fmt.Errorf("%s: tensor %q: dtype %v cannot be saved (supported: float32, float64, int64)", path, name, t.DType())
		}
		n := int64(t.Len()) * int64(t.DType().Size())
		entries[i] = entry{name: name, dtype: t.DType(), shape: t.Shape(), n: t.Len(), begin: pos, end: pos + n}
		pos += n
	}
	for k, v := range metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("%s: metadata %q: %q is not valid UTF-8", path, k, v)
		}
	}
	header := encodeHeader(entries, metadata)
	if err := checkReplaceable(path); err != nil {
		return err
	}

	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("%s: creating temporary file: %w", path, err)
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				_ = f.Close()
			}
			_ = os.Remove(tmp)
		}
	}()

	var w io.Writer = f
	if hooks.wrap != nil {
		w = hooks.wrap(w)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(header)))
	if _, err := bw.Write(lenBuf[:]); err != nil {
		return fmt.Errorf("%s: writing %s: %w", path, tmp, err)
	}
	if _, err := bw.Write(header); err != nil {
		return fmt.Errorf("%s: writing %s: %w", path, tmp, err)
	}
	for _, e := range entries {
		if err := writeTensor(bw, tensors[e.name]); err != nil {
			return fmt.Errorf("%s: writing tensor %q to %s: %w", path, e.name, tmp, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("%s: writing %s: %w", path, tmp, err)
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		mode = st.Mode().Perm()
	}
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%s: syncing %s: %w", path, tmp, err)
	}
	closed = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: closing %s: %w", path, tmp, err)
	}
	// Checked again just before the rename, in case path appeared since.
	if err := checkReplaceable(path); err != nil {
		return err
	}
	rename := os.Rename
	if hooks.rename != nil {
		rename = hooks.rename
	}
	if err := rename(tmp, path); err != nil {
		return fmt.Errorf("%s: replacing it with %s: %w", path, tmp, err)
	}
	// Make the rename durable. Not every system can sync a directory, and
	// the file itself is already complete, so a failure here is ignored.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// checkReplaceable fails when path exists and is not a regular file, which
// Save must not rename over.
func checkReplaceable(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return pathErr(path, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: refusing to replace it: it is %s, not a regular file", path, filekind.Of(st.Mode()))
	}
	return nil
}

// writeTensor writes t's elements in row-major order as little-endian
// bytes. A panic while reading the tensor (a device error) becomes an error,
// so that Save can still remove its temporary file.
func writeTensor(w io.Writer, t *tensor.Tensor) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reading the tensor: %v", r)
		}
	}()
	buf := make([]byte, 0, chunkBytes)
	flush := func() error {
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	switch t.DType() {
	case device.Float32:
		for _, v := range t.Float32s() {
			if len(buf)+4 > chunkBytes {
				if err := flush(); err != nil {
					return err
				}
			}
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
	case device.Float64:
		for _, v := range t.Float64s() {
			if len(buf)+8 > chunkBytes {
				if err := flush(); err != nil {
					return err
				}
			}
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
		}
	case device.Int64:
		for _, v := range t.Int64s() {
			if len(buf)+8 > chunkBytes {
				if err := flush(); err != nil {
					return err
				}
			}
			buf = binary.LittleEndian.AppendUint64(buf, uint64(v))
		}
	}
	return flush()
}

// Load reads the safetensors file at path and returns its tensors, on the
// CPU, and its metadata (an empty map when the file has none).
//
// Load checks the whole header before it allocates any tensor: the header
// length against the file size, the JSON (no duplicate keys), every dtype
// (F32, F64 and I64 are supported), that each shape's byte size equals its
// data_offsets span, and that the tensors tile the data section exactly,
// with no gap, overlap or trailing byte. Errors begin with path; those about
// the file's contents match ErrFormat.
//
// path must be a regular file (symbolic links are followed): a directory,
// a named pipe or a device is refused before it is opened, so that a named
// pipe cannot block Load.
func Load(path string) (map[string]*tensor.Tensor, map[string]string, error) {
	f, st, err := filekind.OpenRegular(path)
	var nr *filekind.NotRegularError
	switch {
	case errors.As(err, &nr) && nr.Replaced:
		return nil, nil, fmt.Errorf("%s: not a regular file: it was replaced while it was being opened", path)
	case errors.As(err, &nr):
		return nil, nil, fmt.Errorf("%s: not a regular file: it is %s", path, filekind.Of(nr.Mode))
	case err != nil:
		return nil, nil, pathErr(path, err) // "PATH: open: no such file or directory"
	}
	defer f.Close()
	return decode(path, f, st.Size())
}

// Decode is Load for a file already read into memory (received from
// another rank, say): name is the file's path, used in errors.
func Decode(name string, b []byte) (map[string]*tensor.Tensor, map[string]string, error) {
	return decode(name, bytes.NewReader(b), int64(len(b)))
}

// decode reads a safetensors file of size bytes from r; path names it in
// errors.
func decode(path string, r io.Reader, size int64) (map[string]*tensor.Tensor, map[string]string, error) {
	if size < 8 {
		return nil, nil, formatErr(path, "file is %d bytes, too short for the 8-byte header length", size)
	}
	br := bufio.NewReaderSize(r, int(min(size, 1<<20)))
	var lenBuf [8]byte
	if _, err := io.ReadFull(br, lenBuf[:]); err != nil {
		return nil, nil, readErr(path, "the header length", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > uint64(size-8) {
		return nil, nil, formatErr(path, "header length %d exceeds the %d bytes that follow it in the file", n, size-8)
	}
	if n > maxHeaderLen {
		return nil, nil, formatErr(path, "header length %d exceeds the limit of %d bytes", n, maxHeaderLen)
	}
	if n == 0 {
		return nil, nil, formatErr(path, "header length is 0, expected a JSON object")
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(br, header); err != nil {
		return nil, nil, readErr(path, "the header", err)
	}
	entries, meta, err := parseHeader(path, header, size-8-int64(n))
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]*tensor.Tensor, len(entries))
	for _, e := range entries { // in offset order, so the reads are sequential
		data, err := readData(br, e.dtype, e.n)
		if err != nil {
			return nil, nil, readErr(path, fmt.Sprintf("tensor %q", e.name), err)
		}
		t, err := tensor.FromSlice(tensor.CPU(), data, e.shape...)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: tensor %q: %w", path, e.name, err)
		}
		out[e.name] = t
	}
	return out, meta, nil
}

// pathErr rewrites an *fs.PathError ("open PATH: reason") as "PATH: open:
// reason" so that every error from Load starts with the path; errors.Is
// still sees the cause (fs.ErrNotExist, fs.ErrPermission).
func pathErr(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %s: %w", path, pe.Op, pe.Err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// readErr reports a failed read; a short read means the file shrank after
// its size was taken.
func readErr(path, what string, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%s: reading %s: %w", path, what, err)
}

// readData reads n little-endian elements of type dt.
func readData(r io.Reader, dt device.DType, n int) (any, error) {
	switch dt {
	case device.Float32:
		out := make([]float32, n)
		err := readChunks(r, 4, n, func(i int, b []byte) { out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b)) })
		return out, err
	case device.Float64:
		out := make([]float64, n)
		err := readChunks(r, 8, n, func(i int, b []byte) { out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b)) })
		return out, err
	case device.Int64:
		out := make([]int64, n)
		err := readChunks(r, 8, n, func(i int, b []byte) { out[i] = int64(binary.LittleEndian.Uint64(b)) })
		return out, err
	}
	return nil, fmt.Errorf("unsupported dtype %v", dt) // parseDType admits no other
}

// readChunks reads n elements of size bytes through a bounded buffer,
// calling set for each.
func readChunks(r io.Reader, size, n int, set func(i int, b []byte)) error {
	buf := make([]byte, min(n*size, chunkBytes))
	for i := 0; i < n; {
		k := min(n-i, len(buf)/size)
		if _, err := io.ReadFull(r, buf[:k*size]); err != nil {
			return err
		}
		for j := range k {
			set(i+j, buf[j*size:])
		}
		i += k
	}
	return nil
}

// LoadInto reads the safetensors file at path into the tensors of dst, in
// place, and returns the file's metadata. It is how training resumes: dst
// holds the live parameters and optimizer state, on any device.
//
// The file must hold exactly the tensors named in dst, each with the same
// shape and dtype. LoadInto checks them all before it copies anything, so
// on a mismatch dst is unchanged and the error (matching ErrMismatch) lists
// every offending name with the expected and the found shape or dtype, and
// the tensors of the file that dst does not name (the first few of them
// and their number): a file with a tensor the destination lacks was written
// for another model. To restore part of a file, Load it and copy the
// tensors wanted.
func LoadInto(path string, dst map[string]*tensor.Tensor) (map[string]string, error) {
	src, meta, err := Load(path)
	if err != nil {
		return nil, err
	}
	return meta, copyAll(path, dst, src)
}

// DecodeInto is LoadInto for a file already read into memory: name is
// the file's path, used in errors.
func DecodeInto(name string, b []byte, dst map[string]*tensor.Tensor) (map[string]string, error) {
	src, meta, err := Decode(name, b)
	if err != nil {
		return nil, err
	}
	return meta, copyAll(name, dst, src)
}

// maxExtraNames is the number of the file's extra tensors that a mismatch
// error names.
const maxExtraNames = 5

// copyAll checks that src has every tensor of dst with its shape and
// dtype and no other tensor, then copies them; path names the file in
// errors.
func copyAll(path string, dst, src map[string]*tensor.Tensor) error {
	names := make([]string, 0, len(dst))
	for name := range dst {
		names = append(names, name)
	}
	sort.Strings(names)
	var problems []string
	for _, name := range names {
		d, s := dst[name], src[name]
		switch {
		case d == nil:
			problems = append(problems, fmt.Sprintf("tensor %q: destination tensor is nil", name))
		case s == nil:
			problems = append(problems, fmt.Sprintf("tensor %q: missing from the file (expected %v %v)", name, d.DType(), d.Shape()))
		case s.DType() != d.DType():
			problems = append(problems, fmt.Sprintf("tensor %q: dtype %v expected, file has %v", name, d.DType(), s.DType()))
		case !slices.Equal(s.Shape(), d.Shape()):
			problems = append(problems, fmt.Sprintf("tensor %q: shape %v expected, file has %v", name, d.Shape(), s.Shape()))
		}
	}
	var extra []string
	for name := range src {
		if _, ok := dst[name]; !ok {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	var parts []string
	if len(problems) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d tensors do not match: %s", len(problems), len(dst), strings.Join(problems, "; ")))
	}
	if len(extra) > 0 {
		parts = append(parts, extraTensors(extra, len(dst)))
	}
	if len(parts) > 0 {
		return &kindError{msg: path + ": " + strings.Join(parts, "; "), kind: ErrMismatch}
	}
	for _, name := range names {
		if err := copyInto(dst[name], src[name]); err != nil {
			return fmt.Errorf("%s: tensor %q: %w", path, name, err)
		}
	}
	return nil
}

// extraTensors describes the tensors of a file that are not among the n
// destination tensors (names sorted), naming the first maxExtraNames.
func extraTensors(names []string, n int) string {
	quoted := make([]string, 0, maxExtraNames)
	for _, name := range names[:min(len(names), maxExtraNames)] {
		quoted = append(quoted, fmt.Sprintf("%q", name))
	}
	list := strings.Join(quoted, ", ")
	if len(names) > maxExtraNames {
		list += fmt.Sprintf(" and %d more", len(names)-maxExtraNames)
	}
	if len(names) == 1 {
		return fmt.Sprintf("the file holds tensor %s, which is not among the %d destination tensors", list, n)
	}
	return fmt.Sprintf("the file holds %d tensors that are not among the %d destination tensors: %s", len(names), n, list)
}

// copyInto copies the CPU tensor src into dst, on dst's device. A panic
// from the device (an allocation or transfer failure) becomes an error.
func copyInto(dst, src *tensor.Tensor) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("copying to %s: %v", dst.Device().Name(), r)
		}
	}()
	dst.CopyFrom(src.To(dst.Device()))
	return nil
}
