package onnx

import "slices"

// Channels-last chains. MobileNet's blocks are a 1×1 convolution, a
// depthwise 3×3 one and a 1×1 one, whose small planes (14×14, 7×7) fill
// the vectors of the N×C×H×W kernels badly; with each position's
// channels side by side (channels-last order, tensor.IsChannelsLast) a
// depthwise layer is one vector multiply-add per tap for 16 channels and
// a 1×1 layer a product whose rows are the positions. planChannelsLast
// marks the convolutions that, in an inference run, write their output in
// that order for the next layers to read as it lies (the hint
// tensor.ConvOptions.ChannelsLast, honoured where the device has the
// kernels): the chain's first layer reads planes, its last writes them.

// planChannelsLast sets channelsLast on the 2-D Convs (their residual
// Add fused, see fuseResiduals) whose output is read only by depthwise
// or 1×1 Convs, as their input X or as the residual of a Conv that is
// marked too, or, for a 1×1 or depthwise Conv, by a GlobalAveragePool
// (which averages channels-last order as it lies, see opGlobalAvgPool),
// and is not a graph output; a depthwise Conv only when its
// own input comes from a marked Conv (its kernel reads channels-last
// order only). Removing a Conv's mark can take another's, so the marks
// are removed until none changes. Whether a marked Conv runs so is the
// device's choice at run time (the CPU's: planes of up to 256
// positions); a Conv that does not passes planes on.
func (m *Model) planChannelsLast() {
	type read struct {
		n        *graphNode
		residual bool
	}
	readers := map[string][]read{}
	for _, n := range m.nodes {
		for k, in := range slices.Concat(n.inputs, n.implicit) {
			readers[in] = append(readers[in], read{n, n.add != nil && k == len(n.inputs)-1})
		}
	}
	for _, o := range m.Outputs {
		readers[o.Name] = append(readers[o.Name], read{})
	}
	producer := map[string]*graphNode{}
	marked := map[*graphNode]bool{}
	for _, n := range m.nodes {
		if m.convKind(n) != notConv2D {
			marked[n] = true
			producer[n.outputs[0]] = n
		}
	}
	for changed := true; changed; {
		changed = false
		for n := range marked {
			ok := len(readers[n.outputs[0]]) > 0
			if m.convKind(n) == depthwiseConv {
				ok = ok && marked[producer[n.inputs[0]]]
			}
			for _, r := range readers[n.outputs[0]] {
				switch kind := m.convKind(r.n); {
				case r.n == nil: // a graph output
					ok = false
				case r.residual:
					ok = ok && marked[r.n]
				case r.n.proto.GetOpType() == "GlobalAveragePool" && isONNXDomain(r.n.proto.GetDomain()):
					// At the end of a chain of 1×1 and depthwise layers
					// (mobilenet_v2's last layer: 0.1025 → 0.093 ms
					// without its transposition into planes). A 3×3
					// layer read by the pooling (resnet18's last, with
					// its residual) stays in planes: 6.96–7.01 against
					// 7.02–7.21 ms at batch 1.
					kind := m.convKind(n)
					ok = ok && (kind == pointwiseConv || kind == depthwiseConv)
				default: // as the input X of a depthwise or 1×1 Conv
					ok = ok && (kind == depthwiseConv || kind == pointwiseConv) && r.n.inputs[0] == n.outputs[0]
				}
			}
			if !ok {
				delete(marked, n)
				changed = true
			}
		}
	}
	for n := range marked {
		n.channelsLast = true
	}
}

// conv2DKind is what planChannelsLast knows of a node.
type conv2DKind int

const (
	notConv2D     conv2DKind = iota // not a 2-D Conv of constant shape
	otherConv                       // a 2-D Conv of one group
	pointwiseConv                   // 1×1, unit strides, no padding, one group
	depthwiseConv                   // one input and one output channel per group
)

// convKind classifies n from its attributes and the shape of its weight
// (an initializer or constant).
func (m *Model) convKind(n *graphNode) conv2DKind {
	if n == nil || n.proto.GetOpType() != "Conv" || !isONNXDomain(n.proto.GetDomain()) || len(n.inputs) < 2 || len(n.outputs) != 1 {
		return notConv2D
	}
	ws := m.staticShape(n.inputs[1])
	if len(ws) != 4 {
		return notConv2D
	}
	group := int64(1)
	if a := n.attrs["group"]; a != nil {
		group = a.GetI()
	}
	switch {
	case group > 1 && ws[1] == 1 && int64(ws[0]) == group:
		return depthwiseConv
	case group != 1:
		return notConv2D
	}
	if ws[2] != 1 || ws[3] != 1 {
		return otherConv
	}
	for _, name := range []string{"strides", "dilations"} {
		if a := n.attrs[name]; a != nil && slices.ContainsFunc(a.GetInts(), func(v int64) bool { return v != 1 }) {
			return otherConv
		}
	}
	if a := n.attrs["pads"]; a != nil && slices.ContainsFunc(a.GetInts(), func(v int64) bool { return v != 0 }) {
		return otherConv
	}
	if a := n.attrs["auto_pad"]; a != nil && string(a.GetS()) != "NOTSET" && string(a.GetS()) != "VALID" {
		return otherConv
	}
	return pointwiseConv
}

// staticShape returns the shape of the value name when it is an
// initializer or a constant, else nil.
func (m *Model) staticShape(name string) []int {
	if t := m.consts[name]; t != nil {
		return t.Shape()
	}
	if p := m.parByVal[name]; p != nil {
		return p.Var.Value.Shape()
	}
	if b := m.bufByVal[name]; b != nil {
		return b.Value.Shape()
	}
	return nil
}
