package layers

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/internal/golden"
	"github.com/hora-dl/hora/tensor"
)

// goldenTensor is a tensor as scripts/golden/gen.py writes it.
type goldenTensor = golden.Tensor

// goldenFixture is one fixture of layers/testdata/golden.
type goldenFixture struct {
	Case         string                   `json:"case"`
	Layer        string                   `json:"layer"`
	Config       map[string]any           `json:"config"`
	Mode         string                   `json:"mode"`
	Params       map[string]*goldenTensor `json:"params"`
	Buffers      map[string]*goldenTensor `json:"buffers"`
	Inputs       []*goldenTensor          `json:"inputs"`
	Output       *goldenTensor            `json:"output"`
	GradOutput   *goldenTensor            `json:"grad_output"`
	GradInputs   []*goldenTensor          `json:"grad_inputs"`
	GradParams   map[string]*goldenTensor `json:"grad_params"`
	BuffersAfter map[string]*goldenTensor `json:"buffers_after"`
}

// config reads a fixture's torch kwargs and remembers which were read, so
// that an option the Go side does not understand fails the test instead of
// being ignored.
type config struct {
	t    *testing.T
	m    map[string]any
	used map[string]bool
}

func (c *config) get(key string) (any, bool) {
	v, ok := c.m[key]
	c.used[key] = true
	return v, ok
}

func (c *config) int(key string, def int) int {
	v, ok := c.get(key)
	if !ok {
		return def
	}
	f, isNum := v.(float64)
	require.True(c.t, isNum, "config %s = %v is not a number", key, v)
	return int(f)
}

// pair reads an int or a two-element list (kernel_size=3 or (2, 3)).
func (c *config) pair(key string, def int) (int, int) {
	v, ok := c.get(key)
	if !ok {
		return def, def
	}
	switch v := v.(type) {
	case float64:
		return int(v), int(v)
	case []any:
		require.Len(c.t, v, 2, "config %s", key)
		return int(v[0].(float64)), int(v[1].(float64))
	}
	c.t.Fatalf("config %s = %v: expected an int or a pair", key, v)
	return 0, 0
}

func (c *config) float(key string, def float64) float64 {
	v, ok := c.get(key)
	if !ok {
		return def
	}
	return v.(float64)
}

func (c *config) bool(key string, def bool) bool {
	v, ok := c.get(key)
	if !ok {
		return def
	}
	return v.(bool)
}

func (c *config) ints(key string) []int {
	v, ok := c.get(key)
	require.True(c.t, ok, "config %s missing", key)
	var out []int
	for _, x := range v.([]any) {
		out = append(out, int(x.(float64)))
	}
	return out
}

func (c *config) reduction() Reduction {
	v, ok := c.get("reduction")
	if !ok {
		return ReduceMean
	}
	switch v {
	case "mean":
		return ReduceMean
	case "sum":
		return ReduceSum
	case "none":
		return ReduceNone
	}
	c.t.Fatalf("unknown reduction %v", v)
	return 0
}

func (c *config) allUsed() {
	for k := range c.m {
		assert.True(c.t, c.used[k], "config option %s=%v is not handled by the Go test", k, c.m[k])
	}
}

