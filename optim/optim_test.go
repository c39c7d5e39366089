package optim

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// optimizerFixtures returns the optimizer fixtures (not the schedule or
// clipping ones).
func optimizerFixtures(t *testing.T) []goldenFile {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	require.NoError(t, err)
	var out []goldenFile
	for _, f := range files {
		if g := loadGolden(t, f); g.Optimizer != "" {
			out = append(out, g)
		}
	}
	require.NotEmpty(t, out)
	return out
}

// TestStateDictResume checks that 2 steps, a save, a load into a fresh
// optimizer and 3 more steps give bit for bit what 5 uninterrupted steps
// give, for every optimizer configuration of the fixtures.
func TestStateDictResume(t *testing.T) {
	t.Parallel()
	for _, g := range optimizerFixtures(t) {
		t.Run(g.Case, func(t *testing.T) {
			t.Parallel()
			// Uninterrupted.
			full := goldenParams(t, g)
			fullOpt := newGoldenOptimizer(t, g, full)
			for s := 0; s < 5; s++ {
				setGrads(t, g, full, s)
				require.NoError(t, fullOpt.Step())
				fullOpt.ZeroGrad()
			}

			// Two steps, save.
			first := goldenParams(t, g)
			firstOpt := newGoldenOptimizer(t, g, first)
			for s := 0; s < 2; s++ {
				setGrads(t, g, first, s)
				require.NoError(t, firstOpt.Step())
				firstOpt.ZeroGrad()
			}
			sd := firstOpt.StateDict()
			assert.Equal(t, int64(2), sd[StepKey].Int64s()[0])
			assert.Equal(t, int64(2), sd["p0."+ParamStepState].Int64s()[0])

			// Fresh parameters and optimizer, load, three more steps.
			second := make([]*autograd.Param, len(first))
			for i, p := range first {
				second[i] = autograd.NewParam(p.Name, p.Value.Clone())
			}
			secondOpt := newGoldenOptimizer(t, g, second)
			require.NoError(t, secondOpt.LoadStateDict(sd))
			for s := 2; s < 5; s++ {
				setGrads(t, g, second, s)
				require.NoError(t, secondOpt.Step())
				secondOpt.ZeroGrad()
			}

			for i := range full {
				assert.Equal(t, full[i].Value.Float32s(), second[i].Value.Float32s(), "param %s", full[i].Name)
			}
			want, got := fullOpt.StateDict(), secondOpt.StateDict()
			require.Len(t, got, len(want))
			for k, w := range want {
				require.Contains(t, got, k)
				assert.Equal(t, w.Shape(), got[k].Shape(), k)
				assert.Equal(t, w.Values(), got[k].Values(), k)
			}
		})
	}
}

func TestStateDictKeys(t *testing.T) {
	t.Parallel()
	mk := func() []*autograd.Param {
		return []*autograd.Param{
			autograd.NewParam("fc1.weight", tensor.Zeros(3, 4)),
			autograd.NewParam("fc1.bias", tensor.Zeros(4)),
		}
	}
	perParam := func(states ...string) []string {
		keys := []string{StepKey, LRKey}
		for _, n := range []string{"fc1.weight", "fc1.bias"} {
			keys = append(keys, n+".step")
			for _, s := range states {
				keys = append(keys, n+"."+s)
			}
		}
		return keys
	}
	must := func(o Optimizer, err error) Optimizer {
		require.NoError(t, err)
		return o
	}
	sgdM := DefaultSGDConfig()
	sgdM.Momentum = 0.9
	ams := DefaultAdamConfig()
	ams.AMSGrad = true
	rms := DefaultRMSpropConfig()
	rms.Momentum, rms.Centered = 0.9, true
	cases := []struct {
		name string
		opt  Optimizer
		keys []string
	}{
		{"sgd", must(NewSGD(mk(), DefaultSGDConfig())), perParam()},
		{"sgd momentum", must(NewSGD(mk(), sgdM)), perParam("momentum_buffer")},
		{"adam", must(NewAdam(mk(), DefaultAdamConfig())), perParam("exp_avg", "exp_avg_sq")},
		{"adam amsgrad", must(NewAdam(mk(), ams)), perParam("exp_avg", "exp_avg_sq", "max_exp_avg_sq")},
		{"adamw", must(NewAdamW(mk(), DefaultAdamWConfig())), perParam("exp_avg", "exp_avg_sq")},
		{"rmsprop", must(NewRMSprop(mk(), DefaultRMSpropConfig())), perParam("square_avg")},
		{"rmsprop momentum centered", must(NewRMSprop(mk(), rms)), perParam("square_avg", "momentum_buffer", "grad_avg")},
		{"adagrad", must(NewAdagrad(mk(), DefaultAdagradConfig())), perParam("sum")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sd := c.opt.StateDict()
			keys := make([]string, 0, len(sd))
			for k := range sd {
				keys = append(keys, k)
			}
			assert.ElementsMatch(t, c.keys, keys)
			assert.Empty(t, sd[StepKey].Shape())
			assert.Empty(t, sd[LRKey].Shape())
			assert.Equal(t, c.opt.LR(), sd[LRKey].Float64s()[0])
			for k, v := range sd {
				if strings.HasPrefix(k, "fc1.weight.") && !strings.HasSuffix(k, ".step") {
					assert.Equal(t, []int{3, 4}, v.Shape(), k)
				}
			}
		})
	}
}

