package checkpoint

import (
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// assertSameTensor checks dtype, shape and the exact bits of every element
// (so NaN payloads and -0 count).
func assertSameTensor(t *testing.T, name string, want, got *tensor.Tensor) {
	t.Helper()
	require.NotNil(t, got, "tensor %q missing", name)
	require.Equal(t, want.DType(), got.DType(), "tensor %q dtype", name)
	require.Equal(t, want.Shape(), got.Shape(), "tensor %q shape", name)
	switch want.DType() {
	case device.Float32:
		w, g := want.Float32s(), got.Float32s()
		require.Len(t, g, len(w))
		for i := range w {
			assert.Equal(t, math.Float32bits(w[i]), math.Float32bits(g[i]), "tensor %q element %d", name, i)
		}
	case device.Float64:
		w, g := want.Float64s(), got.Float64s()
		require.Len(t, g, len(w))
		for i := range w {
			assert.Equal(t, math.Float64bits(w[i]), math.Float64bits(g[i]), "tensor %q element %d", name, i)
		}
	default:
		assert.Equal(t, want.Int64s(), got.Int64s(), "tensor %q", name)
	}
}

// writeFile writes b to a new file in a temporary directory.
func writeFile(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.safetensors")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}

// file assembles a safetensors file from a header and a data section.
func file(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	mat := tensor.FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	tests := []struct {
		name     string
		tensors  map[string]*tensor.Tensor
		metadata map[string]string
	}{
		{"float32", map[string]*tensor.Tensor{"w": mat}, nil},
		{"float64", map[string]*tensor.Tensor{"w": tensor.FromFloat64([]float64{math.Pi, -0.0, math.Inf(-1), math.SmallestNonzeroFloat64}, 2, 2)}, nil},
		{"int64", map[string]*tensor.Tensor{"labels": tensor.FromInt64([]int64{0, -1, math.MaxInt64, math.MinInt64}, 4)}, nil},
		{"special floats", map[string]*tensor.Tensor{"x": tensor.FromFloat32([]float32{float32(math.NaN()), float32(math.Inf(1)), -0.0, math.MaxFloat32}, 4)}, nil},
		{"scalar", map[string]*tensor.Tensor{"step": tensor.Scalar(7), "lr": tensor.FromFloat64([]float64{0.1})}, nil},
		{"empty", map[string]*tensor.Tensor{"e": tensor.FromFloat32(nil, 0)}, nil},
		{"empty 2-D between others", map[string]*tensor.Tensor{
			"a": tensor.FromInt64([]int64{1}, 1),
			"b": tensor.New(tensor.CPU(), device.Float64, 3, 0),
			"c": tensor.FromFloat32([]float32{2}, 1, 1),
		}, nil},
		{"non-contiguous view", map[string]*tensor.Tensor{"wT": mat.T()}, nil},
		{"no tensors", map[string]*tensor.Tensor{}, map[string]string{"note": "only metadata"}},
		{"metadata", map[string]*tensor.Tensor{"w": mat}, map[string]string{
			"format": "pt", "epoch": "3", "": "empty key", "quote\"s": "<&>\n\t\\ é 漢字 \u2028",
		}},
		{"odd names", map[string]*tensor.Tensor{
			"model.layers.0.weight": mat, "optim.exp_avg \"w\"": mat, "ünïcödé/名前": tensor.FromInt64([]int64{5}),
		}, nil},
		{"mixed", map[string]*tensor.Tensor{
			"f32": tensor.FromFloat32([]float32{1.5, -2.5, 3}, 3, 1),
			"f64": tensor.FromFloat64([]float64{1e-300, 1e300}, 1, 2, 1),
			"i64": tensor.FromInt64([]int64{3, 1, 4, 1, 5}, 5),
		}, map[string]string{"step": "100"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "ckpt.safetensors")
			require.NoError(t, Save(path, tc.tensors, tc.metadata))

			raw, err := os.ReadFile(path)
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(raw), 8)
			assert.Zero(t, binary.LittleEndian.Uint64(raw)%8, "header length is padded to a multiple of 8")

			got, meta, err := Load(path)
			require.NoError(t, err)
			require.Len(t, got, len(tc.tensors))
			for name, want := range tc.tensors {
				assertSameTensor(t, name, want, got[name])
				assert.Equal(t, "cpu", got[name].Device().Name())
			}
			want := tc.metadata
			if want == nil {
				want = map[string]string{}
			}
			assert.Equal(t, want, meta)

			entries, err := os.ReadDir(filepath.Dir(path))
			require.NoError(t, err)
			assert.Len(t, entries, 1, "no temporary file is left behind")
		})
	}
}

