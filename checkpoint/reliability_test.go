package checkpoint

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// TestLoadIntoRefusesExtraTensors: a file holding tensors that the
// destination does not have was written for another model; LoadInto and
// DecodeInto refuse it, naming the first few extra tensors and their
// number, and copy nothing.
func TestLoadIntoRefusesExtraTensors(t *testing.T) {
	t.Parallel()
	saved := map[string]*tensor.Tensor{"fc1.weight": tensor.FromFloat32([]float32{1, 2}, 2)}
	for i := range 7 {
		saved["fc9.extra"+string(rune('a'+i))] = tensor.FromFloat32([]float32{3}, 1)
	}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	require.NoError(t, Save(path, saved, nil))
	b, err := os.ReadFile(path)
	require.NoError(t, err)

	w := tensor.Full(tensor.CPU(), device.Float32, 5, 2)
	dst := map[string]*tensor.Tensor{"fc1.weight": w}
	want := `: the file holds 7 tensors that are not among the 1 destination tensors: "fc9.extraa", "fc9.extrab", "fc9.extrac", "fc9.extrad", "fc9.extrae" and 2 more`
	_, err = LoadInto(path, dst)
	require.ErrorIs(t, err, ErrMismatch)
	assert.Equal(t, path+want, err.Error())
	_, err = DecodeInto("mem.safetensors", b, dst)
	require.ErrorIs(t, err, ErrMismatch)
	assert.Equal(t, "mem.safetensors"+want, err.Error())
	assert.Equal(t, []float32{5, 5}, w.Float32s(), "nothing is copied")

	// Missing and extra tensors are reported together.
	_, err = LoadInto(path, map[string]*tensor.Tensor{"fc1.weight": w, "fc1.bias": tensor.New(tensor.CPU(), device.Float32, 2)})
	require.ErrorIs(t, err, ErrMismatch)
	assert.Contains(t, err.Error(), path+`: 1 of 2 tensors do not match: tensor "fc1.bias": missing from the file (expected float32 [2]); the file holds 7 tensors`)

	one := filepath.Join(t.TempDir(), "one.safetensors")
	require.NoError(t, Save(one, map[string]*tensor.Tensor{"a": tensor.FromFloat32([]float32{1}, 1), "b": tensor.FromFloat32([]float32{1}, 1)}, nil))
	_, err = LoadInto(one, map[string]*tensor.Tensor{"a": tensor.New(tensor.CPU(), device.Float32, 1)})
	require.ErrorIs(t, err, ErrMismatch)
	assert.Equal(t, one+`: the file holds tensor "b", which is not among the 1 destination tensors`, err.Error())
}

// TestLoadIntoNaN: a tensor full of NaN is a valid checkpoint tensor.
func TestLoadIntoNaN(t *testing.T) {
	t.Parallel()
	nan := tensor.FromFloat32([]float32{nanF32(), nanF32(), nanF32()}, 3)
	path := filepath.Join(t.TempDir(), "nan.safetensors")
	require.NoError(t, Save(path, map[string]*tensor.Tensor{"w": nan}, nil))
	w := tensor.New(tensor.CPU(), device.Float32, 3)
	_, err := LoadInto(path, map[string]*tensor.Tensor{"w": w})
	require.NoError(t, err)
	for _, v := range w.Float32s() {
		assert.True(t, v != v, "NaN loads as NaN")
	}
}

// nanF32 returns a float32 NaN.
func nanF32() float32 {
	var zero float32
	return zero / zero
}

// TestLoadHugeTensorTinyFile: a header that declares a huge tensor in a
// tiny file is refused from the header alone, before any tensor memory
// is allocated.
func TestLoadHugeTensorTinyFile(t *testing.T) {
	const elems = 1 << 40 // 4 TiB of float32
	huge := file(`{"w":{"dtype":"F32","shape":[1099511627776],"data_offsets":[0,4398046511104]}}`, make([]byte, 16))
	path := writeFile(t, huge)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := Load(path)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrFormat)
	assert.Contains(t, err.Error(), `tensor "w": data_offsets [0, 4398046511104] run past the end of the 16-byte data section`)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "Load allocated for the declared tensor (%d elements)", elems)
	_, _, err = Decode("mem", huge)
	require.ErrorIs(t, err, ErrFormat)
}

// TestSaveRefusesNonRegularTarget: Save renames its file over a regular
// file only, never over a symbolic link, a named pipe, a directory or a
// device.
func TestSaveRefusesNonRegularTarget(t *testing.T) {
	t.Parallel()
	ts := map[string]*tensor.Tensor{"w": tensor.FromFloat32([]float32{1}, 1)}
	for _, tc := range []struct {
		kind   string
		make   func(t *testing.T, path string)
		rootly bool
	}{
		{"symbolic link", func(t *testing.T, path string) {
			target := filepath.Join(filepath.Dir(path), "target")
			require.NoError(t, os.WriteFile(target, []byte("keep"), 0o644))
			require.NoError(t, os.Symlink(target, path))
		}, false},
		{"named pipe (FIFO)", func(t *testing.T, path string) { require.NoError(t, syscall.Mkfifo(path, 0o644)) }, false},
		{"directory", func(t *testing.T, path string) { require.NoError(t, os.Mkdir(path, 0o755)) }, false},
		{"character device", func(t *testing.T, path string) {
			require.NoError(t, syscall.Mknod(path, syscall.S_IFCHR|0o644, 1<<8|3)) // like /dev/null
		}, true},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			if tc.rootly && os.Geteuid() != 0 {
				t.Skip("creating a device node needs root")
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "model.safetensors")
			tc.make(t, path)
			before, err := os.Lstat(path)
			require.NoError(t, err)
			err = Save(path, ts, nil)
			require.Error(t, err)
			assert.Equal(t, path+": refusing to replace it: it is a "+tc.kind+", not a regular file", err.Error())
			after, err := os.Lstat(path)
			require.NoError(t, err)
			assert.Equal(t, before.Mode(), after.Mode(), "the target is left as it was")
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range entries {
				assert.False(t, strings.Contains(e.Name(), ".tmp"), "no temporary file is left: %s", e.Name())
			}
		})
	}
}

// TestLoadNamedPipeDoesNotBlock: Load refuses a named pipe without
// opening it (opening one blocks until a writer comes).
func TestLoadNamedPipeDoesNotBlock(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "model.safetensors")
	require.NoError(t, syscall.Mkfifo(path, 0o644))
	done := make(chan error, 1)
	go func() {
		_, _, err := Load(path)
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Equal(t, path+": not a regular file: it is a named pipe (FIFO)", err.Error())
	case <-time.After(5 * time.Second):
		// Unblock the reader so that the test ends.
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("Load blocked on a named pipe")
	}
}
