package data

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/hora-dl/hora/internal/filekind"
)

// openRegular opens the data file at path for reading when it is a
// regular file (or a link to one), refusing anything else before it is
// opened (filekind.OpenRegular), so that a FIFO cannot block the reader
// and /dev/zero cannot feed it an endless stream. expected says what the
// file should be ("an IDX file"), for the message. It returns the file
// and its size.
func openRegular(path, expected string) (*os.File, int64, error) {
	f, st, err := filekind.OpenRegular(path)
	var nr *filekind.NotRegularError
	if errors.As(err, &nr) && !nr.Replaced {
		return nil, 0, notRegularError(path, nr.Mode, expected)
	}
	if err != nil {
		return nil, 0, err // *fs.PathError or *NotRegularError: they name the path
	}
	return f, st.Size(), nil
}

// statRegular returns the file information of path if it is a regular file
// (or a link to one), and otherwise an error such as
//
//	/d/train-images-idx3-ubyte is a directory, expected an IDX file
func statRegular(path, expected string) (fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err // *fs.PathError: "stat PATH: no such file or directory"
	}
	if !st.Mode().IsRegular() {
		return nil, notRegularError(path, st.Mode(), expected)
	}
	return st, nil
}

// notRegularError is the error of statRegular for a file of the given mode.
func notRegularError(path string, mode fs.FileMode, expected string) error {
	if mode.IsDir() {
		return fmt.Errorf("%s is a directory, expected %s", path, expected)
	}
	return fmt.Errorf("%s is %s, not a regular file; expected %s", path, filekind.Of(mode), expected)
}

// readRegular reads the whole regular file at path (see openRegular) into
// a buffer of the size os.Stat gives, refusing a file of more than limit
// bytes before reading it, or one that grows past limit while it is read.
func readRegular(path, expected string, limit int64) ([]byte, error) {
	f, size, err := openRegular(path, expected)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the limit of %d", path, size, limit)
	}
	var buf bytes.Buffer
	buf.Grow(int(size) + bytes.MinRead) // room for the file and the read that finds its end
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("%s: more than the limit of %d bytes", path, limit)
	}
	return buf.Bytes(), nil
}