func TestSaveTransposedIsRowMajor(t *testing.T) {
	t.Parallel()
	m := tensor.FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	path := filepath.Join(t.TempDir(), "t.safetensors")
	require.NoError(t, Save(path, map[string]*tensor.Tensor{"t": m.T()}, nil))
	got, _, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, []int{3, 2}, got["t"].Shape())
	assert.Equal(t, []float32{1, 4, 2, 5, 3, 6}, got["t"].Float32s())
}

// TestSaveExactBytes compares a tiny file with bytes computed by hand.
func TestSaveExactBytes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tiny.safetensors")
	require.NoError(t, Save(path, map[string]*tensor.Tensor{
		"b": tensor.FromInt64([]int64{-2}), // a scalar: shape []
		"a": tensor.FromFloat32([]float32{1, 2}, 2),
	}, map[string]string{"k": "v"}))
	got, err := os.ReadFile(path)
	require.NoError(t, err)

	// The JSON is 132 bytes: metadata first, then the tensors by name.
	// Padding with 4 spaces makes 136 = 0x88 bytes.
	json := `{"__metadata__":{"k":"v"},` +
		`"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},` +
		`"b":{"dtype":"I64","shape":[],"data_offsets":[8,16]}}`
	require.Len(t, json, 132)
	want := []byte{0x88, 0, 0, 0, 0, 0, 0, 0}
	want = append(want, json+"    "...)
	want = append(want,
		0x00, 0x00, 0x80, 0x3f, // float32 1.0 = 0x3f800000
		0x00, 0x00, 0x00, 0x40, // float32 2.0 = 0x40000000
		0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // int64 -2
	)
	assert.Equal(t, want, got)
	assert.Len(t, got, 160)
}

func TestSaveEmptyMap(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "empty.safetensors")
	require.NoError(t, Save(path, nil, nil))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, append([]byte{8, 0, 0, 0, 0, 0, 0, 0}, "{}      "...), got)
	ts, meta, err := Load(path)
	require.NoError(t, err)
	assert.Empty(t, ts)
	assert.Empty(t, meta)
}

