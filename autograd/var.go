package autograd

import (
	"reflect"
	"runtime"
	"strings"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Var is a value in a computation whose gradient can be taken. A Var made
// by an operation remembers the operation (its node) when any of its
// inputs requires a gradient; leaves (inputs, parameters) have no node.
type Var struct {
	// Value is the tensor the Var holds. Optimizers replace or update it
	// between steps; operations never modify it.
	Value *tensor.Tensor
	// Grad is the gradient accumulated by Backward for a leaf that
	// requires it (nil until the first Backward, or after ZeroGrad).
	Grad *tensor.Tensor

	spareGrad    *tensor.Tensor // the buffer of the last Grad, kept by ZeroGrad for reuse
	requiresGrad bool
	noGrad       bool
	node         *node
	hooks        []func()

	// Bookkeeping of the Backward pass in progress (see backward.go).
	pass    *pass          // the pass that last visited v
	pending int            // uses of v whose gradients have not arrived
	gacc    *tensor.Tensor // v's gradient accumulated so far in this pass
	// gaccShared tells that gacc's memory may be read by another gradient.
	gaccShared bool
}

// node records how a Var was computed: its inputs and the rule that turns
// the output gradient into input gradients.
type node struct {
	inputs []*Var
	// needs[i] tells whether input i requires a gradient.
	needs []bool
	// backward returns one gradient per input, each with its input's shape;
	// it may return nil for inputs whose needs entry is false.
	backward func(g *tensor.Tensor, needs []bool) []*tensor.Tensor
	// backwardInto, when set instead of backward, writes the gradients
	// into out (one entry per input), which the node provides.
	backwardInto func(g *tensor.Tensor, needs []bool, out []*tensor.Tensor)

	// op and attrs describe what the node computed (see OpInfo); op is
	// empty for operations that record no description.
	op    string
	attrs any

	in   [3]*Var // inline storage for up to 3 inputs
	need [3]bool
	out  [3]*tensor.Tensor
}

// recorded is a Var and its node, allocated together.
type recorded struct {
	v Var
	n node
}

// Constant wraps a tensor that needs no gradient (data, labels).
func Constant(t *tensor.Tensor) *Var { return &Var{Value: t} }

// Leaf wraps a tensor whose gradient Backward should compute.
func Leaf(t *tensor.Tensor) *Var { return &Var{Value: t, requiresGrad: true} }

// NoGrad returns x in no-grad mode: nothing computed from it is recorded,
// whatever else takes part (parameters included). It is this package's
// no-grad scope; it travels with the data instead of living in global
// state, so goroutines running different ranks never see each other's mode:
//
//	logits := model.Forward(autograd.NoGrad(autograd.Constant(images)))
func NoGrad(x *Var) *Var { return &Var{Value: x.Value, noGrad: true} }

// Detach returns a Var with x's value and no history.
func (v *Var) Detach() *Var { return Constant(v.Value) }

// RequiresGrad reports whether Backward computes a gradient for v.
func (v *Var) RequiresGrad() bool { return v.requiresGrad }

// Freeze stops Backward from computing p's gradient: operations on p are
// no longer recorded for it, and its Grad stays nil. A frozen parameter is
// still part of its model's state (checkpoints, export); optimizers must
// be given only the parameters that are not frozen (see Frozen).
func (p *Param) Freeze() { p.requiresGrad = false }

// Frozen reports whether Freeze was called on p.
func (p *Param) Frozen() bool { return !p.requiresGrad }

// IsNoGrad reports whether v is in no-grad mode (see NoGrad).
func (v *Var) IsNoGrad() bool { return v.noGrad }

// Shape returns the shape of the value.
func (v *Var) Shape() []int { return v.Value.Shape() }

// ZeroGrad drops the accumulated gradient: Grad becomes nil. Its memory is
// reused by the next Backward, so a tensor read from Grad before ZeroGrad
// changes after the next Backward (Clone it to keep it).
func (v *Var) ZeroGrad() {
	if v.Grad != nil {
		v.spareGrad = v.Grad
	}
	v.Grad = nil
}

// Param is a named trainable leaf, such as "features.0.weight".
type Param struct {
	*Var
	// Name is the parameter's dotted path in its model.
	Name string
}

// NewParam returns a parameter holding t.
func NewParam(name string, t *tensor.Tensor) *Param {
	return &Param{Var: Leaf(t), Name: name}
}

// OnGradReady registers fn to run during Backward as soon as p's gradient
// for this pass is complete. Hooks fire in the reverse order in which
// parameters are used, which lets a distributed optimizer start
// communicating early gradients while later ones are still being computed.
func (p *Param) OnGradReady(fn func(p *Param)) {
	p.hooks = append(p.hooks, func() { fn(p) })
}

// record builds the output Var of an operation, recording it when some
// input requires a gradient and none is in no-grad mode.
func record(value *tensor.Tensor, backward func(g *tensor.Tensor, needs []bool) []*tensor.Tensor, inputs ...*Var) *Var {
	v := recordInto(value, nil, inputs...)
	if v.node != nil {
		v.node.backward = backward
	}
	return v
}

// untaped returns the output Var of an operation on inputs that will not
// be recorded (some input in no-grad mode, or none requiring a gradient),
// and false when it must be recorded (recordInto's first step): a hot
// operation asks first and builds its backward closure only then (an
// inference run allocates one object less per node).
func untaped(value *tensor.Tensor, inputs ...*Var) (*Var, bool) {
	need := false
	for _, in := range inputs {
		if in.noGrad {
			return &Var{Value: value, noGrad: true}, true
		}
		need = need || in.requiresGrad
	}
	if !need {
		return &Var{Value: value}, true
	}
	return nil, false
}

// recordInto is record for a rule that writes its gradients into the
// slice it is given (one entry per input, nil where not needed), which
// saves an allocation per node in Backward.
func recordInto(value *tensor.Tensor, backward func(g *tensor.Tensor, needs []bool, out []*tensor.Tensor), inputs ...*Var) *Var {
	if v, ok := untaped(value, inputs...); ok {
		return v
	}
	r := &recorded{v: Var{Value: value, requiresGrad: true}}
	n := &r.n
	n.backwardInto = backward
	if len(inputs) <= len(n.in) {
		n.inputs, n.needs = n.in[:len(inputs)], n.need[:len(inputs)]
	} else {
		n.inputs, n.needs = make([]*Var, len(inputs)), make([]bool, len(inputs))
	}
	copy(n.inputs, inputs)
	for i, in := range inputs {
		n.needs[i] = in.requiresGrad
	}
	r.v.node = n
	return &r.v
}

// OpInfo describes the operation that computed a recorded Var, for tools
// that translate the tape into another form (the ONNX exporter). It is
// read-only metadata: changing it changes nothing in Backward.
//
// Name is the autograd function that recorded the node ("Add", "Conv2D",
// "Reshape", …; fused variants use their base name and say what they fuse
// in Attrs, so LinearAct is "Linear" and Conv2DAct "Conv2D"). Attrs holds
// the operation's options, one of the *Attrs types of this package or
// tensor.PoolOptions, or nil for operations without any:
//
//	Add Sub Mul Div Pow Maximum Minimum Neg Exp Log Sqrt Abs Tanh
//	Sigmoid Relu GELU SiLU MatMul             nil
//	Reshape Expand                            nil (the target is the output's shape)
//	AddScalar MulScalar PowScalar LeakyRelu   ScalarAttrs (LeakyRelu: the slope)
//	Where                                     WhereAttrs
//	AddAct                                    ActAttrs
//	Linear                                    LinearAttrs (input, weight[, bias])
//	Conv2D Conv2DMaxPool                      ConvAttrs (input, weight[, bias][, residual])
//	MaxPool2D AvgPool2D                       tensor.PoolOptions
//	BatchNorm                                 NormAttrs (batch statistics; input[, weight, bias])
//	BatchNormInference                        NormAttrs (given statistics; input[, weight, bias])
//	LayerNorm                                 LayerNormAttrs (input, weight, bias)
//	SoftmaxCrossEntropy                       IndexAttrs (Index: the labels; Axis: -1)
//	Flatten Softmax LogSoftmax Concat
//	Squeeze Unsqueeze                         AxisAttrs
//	Permute Transpose                         PermuteAttrs (the full permutation)
//	Slice                                     SliceAttrs
//	SumAxes Max Min                           AxesAttrs
//	Gather IndexSelect Embedding              IndexAttrs
//
// Operations defined outside this package's files that record no
// description have an empty Name; Recorder then names the Go function
// that recorded them, for error messages.
type OpInfo struct {
	// Name is the operation, empty when it recorded no description.
	Name string
	// Attrs holds the operation's options (see above).
	Attrs any
	// Inputs are the Var operands in order (tensor operands such as
	// indices live in Attrs).
	Inputs []*Var
	// Recorder is the Go function whose gradient rule the node holds,
	// such as "autograd.Erf" (empty when unknown).
	Recorder string
}

// Op returns the description of the operation that computed v, or nil
// when v is a leaf or was computed without recording (no input required a
// gradient, or no-grad mode).
func (v *Var) Op() *OpInfo {
	n := v.node
	if n == nil {
		return nil
	}
	info := &OpInfo{Name: n.op, Attrs: n.attrs, Inputs: append([]*Var(nil), n.inputs...)}
	if n.op == "" {
		var f any = n.backward
		if n.backward == nil {
			f = n.backwardInto
		}
		info.Recorder = funcName(f)
	}
	return info
}

// funcName returns the package-qualified name of the function that made
// the closure f ("autograd.Erf"), or "".
func funcName(f any) string {
	rv := reflect.ValueOf(f)
	if rv.Kind() != reflect.Func || rv.IsNil() {
		return ""
	}
	fn := runtime.FuncForPC(rv.Pointer())
	if fn == nil {
		return ""
	}
	name := fn.Name()
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	// Drop closure suffixes: "autograd.Erf.func1" -> "autograd.Erf".
	for {
		i := strings.LastIndex(name, ".")
		if i < 0 || !isClosureSuffix(name[i+1:]) {
			break
		}
		name = name[:i]
	}
	return name
}

func isClosureSuffix(s string) bool {
	if strings.HasPrefix(s, "func") {
		s = s[len("func"):]
	}
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// describeOp attaches the description of its operation to v when v was
// recorded, and returns v. attrs is boxed only then.
func describeOp[A any](v *Var, op string, attrs A) *Var {
	if v.node != nil {
		v.node.op = op
		v.node.attrs = attrs
	}
	return v
}

// nameOp attaches an operation name without attributes (see describeOp).
func nameOp(v *Var, op string) *Var {
	if v.node != nil {
		v.node.op = op
	}
	return v
}

// ScalarAttrs is the OpInfo.Attrs of AddScalar, MulScalar and PowScalar
// (the scalar operand) and of LeakyRelu (the slope).
type ScalarAttrs struct{ Value float64 }

// WhereAttrs is the OpInfo.Attrs of Where: the condition (nonzero picks
// the first input), a tensor of the inputs' floating-point type.
type WhereAttrs struct{ Cond *tensor.Tensor }

// LinearAttrs is the OpInfo.Attrs of Linear: the activation applied after
// x×wᵀ + b.
type LinearAttrs struct{ Act device.Activation }

// ActAttrs is the OpInfo.Attrs of AddAct: the activation applied after
// the sum.
type ActAttrs struct{ Act device.Activation }

// ConvAttrs is the OpInfo.Attrs of Conv2D and Conv2DMaxPool: the
// convolution, the activation after its bias (and residual) and, for
// Conv2DMaxPool, the max pooling after the activation (Pool is the zero
// value otherwise). Residual is set for Conv2DAddAct's Conv2D, whose last
// input is the residual added before the activation.
type ConvAttrs struct {
	Conv     tensor.ConvOptions
	Act      device.Activation
	Pool     tensor.PoolOptions
	Residual bool
}

// LayerNormAttrs is the OpInfo.Attrs of LayerNorm: the normalisation is
// over the axes from Axis (non-negative) to the last, with Eps added to
// the variance (ONNX LayerNormalization's axis and epsilon).
type LayerNormAttrs struct {
	Axis int
	Eps  float64
}

// NormAttrs is the OpInfo.Attrs of BatchNorm and BatchNormInference: the
// epsilon added to the variance and, for BatchNormInference, the
// per-channel statistics used (for BatchNorm, Mean and Variance are nil:
// the batch's statistics are used); for BatchNorm, the activation applied
// after it (BatchNormAct).
type NormAttrs struct {
	Eps            float64
	Mean, Variance *tensor.Tensor
	Act            device.Activation
}

// AxisAttrs is the OpInfo.Attrs of operations with one axis: Flatten (the
// first merged axis), Softmax, LogSoftmax, Concat, Squeeze and Unsqueeze.
// Axis is normalised to be non-negative (for Unsqueeze, an axis of the
// output).
type AxisAttrs struct{ Axis int }

// PermuteAttrs is the OpInfo.Attrs of Permute and Transpose: output axis
// i is input axis Perm[i] (all non-negative).
type PermuteAttrs struct{ Perm []int }

// SliceAttrs is the OpInfo.Attrs of Slice: elements [Start, End) of Axis
// (non-negative).
type SliceAttrs struct{ Axis, Start, End int }

// AxesAttrs is the OpInfo.Attrs of SumAxes, Max and Min: the reduced axes
// (non-negative, sorted; nil for all) and whether they are kept with
// length 1.
type AxesAttrs struct {
	Axes []int
	Keep bool
}

// IndexAttrs is the OpInfo.Attrs of Gather and IndexSelect (the Int64
// indices and the axis), of Embedding (the indices of any shape, whose
// rows of the table are looked up; Axis 0) and of SoftmaxCrossEntropy
// (the labels).
type IndexAttrs struct {
	Axis  int
	Index *tensor.Tensor
}

// opAxis returns axis made non-negative for rank (unchecked beyond
// that: the tensor operation has already validated it).
func opAxis(axis, rank int) int {
	if axis < 0 {
		axis += rank
	}
	return axis
}
