package onnx

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// The versions written by Export.
const (
	// ExportOpset is the ai.onnx opset version of exported models.
	ExportOpset = 17
	// ExportIRVersion is the ONNX IR version of exported models.
	ExportIRVersion = 8
)

// ExportOptions changes what Export writes. The zero value is the
// default: one input named "input" whose first dimension is the dynamic
// "batch", one output named "output".
type ExportOptions struct {
	// InputNames names the graph's inputs, one per example tensor
	// ["input"].
	InputNames []string
	// OutputName names the graph's output ["output"].
	OutputName string
	// StaticBatch keeps the example's batch size in the graph instead of
	// making the first dimension dynamic. Export then traces the model
	// once; use it for models whose operations depend on the batch size
	// in a way ONNX cannot express (a mean over the batch, say).
	StaticBatch bool
	// DocString is stored as the model's doc_string.
	DocString string
}

// ErrExport is wrapped by the errors of Export about a model it cannot
// translate (as opposed to errors writing the file).
var ErrExport = errors.New("onnx: export")

// ExportFile writes model to the ONNX file path as Export does (the zero
// ExportOptions are the defaults), atomically: the model is written to a
// temporary file in the same folder, which then replaces path, so a
// reader never sees a half-written file. It only replaces a regular
// file: when path is a device node, a FIFO, a symbolic link or a folder,
// it returns an error and changes nothing.
func ExportFile(path string, model layers.Layer, example []*tensor.Tensor, opts ExportOptions) (err error) {
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("onnx: export: refusing to replace %s: it is not a regular file (%v)", path, st.Mode().Type())
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("onnx: export %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = Export(model, example, f, opts); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("onnx: export %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("onnx: export %s: %w", path, err)
	}
	if err = os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("onnx: export %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("onnx: export %s: %w", path, err)
	}
	return nil
}

// Export writes model as an ONNX model (opset 17, IR version 8) to w.
//
// It traces the model: it puts the model in evaluation mode (restoring
// each layer's mode afterwards), runs one forward pass on the example
// inputs (one tensor, as layers.Layer takes one input; its first axis is
// the batch) wrapped as autograd leaves, and translates the recorded
// autograd operations (see autograd.OpInfo) into ONNX nodes: fused
// operations become Conv, Gemm or MatMul and Add, then the activation;
// batch normalisation in evaluation mode becomes BatchNormalization.
// Parameters are stored as initializers named by their Param.Name,
// buffers (BatchNorm's running statistics) by their layers.Buffer names,
// and other constants under generated names.
//
// Unless opts.StaticBatch is set, Export traces a second time with the
// example repeated twice along the batch axis and makes every size that
// changes dynamic: the input's first dimension is "batch", shape
// arguments (Reshape, Expand) copy (0) or infer (-1) such dimensions. A
// model whose graph or constants change with the batch size in a way
// ONNX cannot express is an error. Errors about the model wrap ErrExport
// and name the operation.
func Export(model layers.Layer, example []*tensor.Tensor, w io.Writer, opts ExportOptions) error {
	mp, err := exportProto(model, example, opts)
	if err != nil {
		return err
	}
	data, err := proto.Marshal(mp)
	if err != nil {
		return fmt.Errorf("onnx: export: %w", err)
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("onnx: export: %w", err)
	}
	return nil
}

// exportErrorf returns an error wrapping ErrExport.
func exportErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrExport}, args...)...)
}

// tracedRun is one forward pass of the model.
type tracedRun struct {
	input *autograd.Var
	out   *autograd.Var
	order []*autograd.Var       // recorded Vars, each after its inputs
	ops   []*autograd.OpInfo    // ops[i] describes order[i]
	index map[*autograd.Var]int // position in order
}

// exportProto builds the ModelProto of Export in four steps: check the
// example and the names, trace the model (twice for a dynamic batch),
// translate the traced operations into nodes, and wrap the graph into a
// model.
func exportProto(model layers.Layer, example []*tensor.Tensor, opts ExportOptions) (*onnxpb.ModelProto, error) {
	x, err := exportExample(model, example, opts)
	if err != nil {
		return nil, err
	}
	inName, outName, err := exportNames(opts)
	if err != nil {
		return nil, err
	}
	restore := exportEvalMode(model)
	defer restore()
	t1, t2, err := exportTraces(model, x, opts.StaticBatch)
	if err != nil {
		return nil, err
	}
	e := newExporter(model, t1, t2, inName, outName)
	if err := e.export(outName); err != nil {
		return nil, err
	}
	return e.model(inName, outName, opts.DocString)
}

// exportExample checks the model and its example inputs and returns the
// one input a layers.Layer takes.
func exportExample(model layers.Layer, example []*tensor.Tensor, opts ExportOptions) (*tensor.Tensor, error) {
	if model == nil {
		return nil, exportErrorf("nil model")
	}
	if len(example) != 1 {
		return nil, exportErrorf("a layers.Layer takes one input: expected 1 example tensor, found %d", len(example))
	}
	x := example[0]
	if x == nil {
		return nil, exportErrorf("example input 0 is nil")
	}
	if x.Rank() == 0 && !opts.StaticBatch {
		return nil, exportErrorf("example input has shape [] (no batch axis); set ExportOptions.StaticBatch to export it")
	}
	return x, nil
}

// exportNames returns the names of the graph's input and output.
func exportNames(opts ExportOptions) (inName, outName string, err error) {
	inName, outName = "input", "output"
	if len(opts.InputNames) > 0 {
		if len(opts.InputNames) != 1 || opts.InputNames[0] == "" {
			return "", "", exportErrorf("ExportOptions.InputNames: expected 1 non-empty name, found %q", opts.InputNames)
		}
		inName = opts.InputNames[0]
	}
	if opts.OutputName != "" {
		outName = opts.OutputName
	}
	if inName == outName {
		return "", "", exportErrorf("the input and the output are both named %q", inName)
	}
	return inName, outName, nil
}

