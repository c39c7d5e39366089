package onnx

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hora-dl/hora/internal/filekind"
)

// ErrBadFile is wrapped by every error about a file that cannot be used:
// a model or tensor file that cannot be opened or read, is not a regular
// file or is not an ONNX protobuf, and external data that cannot be used
// (outside the model's folder, not a regular file, of the wrong size).
// Its text does not appear in the errors; test for it with errors.Is.
var ErrBadFile = errors.New("onnx: unusable file")

// badFileError marks an error as being about an unusable file.
type badFileError struct{ error }

// Unwrap returns the error and ErrBadFile.
func (e badFileError) Unwrap() []error { return []error{e.error, ErrBadFile} }

// badFile returns err marked as wrapping ErrBadFile, its text unchanged.
func badFile(err error) error { return badFileError{err} }

// maxProtoBytes bounds the size of a model or tensor file: a protobuf
// message cannot exceed 2 GiB (larger models keep their weights in
// external data files).
const maxProtoBytes = 2 << 30

// readProtoFile reads the whole of path, a model or tensor file, after
// checking that it is a regular file of at most maxProtoBytes. Errors
// name the file and wrap ErrBadFile.
func readProtoFile(path string) ([]byte, error) {
	f, st, err := filekind.OpenRegular(path)
	if err != nil {
		return nil, badFile(err)
	}
	defer f.Close()
	size := st.Size()
	if size > maxProtoBytes {
		return nil, badFile(fmt.Errorf("%s has %d bytes, more than a protobuf file can hold (%d)", path, size, int64(maxProtoBytes)))
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, badFile(fmt.Errorf("reading %s: %w", path, err))
	}
	return data, nil
}

// externalPath returns the real path (symbolic links resolved) of the
// external data file location, which is relative to the folder of the
// model file src. location must not be absolute nor climb out with "..",
// and the real path must be inside the real path of the model's folder,
// or of the folder of the model file's own target when the model file is
// a link (as in a Hugging Face cache, where the model and its data are
// links to blobs in another folder).
func externalPath(src, location string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(location))
	if filepath.IsAbs(clean) || filepath.VolumeName(clean) != "" || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("external data location %q is outside the model's folder", location)
	}
	path := filepath.Join(filepath.Dir(src), clean)
	real, err := realPath(path)
	if err != nil {
		return "", fmt.Errorf("external data: %w", err)
	}
	folders := modelFolders(src)
	for _, folder := range folders {
		if inside(folder, real) {
			return real, nil
		}
	}
	return "", fmt.Errorf("external data location %q is %s, outside the model's folder %s", location, real, strings.Join(folders, " or "))
}

// modelFolders returns the real paths of the folder of the model file src
// and, when src is a link, of the folder of its target.
func modelFolders(src string) []string {
	var folders []string
	if dir, err := realPath(filepath.Dir(src)); err == nil {
		folders = append(folders, dir)
	}
	if target, err := realPath(src); err == nil && !slices.Contains(folders, filepath.Dir(target)) {
		folders = append(folders, filepath.Dir(target))
	}
	return folders
}

// realPath returns the absolute path of path with every symbolic link
// resolved.
func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// inside reports whether path is folder or below it (both clean and
// absolute).
func inside(folder, path string) bool {
	rel, err := filepath.Rel(folder, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
