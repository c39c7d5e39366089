package onnx

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Batches in lanes. A convolutional network treats each image of a batch
// on its own, and at inference each layer of a large batch writes more
// than the caches hold: mobilenet_v2's first blocks at batch 32 write
// 150 MB a layer, which the next layer reads back from memory. Run splits
// such a batch into chunks of up to laneBatch images and runs the chunks side
// by side, one lane per core (device.LaneRunner), each chunk's layers
// one after another on one core whose caches still hold the previous
// layer's output. Each lane keeps its own arena; the outputs are the
// chunks' outputs concatenated along the batch axis. A chunk's products
// are smaller than the whole batch's, and where their size sends some
// of them to a BLAS (gemmchoice, without AVX-512) rather than to Hora's
// kernel, the last bits differ (mobilenet_v2 at batch 8: 4.3e-7 of the
// largest output); with Hora's kernels alone they are the same.

// laneBatch is the number of images a lane runs at a time. mobilenet_v2
// on one Zen 4 core took 7.48 ms an image at batch 1, 7.2 at batch 2,
// 7.3 at 4, 7.9 at 8 and 8.1 at 16; at batch 32 on two cores, in chunks
// of 1 it took 129 ms, of 2 120–124, of 4 126 and of 8 133–135 (each
// chunk reads the weights again: the classifier's 5 MB at 2 rows).
const laneBatch = 2

// laneUnary are the operators that map each element of their first
// input on its own (other inputs, such as Clip's bounds, are constants).
var laneUnary = []string{"Relu", "Clip", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish",
	"Elu", "Selu", "Softplus", "Identity", "Neg", "Abs", "Exp", "Log", "Sqrt", "Erf", "Gelu", "Cast"}

// laneSpatial are the operators that treat each image of their first
// input (N×C×…) on their own, their other inputs being weights.
var laneSpatial = []string{"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
	"BatchNormalization", "InstanceNormalization", "LRN"}

