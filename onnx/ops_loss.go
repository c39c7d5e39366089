package onnx

import (
	"slices"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// Losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss) and matrix
// helpers (Trilu, EyeLike, MeanVarianceNormalization). The losses and
// MeanVarianceNormalization are built from autograd operations, so
// gradients flow to the scores (and to the class weights); Trilu passes
// gradients through the kept elements of a floating-point input.

func init() {
	register("NegativeLogLikelihoodLoss", 12, true, opNLLLoss)
	register("SoftmaxCrossEntropyLoss", 12, true, opSCELoss)
	register("Trilu", 14, true, opTrilu)
	register("EyeLike", 9, false, opEyeLike)
	register("MeanVarianceNormalization", 9, true, opMVN)
}

// lossAttrs reads the reduction and ignore_index attributes shared by the
// two losses.
func lossAttrs(c *nodeCtx) (reduction string, ii int64, hasII bool, err error) {
	reduction = c.AttrString("reduction", "mean")
	switch reduction {
	case "none", "sum", "mean":
	default:
		return "", 0, false, c.Errorf("attribute reduction is %q, expected \"none\", \"sum\" or \"mean\"", reduction)
	}
	hasII = c.HasAttr("ignore_index")
	return reduction, c.AttrInt("ignore_index", 0), hasII, nil
}

// lossInputs checks the scores (N×C×d1×…), target (N×d1×…, integer) and
// optional weight (C) inputs of a loss; names are their ONNX names.
func lossInputs(c *nodeCtx, names [3]string) (x, target, weight *autograd.Var, err error) {
	in, err := c.inputs(names[0], names[1], names[2]+"?")
	if err != nil {
		return nil, nil, nil, err
	}
	x, target, weight = in[0], in[1], in[2]
	xs := x.Value.Shape()
	if !x.Value.DType().IsFloat() {
		return nil, nil, nil, c.Errorf("input %s must be float or double, found %v", names[0], x.Value.DType())
	}
	if len(xs) < 2 {
		return nil, nil, nil, c.Errorf("input %s must have shape [N, C, d1, ...] (rank >= 2), found %v", names[0], xs)
	}
	if target.Value.DType() != device.Int64 {
		return nil, nil, nil, c.Errorf("input %s must hold integers, found %v", names[1], target.Value.DType())
	}
	want := append([]int{xs[0]}, xs[2:]...)
	if ts := target.Value.Shape(); !slices.Equal(ts, want) {
		return nil, nil, nil, c.Errorf("input %s has shape %v, expected %v (%s %v without the class axis)", names[1], ts, want, names[0], xs)
	}
	if weight != nil {
		if ws := weight.Value.Shape(); len(ws) != 1 || ws[0] != xs[1] {
			return nil, nil, nil, c.Errorf("input %s has shape %v, expected [%d] (one weight per class)", names[2], ws, xs[1])
		}
		if weight.Value.DType() != x.Value.DType() {
			return nil, nil, nil, c.Errorf("input %s is %v, expected %v like %s", names[2], weight.Value.DType(), x.Value.DType(), names[0])
		}
	}
	return x, target, weight, nil
}

// nllLoss computes the negative log-likelihood loss of the log-probabilities
// x (N×C×d1×…) against the class indices target (N×d1×…): the element
// loss is -x[n, target[n, d], d]·weight[target[n, d]], zero where the target
// equals ignore_index (when hasII); mean divides the sum by the sum of the
// weights picked. Targets other than ignore_index must lie in [0, C).
func nllLoss(c *nodeCtx, x *autograd.Var, target *tensor.Tensor, weight *autograd.Var, reduction string, ii int64, hasII bool, targetName string) (*autograd.Var, error) {
	dt := x.Value.DType()
	classes := x.Value.Dim(1)
	idx := target
	var valid *tensor.Tensor // 1 where the target counts, 0 where ignored (dt)
	if target.Len() > 0 {
		tf := target.Cast(device.Float64)
		if hasII {
			v := tf.Ne(tensor.Full(tf.Device(), device.Float64, float64(ii)))
			tf = tf.Mul(v) // ignored targets pick class 0, then get weight 0
			idx = tf.Cast(device.Int64)
			valid = v.Cast(dt)
		}
		bad := tf.Lt(tensor.Full(tf.Device(), device.Float64, 0)).
			Add(tf.Ge(tensor.Full(tf.Device(), device.Float64, float64(classes)))).SumAll().Item()
		if bad > 0 {
			return nil, c.Errorf("input %s has %d values outside [0, %d) (the classes) other than ignore_index", targetName, int(bad), classes)
		}
	}
	picked := autograd.Squeeze(autograd.Gather(x, 1, idx.Unsqueeze(1)), 1)
	var w *autograd.Var // the weight of each element, nil when all are 1
	if weight != nil {
		w = autograd.Reshape(autograd.IndexSelect(weight, 0, idx.Reshape(idx.Len())), idx.Shape()...)
		if valid != nil {
			w = autograd.Mul(w, autograd.Constant(valid))
		}
	} else if valid != nil {
		w = autograd.Constant(valid)
	}
	loss := autograd.Neg(picked)
	if w != nil {
		loss = autograd.Mul(loss, w)
	}
	switch reduction {
	case "sum":
		return autograd.SumAll(loss), nil
	case "mean":
		if w == nil {
			return autograd.MeanAll(loss), nil
		}
		return autograd.Div(autograd.SumAll(loss), autograd.SumAll(w)), nil
	}
	return loss, nil
}

// opNLLLoss implements NegativeLogLikelihoodLoss (inputs input, target and
// the optional weight; attributes reduction and ignore_index).
func opNLLLoss(c *nodeCtx) ([]*autograd.Var, error) {
	reduction, ii, hasII, err := lossAttrs(c)
	if err != nil {
		return nil, err
	}
	x, target, weight, err := lossInputs(c, [3]string{"input", "target", "weight"})
	if err != nil {
		return nil, err
	}
	loss, err := nllLoss(c, x, target.Value, weight, reduction, ii, hasII, "target")
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{loss}, nil
}

// opSCELoss implements SoftmaxCrossEntropyLoss (inputs scores, labels and
// the optional weights; outputs output and the optional log_prob, the
// log-softmax of the scores over axis 1).
func opSCELoss(c *nodeCtx) ([]*autograd.Var, error) {
	reduction, ii, hasII, err := lossAttrs(c)
	if err != nil {
		return nil, err
	}
	x, labels, weight, err := lossInputs(c, [3]string{"scores", "labels", "weights"})
	if err != nil {
		return nil, err
	}
	wantLogProb := c.OutputUsed(1)
	// The common classification case has a fused kernel that computes the
	// loss and its gradient in one pass.
	if x.Value.Rank() == 2 && reduction == "mean" && weight == nil && !hasII && !wantLogProb && labels.Value.Len() > 0 {
		if err := checkLabels(c, labels.Value, x.Value.Dim(1)); err != nil {
			return nil, err
		}
		if loss, err := autograd.SoftmaxCrossEntropy(x, labels.Value, 0); err == nil {
			return []*autograd.Var{loss}, nil
		}
		// Fall back to the composition (no fused kernel on this device).
	}
	logProb := autograd.LogSoftmax(x, 1)
	loss, err := nllLoss(c, logProb, labels.Value, weight, reduction, ii, hasII, "labels")
	if err != nil {
		return nil, err
	}
	if wantLogProb {
		return []*autograd.Var{loss, logProb}, nil
	}
	return []*autograd.Var{loss}, nil
}

// checkLabels returns an error when a label lies outside [0, classes).
func checkLabels(c *nodeCtx, labels *tensor.Tensor, classes int) error {
	tf := labels.Cast(device.Float64)
	bad := tf.Lt(tensor.Full(tf.Device(), device.Float64, 0)).
		Add(tf.Ge(tensor.Full(tf.Device(), device.Float64, float64(classes)))).SumAll().Item()
	if bad > 0 {
		return c.Errorf("input labels has %d values outside [0, %d) (the classes)", int(bad), classes)
	}
	return nil
}

// opTrilu implements Trilu: it keeps the upper (attribute upper=1, the
// default: column - row >= k) or lower (column - row <= k) triangle of
// each matrix in the last two axes of input, with k the optional scalar
// second input (default 0), and zeroes the rest.
func opTrilu(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("input", "k?")
	if err != nil {
		return nil, err
	}
	x, kIn := in[0], in[1]
	shape := x.Value.Shape()
	if len(shape) < 2 {
		return nil, c.Errorf("input must have rank >= 2, found shape %v", shape)
	}
	var k int64
	if kIn != nil {
		if kIn.Value.Len() != 1 || kIn.Value.Rank() > 1 {
			return nil, c.Errorf("input k must be a scalar, found shape %v", kIn.Shape())
		}
		if kIn.Value.DType() != device.Int64 {
			return nil, c.Errorf("input k must be an integer, found %v", kIn.Value.DType())
		}
		k = c.Ints(kIn)[0]
	}
	upper := c.AttrInt("upper", 1) != 0
	rows, cols := shape[len(shape)-2], shape[len(shape)-1]
	mask := make([]float64, rows*cols)
	for i := range rows {
		for j := range cols {
			d := int64(j) - int64(i)
			if (upper && d >= k) || (!upper && d <= k) {
				mask[i*cols+j] = 1
			}
		}
	}
	xf, isInt := rdAsFloat(x)
	dt := xf.Value.DType()
	cond := tensor.FromFloat64(mask, rows, cols).Cast(dt).To(c.Device())
	zero := autograd.Constant(tensor.Full(c.Device(), dt, 0))
	return []*autograd.Var{rdBackToInt(autograd.Where(cond, xf, zero), isInt)}, nil
}

// opEyeLike implements EyeLike: a matrix of input's 2-D shape with ones on
// the diagonal k (attribute, default 0: the main one) and zeros elsewhere,
// of element type dtype (attribute, default input's type).
func opEyeLike(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("input")
	if err != nil {
		return nil, err
	}
	shape := x.Value.Shape()
	if len(shape) != 2 {
		return nil, c.Errorf("input must be 2-D, found shape %v", shape)
	}
	dt := x.Value.DType()
	if c.HasAttr("dtype") {
		to := onnxpb.TensorProto_DataType(c.AttrInt("dtype", 0))
		if _, known := onnxpb.TensorProto_DataType_name[int32(to)]; !known || to == onnxpb.TensorProto_UNDEFINED {
			return nil, c.Errorf("attribute dtype is %d, not an ONNX element type", int32(to))
		}
		if dt, err = hostType(to); err != nil {
			return nil, c.Unsupported("EyeLike with dtype %s", typeName(to))
		}
	}
	k := c.AttrInt("k", 0)
	rows, cols := shape[0], shape[1]
	vals := make([]float64, rows*cols)
	for i := range rows {
		if j := int64(i) + k; j >= 0 && j < int64(cols) {
			vals[i*cols+int(j)] = 1
		}
	}
	return []*autograd.Var{c.Const(tensor.FromFloat64(vals, rows, cols).Cast(dt))}, nil
}

// mvnEpsilon is what MeanVarianceNormalization adds to the standard
// deviation (the value its ONNX function body uses).
const mvnEpsilon = 1e-9

// opMVN implements MeanVarianceNormalization: (X - mean) / (std + 1e-9)
// with the mean and the (biased) standard deviation taken over axes
// (attribute, default [0, 2, 3]).
func opMVN(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("X")
	if err != nil {
		return nil, err
	}
	if !x.Value.DType().IsFloat() {
		return nil, c.Errorf("input X must be float or double, found %v", x.Value.DType())
	}
	axes, err := rdAxes(c, "attribute axes", c.AttrInts("axes", []int64{0, 2, 3}), x.Value.Rank())
	if err != nil {
		return nil, err
	}
	mean := autograd.MeanAxes(x, axes, true)
	std := autograd.Sqrt(autograd.VarAxes(x, axes, false, true))
	y := autograd.Div(autograd.Sub(x, mean), autograd.AddScalar(std, mvnEpsilon))
	return []*autograd.Var{y}, nil
}
