package train

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hora-dl/hora/device/cpu"
)

// fakeBackend is a CPU device whose GEMM setup reports err.
type fakeBackend struct {
	*cpu.Device
	err error
}

func (f fakeBackend) BackendError() error { return f.err }

// TestBackendError checks which GEMM setup problems stop train: a machine
// without any BLAS library is fine; a library the user named that does not
// open, or a bad HORA_GEMM, is an error.
func TestBackendError(t *testing.T) {
	notFound := fmt.Errorf("%w (tried libopenblas.so.0)", cpu.ErrNoBLAS)
	assert.NoError(t, backendError(fakeBackend{cpu.Default(), nil}))
	assert.NoError(t, backendError(fakeBackend{cpu.Default(), notFound}))
	bad := errors.New("blas: cannot use HORA_BLAS=/nope.so: no such file")
	assert.Equal(t, bad, backendError(fakeBackend{cpu.Default(), bad}))
	gemm := errors.Join(notFound, errors.New("HORA_GEMM=fast: expected auto, blas or go"))
	assert.Equal(t, gemm, backendError(fakeBackend{cpu.Default(), gemm}))
}