// exportTraces traces the model on x and, unless static, on x repeated
// twice along the batch axis, checking that both traces recorded the
// same operations. With static, t2 is t1.
func exportTraces(model layers.Layer, x *tensor.Tensor, static bool) (t1, t2 *tracedRun, err error) {
	if t1, err = exportTrace(model, x); err != nil {
		return nil, nil, err
	}
	if static {
		return t1, t1, nil
	}
	if t2, err = exportTrace(model, tensor.Concat(0, x, x)); err != nil {
		return nil, nil, err
	}
	if err := exportSameStructure(t1, t2); err != nil {
		return nil, nil, err
	}
	return t1, t2, nil
}

// newExporter returns the exporter of the traces t1 and t2 of model,
// whose input and output the graph names inName and outName.
func newExporter(model layers.Layer, t1, t2 *tracedRun, inName, outName string) *exporter {
	e := &exporter{
		t1: t1, t2: t2, dynamic: t1 != t2, // one trace for a static batch
		graph:  &onnxpb.GraphProto{Name: ptr("hora")},
		names:  map[*autograd.Var]string{},
		used:   map[string]bool{inName: true, outName: true},
		params: map[*autograd.Var]string{},
		bufs:   map[*tensor.Tensor]string{},
		consts: map[*tensor.Tensor]string{},
		uses:   map[*autograd.Var]int{},
		batch:  t1.input.Value.Dim(0),
	}
	for _, p := range model.Parameters() {
		if p != nil && p.Var != nil {
			e.params[p.Var] = p.Name
		}
	}
	for _, b := range layers.BuffersOf(model) {
		e.bufs[b.Value] = b.Name
	}
	e.names[t1.input] = inName
	return e
}

// model wraps the exported graph into a model: it declares the graph's
// input and output (with the dynamic batch dimension) and the versions.
func (e *exporter) model(inName, outName, doc string) (*onnxpb.ModelProto, error) {
	in, err := e.valueInfo(inName, e.t1.input.Value, e.t2.input.Value)
	if err != nil {
		return nil, err
	}
	out, err := e.valueInfo(outName, e.t1.out.Value, e.t2.out.Value)
	if err != nil {
		return nil, err
	}
	e.graph.Input = []*onnxpb.ValueInfoProto{in}
	e.graph.Output = []*onnxpb.ValueInfoProto{out}
	mp := &onnxpb.ModelProto{
		IrVersion:    ptr(int64(ExportIRVersion)),
		ProducerName: ptr("hora"),
		Graph:        e.graph,
		OpsetImport:  []*onnxpb.OperatorSetIdProto{{Domain: ptr(""), Version: ptr(int64(ExportOpset))}},
	}
	if doc != "" {
		mp.DocString = ptr(doc)
	}
	return mp, nil
}

// exportEvalMode puts every ModeSetter of m in evaluation mode and returns the
// function that restores the modes found.
func exportEvalMode(m layers.Module) (restore func()) {
	type moded interface {
		layers.ModeSetter
		Training() bool
	}
	var saved []func()
	var walk func(m layers.Module)
	walk = func(m layers.Module) {
		if s, ok := m.(moded); ok {
			was := s.Training()
			saved = append(saved, func() { s.SetTraining(was) })
		} else if s, ok := m.(layers.ModeSetter); ok {
			// A mode setter that cannot report its mode was presumably
			// in training, the default of every layer.
			saved = append(saved, func() { s.SetTraining(true) })
		}
		if c, ok := m.(layers.Container); ok {
			for _, ch := range c.Children() {
				walk(ch)
			}
		}
	}
	walk(m)
	layers.Eval(m)
	return func() {
		for _, f := range saved {
			f()
		}
	}
}

// exportTrace runs the model on x (wrapped as a leaf) and collects the
// recorded operations.
func exportTrace(model layers.Layer, x *tensor.Tensor) (t *tracedRun, err error) {
	t = &tracedRun{input: autograd.Leaf(x), index: map[*autograd.Var]int{}}
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, exportErrorf("forward pass on an input of shape %v: %v", x.Shape(), r)
		}
	}()
	t.out = model.Forward(t.input)
	if t.out == nil {
		return nil, exportErrorf("the model's Forward returned nil")
	}
	// Depth-first post-order over the recorded operations, with an
	// explicit stack.
	type frame struct {
		v    *autograd.Var
		op   *autograd.OpInfo
		next int
	}
	visited := map[*autograd.Var]bool{}
	if op := t.out.Op(); op != nil {
		stack := []frame{{v: t.out, op: op}}
		visited[t.out] = true
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next < len(top.op.Inputs) {
				in := top.op.Inputs[top.next]
				top.next++
				if !visited[in] {
					if op := in.Op(); op != nil {
						visited[in] = true
						stack = append(stack, frame{v: in, op: op})
					}
				}
				continue
			}
			t.index[top.v] = len(t.order)
			t.order = append(t.order, top.v)
			t.ops = append(t.ops, top.op)
			stack = stack[:len(stack)-1]
		}
	}
	return t, nil
}

// exportSameStructure checks that two traces recorded the same operations on
// the same operands.
func exportSameStructure(t1, t2 *tracedRun) error {
	differ := func(what string) error {
		return exportErrorf("the model's graph changes with the batch size (%s between batch %d and %d); set ExportOptions.StaticBatch to export it for one batch size",
			what, t1.input.Value.Dim(0), t2.input.Value.Dim(0))
	}
	if len(t1.order) != len(t2.order) {
		return differ(fmt.Sprintf("%d operations against %d", len(t1.order), len(t2.order)))
	}
	for i, op1 := range t1.ops {
		op2 := t2.ops[i]
		if op1.Name != op2.Name || len(op1.Inputs) != len(op2.Inputs) {
			return differ(fmt.Sprintf("operation %d is %s against %s", i, exportOpLabel(op1), exportOpLabel(op2)))
		}
		for j, in1 := range op1.Inputs {
			in2 := op2.Inputs[j]
			k1, r1 := t1.index[in1]
			k2, r2 := t2.index[in2]
			switch {
			case r1 != r2 || (r1 && k1 != k2):
				return differ(fmt.Sprintf("input %d of operation %d (%s)", j, i, exportOpLabel(op1)))
			case !r1 && (in1 == t1.input) != (in2 == t2.input):
				return differ(fmt.Sprintf("input %d of operation %d (%s)", j, i, exportOpLabel(op1)))
			}
		}
	}
	if (t1.out.Op() == nil) != (t2.out.Op() == nil) {
		return differ("the output")
	}
	return nil
}

