package optim

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/internal/golden"
	"github.com/hora-dl/hora/tensor"
)

// goldenTensor is a tensor as scripts/golden/gen.py writes it.
type goldenTensor = golden.Tensor

// goldenFile holds the fields of every kind of fixture in this directory.
type goldenFile struct {
	Case string `json:"case"`

	// Optimizer cases.
	Optimizer string                     `json:"optimizer"`
	Defaults  map[string]json.RawMessage `json:"defaults"`
	Params    []goldenTensor             `json:"params"`
	Grads     [][]goldenTensor           `json:"grads"`
	After     [][]goldenTensor           `json:"after"`

	// Schedule cases.
	Scheduler string          `json:"scheduler"`
	Config    json.RawMessage `json:"config"`
	BaseLR    float64         `json:"base_lr"`
	LRs       []float64       `json:"lrs"`

	// Clipping cases.
	MaxNorm     *float64       `json:"max_norm"`
	GradsBefore []goldenTensor `json:"grads_before"`
	GradsAfter  []goldenTensor `json:"grads_after"`
	TotalNorm   float64        `json:"total_norm"`
}

func loadGolden(t *testing.T, path string) goldenFile {
	t.Helper()
	var g goldenFile
	golden.Read(t, path, &g)
	return g
}

// torchDefaults reads an optimizer fixture's "defaults" object: every
// hyper-parameter as torch resolved it. Keys the test does not consume
// must be listed in ignored with the value they are required to have.
type torchDefaults struct {
	t    *testing.T
	raw  map[string]json.RawMessage
	used map[string]bool
}

func newTorchDefaults(t *testing.T, raw map[string]json.RawMessage) *torchDefaults {
	return &torchDefaults{t: t, raw: raw, used: map[string]bool{}}
}

func (d *torchDefaults) float(key string) float64 {
	d.t.Helper()
	raw, ok := d.raw[key]
	require.True(d.t, ok, "defaults has no %q", key)
	d.used[key] = true
	var v float64
	require.NoError(d.t, json.Unmarshal(raw, &v), key)
	return v
}

func (d *torchDefaults) bool(key string) bool {
	d.t.Helper()
	raw, ok := d.raw[key]
	require.True(d.t, ok, "defaults has no %q", key)
	d.used[key] = true
	var v bool
	require.NoError(d.t, json.Unmarshal(raw, &v), key)
	return v
}

func (d *torchDefaults) betas() (float64, float64) {
	d.t.Helper()
	raw, ok := d.raw["betas"]
	require.True(d.t, ok, "defaults has no betas")
	d.used["betas"] = true
	var v []float64
	require.NoError(d.t, json.Unmarshal(raw, &v))
	require.Len(d.t, v, 2)
	return v[0], v[1]
}

// done fails on any hyper-parameter not consumed, unless it holds a value
// that needs no counterpart here (foreach: null, maximize: false, ...).
func (d *torchDefaults) done() {
	d.t.Helper()
	for k, raw := range d.raw {
		if d.used[k] {
			continue
		}
		switch k {
		case "foreach":
			assert.JSONEq(d.t, "null", string(raw), k)
		case "maximize", "capturable", "differentiable", "fused":
			assert.JSONEq(d.t, "false", string(raw), k)
		default:
			d.t.Errorf("hyper-parameter %q = %s has no counterpart in the Go config", k, raw)
		}
	}
}