func TestStateDictIsACopy(t *testing.T) {
	t.Parallel()
	p := autograd.NewParam("w", tensor.FromFloat32([]float32{1, 2}, 2))
	cfg := DefaultSGDConfig()
	cfg.Momentum = 0.9
	opt, err := NewSGD([]*autograd.Param{p}, cfg)
	require.NoError(t, err)
	p.Grad = tensor.FromFloat32([]float32{1, 1}, 2)
	require.NoError(t, opt.Step())

	sd := opt.StateDict()
	sd["w.momentum_buffer"].Fill(100)
	assert.Equal(t, []float32{1, 1}, opt.StateDict()["w.momentum_buffer"].Float32s())

	// Loading copies too: changing the loaded map afterwards changes nothing.
	sd = opt.StateDict()
	require.NoError(t, opt.LoadStateDict(sd))
	sd["w.momentum_buffer"].Fill(100)
	assert.Equal(t, []float32{1, 1}, opt.StateDict()["w.momentum_buffer"].Float32s())
}

func TestLoadStateDictErrors(t *testing.T) {
	t.Parallel()
	newOpt := func(t *testing.T) *Adam {
		ps := []*autograd.Param{
			autograd.NewParam("fc1.weight", tensor.Zeros(3, 4)),
			autograd.NewParam("fc1.bias", tensor.Zeros(4)),
		}
		o, err := NewAdam(ps, DefaultAdamConfig())
		require.NoError(t, err)
		return o
	}
	cases := []struct {
		name   string
		edit   func(sd map[string]*tensor.Tensor)
		substr []string
	}{
		{"missing buffer", func(sd map[string]*tensor.Tensor) { delete(sd, "fc1.weight.exp_avg") },
			[]string{"missing key", `"fc1.weight.exp_avg"`}},
		{"missing step", func(sd map[string]*tensor.Tensor) { delete(sd, StepKey) },
			[]string{"missing key", `"step"`}},
		{"unexpected", func(sd map[string]*tensor.Tensor) { sd["fc2.weight.exp_avg"] = tensor.Zeros(3, 4) },
			[]string{"unexpected key", `"fc2.weight.exp_avg"`}},
		{"unexpected state", func(sd map[string]*tensor.Tensor) { sd["fc1.bias.momentum_buffer"] = tensor.Zeros(4) },
			[]string{"unexpected key", `"fc1.bias.momentum_buffer"`}},
		{"shape", func(sd map[string]*tensor.Tensor) { sd["fc1.weight.exp_avg_sq"] = tensor.Zeros(4, 3) },
			[]string{`"fc1.weight.exp_avg_sq"`, "expected shape [3 4]", "found [4 3]"}},
		{"nil", func(sd map[string]*tensor.Tensor) { sd["fc1.bias.exp_avg"] = nil },
			[]string{`"fc1.bias.exp_avg"`, "nil"}},
		{"int buffer", func(sd map[string]*tensor.Tensor) { sd["fc1.bias.exp_avg"] = tensor.FromInt64([]int64{1, 2, 3, 4}, 4) },
			[]string{`"fc1.bias.exp_avg"`, "int64"}},
		{"scalar shape", func(sd map[string]*tensor.Tensor) { sd[StepKey] = tensor.FromInt64([]int64{1, 2}, 2) },
			[]string{`"step"`, "expected shape []", "found [2]"}},
		{"negative step", func(sd map[string]*tensor.Tensor) { sd["fc1.bias.step"] = tensor.FromInt64([]int64{-1}) },
			[]string{`"fc1.bias.step"`, "-1"}},
		{"bad lr", func(sd map[string]*tensor.Tensor) { sd[LRKey] = tensor.FromFloat64([]float64{math.NaN()}) },
			[]string{`"lr"`, "NaN"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			src := newOpt(t)
			src.Params()[0].Grad = tensor.FullLike(src.Params()[0].Value, 1)
			require.NoError(t, src.Step())
			sd := src.StateDict()
			c.edit(sd)

			dst := newOpt(t)
			before := dst.StateDict()
			err := dst.LoadStateDict(sd)
			require.Error(t, err)
			for _, s := range c.substr {
				assert.Contains(t, err.Error(), s)
			}
			// Nothing changed.
			after := dst.StateDict()
			for k, v := range before {
				assert.Equal(t, v.Values(), after[k].Values(), k)
			}
		})
	}
}

