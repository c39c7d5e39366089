package onnx

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// Values inside a graph are *autograd.Var. ONNX element types map onto
// Hora's: FLOAT is device.Float32, DOUBLE is device.Float64, and every
// integer type and BOOL is device.Int64 (bools as 0 and 1). FLOAT16,
// BFLOAT16, STRING and the complex types are not supported.

// opFunc computes one node: it reads the node's inputs with c.inputs,
// which checks them against the operator's declaration, and returns one
// Var per output the node declares (c.NumOutputs()), or fewer when the
// trailing ones are optional and unused.
type opFunc func(c *nodeCtx) ([]*autograd.Var, error)

// opVersion is one implementation of an operator, valid from opset Since
// until the next registered version.
type opVersion struct {
	since int
	run   opFunc
	// grad tells whether gradients flow from the outputs to the
	// floating-point inputs (the op is built from autograd operations).
	grad bool
}

// registry holds every operator of the ai.onnx domain, each with its
// versions sorted by since.
var registry = map[string][]opVersion{}

// register adds the implementation of op valid from opset since. grad
// tells whether the op is differentiable (see opVersion). Files of this
// package call it from init.
func register(op string, since int, grad bool, run opFunc) {
	for _, v := range registry[op] {
		if v.since == since {
			panic(fmt.Sprintf("onnx: %s opset %d registered twice", op, since))
		}
	}
	registry[op] = append(registry[op], opVersion{since: since, run: run, grad: grad})
	sort.Slice(registry[op], func(i, j int) bool { return registry[op][i].since < registry[op][j].since })
}

// lookup returns the implementation of op for a model of the given opset:
// the registered version with the largest since not above opset.
func lookup(op string, opset int) (opVersion, bool) {
	vs := registry[op]
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].since <= opset {
			return vs[i], true
		}
	}
	return opVersion{}, false
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

// NodeError is the error of one node of a graph: it names the node, its
// operator and the model's opset.
type NodeError struct {
	// Node is the node's name, or "#N" (its index) when it has none.
	Node string
	// Op is the operator type, such as "Conv".
	Op string
	// Opset is the ai.onnx opset version of the model.
	Opset int
	// Err is what went wrong.
	Err error
}

// Error formats the error as "onnx: node NAME (OP, opset N): ERR".
func (e *NodeError) Error() string {
	return fmt.Sprintf("onnx: node %s (%s, opset %d): %v", e.Node, e.Op, e.Opset, e.Err)
}

// Unwrap returns Err, so that errors.Is finds ErrUnsupported through it.
func (e *NodeError) Unwrap() error { return e.Err }

// ErrUnsupported is wrapped by every error about an operator, attribute
// value or element type that Hora does not implement (as opposed to a
// malformed model or wrong input).
var ErrUnsupported = errors.New("not supported")

// nodeCtx is what an operator implementation sees of its node: its
// attributes, the model's opset, the device and the mode.
type nodeCtx struct {
	node     *onnxpb.NodeProto
	in       []*autograd.Var // one per node input, nil where it is empty
	name     string          // node name or "#index"
	opset    int
	dev      device.Device
	training bool
	attrs    map[string]*onnxpb.AttributeProto
	rng      *rand.Rand
	act      device.Activation    // a Relu fused into this node
	graphs   map[string]*subgraph // the graph attributes, by name
	declared map[string]DataType  // ONNX element types known from the file
	// run is the model run evaluating the node, nil while constants are
	// folded (then no input is frozen, no state can be set and no graph
	// attribute run).
	run runEnv
	// residual is the other input of an Add fused into this Conv (see
	// fuseResiduals), nil otherwise; residualAct is the Add's fused
	// activation, and addResidual runs the Add itself on the Conv's
	// output, where the fused kernel does not apply.
	residual    *autograd.Var
	residualAct device.Activation
	// cache is the node's nodeCache, or nil where the node has none (a
	// node built for one call).
	cache *nodeCache
	// channelsLast asks a Conv for its output in channels-last order (an
	// inference run of a node planChannelsLast marked).
	channelsLast bool
}

