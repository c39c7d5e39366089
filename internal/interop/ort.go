package interop

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// RepoRoot returns the repository's root folder.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// ORTScript returns the path of scripts/ort/run.js, which runs ONNX
// models in onnxruntime (onnxruntime-node), or skips t when node or
// onnxruntime-node is missing.
func ORTScript(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("onnxruntime check skipped: node is not installed")
	}
	dir := filepath.Join(RepoRoot(), "scripts", "ort")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "onnxruntime-node")); err != nil {
		t.Skipf("onnxruntime check skipped: run `npm ci --ignore-scripts` in %s to install onnxruntime-node", dir)
	}
	return filepath.Join(dir, "run.js")
}

// ORTTensor is a tensor in run.js's JSON: its element type ("float32",
// "float64" or "int64"), shape and values.
type ORTTensor struct {
	Type string    `json:"type"`
	Dims []int     `json:"dims"`
	Data []float64 `json:"data"`
}

// ORTInput returns x in run.js's JSON.
func ORTInput(x *tensor.Tensor) ORTTensor {
	in := ORTTensor{Dims: x.Shape(), Data: x.Cast(device.Float64).Contiguous().Float64s()}
	switch x.DType() {
	case device.Float32:
		in.Type = "float32"
	case device.Float64:
		in.Type = "float64"
	default:
		in.Type = "int64"
	}
	return in
}

// ORTRequest is one model run in onnxruntime: the model file, its inputs
// by name and the intra-op threads (0: onnxruntime's default).
type ORTRequest struct {
	Model   string               `json:"model"`
	Inputs  map[string]ORTTensor `json:"inputs"`
	Threads int                  `json:"threads,omitempty"`
}

// RunORT runs the requests in one onnxruntime process (script is
// ORTScript's) and returns each run's outputs by name, as float64
// tensors, or the error onnxruntime gave for it.
func RunORT(t testing.TB, script string, runs []ORTRequest) ([]map[string]*tensor.Tensor, []string) {
	t.Helper()
	req, err := json.Marshal(map[string]any{"runs": runs})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script)
	cmd.Stdin = bytes.NewReader(req)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("onnxruntime: %v: %s", err, stderr.String())
	}
	var resp struct {
		Results []struct {
			Outputs map[string]ORTTensor `json:"outputs"`
			Error   string               `json:"error"`
		} `json:"results"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		t.Fatalf("onnxruntime's answer: %v", err)
	}
	if len(resp.Results) != len(runs) {
		t.Fatalf("onnxruntime answered %d runs, expected %d", len(resp.Results), len(runs))
	}
	outs, errs := make([]map[string]*tensor.Tensor, len(runs)), make([]string, len(runs))
	for i, r := range resp.Results {
		errs[i] = r.Error
		outs[i] = map[string]*tensor.Tensor{}
		for name, o := range r.Outputs {
			outs[i][name] = tensor.FromFloat64(o.Data, o.Dims...)
		}
	}
	return outs, errs
}
