package filekind

import (
	"fmt"
	"io/fs"
	"testing"
)

func TestOf(t *testing.T) {
	for mode, want := range map[fs.FileMode]string{
		0o644:                             "a regular file",
		fs.ModeDir | 0o755:                "a directory",
		fs.ModeSymlink | 0o777:            "a symbolic link",
		fs.ModeNamedPipe | 0o644:          "a named pipe (FIFO)",
		fs.ModeSocket | 0o755:             "a socket",
		fs.ModeDevice | fs.ModeCharDevice: "a character device",
		fs.ModeDevice | 0o660:             "a block device",
		fs.ModeIrregular:                  "a special file",
	} {
		if got := Of(mode); got != want {
			t.Errorf("Of(%v) = %q, want %q", mode, got, want)
		}
	}
}

func ExampleOf() {
	fmt.Println("/tmp/x is " + Of(fs.ModeNamedPipe) + ", not a regular file")
	// Output: /tmp/x is a named pipe (FIFO), not a regular file
}
