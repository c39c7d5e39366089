package filekind

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, st, err := OpenRegular(file)
	if err != nil || st.Size() != 4 {
		t.Fatalf("OpenRegular(regular file) = %v, %v; want it open, 4 bytes", st, err)
	}
	f.Close()

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	for path, want := range map[string]string{
		dir:  dir + " is a directory, not a regular file",
		fifo: fifo + " is a named pipe (FIFO), not a regular file", // refused without blocking
	} {
		_, _, err := OpenRegular(path)
		var nr *NotRegularError
		if !errors.As(err, &nr) || err.Error() != want {
			t.Errorf("OpenRegular(%s) error = %v, want %q", path, err, want)
		}
	}
	_, _, err = OpenRegular(filepath.Join(dir, "missing"))
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "open" || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("OpenRegular(missing) error = %v, want the open's *fs.PathError", err)
	}
}
