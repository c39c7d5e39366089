//go:build unix

package data

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readers are the readers of data files, each reading the file at path.
var readers = []struct {
	name, expected string
	read           func(path string) error
}{
	{"ReadIDX", "an IDX file", func(p string) error { _, err := ReadIDX(p); return err }},
	{"SniffIDX", "an IDX or image file", func(p string) error { _, err := SniffIDX(p); return err }},
	{"DecodeImage", "an image file", func(p string) error { _, err := DecodeImage(p); return err }},
	{"ReadTable", "a CSV file", func(p string) error { _, err := ReadTable(p, TableConfig{Label: "0"}); return err }},
	{"LoadText", "a text file", func(p string) error { _, err := LoadText([]string{p}); return err }},
}

// TestRelFIFO checks that every reader refuses a named pipe at once
// instead of blocking until a writer opens it.
func TestRelFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for _, r := range readers {
		done := make(chan error, 1)
		go func() { done <- r.read(fifo) }()
		select {
		case err := <-done:
			assert.ErrorContains(t, err, fifo+" is a named pipe (FIFO), not a regular file; expected "+r.expected, r.name)
		case <-time.After(2 * time.Second):
			// Unblock the reader: opening the write end lets its open
			// return, and closing it gives an end of file.
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			<-done
			t.Errorf("%s blocked on a named pipe", r.name)
		}
	}
}

// TestRelDevZero checks that every reader refuses a device that never
// ends, instead of reading it until memory runs out.
func TestRelDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip(err)
	}
	for _, r := range readers {
		err := r.read("/dev/zero")
		assert.ErrorContains(t, err, "/dev/zero is a character device, not a regular file; expected "+r.expected, r.name)
	}
}