// newGoldenOptimizer builds the optimizer a fixture describes.
func newGoldenOptimizer(t *testing.T, g goldenFile, params []*autograd.Param) Optimizer {
	t.Helper()
	d := newTorchDefaults(t, g.Defaults)
	var opt Optimizer
	var err error
	switch g.Optimizer {
	case "SGD":
		opt, err = NewSGD(params, SGDConfig{
			LR: d.float("lr"), Momentum: d.float("momentum"), Dampening: d.float("dampening"),
			Nesterov: d.bool("nesterov"), WeightDecay: d.float("weight_decay"),
		})
	case "Adam":
		b1, b2 := d.betas()
		opt, err = NewAdam(params, AdamConfig{
			LR: d.float("lr"), Beta1: b1, Beta2: b2, Eps: d.float("eps"),
			WeightDecay: d.float("weight_decay"), AMSGrad: d.bool("amsgrad"),
		})
	case "AdamW":
		b1, b2 := d.betas()
		opt, err = NewAdamW(params, AdamWConfig{
			LR: d.float("lr"), Beta1: b1, Beta2: b2, Eps: d.float("eps"),
			WeightDecay: d.float("weight_decay"), AMSGrad: d.bool("amsgrad"),
		})
	case "RMSprop":
		opt, err = NewRMSprop(params, RMSpropConfig{
			LR: d.float("lr"), Alpha: d.float("alpha"), Eps: d.float("eps"),
			WeightDecay: d.float("weight_decay"), Momentum: d.float("momentum"), Centered: d.bool("centered"),
		})
	case "Adagrad":
		opt, err = NewAdagrad(params, AdagradConfig{
			LR: d.float("lr"), LRDecay: d.float("lr_decay"), WeightDecay: d.float("weight_decay"),
			InitialAccumulatorValue: d.float("initial_accumulator_value"), Eps: d.float("eps"),
		})
	default:
		require.FailNow(t, "unknown optimizer", "%q in case %s", g.Optimizer, g.Case)
	}
	require.NoError(t, err)
	d.done()
	return opt
}

// goldenParams returns fresh parameters "p0", "p1", ... holding the
// fixture's initial values.
func goldenParams(t *testing.T, g goldenFile) []*autograd.Param {
	t.Helper()
	require.NotEmpty(t, g.Params)
	ps := make([]*autograd.Param, len(g.Params))
	for i, gt := range g.Params {
		ps[i] = autograd.NewParam(fmt.Sprintf("p%d", i), gt.MustTensor(t))
	}
	return ps
}

// setGrads gives each parameter a fresh copy of step s's gradient.
func setGrads(t *testing.T, g goldenFile, ps []*autograd.Param, s int) {
	t.Helper()
	require.Len(t, g.Grads[s], len(ps))
	for i, p := range ps {
		p.Grad = g.Grads[s][i].MustTensor(t)
	}
}

const (
	optRTol   = 1e-5
	optATol   = 1e-7
	schedATol = 1e-12
)

// TestGolden runs every fixture in testdata/golden against this package.
// A fixture of a kind the test does not know fails, so none is ignored.
func TestGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := loadGolden(t, path)
			require.Equal(t, name, g.Case, "case name differs from the file name")
			switch {
			case g.Optimizer != "":
				runGoldenOptimizer(t, g)
			case g.Scheduler != "":
				runGoldenSchedule(t, g)
			case g.MaxNorm != nil:
				runGoldenClip(t, g)
			default:
				t.Fatalf("fixture %s is of no known kind (optimizer, scheduler or clip)", path)
			}
		})
	}
}

// runGoldenOptimizer checks a fixture with the device's fused update
// kernels and with the update composed of tensor operations (the path of
// devices without them), in float32 and in float64.
func runGoldenOptimizer(t *testing.T, g goldenFile) {
	for _, fused := range []bool{true, false} {
		for _, dt := range []device.DType{device.Float32, device.Float64} {
			t.Run(fmt.Sprintf("fused=%v/%v", fused, dt), func(t *testing.T) { runGoldenOptimizerWith(t, g, fused, dt) })
		}
	}
}

func runGoldenOptimizerWith(t *testing.T, g goldenFile, fused bool, dt device.DType) {
	require.Len(t, g.Grads, 5)
	require.Len(t, g.After, 5)
	ps := goldenParams(t, g)
	values := make([]*tensor.Tensor, len(ps))
	for i, p := range ps {
		p.Value = p.Value.Cast(dt)
		values[i] = p.Value
	}
	opt := newGoldenOptimizer(t, g, ps)
	if !fused {
		opt.(interface{ base() *core }).base().fused = nil
	}
	for s := range g.Grads {
		setGrads(t, g, ps, s)
		for _, p := range ps {
			p.Grad = p.Grad.Cast(dt)
		}
		require.NoError(t, opt.Step())
		for i, p := range ps {
			assert.Same(t, values[i], p.Value, "Step must update the value in place")
			golden.AssertClose(t, &g.After[s][i], p.Value, optRTol, optATol,
				fmt.Sprintf("step %d param %s", s+1, p.Name))
		}
		opt.ZeroGrad()
	}
}