// exportOpLabel names an operation for messages.
func exportOpLabel(op *autograd.OpInfo) string {
	if op.Name != "" {
		return op.Name
	}
	if op.Recorder != "" {
		return "an undescribed operation recorded by " + op.Recorder
	}
	return "an undescribed operation"
}

// exporter builds the graph from two traces of the same structure (t2 is
// t1 when the batch is static).
type exporter struct {
	t1, t2  *tracedRun
	dynamic bool
	batch   int
	graph   *onnxpb.GraphProto
	names   map[*autograd.Var]string // values of trace 1 by ONNX name
	used    map[string]bool          // names taken
	params  map[*autograd.Var]string
	bufs    map[*tensor.Tensor]string
	consts  map[*tensor.Tensor]string // constants already written
	uses    map[*autograd.Var]int     // recorded uses of each Var of trace 1
	skip    map[int]bool              // operations folded into a later one
	mean    map[int]int               // MulScalar index -> the SumAxes it turns into a mean
	cur     int                       // index of the operation being exported
	curName string                    // its node name prefix
}

// export emits every operation of the traces, the last one writing
// outName.
func (e *exporter) export(outName string) error {
	t1 := e.t1
	for _, op := range t1.ops {
		for _, in := range op.Inputs {
			e.uses[in]++
		}
	}
	e.planMeans()
	if t1.out.Op() == nil {
		// The model returns a leaf: its input (an identity model such as
		// Dropout in evaluation) or a constant.
		src, err := e.leaf(t1.out, e.t2.out, "output")
		if err != nil {
			return err
		}
		e.node("Identity", "Identity", []string{src}, []string{outName})
		return nil
	}
	e.names[t1.out] = outName
	e.used[outName] = true
	for i, v := range t1.order {
		if e.skip[i] {
			continue
		}
		e.cur = i
		e.curName = fmt.Sprintf("%s_%d", t1.ops[i].Name, i)
		if _, ok := e.names[v]; !ok {
			e.names[v] = e.fresh(e.curName)
		}
		if err := e.op(i); err != nil {
			return fmt.Errorf("operation %d (%s, output shape %v): %w", i, exportOpLabel(t1.ops[i]), v.Shape(), err)
		}
	}
	return nil
}

// planMeans finds SumAxes operations followed only by a MulScalar that
// turns them into a mean, exported as one ReduceMean.
func (e *exporter) planMeans() {
	e.skip, e.mean = map[int]bool{}, map[int]int{}
	for i, op := range e.t1.ops {
		if op.Name != "MulScalar" {
			continue
		}
		in := op.Inputs[0]
		k, ok := e.t1.index[in]
		if !ok || e.t1.ops[k].Name != "SumAxes" || e.uses[in] != 1 || in == e.t1.out {
			continue
		}
		isMean := func(t *tracedRun) bool {
			sum, mul := t.ops[k], t.ops[i]
			n := float64(sum.Inputs[0].Value.Len()) / float64(t.order[k].Value.Len())
			s := mul.Attrs.(autograd.ScalarAttrs).Value
			return n > 0 && math.Abs(s*n-1) < 1e-12
		}
		if isMean(e.t1) && isMean(e.t2) {
			e.skip[k], e.mean[i] = true, k
		}
	}
}

// fresh returns an unused value or node name based on base.
func (e *exporter) fresh(base string) string {
	name := base
	for n := 1; e.used[name]; n++ {
		name = fmt.Sprintf("%s_%d", base, n)
	}
	e.used[name] = true
	return name
}

// node appends a node and returns its first output.
func (e *exporter) node(op, name string, inputs, outputs []string, attrs ...*onnxpb.AttributeProto) string {
	e.graph.Node = append(e.graph.Node, &onnxpb.NodeProto{
		OpType: ptr(op), Name: ptr(e.fresh(name)), Input: inputs, Output: outputs, Attribute: attrs,
	})
	return outputs[0]
}

// chain appends a node whose single output is a fresh value (or out when
// out is not empty) and returns that output.
func (e *exporter) chain(op, out string, inputs []string, attrs ...*onnxpb.AttributeProto) string {
	if out == "" {
		out = e.fresh(e.curName + "_" + op)
	}
	return e.node(op, e.curName+"_"+op, inputs, []string{out}, attrs...)
}

func exportAttrInt(name string, v int) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: ptr(name), Type: ptr(onnxpb.AttributeProto_INT), I: ptr(int64(v))}
}

func exportAttrInts(name string, vs ...int) *onnxpb.AttributeProto {
	a := &onnxpb.AttributeProto{Name: ptr(name), Type: ptr(onnxpb.AttributeProto_INTS)}
	for _, v := range vs {
		a.Ints = append(a.Ints, int64(v))
	}
	return a
}

func exportAttrFloat(name string, v float64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: ptr(name), Type: ptr(onnxpb.AttributeProto_FLOAT), F: ptr(float32(v))}
}

// initializer adds t as an initializer named name (made unique) of ONNX
// type dt and returns the name.
func (e *exporter) initializer(name string, t *tensor.Tensor, dt DataType) (string, error) {
	name = e.fresh(name)
	tp, err := TensorToProto(t.To(tensor.CPU()), name, dt)
	if err != nil {
		return "", err
	}
	e.graph.Initializer = append(e.graph.Initializer, tp)
	return name, nil
}

// ints adds a 1-D int64 constant and returns its name.
func (e *exporter) ints(what string, vals []int) (string, error) {
	return e.initializer(fmt.Sprintf("_%s_%s", e.curName, what), exportIntsTensor(vals), onnxpb.TensorProto_INT64)
}

