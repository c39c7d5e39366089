package interop

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Python returns Debian's /usr/bin/python3 when it can import every
// module named ("torch, torchvision"), or skips t saying what is missing.
func Python(t testing.TB, modules string) string {
	t.Helper()
	const python = "/usr/bin/python3"
	out, err := exec.Command(python, "-c", "import "+modules).CombinedOutput()
	if err != nil {
		t.Skipf("needs %s with %s (Debian: apt-get install python3-torch python3-torchvision python3-onnx): %v\n%s",
			python, modules, err, LastLines(out, 3))
	}
	return python
}

// LastLines returns the last n lines of b.
func LastLines(b []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, []byte("\n"))
}

// TorchvisionModels exports torchvision's resnet18 and mobilenet_v2 (at
// 3×64×64, random weights) with scripts/torchvision_export.py into the
// repository's build/onnx-torchvision, kept between runs, and returns the
// path of each file by name ("resnet18", "mobilenet_v2"). It skips t
// without PyTorch, or when the export takes over 3 minutes.
func TorchvisionModels(t testing.TB) map[string]string {
	t.Helper()
	root := RepoRoot()
	dir := filepath.Join(root, "build", "onnx-torchvision")
	files := map[string]string{}
	present := true
	for _, name := range []string{"resnet18", "mobilenet_v2"} {
		files[name] = filepath.Join(dir, name+".onnx")
		if _, err := os.Stat(files[name]); err != nil {
			present = false
		}
	}
	if present {
		return files // written by an earlier run (delete the folder to export again)
	}
	python := Python(t, "torch, torchvision, onnx")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, python, filepath.Join(root, "scripts", "torchvision_export.py"), dir)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=2")
	out, err := cmd.CombinedOutput()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Skipf("torchvision_export.py took over %v; skipped", time.Since(start).Round(time.Second))
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, LastLines(out, 20))
	}
	t.Logf("torchvision_export.py took %v", time.Since(start).Round(time.Millisecond))
	return files
}
