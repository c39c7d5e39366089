package cuda

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLibraryDirsFindPipPackages lays out a virtual environment as
// PyTorch's pip packages do and checks that the libraries are found there.
func TestLibraryDirsFindPipPackages(t *testing.T) {
	venv := t.TempDir()
	lib := filepath.Join(venv, "lib", "python3.12", "site-packages", "nvidia", "cublas", "lib")
	nccl := filepath.Join(venv, "lib", "python3.12", "site-packages", "nvidia", "nccl", "lib")
	for _, f := range []string{filepath.Join(lib, "libcublas.so.12"), filepath.Join(nccl, "libnccl.so.2")} {
		require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
		require.NoError(t, os.WriteFile(f, nil, 0o644))
	}
	t.Setenv("VIRTUAL_ENV", venv)
	t.Setenv("HORA_CUDA_LIBS", "")
	dirs := LibraryDirs()
	assert.Contains(t, dirs, lib)
	p, _ := FindLibrary(cublasNames, dirs)
	assert.Equal(t, filepath.Join(lib, "libcublas.so.12"), p)
	p, _ = FindLibrary(NCCLNames, dirs)
	assert.Equal(t, filepath.Join(nccl, "libnccl.so.2"), p)
}

// TestHoraCudaLibsComesFirst checks that HORA_CUDA_LIBS is searched before
// everything else, whatever the sonames' order.
func TestHoraCudaLibsComesFirst(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(first, "libnvrtc.so.12"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(second, "libnvrtc.so.13"), nil, 0o644))
	t.Setenv("HORA_CUDA_LIBS", first)
	t.Setenv("LD_LIBRARY_PATH", second)
	dirs := LibraryDirs()
	require.GreaterOrEqual(t, len(dirs), 2)
	assert.Equal(t, []string{first, second}, dirs[:2])
	p, tried := FindLibrary(nvrtcNames, dirs)
	assert.Equal(t, filepath.Join(first, "libnvrtc.so.12"), p)
	assert.NotEmpty(t, tried)
}

func TestFindLibraryReportsWhatItTried(t *testing.T) {
	dir := t.TempDir()
	p, tried := FindLibrary([]string{"libnothere.so.1"}, []string{dir})
	assert.Empty(t, p)
	assert.Equal(t, []string{filepath.Join(dir, "libnothere.so.1")}, tried)
	_, _, err := OpenLibrary("a test library", []string{"libhora-does-not-exist.so.9"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a test library not found")
	assert.Contains(t, err.Error(), "HORA_CUDA_LIBS")
}