func exportIntsTensor(vals []int) *tensor.Tensor {
	v := make([]int64, len(vals))
	for i, x := range vals {
		v[i] = int64(x)
	}
	return tensor.FromInt64(v, len(v))
}

// scalar adds a 0-D constant of the float type dt and returns its name.
func (e *exporter) scalar(what string, v float64, dt device.DType) (string, error) {
	t := tensor.FromFloat64([]float64{v}).Cast(dt)
	return e.initializer(fmt.Sprintf("_%s_%s", e.curName, what), t, protoTypeOf(dt))
}

// val returns the ONNX name of input j of the current operation, writing
// leaves (parameters, constants) as initializers the first time.
func (e *exporter) val(j int) (string, error) {
	in1 := e.t1.ops[e.cur].Inputs[j]
	if name, ok := e.names[in1]; ok {
		return name, nil
	}
	return e.leaf(in1, e.t2.ops[e.cur].Inputs[j], fmt.Sprintf("in%d", j))
}

// leaf returns the name of a Var without a recorded operation: the
// graph's input, a parameter, or a constant (the same in both traces).
func (e *exporter) leaf(v1, v2 *autograd.Var, what string) (string, error) {
	if name, ok := e.names[v1]; ok {
		return name, nil
	}
	if name, ok := e.params[v1]; ok {
		if !v1.Value.DType().IsFloat() {
			return "", exportErrorf("parameter %q has element type %v; parameters must be floating-point", name, v1.Value.DType())
		}
		if name == "" {
			name = "param"
		}
		n, err := e.initializer(name, v1.Value, protoTypeOf(v1.Value.DType()))
		if err != nil {
			return "", err
		}
		e.names[v1] = n
		return n, nil
	}
	if v1.RequiresGrad() {
		return "", exportErrorf("%s is a leaf that requires a gradient but is not a parameter of the model (parameters must be listed by Parameters)", what)
	}
	n, err := e.constant(v1.Value, v2.Value, what, protoTypeOf(v1.Value.DType()))
	if err != nil {
		return "", err
	}
	e.names[v1] = n
	return n, nil
}

// tensorRef returns the name of a tensor operand of the current
// operation (indices, a condition, statistics): the graph's input, a
// buffer, or a constant written as type dt. Tensor operands computed by
// the model from its input (indices reshaped by autograd.Reshape, say)
// are not on the tape as such: they show up as constants that change
// with the batch, an error.
func (e *exporter) tensorRef(t1, t2 *tensor.Tensor, what string, dt DataType) (string, error) {
	if t1 == e.t1.input.Value {
		if t2 != e.t2.input.Value {
			return "", exportErrorf("%s is the model's input in one trace only", what)
		}
		return e.names[e.t1.input], nil
	}
	if name, ok := e.bufs[t1]; ok {
		if name, ok := e.consts[t1]; ok {
			return name, nil
		}
		n, err := e.initializer(name, t1, dt)
		if err != nil {
			return "", err
		}
		e.consts[t1] = n
		return n, nil
	}
	return e.constant(t1, t2, what, dt)
}

// constant writes a constant found in both traces, which must agree.
func (e *exporter) constant(t1, t2 *tensor.Tensor, what string, dt DataType) (string, error) {
	if name, ok := e.consts[t1]; ok {
		return name, nil
	}
	if t1 != t2 {
		if !slices.Equal(t1.Shape(), t2.Shape()) {
			return "", exportErrorf("constant %s has shape %v at batch %d and %v at batch %d: it depends on the batch size (set ExportOptions.StaticBatch)",
				what, t1.Shape(), e.batch, t2.Shape(), 2*e.batch)
		}
		a, b := t1.Cast(device.Float64).Contiguous().Float64s(), t2.Cast(device.Float64).Contiguous().Float64s()
		if !slices.Equal(a, b) {
			return "", exportErrorf("constant %s (shape %v) differs between the two traces: it depends on the input's values or batch size, which ONNX cannot express", what, t1.Shape())
		}
	}
	n, err := e.initializer(fmt.Sprintf("_%s_%s", e.curName, what), t1, dt)
	if err != nil {
		return "", err
	}
	e.consts[t1] = n
	return n, nil
}

// valueInfo describes a graph input or output, the dimensions that
// differ between the traces dynamic.
func (e *exporter) valueInfo(name string, v1, v2 *tensor.Tensor) (*onnxpb.ValueInfoProto, error) {
	s1, s2 := v1.Shape(), v2.Shape()
	if len(s1) != len(s2) {
		return nil, exportErrorf("%s has rank %d at batch %d and %d at batch %d", name, len(s1), e.batch, len(s2), 2*e.batch)
	}
	shape := &onnxpb.TensorShapeProto{}
	for i, d := range s1 {
		dim := &onnxpb.TensorShapeProto_Dimension{}
		switch {
		case d == s2[i]:
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}
		case d == e.batch && s2[i] == 2*e.batch:
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}
		}
		// Other dynamic sizes stay unnamed.
		shape.Dim = append(shape.Dim, dim)
	}
	elem := int32(protoTypeOf(v1.DType()))
	return &onnxpb.ValueInfoProto{
		Name: ptr(name),
		Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: &elem, Shape: shape,
		}}},
	}, nil
}

// attrsAgree checks that the options of the current operation are the
// same in both traces (tensors are compared where they are used).
func (e *exporter) attrsAgree() error {
	a1, a2 := e.t1.ops[e.cur].Attrs, e.t2.ops[e.cur].Attrs
	switch a1.(type) {
	case autograd.WhereAttrs, autograd.IndexAttrs:
		return nil
	case autograd.NormAttrs:
		n1, n2 := a1.(autograd.NormAttrs), a2.(autograd.NormAttrs)
		if n1.Eps == n2.Eps {
			return nil
		}
	default:
		if reflect.DeepEqual(a1, a2) {
			return nil
		}
	}
	return exportErrorf("its options change with the batch size (%+v at batch %d, %+v at batch %d); set ExportOptions.StaticBatch to export it for one batch size",
		a1, e.batch, a2, 2*e.batch)
}

