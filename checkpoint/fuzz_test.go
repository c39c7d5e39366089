package checkpoint

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/tensor"
)

// FuzzLoad feeds arbitrary bytes to the loader: it must never panic, every
// failure must be an ErrFormat error naming the file, and whatever loads
// must survive a Save/Load round trip unchanged.
//
//	go test ./checkpoint -run '^$' -fuzz FuzzLoad -fuzztime 30s
func FuzzLoad(f *testing.F) {
	// Seeds: files written by Save, files laid out by other writers, and a
	// few broken ones.
	dir := f.TempDir()
	for i, c := range []struct {
		ts   map[string]*tensor.Tensor
		meta map[string]string
	}{
		{map[string]*tensor.Tensor{"a": tensor.FromFloat32([]float32{1, 2}, 2), "b": tensor.FromInt64([]int64{-2})}, map[string]string{"k": "v"}},
		{map[string]*tensor.Tensor{"w": tensor.FromFloat64([]float64{1, 2, 3, 4}, 2, 2), "e": tensor.FromFloat32(nil, 0)}, nil},
		{nil, nil},
	} {
		path := filepath.Join(dir, "seed"+string(rune('0'+i)))
		require.NoError(f, Save(path, c.ts, c.meta))
		b, err := os.ReadFile(path)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add(file(`{"z":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2,1],"data_offsets":[8,16]}}`, make([]byte, 16)))
	f.Add(file(`{"__metadata__":null,"e":{"dtype":"I64","shape":[0,3],"data_offsets":[0,0]}}`, nil))
	f.Add(file(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(file(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, b []byte) {
		const name = "fuzz.safetensors"
		ts, meta, err := decode(name, bytes.NewReader(b), int64(len(b)))
		if err != nil {
			require.ErrorIs(t, err, ErrFormat)
			require.Contains(t, err.Error(), name+": ")
			return
		}
		path := filepath.Join(t.TempDir(), "round.safetensors")
		require.NoError(t, Save(path, ts, meta))
		ts2, meta2, err := Load(path)
		require.NoError(t, err)
		require.Equal(t, meta, meta2)
		require.Len(t, ts2, len(ts))
		for k, v := range ts {
			assertSameTensor(t, k, v, ts2[k])
		}
	})
}
