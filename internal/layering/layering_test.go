package layering

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/hora-dl/hora"

// allowedImports lists, for each package of the module, the module's
// packages it may import (test files excluded). A package missing from the
// table fails the test, so every new package states its place.
var allowedImports = map[string][]string{
	"device":                         {},
	"device/cpu":                     {"device", "device/cpu/internal/blas", "device/cpu/internal/gemm", "device/cpu/internal/vec", "device/cpu/internal/winograd", "device/cpu/internal/direct", "device/cpu/internal/maxpool", "device/cpu/internal/norm", "device/cpu/internal/gemmchoice", "device/cpu/internal/x86", "internal/diskcache", "internal/hostcpu"},
	"device/cpu/internal/gemmchoice": {"internal/diskcache"},
	"device/cpu/internal/direct":     {},
	"device/cpu/internal/maxpool":    {},
	"device/cpu/internal/norm":       {},
	"device/cpu/internal/winograd":   {},
	"device/cpu/internal/blas":       {"device/cpu/internal/x86"},
	"device/cpu/internal/gemm":       {"device/cpu/internal/vec", "device/cpu/internal/x86"},
	"device/cpu/internal/vec":        {},
	"device/cpu/internal/x86":        {},
	"device/devicetest":              {"device"},
	"device/cuda":                    {"device", "internal/diskcache"},
	"device/cuda/cudaemu":            {"internal/diskcache"},
	"dist/nccl":                      {"device", "device/cpu", "device/cuda", "dist", "dist/transport"},
	"dist/nccl/internal/fakenccl":    {},
	"tensor":                         {"device", "device/cpu"},
	"autograd":                       {"device", "device/cpu", "tensor"},
	"layers":                         {"device", "device/cpu", "tensor", "autograd"},
	"optim":                          {"device", "device/cpu", "tensor", "autograd"},
	"data":                           {"internal/filekind"},
	"configs":                        {},
	"models":                         {"device", "device/cpu", "tensor", "autograd", "layers"},
	"checkpoint":                     {"device", "device/cpu", "tensor", "internal/filekind"},
	"internal/layering":              {},
	"internal/golden":                {"tensor"},
	"internal/curves":                {},
	"internal/strictyaml":            {"internal/filekind"},
	"dist":                           {"device", "device/cpu", "tensor", "autograd", "optim", "dist/internal/check"},
	"dist/internal/check":            {"device"},
	"dist/transport":                 {"device", "device/cpu", "dist", "dist/internal/check"},
	"dist/local":                     {"device", "device/cpu", "dist", "dist/transport"},
	"dist/liveness":                  {"device", "dist"},
	"dist/mpi":                       {"device", "device/cpu", "dist", "dist/shm", "dist/transport"},
	"dist/disttest":                  {"device", "device/cpu", "dist", "tensor", "autograd", "layers", "optim", "models"},
	"cmd/train":                      {"train"},
	"examples/custommodel":           {"autograd", "layers", "train"},
	"train":                          {"*"},
	"train/internal/genconfigref":    {"internal/strictyaml", "train"},
	"bench/dist":                     {"device", "device/cpu", "tensor", "autograd", "layers", "optim", "models", "dist", "dist/mpi"},
	"dist/shm":                       {"device", "device/cpu", "dist", "dist/transport", "internal/hostcpu"},
	"internal/hostcpu":               {},
	"internal/peakrss":               {},
	"internal/diskcache":             {},
	"internal/fuzzbound":             {},
	"internal/filekind":              {},
	"internal/interop":               {"device", "tensor"},
	"onnx":                           {"device", "device/cpu", "tensor", "autograd", "layers", "onnx/onnxpb", "internal/filekind"},
	"onnx/onnxpb":                    {},
	"onnx/onnxtest":                  {"tensor", "autograd", "onnx"},
	"cmd/onnxcheck":                  {"device", "device/cpu", "tensor", "autograd", "layers", "onnx", "onnx/onnxpb", "onnx/onnxtest"},
	"bench/onnx":                     {"device", "device/cpu", "tensor", "autograd", "layers", "onnx", "onnx/onnxpb", "bench/internal/roundtrip", "internal/hostcpu"},
	"examples/onnxrun":               {"device", "device/cpu", "tensor", "autograd", "layers", "optim", "onnx", "onnx/onnxpb"},
	"bench/internal/benchjob":        {"device", "tensor", "autograd", "layers", "data", "configs", "train"},
	"bench/internal/roundtrip":       {"device/cpu"},
	"bench/hora":                     {"device", "device/cpu", "tensor", "autograd", "layers", "optim", "data", "models", "bench/internal/benchjob", "bench/internal/roundtrip", "internal/peakrss", "internal/hostcpu"},
	"bench/gpu":                      {"device", "device/cpu", "device/cuda", "tensor", "layers", "models", "onnx", "train", "bench/internal/benchjob"},
	"bench/loader":                   {"data"},
	"scripts/fmnist-png":             {"data"},
	"scripts/mnist-digits":           {},
	"scripts/shapes":                 {},
	"scripts/redteam":                {},
}

func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		allowed, ok := allowedImports[pkg]
		if !ok {
			t.Errorf("package %s is not in allowedImports: add it with the packages it may import", pkg)
			continue
		}
		if len(allowed) == 1 && allowed[0] == "*" {
			continue
		}
		var bad []string
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(imp, module+"/")
			if !contains(allowed, dep) {
				bad = append(bad, dep)
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			t.Errorf("package %s imports %v; it may import only %v", pkg, bad, allowed)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
