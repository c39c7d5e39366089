package onnx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hora-dl/hora/onnx/onnxpb"
)

// WithoutHead removes the model's final classifier, for transfer
// learning: the model then outputs the classifier's input features, and
// the caller appends a new classifier of its own (a layers.Linear).
//
// The classifier is the node that computes the graph's single output,
// once trailing Identity, Softmax and LogSoftmax nodes are skipped (they
// are removed too): a Gemm whose B is an initializer, an Add of a bias
// initializer to a MatMul by an initializer weight, or such a MatMul
// alone. Its initializers are not parameters of the cut model, and the
// nodes only it needed are dropped. Head reports what was removed;
// Outputs describes the features ([batch, InFeatures] for a Gemm).
//
// A model without such a classifier, or with several outputs, fails to
// import with a *HeadError that lists the classifier candidates.
func WithoutHead() Option { return func(o *importOptions) { o.withoutHead = true } }

// Input feeds the model through its graph input name alone: the graph is
// pruned to the nodes and initializers its outputs need, and the other
// graph inputs are dropped, so that the model has one input and works as a layers.Layer
// (Forward). Importing fails when the model has no input name (the error
// lists its inputs) or when the outputs also need another graph input.
func Input(name string) Option {
	return func(o *importOptions) { o.input, o.hasInput = name, true }
}

// HeadInfo describes the classifier that WithoutHead removed, or a
// candidate classifier listed by a HeadError.
type HeadInfo struct {
	// Node is the classifier's node name, or its operator and index
	// ("Gemm_12") when the node has none. For MatMul+Add it is the
	// MatMul's.
	Node string
	// Op is "Gemm", "MatMul+Add" or "MatMul".
	Op string
	// InFeatures and OutFeatures are the sizes of the classifier's input
	// features and of its output (the classes), from the weight's shape
	// (and Gemm's transB).
	InFeatures, OutFeatures int
	// Weight and Bias name the classifier's initializers; Bias is empty
	// when it has none.
	Weight, Bias string
	// Features names the value the cut model outputs: the classifier's
	// input.
	Features string
	// Dropped lists the trailing nodes removed after the classifier
	// (Identity, Softmax, LogSoftmax), labelled as Node is, in graph
	// order.
	Dropped []string
}

// String formats the classifier as `"name" (Op, in→out)`.
func (h HeadInfo) String() string {
	return fmt.Sprintf("%q (%s, %d→%d)", h.Node, h.Op, h.InFeatures, h.OutFeatures)
}

// InputError is the error of Input when the model cannot be fed through
// the named input alone.
type InputError struct {
	// Input is the name given to Input.
	Input string
	// Problem says what is wrong: no such input (listing the inputs), or
	// an output that needs another input too.
	Problem string
}

// Error returns the message "onnx: Input(NAME): PROBLEM".
func (e *InputError) Error() string { return fmt.Sprintf("onnx: Input(%q): %s", e.Input, e.Problem) }

// HeadError is the error of WithoutHead when the model has no classifier
// to remove.
type HeadError struct {
	// Output is the graph output the classifier was looked for from
	// (empty when the model does not have exactly one output).
	Output string
	// Node and Op are the node that computes Output (after skipping
	// Identity, Softmax and LogSoftmax) and its operator; both are empty
	// when no node computes it (a graph input or an initializer).
	Node, Op string
	// Reason says what is wrong, when it is not that Node is no
	// classifier (several outputs, say).
	Reason string
	// Candidates lists every Gemm and MatMul of the graph whose weight
	// is an initializer, in graph order.
	Candidates []HeadInfo
}

// Error names the output, the node computing it and the candidates.
func (e *HeadError) Error() string {
	var b strings.Builder
	b.WriteString("onnx: WithoutHead: ")
	switch {
	case e.Reason != "":
		b.WriteString(e.Reason)
	case e.Node == "":
		fmt.Fprintf(&b, "graph output %q is not computed by a node, so there is no classifier to remove", e.Output)
	default:
		fmt.Fprintf(&b, "graph output %q is computed by node %q (%s), expected the classifier: a Gemm whose B is an initializer, MatMul by an initializer then Add of an initializer, or MatMul by an initializer",
			e.Output, e.Node, e.Op)
	}
	if len(e.Candidates) == 0 {
		b.WriteString("; the graph has no Gemm or MatMul with an initializer weight")
	} else {
		labels := make([]string, len(e.Candidates))
		for i, c := range e.Candidates {
			labels[i] = c.String()
		}
		fmt.Fprintf(&b, "; the graph's Gemm and MatMul nodes with an initializer weight: %s", strings.Join(labels, ", "))
	}
	return b.String()
}

