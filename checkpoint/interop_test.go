package checkpoint

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// python returns the Python 3 interpreter, or skips the test.
func python(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Skip("python3 not found; the interop tests need it")
	return ""
}

// runPython runs script with args and returns its standard output.
func runPython(t *testing.T, py, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(py, append([]string{"-c", script}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "python failed:\n%s", stderr.String())
	return out
}

// interopTensors has every supported dtype, a scalar, an empty tensor and
// names that need JSON escapes.
func interopTensors() map[string]*tensor.Tensor {
	return map[string]*tensor.Tensor{
		"model.fc.weight": tensor.FromFloat32([]float32{1.5, -2.25, 3, 4e-8, 5e8, -0.0}, 2, 3),
		"model.fc.bias":   tensor.FromFloat64([]float64{math.Pi, -1e-300}, 2),
		"optim.step":      tensor.FromInt64([]int64{math.MinInt64 + 1}),
		"empty":           tensor.FromFloat32(nil, 0),
		"ünï \"q\" <&>":   tensor.FromInt64([]int64{7, 8, 9}, 3, 1),
	}
}

// summary is what the Python scripts print about a file: per tensor, the
// dtype, shape and elements (floats as Python's exact repr, ints as ints).
type summary struct {
	Tensors map[string]struct {
		DType string        `json:"dtype"`
		Shape []int         `json:"shape"`
		Data  []json.Number `json:"data"`
	} `json:"tensors"`
	Metadata map[string]string `json:"metadata"`
}

// checkSummary compares a Python summary with the tensors saved, bit for
// bit.
func checkSummary(t *testing.T, out []byte, want map[string]*tensor.Tensor, meta map[string]string) {
	t.Helper()
	var s summary
	require.NoError(t, json.Unmarshal(out, &s), "python output: %s", out)
	require.Len(t, s.Tensors, len(want))
	for name, w := range want {
		got, ok := s.Tensors[name]
		require.True(t, ok, "python did not see tensor %q", name)
		assert.Equal(t, dtypeName(w.DType()), got.DType, name)
		assert.Equal(t, append([]int{}, w.Shape()...), append([]int{}, got.Shape...), name)
		require.Len(t, got.Data, w.Len(), name)
		switch w.DType() {
		case device.Int64:
			for i, v := range w.Int64s() {
				assert.Equal(t, strconv.FormatInt(v, 10), got.Data[i].String(), "%s[%d]", name, i)
			}
		default:
			for i, v := range w.Values() { // float32 widens exactly
				g, err := got.Data[i].Float64()
				require.NoError(t, err)
				assert.Equal(t, math.Float64bits(v), math.Float64bits(g), "%s[%d]: %v vs %v", name, i, v, g)
			}
		}
	}
	assert.Equal(t, meta, s.Metadata)
}

// specReader is an independent reader of the format written from the
// public specification with Python's standard library only: it checks the
// layout as strictly as Load and prints a summary.
const specReader = `
import json, struct, sys
path = sys.argv[1]
raw = open(path, "rb").read()
(n,) = struct.unpack("<Q", raw[:8])
assert n % 8 == 0, "header not padded to 8 bytes: %d" % n
header_bytes = raw[8:8 + n]
assert header_bytes.startswith(b"{"), header_bytes[:10]
header = json.loads(header_bytes.decode("utf-8"))
data = raw[8 + n:]
meta = header.pop("__metadata__", None) or {}
fmt = {"F32": ("f", 4), "F64": ("d", 8), "I64": ("q", 8)}
names = list(header)
assert names == sorted(names), "tensors not in sorted order: %r" % names
out = {}
pos = 0
for name in names:
    info = header[name]
    code, size = fmt[info["dtype"]]
    begin, end = info["data_offsets"]
    count = 1
    for d in info["shape"]:
        count *= d
    assert begin == pos, (name, begin, pos)
    assert end - begin == count * size, (name, begin, end, count)
    vals = struct.unpack("<%d%s" % (count, code), data[begin:end])
    out[name] = {"dtype": info["dtype"], "shape": info["shape"], "data": [float(v) if code != "q" else int(v) for v in vals]}
    pos = end
assert pos == len(data), ("trailing data", pos, len(data))
print(json.dumps({"tensors": out, "metadata": meta}))
`

// referenceWriter writes a file the way the reference implementation lays
// it out (metadata first, tensors sorted by dtype size then name, space
// padding) but through Python's json module, which escapes non-ASCII text;
// argv[2] == "nopad" leaves the header unpadded, as old writers did.
const referenceWriter = `
import json, struct, sys
path, pad = sys.argv[1], sys.argv[2] == "pad"
tensors = [
    ("z.f64", "F64", [2], struct.pack("<2d", 0.5, -1e300)),
    ("i.i64", "I64", [], struct.pack("<q", -9007199254740993)),
    ("a.f32", "F32", [1, 2], struct.pack("<2f", 1.25, -3.0)),
    ("e.f32", "F32", [0, 4], b""),
    ("名前", "F32", [1], struct.pack("<f", 2.0)),
]
header = {"__metadata__": {"format": "pt", "note": "é"}}
data = b""
for name, dtype, shape, payload in tensors:
    header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
    data += payload
h = json.dumps(header, separators=(",", ":")).encode("utf-8")
if pad:
    h += b" " * ((8 - len(h) % 8) % 8)
open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
`

func TestInteropSpecReader(t *testing.T) {
	t.Parallel()
	py := python(t)
	path := filepath.Join(t.TempDir(), "go.safetensors")
	ts := interopTensors()
	meta := map[string]string{"epoch": "12", "ünï": "\"quoted\" \n <&>"}
	require.NoError(t, Save(path, ts, meta))
	checkSummary(t, runPython(t, py, specReader, path), ts, meta)
}

func TestInteropReferenceWriter(t *testing.T) {
	t.Parallel()
	py := python(t)
	for _, pad := range []string{"pad", "nopad"} {
		t.Run(pad, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "py.safetensors")
			runPython(t, py, referenceWriter, path, pad)
			if pad == "nopad" {
				raw, err := os.ReadFile(path)
				require.NoError(t, err)
				require.NotZero(t, len(raw)%8, "the unpadded variant really is unpadded")
			}
			got, meta, err := Load(path)
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"format": "pt", "note": "é"}, meta)
			want := map[string]*tensor.Tensor{
				"z.f64": tensor.FromFloat64([]float64{0.5, -1e300}, 2),
				"i.i64": tensor.FromInt64([]int64{-9007199254740993}),
				"a.f32": tensor.FromFloat32([]float32{1.25, -3}, 1, 2),
				"e.f32": tensor.FromFloat32(nil, 0, 4),
				"名前":    tensor.FromFloat32([]float32{2}, 1),
			}
			require.Len(t, got, len(want))
			for name, w := range want {
				assertSameTensor(t, name, w, got[name])
			}
		})
	}
}