func TestLoadStateDictConvertsType(t *testing.T) {
	t.Parallel()
	p := autograd.NewParam("w", tensor.Zeros(2))
	opt, err := NewAdagrad([]*autograd.Param{p}, DefaultAdagradConfig())
	require.NoError(t, err)
	sd := opt.StateDict()
	sd["w.sum"] = tensor.FromFloat64([]float64{1.5, 2.5}, 2)
	sd[StepKey] = tensor.FromFloat64([]float64{7})
	sd[LRKey] = tensor.FromFloat64([]float64{0.5})
	require.NoError(t, opt.LoadStateDict(sd))
	got := opt.StateDict()
	assert.Equal(t, []float32{1.5, 2.5}, got["w.sum"].Float32s())
	assert.Equal(t, []int64{7}, got[StepKey].Int64s())
	assert.Equal(t, 0.5, opt.LR())
}

func TestConstructorErrors(t *testing.T) {
	t.Parallel()
	w := autograd.NewParam("w", tensor.Zeros(2))
	cases := []struct {
		name   string
		params []*autograd.Param
		substr string
	}{
		{"empty", nil, "empty parameter list"},
		{"nil", []*autograd.Param{w, nil}, "parameter 1 is nil"},
		{"no name", []*autograd.Param{autograd.NewParam("", tensor.Zeros(2))}, "parameter 0 has an empty name"},
		{"duplicate", []*autograd.Param{w, autograd.NewParam("b", tensor.Zeros(1)), autograd.NewParam("w", tensor.Zeros(3))},
			`duplicate parameter name "w" (parameters 0 and 2)`},
		{"same param twice", []*autograd.Param{w, w}, `duplicate parameter name "w"`},
		{"int", []*autograd.Param{autograd.NewParam("idx", tensor.FromInt64([]int64{1}, 1))}, `"idx" has type int64`},
	}
	ctors := map[string]func([]*autograd.Param) error{
		"SGD":     func(ps []*autograd.Param) error { _, err := NewSGD(ps, DefaultSGDConfig()); return err },
		"Adam":    func(ps []*autograd.Param) error { _, err := NewAdam(ps, DefaultAdamConfig()); return err },
		"AdamW":   func(ps []*autograd.Param) error { _, err := NewAdamW(ps, DefaultAdamWConfig()); return err },
		"RMSprop": func(ps []*autograd.Param) error { _, err := NewRMSprop(ps, DefaultRMSpropConfig()); return err },
		"Adagrad": func(ps []*autograd.Param) error { _, err := NewAdagrad(ps, DefaultAdagradConfig()); return err },
	}
	for _, c := range cases {
		for kind, ctor := range ctors {
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				err := ctor(c.params)
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.substr)
				assert.Contains(t, err.Error(), "New"+kind)
			})
		}
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	ps := []*autograd.Param{autograd.NewParam("w", tensor.Zeros(2))}
	sgd := func(f func(*SGDConfig)) error {
		c := DefaultSGDConfig()
		f(&c)
		_, err := NewSGD(ps, c)
		return err
	}
	adam := func(f func(*AdamConfig)) error {
		c := DefaultAdamConfig()
		f(&c)
		_, err := NewAdam(ps, c)
		return err
	}
	adamw := func(f func(*AdamWConfig)) error {
		c := DefaultAdamWConfig()
		f(&c)
		_, err := NewAdamW(ps, c)
		return err
	}
	rms := func(f func(*RMSpropConfig)) error {
		c := DefaultRMSpropConfig()
		f(&c)
		_, err := NewRMSprop(ps, c)
		return err
	}
	ada := func(f func(*AdagradConfig)) error {
		c := DefaultAdagradConfig()
		f(&c)
		_, err := NewAdagrad(ps, c)
		return err
	}
	cases := []struct {
		name   string
		err    error
		substr []string // empty: no error expected
	}{
		{"sgd default", sgd(func(*SGDConfig) {}), nil},
		{"sgd lr 0", sgd(func(c *SGDConfig) { c.LR = 0 }), []string{"SGDConfig.LR", "found 0"}},
		{"sgd lr nan", sgd(func(c *SGDConfig) { c.LR = math.NaN() }), []string{"SGDConfig.LR", "NaN"}},
		{"sgd lr inf", sgd(func(c *SGDConfig) { c.LR = math.Inf(1) }), []string{"SGDConfig.LR", "+Inf"}},
		{"sgd momentum", sgd(func(c *SGDConfig) { c.Momentum = -0.5 }), []string{"SGDConfig.Momentum", "-0.5"}},
		{"sgd dampening", sgd(func(c *SGDConfig) { c.Dampening = 1.5 }), []string{"SGDConfig.Dampening", "1.5"}},
		{"sgd weight decay", sgd(func(c *SGDConfig) { c.WeightDecay = -1 }), []string{"SGDConfig.WeightDecay", "-1"}},
		{"sgd nesterov no momentum", sgd(func(c *SGDConfig) { c.Nesterov = true }), []string{"SGDConfig.Nesterov", "Momentum 0"}},
		{"sgd nesterov dampening", sgd(func(c *SGDConfig) { c.Nesterov, c.Momentum, c.Dampening = true, 0.9, 0.1 }),
			[]string{"SGDConfig.Nesterov", "Dampening 0.1"}},
		{"sgd nesterov ok", sgd(func(c *SGDConfig) { c.Nesterov, c.Momentum = true, 0.9 }), nil},
		{"adam default", adam(func(*AdamConfig) {}), nil},
		{"adam lr", adam(func(c *AdamConfig) { c.LR = -1e-3 }), []string{"AdamConfig.LR", "-0.001"}},
		{"adam beta1", adam(func(c *AdamConfig) { c.Beta1 = 1 }), []string{"AdamConfig.Beta1", "[0, 1)", "found 1"}},
		{"adam beta2", adam(func(c *AdamConfig) { c.Beta2 = -0.1 }), []string{"AdamConfig.Beta2", "-0.1"}},
		{"adam eps", adam(func(c *AdamConfig) { c.Eps = 0 }), []string{"AdamConfig.Eps", "found 0"}},
		{"adam weight decay", adam(func(c *AdamConfig) { c.WeightDecay = -0.01 }), []string{"AdamConfig.WeightDecay", "-0.01"}},
		{"adamw default", adamw(func(*AdamWConfig) {}), nil},
		{"adamw beta1", adamw(func(c *AdamWConfig) { c.Beta1 = 1.1 }), []string{"AdamWConfig.Beta1", "1.1"}},
		{"adamw weight decay", adamw(func(c *AdamWConfig) { c.WeightDecay = math.NaN() }), []string{"AdamWConfig.WeightDecay", "NaN"}},
		{"rmsprop default", rms(func(*RMSpropConfig) {}), nil},
		{"rmsprop lr", rms(func(c *RMSpropConfig) { c.LR = 0 }), []string{"RMSpropConfig.LR"}},
		{"rmsprop alpha", rms(func(c *RMSpropConfig) { c.Alpha = 1 }), []string{"RMSpropConfig.Alpha", "found 1"}},
		{"rmsprop eps", rms(func(c *RMSpropConfig) { c.Eps = -1e-8 }), []string{"RMSpropConfig.Eps", "-1e-08"}},
		{"rmsprop momentum", rms(func(c *RMSpropConfig) { c.Momentum = -0.9 }), []string{"RMSpropConfig.Momentum", "-0.9"}},
		{"rmsprop weight decay", rms(func(c *RMSpropConfig) { c.WeightDecay = -2 }), []string{"RMSpropConfig.WeightDecay", "-2"}},
		{"adagrad default", ada(func(*AdagradConfig) {}), nil},
		{"adagrad lr", ada(func(c *AdagradConfig) { c.LR = 0 }), []string{"AdagradConfig.LR"}},
		{"adagrad lr decay", ada(func(c *AdagradConfig) { c.LRDecay = -0.1 }), []string{"AdagradConfig.LRDecay", "-0.1"}},
		{"adagrad weight decay", ada(func(c *AdagradConfig) { c.WeightDecay = -0.1 }), []string{"AdagradConfig.WeightDecay"}},
		{"adagrad accumulator", ada(func(c *AdagradConfig) { c.InitialAccumulatorValue = -1 }),
			[]string{"AdagradConfig.InitialAccumulatorValue", "-1"}},
		{"adagrad eps", ada(func(c *AdagradConfig) { c.Eps = 0 }), []string{"AdagradConfig.Eps"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assertErrorContains(t, c.err, c.substr)
		})
	}
}