// Head reports the classifier that WithoutHead removed; false when the
// model was imported with its head.
func (m *Model) Head() (HeadInfo, bool) {
	if m.head == nil {
		return HeadInfo{}, false
	}
	h := *m.head
	h.Dropped = slices.Clone(h.Dropped)
	return h, true
}

// graphIndex indexes a graph for the rewrites of WithoutHead and Input.
type graphIndex struct {
	g        *onnxpb.GraphProto
	inits    map[string]*onnxpb.TensorProto
	producer map[string]int // value name -> index of the node computing it
	readers  map[string]int // value name -> number of nodes (and graph outputs) reading it
}

func newGraphIndex(g *onnxpb.GraphProto) *graphIndex {
	ix := &graphIndex{g: g, inits: map[string]*onnxpb.TensorProto{}, producer: map[string]int{}, readers: map[string]int{}}
	for _, tp := range g.GetInitializer() {
		ix.inits[tp.GetName()] = tp
	}
	for i, n := range g.GetNode() {
		for _, out := range n.GetOutput() {
			if out != "" {
				ix.producer[out] = i
			}
		}
		for _, in := range nodeReads(n) {
			ix.readers[in]++
		}
	}
	for _, vi := range g.GetOutput() {
		ix.readers[vi.GetName()]++
	}
	return ix
}

// label names node i as HeadInfo.Node does.
func (ix *graphIndex) label(i int) string {
	n := ix.g.GetNode()[i]
	if n.GetName() != "" {
		return n.GetName()
	}
	return fmt.Sprintf("%s_%d", n.GetOpType(), i)
}

// weight returns the rank-2 float initializer name, or nil.
func (ix *graphIndex) weight(name string) *onnxpb.TensorProto {
	tp := ix.inits[name]
	if tp == nil || len(tp.GetDims()) != 2 {
		return nil
	}
	return tp
}

// nodeReads lists the names node n reads: its inputs and, for If, Loop
// and Scan, every name its subgraphs mention (some of them are the
// enclosing graph's values).
func nodeReads(n *onnxpb.NodeProto) []string {
	reads := slices.Clone(n.GetInput())
	for _, a := range n.GetAttribute() {
		for _, sg := range append([]*onnxpb.GraphProto{a.GetG()}, a.GetGraphs()...) {
			if sg == nil {
				continue
			}
			for _, sn := range sg.GetNode() {
				reads = append(reads, nodeReads(sn)...)
			}
			for _, vi := range sg.GetOutput() {
				reads = append(reads, vi.GetName())
			}
		}
	}
	return reads
}