// TestInteropSafetensors exchanges files with the Python safetensors
// package when it is installed.
func TestInteropSafetensors(t *testing.T) {
	t.Parallel()
	py := python(t)
	if err := exec.Command(py, "-c", "import numpy, safetensors.numpy").Run(); err != nil {
		t.Skip("python3 cannot import safetensors.numpy (Debian has no python3-safetensors package: " +
			"`apt-cache policy python3-safetensors` finds no candidate); " +
			"TestInteropSpecReader and TestInteropReferenceWriter cover the format with the standard library instead")
	}
	dir := t.TempDir()

	// Go writes, safetensors reads.
	goPath := filepath.Join(dir, "go.safetensors")
	ts := interopTensors()
	meta := map[string]string{"epoch": "12", "ünï": "\"quoted\" \n <&>"}
	require.NoError(t, Save(goPath, ts, meta))
	const read = `
import json, sys
from safetensors import safe_open
out = {}
with safe_open(sys.argv[1], framework="np") as f:
    meta = f.metadata() or {}
    for name in f.keys():
        a = f.get_tensor(name)
        dt = {"float32": "F32", "float64": "F64", "int64": "I64"}[str(a.dtype)]
        out[name] = {"dtype": dt, "shape": list(a.shape), "data": [int(v) if dt == "I64" else float(v) for v in a.reshape(-1)]}
print(json.dumps({"tensors": out, "metadata": meta}))
`
	checkSummary(t, runPython(t, py, read, goPath), ts, meta)

	// safetensors writes, Go reads.
	pyPath := filepath.Join(dir, "py.safetensors")
	const write = `
import sys, numpy as np
from safetensors.numpy import save_file
save_file({
    "w": np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
    "d": np.array([0.1, -2.0], dtype=np.float64),
    "n": np.array(-5, dtype=np.int64),
    "e": np.zeros((0, 2), dtype=np.float32),
}, sys.argv[1], metadata={"format": "np"})
`
	runPython(t, py, write, pyPath)
	got, gotMeta, err := Load(pyPath)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"format": "np"}, gotMeta)
	for name, w := range map[string]*tensor.Tensor{
		"w": tensor.FromFloat32([]float32{0, 0.25, 0.5, 0.75, 1, 1.25}, 2, 3),
		"d": tensor.FromFloat64([]float64{0.1, -2}, 2),
		"n": tensor.FromInt64([]int64{-5}),
		"e": tensor.FromFloat32(nil, 0, 2),
	} {
		assertSameTensor(t, name, w, got[name])
	}
}