// nodeCache keeps what an op derived from a node's attributes for the
// input shapes it last saw, so that a model run again on inputs of those
// shapes does not read and check the attributes again (a Conv's group,
// kernel, strides, dilations and pads: 100 small Conv+Relu nodes ran in
// 1.48 → 1.35 µs each on one thread). The entries are replaced whole, so
// concurrent runs may share it.
type nodeCache struct {
	conv atomic.Pointer[convAttrs]
}

// InputFrozen reports whether input i is a model initializer that does
// not train: a constant (Frozen, Trainable, a folded value) or a
// parameter frozen with autograd.Param.Freeze. A graph input or a value
// computed by the graph is not frozen.
func (c *nodeCtx) InputFrozen(i int) bool {
	return c.run != nil && c.run.inputFrozen(i)
}

// runEnv is what an operator may ask of the model run evaluating its node
// (nodeRun).
type runEnv interface {
	inputFrozen(i int) bool
	setState(i int, t *tensor.Tensor) error
	runGraph(attr string, args []*autograd.Var) ([]*autograd.Var, error)
	addResidual(y, residual *autograd.Var) ([]*autograd.Var, error)
}

// InputType returns the ONNX element type the file declares for input i
// (an initializer's type, a graph input's or a value_info entry's), or 0
// when unknown. Integer types all run as Int64, so an operator whose
// result depends on the width (int8 against uint8 saturation) asks here.
func (c *nodeCtx) InputType(i int) DataType {
	if i >= len(c.node.GetInput()) {
		return 0
	}
	return c.declared[c.node.GetInput()[i]]
}

// RunGraph evaluates the node's graph attribute attr (If's then_branch,
// Loop's body) on args, its formal inputs, and returns its outputs.
func (c *nodeCtx) RunGraph(attr string, args []*autograd.Var) ([]*autograd.Var, error) {
	if c.run == nil {
		return nil, fmt.Errorf("attribute %s: no graph to run", attr)
	}
	return c.run.runGraph(attr, args)
}

// FusedActivation returns the activation the interpreter fused into this
// node (a Relu that was the only reader of a Conv's, Gemm's or Add's
// output); the operator applies it to its output, preferably in the same
// pass.
func (c *nodeCtx) FusedActivation() device.Activation { return c.act }

// applyAct applies activation act to y (for operators whose kernel could
// not fuse it). Integer tensors are clamped in float64, exactly.
func applyAct(y *autograd.Var, act device.Activation) *autograd.Var {
	hi := math.Inf(1)
	switch act {
	case device.ActNone:
		return y
	case device.ActReLU6:
		hi = 6
	}
	if dt := y.Value.DType(); !dt.IsFloat() {
		return autograd.Constant(y.Value.Cast(device.Float64).MaxScalar(0).MinScalar(hi).Cast(dt))
	}
	if act == device.ActReLU {
		return autograd.Relu(y)
	}
	return autograd.Clamp(y, 0, hi)
}

// Rand returns the model's random number generator (Dropout in training
// draws its masks from it), or nil while constants are folded.
func (c *nodeCtx) Rand() *rand.Rand { return c.rng }

// debugPanics adds the stack to the error of an operator that panicked
// (HORA_ONNX_DEBUG=1).
var debugPanics = os.Getenv("HORA_ONNX_DEBUG") != ""

// SetState replaces the value of the state initializer (a
// BatchNormalization running mean or variance) that feeds input i: how
// an operator in training mode updates running statistics.
func (c *nodeCtx) SetState(i int, t *tensor.Tensor) error {
	if c.run == nil {
		return fmt.Errorf("input %d: no state to update while folding constants", i)
	}
	return c.run.setState(i, t)
}

func newNodeCtx(n *onnxpb.NodeProto, index, opset int, dev device.Device, training bool) *nodeCtx {
	name := n.GetName()
	if name == "" {
		name = fmt.Sprintf("#%d", index)
	} else {
		name = fmt.Sprintf("%q", name)
	}
	return &nodeCtx{node: n, name: name, opset: opset, dev: dev, training: training, attrs: attrMap(n)}
}

