package onnx

import (
	"math"
	"slices"
	"strconv"

	"github.com/hora-dl/hora/tensor"
)

// foldBatchNorms folds each BatchNormalization that always normalizes
// with its running statistics into the Conv before it, as inference
// engines do: with a = scale/√(var+ε), the convolution's weights become
// W·a (per output channel) and its bias (B−mean)·a + B_bn, and the
// normalization's two passes over the activations are gone (a Relu after
// it can then be fused into the Conv too).
//
// Only a model imported Frozen is folded, where nothing can change the
// constants afterwards. A pair is folded when the Conv's weights and bias
// and the normalization's four vectors are constants, the Conv's output
// is read by the normalization alone, and the normalization computes one
// output in inference mode (training_mode 0: with constant scale and B it
// never uses batch statistics). The folded values are rounded once, to
// the weights' type, so outputs agree with the unfolded graph to within
// float rounding.
func (m *Model) foldBatchNorms() {
	readers := m.readerCounts()
	producer := map[string]*graphNode{}
	kept := m.nodes[:0]
	for _, n := range m.nodes {
		if conv := producer[firstInput(n)]; conv != nil && readers[conv.outputs[0]] == 1 && m.foldableBatchNorm(n) && m.foldInto(conv, n) {
			continue
		}
		if n.proto.GetOpType() == "Conv" && len(n.outputs) == 1 && m.constInputs(n, 1, 2) {
			producer[n.outputs[0]] = n
		}
		kept = append(kept, n)
	}
	clear(m.nodes[len(kept):])
	m.nodes = kept
}

// readerCounts returns how many nodes (and graph outputs) read each value.
func (m *Model) readerCounts() map[string]int {
	readers := map[string]int{}
	for _, n := range m.nodes {
		for _, in := range slices.Concat(n.inputs, n.implicit) {
			readers[in]++
		}
	}
	for _, out := range m.Outputs {
		readers[out.Name]++
	}
	return readers
}

// firstInput returns n's first input ("" when it has none).
func firstInput(n *graphNode) string {
	if len(n.inputs) == 0 {
		return ""
	}
	return n.inputs[0]
}

// constInputs reports whether inputs from..to of n that are given are
// constants (an absent optional input counts as one).
func (m *Model) constInputs(n *graphNode, from, to int) bool {
	for k := from; k <= to && k < len(n.inputs); k++ {
		if name := n.inputs[k]; name != "" && m.consts[name] == nil {
			return false
		}
	}
	return true
}

// foldableBatchNorm reports whether n is a BatchNormalization that
// foldBatchNorms may fold: five inputs, the last four constant float
// vectors of one length, one output, inference mode.
func (m *Model) foldableBatchNorm(n *graphNode) bool {
	if n.proto.GetOpType() != "BatchNormalization" || len(n.inputs) != 5 || !m.constInputs(n, 1, 4) {
		return false
	}
	if slices.ContainsFunc(n.inputs[1:], func(s string) bool { return s == "" }) {
		return false
	}
	if len(n.outputs) == 0 || slices.ContainsFunc(n.outputs[1:], func(s string) bool { return s != "" }) {
		return false
	}
	if a := n.attrs["training_mode"]; a != nil && a.GetI() != 0 {
		return false
	}
	if a := n.attrs["spatial"]; a != nil && a.GetI() == 0 {
		return false
	}
	c := m.consts[n.inputs[1]].Len()
	for _, name := range n.inputs[1:] {
		t := m.consts[name]
		if t.Rank() != 1 || t.Len() != c || !t.DType().IsFloat() {
			return false
		}
	}
	return true
}

// foldInto folds the normalization bn into conv, whose output it reads:
// conv gets new constant weights and bias and takes over bn's output. It
// folds nothing and returns false when the shapes do not match (the
// Conv's output channels and the vectors' length): the graph then runs as
// it is and reports the mismatch.
func (m *Model) foldInto(conv, bn *graphNode) bool {
	w := m.consts[conv.inputs[1]]
	if w.Rank() < 3 || !w.DType().IsFloat() || w.Shape()[0] != m.consts[bn.inputs[1]].Len() {
		return false
	}
	outC := w.Shape()[0]
	eps := 1e-5
	if a := bn.attrs["epsilon"]; a != nil {
		eps = float64(a.GetF())
	}
	scale, shift := m.consts[bn.inputs[1]].Values(), m.consts[bn.inputs[2]].Values()
	mean, variance := m.consts[bn.inputs[3]].Values(), m.consts[bn.inputs[4]].Values()
	bias := make([]float64, outC)
	if len(conv.inputs) > 2 && conv.inputs[2] != "" {
		b := m.consts[conv.inputs[2]]
		if b.Len() != outC {
			return false
		}
		bias = b.Values()
	}
	weights := w.Values()
	per := len(weights) / outC
	for oc := range outC {
		a := scale[oc] / math.Sqrt(variance[oc]+eps)
		for i := oc * per; i < (oc+1)*per; i++ {
			weights[i] *= a
		}
		bias[oc] = (bias[oc]-mean[oc])*a + shift[oc]
	}
	dt := w.DType()
	wName, bName := m.freshName(conv.label+"/folded_W"), m.freshName(conv.label+"/folded_B")
	m.consts[wName] = tensor.FromFloat64(weights, w.Shape()...).Cast(dt)
	m.consts[bName] = tensor.FromFloat64(bias, outC).Cast(dt)
	conv.inputs = []string{conv.inputs[0], wName, bName}
	conv.outputs = []string{bn.outputs[0]}
	return true
}

// freshName returns base, or base with a number, unused by any value of
// the model.
func (m *Model) freshName(base string) string {
	used := func(s string) bool {
		if m.consts[s] != nil || m.parByVal[s] != nil || m.bufByVal[s] != nil {
			return true
		}
		for _, n := range m.nodes {
			if slices.Contains(n.inputs, s) || slices.Contains(n.outputs, s) {
				return true
			}
		}
		return slices.ContainsFunc(m.Inputs, func(v ValueInfo) bool { return v.Name == s })
	}
	name := base
	for i := 2; used(name); i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	return name
}

// inferenceStats reports whether every node reading the initializer name
// is a BatchNormalization in inference mode (training_mode 0) reading it
// as its running mean or variance. A frozen model holds such statistics
// as constants: with constant scale and B the nodes never update them.
func inferenceStats(nodes []*graphNode, name string) bool {
	read := false
	for _, n := range nodes {
		if slices.Contains(n.implicit, name) {
			return false
		}
		for k, in := range n.inputs {
			if in != name {
				continue
			}
			if n.proto.GetOpType() != "BatchNormalization" || (k != 3 && k != 4) {
				return false
			}
			if a := n.attrs["training_mode"]; a != nil && a.GetI() != 0 {
				return false
			}
			read = true
		}
	}
	return read
}
