package onnx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// externalSpec is mlpSpec with fc1.weight (float [3 2], 24 bytes) stored
// as external data with the given entries (key, value, key, value...); it
// returns the spec and that weight, which the caller may change further.
func externalSpec(t *testing.T, entries ...string) (graphSpec, *onnxpb.TensorProto) {
	spec := mlpSpec(t)
	w := proto.Clone(spec.inits[0]).(*onnxpb.TensorProto)
	w.RawData = nil
	w.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
	for i := 0; i+1 < len(entries); i += 2 {
		w.ExternalData = append(w.ExternalData, &onnxpb.StringStringEntryProto{Key: ptr(entries[i]), Value: ptr(entries[i+1])})
	}
	spec.inits[0] = w
	return spec, w
}

// mlpWeightBytes returns the raw data of mlpSpec's fc1.weight.
func mlpWeightBytes(t *testing.T) []byte {
	return mlpSpec(t).inits[0].GetRawData()
}

// writeModel writes spec as name in dir and returns its path.
func writeModel(t *testing.T, dir, name string, spec graphSpec) string {
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, spec.bytes(t), 0o644))
	return path
}

// checkMLP runs m on one input and compares with mlpReference.
func checkMLP(t *testing.T, m *Model) {
	outs, err := m.Run(autograd.Constant(tensor.FromFloat32([]float32{1, 2}, 1, 1, 2)))
	require.NoError(t, err)
	assert.InDeltaSlice(t, mlpReference([]float32{1, 2}), outs[0].Value.Float32s(), 1e-6)
}

func realDir(t *testing.T, dir string) string {
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	return real
}

func TestExternalDataOutsideFolder(t *testing.T) {
	outside := realDir(t, t.TempDir())
	secret := filepath.Join(outside, "secret.bin")
	require.NoError(t, os.WriteFile(secret, mlpWeightBytes(t), 0o644))
	dir := realDir(t, t.TempDir())
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "d")))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "link.bin")))

	for location, want := range map[string]string{
		// Through a linked folder, or a linked file: the real path counts.
		"d/secret.bin": fmt.Sprintf(`external data location "d/secret.bin" is %s, outside the model's folder %s`, secret, dir),
		"link.bin":     fmt.Sprintf(`external data location "link.bin" is %s, outside the model's folder %s`, secret, dir),
		// Up, or absolute: refused before looking.
		"../secret.bin": `external data location "../secret.bin" is outside the model's folder`,
		"a/../../x.bin": `external data location "a/../../x.bin" is outside the model's folder`,
		secret:          fmt.Sprintf(`external data location %q is outside the model's folder`, secret),
	} {
		spec, _ := externalSpec(t, "location", location)
		path := writeModel(t, dir, "model.onnx", spec)
		_, err := Load(path)
		require.Error(t, err, location)
		assert.ErrorContains(t, err, path+`: onnx: initializer: tensor "fc1.weight": `+want)
		assert.True(t, errors.Is(err, ErrBadFile), "%v wraps ErrBadFile", err)
	}
}

func TestExternalDataLinksInsideFolder(t *testing.T) {
	// A link to a folder inside the model's folder is fine.
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "w.bin"), mlpWeightBytes(t), 0o644))
	require.NoError(t, os.Symlink("sub", filepath.Join(dir, "alias")))
	spec, _ := externalSpec(t, "location", "alias/w.bin")
	m, err := Load(writeModel(t, dir, "model.onnx", spec))
	require.NoError(t, err)
	checkMLP(t, m)

	// A Hugging Face cache: the model and its data are links, from the
	// snapshot's folder, to blobs in another folder.
	root := t.TempDir()
	blobs, snap := filepath.Join(root, "blobs"), filepath.Join(root, "snapshots", "abc")
	require.NoError(t, os.MkdirAll(blobs, 0o755))
	require.NoError(t, os.MkdirAll(snap, 0o755))
	spec, _ = externalSpec(t, "location", "weights.bin")
	writeModel(t, blobs, "1111", spec)
	require.NoError(t, os.WriteFile(filepath.Join(blobs, "2222"), mlpWeightBytes(t), 0o644))
	require.NoError(t, os.Symlink("../../blobs/1111", filepath.Join(snap, "model.onnx")))
	require.NoError(t, os.Symlink("../../blobs/2222", filepath.Join(snap, "weights.bin")))
	m, err = Load(filepath.Join(snap, "model.onnx"))
	require.NoError(t, err)
	checkMLP(t, m)
}

func TestExternalDataSizeChecked(t *testing.T) {
	dir := realDir(t, t.TempDir())
	data := filepath.Join(dir, "weights.bin")
	require.NoError(t, os.WriteFile(data, append(make([]byte, 16), mlpWeightBytes(t)...), 0o644)) // 40 bytes
	for _, c := range []struct {
		entries []string
		dims    []int64
		want    string
	}{
		{[]string{"offset", "16", "length", "1000"}, nil, "external data file " + data + " has 40 bytes, fewer than offset 16 + length 1000"},
		{[]string{"offset", "100"}, nil, "external data file " + data + " has 40 bytes, fewer than offset 100 + length 0"},
		{[]string{"offset", "16", "length", "20"}, nil, "external data file " + data + ": length 20 bytes, want 24 for shape [3 2] of float"},
		{[]string{"length", "-5"}, nil, `external data length "-5" is not a valid byte count`},
		// A shape of a gigabyte, and a length to match, in a file of 40
		// bytes: an error before the gigabyte is allocated.
		{[]string{"length", "1073741824"}, []int64{1 << 28}, "external data file " + data + " has 40 bytes, fewer than offset 0 + length 1073741824"},
	} {
		spec, w := externalSpec(t, append([]string{"location", "weights.bin"}, c.entries...)...)
		if c.dims != nil {
			w.Dims = c.dims
		}
		path := writeModel(t, dir, "model.onnx", spec)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Load(path)
		runtime.ReadMemStats(&after)
		assert.ErrorContains(t, err, `tensor "fc1.weight": `+c.want)
		assert.True(t, errors.Is(err, ErrBadFile), "%v wraps ErrBadFile", err)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "%v: allocated before checking", c.entries)
	}
}

func TestLoadRefusesWhatIsNotAModelFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "folder.onnx"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty.onnx"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "junk.onnx"), []byte("\xff\xff\xff\xff not a protobuf"), 0o644))
	for name, want := range map[string]string{
		"folder.onnx":  "onnx: " + filepath.Join(dir, "folder.onnx") + " is a directory, not a regular file",
		"missing.onnx": "onnx: open " + filepath.Join(dir, "missing.onnx") + ": no such file or directory",
		"empty.onnx":   filepath.Join(dir, "empty.onnx") + ": onnx: empty file",
		"junk.onnx":    filepath.Join(dir, "junk.onnx") + ": onnx: not an ONNX model (protobuf:",
	} {
		_, err := Load(filepath.Join(dir, name))
		assert.ErrorContains(t, err, want)
		assert.True(t, errors.Is(err, ErrBadFile), "%v wraps ErrBadFile", err)
	}

	// External data that is a folder.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	spec, _ := externalSpec(t, "location", "sub")
	_, err := Load(writeModel(t, dir, "model.onnx", spec))
	assert.ErrorContains(t, err, `tensor "fc1.weight": external data: `+filepath.Join(realDir(t, dir), "sub")+" is a directory, not a regular file")
	assert.True(t, errors.Is(err, ErrBadFile), "%v wraps ErrBadFile", err)
}