// TestSkipNilGrad checks that a parameter without a gradient is left
// alone and its state does not advance: its first real step is a first
// step (Adam's bias correction, SGD's momentum buffer = d).
func TestSkipNilGrad(t *testing.T) {
	t.Parallel()
	sgdM := DefaultSGDConfig()
	sgdM.Momentum, sgdM.Dampening = 0.9, 0.5
	ctors := map[string]func([]*autograd.Param) (Optimizer, error){
		"SGD":     func(ps []*autograd.Param) (Optimizer, error) { return NewSGD(ps, sgdM) },
		"Adam":    func(ps []*autograd.Param) (Optimizer, error) { return NewAdam(ps, DefaultAdamConfig()) },
		"AdamW":   func(ps []*autograd.Param) (Optimizer, error) { return NewAdamW(ps, DefaultAdamWConfig()) },
		"RMSprop": func(ps []*autograd.Param) (Optimizer, error) { return NewRMSprop(ps, DefaultRMSpropConfig()) },
		"Adagrad": func(ps []*autograd.Param) (Optimizer, error) {
			c := DefaultAdagradConfig()
			c.LRDecay = 0.5
			return NewAdagrad(ps, c)
		},
	}
	g0 := []float32{0.5, -1, 2}
	g1 := []float32{-0.25, 0.75, 1.5}
	for kind, ctor := range ctors {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			a := autograd.NewParam("a", tensor.FromFloat32([]float32{1, 2, 3}, 3))
			b := autograd.NewParam("b", tensor.FromFloat32([]float32{-1, 0, 1}, 3))
			opt, err := ctor([]*autograd.Param{a, b})
			require.NoError(t, err)

			// Step 1: only a has a gradient.
			a.Grad = tensor.FromFloat32(g0, 3)
			require.NoError(t, opt.Step())
			assert.Equal(t, []float32{-1, 0, 1}, b.Value.Float32s())
			sd := opt.StateDict()
			assert.Equal(t, []int64{0}, sd["b.step"].Int64s())
			assert.Equal(t, []int64{1}, sd["a.step"].Int64s())
			assert.Equal(t, []int64{1}, sd[StepKey].Int64s())

			// Step 2: only b. It must behave as b's first step.
			opt.ZeroGrad()
			assert.Nil(t, a.Grad)
			b.Grad = tensor.FromFloat32(g1, 3)
			aBefore := a.Value.Float32s()
			require.NoError(t, opt.Step())
			assert.Equal(t, aBefore, a.Value.Float32s())

			ref := autograd.NewParam("b", tensor.FromFloat32([]float32{-1, 0, 1}, 3))
			refOpt, err := ctor([]*autograd.Param{ref})
			require.NoError(t, err)
			ref.Grad = tensor.FromFloat32(g1, 3)
			require.NoError(t, refOpt.Step())
			assert.Equal(t, ref.Value.Float32s(), b.Value.Float32s())
		})
	}
}

func TestStepErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		grad   *tensor.Tensor
		substr []string
	}{
		{"shape", tensor.Zeros(3, 2), []string{`"w"`, "gradient shape [3 2]", "value shape [2 3]"}},
		{"type", tensor.New(tensor.CPU(), device.Float64, 2, 3), []string{`"w"`, "gradient type float64", "value type float32"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ok := autograd.NewParam("ok", tensor.FromFloat32([]float32{1}, 1))
			w := autograd.NewParam("w", tensor.Zeros(2, 3))
			opt, err := NewSGD([]*autograd.Param{ok, w}, DefaultSGDConfig())
			require.NoError(t, err)
			ok.Grad = tensor.FromFloat32([]float32{1}, 1)
			w.Grad = c.grad
			err = opt.Step()
			require.Error(t, err)
			for _, s := range c.substr {
				assert.Contains(t, err.Error(), s)
			}
			// Nothing was updated, not even the parameter before the bad one.
			assert.Equal(t, []float32{1}, ok.Value.Float32s())
			assert.Equal(t, []int64{0}, opt.StateDict()[StepKey].Int64s())
		})
	}
	t.Run("value replaced by another shape", func(t *testing.T) {
		t.Parallel()
		w := autograd.NewParam("w", tensor.Zeros(2))
		opt, err := NewAdam([]*autograd.Param{w}, DefaultAdamConfig())
		require.NoError(t, err)
		w.Value = tensor.Zeros(3)
		w.Grad = tensor.Zeros(3)
		err = opt.Step()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "value shape [3] differs from the shape [2]")
	})
}