// attrMap indexes a node's attributes by name.
func attrMap(n *onnxpb.NodeProto) map[string]*onnxpb.AttributeProto {
	attrs := make(map[string]*onnxpb.AttributeProto, len(n.GetAttribute()))
	for _, a := range n.GetAttribute() {
		attrs[a.GetName()] = a
	}
	return attrs
}

// Op returns the operator type.
func (c *nodeCtx) Op() string { return c.node.GetOpType() }

// Opset returns the model's ai.onnx opset version.
func (c *nodeCtx) Opset() int { return c.opset }

// Device returns the device the graph runs on.
func (c *nodeCtx) Device() device.Device { return c.dev }

// Training reports whether the model is in training mode (Dropout,
// BatchNormalization).
func (c *nodeCtx) Training() bool { return c.training }

// NumOutputs returns the number of outputs the node declares (trailing
// optional outputs may be left out by the model).
func (c *nodeCtx) NumOutputs() int { return len(c.node.GetOutput()) }

// OutputUsed reports whether output i is declared with a non-empty name.
func (c *nodeCtx) OutputUsed(i int) bool {
	return i < len(c.node.GetOutput()) && c.node.GetOutput()[i] != ""
}

// Errorf returns an error about this node (the caller wraps it into a
// NodeError).
func (c *nodeCtx) Errorf(format string, args ...any) error {
	return fmt.Errorf(format, args...)
}

// Unsupported returns an error wrapping ErrUnsupported, for an attribute
// value, input combination or element type Hora does not implement.
func (c *nodeCtx) Unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}

// inputs returns the node's inputs after checking them against decl, the
// operator's inputs as its specification names them, in order. A name's
// suffix says what kind of input it is:
//
//	"X"              required
//	"B?"             optional: nil when the node leaves it out or empty
//	"inputs..."      variadic (last only): the remaining inputs, named
//	                 inputs_0, inputs_1, …; at least one, each required
//	"v_initial?..."  variadic and possibly empty: zero or more
//
// It returns a new slice: one Var per fixed name, then the variadic ones.
// When a required input is missing, or the node has more inputs than decl
// allows, the error names the input and says what the operator takes and
// what the node gives. Empty inputs at the end of the node's list count
// as left out.
func (c *nodeCtx) inputs(decl ...string) ([]*autograd.Var, error) {
	fixed := decl
	var rest inputDecl
	if len(decl) > 0 {
		if last := parseInputDecl(decl[len(decl)-1]); last.variadic {
			fixed, rest = decl[:len(decl)-1], last
		}
	}
	given := len(c.in)
	for given > 0 && c.in[given-1] == nil {
		given--
	}
	if !rest.variadic && given > len(fixed) {
		return nil, c.Errorf("the node has %s; %s", plural(given, "input"), c.describeInputs(decl))
	}
	var out []*autograd.Var
	if !rest.variadic && len(c.in) >= len(fixed) {
		out = c.in[:len(fixed):len(fixed)] // the inputs as given, no copy
	} else {
		out = make([]*autograd.Var, len(fixed), max(len(fixed), given))
		copy(out, c.in)
	}
	for i, name := range fixed {
		if d := parseInputDecl(name); out[i] == nil && !d.optional {
			return nil, c.missingInput(i, d.name, decl)
		}
	}
	if !rest.variadic {
		return out, nil
	}
	if given <= len(fixed) && !rest.optional {
		return nil, c.missingInput(len(fixed), rest.name+"_0", decl)
	}
	for i := len(fixed); i < len(c.in); i++ {
		if c.in[i] == nil {
			return nil, c.missingInput(i, fmt.Sprintf("%s_%d", rest.name, i-len(fixed)), decl)
		}
		out = append(out, c.in[i])
	}
	return out, nil
}

// input is inputs for an operator of one input: it returns that input.
func (c *nodeCtx) input(name string) (*autograd.Var, error) {
	in, err := c.inputs(name)
	if err != nil {
		return nil, err
	}
	return in[0], nil
}

// inputDecl is one name of an operator's input declaration (see
// nodeCtx.inputs).
type inputDecl struct {
	name               string
	optional, variadic bool
}