// laneBinary are the broadcasting elementwise operators.
var laneBinary = []string{"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "PRelu"}

// planLanes sets m.lanes when the graph treats each item of its batch on
// its own, so that a run may split its batch (see laneSplit): the graph
// has a Conv; every input has a known rank and a dynamic first axis, the
// same one (by name) for all: the batch; every node that reads a value
// derived from the inputs is one of the operators above (or Flatten,
// Gemm, MatMul, Softmax, LogSoftmax, Concat) used so that item i of its
// output depends on item i of its inputs alone (axes past the batch,
// constant weights that broadcast over it); and every output is such a
// value. Anything else (a Shape, a Reshape, a Dropout, whose masks are
// drawn per run, a subgraph, a reduction over the batch) keeps the batch
// whole. It also sums the weights' memory, for laneSplit.
func (m *Model) planLanes() {
	m.lanes = false
	rank := map[string]int{} // the values that carry the batch on axis 0, by rank
	for _, in := range m.Inputs {
		if len(in.Shape) == 0 || in.Shape[0] >= 0 || len(in.DimNames) == 0 || in.DimNames[0] != m.Inputs[0].DimNames[0] {
			return // not a batch axis by the file's word
		}
		rank[in.Name] = len(in.Shape)
	}
	convs := 0
	for _, n := range m.nodes {
		carries := slices.ContainsFunc(slices.Concat(n.inputs, n.implicit), func(name string) bool {
			_, ok := rank[name]
			return ok && name != ""
		})
		if !carries {
			continue // constant work, the same for every chunk
		}
		r, ok := m.laneRank(n, rank)
		if !ok {
			return
		}
		if n.proto.GetOpType() == "Conv" {
			convs++
		}
		for _, out := range n.outputs {
			if out != "" {
				rank[out] = r
			}
		}
	}
	for _, o := range m.Outputs {
		if _, ok := rank[o.Name]; !ok {
			return
		}
	}
	m.lanes = convs > 0
	m.weightBytes = 0
	for _, t := range m.consts {
		m.weightBytes += t.Len() * t.DType().Size()
	}
	for _, p := range m.params {
		m.weightBytes += p.Value.Len() * p.Value.DType().Size()
	}
	for _, b := range m.buffers {
		m.weightBytes += b.Value.Len() * b.Value.DType().Size()
	}
}

// noteItemBytes records the memory per batch item of the first inference
// run of signature key on inputs, whose arena held bytes.
func (m *Model) noteItemBytes(key string, bytes int, inputs []*autograd.Var) {
	if len(inputs) == 0 || inputs[0].Value.Rank() == 0 || inputs[0].Value.Dim(0) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.itemBytes[key]; ok {
		return
	}
	if len(m.itemBytes) >= maxShapeMemo {
		clear(m.itemBytes)
	}
	m.itemBytes[key] = bytes / inputs[0].Value.Dim(0)
}

// laneRank returns the rank of node n's outputs when item i of them
// depends on item i of its batch-carrying inputs alone (rank holds those
// inputs' ranks), else false.
func (m *Model) laneRank(n *graphNode, rank map[string]int) (int, bool) {
	op := n.proto.GetOpType()
	if !isONNXDomain(n.proto.GetDomain()) || len(n.subgraphs) > 0 || len(n.inputs) == 0 {
		return 0, false
	}
	r0, first := rank[n.inputs[0]]
	// others reports whether the inputs past the first carry no batch,
	// but for a Conv's fused residual (see fuseResiduals), which must
	// carry it with rank r0 or broadcast over it.
	others := func() bool {
		for k, name := range n.inputs[1:] {
			r, carries := rank[name]
			if n.add != nil && k+1 == len(n.inputs)-1 {
				if carries && r != r0 || !carries && !m.broadcastsOverBatch(name, r0) {
					return false
				}
			} else if carries {
				return false
			}
		}
		return true
	}
	axis := func(def int64) int { // attribute axis, made non-negative against r0
		a := def
		if at := n.attrs["axis"]; at != nil {
			a = at.GetI()
		}
		if a < 0 {
			a += int64(r0)
		}
		return int(a)
	}
	one := len(n.outputs) == 1 || slices.Equal(n.outputs[1:], make([]string, len(n.outputs)-1))
	switch {
	case !first:
		return 0, false
	case slices.Contains(laneUnary, op):
		return r0, others()
	case slices.Contains(laneSpatial, op):
		training := n.attrs["training_mode"] != nil && n.attrs["training_mode"].GetI() != 0
		return r0, r0 >= 3 && others() && one && !training // MaxPool's indices count across the batch
	case slices.Contains(laneBinary, op):
		r := 0
		for _, name := range n.inputs {
			if q, ok := rank[name]; ok {
				r = max(r, q)
			}
		}
		for _, name := range n.inputs {
			if q, ok := rank[name]; ok && q != r || !ok && !m.broadcastsOverBatch(name, r) {
				return 0, false
			}
		}
		return r, true
	case op == "Flatten":
		return 2, others() && axis(1) >= 1 && axis(1) <= r0
	case op == "Gemm":
		transA := n.attrs["transA"] != nil && n.attrs["transA"].GetI() != 0
		c := len(n.inputs) < 3 || n.inputs[2] == "" || m.broadcastsOverBatch(n.inputs[2], 2)
		return 2, r0 == 2 && !transA && c && others()
	case op == "MatMul":
		s := m.staticShape(n.inputs[1])
		return r0, r0 >= 2 && len(s) == 2 && others()
	case op == "Softmax" || op == "LogSoftmax":
		def := int64(-1)
		if m.Opset < 13 {
			def = 1
		}
		return r0, axis(def) >= 1 && others()
	case op == "Concat":
		for _, name := range n.inputs {
			if q, ok := rank[name]; !ok || q != r0 {
				return 0, false
			}
		}
		return r0, axis(0) >= 1
	}
	return 0, false
}

// broadcastsOverBatch reports whether the constant value name (an
// initializer or a folded constant) broadcasts over the batch axis of a
// value of rank r: it has fewer axes, or a first axis of 1.
func (m *Model) broadcastsOverBatch(name string, r int) bool {
	s := m.staticShape(name)
	return s != nil && (len(s) < r || len(s) == r && s[0] == 1)
}

// laneSplit returns the device's LaneRunner and the number of lanes an
// inference run on inputs takes: more than one when the model may split
// its batch (planLanes), the run records no gradients, the device runs
// lanes, the batch makes two chunks or more, and the first run of these
// input shapes (which keeps the batch whole) held at least as much
// memory for a chunk's items as the weights take, which every chunk
// reads again: mobilenet_v2 at batch 32 held 14.3 MB an image, its
// weights take 14 MB, and it ran in 117–125 ms in lanes against 137–146
// (2 Zen 4 cores); resnet18 held 6.2 MB an image, its weights take 47 MB,
// and it ran in 443–444 ms in lanes against 400–419.
func (m *Model) laneSplit(dev device.Device, inputs []*autograd.Var) (device.LaneRunner, int) {
	lr, ok := dev.(device.LaneRunner)
	if !ok || !m.lanes || len(inputs) == 0 || !m.inferenceRun(inputs) {
		return nil, 1
	}
	n := inputs[0].Value.Dim(0)
	for _, x := range inputs {
		if x.Value.Rank() == 0 || x.Value.Dim(0) != n {
			return nil, 1
		}
	}
	lanes := min(lr.Lanes(), (n+laneBatch-1)/laneBatch)
	if lanes < 2 {
		return nil, 1
	}
	m.mu.Lock()
	item, seen := m.itemBytes[m.signature(inputs)]
	m.mu.Unlock()
	if !seen || laneBatch*item < m.weightBytes {
		return nil, 1
	}
	return lr, lanes
}

// runLanes runs the batch of inputs in chunks of up to laneBatch items
// (laneChunks) on lanes lanes (see laneSplit), the lanes taking the
// chunks in turn, and returns the chunks' outputs concatenated along
// axis 0.
func (m *Model) runLanes(lr device.LaneRunner, lanes int, inputs []*autograd.Var) ([]*autograd.Var, error) {
	dev := inputs[0].Value.Device()
	n := inputs[0].Value.Dim(0)
	chunks, first := laneChunks(n, lanes)
	// The chunks' inputs are views made here, out of the inputs' arena
	// (a caller's), which is not for concurrent use.
	parts := make([][]*autograd.Var, chunks)
	for c := range parts {
		parts[c] = make([]*autograd.Var, len(inputs))
		for i, x := range inputs {
			parts[c][i] = autograd.Constant(x.Value.Slice(0, first(c), first(c+1)).WithArena(nil))
		}
	}
	outs := make([][]*autograd.Var, chunks)
	errs := make([]error, chunks)
	var next atomic.Int64
	lr.RunLanes(lanes, func(lane int) {
		key := fmt.Sprintf("|lane %d", lane)
		for {
			c := int(next.Add(1)) - 1
			if c >= chunks {
				return
			}
			outs[c], errs[c] = m.runChunk(dev, parts[c], key)
		}
	})
	for c, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%w (items %d to %d of a batch of %d)", err, first(c), first(c+1)-1, n)
		}
	}
	res := make([]*autograd.Var, len(m.Outputs))
	vals := make([]*tensor.Tensor, chunks)
	for i := range res {
		for c := range chunks {
			vals[c] = outs[c][i].Value
		}
		res[i] = autograd.Constant(tensor.Concat(0, vals...))
	}
	return res, nil
}

// laneChunks splits a batch of n items for lanes lanes: into a multiple
// of lanes chunks of at most laneBatch items, as even as can be, the
// larger ones first, so that the lanes, which take the chunks in turn,
// end together (n = 6 on 2 lanes: 2, 2, 1, 1 rather than 2, 2, 2, the
// third chunk left to one lane: mobilenet_v2 took 30 ms that way against
// 25 for the whole batch on both cores); first(c) is chunk c's first item
// (first(chunks) = n).
func laneChunks(n, lanes int) (chunks int, first func(c int) int) {
	chunks = min(n, lanes*((n+lanes*laneBatch-1)/(lanes*laneBatch)))
	size, larger := n/chunks, n%chunks // the first larger chunks hold size+1 items
	return chunks, func(c int) int { return c*size + min(c, larger) }
}

// runChunk is run for one chunk of runLanes, a panic (which would end the
// program on a lane's goroutine) turned into an error.
func (m *Model) runChunk(dev device.Device, inputs []*autograd.Var, lane string) (outs []*autograd.Var, err error) {
	defer func() {
		if r := recover(); r != nil {
			outs, err = nil, fmt.Errorf("onnx: %v%s", r, panicSite())
		}
	}()
	return m.run(dev, inputs, lane)
}