// goldenLayers builds the Hora layer matching a torch.nn class from its
// kwargs.
var goldenLayers = map[string]func(c *config, rng *rand.Rand) Layer{
	"Linear": func(c *config, rng *rand.Rand) Layer {
		return NewLinear(c.int("in_features", 0), c.int("out_features", 0), c.bool("bias", true), rng)
	},
	"Conv2d": func(c *config, rng *rand.Rand) Layer {
		kh, kw := c.pair("kernel_size", 0)
		cfg := Conv2dConfig{Groups: c.int("groups", 1), NoBias: !c.bool("bias", true)}
		cfg.StrideH, cfg.StrideW = c.pair("stride", 1)
		cfg.PadH, cfg.PadW = c.pair("padding", 0)
		cfg.DilH, cfg.DilW = c.pair("dilation", 1)
		return NewConv2d(c.int("in_channels", 0), c.int("out_channels", 0), kh, kw, cfg, rng)
	},
	"MaxPool2d": func(c *config, _ *rand.Rand) Layer {
		kh, kw := c.pair("kernel_size", 0)
		var cfg Pool2dConfig
		cfg.StrideH, cfg.StrideW = c.pair("stride", 0)
		cfg.PadH, cfg.PadW = c.pair("padding", 0)
		return NewMaxPool2d(kh, kw, cfg)
	},
	"AvgPool2d": func(c *config, _ *rand.Rand) Layer {
		kh, kw := c.pair("kernel_size", 0)
		cfg := Pool2dConfig{ExcludePad: !c.bool("count_include_pad", true)}
		cfg.StrideH, cfg.StrideW = c.pair("stride", 0)
		cfg.PadH, cfg.PadW = c.pair("padding", 0)
		return NewAvgPool2d(kh, kw, cfg)
	},
	"AdaptiveAvgPool2d": func(c *config, _ *rand.Rand) Layer {
		return NewAdaptiveAvgPool2d(c.pair("output_size", 0))
	},
	"BatchNorm1d": func(c *config, _ *rand.Rand) Layer {
		return NewBatchNorm1d(c.int("num_features", 0), BatchNormConfig{Eps: c.float("eps", 1e-5), Momentum: c.float("momentum", 0.1)})
	},
	"BatchNorm2d": func(c *config, _ *rand.Rand) Layer {
		return NewBatchNorm2d(c.int("num_features", 0), BatchNormConfig{Eps: c.float("eps", 1e-5), Momentum: c.float("momentum", 0.1)})
	},
	"LayerNorm": func(c *config, _ *rand.Rand) Layer {
		return NewLayerNorm(c.ints("normalized_shape"), LayerNormConfig{Eps: c.float("eps", 1e-5)})
	},
	"Flatten": func(c *config, _ *rand.Rand) Layer {
		require.Equal(c.t, -1, c.int("end_dim", -1))
		return NewFlattenFrom(c.int("start_dim", 1))
	},
	"Embedding": func(c *config, rng *rand.Rand) Layer {
		return NewEmbedding(c.int("num_embeddings", 0), c.int("embedding_dim", 0), rng)
	},
	"ReLU":      func(*config, *rand.Rand) Layer { return ReLU{} },
	"LeakyReLU": func(c *config, _ *rand.Rand) Layer { return LeakyReLU{Slope: c.float("negative_slope", 0.01)} },
	"GELU": func(c *config, _ *rand.Rand) Layer {
		v, _ := c.get("approximate")
		require.Contains(c.t, []any{nil, "none"}, v)
		return GELU{}
	},
	"SiLU":       func(*config, *rand.Rand) Layer { return SiLU{} },
	"Sigmoid":    func(*config, *rand.Rand) Layer { return Sigmoid{} },
	"Tanh":       func(*config, *rand.Rand) Layer { return Tanh{} },
	"Softmax":    func(c *config, _ *rand.Rand) Layer { return Softmax{Axis: c.int("dim", 0)} },
	"LogSoftmax": func(c *config, _ *rand.Rand) Layer { return LogSoftmax{Axis: c.int("dim", 0)} },
	"Dropout":    func(c *config, rng *rand.Rand) Layer { return NewDropout(c.float("p", 0.5), rng) },
}

// goldenLosses computes a torch loss class's output from the fixture's
// inputs: float inputs arrive as Vars, int64 ones as tensors.
var goldenLosses = map[string]func(c *config, vars []*autograd.Var, ints []*tensor.Tensor) *autograd.Var{
	"CrossEntropyLoss": func(c *config, v []*autograd.Var, ints []*tensor.Tensor) *autograd.Var {
		return CrossEntropy(v[0], ints[1], CrossEntropyOptions{LabelSmoothing: c.float("label_smoothing", 0), Reduction: c.reduction()})
	},
	"NLLLoss": func(c *config, v []*autograd.Var, ints []*tensor.Tensor) *autograd.Var {
		return NLL(v[0], ints[1], c.reduction())
	},
	"MSELoss": func(c *config, v []*autograd.Var, _ []*tensor.Tensor) *autograd.Var {
		return MSE(v[0], v[1], c.reduction())
	},
	"BCEWithLogitsLoss": func(c *config, v []*autograd.Var, _ []*tensor.Tensor) *autograd.Var {
		return BCEWithLogits(v[0], v[1], c.reduction())
	},
}