func TestLRAndParams(t *testing.T) {
	t.Parallel()
	w := autograd.NewParam("w", tensor.Zeros(2))
	b := autograd.NewParam("b", tensor.Zeros(1))
	cfg := DefaultAdamWConfig()
	cfg.LR = 0.25
	opt, err := NewAdamW([]*autograd.Param{w, b}, cfg)
	require.NoError(t, err)
	assert.Equal(t, 0.25, opt.LR())
	opt.SetLR(0.125)
	assert.Equal(t, 0.125, opt.LR())
	assert.Equal(t, 0.25, opt.Config().LR)
	opt.SetLR(0) // a schedule may reach 0
	assert.Equal(t, 0.0, opt.LR())
	assert.Panics(t, func() { opt.SetLR(-1) })
	assert.Panics(t, func() { opt.SetLR(math.NaN()) })
	assert.Panics(t, func() { opt.SetLR(math.Inf(1)) })

	ps := opt.Params()
	require.Equal(t, []*autograd.Param{w, b}, ps)
	ps[0] = nil // a copy: the optimizer keeps its list
	assert.Same(t, w, opt.Params()[0])
}

// TestSGDMatchesHandComputation checks the SGD formulas on numbers small
// enough to follow by hand, float64 parameters included.
func TestSGDMatchesHandComputation(t *testing.T) {
	t.Parallel()
	w := autograd.NewParam("w", tensor.FromFloat64([]float64{1}, 1))
	opt, err := NewSGD([]*autograd.Param{w}, SGDConfig{LR: 0.5, Momentum: 0.5, Dampening: 0.5, WeightDecay: 1})
	require.NoError(t, err)
	w.Grad = tensor.FromFloat64([]float64{1}, 1)
	require.NoError(t, opt.Step())
	// d = 1 + 1·1 = 2, buf = 2, w = 1 - 0.5·2 = 0.
	assert.Equal(t, []float64{0}, w.Value.Float64s())
	require.NoError(t, opt.Step())
	// d = 1 + 0 = 1, buf = 0.5·2 + 0.5·1 = 1.5, w = 0 - 0.75.
	assert.Equal(t, []float64{-0.75}, w.Value.Float64s())
}

// assertErrorContains checks that err is nil when want is empty, and
// otherwise an error whose message contains every string of want.
func assertErrorContains(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		assert.NoError(t, err)
		return
	}
	require.Error(t, err)
	for _, s := range want {
		assert.Contains(t, err.Error(), s)
	}
}
