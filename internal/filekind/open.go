package filekind

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError is the error of OpenRegular for a path that is not a
// regular file, or that was replaced while it was being opened.
type NotRegularError struct {
	Path     string
	Mode     fs.FileMode // what Path turned out to be
	Replaced bool        // Path was a regular file, then another file once open
}

// Error says what the path is, e.g. "/d/x is a named pipe (FIFO), not a
// regular file".
func (e *NotRegularError) Error() string {
	if e.Replaced {
		return fmt.Sprintf("%s was replaced while it was being opened", e.Path)
	}
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, Of(e.Mode))
}

// OpenRegular opens path for reading when it is a regular file (symbolic
// links followed) and returns it with its information. Anything else (a
// directory, a named pipe, a device, a socket) is refused with a
// *NotRegularError before it is opened, so that a named pipe cannot block
// the caller and a device is never opened. The file is then opened
// without blocking and checked again, so that one swapped in between is
// refused too. A missing or unreadable file gives the *fs.PathError of
// the open.
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	before, err := os.Stat(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, nil, &fs.PathError{Op: "open", Path: path, Err: pe.Err}
		}
		return nil, nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, nil, &NotRegularError{Path: path, Mode: before.Mode()}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() || !os.SameFile(before, st) {
		f.Close()
		return nil, nil, &NotRegularError{Path: path, Mode: st.Mode(), Replaced: true}
	}
	return f, st, nil
}