const goldenRTol, goldenATol = 1e-5, 1e-6

func assertClose(t *testing.T, want *goldenTensor, got *tensor.Tensor, what string) {
	t.Helper()
	golden.AssertClose(t, want, got, goldenRTol, goldenATol, what)
}

func loadGolden(t *testing.T, path string) *goldenFixture {
	t.Helper()
	var g goldenFixture
	golden.Read(t, path, &g)
	return &g
}

// TestGolden runs every fixture of testdata/golden through the matching
// Hora layer or loss and compares output, input and parameter gradients
// and buffers with PyTorch's. A fixture whose layer has no mapping fails.
func TestGolden(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths, "no golden fixtures")
	sort.Strings(paths)
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runGolden(t, loadGolden(t, path))
		})
	}
}

func runGolden(t *testing.T, g *goldenFixture) {
	c := &config{t: t, m: g.Config, used: map[string]bool{}}
	var vars []*autograd.Var
	ints := make([]*tensor.Tensor, len(g.Inputs))
	for i, in := range g.Inputs {
		x := in.MustTensor(t)
		if in.DType == "int64" {
			ints[i] = x
			vars = append(vars, autograd.Constant(x))
		} else {
			vars = append(vars, autograd.Leaf(x))
		}
	}

	var out *autograd.Var
	var m Module
	if build, ok := goldenLayers[g.Layer]; ok {
		require.Len(t, g.Inputs, 1, "layer fixtures have one input")
		l := build(c, rand.New(rand.NewPCG(1, 2)))
		m = l
		sd := map[string]*tensor.Tensor{}
		for k, v := range g.Params {
			sd[k] = v.MustTensor(t)
		}
		for k, v := range g.Buffers {
			sd[k] = v.MustTensor(t)
		}
		// PyTorch's fixtures leave out num_batches_tracked; keep ours.
		for k, v := range StateDict(m) {
			if strings.HasSuffix(k, "num_batches_tracked") {
				sd[k] = v.Clone()
			}
		}
		require.NoError(t, LoadStateDict(m, sd))
		switch g.Mode {
		case "train":
			Train(m)
		case "eval":
			Eval(m)
		default:
			t.Fatalf("unknown mode %q", g.Mode)
		}
		out = l.Forward(vars[0])
	} else if loss, ok := goldenLosses[g.Layer]; ok {
		m = NewSequential()
		out = loss(c, vars, ints)
	} else {
		t.Fatalf("fixture %s: no Hora mapping for PyTorch layer %q", g.Case, g.Layer)
	}
	c.allUsed()

	assertClose(t, g.Output, out.Value, "output")
	require.NoError(t, autograd.BackwardWith(out, g.GradOutput.MustTensor(t)))
	require.Len(t, g.GradInputs, len(vars))
	for i, want := range g.GradInputs {
		if want == nil {
			assert.Nil(t, vars[i].Grad, "input %d (integer) has a gradient", i)
			continue
		}
		gi := vars[i].Grad
		if gi == nil {
			gi = tensor.ZerosLike(vars[i].Value)
		}
		assertClose(t, want, gi, fmt.Sprintf("grad of input %d", i))
	}
	params := map[string]*autograd.Param{}
	for _, p := range m.Parameters() {
		params[p.Name] = p
	}
	require.Len(t, params, len(g.GradParams), "parameters: Hora %v", params)
	for name, want := range g.GradParams {
		p, ok := params[name]
		require.True(t, ok, "PyTorch parameter %s has no Hora counterpart", name)
		assertClose(t, want, p.Grad, "grad of "+name)
	}
	sd := StateDict(m)
	for name, want := range g.BuffersAfter {
		assertClose(t, want, sd[name], "buffer "+name+" after the step")
	}
	for name, v := range sd {
		if strings.HasSuffix(name, "num_batches_tracked") {
			want := 0.0
			if g.Mode == "train" {
				want = 1
			}
			assert.Equal(t, want, v.Item(), name)
		}
	}
}