// parseInputDecl splits the suffixes "?" and "..." off a declared name.
func parseInputDecl(s string) inputDecl {
	var d inputDecl
	s, d.variadic = strings.CutSuffix(s, "...")
	d.name, d.optional = strings.CutSuffix(s, "?")
	return d
}

// missingInput is the error about required input i, named name, that the
// node leaves out or empty.
func (c *nodeCtx) missingInput(i int, name string, decl []string) error {
	if i < len(c.in) {
		return c.Errorf("input %d (%s) is missing: the node leaves it empty; %s", i, name, c.describeInputs(decl))
	}
	return c.Errorf("input %d (%s) is missing: the node has %s; %s", i, name, plural(len(c.in), "input"), c.describeInputs(decl))
}

// describeInputs says how many inputs the operator takes and lists decl:
// "Conv takes 2 to 3 inputs (X, W, B?)".
func (c *nodeCtx) describeInputs(decl []string) string {
	if len(decl) == 0 {
		return c.Op() + " takes no inputs"
	}
	least, most := 0, len(decl)
	for i, name := range decl {
		d := parseInputDecl(name)
		if !d.optional {
			least = i + 1
		}
		if d.variadic {
			most = -1
		}
	}
	var count string
	switch {
	case most < 0 && least == 0:
		count = "any number of inputs"
	case most < 0:
		count = "at least " + plural(least, "input")
	case least == most:
		count = plural(least, "input")
	default:
		count = fmt.Sprintf("%d to %d inputs", least, most)
	}
	return fmt.Sprintf("%s takes %s (%s)", c.Op(), count, strings.Join(decl, ", "))
}