// TestLoadReferenceLayouts loads files laid out the way other writers lay
// them out: the reference orders tensors by dtype (largest first) and then
// by name and pads with spaces; older writers do not pad; Python's json
// module escapes non-ASCII characters and may pretty-print.
func TestLoadReferenceLayouts(t *testing.T) {
	t.Parallel()
	f64 := binary.LittleEndian.AppendUint64(nil, math.Float64bits(0.5))
	f32 := binary.LittleEndian.AppendUint32(nil, math.Float32bits(-1.25))
	f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(3))
	data := append(append([]byte{}, f64...), f32...)
	wantTensors := map[string]*tensor.Tensor{
		"z.double": tensor.FromFloat64([]float64{0.5}, 1),
		"a.float":  tensor.FromFloat32([]float32{-1.25, 3}, 2, 1),
	}
	refHeader := `{"__metadata__":{"format":"pt"},"z.double":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},"a.float":{"dtype":"F32","shape":[2,1],"data_offsets":[8,16]}}`
	pad := strings.Repeat(" ", (8-len(refHeader)%8)%8)
	tests := []struct {
		name   string
		header string
	}{
		{"reference padded", refHeader + pad},
		{"no padding", refHeader},
		{"metadata last, fields reordered", `{"a.float":{"data_offsets":[8,16],"shape":[2,1],"dtype":"F32"},"z.double":{"shape":[1],"dtype":"F64","data_offsets":[0,8]},"__metadata__":{"format":"pt"}}`},
		{"pretty-printed", "{\n  \"__metadata__\": {\n    \"format\": \"pt\"\n  },\n  \"z.double\": {\n    \"dtype\": \"F64\",\n    \"shape\": [\n      1\n    ],\n    \"data_offsets\": [\n      0,\n      8\n    ]\n  },\n  \"a.float\": {\"dtype\": \"F32\", \"shape\": [2, 1], \"data_offsets\": [8, 16]}\n}\n\t\r "},
		{"escaped names", `{"__metadata__":{"\u0066ormat":"p\u0074"},"z.d\u006fuble":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},"a.float":{"dtype":"F32","shape":[2,1],"data_offsets":[8,16]}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, meta, err := Load(writeFile(t, file(tc.header, data)))
			require.NoError(t, err)
			require.Len(t, got, len(wantTensors))
			for name, want := range wantTensors {
				assertSameTensor(t, name, want, got[name])
			}
			assert.Equal(t, map[string]string{"format": "pt"}, meta)
		})
	}

	t.Run("null metadata", func(t *testing.T) {
		t.Parallel()
		got, meta, err := Load(writeFile(t, file(`{"__metadata__":null,"x":{"dtype":"I64","shape":[],"data_offsets":[0,8]}}`, make([]byte, 8))))
		require.NoError(t, err)
		assert.Equal(t, []int64{0}, got["x"].Int64s())
		assert.Empty(t, meta)
	})
	t.Run("several empty tensors share an offset", func(t *testing.T) {
		t.Parallel()
		got, _, err := Load(writeFile(t, file(`{"e1":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"e0":{"dtype":"F64","shape":[2,0,5],"data_offsets":[0,0]},"e2":{"dtype":"I64","shape":[0],"data_offsets":[4,4]}}`, make([]byte, 4))))
		require.NoError(t, err)
		require.Len(t, got, 4)
		assert.Equal(t, []int{2, 0, 5}, got["e0"].Shape())
	})
}

func TestLoadCorrupt(t *testing.T) {
	t.Parallel()
	f32x2 := `{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`
	huge := binary.LittleEndian.AppendUint64(nil, math.MaxUint64)
	tests := []struct {
		name string
		file []byte
		want []string // substrings of the error, after the path
	}{
		{"empty file", nil, []string{"file is 0 bytes, too short for the 8-byte header length"}},
		{"seven bytes", []byte{1, 2, 3, 4, 5, 6, 7}, []string{"file is 7 bytes"}},
		{"header longer than file", append(binary.LittleEndian.AppendUint64(nil, 1000), "{}"...),
			[]string{"header length 1000 exceeds the 2 bytes that follow it in the file"}},
		{"header length 2^64-1", huge, []string{"header length 18446744073709551615 exceeds the 0 bytes"}},
		{"zero header length", file("", nil), []string{"header length is 0, expected a JSON object"}},
		{"truncated JSON", file(`{"a":{"dtype":"F32"`, nil), []string{"header is not valid JSON", `tensor "a": `, "unexpected end"}},
		{"bad JSON", file(`{"a" 1}`, nil), []string{"header is not valid JSON", "invalid character", "at byte"}},
		{"trailing comma", file(`{"a":`+f32x2+`,}`, make([]byte, 8)), []string{"header is not valid JSON", "invalid character '}'"}},
		{"trailing comma in shape", file(`{"a":{"dtype":"F32","shape":[2,],"data_offsets":[0,8]}}`, make([]byte, 8)),
			[]string{"header is not valid JSON", `tensor "a": invalid character ']'`}},
		{"not an object", file(`[1, 2]`, nil), []string{"header must be a JSON object, found an array"}},
		{"invalid UTF-8", file("{\"\xff\":1}", nil), []string{"header is not valid UTF-8"}},
		{"data after JSON", file(`{} {}`, nil), []string{"header has data after its JSON object, at byte 2"}},
		{"NUL padding", file("{}\x00\x00", nil), []string{"header has data after its JSON object"}},
		{"unknown dtype", file(`{"a":{"dtype":"Q8","shape":[2],"data_offsets":[0,2]}}`, make([]byte, 2)),
			[]string{`tensor "a": unknown dtype "Q8" (supported: F32, F64, I64)`}},
		{"unsupported dtype", file(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)),
			[]string{`tensor "a": dtype "BF16" is not supported (supported: F32, F64, I64)`}},
		{"size mismatch", file(`{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, make([]byte, 8)),
			[]string{`tensor "w": shape [3] of F32 needs 12 bytes, but data_offsets [0, 8] span 8 bytes`}},
		{"size mismatch 2-D F64", file(`{"w":{"dtype":"F64","shape":[2,3],"data_offsets":[0,24]}}`, make([]byte, 24)),
			[]string{`tensor "w": shape [2 3] of F64 needs 48 bytes, but data_offsets [0, 24] span 24 bytes`}},
		{"offsets out of range", file(`{"a":`+f32x2+`}`, make([]byte, 4)),
			[]string{`tensor "a": data_offsets [0, 8] run past the end of the 4-byte data section`}},
		{"reversed offsets", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}`, make([]byte, 8)),
			[]string{`tensor "a": data_offsets [8, 0] are reversed (begin > end)`}},
		{"overlap", file(`{"a":`+f32x2+`,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)),
			[]string{`tensor "b": data_offsets [4, 12] overlap tensor "a" at [0, 8]`}},
		{"same offsets twice", file(`{"a":`+f32x2+`,"b":`+f32x2+`}`, make([]byte, 8)),
			[]string{`tensor "b": data_offsets [0, 8] overlap tensor "a" at [0, 8]`}},
		{"gap between tensors", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, make([]byte, 12)),
			[]string{`tensor "b": data begins at byte 8, expected 4 (a gap after tensor "a")`}},
		{"gap at start", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)),
			[]string{`tensor "a": data begins at byte 4, expected 0 (a gap at the start of the data section)`}},
		{"trailing data", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 8)),
			[]string{"data section is 8 bytes but the tensors cover 4 (4 bytes of trailing data)"}},
		{"trailing data without tensors", file(`{}`, []byte{0}), []string{"data section is 1 bytes but the tensors cover 0 (1 byte of trailing data)"}},
		{"duplicate tensor", file(`{"a":`+f32x2+`,"a":`+f32x2+`}`, make([]byte, 8)), []string{`duplicate tensor name "a" in header`}},
		{"duplicate metadata", file(`{"__metadata__":{},"__metadata__":{}}`, nil), []string{`duplicate key "__metadata__"`}},
		{"duplicate metadata key", file(`{"__metadata__":{"k":"1","k":"2"}}`, nil), []string{`__metadata__: duplicate key "k"`}},
		{"duplicate field", file(`{"a":{"dtype":"F32","dtype":"F64","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)),
			[]string{`tensor "a": duplicate key "dtype"`}},
		{"missing dtype", file(`{"a":{"shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)), []string{`tensor "a": missing "dtype"`}},
		{"missing shape", file(`{"a":{"dtype":"F32","data_offsets":[0,8]}}`, make([]byte, 8)), []string{`tensor "a": missing "shape"`}},
		{"missing offsets", file(`{"a":{"dtype":"F32","shape":[2]}}`, make([]byte, 8)), []string{`tensor "a": missing "data_offsets"`}},
		{"unknown field", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"stride":[1]}}`, make([]byte, 8)),
			[]string{`tensor "a": unknown field "stride"`}},
		{"three offsets", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}}`, make([]byte, 8)),
			[]string{`tensor "a": "data_offsets" must hold 2 integers [begin, end], found 3`}},
		{"negative dimension", file(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, make([]byte, 8)),
			[]string{`tensor "a": "shape"[0] = -2 is not an integer in [0, 9223372036854775807]`}},
		{"fractional dimension", file(`{"a":{"dtype":"F32","shape":[1,2.0],"data_offsets":[0,8]}}`, make([]byte, 8)),
			[]string{`tensor "a": "shape"[1] = 2.0 is not an integer`}},
		{"dimension past MaxInt", file(`{"a":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8]}}`, make([]byte, 8)),
			[]string{`"shape"[0] = 9223372036854775808 is not an integer`}},
		{"string dimension", file(`{"a":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}}`, make([]byte, 8)),
			[]string{`tensor "a": "shape"[0] must be a non-negative integer, found a string`}},
		{"shape not an array", file(`{"a":{"dtype":"F32","shape":null,"data_offsets":[0,8]}}`, make([]byte, 8)),
			[]string{`tensor "a": "shape" must be an array of non-negative integers, found null`}},
		{"negative offset", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}}`, make([]byte, 8)),
			[]string{`"data_offsets"[0] = -8 is not an integer`}},
		{"shape overflows", file(`{"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}}`, make([]byte, 8)),
			[]string{`tensor "a": shape [4294967296 4294967296 4294967296] of F32 is too large`}},
		{"empty shape overflows", file(`{"a":{"dtype":"F32","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}}`, nil),
			[]string{`tensor "a": shape [0 4294967296 4294967296] of F32 is too large`}},
		{"bytes overflow", file(`{"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}}`, make([]byte, 8)),
			[]string{`tensor "a": shape [4611686018427387904] of F64 is too large`}},
		{"dtype not a string", file(`{"a":{"dtype":32,"shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)),
			[]string{`tensor "a": "dtype" must be a string, found a number`}},
		{"info not an object", file(`{"a":[1,2]}`, nil), []string{`tensor "a": expected an object with dtype, shape and data_offsets, found an array`}},
		{"empty tensor name", file(`{"":`+f32x2+`}`, make([]byte, 8)), []string{"empty tensor name in header"}},
		{"metadata not an object", file(`{"__metadata__":["a"]}`, nil), []string{"__metadata__: must be an object of strings, found an array"}},
		{"metadata value not a string", file(`{"__metadata__":{"epoch":3}}`, nil), []string{`__metadata__: value of "epoch" must be a string, found a number`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, tc.file)
			var (
				got  map[string]*tensor.Tensor
				meta map[string]string
				err  error
			)
			require.NotPanics(t, func() { got, meta, err = Load(path) })
			require.Error(t, err)
			t.Log(err)
			assert.Nil(t, got)
			assert.Nil(t, meta)
			assert.ErrorIs(t, err, ErrFormat)
			assert.True(t, strings.HasPrefix(err.Error(), path+": "), "error %q starts with the path", err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestLoadIOErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.safetensors")
	_, _, err := Load(missing)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Equal(t, missing+": open: no such file or directory", err.Error())
	assert.NotErrorIs(t, err, ErrFormat)

	_, _, err = Load(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), dir+": not a regular file")

	// A reader that is shorter than the size it claims: the file shrank.
	b := file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8))
	_, _, err = decode("x.safetensors", strings.NewReader(string(b[:len(b)-3])), int64(len(b)))
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Contains(t, err.Error(), `x.safetensors: reading tensor "a"`)
}

func TestSaveRejects(t *testing.T) {
	t.Parallel()
	ok := tensor.FromFloat32([]float32{1}, 1)
	tests := []struct {
		name     string
		tensors  map[string]*tensor.Tensor
		metadata map[string]string
		want     string
	}{
		{"empty name", map[string]*tensor.Tensor{"": ok}, nil, "tensor name must not be empty"},
		{"reserved name", map[string]*tensor.Tensor{"__metadata__": ok}, nil, `tensor name "__metadata__" is reserved for metadata`},
		{"invalid UTF-8 name", map[string]*tensor.Tensor{"a\xff": ok}, nil, "is not valid UTF-8"},
		{"nil tensor", map[string]*tensor.Tensor{"a": ok, "b": nil}, nil, `tensor "b" is nil`},
		{"invalid UTF-8 metadata", map[string]*tensor.Tensor{"a": ok}, map[string]string{"k": "\xfe"}, `metadata "k"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "out.safetensors")
			err := Save(path, tc.tensors, tc.metadata)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), path+": "), "error %q starts with the path", err)
			assert.Contains(t, err.Error(), tc.want)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing is written")
		})
	}
}

