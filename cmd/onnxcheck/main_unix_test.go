//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A named pipe where model.onnx belongs: an error, not a read that waits
// forever for a writer.
func TestOnnxcheckModelIsAPipe(t *testing.T) {
	dir := writeCase(t, t.TempDir(), "test_pipe", "Add", []float32{1}, []float32{1}, []float32{2})
	path := filepath.Join(dir, "model.onnx")
	require.NoError(t, os.Remove(path))
	require.NoError(t, syscall.Mkfifo(path, 0o644))
	checkBadInput(t, []string{dir}, path+" is a named pipe (FIFO), not a regular file")
}

// A named pipe as the -known file: an error too.
func TestOnnxcheckKnownIsAPipe(t *testing.T) {
	root := t.TempDir()
	dir := writeCase(t, root, "test_add", "Add", []float32{1}, []float32{1}, []float32{2})
	pipe := filepath.Join(root, "known.txt")
	require.NoError(t, syscall.Mkfifo(pipe, 0o644))
	checkBadInput(t, []string{"-known", pipe, dir}, "-known "+pipe+": not a regular file")
}
