package onnx

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// The opsets of the ai.onnx domain that Import accepts. Operators keep
// the semantics of each of their versions up to MaxOpset. Opsets 7 to 17
// are the supported range; older models (MinOpset to 6) import when every
// operator they use has an implementation for their opset, except that
// the legacy broadcast attribute with an axis (opset < 7) is refused.
const (
	MinOpset = 1
	MaxOpset = 17
)

// Model is an imported ONNX graph. It is a layers.Module: its float
// initializers are named, trainable parameters (BatchNormalization's
// running statistics are buffers), so it can be trained, checkpointed and
// wrapped by dist.DistributedOptimizer like a model written in Go. Run
// evaluates it on the device of its inputs, recording the autograd tape
// when a parameter or an input requires a gradient.
type Model struct {
	// Opset is the model's ai.onnx opset version.
	Opset int
	// Inputs and Outputs describe the graph's inputs (initializers
	// excluded) and outputs in order.
	Inputs, Outputs []ValueInfo
	// Producer is the producer_name and producer_version of the file.
	Producer string
	// Doc is the model's doc_string (what Export's DocString wrote, e.g.
	// the trainer's class names and input transform as JSON).
	Doc string

	nodes    []*graphNode
	allNodes []*onnxpb.NodeProto // every node of the file, folded ones included
	params   []*autograd.Param
	buffers  []*layers.Buffer
	consts   map[string]*tensor.Tensor // frozen initializers and folded values, on the CPU
	state    map[string]*tensor.Tensor // current values of buffers by value name (points into buffers)
	bufByVal map[string]*layers.Buffer
	parByVal map[string]*autograd.Param
	training bool
	lanes    bool       // an inference run may split its batch into lanes (see planLanes)
	rng      *rand.Rand // Dropout's masks in training
	declared map[string]DataType
	head     *HeadInfo // the classifier WithoutHead removed

	mu       sync.Mutex
	constDev map[device.Device]map[string]*autograd.Var // consts moved to a device, built on demand
	// slots numbers the values of the main graph (its inputs, the
	// nodes' inputs and outputs, its outputs, the constants): a run keeps
	// them in a slice, len(slots) long, rather than in a map by name;
	// constSlots holds the constants on a device at their slots, built
	// on demand.
	slots        map[string]int
	numInputRefs int // the nodes' inputs, all together
	constSlots   map[device.Device][]*autograd.Var
	shapeMemo    map[string]map[string]*tensor.Tensor // input-shape signature -> shape-only values
	arenas       map[string]*tensor.Arena             // input-shape signature -> memory of inference runs, while no run uses it
	itemBytes    map[string]int                       // input-shape signature -> an inference run's memory per batch item (see laneSplit)
	weightBytes  int                                  // the parameters', buffers' and constants' memory (see planLanes)
}

// ValueInfo describes a graph input or output.
type ValueInfo struct {
	// Name is the value's name in the graph.
	Name string
	// Type is the ONNX element type.
	Type DataType
	// Shape has one entry per dimension: the size, or -1 where the size
	// is dynamic. Shape is nil when the model does not state the rank.
	Shape []int
	// DimNames names the dynamic dimensions ("batch"); "" elsewhere.
	DimNames []string
}

// String formats the value as name: type[d0,d1,...] with dynamic
// dimensions by name ("input: float[batch,3,224,224]").
func (v ValueInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", v.Name, typeName(v.Type))
	if v.Shape != nil {
		b.WriteByte('[')
		for i, d := range v.Shape {
			if i > 0 {
				b.WriteByte(',')
			}
			switch {
			case d >= 0:
				fmt.Fprint(&b, d)
			case v.DimNames[i] != "":
				b.WriteString(v.DimNames[i])
			default:
				b.WriteByte('?')
			}
		}
		b.WriteByte(']')
	}
	return b.String()
}

// graphNode is a node prepared for evaluation.
type graphNode struct {
	proto   *onnxpb.NodeProto
	index   int
	label   string // the node's name in errors
	impl    opVersion
	inputs  []string
	outputs []string
	// shapeOnly marks nodes whose outputs depend only on the shapes of
	// the graph's inputs (Shape, and arithmetic on shapes and constants):
	// they are computed once per input-shape signature.
	shapeOnly bool
	// release lists the values no later node reads, dropped after this
	// node so that their memory can be reused.
	release []string
	// inSlots, outSlots and releaseSlots are the slots (Model.slots) of
	// inputs, outputs and release, -1 for an empty name.
	inSlots, outSlots, releaseSlots []int
	// act is the activation of a Relu folded into this Conv or Gemm
	// (see fuseActivations).
	act device.Activation
	// add is the Add folded into this Conv (see fuseResiduals), whose
	// other input is the last of inputs, and convIsB whether the Conv's
	// output was the Add's second input.
	add     *graphNode
	convIsB bool
	// channelsLast marks a Conv whose output an inference run asks for
	// in channels-last order (see planChannelsLast).
	channelsLast bool
	// subgraphs are the graph attributes (If's branches, Loop's and
	// Scan's body) by attribute name; implicit lists the values of this
	// graph they read.
	subgraphs map[string]*subgraph
	implicit  []string
	attrs     map[string]*onnxpb.AttributeProto // by name
	// cache keeps what the node's op derived from its attributes for the
	// input shapes it last saw (see nodeCache).
	cache nodeCache
}