// failingWriter accepts limit bytes and then fails.
type failingWriter struct {
	w     io.Writer
	limit int
}

var errInjected = errors.New("injected failure")

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.limit {
		n, _ := f.w.Write(p[:f.limit])
		f.limit = 0
		return n, errInjected
	}
	f.limit -= len(p)
	return f.w.Write(p)
}

func TestSaveAtomic(t *testing.T) {
	t.Parallel()
	old := map[string]*tensor.Tensor{"w": tensor.FromFloat32([]float32{1, 2}, 2)}
	big := map[string]*tensor.Tensor{
		"w": tensor.FromFloat32(make([]float32, 1<<19), 1<<19), // 2 MiB: more than one buffered write
		"v": tensor.FromInt64([]int64{4}),
	}
	tests := []struct {
		name  string
		hooks saveHooks
		want  string
	}{
		{"write fails at once", saveHooks{wrap: func(w io.Writer) io.Writer { return &failingWriter{w: w} }}, "injected failure"},
		{"write fails midway", saveHooks{wrap: func(w io.Writer) io.Writer { return &failingWriter{w: w, limit: 1 << 20} }}, "injected failure"},
		{"rename fails", saveHooks{rename: func(string, string) error { return errInjected }}, "replacing it with"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "ckpt.safetensors")
			require.NoError(t, Save(path, old, map[string]string{"v": "1"}))
			before, err := os.ReadFile(path)
			require.NoError(t, err)

			err = save(path, big, nil, tc.hooks)
			require.Error(t, err)
			assert.ErrorIs(t, err, errInjected)
			assert.True(t, strings.HasPrefix(err.Error(), path+": "), "error %q starts with the path", err)
			assert.Contains(t, err.Error(), tc.want)

			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, before, after, "the old file is untouched")
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "the temporary file is removed")
			assert.Equal(t, "ckpt.safetensors", entries[0].Name())
		})
	}

	t.Run("destination is a directory", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		path := filepath.Join(dir, "ckpt.safetensors")
		require.NoError(t, os.Mkdir(path, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(path, "keep"), []byte("x"), 0o644))
		err := Save(path, old, nil)
		require.Error(t, err)
		assert.Equal(t, path+": refusing to replace it: it is a directory, not a regular file", err.Error())
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Len(t, entries, 1, "the temporary file is removed")
	})

	t.Run("directory missing", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "no", "such", "dir", "ckpt.safetensors")
		err := Save(path, old, nil)
		assert.ErrorIs(t, err, fs.ErrNotExist)
		assert.Contains(t, err.Error(), path+": creating temporary file")
	})

	t.Run("read-only directory", func(t *testing.T) {
		t.Parallel()
		if os.Geteuid() == 0 {
			t.Skip("running as root, which ignores directory permissions; the injected failures above cover this path")
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "ckpt.safetensors")
		require.NoError(t, Save(path, old, nil))
		before, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.Chmod(dir, 0o555))
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
		err = Save(path, big, nil)
		assert.ErrorIs(t, err, fs.ErrPermission)
		after, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, before, after)
	})

	t.Run("replace keeps permissions", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "ckpt.safetensors")
		require.NoError(t, Save(path, old, nil))
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
		require.NoError(t, os.Chmod(path, 0o600))
		require.NoError(t, Save(path, big, nil))
		st, err = os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
		got, _, err := Load(path)
		require.NoError(t, err)
		assert.Len(t, got, 2, "the new contents replaced the old")
	})
}

