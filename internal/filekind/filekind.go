package filekind

import "io/fs"

// Of names the kind of file mode describes, with its article: "a regular
// file", "a directory", "a symbolic link", "a named pipe (FIFO)", "a
// socket", "a character device", "a block device" or "a special file".
func Of(mode fs.FileMode) string {
	switch {
	case mode.IsRegular():
		return "a regular file"
	case mode&fs.ModeSymlink != 0:
		return "a symbolic link"
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}