// Option changes how a model is imported.
type Option func(*importOptions)

type importOptions struct {
	frozen      bool
	trainable   func(name string) bool
	withoutHead bool   // WithoutHead
	input       string // Input, when hasInput
	hasInput    bool
}

// Frozen imports every initializer as a constant: the model has no
// parameters, for inference only. The running statistics of
// BatchNormalization nodes in inference mode are constants too (other
// nodes' stay buffers), and those nodes are folded into the Conv before
// them where they can be, as inference engines do.
func Frozen() Option { return func(o *importOptions) { o.frozen = true } }

// Trainable imports as parameters only the float initializers for which
// keep returns true; the others become constants (to fine-tune the last
// layers of a pretrained network, say).
func Trainable(keep func(name string) bool) Option {
	return func(o *importOptions) { o.trainable = keep }
}

// Load reads an ONNX model file. External data files (weights stored
// beside the model) are looked up relative to the model's folder, and
// must be inside it. Errors about the file (not a regular file, not an
// ONNX model, unusable external data) wrap ErrBadFile.
func Load(path string, opts ...Option) (*Model, error) {
	data, err := readProtoFile(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	m, err := decode(data, path, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Import reads an ONNX model from r. Models with external data must be
// read with Load, which knows the folder of the side files.
func Import(r io.Reader, opts ...Option) (*Model, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	return decode(data, "", opts)
}

// ReadTensor reads a serialized TensorProto (a backend test's input_0.pb)
// into a tensor on the CPU. Errors about the file wrap ErrBadFile, as
// Load's.
func ReadTensor(path string) (*tensor.Tensor, error) {
	data, err := readProtoFile(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	tp := &onnxpb.TensorProto{}
	if err := proto.Unmarshal(data, tp); err != nil {
		return nil, badFile(fmt.Errorf("onnx: %s: not a TensorProto: %w", path, err))
	}
	t, err := tensorFromProto(tp, path)
	if err != nil {
		return nil, fmt.Errorf("onnx: %s: %w", path, err)
	}
	return t, nil
}

// decode parses and builds a model; src is the file it was read from, ""
// for a reader.
func decode(data []byte, src string, opts []Option) (*Model, error) {
	var o importOptions
	for _, opt := range opts {
		opt(&o)
	}
	if len(data) == 0 {
		return nil, badFile(fmt.Errorf("onnx: empty file"))
	}
	mp := &onnxpb.ModelProto{}
	if err := proto.Unmarshal(data, mp); err != nil {
		return nil, badFile(fmt.Errorf("onnx: not an ONNX model (protobuf: %v)", err))
	}
	if mp.GetGraph() == nil {
		return nil, badFile(fmt.Errorf("onnx: not an ONNX model: no graph"))
	}
	return build(mp, src, o)
}

// build prepares a parsed model in steps: the opset, the initializers
// and graph inputs, the nodes (operators checked, in order), the graph
// outputs, the initializers' roles (parameter, buffer or constant), and
// then the constant folding and fusions that make running it cheaper.
func build(mp *onnxpb.ModelProto, src string, o importOptions) (*Model, error) {
	m := &Model{
		consts:     map[string]*tensor.Tensor{},
		state:      map[string]*tensor.Tensor{},
		bufByVal:   map[string]*layers.Buffer{},
		parByVal:   map[string]*autograd.Param{},
		constDev:   map[device.Device]map[string]*autograd.Var{},
		constSlots: map[device.Device][]*autograd.Var{},
		shapeMemo:  map[string]map[string]*tensor.Tensor{},
		arenas:     map[string]*tensor.Arena{},
		itemBytes:  map[string]int{},
		rng:        rand.New(rand.NewPCG(0, 0)),
		Producer:   strings.TrimSpace(mp.GetProducerName() + " " + mp.GetProducerVersion()),
		Doc:        mp.GetDocString(),
	}
	opset, err := modelOpset(mp)
	if err != nil {
		return nil, err
	}
	m.Opset = opset
	g, head, err := rewriteGraph(mp.GetGraph(), o)
	if err != nil {
		return nil, err
	}
	m.head = head
	m.allNodes = g.GetNode()
	m.declared = declaredTypes(g)
	inits, initOrder, err := graphInitializers(g)
	if err != nil {
		return nil, err
	}
	defined, err := m.readInputs(g, inits)
	if err != nil {
		return nil, err
	}
	if m.nodes, _, err = prepareNodes(g.GetNode(), opset, src, defined, nil); err != nil {
		return nil, err
	}
	if err := m.readOutputs(g, defined); err != nil {
		return nil, err
	}
	if err := m.loadInitializers(inits, initOrder, src, o); err != nil {
		return nil, err
	}
	if err := m.fold(); err != nil {
		return nil, err
	}
	if o.frozen {
		m.foldBatchNorms()
	}
	m.fuseActivations()
	m.fuseResiduals()
	m.planChannelsLast()
	m.planLanes()
	m.markShapeOnly()
	m.planRelease()
	m.planSlots()
	return m, nil
}

// modelOpset returns the model's ai.onnx opset, checking that Hora
// supports it. A model whose nodes are all of other domains may import
// no ai.onnx opset (-1): prepareNodes then reports the first node's
// domain.
func modelOpset(mp *onnxpb.ModelProto) (int, error) {
	opset := -1
	for _, os := range mp.GetOpsetImport() {
		if isONNXDomain(os.GetDomain()) {
			opset = int(os.GetVersion())
		}
	}
	onlyOtherDomains := len(mp.GetGraph().GetNode()) > 0
	for _, n := range mp.GetGraph().GetNode() {
		if isONNXDomain(n.GetDomain()) {
			onlyOtherDomains = false
		}
	}
	switch {
	case opset < 0 && onlyOtherDomains:
	case opset < 0:
		return 0, fmt.Errorf("onnx: the model imports no ai.onnx opset")
	case opset < MinOpset || opset > MaxOpset:
		return 0, fmt.Errorf("onnx: %w: opset %d (Hora supports ai.onnx opsets %d to %d)", ErrUnsupported, opset, MinOpset, MaxOpset)
	}
	return opset, nil
}

// graphInitializers indexes the initializers of g by name and returns
// their names in file order, rejecting unnamed, repeated and sparse ones.
func graphInitializers(g *onnxpb.GraphProto) (map[string]*onnxpb.TensorProto, []string, error) {
	inits := map[string]*onnxpb.TensorProto{}
	var order []string
	for i, tp := range g.GetInitializer() {
		if tp.GetName() == "" {
			return nil, nil, fmt.Errorf("onnx: initializer #%d has no name", i)
		}
		if _, dup := inits[tp.GetName()]; dup {
			return nil, nil, fmt.Errorf("onnx: initializer %q is defined twice", tp.GetName())
		}
		inits[tp.GetName()] = tp
		order = append(order, tp.GetName())
	}
	if len(g.GetSparseInitializer()) > 0 {
		return nil, nil, fmt.Errorf("onnx: %w: sparse initializers", ErrUnsupported)
	}
	return inits, order, nil
}

// readInputs sets m.Inputs from the graph inputs of g that are not
// initializers and returns the names defined before the first node: the
// inputs and the initializers.
func (m *Model) readInputs(g *onnxpb.GraphProto, inits map[string]*onnxpb.TensorProto) (map[string]bool, error) {
	defined := map[string]bool{}
	for _, vi := range g.GetInput() {
		if _, isInit := inits[vi.GetName()]; isInit {
			continue // older files list initializers among the inputs
		}
		info, err := valueInfo(vi)
		if err != nil {
			return nil, fmt.Errorf("onnx: graph input %q: %w", vi.GetName(), err)
		}
		m.Inputs = append(m.Inputs, info)
		defined[vi.GetName()] = true
	}
	for name := range inits {
		defined[name] = true
	}
	return defined, nil
}

// readOutputs sets m.Outputs from the graph outputs of g, each of which
// must be among the defined names.
func (m *Model) readOutputs(g *onnxpb.GraphProto, defined map[string]bool) error {
	for _, vi := range g.GetOutput() {
		if !defined[vi.GetName()] {
			return fmt.Errorf("onnx: graph output %q is not computed by any node", vi.GetName())
		}
		info, err := valueInfo(vi)
		if err != nil {
			return fmt.Errorf("onnx: graph output %q: %w", vi.GetName(), err)
		}
		m.Outputs = append(m.Outputs, info)
	}
	if len(m.Outputs) == 0 {
		return fmt.Errorf("onnx: the graph has no outputs")
	}
	return nil
}

// loadInitializers converts the initializers, in file order, into the
// model's buffers (the running statistics nodes update), parameters
// (float data the options leave trainable) and constants.
func (m *Model) loadInitializers(inits map[string]*onnxpb.TensorProto, order []string, src string, o importOptions) error {
	role := initializerRoles(m.nodes)
	for _, name := range order {
		t, err := tensorFromProto(inits[name], src)
		if err != nil {
			return fmt.Errorf("onnx: initializer: %w", err)
		}
		isFloat := t.DType().IsFloat()
		switch {
		case isFloat && role[name] == roleState && !(o.frozen && inferenceStats(m.nodes, name)):
			b := &layers.Buffer{Name: name, Value: t}
			m.buffers = append(m.buffers, b)
			m.bufByVal[name] = b
		case isFloat && role[name] == roleData && !o.frozen && (o.trainable == nil || o.trainable(name)):
			p := autograd.NewParam(name, t)
			m.params = append(m.params, p)
			m.parByVal[name] = p
		default:
			m.consts[name] = t
		}
	}
	return nil
}

// declaredTypes collects the element types the file states: those of
// initializers, graph inputs and outputs, value_info entries and Constant
// nodes, in this graph and its subgraphs.
func declaredTypes(g *onnxpb.GraphProto) map[string]DataType {
	types := map[string]DataType{}
	var walk func(g *onnxpb.GraphProto)
	walk = func(g *onnxpb.GraphProto) {
		for _, vi := range slices.Concat(g.GetInput(), g.GetOutput(), g.GetValueInfo()) {
			if tt := vi.GetType().GetTensorType(); tt != nil && tt.GetElemType() != 0 {
				types[vi.GetName()] = DataType(tt.GetElemType())
			}
		}
		for _, tp := range g.GetInitializer() {
			types[tp.GetName()] = DataType(tp.GetDataType())
		}
		for _, n := range g.GetNode() {
			for _, a := range n.GetAttribute() {
				if n.GetOpType() == "Constant" && a.GetName() == "value" && len(n.GetOutput()) == 1 {
					types[n.GetOutput()[0]] = DataType(a.GetT().GetDataType())
				}
				if a.GetG() != nil {
					walk(a.GetG())
				}
			}
		}
	}
	walk(g)
	return types
}

// hasIntAttr reports whether node n has the INT attribute name set to v.
func hasIntAttr(n *onnxpb.NodeProto, name string, v int64) bool {
	for _, a := range n.GetAttribute() {
		if a.GetName() == name {
			return a.GetI() == v
		}
	}
	return false
}

// prepareNodes checks a graph's nodes (operators, inputs defined before
// use, outputs defined once) and prepares them for evaluation, building
// the subgraphs of If, Loop and Scan. defined holds the names visible so
// far and gains the nodes' outputs; outer, for a subgraph, holds the names
// of the enclosing scopes, and the names the nodes read from there are
// returned.
func prepareNodes(protos []*onnxpb.NodeProto, opset int, src string, defined, outer map[string]bool) ([]*graphNode, []string, error) {
	var nodes []*graphNode
	var outerReads []string
	readOuter := map[string]bool{}
	useOuter := func(name string) {
		if !readOuter[name] {
			readOuter[name] = true
			outerReads = append(outerReads, name)
		}
	}
	produced := map[string]int{}
	for i, np := range protos {
		n := &graphNode{proto: np, index: i, inputs: np.GetInput(), outputs: np.GetOutput(), attrs: attrMap(np)}
		n.label = fmt.Sprintf("#%d", i)
		if np.GetName() != "" {
			n.label = fmt.Sprintf("%q", np.GetName())
		}
		fail := func(err error) error { return &NodeError{Node: n.label, Op: np.GetOpType(), Opset: opset, Err: err} }
		if d := np.GetDomain(); !isONNXDomain(d) {
			return nil, nil, fail(fmt.Errorf("%w: operator domain %q (Hora implements the ai.onnx domain)", ErrUnsupported, d))
		}
		impl, ok := lookup(np.GetOpType(), opset)
		if !ok {
			if vs := registry[np.GetOpType()]; len(vs) > 0 {
				return nil, nil, fail(fmt.Errorf("%w: operator %s before opset %d", ErrUnsupported, np.GetOpType(), vs[0].since))
			}
			return nil, nil, fail(fmt.Errorf("%w: operator %s", ErrUnsupported, np.GetOpType()))
		}
		n.impl = impl
		for k, in := range n.inputs {
			switch {
			case in == "" || defined[in]:
			case outer[in]:
				useOuter(in)
			default:
				return nil, nil, fail(fmt.Errorf("input %d %q is not a graph input, an initializer or an output of an earlier node", k, in))
			}
		}
		for _, a := range np.GetAttribute() {
			if len(a.GetGraphs()) > 0 {
				return nil, nil, fail(fmt.Errorf("%w: attribute %s holds a list of graphs", ErrUnsupported, a.GetName()))
			}
			if a.GetG() != nil {
				// The subgraph sees everything visible here.
				scope := maps.Clone(outer)
				if scope == nil {
					scope = map[string]bool{}
				}
				maps.Copy(scope, defined)
				sg, err := buildSubgraph(a.GetG(), opset, src, scope)
				if err != nil {
					return nil, nil, fail(fmt.Errorf("attribute %s: %w", a.GetName(), err))
				}
				if n.subgraphs == nil {
					n.subgraphs = map[string]*subgraph{}
				}
				n.subgraphs[a.GetName()] = sg
				for _, name := range sg.outer {
					n.implicit = append(n.implicit, name)
					if !defined[name] {
						useOuter(name)
					}
				}
			}
			if opset < 7 && a.GetName() == "axis" && hasIntAttr(np, "broadcast", 1) {
				return nil, nil, fail(fmt.Errorf("%w: legacy broadcast with attribute axis (opset %d < 7)", ErrUnsupported, opset))
			}
		}
		for _, out := range n.outputs {
			if out == "" {
				continue
			}
			if defined[out] {
				return nil, nil, fail(fmt.Errorf("output %q is already defined (by a graph input, an initializer or node #%d)", out, produced[out]))
			}
			defined[out] = true
			produced[out] = i
		}
		nodes = append(nodes, n)
	}
	return nodes, outerReads, nil
}

// subgraph is the graph of an If branch or of a Loop or Scan body. Its
// nodes may read the values of the enclosing graphs by name.
type subgraph struct {
	nodes   []*graphNode
	inputs  []string                  // the formal inputs, bound by the operator
	outputs []string                  // the values it returns
	consts  map[string]*tensor.Tensor // its own initializers
	outer   []string                  // names it reads from the enclosing scopes
}

// buildSubgraph prepares a subgraph attribute; scope holds the names of
// the enclosing scopes.
func buildSubgraph(g *onnxpb.GraphProto, opset int, src string, scope map[string]bool) (*subgraph, error) {
	sg := &subgraph{consts: map[string]*tensor.Tensor{}}
	defined := map[string]bool{}
	for _, tp := range g.GetInitializer() {
		t, err := tensorFromProto(tp, src)
		if err != nil {
			return nil, fmt.Errorf("initializer: %w", err)
		}
		sg.consts[tp.GetName()] = t
		defined[tp.GetName()] = true
	}
	for _, vi := range g.GetInput() {
		if vi.GetType() != nil && vi.GetType().GetTensorType() == nil {
			return nil, fmt.Errorf("input %q: %w: non-tensor value (sequence, map or optional)", vi.GetName(), ErrUnsupported)
		}
		sg.inputs = append(sg.inputs, vi.GetName())
		defined[vi.GetName()] = true
	}
	nodes, outer, err := prepareNodes(g.GetNode(), opset, src, defined, scope)
	if err != nil {
		return nil, fmt.Errorf("graph %q: %w", g.GetName(), err)
	}
	sg.nodes, sg.outer = nodes, outer
	for _, vi := range g.GetOutput() {
		name := vi.GetName()
		switch {
		case defined[name]:
		case scope[name]:
			sg.outer = append(sg.outer, name)
		default:
			return nil, fmt.Errorf("graph %q: output %q is not computed", g.GetName(), name)
		}
		sg.outputs = append(sg.outputs, name)
	}
	return sg, nil
}

// valueInfo converts a graph input or output declaration.
func valueInfo(vi *onnxpb.ValueInfoProto) (ValueInfo, error) {
	info := ValueInfo{Name: vi.GetName()}
	tt := vi.GetType().GetTensorType()
	if tt == nil {
		if vi.GetType() == nil {
			return info, nil // untyped: accepted, checked at run time by the nodes
		}
		return info, fmt.Errorf("%w: non-tensor value (sequence, map or optional)", ErrUnsupported)
	}
	info.Type = DataType(tt.GetElemType())
	if tt.GetShape() != nil {
		for _, d := range tt.GetShape().GetDim() {
			if _, ok := d.GetValue().(*onnxpb.TensorShapeProto_Dimension_DimValue); ok && d.GetDimValue() >= 0 {
				info.Shape = append(info.Shape, int(d.GetDimValue()))
				info.DimNames = append(info.DimNames, "")
			} else {
				info.Shape = append(info.Shape, -1)
				info.DimNames = append(info.DimNames, d.GetDimParam())
			}
		}
		if info.Shape == nil {
			info.Shape = []int{}
		}
	}
	return info, nil
}

// Initializer roles, decided by how nodes use them.
const (
	roleData  = iota // read as data by some node: a trainable parameter if float
	roleConst        // read only where ONNX takes shapes, axes or bounds
	roleState        // BatchNormalization running mean or variance
)

// constantInputs lists, per operator, the input positions that hold
// shapes, indices, axes, scales or bounds rather than data: a float
// initializer read only there is a constant, not a parameter.
var constantInputs = map[string][]int{
	"Reshape": {1}, "Expand": {1}, "Tile": {1}, "Slice": {1, 2, 3, 4}, "Pad": {1, 2, 3},
	"Resize": {1, 2, 3}, "Upsample": {1}, "Squeeze": {1}, "Unsqueeze": {1}, "Split": {1},
	"ReduceSum": {1}, "ReduceMean": {1}, "ReduceMax": {1}, "ReduceMin": {1}, "ReduceProd": {1},
	"ReduceL1": {1}, "ReduceL2": {1}, "ReduceLogSum": {1}, "ReduceLogSumExp": {1}, "ReduceSumSquare": {1},
	"Clip": {1, 2}, "CumSum": {1}, "TopK": {1}, "OneHot": {0, 1, 2}, "Range": {0, 1, 2},
	"ConstantOfShape": {0}, "Dropout": {1, 2}, "Gather": {1}, "GatherElements": {1}, "Where": {0},
	"LSTM": {4}, "GRU": {4}, "RNN": {4}, "NegativeLogLikelihoodLoss": {1, 2}, "SoftmaxCrossEntropyLoss": {1, 2},
	"ScatterElements": {1}, "ScatterND": {1}, "Scatter": {1}, "GatherND": {1}, "Compress": {1}, "Trilu": {1},
	"ReverseSequence": {1}, "MaxUnpool": {1, 2},
}

func initializerRoles(nodes []*graphNode) map[string]int {
	role := map[string]int{}
	for _, n := range nodes {
		for _, in := range n.implicit {
			role[in] = roleData
		}
		op := n.proto.GetOpType()
		for k, in := range n.inputs {
			if in == "" {
				continue
			}
			r := roleData
			switch {
			case op == "BatchNormalization" && (k == 3 || k == 4):
				r = roleState
			case slices.Contains(constantInputs[op], k):
				r = roleConst
			}
			if prev, seen := role[in]; !seen || r < prev {
				role[in] = r
			}
		}
	}
	return role
}

// nondeterministic lists operators never folded or memoized.
var nondeterministic = map[string]bool{
	"Dropout": true, "RandomNormal": true, "RandomUniform": true, "RandomNormalLike": true,
	"RandomUniformLike": true, "Multinomial": true, "Bernoulli": true, "BatchNormalization": true,
}

// fold evaluates, once, the nodes whose inputs are all constants, and
// removes them from the graph.
func (m *Model) fold() error {
	var kept []*graphNode
	cpu := tensor.CPU()
	for _, n := range m.nodes {
		foldable := !nondeterministic[n.proto.GetOpType()] && n.subgraphs == nil
		for _, in := range n.inputs {
			if in != "" && m.consts[in] == nil {
				foldable = false
				break
			}
		}
		if !foldable {
			kept = append(kept, n)
			continue
		}
		in := make([]*autograd.Var, len(n.inputs))
		for k, name := range n.inputs {
			if name != "" {
				in[k] = autograd.Constant(m.consts[name])
			}
		}
		outs, err := m.runNode(n, in, cpu, false, false, nil, nil)
		if err != nil {
			return err
		}
		for k, name := range n.outputs {
			if name != "" && k < len(outs) && outs[k] != nil {
				m.consts[name] = outs[k].Value
			}
		}
	}
	m.nodes = kept
	return nil
}

// fusable lists the operators that can apply a following Relu in the
// same pass over their output (nodeCtx.FusedActivation).
var fusable = map[string]bool{"Conv": true, "Gemm": true, "Add": true}

// fuseActivations folds each Relu (or Clip(0, 6), ReLU6) that is the only
// reader of a Conv's, Gemm's or Add's output into that node, which then writes
// the activation's output: one pass over the activations instead of two
// or three, the same values.
func (m *Model) fuseActivations() {
	readers := m.readerCounts()
	producer := map[string]*graphNode{}
	kept := m.nodes[:0]
	for _, n := range m.nodes {
		if act := m.activationOf(n); act != device.ActNone && len(n.inputs) > 0 && len(n.outputs) == 1 {
			if p := producer[n.inputs[0]]; p != nil && readers[n.inputs[0]] == 1 && p.act == device.ActNone {
				p.act = act
				p.outputs = []string{n.outputs[0]}
				producer[n.outputs[0]] = p
				continue
			}
		}
		if fusable[n.proto.GetOpType()] && len(n.outputs) == 1 {
			producer[n.outputs[0]] = n
		}
		kept = append(kept, n)
	}
	m.nodes = kept
}

// fuseResiduals folds each Add that sums the output of a Conv, read by
// nothing else, with another value (a residual block's convolution and
// shortcut) into that Conv, which moves to the Add's place and writes the
// Add's output: the shortcut, and the Relu fused into the Add, are then
// applied to each block of the convolution's output while it is in cache
// (autograd.Conv2DAddAct) instead of in a pass of their own over memory.
// The values are the same. Where the fused kernel does not apply at run
// time (a shortcut that broadcasts, a 1-D or 3-D convolution), the Conv
// runs as it is and then the Add.
func (m *Model) fuseResiduals() {
	readers := m.readerCounts()
	convs := map[string]*graphNode{} // by output, the Convs that could take an Add
	for _, n := range m.nodes {
		if n.proto.GetOpType() == "Conv" && isONNXDomain(n.proto.GetDomain()) && len(n.outputs) == 1 && n.act == device.ActNone {
			convs[n.outputs[0]] = n
		}
	}
	into := map[*graphNode]*graphNode{} // Add → the Conv it folds into
	taken := map[*graphNode]bool{}      // the Convs folded into an Add
	for _, n := range m.nodes {
		if n.proto.GetOpType() != "Add" || !isONNXDomain(n.proto.GetDomain()) || len(n.inputs) != 2 || len(n.outputs) != 1 ||
			len(n.attrs) != 0 || n.inputs[0] == n.inputs[1] {
			continue
		}
		for side, v := range n.inputs {
			if c := convs[v]; c != nil && readers[v] == 1 && !taken[c] {
				into[n], taken[c] = c, true
				c.add, c.convIsB = n, side == 1
				c.inputs = append(slices.Clone(c.inputs), n.inputs[1-side])
				c.outputs = n.outputs
				c.label += " + " + n.label
				break
			}
		}
	}
	kept := m.nodes[:0]
	for _, n := range m.nodes {
		switch {
		case taken[n]:
			continue // it moves to its Add's place
		case into[n] != nil:
			kept = append(kept, into[n])
		default:
			kept = append(kept, n)
		}
	}
	clear(m.nodes[len(kept):])
	m.nodes = kept
}

// isONNXDomain reports whether domain names the ai.onnx operator set.
func isONNXDomain(domain string) bool { return domain == "" || domain == "ai.onnx" }

// activationOf returns the fused activation that node n computes: ReLU
// for Relu and for Clip(0, +inf), ReLU6 for Clip(0, 6) with constant
// bounds; ActNone for anything else.
func (m *Model) activationOf(n *graphNode) device.Activation {
	switch n.proto.GetOpType() {
	case "Relu":
		if len(n.inputs) == 1 {
			return device.ActReLU
		}
	case "Clip":
		lo, hi := math.Inf(-1), math.Inf(1)
		if m.Opset < 11 {
			if a := n.attrs["min"]; a != nil {
				lo = float64(a.GetF())
			}
			if a := n.attrs["max"]; a != nil {
				hi = float64(a.GetF())
			}
		} else {
			for k, bound := range []*float64{&lo, &hi} {
				if k+1 >= len(n.inputs) || n.inputs[k+1] == "" {
					continue
				}
				t := m.consts[n.inputs[k+1]]
				if t == nil || t.Len() != 1 {
					return device.ActNone // a bound computed at run time
				}
				*bound = t.Values()[0]
			}
		}
		switch {
		case lo == 0 && hi == 6:
			return device.ActReLU6
		case lo == 0 && math.IsInf(hi, 1):
			return device.ActReLU
		}
	}
	return device.ActNone
}

// shapeDriven lists the operators whose output shape depends on the
// values of inputs other than the first; their outputs have
// input-shape-determined shapes only when those inputs are shape-only.
var shapeDriven = map[string]bool{
	"Reshape": true, "Expand": true, "Tile": true, "Slice": true, "Pad": true, "Resize": true, "Upsample": true,
	"ConstantOfShape": true, "Range": true, "TopK": true, "OneHot": true, "Squeeze": true, "Unsqueeze": true,
	"Split": true, "ReduceSum": true, "ReduceMean": true, "ReduceMax": true, "ReduceMin": true, "ReduceProd": true,
	"ReduceL1": true, "ReduceL2": true, "ReduceLogSum": true, "ReduceLogSumExp": true, "ReduceSumSquare": true,
	"NonZero": true, "Compress": true, "Unique": true, "CumSum": true,
}

// markShapeOnly finds the nodes whose outputs depend only on the shapes of
// the graph inputs: Shape and Size of values whose shapes follow from the
// input shapes, and deterministic nodes fed only by such values and
// constants. Run computes them once per input-shape signature.
func (m *Model) markShapeOnly() {
	shapeOnly := map[string]bool{}  // value depends only on input shapes
	shapeKnown := map[string]bool{} // value's shape follows from input shapes
	for _, in := range m.Inputs {
		shapeKnown[in.Name] = true
	}
	for name := range m.consts {
		shapeOnly[name], shapeKnown[name] = true, true
	}
	for _, p := range m.params {
		shapeKnown[p.Name] = true
	}
	for name := range m.bufByVal {
		shapeKnown[name] = true
	}
	for _, n := range m.nodes {
		op := n.proto.GetOpType()
		allShapeOnly, allKnown, restShapeOnly := true, true, true
		for k, in := range n.inputs {
			if in == "" {
				continue
			}
			allShapeOnly = allShapeOnly && shapeOnly[in]
			allKnown = allKnown && shapeKnown[in]
			if k > 0 {
				restShapeOnly = restShapeOnly && shapeOnly[in]
			}
		}
		switch {
		case (op == "Shape" || op == "Size") && len(n.inputs) > 0 && shapeKnown[n.inputs[0]]:
			n.shapeOnly = true
		case allShapeOnly && !nondeterministic[op] && n.subgraphs == nil:
			n.shapeOnly = true
		}
		known := allKnown && n.subgraphs == nil && (!shapeDriven[op] || restShapeOnly || op == "ConstantOfShape" && allShapeOnly)
		for _, out := range n.outputs {
			shapeOnly[out] = n.shapeOnly
			shapeKnown[out] = known || n.shapeOnly
		}
	}
}

// planRelease records after which node each intermediate value is last
// read.
func (m *Model) planRelease() {
	last := map[string]int{}
	for i, n := range m.nodes {
		for _, in := range n.inputs {
			last[in] = i
		}
		for _, in := range n.implicit {
			last[in] = i
		}
	}
	for _, out := range m.Outputs {
		delete(last, out.Name)
	}
	for name, i := range last {
		if m.consts[name] != nil || m.parByVal[name] != nil || m.bufByVal[name] != nil {
			continue
		}
		m.nodes[i].release = append(m.nodes[i].release, name)
	}
}

// planSlots numbers the values of the main graph (see Model.slots) and
// gives each node the slots of its inputs, outputs and releases.
func (m *Model) planSlots() {
	m.slots = map[string]int{}
	slot := func(name string) int {
		if name == "" {
			return -1
		}
		s, ok := m.slots[name]
		if !ok {
			s = len(m.slots)
			m.slots[name] = s
		}
		return s
	}
	slotsOf := func(names []string) []int {
		s := make([]int, len(names))
		for i, name := range names {
			s[i] = slot(name)
		}
		return s
	}
	for _, in := range m.Inputs {
		slot(in.Name)
	}
	m.numInputRefs = 0
	for _, n := range m.nodes {
		n.inSlots, n.outSlots, n.releaseSlots = slotsOf(n.inputs), slotsOf(n.outputs), slotsOf(n.release)
		m.numInputRefs += len(n.inputs)
	}
	for _, n := range m.nodes {
		slotsOf(n.implicit) // read by the node's subgraphs, by name
	}
	for _, o := range m.Outputs {
		slot(o.Name)
	}
	for name := range m.consts {
		slot(name)
	}
}

// Parameters returns the trainable initializers, named as in the file.
func (m *Model) Parameters() []*autograd.Param { return m.params }

// Buffers returns the non-trainable state: BatchNormalization's running
// mean and variance, named as in the file.
func (m *Model) Buffers() []*layers.Buffer { return m.buffers }

// SetSeed reseeds the generator that Dropout draws its training masks
// from (seeded with 0 at import).
func (m *Model) SetSeed(seed uint64) { m.rng = rand.New(rand.NewPCG(seed, 0)) }

// SetTraining selects training mode (BatchNormalization uses and updates
// batch statistics, Dropout drops) or inference mode. layers.Train and
// layers.Eval call it.
func (m *Model) SetTraining(training bool) { m.training = training }

// Forward runs a model of one input and one output; it is the
// layers.Layer method, for use where Hora expects a layer (package train,
// layers.Sequential). It panics with the error Run returns; call Run to
// get the error instead. A model of several inputs runs through one of
// them when imported with the Input option.
func (m *Model) Forward(x *autograd.Var) *autograd.Var {
	if len(m.Inputs) != 1 {
		names := make([]string, len(m.Inputs))
		for i, in := range m.Inputs {
			names[i] = fmt.Sprintf("%q", in.Name)
		}
		panic(fmt.Errorf("onnx: Forward needs a model with one input; this one has %d (%s): import it with onnx.Input(name) to feed it through one of them, or call Run with all of them",
			len(m.Inputs), listOrNone(names)))
	}
	outs, err := m.Run(x)
	if err != nil {
		panic(err)
	}
	if len(outs) != 1 {
		panic(fmt.Sprintf("onnx: Forward needs a model with one output; this one has %d (use Run)", len(outs)))
	}
	return outs[0]
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

// Summary describes the model in a few lines: opset, producer, inputs,
// outputs, operator counts and parameter count.
func (m *Model) Summary() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "opset %d", m.Opset)
	if m.Producer != "" {
		fmt.Fprintf(&b, ", produced by %s", m.Producer)
	}
	b.WriteByte('\n')
	for _, in := range m.Inputs {
		fmt.Fprintf(&b, "input  %v\n", in)
	}
	for _, out := range m.Outputs {
		fmt.Fprintf(&b, "output %v\n", out)
	}
	counts := map[string]int{}
	for _, n := range m.nodes {
		counts[n.proto.GetOpType()]++
	}
	ops := make([]string, 0, len(counts))
	for op, c := range counts {
		ops = append(ops, fmt.Sprintf("%s×%d", op, c))
	}
	slices.Sort(ops)
	fmt.Fprintf(&b, "%d nodes: %s\n", len(m.nodes), strings.Join(ops, " "))
	fmt.Fprintf(&b, "%d parameters (%d values), %d buffers, %d constants\n", len(m.params), layers.NumParams(m), len(m.buffers), len(m.consts))
	return b.String()
}
