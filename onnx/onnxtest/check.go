package onnxtest

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/tensor"
)

// Status is the outcome of one data set of a case.
type Status int

// The outcomes.
const (
	Pass        Status = iota // every output within tolerance
	Fail                      // an output differs, or the model or the run failed
	Unsupported               // the model needs something Hora does not implement
)

// String returns "PASS", "FAIL" or "UNSUPPORTED".
func (s Status) String() string {
	return [...]string{"PASS", "FAIL", "UNSUPPORTED"}[s]
}

// Result is the outcome of one data set of an ONNX backend-test case, or
// of the whole case when its model does not load.
type Result struct {
	// Case is the case folder's name, with "/test_data_set_N" when the
	// result is about one data set.
	Case string
	// Status tells whether the data set passed, failed or needs what
	// Hora does not implement.
	Status Status
	// Ops are the operators the model uses (the failing or unsupported
	// one first, when known).
	Ops []string
	// Detail explains a failure or what is unsupported, or gives the
	// largest differences of a pass.
	Detail string
	// Err is the error behind a failure or an unsupported result, when
	// there is one (errors.Is(Err, onnx.ErrBadFile): a file of the case
	// cannot be used); nil otherwise.
	Err error
}

// String formats the result as onnxcheck prints it: status, case and
// detail.
func (r Result) String() string {
	return fmt.Sprintf("%s %s %s", r.Status, r.Case, r.Detail)
}

// Cases returns dir when it is a case (it holds model.onnx), or else the
// cases directly inside it, in the order of their names.
func Cases(dir string) ([]string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a folder: a test case is a folder holding model.onnx and test_data_set_N folders", dir)
	}
	if isCase(dir) {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var cases []string
	for _, e := range entries {
		if sub := filepath.Join(dir, e.Name()); e.IsDir() && isCase(sub) {
			cases = append(cases, sub)
		}
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("%s: no model.onnx, and no folders with one", dir)
	}
	return cases, nil
}

// isCase reports whether dir holds a model.onnx.
func isCase(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "model.onnx"))
	return err == nil
}

// Check runs the case in dir: it loads model.onnx, runs it on the inputs
// of every data set (test_data_set_N/input_K.pb) and compares each output
// with its reference (output_K.pb). It returns one result per data set,
// or a single result for the case when the model does not load.
func Check(dir string, tol Tolerance) []Result {
	name := filepath.Base(dir)
	m, err := onnx.Load(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return []Result{failed(name, nil, err)}
	}
	ops := m.OpTypes()
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	sort.Strings(sets)
	if len(sets) == 0 {
		return []Result{{Case: name, Status: Fail, Ops: ops, Detail: "no test_data_set_N folders"}}
	}
	results := make([]Result, 0, len(sets))
	for _, set := range sets {
		setName := name + "/" + filepath.Base(set)
		detail, err := checkDataSet(m, set, tol)
		if err != nil {
			results = append(results, failed(setName, ops, err))
			continue
		}
		results = append(results, Result{Case: setName, Status: Pass, Ops: ops, Detail: detail})
	}
	return results
}

// failed is the result of a case or data set that ended with err:
// Unsupported when err wraps onnx.ErrUnsupported, Fail otherwise. When
// err is about a node, its operator goes first in Ops.
func failed(name string, ops []string, err error) Result {
	r := Result{Case: name, Status: Fail, Ops: ops, Detail: err.Error(), Err: err}
	if errors.Is(err, onnx.ErrUnsupported) {
		r.Status = Unsupported
	}
	var ne *onnx.NodeError
	if errors.As(err, &ne) {
		r.Ops = append([]string{ne.Op}, ops...)
	}
	return r
}

// checkDataSet runs m on the inputs of the data set folder set and
// compares the outputs with the references. It returns the largest
// differences ("max_abs=… max_rel=…") when every output is close, and an
// error describing the first one that is not otherwise.
func checkDataSet(m *onnx.Model, set string, tol Tolerance) (string, error) {
	inputs, err := readTensors(set, "input")
	if err != nil {
		return "", err
	}
	wants, err := readTensors(set, "output")
	if err != nil {
		return "", err
	}
	vars := make([]*autograd.Var, len(inputs))
	for i, t := range inputs {
		vars[i] = autograd.NoGrad(autograd.Constant(t))
	}
	outs, err := m.Run(vars...)
	if err != nil {
		return "", err
	}
	if len(outs) != len(wants) {
		return "", fmt.Errorf("computed %d outputs, the test has %d", len(outs), len(wants))
	}
	var maxAbs, maxRel float64
	for k, want := range wants {
		d := Compare(outs[k].Value, want, tol)
		if d.Problem != "" {
			return "", fmt.Errorf("output %d %q: %s", k, m.Outputs[k].Name, d.Problem)
		}
		if !d.OK {
			return "", fmt.Errorf("output %d %q: max_abs=%.3g max_rel=%.3g at index %d (got %g, want %g)",
				k, m.Outputs[k].Name, d.MaxAbs, d.MaxRel, d.Index, d.Got, d.Want)
		}
		maxAbs, maxRel = math.Max(maxAbs, d.MaxAbs), math.Max(maxRel, d.MaxRel)
	}
	return fmt.Sprintf("max_abs=%.3g max_rel=%.3g", maxAbs, maxRel), nil
}

// readTensors reads the tensors prefix_0.pb, prefix_1.pb, … of dir, up to
// the first number that has no file.
func readTensors(dir, prefix string) ([]*tensor.Tensor, error) {
	var out []*tensor.Tensor
	for k := 0; ; k++ {
		path := filepath.Join(dir, fmt.Sprintf("%s_%d.pb", prefix, k))
		if _, err := os.Stat(path); err != nil {
			return out, nil
		}
		t, err := onnx.ReadTensor(path)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
}
