// Package golden reads the PyTorch fixtures that scripts/golden/gen.py
// writes (layers/testdata/golden, optim/testdata/golden) and compares Hora's
// results with them. It is a test helper shared by the packages' golden
// tests, in the manner of device/devicetest.
package golden

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/hora-dl/hora/tensor"
)

// Tensor is a tensor as gen.py writes it: its shape, "float32" or
// "int64", and its values in row-major order.
type Tensor struct {
	Shape []int     `json:"shape"`
	DType string    `json:"dtype"`
	Data  []float64 `json:"data"`
}

// Tensor returns the fixture tensor as a CPU tensor of its type.
func (g *Tensor) Tensor() (*tensor.Tensor, error) {
	switch g.DType {
	case "float32":
		f := make([]float32, len(g.Data))
		for i, v := range g.Data {
			f[i] = float32(v)
		}
		return tensor.FromSlice(tensor.CPU(), f, g.Shape...)
	case "int64":
		n := make([]int64, len(g.Data))
		for i, v := range g.Data {
			n[i] = int64(v)
		}
		return tensor.FromSlice(tensor.CPU(), n, g.Shape...)
	}
	return nil, fmt.Errorf("golden tensor of unknown dtype %q", g.DType)
}

// MustTensor is Tensor for tests: it fails t on error.
func (g *Tensor) MustTensor(t testing.TB) *tensor.Tensor {
	t.Helper()
	x, err := g.Tensor()
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// Read decodes the JSON fixture at path into v, failing t on error.
func Read(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// AssertClose reports an error on t unless got has want's shape and every
// element satisfies |got - want| <= atol + rtol·|want| (NaN never does).
// The message names what, the worst element and both values.
func AssertClose(t testing.TB, want *Tensor, got *tensor.Tensor, rtol, atol float64, what string) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: no tensor", what)
		return
	}
	if shape := got.Shape(); !slices.Equal(want.Shape, shape) && !(len(want.Shape) == 0 && len(shape) == 0) {
		t.Errorf("%s: shape %v, PyTorch %v", what, shape, want.Shape)
		return
	}
	g := got.Values()
	worst, at := 0.0, -1
	for i, w := range want.Data {
		d := math.Abs(g[i] - w)
		if d > atol+rtol*math.Abs(w) || math.IsNaN(d) {
			if d > worst || math.IsNaN(d) {
				worst, at = d, i
			}
		}
	}
	if at >= 0 {
		t.Errorf("%s: element %d = %.9g, PyTorch %.9g (difference %.3g, tolerance %.3g + %.3g·|x|)",
			what, at, g[at], want.Data[at], worst, atol, rtol)
	}
}