// plural returns "no inputs", "one input", "2 inputs" and so on.
func plural(n int, noun string) string {
	switch n {
	case 0:
		return "no " + noun + "s"
	case 1:
		return "one " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// withInputs returns a copy of c whose node inputs are in: how an
// operator runs another one on values of its own (a QLinearConv's
// dequantized operands through Conv, say).
func (c *nodeCtx) withInputs(in ...*autograd.Var) *nodeCtx {
	d := *c
	d.in = in
	return &d
}

// HasAttr reports whether the node sets the attribute.
func (c *nodeCtx) HasAttr(name string) bool { _, ok := c.attrs[name]; return ok }

// AttrInt returns an INT attribute, or def when absent.
func (c *nodeCtx) AttrInt(name string, def int64) int64 {
	if a, ok := c.attrs[name]; ok {
		return a.GetI()
	}
	return def
}

// AttrInts returns an INTS attribute, or def when absent.
func (c *nodeCtx) AttrInts(name string, def []int64) []int64 {
	if a, ok := c.attrs[name]; ok {
		return a.GetInts()
	}
	return def
}

// AttrFloat returns a FLOAT attribute, or def when absent.
func (c *nodeCtx) AttrFloat(name string, def float64) float64 {
	if a, ok := c.attrs[name]; ok {
		return float64(a.GetF())
	}
	return def
}

// AttrFloats returns a FLOATS attribute, or def when absent.
func (c *nodeCtx) AttrFloats(name string, def []float64) []float64 {
	a, ok := c.attrs[name]
	if !ok {
		return def
	}
	out := make([]float64, len(a.GetFloats()))
	for i, f := range a.GetFloats() {
		out[i] = float64(f)
	}
	return out
}

// AttrString returns a STRING attribute, or def when absent.
func (c *nodeCtx) AttrString(name string, def string) string {
	if a, ok := c.attrs[name]; ok {
		return string(a.GetS())
	}
	return def
}

// AttrStrings returns a STRINGS attribute, or nil when absent.
func (c *nodeCtx) AttrStrings(name string) []string {
	a, ok := c.attrs[name]
	if !ok {
		return nil
	}
	out := make([]string, len(a.GetStrings()))
	for i, s := range a.GetStrings() {
		out[i] = string(s)
	}
	return out
}

// AttrTensor returns a TENSOR attribute converted to a tensor on the CPU,
// or nil and no error when absent.
func (c *nodeCtx) AttrTensor(name string) (*tensor.Tensor, error) {
	a, ok := c.attrs[name]
	if !ok {
		return nil, nil
	}
	t, err := tensorFromProto(a.GetT(), "")
	if err != nil {
		return nil, fmt.Errorf("attribute %s: %w", name, err)
	}
	return t, nil
}

// Ints reads an integer (or integral float) tensor to the host, for
// inputs that carry shapes, axes or sizes.
func (c *nodeCtx) Ints(v *autograd.Var) []int64 {
	t := v.Value
	if t.DType() == device.Int64 {
		return t.To(tensor.CPU()).Int64s()
	}
	vals := t.Values()
	out := make([]int64, len(vals))
	for i, f := range vals {
		out[i] = int64(f)
	}
	return out
}

// intValues reads an integer tensor input (indices, shapes, axes) to the
// host, or returns an error naming it when it holds floats.
func (c *nodeCtx) intValues(v *autograd.Var, name string) ([]int64, error) {
	if v.Value.DType() != device.Int64 {
		return nil, c.Errorf("input %s must be an integer tensor, found %v", name, v.Value.DType())
	}
	return c.Ints(v), nil
}

// Floats reads a tensor to the host as float64 values.
func (c *nodeCtx) Floats(v *autograd.Var) []float64 { return v.Value.Values() }

// Const returns t, moved to the graph's device, as a Var without gradient.
func (c *nodeCtx) Const(t *tensor.Tensor) *autograd.Var {
	if t.Device() != c.dev {
		t = t.To(c.dev)
	}
	return autograd.Constant(t)
}

// ConstInts returns an Int64 tensor with the given values and shape on the
// graph's device (a 1-D tensor when shape is empty).
func (c *nodeCtx) ConstInts(vals []int64, shape ...int) *autograd.Var {
	if len(shape) == 0 {
		shape = []int{len(vals)}
	}
	return c.Const(tensor.FromInt64(vals, shape...))
}

// ConstScalar returns a scalar (shape []) tensor of type dt holding v on
// the graph's device.
func (c *nodeCtx) ConstScalar(dt device.DType, v float64) *autograd.Var {
	return autograd.Constant(tensor.Full(c.dev, dt, v))
}

// normAxis maps a possibly negative axis onto [0, rank), or returns an
// error naming the attribute.
func (c *nodeCtx) normAxis(what string, axis int64, rank int) (int, error) {
	a := axis
	if a < 0 {
		a += int64(rank)
	}
	if a < 0 || a >= int64(rank) {
		return 0, fmt.Errorf("%s %d is out of range for rank %d", what, axis, rank)
	}
	return int(a), nil
}

// clampIndex clamps v into [lo, hi], treating the int64 extremes ONNX
// uses for "to the end" as such.
func clampIndex(v, lo, hi int64) int64 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// maxOutputElements bounds the size of a tensor whose shape an operator
// takes from its attributes or input values (ConstantOfShape, Expand,
// Tile, Range, Pad, OneHot, Resize, the padding of Conv and pooling,
// ConvTranspose, RoiAlign), so that a corrupt or hostile model gets an
// error instead of exhausting memory. It also bounds each dimension of
// such a shape, even when another one is 0.
var maxOutputElements = 1 << 30

// checkElements returns an error when the output shape has more than
// maxOutputElements elements (see checkSize).
func (c *nodeCtx) checkElements(shape []int) error {
	return c.checkSize("output", shape)
}

// checkSize returns an error, naming what the shape is of ("output",
// "padded input"), when shape has a negative dimension, a dimension
// above maxOutputElements, or more than maxOutputElements elements.
func (c *nodeCtx) checkSize(what string, shape []int) error {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("%s shape %v has a negative dimension", what, shape)
		}
		if d > maxOutputElements {
			return fmt.Errorf("%s shape %v has dimension %d, above the limit of %d", what, shape, d, maxOutputElements)
		}
		if d > 0 && n > maxOutputElements/d {
			return fmt.Errorf("%s shape %v has more than %d elements", what, shape, maxOutputElements)
		}
		n *= d
	}
	return nil
}