// op emits the nodes of operation i. A SumAxes and MulScalar pair that
// planMeans found is one ReduceMean; any other operation has its
// attributes checked against the second trace, its inputs named, and is
// translated.
func (e *exporter) op(i int) error {
	out := e.names[e.t1.order[i]]
	if k, ok := e.mean[i]; ok {
		return e.reduceMean(k, out)
	}
	info := e.t1.ops[i]
	switch info.Name {
	case "Reshape", "Expand", "Slice":
		// Their attributes may change with the batch; they check them.
	default:
		if err := e.attrsAgree(); err != nil {
			return err
		}
	}
	ins, err := e.inputNames()
	if err != nil {
		return err
	}
	return e.translate(info, ins, out)
}

// inputNames returns the ONNX names of the current operation's inputs,
// writing the leaves among them as initializers (see val).
func (e *exporter) inputNames() ([]string, error) {
	ins := make([]string, len(e.t1.ops[e.cur].Inputs))
	for j := range ins {
		name, err := e.val(j)
		if err != nil {
			return nil, err
		}
		ins[j] = name
	}
	return ins, nil
}

// translate emits the ONNX nodes of the current operation, info, whose
// inputs are named ins, the last node writing out. Operations with one
// ONNX counterpart are emitted here; the others have a method each.
func (e *exporter) translate(info *autograd.OpInfo, ins []string, out string) error {
	switch info.Name {
	case "Add", "Sub", "Mul", "Div", "Pow", "Neg", "Exp", "Log", "Sqrt", "Abs", "Tanh", "Sigmoid", "Relu", "MatMul":
		e.chain(info.Name, out, ins)
	case "AddAct":
		a := info.Attrs.(autograd.ActAttrs)
		if a.Act == device.ActNone {
			e.chain("Add", out, ins)
			return nil
		}
		_, err := exportAct(e, a.Act, e.chain("Add", "", ins), out, info.Inputs[0].Value.DType())
		return err
	case "Maximum":
		e.chain("Max", out, ins)
	case "Minimum":
		e.chain("Min", out, ins)
	case "AddScalar", "MulScalar", "PowScalar":
		return e.scalarOp(info, ins, out)
	case "Clamp":
		return e.clamp(info, ins, out)
	case "LeakyRelu":
		e.chain("LeakyRelu", out, ins, exportAttrFloat("alpha", info.Attrs.(autograd.ScalarAttrs).Value))
	case "GELU":
		return e.gelu(ins, out)
	case "SiLU":
		s := e.chain("Sigmoid", "", ins)
		e.chain("Mul", out, []string{ins[0], s})
	case "Where":
		return e.where(info, ins, out)
	case "Linear":
		return e.linear(info, ins, out)
	case "Conv2D", "Conv2DMaxPool":
		return e.conv(info, ins, out)
	case "MaxPool2D":
		e.chain("MaxPool", out, ins, exportPoolAttrs(info.Attrs.(tensor.PoolOptions))...)
	case "AvgPool2D":
		o := info.Attrs.(tensor.PoolOptions)
		e.chain("AveragePool", out, ins, append(exportPoolAttrs(o), exportAttrInt("count_include_pad", exportB2I(o.CountPad)))...)
	case "BatchNormInference":
		return e.batchNormInference(info, ins, out)
	case "BatchNorm":
		return e.batchNorm(info, ins, out)
	case "LayerNorm":
		a := info.Attrs.(autograd.LayerNormAttrs)
		e.chain("LayerNormalization", out, ins, exportAttrInt("axis", a.Axis), exportAttrFloat("epsilon", a.Eps))
	case "Reshape":
		return e.reshape(ins[0], out)
	case "Flatten":
		return e.flatten(info, ins, out)
	case "Permute", "Transpose":
		e.chain("Transpose", out, ins, exportAttrInts("perm", info.Attrs.(autograd.PermuteAttrs).Perm...))
	case "Slice":
		return e.slice(ins[0], out)
	case "Expand":
		return e.expand(ins[0], out)
	case "Squeeze", "Unsqueeze":
		return e.squeeze(info, ins, out)
	case "Concat", "Softmax", "LogSoftmax":
		e.chain(info.Name, out, ins, exportAttrInt("axis", info.Attrs.(autograd.AxisAttrs).Axis))
	case "SumAxes":
		return e.reduceSum(info, ins, out)
	case "Max", "Min":
		a := info.Attrs.(autograd.AxesAttrs)
		e.chain("Reduce"+info.Name, out, ins, exportAttrInts("axes", a.Axes...), exportAttrInt("keepdims", exportB2I(a.Keep)))
	case "Gather", "IndexSelect", "Embedding":
		return e.gather(info, ins, out)
	case "SoftmaxCrossEntropy":
		return exportErrorf("%w: SoftmaxCrossEntropy is a loss; export the model without it", ErrUnsupported)
	default:
		return exportErrorf("%w: no ONNX translation for %s", ErrUnsupported, exportOpLabel(info))
	}
	return nil
}

// scalarOp emits AddScalar, MulScalar or PowScalar as Add, Mul or Pow
// with a scalar initializer of the output's type.
func (e *exporter) scalarOp(info *autograd.OpInfo, ins []string, out string) error {
	dt := e.t1.order[e.cur].Value.DType()
	s, err := e.scalar("scalar", info.Attrs.(autograd.ScalarAttrs).Value, dt)
	if err != nil {
		return err
	}
	op := map[string]string{"AddScalar": "Add", "MulScalar": "Mul", "PowScalar": "Pow"}[info.Name]
	e.chain(op, out, []string{ins[0], s})
	return nil
}

