package onnx

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// maxShapeMemo bounds the number of input-shape signatures whose
// shape-only values Run keeps.
const maxShapeMemo = 16

// Run evaluates the graph on inputs, given in the order of m.Inputs, and
// returns the outputs in the order of m.Outputs. The inputs must be on
// one device; the model runs there. Inputs are checked against the
// declared element types and shapes (dynamic dimensions accept any size);
// every error names the input, or the node, its operator and the opset.
//
// An inference run (evaluation mode, no parameter or input that requires
// a gradient: a Frozen model, say) takes the memory of its intermediate
// values from the previous run with the same input shapes instead of
// allocating it anew, reuses the memory of each intermediate value once
// no later node reads it, and returns copies of its outputs. On the CPU,
// an inference run of a batch of images may run as chunks of two images
// side by side, one per core (see planLanes and laneSplit): the outputs
// are the whole batch's to the bit where every product runs on Hora's
// GEMM kernel, within float32 rounding where some go to a BLAS (which
// products do depends on their sizes). Runs may be concurrent.
func (m *Model) Run(inputs ...*autograd.Var) ([]*autograd.Var, error) {
	if len(inputs) != len(m.Inputs) {
		names := make([]string, len(m.Inputs))
		for i, in := range m.Inputs {
			names[i] = in.String()
		}
		return nil, fmt.Errorf("onnx: Run got %d inputs, the model takes %d (%s)", len(inputs), len(m.Inputs), strings.Join(names, "; "))
	}
	dev := tensor.CPU()
	if len(inputs) > 0 && inputs[0] != nil && inputs[0].Value != nil {
		dev = inputs[0].Value.Device()
	}
	for i, x := range inputs {
		if err := m.checkInput(i, x, dev); err != nil {
			return nil, err
		}
	}
	if lr, lanes := m.laneSplit(dev, inputs); lanes > 1 {
		return m.runLanes(lr, lanes, inputs)
	}
	return m.run(dev, inputs, "")
}

// run is Run on checked inputs on dev. lane keys the arena of an
// inference run ("" outside runLanes: each lane has its own).
func (m *Model) run(dev device.Device, inputs []*autograd.Var, lane string) ([]*autograd.Var, error) {
	key := m.signature(inputs)
	m.mu.Lock()
	memo, memoOK := m.shapeMemo[key]
	vals := m.slotsOn(dev) // the run's values by slot, the constants filled in
	m.mu.Unlock()
	arena := m.takeArena(key+lane, inputs) // nil: the run may record gradients
	var reuse *bufferReuse
	if arena != nil {
		reuse = newBufferReuse(arena)
		defer func() { m.putArena(key+lane, arena, lane != "" || sharesCache(dev)) }()
	}
	for i, x := range inputs {
		if arena != nil {
			x = autograd.Constant(x.Value.WithArena(arena))
		}
		vals[m.slots[m.Inputs[i].Name]] = x
	}
	var newMemo map[string]*tensor.Tensor // filled on the first run of a signature
	if !memoOK {
		newMemo = map[string]*tensor.Tensor{}
	}

	budget := maxUnrolledNodes // of this run's Loop, Scan and If subgraphs
	// other reads what is not a value of this run by name: a parameter,
	// a buffer, a memoised shape-only value.
	other := func(name string) *autograd.Var {
		if p := m.parByVal[name]; p != nil {
			return p.Var
		}
		if b := m.bufByVal[name]; b != nil {
			return autograd.Constant(b.Value)
		}
		if t, ok := memo[name]; ok {
			return autograd.Constant(t)
		}
		return nil
	}
	lookup := func(name string) *autograd.Var { // by name, for subgraphs
		if s, ok := m.slots[name]; ok && vals[s] != nil {
			return vals[s]
		}
		return other(name)
	}

	inputRefs := make([]*autograd.Var, m.numInputRefs) // every node's inputs, one allocation
	for _, n := range m.nodes {
		if n.shapeOnly && memoOK {
			continue // its outputs are in memo
		}
		in := inputRefs[:len(n.inputs):len(n.inputs)]
		inputRefs = inputRefs[len(n.inputs):]
		for k, s := range n.inSlots {
			if s < 0 {
				continue // an omitted input
			}
			if in[k] = vals[s]; in[k] == nil {
				if in[k] = other(n.inputs[k]); in[k] == nil {
					return nil, m.nodeError(n, fmt.Errorf("input %d %q has no value", k, n.inputs[k]))
				}
			}
		}
		outs, err := m.evalNode(n, in, lookup, dev, &budget, arena != nil)
		if err != nil {
			return nil, err
		}
		for k, s := range n.outSlots {
			if s < 0 {
				continue
			}
			vals[s] = outs[k]
			if n.shapeOnly {
				newMemo[n.outputs[k]] = outOfArena(outs[k].Value, arena)
			}
			reuse.hold(outs[k])
		}
		for _, s := range n.releaseSlots {
			if s < 0 {
				continue
			}
			reuse.drop(vals[s])
			vals[s] = nil
		}
	}
	if !memoOK && len(newMemo) > 0 {
		m.mu.Lock()
		if len(m.shapeMemo) >= maxShapeMemo {
			clear(m.shapeMemo)
		}
		m.shapeMemo[key] = newMemo
		m.mu.Unlock()
	}

	outs := make([]*autograd.Var, len(m.Outputs))
	for i, o := range m.Outputs {
		if outs[i] = lookup(o.Name); outs[i] == nil {
			return nil, fmt.Errorf("onnx: graph output %q has no value", o.Name)
		}
		if arena != nil {
			outs[i] = autograd.Constant(outOfArena(outs[i].Value, arena))
		}
	}
	if arena != nil && lane == "" && m.lanes {
		m.noteItemBytes(key, arena.Bytes(), inputs)
	}
	return outs, nil
}

