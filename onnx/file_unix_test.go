//go:build unix

package onnx

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/internal/fuzzbound"
)

// Named pipes and devices where a model or its external data belongs:
// errors, not a read that blocks forever or never ends.
func TestLoadRefusesPipesAndDevices(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe")
	require.NoError(t, syscall.Mkfifo(pipe, 0o644))
	spec, _ := externalSpec(t, "location", "pipe")
	model := writeModel(t, dir, "model.onnx", spec)

	fuzzbound.Run(t, 5*time.Second, func() {
		_, err := Load(pipe)
		assert.ErrorContains(t, err, pipe+" is a named pipe (FIFO), not a regular file")
		assert.True(t, errors.Is(err, ErrBadFile), "%v wraps ErrBadFile", err)

		_, err = Load(model)
		assert.ErrorContains(t, err, `tensor "fc1.weight": external data: `+filepath.Join(realDir(t, dir), "pipe")+" is a named pipe (FIFO), not a regular file")
		assert.True(t, errors.Is(err, ErrBadFile), "%v wraps ErrBadFile", err)

		if _, err := os.Stat("/dev/zero"); err == nil {
			_, err = Load("/dev/zero")
			assert.ErrorContains(t, err, "/dev/zero is a character device, not a regular file")
			_, err = ReadTensor("/dev/zero")
			assert.ErrorContains(t, err, "/dev/zero is a character device, not a regular file")
		}
	})
}