// clamp emits Clamp as Clip with scalar bounds of the output's type; an
// infinite bound is left out (Clip's min and max are optional inputs).
func (e *exporter) clamp(info *autograd.OpInfo, ins []string, out string) error {
	a := info.Attrs.(autograd.ClampAttrs)
	dt := e.t1.order[e.cur].Value.DType()
	inputs := []string{ins[0], "", ""}
	for k, b := range []struct {
		what  string
		v     float64
		unset bool
	}{{"min", a.Lo, math.IsInf(a.Lo, -1)}, {"max", a.Hi, math.IsInf(a.Hi, 1)}} {
		if b.unset {
			continue
		}
		s, err := e.scalar(b.what, b.v, dt)
		if err != nil {
			return err
		}
		inputs[k+1] = s
	}
	for len(inputs) > 1 && inputs[len(inputs)-1] == "" {
		inputs = inputs[:len(inputs)-1]
	}
	e.chain("Clip", out, inputs)
	return nil
}

// gelu emits GELU as x · (erf(x·(1/√2)) + 1) · 0.5, in the order Hora
// computes it.
func (e *exporter) gelu(ins []string, out string) error {
	dt := e.t1.order[e.cur].Value.DType()
	c, err := e.scalar("inv_sqrt2", 1/math.Sqrt2, dt)
	if err != nil {
		return err
	}
	one, err := e.scalar("one", 1, dt)
	if err != nil {
		return err
	}
	half, err := e.scalar("half", 0.5, dt)
	if err != nil {
		return err
	}
	h := e.chain("Mul", "", []string{ins[0], c})
	h = e.chain("Erf", "", []string{h})
	h = e.chain("Add", "", []string{h, one})
	h = e.chain("Mul", "", []string{h, half})
	e.chain("Mul", out, []string{ins[0], h})
	return nil
}

// where emits Where, its condition a bool tensor: a constant, or the
// model's input cast to bool.
func (e *exporter) where(info *autograd.OpInfo, ins []string, out string) error {
	c := info.Attrs.(autograd.WhereAttrs).Cond
	cond, err := e.tensorRef(c, e.t2.ops[e.cur].Attrs.(autograd.WhereAttrs).Cond, "cond", onnxpb.TensorProto_BOOL)
	if err != nil {
		return err
	}
	if c == e.t1.input.Value {
		cond = e.chain("Cast", "", []string{cond}, exportAttrInt("to", int(onnxpb.TensorProto_BOOL)))
	}
	e.chain("Where", out, []string{cond, ins[0], ins[1]})
	return nil
}

// flatten emits Flatten from axis 1 of an input of rank 2 or more, and a
// Reshape to [d0, …, d(axis-1), -1] otherwise.
func (e *exporter) flatten(info *autograd.OpInfo, ins []string, out string) error {
	ax := info.Attrs.(autograd.AxisAttrs).Axis
	if ax == 1 && info.Inputs[0].Value.Rank() >= 2 {
		e.chain("Flatten", out, ins, exportAttrInt("axis", 1))
		return nil
	}
	shape := make([]int, ax+1)
	shape[ax] = -1
	s, err := e.ints("shape", shape)
	if err != nil {
		return err
	}
	e.chain("Reshape", out, []string{ins[0], s})
	return nil
}

// squeeze emits Squeeze or Unsqueeze with its axes as an input.
func (e *exporter) squeeze(info *autograd.OpInfo, ins []string, out string) error {
	ax, err := e.ints("axes", []int{info.Attrs.(autograd.AxisAttrs).Axis})
	if err != nil {
		return err
	}
	e.chain(info.Name, out, []string{ins[0], ax})
	return nil
}

// reduceSum emits SumAxes as ReduceSum, its axes (when not all) as an
// input.
func (e *exporter) reduceSum(info *autograd.OpInfo, ins []string, out string) error {
	a := info.Attrs.(autograd.AxesAttrs)
	inputs := ins
	if a.Axes != nil {
		ax, err := e.ints("axes", a.Axes)
		if err != nil {
			return err
		}
		inputs = []string{ins[0], ax}
	}
	e.chain("ReduceSum", out, inputs, exportAttrInt("keepdims", exportB2I(a.Keep)))
	return nil
}

// gather emits Gather (IndexSelect, Embedding) or GatherElements
// (autograd's Gather), the indices a constant or the model's input.
func (e *exporter) gather(info *autograd.OpInfo, ins []string, out string) error {
	a1, a2 := info.Attrs.(autograd.IndexAttrs), e.t2.ops[e.cur].Attrs.(autograd.IndexAttrs)
	idx, err := e.tensorRef(a1.Index, a2.Index, "indices", onnxpb.TensorProto_INT64)
	if err != nil {
		return err
	}
	op := "Gather"
	if info.Name == "Gather" {
		op = "GatherElements"
	}
	e.chain(op, out, []string{ins[0], idx}, exportAttrInt("axis", a1.Axis))
	return nil
}

func exportB2I(b bool) int {
	if b {
		return 1
	}
	return 0
}

func exportPoolAttrs(o tensor.PoolOptions) []*onnxpb.AttributeProto {
	sh, sw := o.StrideH, o.StrideW
	if sh == 0 {
		sh = o.KH
	}
	if sw == 0 {
		sw = o.KW
	}
	return []*onnxpb.AttributeProto{
		exportAttrInts("kernel_shape", o.KH, o.KW),
		exportAttrInts("strides", sh, sw),
		exportAttrInts("pads", o.PadH, o.PadW, o.PadH, o.PadW),
	}
}

// exportAct emits the fused activation a from in to out: Relu, or Clip
// with scalar bounds of type dt for ReLU6. It returns the output's name.
func exportAct(e *exporter, a device.Activation, in, out string, dt device.DType) (string, error) {
	switch a {
	case device.ActReLU:
		return e.chain("Relu", out, []string{in}), nil
	case device.ActReLU6:
		lo, err := e.initializer(fmt.Sprintf("_%s_min", e.curName), tensor.Full(tensor.CPU(), dt, 0), protoTypeOf(dt))
		if err != nil {
			return "", err
		}
		hi, err := e.initializer(fmt.Sprintf("_%s_max", e.curName), tensor.Full(tensor.CPU(), dt, 6), protoTypeOf(dt))
		if err != nil {
			return "", err
		}
		return e.chain("Clip", out, []string{in, lo, hi}), nil
	}
	return "", exportErrorf("%w: fused activation %v", ErrUnsupported, a)
}

