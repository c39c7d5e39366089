package onnx

import (
	"fmt"
	"testing"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// The helpers the operator tests share: attribute builders and a way to
// run one operator outside a graph.

func attrInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_INT.Enum(), I: &v}
}

func attrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func attrFloat(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_FLOAT.Enum(), F: &v}
}

func attrFloats(name string, v ...float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_FLOATS.Enum(), Floats: v}
}

func attrString(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}

func attrStrings(name string, v ...string) *onnxpb.AttributeProto {
	a := &onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_STRINGS.Enum()}
	for _, s := range v {
		a.Strings = append(a.Strings, []byte(s))
	}
	return a
}

// testAttr builds an attribute from a Go value (see attrOf); an
// unsupported value fails the test.
func testAttr(t testing.TB, name string, v any) *onnxpb.AttributeProto {
	t.Helper()
	a, err := attrOf(name, v)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// attrOf builds an attribute from a Go value: int, int64, []int64,
// float32, float64, []float32, string, []string or *tensor.Tensor (a
// FLOAT, DOUBLE or INT64 tensor).
func attrOf(name string, v any) (*onnxpb.AttributeProto, error) {
	switch v := v.(type) {
	case int:
		return attrInt(name, int64(v)), nil
	case int64:
		return attrInt(name, v), nil
	case []int64:
		return attrInts(name, v...), nil
	case float32:
		return attrFloat(name, v), nil
	case float64:
		return attrFloat(name, float32(v)), nil
	case []float32:
		return attrFloats(name, v...), nil
	case string:
		return attrString(name, v), nil
	case []string:
		return attrStrings(name, v...), nil
	case *tensor.Tensor:
		tp, err := TensorToProto(v, name, protoTypeOf(v.DType()))
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", name, err)
		}
		return &onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_TENSOR.Enum(), T: tp}, nil
	}
	return nil, fmt.Errorf("attribute %s: unsupported value of type %T", name, v)
}

// runTestOp runs operator op of the given opset on the CPU: its inputs are
// in (nil: an omitted input), it declares nOut outputs, and setState
// stands for the interpreter's running-statistics update (nil: no input
// is model state). A panic comes back as an error starting with "panic".
func runTestOp(op string, opset, nOut int, attrs []*onnxpb.AttributeProto, training bool,
	setState func(int, *tensor.Tensor) error, in ...*autograd.Var) (out []*autograd.Var, err error) {
	v, ok := lookup(op, opset)
	if !ok {
		return nil, fmt.Errorf("%s opset %d is not registered", op, opset)
	}
	outs := make([]string, nOut)
	for i := range outs {
		outs[i] = fmt.Sprintf("y%d", i)
	}
	ins := make([]string, len(in))
	for i := range ins {
		if in[i] != nil {
			ins[i] = fmt.Sprintf("x%d", i)
		}
	}
	n := &onnxpb.NodeProto{OpType: &op, Attribute: attrs, Input: ins, Output: outs}
	c := newNodeCtx(n, 0, opset, tensor.CPU(), training)
	if setState != nil {
		c.run = testRun{setState}
	}
	c.in = in
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return v.run(c)
}

// testRun is the run of runTestOp's node: its running-statistics update,
// nothing else.
type testRun struct {
	set func(int, *tensor.Tensor) error
}

func (r testRun) inputFrozen(int) bool                   { return false }
func (r testRun) setState(i int, t *tensor.Tensor) error { return r.set(i, t) }
func (r testRun) addResidual(_, _ *autograd.Var) ([]*autograd.Var, error) {
	return nil, fmt.Errorf("no fused Add")
}
func (r testRun) runGraph(attr string, _ []*autograd.Var) ([]*autograd.Var, error) {
	return nil, fmt.Errorf("attribute %s: no graph to run", attr)
}

// callOp runs op in inference mode (see runTestOp).
func callOp(op string, opset, nOut int, attrs []*onnxpb.AttributeProto, in ...*autograd.Var) ([]*autograd.Var, error) {
	return runTestOp(op, opset, nOut, attrs, false, nil, in...)
}

// callOpT is callOp with the attributes as name, value pairs (see
// testAttr); a panic fails the test.
func callOpT(t testing.TB, op string, opset, nOut int, pairs []any, in ...*autograd.Var) ([]*autograd.Var, error) {
	t.Helper()
	var attrs []*onnxpb.AttributeProto
	for i := 0; i+1 < len(pairs); i += 2 {
		attrs = append(attrs, testAttr(t, pairs[i].(string), pairs[i+1]))
	}
	out, err := callOp(op, opset, nOut, attrs, in...)
	if err != nil && len(err.Error()) > 5 && err.Error()[:6] == "panic:" {
		t.Errorf("%s opset %d: %v", op, opset, err)
	}
	return out, err
}