// TestSaveRelativePath is not parallel: it changes the working directory.
func TestSaveRelativePath(t *testing.T) {
	w := tensor.FromFloat32([]float32{1, 2}, 2)
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, Save("rel.safetensors", map[string]*tensor.Tensor{"w": w}, nil))
	got, _, err := Load(filepath.Join(dir, "rel.safetensors"))
	require.NoError(t, err)
	assertSameTensor(t, "w", w, got["w"])
}

func TestLoadInto(t *testing.T) {
	t.Parallel()
	saved := map[string]*tensor.Tensor{
		"model.w":    tensor.FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 3),
		"model.b":    tensor.FromFloat64([]float64{7, 8}, 2),
		"optim.step": tensor.FromInt64([]int64{42}),
	}
	path := filepath.Join(t.TempDir(), "ckpt.safetensors")
	require.NoError(t, Save(path, saved, map[string]string{"epoch": "3"}))

	t.Run("restores in place", func(t *testing.T) {
		t.Parallel()
		w := tensor.New(tensor.CPU(), device.Float32, 2, 3)
		b := tensor.New(tensor.CPU(), device.Float64, 2)
		step := tensor.New(tensor.CPU(), device.Int64)
		dst := map[string]*tensor.Tensor{"model.w": w, "model.b": b, "optim.step": step}
		meta, err := LoadInto(path, dst)
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"epoch": "3"}, meta)
		assert.Same(t, w, dst["model.w"], "the map's tensors are not replaced")
		assert.Equal(t, []float32{1, 2, 3, 4, 5, 6}, w.Float32s())
		assert.Equal(t, []float64{7, 8}, b.Float64s())
		assert.Equal(t, []int64{42}, step.Int64s())
	})

	t.Run("extra tensors in the file are refused", func(t *testing.T) {
		t.Parallel()
		b := tensor.Full(tensor.CPU(), device.Float64, 9, 2)
		_, err := LoadInto(path, map[string]*tensor.Tensor{"model.b": b})
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrMismatch)
		assert.Equal(t, path+`: the file holds 2 tensors that are not among the 1 destination tensors: "model.w", "optim.step"`, err.Error())
		assert.Equal(t, []float64{9, 9}, b.Float64s(), "nothing is copied")
	})

	t.Run("into a view", func(t *testing.T) {
		t.Parallel()
		w := filepath.Join(t.TempDir(), "w.safetensors")
		require.NoError(t, Save(w, map[string]*tensor.Tensor{"model.w": saved["model.w"]}, nil))
		base := tensor.New(tensor.CPU(), device.Float32, 3, 2)
		_, err := LoadInto(w, map[string]*tensor.Tensor{"model.w": base.T()})
		require.NoError(t, err)
		assert.Equal(t, []float32{1, 4, 2, 5, 3, 6}, base.Float32s(), "the transposed view's buffer is written")
	})

	t.Run("mismatches leave dst unchanged", func(t *testing.T) {
		t.Parallel()
		w := tensor.Full(tensor.CPU(), device.Float32, 9, 2, 3)
		dst := map[string]*tensor.Tensor{
			"model.w":    w,                                           // fine, but not copied
			"model.b":    tensor.New(tensor.CPU(), device.Float64, 3), // wrong shape
			"optim.step": tensor.New(tensor.CPU(), device.Float32),    // wrong dtype
			"optim.lr":   tensor.New(tensor.CPU(), device.Float64),    // missing
			"model.x":    nil,                                         // nil
		}
		_, err := LoadInto(path, dst)
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrMismatch)
		msg := err.Error()
		assert.True(t, strings.HasPrefix(msg, path+": 4 of 5 tensors do not match: "), msg)
		assert.Contains(t, msg, `tensor "model.b": shape [3] expected, file has [2]`)
		assert.Contains(t, msg, `tensor "optim.step": dtype float32 expected, file has int64`)
		assert.Contains(t, msg, `tensor "optim.lr": missing from the file (expected float64 [])`)
		assert.Contains(t, msg, `tensor "model.x": destination tensor is nil`)
		assert.Equal(t, []float32{9, 9, 9, 9, 9, 9}, w.Float32s(), "nothing is copied on a mismatch")
	})

	t.Run("shape mismatch", func(t *testing.T) {
		t.Parallel()
		_, err := LoadInto(path, map[string]*tensor.Tensor{"model.w": tensor.New(tensor.CPU(), device.Float32, 3, 2)})
		require.Error(t, err)
		assert.Equal(t, path+`: 1 of 1 tensors do not match: tensor "model.w": shape [3 2] expected, file has [2 3]; `+
			`the file holds 2 tensors that are not among the 1 destination tensors: "model.b", "optim.step"`, err.Error())
	})

	t.Run("load errors pass through", func(t *testing.T) {
		t.Parallel()
		bad := writeFile(t, file(`{`, nil))
		_, err := LoadInto(bad, map[string]*tensor.Tensor{})
		assert.ErrorIs(t, err, ErrFormat)
	})
}