// takeArena returns the arena for an inference run with inputs of
// signature key, reset, or nil when the run may record gradients (training
// mode, a parameter or an input that requires them): a tape must not
// point into memory the next run reuses.
func (m *Model) takeArena(key string, inputs []*autograd.Var) *tensor.Arena {
	if !m.inferenceRun(inputs) {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.arenas[key]
	delete(m.arenas, key) // concurrent runs of this signature get their own
	if a == nil {
		a = tensor.NewArena()
		a.ShareSizes()
		return a
	}
	a.Reset()
	return a
}

// inferenceRun reports whether a run on inputs records no gradients: the
// model is in evaluation mode and neither a parameter nor an input
// requires them.
func (m *Model) inferenceRun(inputs []*autograd.Var) bool {
	if m.training {
		return false
	}
	for _, x := range inputs {
		if x.RequiresGrad() {
			return false
		}
	}
	for _, p := range m.params {
		if p.RequiresGrad() {
			return false
		}
	}
	return true
}

// putArena keeps arena for the next run of key (a signature and a lane),
// for at most maxShapeMemo signatures plus the lanes' two chunk sizes per
// core (see runLanes). An arena that shares buffers between sizes is
// replaced by an empty one that does not when it holds more than
// maxSharedArena or the device's threads share no cache now (sharedCache
// false), and one that does not share them by an empty one that does when
// they share a cache again and it holds at most maxSharedArena (see
// maxSharedArena).
func (m *Model) putArena(key string, arena *tensor.Arena, sharedCache bool) {
	switch {
	case arena.SharesSizes() && (arena.Bytes() > maxSharedArena || !sharedCache):
		arena = tensor.NewArena()
	case !arena.SharesSizes() && sharedCache && arena.Bytes() <= maxSharedArena:
		arena = tensor.NewArena()
		arena.ShareSizes()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.arenas[key]; !ok && len(m.arenas) >= maxShapeMemo+2*runtime.GOMAXPROCS(0) {
		clear(m.arenas)
	}
	m.arenas[key] = arena
}

// maxSharedArena is the most memory (in bytes) an inference run's arena
// holds while it shares buffers between sizes; past it, the next runs of
// the signature take buffers of their values' exact sizes. Each kernel
// splits its output among the workers the same way from run to run, so
// each CPU writes the same lines of a value every run, but a buffer shared
// with a value of another size moves those lines to the other CPU's share:
// on two vCPUs that share no cache (a cache line's round trip 330–420 ns
// against 60) every such line crosses between them. Where a run's values
// outgrow the last-level cache (32 MB on a Zen 4 or Zen 5 core complex),
// sharing no longer finds freed memory in cache either. mobilenet_v2 at
// batch 32 (2 Zen 4 vCPUs): 156–161 ms a run with shared buffers against
// 124–126 with exact sizes while the vCPUs shared no cache, 127–134 both
// ways while they did, and 625 MB of peak memory against 732; resnet18 at
// batch 32 level. Smaller runs keep sharing, whose warmer memory helps
// while the CPUs share a cache: mobilenet_v2 at batch 1 (7 MB) took
// 4.25–4.32 ms with exact sizes against 4.10–4.17 then (2.29 against 2.09
// on Zen 5), though 5.7 against 6.6 without a shared cache (resnet18 at
// batch 1: 16.6–17.1 against 17.5–17.7, level with one). So the runs of
// a signature share buffers only while the device's threads share a cache
// (device.CacheSharer, measured a few times a second), and take exact
// sizes while they do not: in one process, 2 Zen 4 vCPUs, mobilenet_v2 at
// batch 1 took 3.87–3.96 ms shared against 4.24–4.43 exact while they
// shared one, 5.89–6.00 against 5.25–5.39 while they did not; resnet18
// 13.40–13.72 against 13.62–13.97, and 17.05 against 16.65.
var maxSharedArena = 64 << 20 // a variable for tests

// sharesCache reports whether dev's threads share a cache now (true for
// a device that cannot tell: see device.CacheSharer). A variable for
// tests.
var sharesCache = func(dev device.Device) bool {
	cs, ok := dev.(device.CacheSharer)
	return !ok || cs.SharesCache()
}

// bufferReuse hands the memory of an inference run's intermediate values
// back to the run's arena once no later node reads them, so that the next
// nodes write into memory that is still in cache rather than into a new
// buffer per value (MobileNetV2 at batch 32 would touch about 800 MB per
// run). Values share a buffer when an operator returns a view (Reshape,
// Identity, Squeeze): a buffer goes back when the last value holding it
// is dropped. While it holds at most maxSharedArena, the run's arena
// shares memory between sizes and plans its runs (tensor.Arena.ShareSizes):
// a value takes the most recently freed buffer that fits, and from the
// second run on its planned place in one slab, so the run's values live
// in less, warmer memory (mobilenet_v2 at batch 1: 17.8 MB of buffers
// with exact sizes only, 14.3 MB shared, 6.8 MB planned). A nil
// *bufferReuse (a run that may record gradients, where the tape keeps
// every value) does nothing.
type bufferReuse struct {
	mark  tensor.ArenaMark
	holds map[device.Buffer]int // live values per arena buffer
}

func newBufferReuse(arena *tensor.Arena) *bufferReuse {
	return &bufferReuse{mark: arena.Mark(), holds: map[device.Buffer]int{}}
}

// hold counts v (a node's output) as a holder of its buffer.
func (r *bufferReuse) hold(v *autograd.Var) {
	if r == nil || v == nil || v.Value == nil {
		return
	}
	r.holds[v.Value.Buffer()]++
}

// drop ends v's hold on its buffer, and gives the buffer back to the
// arena when v held it last. Buffers the run did not take from its arena
// (inputs, weights, memoised shapes) are never given back.
func (r *bufferReuse) drop(v *autograd.Var) {
	if r == nil || v == nil || v.Value == nil {
		return
	}
	b := v.Value.Buffer()
	n, ok := r.holds[b]
	if !ok {
		return
	}
	if n > 1 {
		r.holds[b] = n - 1
		return
	}
	delete(r.holds, b)
	v.Value.Release(r.mark)
}

// outOfArena returns t itself unless it is in arena (the run's, nil for
// none), else a copy of t in memory of its own, which outlives the run.
func outOfArena(t *tensor.Tensor, arena *tensor.Arena) *tensor.Tensor {
	if arena == nil || t.Arena() != arena {
		return t
	}
	return t.WithArena(nil).Clone()
}

// RunNamed is Run with inputs and outputs by name.
func (m *Model) RunNamed(inputs map[string]*autograd.Var) (map[string]*autograd.Var, error) {
	ordered := make([]*autograd.Var, len(m.Inputs))
	for i, in := range m.Inputs {
		x, ok := inputs[in.Name]
		if !ok {
			return nil, fmt.Errorf("onnx: RunNamed: missing input %v", in)
		}
		ordered[i] = x
	}
	if len(inputs) != len(m.Inputs) {
		for name := range inputs {
			if !m.hasInput(name) {
				return nil, fmt.Errorf("onnx: RunNamed: the model has no input %q", name)
			}
		}
	}
	outs, err := m.Run(ordered...)
	if err != nil {
		return nil, err
	}
	named := make(map[string]*autograd.Var, len(outs))
	for i, o := range m.Outputs {
		named[o.Name] = outs[i]
	}
	return named, nil
}

func (m *Model) hasInput(name string) bool {
	for _, in := range m.Inputs {
		if in.Name == name {
			return true
		}
	}
	return false
}

// checkInput checks input i's device, element type and shape.
func (m *Model) checkInput(i int, x *autograd.Var, dev device.Device) error {
	info := m.Inputs[i]
	if x == nil || x.Value == nil {
		return fmt.Errorf("onnx: input %q is nil", info.Name)
	}
	t := x.Value
	if t.Device() != dev {
		return fmt.Errorf("onnx: input %q is on %v, input %q on %v: all inputs must be on one device", info.Name, t.Device(), m.Inputs[0].Name, dev)
	}
	if info.Type != 0 {
		want, err := hostType(info.Type)
		if err != nil {
			return fmt.Errorf("onnx: input %q: %w", info.Name, err)
		}
		if t.DType() != want {
			return fmt.Errorf("onnx: input %q: element type %v, want %v (ONNX %s)", info.Name, t.DType(), want, typeName(info.Type))
		}
	}
	if info.Shape == nil {
		return nil
	}
	shape := t.Shape()
	if len(shape) != len(info.Shape) {
		return fmt.Errorf("onnx: input %q: shape %v has rank %d, want rank %d (%v)", info.Name, shape, len(shape), len(info.Shape), info)
	}
	for d, want := range info.Shape {
		if want >= 0 && shape[d] != want {
			return fmt.Errorf("onnx: input %q: shape %v, want %v (dimension %d is %d, want %d)", info.Name, shape, info, d, shape[d], want)
		}
	}
	return nil
}

// signature keys the shape-only values and the arenas by the input
// shapes, types and device, "cpu[1 3 224 224] float32;". It is built on
// every run, so without fmt (through fmt.Fprint it took 11 µs of each
// mobilenet_v2 run at batch 1).
func (m *Model) signature(inputs []*autograd.Var) string {
	var arr [128]byte
	b := arr[:0]
	for i, x := range inputs {
		if i == 0 {
			b = append(b, x.Value.Device().Name()...)
		}
		b = append(b, '[')
		for j, d := range x.Value.Dims() {
			if j > 0 {
				b = append(b, ' ')
			}
			b = strconv.AppendInt(b, int64(d), 10)
		}
		b = append(b, "] "...)
		b = append(b, x.Value.DType().String()...)
		b = append(b, ';')
	}
	return string(b)
}

// slotsOn returns a new slice of the run's values by slot (m.slots) with
// the constants on dev filled in (m.mu held).
func (m *Model) slotsOn(dev device.Device) []*autograd.Var {
	c, ok := m.constSlots[dev]
	if !ok {
		c = make([]*autograd.Var, len(m.slots))
		for name, v := range m.constsOn(dev) {
			if s, ok := m.slots[name]; ok {
				c[s] = v
			}
		}
		m.constSlots[dev] = c
	}
	return slices.Clone(c)
}

// constsOn returns the constants as Vars on dev, moving them there the
// first time (m.mu held).
func (m *Model) constsOn(dev device.Device) map[string]*autograd.Var {
	if c, ok := m.constDev[dev]; ok {
		return c
	}
	c := make(map[string]*autograd.Var, len(m.consts))
	for name, t := range m.consts {
		if t.Device() != dev {
			t = t.To(dev)
		}
		// Constants never change: kernels may keep forms derived from
		// them (transformed or packed filters) between runs.
		c[name] = autograd.Constant(t.MarkConstant())
	}
	m.constDev[dev] = c
	return c
}

// evalNode evaluates node n on its inputs in (nil where omitted); the
// result has an entry for every named output. lookup reads the values of
// the node's scope by name (for its subgraphs), and budget is what remains
// of the run's maxUnrolledNodes.
func (m *Model) evalNode(n *graphNode, in []*autograd.Var, lookup func(string) *autograd.Var, dev device.Device, budget *int, inference bool) ([]*autograd.Var, error) {
	outs, err := m.runNode(n, in, dev, m.training, inference, lookup, budget)
	if err != nil {
		return nil, err
	}
	for k, name := range n.outputs {
		if name != "" && (k >= len(outs) || outs[k] == nil) {
			return nil, m.nodeError(n, fmt.Errorf("output %d %q was not computed", k, name))
		}
	}
	return outs, nil
}

// inputsByName reads node n's inputs with lookup (nil where omitted).
func (m *Model) inputsByName(n *graphNode, lookup func(string) *autograd.Var) ([]*autograd.Var, error) {
	in := make([]*autograd.Var, len(n.inputs))
	for k, name := range n.inputs {
		if name == "" {
			continue
		}
		if in[k] = lookup(name); in[k] == nil {
			return nil, m.nodeError(n, fmt.Errorf("input %d %q has no value", k, name))
		}
	}
	return in, nil
}

// maxUnrolledNodes bounds the work of the subgraphs of one run: Loop,
// Scan and If evaluate their bodies and branches node by node (unrolling
// them onto the autograd tape), and one run may evaluate at most this
// many such nodes, nested subgraphs included, each evaluation counting
// at least 1. A model whose loop never ends gets an error within seconds
// instead of hanging, and Loop and Scan refuse up front an iteration
// count that would pass it (see opLoop and opScan).
var maxUnrolledNodes = 1 << 20

// cost is what one evaluation of sg takes from maxUnrolledNodes: its
// number of nodes, at least 1.
func (sg *subgraph) cost() int { return max(len(sg.nodes), 1) }

// runSubgraph evaluates a subgraph on args (its formal inputs); names it
// does not define are read from the enclosing scope with outer. It takes
// sg.cost() from budget, the rest of the run's maxUnrolledNodes.
func (m *Model) runSubgraph(sg *subgraph, args []*autograd.Var, outer func(string) *autograd.Var, dev device.Device, budget *int) ([]*autograd.Var, error) {
	if len(args) != len(sg.inputs) {
		return nil, fmt.Errorf("the graph takes %d inputs, got %d", len(sg.inputs), len(args))
	}
	if *budget < sg.cost() {
		return nil, fmt.Errorf("one run may evaluate at most %d nodes of Loop, Scan and If subgraphs, and %d are done (a loop that does not end?)", maxUnrolledNodes, maxUnrolledNodes-*budget)
	}
	*budget -= sg.cost()
	values := make(map[string]*autograd.Var, len(sg.nodes)+len(args))
	for i, name := range sg.inputs {
		values[name] = args[i]
	}
	lookup := func(name string) *autograd.Var {
		if v, ok := values[name]; ok {
			return v
		}
		if t, ok := sg.consts[name]; ok {
			return autograd.Constant(t.To(dev))
		}
		return outer(name)
	}
	for _, n := range sg.nodes {
		in, err := m.inputsByName(n, lookup)
		if err != nil {
			return nil, err
		}
		outs, err := m.evalNode(n, in, lookup, dev, budget, false)
		if err != nil {
			return nil, err
		}
		for k, name := range n.outputs {
			if name != "" {
				values[name] = outs[k]
			}
		}
	}
	results := make([]*autograd.Var, len(sg.outputs))
	for i, name := range sg.outputs {
		if results[i] = lookup(name); results[i] == nil {
			return nil, fmt.Errorf("the graph's output %q has no value", name)
		}
	}
	return results, nil
}

// runNode evaluates one node, turning a panic in an operator into an
// error naming the node. lookup reads the values of the node's scope, and
// budget is what remains of the run's maxUnrolledNodes, for the subgraphs
// of If, Loop and Scan (both nil while folding constants).
func (m *Model) runNode(n *graphNode, in []*autograd.Var, dev device.Device, training, inference bool, lookup func(string) *autograd.Var, budget *int) (outs []*autograd.Var, err error) {
	r := &nodeRun{m: m, n: n, dev: dev, training: training, inference: inference, lookup: lookup, budget: budget}
	c := &r.ctx
	*c = nodeCtx{node: n.proto, in: in, name: n.label, opset: m.Opset, dev: dev, training: training, attrs: n.attrs, graphs: n.subgraphs, cache: &n.cache,
		channelsLast: n.channelsLast && inference, rng: m.rng, act: n.act, declared: m.declared, run: r}
	if n.add != nil {
		c.in, c.residual, c.residualAct = in[:len(in)-1], in[len(in)-1], n.add.act
	}
	defer func() {
		if r := recover(); r != nil {
			err = m.nodeError(n, fmt.Errorf("%v%s", r, panicSite()))
		}
	}()
	outs, err = n.impl.run(c)
	if err != nil {
		return nil, m.nodeError(n, err)
	}
	if len(outs) > len(n.outputs) {
		return nil, m.nodeError(n, fmt.Errorf("computed %d outputs, the node declares %d", len(outs), len(n.outputs)))
	}
	return outs, nil
}

// nodeRun is one evaluation of a graph node in a model run: what the
// node's operator may ask of the run (see nodeCtx.run), and the context it
// gets, in one allocation.
type nodeRun struct {
	ctx                 nodeCtx
	m                   *Model
	n                   *graphNode
	dev                 device.Device
	training, inference bool
	lookup              func(string) *autograd.Var // the run's values, for subgraphs
	budget              *int
}

// runGraph evaluates the node's graph attribute attr on args.
func (r *nodeRun) runGraph(attr string, args []*autograd.Var) ([]*autograd.Var, error) {
	if r.n.subgraphs == nil || r.lookup == nil {
		return nil, fmt.Errorf("attribute %s: no graph to run", attr)
	}
	sg := r.n.subgraphs[attr]
	if sg == nil {
		return nil, fmt.Errorf("no graph attribute %s", attr)
	}
	outs, err := r.m.runSubgraph(sg, args, r.lookup, r.dev, r.budget)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", attr, err)
	}
	return outs, nil
}

// addResidual runs the Add fused into the node's Conv on its output y and
// the Add's other input, where the fused kernel does not apply.
func (r *nodeRun) addResidual(y, residual *autograd.Var) ([]*autograd.Var, error) {
	pair := []*autograd.Var{y, residual}
	if r.n.convIsB {
		pair[0], pair[1] = pair[1], pair[0]
	}
	return r.m.runNode(r.n.add, pair, r.dev, r.training, r.inference, r.lookup, r.budget)
}

// inputFrozen is nodeCtx.InputFrozen.
func (r *nodeRun) inputFrozen(k int) bool {
	m, n := r.m, r.n
	if k >= len(n.inputs) || n.inputs[k] == "" {
		return false
	}
	if p := m.parByVal[n.inputs[k]]; p != nil {
		return p.Frozen()
	}
	_, isConst := m.consts[n.inputs[k]]
	return isConst
}

// setState is nodeCtx.SetState.
func (r *nodeRun) setState(k int, t *tensor.Tensor) error {
	m, n := r.m, r.n
	if k >= len(n.inputs) || m.bufByVal[n.inputs[k]] == nil {
		return fmt.Errorf("input %d is not a state initializer (running statistics)", k)
	}
	buf := m.bufByVal[n.inputs[k]]
	old := buf.Value
	switch {
	case old == t:
	case old != nil && old.Device() == t.Device() && old.DType() == t.DType() && slices.Equal(old.Shape(), t.Shape()):
		// In place: t may live in a step's arena (the trainer's), which
		// is recycled after the step; the buffer must outlive it.
		old.CopyFrom(t)
	default:
		v := tensor.New(t.Device(), t.DType(), t.Shape()...) // outside any arena
		v.CopyFrom(t)
		buf.Value = v
	}
	return nil
}

// panicSite returns " (at file:line)" for the frame that panicked when
// HORA_ONNX_DEBUG is set; otherwise "".
func panicSite() string {
	if !debugPanics {
		return ""
	}
	return "\n" + string(debug.Stack())
}

func (m *Model) nodeError(n *graphNode, err error) error {
	if _, ok := err.(*NodeError); ok {
		return err
	}
	return &NodeError{Node: n.label, Op: n.proto.GetOpType(), Opset: m.Opset, Err: err}
}