// linear emits Gemm (2-D input) or MatMul and Add, then the activation.
func (e *exporter) linear(info *autograd.OpInfo, ins []string, out string) error {
	a := info.Attrs.(autograd.LinearAttrs)
	target := out
	if a.Act != device.ActNone {
		target = ""
	}
	var y string
	if info.Inputs[0].Value.Rank() == 2 {
		y = e.chain("Gemm", target, ins, exportAttrInt("transB", 1))
	} else {
		wt := e.chain("Transpose", "", []string{ins[1]}, exportAttrInts("perm", 1, 0))
		mmOut := target
		if len(ins) == 3 {
			mmOut = ""
		}
		y = e.chain("MatMul", mmOut, []string{ins[0], wt})
		if len(ins) == 3 {
			y = e.chain("Add", target, []string{y, ins[2]})
		}
	}
	if a.Act == device.ActNone {
		return nil
	}
	_, err := exportAct(e, a.Act, y, out, info.Inputs[0].Value.DType())
	return err
}

// conv emits Conv, the residual's Add (autograd.Conv2DAddAct), the
// activation and, for Conv2DMaxPool, MaxPool.
func (e *exporter) conv(info *autograd.OpInfo, ins []string, out string) error {
	a := info.Attrs.(autograd.ConvAttrs)
	var residual string
	if a.Residual {
		ins, residual = ins[:len(ins)-1], ins[len(ins)-1]
	}
	o := a.Conv
	w := info.Inputs[1].Value
	one := func(v int) int {
		if v == 0 {
			return 1
		}
		return v
	}
	pool := info.Name == "Conv2DMaxPool"
	target := out
	if a.Act != device.ActNone || pool || a.Residual {
		target = ""
	}
	y := e.chain("Conv", target, ins,
		exportAttrInts("kernel_shape", w.Dim(2), w.Dim(3)),
		exportAttrInts("strides", one(o.StrideH), one(o.StrideW)),
		exportAttrInts("pads", o.PadH, o.PadW, o.PadH, o.PadW),
		exportAttrInts("dilations", one(o.DilH), one(o.DilW)),
		exportAttrInt("group", one(o.Groups)))
	if a.Residual {
		target = out
		if a.Act != device.ActNone || pool {
			target = ""
		}
		y = e.chain("Add", target, []string{y, residual})
	}
	if a.Act != device.ActNone {
		t := out
		if pool {
			t = ""
		}
		var err error
		if y, err = exportAct(e, a.Act, y, t, info.Inputs[0].Value.DType()); err != nil {
			return err
		}
	}
	if pool {
		e.chain("MaxPool", out, []string{y}, exportPoolAttrs(a.Pool)...)
	}
	return nil
}

// batchNormInference emits BatchNormalization with the given statistics.
func (e *exporter) batchNormInference(info *autograd.OpInfo, ins []string, out string) error {
	a1, a2 := info.Attrs.(autograd.NormAttrs), e.t2.ops[e.cur].Attrs.(autograd.NormAttrs)
	dt := info.Inputs[0].Value.DType()
	pt := protoTypeOf(dt)
	mean, err := e.tensorRef(a1.Mean, a2.Mean, "mean", pt)
	if err != nil {
		return err
	}
	variance, err := e.tensorRef(a1.Variance, a2.Variance, "var", pt)
	if err != nil {
		return err
	}
	scale, bias := "", ""
	if len(ins) == 3 {
		scale, bias = ins[1], ins[2]
	} else {
		c := info.Inputs[0].Value.Dim(1)
		if scale, err = e.initializer("_"+e.curName+"_scale", tensor.Full(tensor.CPU(), dt, 1, c), pt); err != nil {
			return err
		}
		if bias, err = e.initializer("_"+e.curName+"_bias", tensor.Full(tensor.CPU(), dt, 0, c), pt); err != nil {
			return err
		}
	}
	e.chain("BatchNormalization", out, []string{ins[0], scale, bias, mean, variance}, exportAttrFloat("epsilon", a1.Eps))
	return nil
}

// batchNorm emits normalisation with the batch's statistics, composed:
// (x - mean) / √(var + eps) · weight + bias.
func (e *exporter) batchNorm(info *autograd.OpInfo, ins []string, out string) error {
	x := info.Inputs[0].Value
	dt := x.DType()
	axes := []int{0}
	bshape := []int{1, x.Dim(1)}
	for i := 2; i < x.Rank(); i++ {
		axes = append(axes, i)
		bshape = append(bshape, 1)
	}
	attrs := info.Attrs.(autograd.NormAttrs)
	eps, err := e.scalar("eps", attrs.Eps, dt)
	if err != nil {
		return err
	}
	final := out // the activation's input when BatchNormAct has one
	if attrs.Act != device.ActNone {
		final = ""
	}
	mean := e.chain("ReduceMean", "", ins[:1], exportAttrInts("axes", axes...), exportAttrInt("keepdims", 1))
	d := e.chain("Sub", "", []string{ins[0], mean})
	sq := e.chain("Mul", "", []string{d, d})
	v := e.chain("ReduceMean", "", []string{sq}, exportAttrInts("axes", axes...), exportAttrInt("keepdims", 1))
	s := e.chain("Sqrt", "", []string{e.chain("Add", "", []string{v, eps})})
	var y string
	if len(ins) == 1 {
		y = e.chain("Div", final, []string{d, s})
	} else {
		xhat := e.chain("Div", "", []string{d, s})
		shape, err := e.ints("bshape", bshape)
		if err != nil {
			return err
		}
		w := e.chain("Reshape", "", []string{ins[1], shape})
		b := e.chain("Reshape", "", []string{ins[2], shape})
		y = e.chain("Add", final, []string{e.chain("Mul", "", []string{xhat, w}), b})
	}
	if attrs.Act == device.ActNone {
		return nil
	}
	_, err = exportAct(e, attrs.Act, y, out, dt)
	return err
}