// rewriteGraph applies WithoutHead and Input to g: it returns a graph
// (sharing g's nodes and tensors) without the classifier, pruned to what
// the outputs need, and the removed classifier. g is returned unchanged
// without those options.
func rewriteGraph(g *onnxpb.GraphProto, o importOptions) (*onnxpb.GraphProto, *HeadInfo, error) {
	if !o.withoutHead && !o.hasInput {
		return g, nil, nil
	}
	ix := newGraphIndex(g)
	outputs := g.GetOutput()
	var head *HeadInfo
	if o.withoutHead {
		h, features, err := ix.findHead()
		if err != nil {
			return nil, nil, err
		}
		head, outputs = h, []*onnxpb.ValueInfoProto{features}
	}
	nodes, reads := pruneNodes(g.GetNode(), outputs)
	isInit := func(vi *onnxpb.ValueInfoProto) bool { return ix.inits[vi.GetName()] != nil }
	var inputs []*onnxpb.ValueInfoProto
	if o.hasInput {
		var chosen *onnxpb.ValueInfoProto
		var names []string
		for _, vi := range g.GetInput() {
			if isInit(vi) {
				continue
			}
			names = append(names, describeInput(vi))
			if vi.GetName() == o.input {
				chosen = vi
			}
		}
		if chosen == nil {
			return nil, nil, &InputError{Input: o.input, Problem: fmt.Sprintf("the model has no graph input %q; its inputs: %s", o.input, listOrNone(names))}
		}
		for _, vi := range g.GetInput() {
			if !isInit(vi) && vi != chosen && reads[vi.GetName()] {
				return nil, nil, &InputError{Input: o.input, Problem: fmt.Sprintf("the outputs (%s) also need graph input %s, which is not an initializer: the model cannot run from %q alone",
					valueNames(outputs), describeInput(vi), o.input)}
			}
		}
		inputs = append(inputs, chosen)
	}
	for _, vi := range g.GetInput() {
		// Older files list initializers among the inputs: keep those the
		// remaining nodes read, so that no dropped initializer turns into
		// a graph input. Without Input, every graph input stays.
		if isInit(vi) && reads[vi.GetName()] || !isInit(vi) && !o.hasInput {
			inputs = append(inputs, vi)
		}
	}
	var inits []*onnxpb.TensorProto
	for _, tp := range g.GetInitializer() {
		if reads[tp.GetName()] {
			inits = append(inits, tp)
		}
	}
	ng := &onnxpb.GraphProto{
		Node: nodes, Name: g.Name, Initializer: inits, DocString: g.DocString,
		Input: inputs, Output: outputs, ValueInfo: g.GetValueInfo(),
		QuantizationAnnotation: g.GetQuantizationAnnotation(), SparseInitializer: g.GetSparseInitializer(),
	}
	return ng, head, nil
}

// pruneNodes keeps the nodes that the outputs need, in order, and returns
// them with the set of names they (and the outputs) read.
func pruneNodes(nodes []*onnxpb.NodeProto, outputs []*onnxpb.ValueInfoProto) ([]*onnxpb.NodeProto, map[string]bool) {
	need := map[string]bool{}
	for _, vi := range outputs {
		need[vi.GetName()] = true
	}
	keep := make([]bool, len(nodes))
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		for _, out := range n.GetOutput() {
			if out != "" && need[out] {
				keep[i] = true
			}
		}
		if !keep[i] {
			continue
		}
		for _, in := range nodeReads(n) {
			if in != "" {
				need[in] = true
			}
		}
	}
	var kept []*onnxpb.NodeProto
	for i, n := range nodes {
		if keep[i] {
			kept = append(kept, n)
		}
	}
	return kept, need
}

// skippedAfterHead lists the operators WithoutHead removes after the
// classifier.
var skippedAfterHead = map[string]bool{"Identity": true, "Softmax": true, "LogSoftmax": true}

// findHead finds the classifier computing the graph's single output and
// returns it with the declaration of the new output, its input.
func (ix *graphIndex) findHead() (*HeadInfo, *onnxpb.ValueInfoProto, error) {
	outs := ix.g.GetOutput()
	if len(outs) != 1 {
		return nil, nil, &HeadError{
			Reason:     fmt.Sprintf("the head is cut from a model with one output; this one has %d (%s)", len(outs), valueNames(outs)),
			Candidates: ix.candidates(),
		}
	}
	out := outs[0].GetName()
	name := out
	var dropped []string
	for {
		i, ok := ix.producer[name]
		if !ok {
			return nil, nil, &HeadError{Output: out, Candidates: ix.candidates()}
		}
		n := ix.g.GetNode()[i]
		if !skippedAfterHead[n.GetOpType()] || len(n.GetInput()) == 0 || ix.readers[n.GetInput()[0]] != 1 {
			break
		}
		dropped = append(dropped, ix.label(i))
		name = n.GetInput()[0]
	}
	slices.Reverse(dropped)
	i := ix.producer[name]
	h, ok := ix.classifier(i)
	if !ok {
		n := ix.g.GetNode()[i]
		return nil, nil, &HeadError{Output: out, Node: ix.label(i), Op: n.GetOpType(), Candidates: ix.candidates()}
	}
	h.Dropped = dropped
	return h, ix.featuresInfo(h, outs[0]), nil
}

