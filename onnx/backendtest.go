package onnx

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

// Tolerance bounds the difference between a result and its reference: an
// element is close when |got - want| <= ATol + RTol·|want|.
type Tolerance struct {
	RTol, ATol float64
}

// Diff is the comparison of a result with its reference.
type Diff struct {
	// OK tells whether the shapes match and every element is close.
	OK bool
	// Problem describes a shape mismatch ("" when the shapes match).
	Problem string
	// MaxAbs and MaxRel are the largest absolute and relative
	// differences; Index, Got and Want locate the element farthest out of
	// tolerance (or the largest difference when all are close).
	MaxAbs, MaxRel float64
	Index          int
	Got, Want      float64
}

// Compare compares got with want element by element. NaN matches NaN and
// an infinity matches the same infinity.
func Compare(got, want *tensor.Tensor, tol Tolerance) Diff {
	if !got.HasShape(want.Shape()) {
		return Diff{Problem: fmt.Sprintf("shape %v, want %v", got.Shape(), want.Shape())}
	}
	g, w := got.Values(), want.Values()
	d := Diff{OK: true, Index: -1}
	worst := -1.0
	for i := range w {
		a, b := g[i], w[i]
		if math.IsNaN(a) && math.IsNaN(b) || a == b {
			continue
		}
		abs := math.Abs(a - b)
		rel := abs / math.Max(math.Abs(b), 1e-30)
		if math.IsNaN(abs) {
			abs, rel = math.Inf(1), math.Inf(1)
		}
		d.MaxAbs = math.Max(d.MaxAbs, abs)
		d.MaxRel = math.Max(d.MaxRel, rel)
		excess := abs - (tol.ATol + tol.RTol*math.Abs(b))
		if excess > 0 {
			d.OK = false
		}
		if excess > worst || d.Index < 0 {
			worst, d.Index, d.Got, d.Want = excess, i, a, b
		}
	}
	return d
}

// Status is the outcome of one backend-test data set.
type Status int

// The outcomes.
const (
	Pass        Status = iota // every output within tolerance
	Fail                      // an output differs, or the model or the run failed
	Unsupported               // the model needs something Hora does not implement
)

func (s Status) String() string {
	return [...]string{"PASS", "FAIL", "UNSUPPORTED"}[s]
}

// CaseResult is the outcome of one data set of an ONNX backend test.
type CaseResult struct {
	// Case is the test folder's name, with "/test_data_set_N" when the
	// result is about one data set.
	Case   string
	Status Status
	// Ops are the operators the model uses (the failing or unsupported
	// one first, when known).
	Ops []string
	// Detail explains a failure or what is unsupported, or gives the
	// largest differences of a pass.
	Detail string
}

func (r CaseResult) String() string {
	return fmt.Sprintf("%s %s %s", r.Status, r.Case, r.Detail)
}

// CheckBackendTest runs an ONNX backend-test folder (model.onnx and
// test_data_set_N/{input,output}_K.pb) and compares every output of every
// data set with its reference.
func CheckBackendTest(dir string, tol Tolerance) []CaseResult {
	name := filepath.Base(dir)
	m, err := Load(filepath.Join(dir, "model.onnx"))
	if err != nil {
		r := CaseResult{Case: name, Status: Fail, Detail: err.Error()}
		if errors.Is(err, ErrUnsupported) {
			r.Status = Unsupported
		}
		var ne *NodeError
		if errors.As(err, &ne) {
			r.Ops = []string{ne.Op}
		}
		return []CaseResult{r}
	}
	ops := m.OpTypes()
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	sort.Strings(sets)
	if len(sets) == 0 {
		return []CaseResult{{Case: name, Status: Fail, Ops: ops, Detail: "no test_data_set_N folders"}}
	}
	var results []CaseResult
	for _, set := range sets {
		r := checkDataSet(m, set, tol)
		r.Case = name + "/" + filepath.Base(set)
		r.Ops = ops
		var ne *NodeError
		if r.err != nil && errors.As(r.err, &ne) {
			r.Ops = append([]string{ne.Op}, ops...)
		}
		results = append(results, r.CaseResult)
	}
	return results
}

type setResult struct {
	CaseResult
	err error
}

func readNumbered(dir, prefix string) ([]*tensor.Tensor, error) {
	var out []*tensor.Tensor
	for k := 0; ; k++ {
		path := filepath.Join(dir, fmt.Sprintf("%s_%d.pb", prefix, k))
		if _, err := os.Stat(path); err != nil {
			return out, nil
		}
		t, err := ReadTensor(path)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
}

func checkDataSet(m *Model, set string, tol Tolerance) setResult {
	fail := func(err error) setResult {
		r := setResult{CaseResult: CaseResult{Status: Fail, Detail: err.Error()}, err: err}
		if errors.Is(err, ErrUnsupported) {
			r.Status = Unsupported
		}
		return r
	}
	inputs, err := readNumbered(set, "input")
	if err != nil {
		return fail(err)
	}
	wants, err := readNumbered(set, "output")
	if err != nil {
		return fail(err)
	}
	vars := make([]*autograd.Var, len(inputs))
	for i, t := range inputs {
		vars[i] = autograd.NoGrad(autograd.Constant(t))
	}
	outs, err := m.Run(vars...)
	if err != nil {
		return fail(err)
	}
	if len(outs) != len(wants) {
		return fail(fmt.Errorf("computed %d outputs, the test has %d", len(outs), len(wants)))
	}
	var maxAbs, maxRel float64
	for k, want := range wants {
		d := Compare(outs[k].Value, want, tol)
		if d.Problem != "" {
			return fail(fmt.Errorf("output %d %q: %s", k, m.Outputs[k].Name, d.Problem))
		}
		if !d.OK {
			return fail(fmt.Errorf("output %d %q: max_abs=%.3g max_rel=%.3g at index %d (got %g, want %g)",
				k, m.Outputs[k].Name, d.MaxAbs, d.MaxRel, d.Index, d.Got, d.Want))
		}
		maxAbs, maxRel = math.Max(maxAbs, d.MaxAbs), math.Max(maxRel, d.MaxRel)
	}
	return setResult{CaseResult: CaseResult{Status: Pass, Detail: fmt.Sprintf("max_abs=%.3g max_rel=%.3g", maxAbs, maxRel)}}
}

// OpTypes returns the distinct operators of the model's graph (after
// constant folding), in order of first use.
func (m *Model) OpTypes() []string {
	var ops []string
	seen := map[string]bool{}
	for _, n := range m.allNodes {
		op := n.GetOpType()
		if !seen[op] {
			seen[op] = true
			ops = append(ops, op)
		}
	}
	return ops
}

// SupportedOps lists the operators Import accepts, each with the opsets
// where its implementation changes and whether gradients flow through it.
func SupportedOps() []OpSupport {
	var out []OpSupport
	for op, vs := range registry {
		s := OpSupport{Op: op, Differentiable: true}
		for _, v := range vs {
			s.Versions = append(s.Versions, v.since)
			s.Differentiable = s.Differentiable && v.grad
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i].Op) < strings.ToLower(out[j].Op) })
	return out
}

// OpSupport describes one supported operator.
type OpSupport struct {
	// Op is the operator type.
	Op string
	// Versions are the opsets from which an implementation applies, in
	// increasing order (the first is the oldest opset supported).
	Versions []int
	// Differentiable tells whether gradients flow to its float inputs,
	// so that it can be part of a model being trained.
	Differentiable bool
}