// reduceMean emits the SumAxes operation k and the MulScalar that
// follows it as one ReduceMean (GlobalAveragePool over the spatial axes
// of a 4-D input).
func (e *exporter) reduceMean(k int, out string) error {
	saved := e.cur
	e.cur = k
	in, err := e.val(0)
	e.cur = saved
	if err != nil {
		return err
	}
	sum := e.t1.ops[k]
	a := sum.Attrs.(autograd.AxesAttrs)
	x := sum.Inputs[0].Value
	if a.Keep && x.Rank() == 4 && slices.Equal(a.Axes, []int{2, 3}) {
		e.chain("GlobalAveragePool", out, []string{in})
		return nil
	}
	attrs := []*onnxpb.AttributeProto{exportAttrInt("keepdims", exportB2I(a.Keep))}
	if a.Axes != nil {
		attrs = append(attrs, exportAttrInts("axes", a.Axes...))
	}
	e.chain("ReduceMean", out, []string{in}, attrs...)
	return nil
}

// dynamicShape returns the shape argument of a Reshape from in to out,
// given both traces: sizes that change with the batch are copied from
// the input (0) when the input has them at the same position, inferred
// (-1) otherwise (once at most). allowZero tells that a literal 0 size
// must be kept as such.
func (e *exporter) dynamicShape(in1, in2, out1, out2 []int) (shape []int, allowZero bool, err error) {
	if len(out1) != len(out2) {
		return nil, false, exportErrorf("its output has rank %d at batch %d and %d at batch %d", len(out1), e.batch, len(out2), 2*e.batch)
	}
	shape = make([]int, len(out1))
	inferred, copied := false, false
	for i, d := range out1 {
		switch {
		case d == out2[i]:
			shape[i] = d
			allowZero = allowZero || d == 0
		case i < len(in1) && i < len(in2) && in1[i] == d && in2[i] == out2[i]:
			shape[i], copied = 0, true
		case !inferred:
			shape[i], inferred = -1, true
		default:
			return nil, false, exportErrorf("its target shape %v (%v at batch %d) has several sizes that change with the batch but are not the input's (%v): ONNX Reshape cannot express it",
				out1, out2, 2*e.batch, in1)
		}
	}
	if allowZero && copied {
		return nil, false, exportErrorf("its target shape %v has both empty axes and sizes copied from the input: ONNX Reshape cannot express it", out1)
	}
	return shape, allowZero, nil
}

// reshape emits Reshape to the current operation's output shape.
func (e *exporter) reshape(in, out string) error {
	op1, op2 := e.t1.ops[e.cur], e.t2.ops[e.cur]
	shape, allowZero, err := e.dynamicShape(op1.Inputs[0].Shape(), op2.Inputs[0].Shape(), e.t1.order[e.cur].Shape(), e.t2.order[e.cur].Shape())
	if err != nil {
		return err
	}
	s, err := e.ints("shape", shape)
	if err != nil {
		return err
	}
	var attrs []*onnxpb.AttributeProto
	if allowZero {
		attrs = append(attrs, exportAttrInt("allowzero", 1))
	}
	e.chain("Reshape", out, []string{in, s}, attrs...)
	return nil
}

// expand emits Expand to the current operation's output shape; sizes
// that change with the batch must be the input's (written as 1).
func (e *exporter) expand(in, out string) error {
	in1, in2 := e.t1.ops[e.cur].Inputs[0].Shape(), e.t2.ops[e.cur].Inputs[0].Shape()
	out1, out2 := e.t1.order[e.cur].Shape(), e.t2.order[e.cur].Shape()
	if len(out1) != len(out2) || len(in1) != len(in2) {
		return exportErrorf("its ranks change with the batch size")
	}
	shape := slices.Clone(out1)
	for i := range out1 {
		if out1[i] == out2[i] {
			continue
		}
		j := i - (len(out1) - len(in1)) // the aligned input axis
		if j < 0 || in1[j] != out1[i] || in2[j] != out2[i] {
			return exportErrorf("its target shape %v (%v at batch %d) has a size that changes with the batch but is not the input's (%v): ONNX Expand cannot express it",
				out1, out2, 2*e.batch, in1)
		}
		shape[i] = 1
	}
	s, err := e.ints("shape", shape)
	if err != nil {
		return err
	}
	e.chain("Expand", out, []string{in, s})
	return nil
}

// slice emits Slice; an end that changes with the batch must be the end
// of the axis in both traces.
func (e *exporter) slice(in, out string) error {
	a1, a2 := e.t1.ops[e.cur].Attrs.(autograd.SliceAttrs), e.t2.ops[e.cur].Attrs.(autograd.SliceAttrs)
	end := a1.End
	if a1 != a2 {
		d1 := e.t1.ops[e.cur].Inputs[0].Value.Dim(a1.Axis)
		d2 := e.t2.ops[e.cur].Inputs[0].Value.Dim(a2.Axis)
		if a1.Axis != a2.Axis || a1.Start != a2.Start || a1.End != d1 || a2.End != d2 {
			return exportErrorf("its range changes with the batch size ([%d:%d] of axis %d at batch %d, [%d:%d] of axis %d at batch %d); set ExportOptions.StaticBatch to export it for one batch size",
				a1.Start, a1.End, a1.Axis, e.batch, a2.Start, a2.End, a2.Axis, 2*e.batch)
		}
		end = math.MaxInt64
	}
	starts, err := e.ints("starts", []int{a1.Start})
	if err != nil {
		return err
	}
	ends, err := e.ints("ends", []int{end})
	if err != nil {
		return err
	}
	axes, err := e.ints("axes", []int{a1.Axis})
	if err != nil {
		return err
	}
	e.chain("Slice", out, []string{in, starts, ends, axes})
	return nil
}