// classifier recognizes node i as the end of a classifier: a Gemm by an
// initializer, an Add of an initializer to a MatMul by an initializer
// (read by that Add only), or a MatMul by an initializer.
func (ix *graphIndex) classifier(i int) (*HeadInfo, bool) {
	n := ix.g.GetNode()[i]
	in := n.GetInput()
	switch n.GetOpType() {
	case "Gemm", "MatMul":
		return ix.linear(i)
	case "Add":
		if len(in) != 2 {
			return nil, false
		}
		for k, bias := range []string{in[1], in[0]} {
			mm := in[k]
			j, ok := ix.producer[mm]
			if ix.inits[bias] == nil || !ok || ix.g.GetNode()[j].GetOpType() != "MatMul" || ix.readers[mm] != 1 {
				continue
			}
			if h, ok := ix.linear(j); ok {
				h.Op, h.Bias = "MatMul+Add", bias
				return h, true
			}
		}
	}
	return nil, false
}

// linear describes node i when it is a Gemm or MatMul whose weight (B)
// is a rank-2 initializer and whose A is the features.
func (ix *graphIndex) linear(i int) (*HeadInfo, bool) {
	n := ix.g.GetNode()[i]
	in := n.GetInput()
	if len(in) < 2 || in[0] == "" {
		return nil, false
	}
	w := ix.weight(in[1])
	if w == nil {
		return nil, false
	}
	d := w.GetDims()
	h := &HeadInfo{Node: ix.label(i), Op: n.GetOpType(), Weight: in[1], Features: in[0], InFeatures: int(d[0]), OutFeatures: int(d[1])}
	switch n.GetOpType() {
	case "MatMul":
		if len(in) != 2 {
			return nil, false
		}
	case "Gemm":
		if hasIntAttr(n, "transA", 1) {
			return nil, false // A holds the features transposed
		}
		if hasIntAttr(n, "transB", 1) {
			h.InFeatures, h.OutFeatures = int(d[1]), int(d[0])
		}
		if len(in) > 2 && in[2] != "" {
			if ix.inits[in[2]] == nil {
				return nil, false // a bias computed by the graph
			}
			h.Bias = in[2]
		}
	default:
		return nil, false
	}
	return h, true
}

// candidates lists the Gemm and MatMul nodes whose weight is an
// initializer.
func (ix *graphIndex) candidates() []HeadInfo {
	var cs []HeadInfo
	for i, n := range ix.g.GetNode() {
		if op := n.GetOpType(); op != "Gemm" && op != "MatMul" {
			continue
		}
		if h, ok := ix.linear(i); ok {
			cs = append(cs, *h)
		}
	}
	return cs
}

// featuresInfo declares the cut model's output: the features' element
// type and shape as the file states them, or else the old output's
// shape with the last dimension InFeatures.
func (ix *graphIndex) featuresInfo(h *HeadInfo, old *onnxpb.ValueInfoProto) *onnxpb.ValueInfoProto {
	for _, vi := range slices.Concat(ix.g.GetValueInfo(), ix.g.GetInput()) {
		if vi.GetName() == h.Features && vi.GetType().GetTensorType().GetShape() != nil {
			return vi
		}
	}
	elem := ix.inits[h.Weight].GetDataType()
	if tt := old.GetType().GetTensorType(); tt != nil && tt.GetElemType() != 0 {
		elem = tt.GetElemType()
	}
	tt := &onnxpb.TypeProto_Tensor{ElemType: &elem}
	if s := old.GetType().GetTensorType().GetShape(); s != nil && len(s.GetDim()) > 0 {
		dims := slices.Clone(s.GetDim())
		dims[len(dims)-1] = &onnxpb.TensorShapeProto_Dimension{
			Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(h.InFeatures)},
		}
		tt.Shape = &onnxpb.TensorShapeProto{Dim: dims}
	}
	return &onnxpb.ValueInfoProto{
		Name: ptr(h.Features),
		Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: tt}},
	}
}

// describeInput formats a graph input as ValueInfo.String does.
func describeInput(vi *onnxpb.ValueInfoProto) string {
	info, err := valueInfo(vi)
	if err != nil {
		return fmt.Sprintf("%q", vi.GetName())
	}
	return info.String()
}

// valueNames joins the names of vis, quoted.
func valueNames(vis []*onnxpb.ValueInfoProto) string {
	names := make([]string, len(vis))
	for i, vi := range vis {
		names[i] = fmt.Sprintf("%q", vi.GetName())
	}
	return listOrNone(names)
}

func listOrNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ", ")
}
