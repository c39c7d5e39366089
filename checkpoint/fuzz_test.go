package checkpoint

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/internal/fuzzbound"
	"github.com/hora-dl/hora/tensor"
)

// FuzzLoad feeds arbitrary bytes to the loader: it must never panic, every
// failure must be an ErrFormat error naming the file, and whatever loads
// must survive a Save/Load round trip unchanged. Each input must take
// less than fuzzbound.PerInput.
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
		fuzzbound.Run(t, fuzzbound.PerInput, func() {
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
	})
}

// FuzzDecodeInto feeds arbitrary bytes to DecodeInto with a fixed
// destination: it must never panic, every failure must be an ErrFormat or
// ErrMismatch error naming the file and leave the destination unchanged,
// and a success means that the file held exactly the destination's
// tensors, now copied. Each input must take less than fuzzbound.PerInput.
//
//	go test ./checkpoint -run '^$' -fuzz FuzzDecodeInto -fuzztime 30s
func FuzzDecodeInto(f *testing.F) {
	good := map[string]*tensor.Tensor{
		"w": tensor.FromFloat32([]float32{1, 2, 3, 4}, 2, 2),
		"n": tensor.FromInt64([]int64{7}),
	}
	dir := f.TempDir()
	for i, ts := range []map[string]*tensor.Tensor{
		good,
		{"w": good["w"]},
		{"w": good["w"], "n": good["n"], "extra": tensor.FromFloat64([]float64{1}, 1)},
		{"w": tensor.FromFloat32([]float32{1, 2}, 2), "n": good["n"]},
	} {
		path := filepath.Join(dir, "seed"+string(rune('0'+i)))
		require.NoError(f, Save(path, ts, nil))
		b, err := os.ReadFile(path)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add(file(`{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"n":{"dtype":"I64","shape":[],"data_offsets":[16,24]}}`, make([]byte, 24)))

	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzbound.Run(t, fuzzbound.PerInput, func() {
			const name = "fuzz.safetensors"
			w := tensor.FromFloat32([]float32{-1, -1, -1, -1}, 2, 2)
			n := tensor.FromInt64([]int64{-1})
			_, err := DecodeInto(name, b, map[string]*tensor.Tensor{"w": w, "n": n})
			if err != nil {
				if !errors.Is(err, ErrFormat) {
					require.ErrorIs(t, err, ErrMismatch)
				}
				require.True(t, strings.HasPrefix(err.Error(), name+": "), "error %q names the file", err)
				require.Equal(t, []float32{-1, -1, -1, -1}, w.Float32s(), "a failure copies nothing")
				require.Equal(t, []int64{-1}, n.Int64s(), "a failure copies nothing")
				return
			}
			ts, _, err := Decode(name, b)
			require.NoError(t, err)
			require.Len(t, ts, 2, "only the destination's tensors")
			assertSameTensor(t, "w", ts["w"], w)
			assertSameTensor(t, "n", ts["n"], n)
		})
	})
}