// goldenSchedule builds the schedule a fixture's config describes.
func goldenSchedule(t *testing.T, kind string, base float64, raw json.RawMessage) Schedule {
	t.Helper()
	var c struct {
		StepSize    int     `json:"step_size"`
		Gamma       float64 `json:"gamma"`
		Milestones  []int   `json:"milestones"`
		TMax        int     `json:"T_max"`
		EtaMin      float64 `json:"eta_min"`
		StartFactor float64 `json:"start_factor"`
		TotalIters  int     `json:"total_iters"`
		Scheduler   string  `json:"scheduler"`
		Milestone   int     `json:"milestone"`
		Warmup      *struct {
			StartFactor float64 `json:"start_factor"`
			TotalIters  int     `json:"total_iters"`
		} `json:"warmup"`
		Then json.RawMessage `json:"then"`
	}
	require.NoError(t, json.Unmarshal(raw, &c))
	var s Schedule
	var err error
	switch kind {
	case "StepLR":
		s, err = StepLR(baseLR(base), c.StepSize, c.Gamma)
	case "MultiStepLR":
		s, err = MultiStepLR(baseLR(base), c.Milestones, c.Gamma)
	case "CosineAnnealingLR":
		s, err = CosineLR(baseLR(base), c.TMax, c.EtaMin)
	case "LinearLR":
		constant, cerr := Constant(baseLR(base))
		require.NoError(t, cerr)
		s, err = WarmupLR(c.StartFactor, c.TotalIters, constant)
	case "SequentialLR":
		require.NotNil(t, c.Warmup)
		require.Equal(t, c.Warmup.TotalIters, c.Milestone, "WarmupLR switches at the end of the warmup")
		var then struct {
			Scheduler string `json:"scheduler"`
		}
		require.NoError(t, json.Unmarshal(c.Then, &then))
		next := goldenSchedule(t, then.Scheduler, base, c.Then)
		s, err = WarmupLR(c.Warmup.StartFactor, c.Warmup.TotalIters, next)
	default:
		require.FailNow(t, "unknown scheduler", "%q", kind)
	}
	require.NoError(t, err)
	return s
}

func runGoldenSchedule(t *testing.T, g goldenFile) {
	require.Len(t, g.LRs, 12)
	s := goldenSchedule(t, g.Scheduler, g.BaseLR, g.Config)
	for e, want := range g.LRs {
		assert.InDelta(t, want, s.LR(e), schedATol, "epoch %d", e)
	}
	// Apply sets exactly the schedule's rate.
	p := autograd.NewParam("w", tensor.FromFloat32([]float32{1}, 1))
	opt, err := NewSGD([]*autograd.Param{p}, DefaultSGDConfig())
	require.NoError(t, err)
	for e := range g.LRs {
		Apply(opt, s, e)
		assert.Equal(t, s.LR(e), opt.LR())
	}
}

func runGoldenClip(t *testing.T, g goldenFile) {
	require.Len(t, g.GradsAfter, len(g.GradsBefore))
	ps := make([]*autograd.Param, len(g.GradsBefore))
	grads := make([]*tensor.Tensor, len(ps))
	for i, gt := range g.GradsBefore {
		x := gt.MustTensor(t)
		ps[i] = autograd.NewParam(fmt.Sprintf("p%d", i), tensor.ZerosLike(x))
		ps[i].Grad = x
		grads[i] = x
	}
	total := ClipGradNorm(ps, *g.MaxNorm)
	assert.InEpsilon(t, g.TotalNorm, total, 1e-6)
	for i, p := range ps {
		assert.Same(t, grads[i], p.Grad, "gradients are scaled in place")
		golden.AssertClose(t, &g.GradsAfter[i], p.Grad, optRTol, optATol, p.Name)
	}
}
