// Package filekind serves the code that reads or replaces regular files
// only: a FIFO or a device where a data file, a config or a checkpoint
// belongs is refused, and the message says what was found. Of names the
// kind of a file (a directory, a named pipe, a device); OpenRegular opens
// a regular file and refuses anything else before opening it.
package filekind
