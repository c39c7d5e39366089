package vec

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// testdata/pytorch.json holds PyTorch 1.13's outputs for inputs that both
// sides compute with goldenGen (see testdata/pytorch_gen.py, which wrote it).
type golden struct {
	Torch string
	N     int
	Steps int
	Optim []struct {
		Kind                             string
		LR, Momentum, Dampening, Eps, WD float64
		Nesterov                         bool
		Betas                            []float64
		After                            []string
		WeightDecay                      float64 `json:"weight_decay"`
	}
	Softmax []struct {
		Rows, Classes int
		Spread        float64
		Loss          float64
		Grad          string
	}
	Exp struct{ X, Y string }
}

// goldenGen is pytorch_gen.py's gen: values in [-1, 1), multiples of 2^-23.
func goldenGen(k int) float32 {
	u := uint32(k)*2654435761 + 12345
	return float32(int32(u)>>8) / (1 << 23)
}

func unhex(t *testing.T, s string) []float32 {
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func loadGolden(t *testing.T) *golden {
	b, err := os.ReadFile("testdata/pytorch.json")
	require.NoError(t, err)
	var g golden
	require.NoError(t, json.Unmarshal(b, &g))
	return &g
}

// TestPyTorchOptim runs the SGD and Adam(W) steps of the fixtures (203
// elements: full vectors and a tail) and requires PyTorch's parameters within
// 1e-6 relative after every step.
func TestPyTorchOptim(t *testing.T) {
	g := loadGolden(t)
	scales := []float32{1, 0.1, 0.01, 1e-3, 1e-4}
	forKernels(t, func(t *testing.T) {
		var worst float64
		for c, o := range g.Optim {
			p := make([]float32, g.N)
			for i := range p {
				p[i] = goldenGen(i + 1000003*c)
			}
			m, v := make([]float32, g.N), make([]float32, g.N)
			for s := 0; s < g.Steps; s++ {
				gr := make([]float32, g.N)
				for i := range gr {
					gr[i] = goldenGen(i+7919*(s+1)+104729*(c+1)) * scales[i%5]
				}
				switch o.Kind {
				case "sgd":
					SGDMomentum(p, gr, m, float32(o.LR), float32(o.Momentum), float32(o.Dampening), float32(o.WeightDecay), o.Nesterov, s == 0)
				default:
					Adam(p, gr, m, v, float32(o.LR), float32(o.Betas[0]), float32(o.Betas[1]), float32(o.Eps), float32(o.WeightDecay), s+1, o.Kind == "adamw")
				}
				want := unhex(t, o.After[s])
				for i := range want {
					rel := math.Abs(float64(p[i])-float64(want[i])) / math.Abs(float64(want[i]))
					worst = math.Max(worst, rel)
					require.LessOrEqual(t, rel, 1e-6, "case %d %+v step %d element %d: got %v, PyTorch %v", c, o, s, i, p[i], want[i])
				}
			}
		}
		t.Logf("largest relative difference from PyTorch 1.13: %.3g", worst)
	})
}

func TestPyTorchSoftmaxCrossEntropy(t *testing.T) {
	g := loadGolden(t)
	forKernels(t, func(t *testing.T) {
		for c, s := range g.Softmax {
			n := s.Rows * s.Classes
			x := make([]float32, n)
			for i := range x {
				x[i] = goldenGen(i+31337*(c+1)) * float32(s.Spread)
			}
			labels := make([]int64, s.Rows)
			for r := range labels {
				labels[r] = int64((r*7 + 3) % s.Classes)
			}
			grad := make([]float32, n)
			scale := 1 / float32(s.Rows)
			loss := SoftmaxCrossEntropy(x, s.Classes, labels, grad, scale)
			require.InDelta(t, s.Loss, loss, 2e-6*math.Max(1, math.Abs(s.Loss)), "case %+v", s)
			want := unhex(t, s.Grad)
			for i := range want {
				require.InDelta(t, want[i], grad[i], 2e-7*float64(scale), "case %d element %d", c, i)
			}
		}
	})
}

func TestPyTorchExp(t *testing.T) {
	g := loadGolden(t)
	x, want := unhex(t, g.Exp.X), unhex(t, g.Exp.Y)
	forKernels(t, func(t *testing.T) {
		got := make([]float32, len(x))
		Exp(got, x)
		var worst float64
		for i := range x {
			w, e := float64(want[i]), float64(got[i])
			switch {
			case math.IsNaN(w) || math.IsInf(w, 0):
				require.True(t, same(want[i], got[i]), "exp(%v) = %v, PyTorch %v", x[i], got[i], want[i])
			case w < 0x1p-126: // subnormal: within one step of 2^-149
				require.LessOrEqual(t, math.Abs(e-w), 0x1p-149, "exp(%v) = %v, PyTorch %v", x[i], got[i], want[i])
			default:
				rel := math.Abs(e-w) / w
				worst = math.Max(worst, rel)
				require.LessOrEqual(t, rel, 2.5e-7, "exp(%v) = %v, PyTorch %v", x[i], got[i], want[i])
			}
		}
		t.Logf("largest relative difference from PyTorch's exp: %.3g", worst)
	})
}
